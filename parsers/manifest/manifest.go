package manifest

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"time"

	"github.com/proxyscan/proxyscan/parsers"
)

// Schema is the bundle schema version this package reads and writes.
const Schema = 1

// MaxSize is the largest manifest Parse accepts.
const MaxSize = 16 << 20

// MaxSources is the most sources Parse accepts.
const MaxSources = 10000

// Methods: how a source was read.
const (
	MethodExec    = "exec"     // a command was run
	MethodNetlink = "netlink"  // read from the kernel over netlink
	MethodFile    = "file"     // a file was read (/proc, /sys, logs)
	MethodHTTP    = "http"     // fetched over HTTP on loopback
	MethodKubeAPI = "kube-api" // listed from the Kubernetes API
)

// Statuses: what happened to a source.
const (
	// StatusOK: read completely.
	StatusOK = "ok"
	// StatusPartial: written, but bounded or incomplete by design (a log
	// tail, a capped sample, a netlink rendering that could not render
	// everything); Notes say how.
	StatusPartial = "partial"
	// StatusSkipped: not read, because what it needs is absent (the binary,
	// the kernel module, a kubeconfig, the kube-proxy process) or reading
	// it would change the node; Error says why.
	StatusSkipped = "skipped"
	// StatusFailed: tried and failed (non-zero exit, timeout, HTTP error);
	// Error says how. Nothing is written for a failed source.
	StatusFailed = "failed"
)

var (
	methods  = map[string]bool{MethodExec: true, MethodNetlink: true, MethodFile: true, MethodHTTP: true, MethodKubeAPI: true}
	statuses = map[string]bool{StatusOK: true, StatusPartial: true, StatusSkipped: true, StatusFailed: true}
)

// A Manifest describes one bundle.
type Manifest struct {
	// Schema is the bundle schema version ([Schema]).
	Schema int `json:"schema"`
	// Tool is the program that wrote the bundle.
	Tool Tool `json:"tool"`
	// Host is the node's host name.
	Host string `json:"host"`
	// Kernel is the running kernel's release (uname -r), when known.
	Kernel string `json:"kernel,omitempty"`
	// NodeIPs are the node's addresses.
	NodeIPs []netip.Addr `json:"node_ips"`
	// CollectedAt is when collection started.
	CollectedAt time.Time `json:"collected_at"`
	// Redacted reports that addresses and names in the bundle were replaced
	// by consistent pseudonyms (proxyscan collect --redact).
	Redacted bool `json:"redacted,omitempty"`
	// Sources lists every source collect knows, read or not, in the order
	// of its table.
	Sources []Source `json:"sources"`
	// Pos is the manifest file (line 1).
	Pos parsers.Pos `json:"-"`
}

// Tool names the program that wrote a bundle.
type Tool struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// A Source is one thing collect read (or tried to read).
type Source struct {
	// Name identifies the source ("iptables-nft-save", "sysctl").
	Name string `json:"name"`
	// Method is how it was read: exec, netlink, file, http or kube-api.
	Method string `json:"method"`
	// Command is the command run (exec), argv as given.
	Command []string `json:"command,omitempty"`
	// Path is the file read (file), the URL fetched (http), the resource
	// listed (kube-api) or the netlink family (netlink).
	Path string `json:"path,omitempty"`
	// File is the bundle file written; empty when nothing was written.
	File string `json:"file,omitempty"`
	// Status is ok, partial, skipped or failed.
	Status string `json:"status"`
	// ExitStatus is the command's exit status (exec sources that ran; -1
	// when it was killed).
	ExitStatus *int `json:"exit_status,omitempty"`
	// HTTPStatus is the HTTP status code (http sources that got a
	// response).
	HTTPStatus int `json:"http_status,omitempty"`
	// Error says why the source was skipped or failed.
	Error string `json:"error,omitempty"`
	// Notes say what else is worth knowing: how it was bounded, what a
	// netlink rendering left out, what the command printed on stderr.
	Notes []string `json:"notes,omitempty"`
	// DurationMS is how long reading took, in milliseconds.
	DurationMS int64 `json:"duration_ms"`
	// Bytes is the size of File (0 when nothing was written).
	Bytes int64 `json:"bytes"`
	// SHA256 is the hex SHA-256 of File's content.
	SHA256 string `json:"sha256,omitempty"`
	// Pos is where the source starts in the manifest.
	Pos parsers.Pos `json:"-"`
}

// Source returns the source named name, or nil.
func (m *Manifest) Source(name string) *Source {
	for i := range m.Sources {
		if m.Sources[i].Name == name {
			return &m.Sources[i]
		}
	}
	return nil
}

// ByFile returns the source that wrote the bundle file, or nil.
func (m *Manifest) ByFile(file string) *Source {
	for i := range m.Sources {
		if m.Sources[i].File == file {
			return &m.Sources[i]
		}
	}
	return nil
}

// Format writes m as indented JSON with a trailing newline: the content of
// manifest.json.
func Format(m *Manifest) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	out := *m
	if out.NodeIPs == nil {
		out.NodeIPs = []netip.Addr{}
	}
	if out.Sources == nil {
		out.Sources = []Source{}
	}
	if err := enc.Encode(&out); err != nil {
		// Every field marshals; an error here is a bug.
		panic("manifest: " + err.Error())
	}
	return buf.Bytes()
}
