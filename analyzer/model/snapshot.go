package model

import (
	"net/netip"
	"strings"

	kpv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/conntrack"
	"github.com/proxyscan/proxyscan/parsers/healthz"
	"github.com/proxyscan/proxyscan/parsers/ipaddr"
	"github.com/proxyscan/proxyscan/parsers/iproute"
	"github.com/proxyscan/proxyscan/parsers/ipset"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/ipvs"
	"github.com/proxyscan/proxyscan/parsers/klog"
	"github.com/proxyscan/proxyscan/parsers/kpconfig"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
	"github.com/proxyscan/proxyscan/parsers/kube"
	"github.com/proxyscan/proxyscan/parsers/manifest"
	"github.com/proxyscan/proxyscan/parsers/metrics"
	"github.com/proxyscan/proxyscan/parsers/modules"
	"github.com/proxyscan/proxyscan/parsers/nft"
	"github.com/proxyscan/proxyscan/parsers/sysctl"
)

// Proxy modes.
const (
	ModeIPTables = "iptables"
	ModeIPVS     = "ipvs"
	ModeNFTables = "nftables"
)

// A Snapshot is everything known about one node: the inputs it was read
// from, the Kubernetes objects, the kube-proxy configuration and version,
// and the captured data plane.
type Snapshot struct {
	// Node is the node the data plane was captured on.
	Node Node
	// Inputs lists every file read, with its detected kind; files of
	// unknown kind are listed too.
	Inputs []Input
	// Objects holds the Kubernetes objects of the exports.
	Objects *kube.Objects
	// Config is the kube-proxy configuration, nil when none was found.
	Config *Config
	// Version is the kube-proxy version the analysis assumes.
	Version Version
	// Ports holds every service port, including those of Services
	// kube-proxy skips (with Skip set).
	Ports []*ServicePort
	// IPTables holds the iptables-save dumps (IPv4 and IPv6, each backend).
	IPTables []*iptables.Dump
	// IPVS holds the ipvsadm listings (-Ln and/or -Sn, one per file read).
	IPVS []*ipvs.Dump
	// IPSets holds the ipset save or list output.
	IPSets []*ipset.Dump
	// NFT holds the nft rulesets (nft list ruleset and nft -j list ruleset
	// of the same node are two entries).
	NFT []*nft.Ruleset
	// Addrs is `ip addr` of the node; Routes its `ip route` listings.
	Addrs  *ipaddr.Dump
	Routes []*iproute.Dump
	// Sysctls and Modules are the node's sysctl and module listings.
	Sysctls *sysctl.Listing
	Modules *modules.List
	// Metrics, Healthz and Logs are kube-proxy's /metrics, /healthz and logs.
	Metrics *metrics.Page
	Healthz *healthz.Health
	Logs    []*klog.Log
	// Conntrack is a sample of the node's conntrack table, ConntrackStats
	// its per-CPU counters.
	Conntrack      *conntrack.Dump
	ConntrackStats *conntrack.Stats
	// Notes are things the loader wants users to know (which node was
	// picked, how the version was chosen, ...).
	Notes []string
	// Manifest is the bundle's manifest.json (how every source was read,
	// when), nil for inputs that are not a collected bundle.
	Manifest *manifest.Manifest
	// ExportCuts say what each Kubernetes export cut short may lack (see
	// [ExportCut]), in the order the exports were read.
	ExportCuts []ExportCut

	// portsBuilt holds the options Ports were built with from Objects by
	// BuildPorts, nil when they were not (or Objects changed since).
	portsBuilt *BuildOptions
}

// BuildPorts sets Ports to the service ports of Objects built with opts
// (see [BuildServicePorts]), remembering opts for [Snapshot.PortsBuiltWith].
func (s *Snapshot) BuildPorts(opts BuildOptions) {
	s.Ports = BuildServicePorts(s.Objects, opts)
	s.portsBuilt = &opts
}

// BuildPortsFrom is [Snapshot.BuildPorts] taking the ports from a draft
// of Objects' (see [DraftPorts]).
func (s *Snapshot) BuildPortsFrom(d *PortsDraft, opts BuildOptions) {
	s.Ports = d.Ports(opts)
	s.portsBuilt = &opts
}

// PortsBuiltWith reports whether Ports are what BuildServicePorts returns
// for Objects and opts, so that a caller needing those need not build them
// again.
func (s *Snapshot) PortsBuiltWith(opts BuildOptions) bool {
	return s.portsBuilt != nil && *s.portsBuilt == opts
}

// ObjectsChanged records that Objects no longer hold what Ports were built
// from (they were trimmed, or edited): building them again would not give
// Ports. A caller changing Objects after loading calls it.
func (s *Snapshot) ObjectsChanged() { s.portsBuilt = nil }

