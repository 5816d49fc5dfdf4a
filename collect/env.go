package collect

import (
	"bufio"
	"bytes"
	"context"
	"io/fs"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// env is the state of one collection shared by the sources.
type env struct {
	opts    Options
	root    string
	staging string
	runner  Runner
	http    *http.Client

	// memory keeps the sources' output in staged instead of the staging
	// directory until it is redacted: raw data never reaches the disk.
	memory bool
	staged map[string][]byte

	// deadline ends the reading of sources (Options.TotalTimeout).
	deadline time.Time
	total    time.Duration

	// modules are the loaded modules (/proc/modules) and builtin those
	// built into the kernel; nil when unreadable.
	modules, builtin map[string]bool

	// kp is the kube-proxy process, nil when none was found; kpWhy says
	// why not.
	kp    *kubeProxy
	kpWhy blocker

	mu sync.Mutex
	// nodeName is this node's name in the cluster (kube-proxy's
	// hostnameOverride, else the host name); nodeAddrs its Node's
	// addresses once known.
	nodeName  string
	nodeAddrs []netip.Addr
	// names collects the Kubernetes names met, for redaction.
	names []kubeName
	kc    kubeClient
}

// kubeName is a name met in the cluster's objects.
type kubeName struct {
	kind, name string
}

func newEnv(opts Options) *env {
	e := &env{opts: opts, root: opts.Root, runner: opts.Runner, http: opts.HTTP}
	if e.root == "" {
		e.root = "/"
	}
	if e.runner == nil {
		e.runner = ExecRunner{}
	}
	if opts.Redact != nil {
		e.memory, e.staged = true, map[string][]byte{}
	}
	if e.http == nil {
		e.http = &http.Client{
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			Transport:     &http.Transport{Proxy: nil, DisableKeepAlives: true},
		}
	}
	return e
}

func (e *env) now() time.Time {
	if e.opts.Now != nil {
		return e.opts.Now()
	}
	return time.Now()
}

// path returns a node path below the root.
func (e *env) path(p string) string { return filepath.Join(e.root, p) }

// stat returns why a node path cannot be looked at, nil when it can.
func (e *env) stat(p string) error {
	_, err := os.Stat(e.path(p))
	return err
}

// stagedData returns the content of a bundle file written so far.
func (e *env) stagedData(file string) ([]byte, error) {
	if e.memory {
		e.mu.Lock()
		defer e.mu.Unlock()
		data, ok := e.staged[file]
		if !ok {
			return nil, &fs.PathError{Op: "open", Path: file, Err: fs.ErrNotExist}
		}
		return data, nil
	}
	return os.ReadFile(filepath.Join(e.staging, filepath.FromSlash(file)))
}

// stagedSize returns the size of a bundle file written so far, 0 when
// there is none.
func (e *env) stagedSize(file string) int64 {
	if e.memory {
		e.mu.Lock()
		defer e.mu.Unlock()
		return int64(len(e.staged[file]))
	}
	if st, err := os.Stat(filepath.Join(e.staging, filepath.FromSlash(file))); err == nil {
		return st.Size()
	}
	return 0
}

// keep records the output of a source read into memory.
func (e *env) keep(file string, data []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.staged[file] = data
}

func (e *env) hostname() string {
	if e.opts.Hostname != "" {
		return e.opts.Hostname
	}
	if b, err := os.ReadFile(e.path("/proc/sys/kernel/hostname")); err == nil {
		if h := strings.TrimSpace(string(b)); h != "" {
			return h
		}
	}
	h, _ := os.Hostname()
	return h
}

func (e *env) kernelRelease() string {
	b, err := os.ReadFile(e.path("/proc/sys/kernel/osrelease"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// prepare reads what the sources' preconditions need: the module lists
// and the kube-proxy process.
func (e *env) prepare(ctx context.Context) {
	if data, err := os.ReadFile(e.path("/proc/modules")); err == nil {
		e.modules = map[string]bool{}
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) > 0 {
				e.modules[f[0]] = true
			}
		}
	}
	if rel := e.kernelRelease(); rel != "" {
		if data, err := os.ReadFile(e.path("/lib/modules/" + rel + "/modules.builtin")); err == nil {
			e.builtin = map[string]bool{}
			for _, line := range strings.Split(string(data), "\n") {
				if line = strings.TrimSpace(line); line != "" {
					e.builtin[moduleName(line)] = true
				}
			}
		}
	}
	e.kp, e.kpWhy = findKubeProxy(e.path("/proc"))
	e.nodeName = strings.ToLower(e.hostname())
}

// afterPhase runs between phases: after phase 0 (kube-proxy's command
// line and configuration), the node name is known.
func (e *env) afterPhase(phase int) {
	if phase == 0 && e.kp != nil {
		if n := e.kp.hostnameOverride(); n != "" {
			e.nodeName = n
		}
	}
}

// moduleName turns "kernel/net/netfilter/nf_conntrack.ko" into
// "nf_conntrack".
func moduleName(p string) string {
	p = filepath.Base(p)
	if i := strings.Index(p, ".ko"); i >= 0 {
		p = p[:i]
	}
	return strings.ReplaceAll(p, "-", "_")
}

// module reports whether a kernel module is loaded or built in, and
// whether that is known at all.
func (e *env) module(name string) (present, known bool) {
	if e.modules == nil && e.builtin == nil {
		return false, false
	}
	return e.modules[name] || e.builtin[name], e.modules != nil
}

func (e *env) addName(kind, name string) {
	if name == "" {
		return
	}
	e.mu.Lock()
	e.names = append(e.names, kubeName{kind, name})
	e.mu.Unlock()
}

var reInet = regexp.MustCompile(`^\s+inet6? ([0-9a-fA-F.:]+)/\d+ .*scope global`)

// podInterfaces are interface name prefixes of pod networking, whose
// addresses are not the node's.
var podInterfaces = []string{"kube-ipvs0", "nodelocaldns", "cali", "veth", "lxc", "cni", "flannel", "cilium", "docker", "tunl", "vxlan", "weave", "kube-bridge", "genev"}

// hostAddrs returns the global addresses of `ip addr` output, skipping
// the interfaces of pod networking and kube-ipvs0.
func hostAddrs(data []byte) []netip.Addr {
	out := []netip.Addr{}
	skip := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if len(line) > 0 && line[0] >= '0' && line[0] <= '9' {
			// "2: eth0: <...>" or "5: veth1@if4: <...>"
			f := strings.Fields(line)
			name := ""
			if len(f) > 1 {
				name = strings.TrimSuffix(f[1], ":")
				name, _, _ = strings.Cut(name, "@")
			}
			skip = name == "lo"
			for _, p := range podInterfaces {
				skip = skip || strings.HasPrefix(name, p)
			}
			continue
		}
		if skip {
			continue
		}
		if m := reInet.FindStringSubmatch(line); m != nil {
			if a, err := netip.ParseAddr(m[1]); err == nil {
				out = append(out, a)
			}
		}
	}
	return out
}