// An Input is one file that was read.
type Input struct {
	// Path is the file's path inside the bundle or directory (or as given).
	Path string `json:"path"`
	// Kind is its detected kind.
	Kind parsers.Kind `json:"kind"`
	// Bytes is its size.
	Bytes int64 `json:"bytes"`
	// Bundle is the bundle or directory the file came from, if any.
	Bundle string `json:"bundle,omitempty"`
	// Note says what was done with the file (e.g. why it was not used).
	Note string `json:"note,omitempty"`
	// Skipped are the lines of a file read leniently that were not read
	// (paste damage removed, lines not understood), Changed those read
	// without the damage around them (a prompt's line number, a quote
	// marker, a carriage return), as ranges of lines of the file as given,
	// with the reason.
	Skipped []parsers.LineRange `json:"skipped,omitempty"`
	Changed []parsers.LineRange `json:"changed,omitempty"`
	// Partial, for a dump read leniently, says why it may not hold whole
	// tables (cut short, a fragment); "" when it does.
	Partial string `json:"partial,omitempty"`
	// Unread, for a file that was to be read but was not understood (a
	// file named on the command line, or a file of a bundle at a place of
	// its layout or listed in its manifest), says why: binary, empty, of
	// no kind recognised... Such a file makes the verdict inconclusive.
	Unread string `json:"unread,omitempty"`
	// Encoding names the encoding a file was decoded from ("UTF-16LE")
	// when it was not UTF-8.
	Encoding string `json:"encoding,omitempty"`
	// Compression names the compression ("gzip", "xz") of a file given
	// compressed alone (iptables-save.txt.gz), read decompressed: its
	// Bytes and lines are those of the decompressed text.
	Compression string `json:"compression,omitempty"`
	// Lines, for one of the inputs a terminal transcript of commands of
	// several kinds is read as (see the contract), names the file's lines
	// it holds: "3-42" or "3-42, 90-120".
	Lines string `json:"lines,omitempty"`
}

// Node describes the node of a snapshot.
type Node struct {
	// Name is the node name ("" when unknown); NameSource says how it was
	// found.
	Name, NameSource string
	// Unmatched reports a name given (--node, hostnameOverride) that the
	// exports know of nowhere, though they name nodes: neither a Node nor
	// the node of an endpoint or Pod is so named. Which endpoints are
	// local is then not known (see [Node.Known]).
	Unmatched bool
	// Addresses are the node's IP addresses (status.addresses, ip addr).
	Addresses []netip.Addr
	// Local holds every address of the node's interfaces (from ip addr),
	// kube-ipvs0 and loopback included: what "addrtype LOCAL" matches.
	Local []netip.Addr
	// PodCIDRs are the node's pod CIDRs.
	PodCIDRs []netip.Prefix
	// Zone is the topology.kubernetes.io/zone label.
	Zone string
	// Object is the Node object, when exported.
	Object *kube.Node
}

// Known reports whether the node is known by a name the exports can
// place endpoints on: a name, and not one they know of nowhere.
func (n *Node) Known() bool { return n.Name != "" && !n.Unmatched }

// IsLocal reports whether a is one of the node's addresses.
func (n *Node) IsLocal(a netip.Addr) bool {
	for _, x := range n.Addresses {
		if x == a {
			return true
		}
	}
	return false
}

// Config is the kube-proxy configuration of a node: the configuration
// kube-proxy runs with (Effective: file and flags merged as kube-proxy
// merges them, defaulted for the snapshot's version), as read (Read, with
// the position of every field written), and where it came from.
type Config struct {
	// KubeProxyConfiguration is Effective's configuration, embedded so that
	// checks read fields directly (c.Mode, c.IPVS.Scheduler).
	*kpv1alpha1.KubeProxyConfiguration
	// Effective is the defaulted configuration kube-proxy runs with; Read
	// is the file (or ConfigMap) as written, nil when only flags are known.
	Effective, Read *kpconfig.Config
	// Flags is the interpreted command line, when one was captured.
	Flags *kpconfig.Flags
	// Pos is where the configuration starts (the file, or the line of
	// config.conf inside the ConfigMap).
	Pos parsers.Pos
	// Source describes it: "kube-proxy/config.yaml", "ConfigMap
	// kube-system/kube-proxy", "command line".
	Source string
	// Others are the other configurations given that set something else
	// (two ConfigMaps, or a --config file and a ConfigMap): the checks
	// read this one only.
	Others []OtherConfig
}

// An OtherConfig is a kube-proxy configuration given besides the one the
// checks read, and the settings it sets otherwise.
type OtherConfig struct {
	// Source and Pos say where it is, as Config's.
	Source string
	Pos    parsers.Pos
	// Differ are the settings, by their paths ("iptables.masqueradeBit"),
	// that it sets otherwise once both are defaulted, sorted: of those the
	// mode of the configuration read reads, "mode" when the modes differ.
	Differ []string
}

// FieldPos returns the position of a field (where it was written, or the
// flag that set it), else of the configuration.
func (c *Config) FieldPos(path string) parsers.Pos {
	for _, k := range []*kpconfig.Config{c.Read, c.Effective} {
		if k == nil {
			continue
		}
		if f := k.Field(path); f != nil && f.Pos.IsValid() && f.Origin != kpconfig.OriginDefault {
			return f.Pos
		}
	}
	return c.Pos
}

// IsSet reports whether the user wrote the field (in the file or a flag),
// rather than kube-proxy defaulting it.
func (c *Config) IsSet(path string) bool {
	if c.Read != nil && c.Read.IsSet(path) {
		return true
	}
	if c.Flags != nil {
		for _, f := range c.Flags.Applied {
			if f.Field == path {
				return true
			}
		}
	}
	return false
}

// EffectiveMode returns the proxy mode kube-proxy runs in: the configured
// one, or iptables when it is empty (Linux).
func (c *Config) EffectiveMode() string {
	if c == nil || c.Mode == "" {
		return ModeIPTables
	}
	return string(c.Mode)
}

// A Version is the kube-proxy version an analysis assumes, and where it
// came from.
type Version struct {
	kpversion.Version
	// Source says how the version was found ("kube-proxy/version.txt",
	// "assumed: newest supported").
	Source string
	// Doubt, when not "", says what the inputs hold against the version
	// an input reported, which was then not taken ("status.nodeInfo.
	// kubeProxyVersion of Node node-a says v1.21.14, but the rules have
	// the layout of kube-proxy 1.10-1.20, which 1.21 does not write").
	Doubt string
}

// Newest is the newest kube-proxy version proxyscan knows.
var Newest = Version{Version: kpversion.Newest}

// Known reports whether the version is set.
func (v Version) Known() bool { return v.Major > 0 }

// String formats the version as "v1.37.2", or "unknown".
func (v Version) String() string {
	if !v.Known() {
		return "unknown"
	}
	return v.Version.String()
}

// ActivePorts returns the service ports kube-proxy programs (Skip empty).
// The slice is the caller's to read, not to modify: it is Ports itself
// (its capacity cut to its length) when no port is skipped, as the checks
// call it many times over tens of thousands of ports.
func (s *Snapshot) ActivePorts() []*ServicePort {
	n := 0
	for _, sp := range s.Ports {
		if sp.Skip == "" {
			n++
		}
	}
	if n == len(s.Ports) {
		return s.Ports[:n:n]
	}
	out := make([]*ServicePort, 0, n)
	for _, sp := range s.Ports {
		if sp.Skip == "" {
			out = append(out, sp)
		}
	}
	return out
}

// Evidence points at what supports a finding: a file and line (or JSON
// path) and the exact text there.
type Evidence struct {
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
	Path string `json:"path,omitempty"`
	Text string `json:"text,omitempty"`
}

// Detach copies the strings of each evidence, which may be parts of a
// dump's text, so that the evidence keeps none of the dump alive.
func Detach(list []Evidence) {
	for i := range list {
		e := &list[i]
		e.File, e.Path, e.Text = strings.Clone(e.File), strings.Clone(e.Path), strings.Clone(e.Text)
	}
}

// EvidenceAt returns evidence at a position with a text.
func EvidenceAt(p parsers.Pos, text string) Evidence {
	return Evidence{File: p.File, Line: p.Line, Path: p.Path, Text: text}
}

// ChainEvidence returns the evidence of an iptables chain: its
// declaration, or, for a chain the dump uses without declaring it (a grep
// of iptables-save keeps its rules but may drop its ":NAME" line), its
// first rule, a line the input has; a chain with neither is named as
// iptables-save would declare it, without a line.
func ChainEvidence(c *iptables.Chain) Evidence {
	if c.Header == "" && len(c.Rules) > 0 {
		return RuleEvidence(c.Rules[0])
	}
	text := c.Header
	if text == "" {
		text = ":" + c.Name + " " + c.Policy()
	}
	return Evidence{File: c.Table.Dump.Name, Line: c.Line, Text: text}
}

// RuleEvidence returns the evidence of an iptables rule.
func RuleEvidence(r *iptables.Rule) Evidence {
	return Evidence{File: r.Pos().File, Line: r.Line, Text: r.Raw}
}
