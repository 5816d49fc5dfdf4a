package collect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/proxyscan/proxyscan/parsers/manifest"
)

// A Source is one entry of the collection table: what to read, how, into
// which bundle file, within which bounds.
type Source struct {
	// Name identifies the source in the manifest.
	Name string
	// File is the bundle file it writes.
	File string
	// Method is how it is read (manifest.MethodExec, ...).
	Method string
	// Commands are the commands that can produce it (exec sources), tried
	// in order: the first whose program is installed and whose
	// precondition holds runs.
	Commands []Command
	// Path is the file read (file sources) or the endpoint (http).
	Path string
	// Timeout bounds reading it.
	Timeout time.Duration
	// MaxBytes caps its output: a dump over the cap is discarded rather
	// than cut (a cut dump would be misread); 0 means no cap.
	MaxBytes int64
	// Sample marks a bounded sample: output stops at the sample size
	// (Options.ConntrackSample lines) and is kept.
	Sample bool
	// Serial names a group of sources read one at a time: listing
	// nf_tables is costly in the kernel, and concurrent listings slow each
	// other down.
	Serial string
	// Phase orders sources: all of phase 0 before phase 1 (phase 0 reads
	// what later sources need: kube-proxy's command line and
	// configuration).
	Phase int
	// Requires returns why the source cannot be read without changing the
	// node (or at all), or whether it can (a zero blocker).
	Requires func(e *env) blocker
	// Netlink reads the source over netlink when no command is installed
	// (nil: none).
	Netlink func(ctx context.Context, e *env, w *Writer) error
	// Read reads the source (nil: run Commands).
	Read func(ctx context.Context, e *env, s *Source, w *Writer)
}

// A Command is one way to produce an exec source's output.
type Command struct {
	// Args is argv.
	Args []string
	// Requires, when set, must return a zero blocker for this command to
	// run.
	Requires func(e *env) blocker
	// NotSameAs names a program this command must not be (after
	// resolving links): plain iptables-save is skipped when it is the
	// iptables-legacy-save that another source runs.
	NotSameAs string
}

const (
	dumpCap    = 512 << 20 // rule dumps
	listingCap = 64 << 20  // smaller listings
	// dumpTimeout bounds rule dumps: iptables-nft-save and nft list
	// ruleset take minutes on a node with tens of thousands of chains.
	dumpTimeout = 5 * time.Minute
)

// Sources is the collection table. Its files are the bundle layout of
// the contract (schema 1).
var Sources = []Source{
	{Name: "kube-proxy-cmdline", File: "kube-proxy/cmdline.txt", Method: manifest.MethodFile, Path: "/proc/PID/cmdline", Timeout: 5 * time.Second, Phase: 0, Read: readKubeProxyCmdline},
	{Name: "kube-proxy-config", File: "kube-proxy/config.yaml", Method: manifest.MethodFile, Path: "/proc/PID/root/<--config>", Timeout: 5 * time.Second, MaxBytes: 4 << 20, Phase: 0, Read: readKubeProxyConfig},

	{Name: "iptables-nft-save", Serial: "nf_tables", File: "node/iptables-save.txt", Method: manifest.MethodExec, Timeout: dumpTimeout, MaxBytes: dumpCap, Phase: 1,
		Commands: []Command{{Args: []string{"iptables-nft-save", "-c"}, Requires: needNFTables}, {Args: []string{"iptables-save", "-c"}, NotSameAs: "iptables-legacy-save"}}},
	{Name: "ip6tables-nft-save", Serial: "nf_tables", File: "node/ip6tables-save.txt", Method: manifest.MethodExec, Timeout: dumpTimeout, MaxBytes: dumpCap, Phase: 1,
		Commands: []Command{{Args: []string{"ip6tables-nft-save", "-c"}, Requires: needNFTables}, {Args: []string{"ip6tables-save", "-c"}, NotSameAs: "ip6tables-legacy-save"}}},
	{Name: "iptables-legacy-save", File: "node/iptables-legacy-save.txt", Method: manifest.MethodExec, Timeout: dumpTimeout, MaxBytes: dumpCap, Phase: 1,
		Requires: needLegacy("/proc/net/ip_tables_names", "ip_tables"), Commands: []Command{{Args: []string{"iptables-legacy-save", "-c"}}}},
	{Name: "ip6tables-legacy-save", File: "node/ip6tables-legacy-save.txt", Method: manifest.MethodExec, Timeout: dumpTimeout, MaxBytes: dumpCap, Phase: 1,
		Requires: needLegacy("/proc/net/ip6_tables_names", "ip6_tables"), Commands: []Command{{Args: []string{"ip6tables-legacy-save", "-c"}}}},
	{Name: "ipvsadm", File: "node/ipvsadm.txt", Method: manifest.MethodExec, Timeout: dumpTimeout, MaxBytes: dumpCap, Phase: 1,
		Requires: needIPVS, Commands: []Command{{Args: []string{"ipvsadm", "-Ln", "--exact"}}}, Netlink: netlinkIPVSList},
	{Name: "ipvsadm-save", File: "node/ipvsadm-save.txt", Method: manifest.MethodExec, Timeout: dumpTimeout, MaxBytes: dumpCap, Phase: 1,
		Requires: needIPVS, Commands: []Command{{Args: []string{"ipvsadm", "-Sn"}}}, Netlink: netlinkIPVSSave},
	{Name: "ipset-save", File: "node/ipset-save.txt", Method: manifest.MethodExec, Timeout: dumpTimeout, MaxBytes: dumpCap, Phase: 1,
		Requires: needModule("ip_set", "ipset"), Commands: []Command{{Args: []string{"ipset", "save"}}}},
	{Name: "nft-ruleset", Serial: "nf_tables", File: "node/nft-ruleset.txt", Method: manifest.MethodExec, Timeout: dumpTimeout, MaxBytes: dumpCap, Phase: 1,
		Requires: needNFTables, Commands: []Command{{Args: []string{"nft", "list", "ruleset"}}}, Netlink: netlinkNFTText, Read: readNFT},
	{Name: "nft-ruleset-json", Serial: "nf_tables", File: "node/nft-ruleset.json", Method: manifest.MethodExec, Timeout: dumpTimeout, MaxBytes: dumpCap, Phase: 1,
		Requires: needNFTables, Commands: []Command{{Args: []string{"nft", "-j", "list", "ruleset"}}}, Read: readNFT},
	{Name: "ip-addr", File: "node/ip-addr.txt", Method: manifest.MethodExec, Timeout: 10 * time.Second, MaxBytes: listingCap, Phase: 1,
		Commands: []Command{{Args: []string{"ip", "addr", "show"}}}},
	{Name: "ip-route", File: "node/ip-route.txt", Method: manifest.MethodExec, Timeout: 10 * time.Second, MaxBytes: listingCap, Phase: 1,
		Commands: []Command{{Args: []string{"ip", "route", "show"}}}},
	{Name: "ip6-route", File: "node/ip6-route.txt", Method: manifest.MethodExec, Timeout: 10 * time.Second, MaxBytes: listingCap, Phase: 1,
		Commands: []Command{{Args: []string{"ip", "-6", "route", "show"}}}},
	{Name: "sysctl", File: "node/sysctl.txt", Method: manifest.MethodFile, Path: "/proc/sys", Timeout: 5 * time.Second, Phase: 1, Read: readSysctls},
	{Name: "modules", File: "node/modules.txt", Method: manifest.MethodFile, Path: "/proc/modules", Timeout: 5 * time.Second, MaxBytes: listingCap, Phase: 1, Read: readFileSource},
	{Name: "modules-builtin", File: "node/modules-builtin.txt", Method: manifest.MethodFile, Path: "/lib/modules/RELEASE/modules.builtin", Timeout: 5 * time.Second, MaxBytes: listingCap, Phase: 1, Read: readBuiltinModules},
	{Name: "conntrack-stats", File: "node/conntrack-stats.txt", Method: manifest.MethodExec, Timeout: 10 * time.Second, MaxBytes: listingCap, Phase: 1,
		Requires: needConntrack, Commands: []Command{{Args: []string{"conntrack", "-S"}}}},
	{Name: "conntrack-dnat", File: "node/conntrack-dnat.txt", Method: manifest.MethodExec, Timeout: 20 * time.Second, MaxBytes: listingCap, Sample: true, Phase: 1,
		Requires: needConntrack, Commands: []Command{{Args: []string{"conntrack", "-L", "-f", "ipv4", "--dst-nat"}}}},
	{Name: "conntrack6-dnat", File: "node/conntrack6-dnat.txt", Method: manifest.MethodExec, Timeout: 20 * time.Second, MaxBytes: listingCap, Sample: true, Phase: 1,
		Requires: needConntrack, Commands: []Command{{Args: []string{"conntrack", "-L", "-f", "ipv6", "--dst-nat"}}}},

	{Name: "kube-proxy-version", File: "kube-proxy/version.txt", Method: manifest.MethodExec, Timeout: 10 * time.Second, MaxBytes: 1 << 20, Phase: 1, Read: readKubeProxyVersion},
	{Name: "kube-proxy-metrics", File: "kube-proxy/metrics.txt", Method: manifest.MethodHTTP, Path: "/metrics", Timeout: 10 * time.Second, MaxBytes: listingCap, Phase: 1, Read: readKubeProxyHTTP},
	{Name: "kube-proxy-healthz", File: "kube-proxy/healthz.json", Method: manifest.MethodHTTP, Path: "/healthz", Timeout: 5 * time.Second, MaxBytes: 1 << 20, Phase: 1, Read: readKubeProxyHTTP},
	{Name: "kube-proxy-livez", File: "kube-proxy/livez.json", Method: manifest.MethodHTTP, Path: "/livez", Timeout: 5 * time.Second, MaxBytes: 1 << 20, Phase: 1, Read: readKubeProxyHTTP},
	{Name: "kube-proxy-log", File: "kube-proxy/log.txt", Method: manifest.MethodFile, Path: "/var/log/pods/kube-system_kube-proxy-*/kube-proxy/*.log", Timeout: 10 * time.Second, Phase: 1, Read: readKubeProxyLog},

	{Name: "cluster-services", File: "cluster/services.yaml", Method: manifest.MethodKubeAPI, Path: "services", Timeout: 60 * time.Second, Phase: 1, Read: readCluster},
	{Name: "cluster-endpointslices", File: "cluster/endpointslices.yaml", Method: manifest.MethodKubeAPI, Path: "endpointslices.discovery.k8s.io", Timeout: 60 * time.Second, Phase: 1, Read: readCluster},
	{Name: "cluster-kube-proxy-configmap", File: "cluster/kube-proxy-configmap.yaml", Method: manifest.MethodKubeAPI, Path: "configmaps -n kube-system", Timeout: 20 * time.Second, Phase: 1, Read: readCluster},
	{Name: "cluster-kube-proxy-daemonset", File: "cluster/kube-proxy-daemonset.yaml", Method: manifest.MethodKubeAPI, Path: "daemonsets.apps -n kube-system", Timeout: 20 * time.Second, Phase: 1, Read: readCluster},
	{Name: "cluster-kube-proxy-pods", File: "cluster/kube-proxy-pods.yaml", Method: manifest.MethodKubeAPI, Path: "pods -n kube-system", Timeout: 20 * time.Second, Phase: 1, Read: readCluster},
	{Name: "cluster-servicecidrs", File: "cluster/servicecidrs.yaml", Method: manifest.MethodKubeAPI, Path: "servicecidrs.networking.k8s.io", Timeout: 20 * time.Second, Phase: 1, Read: readCluster},
	{Name: "cluster-node", File: "cluster/node.yaml", Method: manifest.MethodKubeAPI, Path: "nodes", Timeout: 20 * time.Second, Phase: 1, Read: readCluster},
}

// A blocker is why a source or command cannot run: what it reads is
// absent (the source is skipped), or whether it is there could not be
// read (failed: unreadable is not absent).
type blocker struct {
	why    string
	failed bool
}

func skip(format string, args ...any) blocker {
	return blocker{why: fmt.Sprintf(format, args...)}
}

// unreadable is the blocker of a node file that exists but could not be
// read (permission denied, as a user other than root).
func unreadable(p string, err error, what string) blocker {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return blocker{why: fmt.Sprintf("cannot read %s (%v): %s is unknown; run collect as root", p, err, what), failed: true}
}

// check returns why s cannot be read, a zero blocker when it can.
func (s *Source) check(e *env) blocker {
	if s.Requires != nil {
		return s.Requires(e)
	}
	return blocker{}
}

func needNFTables(e *env) blocker {
	if present, known := e.module("nf_tables"); known && !present {
		return skip("nf_tables is not loaded: there are no nf_tables rules (and listing them would load the module)")
	}
	return blocker{}
}

func needLegacy(names, module string) func(*env) blocker {
	return func(e *env) blocker {
		data, err := os.ReadFile(e.path(names))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return skip("no legacy (x_tables) tables: %s is absent (%s is not loaded)", names, module)
		case err != nil:
			return unreadable(names, err, "whether "+module+" is loaded")
		case len(bytes.TrimSpace(data)) == 0:
			return skip("no legacy (x_tables) tables: %s is empty", names)
		}
		return blocker{}
	}
}

func needIPVS(e *env) blocker {
	switch err := e.stat("/proc/net/ip_vs"); {
	case errors.Is(err, fs.ErrNotExist):
		return skip("IPVS is not loaded in the kernel (no /proc/net/ip_vs): not read, since reading it would load the ip_vs module")
	case err != nil:
		return unreadable("/proc/net/ip_vs", err, "whether IPVS is loaded")
	}
	return blocker{}
}

func needModule(module, tool string) func(*env) blocker {
	return func(e *env) blocker {
		if present, known := e.module(module); known && !present {
			return skip("%s is not loaded: nothing to list (and %s would load the module)", module, tool)
		}
		return blocker{}
	}
}

func needConntrack(e *env) blocker {
	const p = "/proc/sys/net/netfilter/nf_conntrack_max"
	switch err := e.stat(p); {
	case errors.Is(err, fs.ErrNotExist):
		return skip("nf_conntrack is not loaded (no %s): no connection tracking (and conntrack would load the module)", p)
	case err != nil:
		return unreadable(p, err, "whether nf_conntrack is loaded")
	}
	return blocker{}
}

// timeout returns a source's timeout, capped by Options.Timeout and by
// what is left of the total (Options.TotalTimeout).
func (e *env) timeout(d time.Duration) time.Duration {
	d = e.ownTimeout(d)
	if !e.deadline.IsZero() {
		left := time.Until(e.deadline)
		if left <= 0 {
			left = time.Millisecond
		}
		if d == 0 || left < d {
			// Rounded, never to 0, which would be no timeout at all.
			return max(left.Round(time.Millisecond), time.Millisecond)
		}
	}
	return d
}

// ownTimeout returns a source's timeout capped by Options.Timeout.
func (e *env) ownTimeout(d time.Duration) time.Duration {
	if c := e.opts.Timeout; c > 0 && (d == 0 || c < d) {
		return c
	}
	return d
}

// timedOut describes a command killed by its timeout t, of which the
// source's own was own.
func (e *env) timedOut(err error, t, own time.Duration) string {
	if own == 0 || t < own {
		return fmt.Sprintf("%v (what was left of the %s all the sources may take, --total-timeout): the command and its children were killed", err, e.total)
	}
	return fmt.Sprintf("%v: the command and its children were killed", err)
}

// pick chooses the command to run: the first installed one whose
// precondition holds. It returns nil and the reason when none can run
// (failed: a precondition could not be read).
func (e *env) pick(s *Source) ([]string, blocker) {
	var why []string
	failed := false
	for _, c := range s.Commands {
		p, err := e.runner.LookPath(c.Args[0])
		if err != nil {
			why = append(why, c.Args[0]+" is not installed (not found in PATH)")
			continue
		}
		if c.Requires != nil {
			if r := c.Requires(e); r.why != "" {
				why = append(why, r.why)
				failed = failed || r.failed
				continue
			}
		}
		if c.NotSameAs != "" {
			if q, err := e.runner.LookPath(c.NotSameAs); err == nil && sameFile(p, q) {
				why = append(why, fmt.Sprintf("%s is %s (captured by that source)", c.Args[0], c.NotSameAs))
				continue
			}
		}
		return c.Args, blocker{}
	}
	return nil, blocker{why: strings.Join(why, "; "), failed: failed}
}

// sameFile reports whether two program paths are the same binary after
// resolving links: on Debian, iptables-save and iptables-legacy-save are
// both xtables-legacy-multi when the alternatives select legacy.
func sameFile(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// runExec runs an exec source.
func runExec(ctx context.Context, e *env, s *Source, w *Writer) {
	args, b := e.pick(s)
	if args == nil {
		why := b.why
		if s.Netlink != nil {
			rec := w.Record()
			rec.Method, rec.Command = manifest.MethodNetlink, nil
			if err := s.Netlink(ctx, e, w); err != nil {
				w.Fail("%s; reading over netlink instead failed: %v", why, err)
				return
			}
			w.Note("%s: read over netlink instead", why)
			return
		}
		if b.failed {
			w.Fail("%s", why)
		} else {
			w.Skip("%s", why)
		}
		return
	}
	w.Record().Command = args
	c := Cmd{Args: args, Timeout: e.timeout(s.Timeout), MaxBytes: s.MaxBytes}
	if s.Sample {
		c.MaxLines = e.opts.ConntrackSample
		if c.MaxLines <= 0 {
			c.MaxLines = 5000
		}
	}
	res := e.runner.Run(ctx, c, w)
	if res.Started {
		x := res.ExitStatus
		w.Record().ExitStatus = &x
	}
	stderr := firstLines(res.Stderr, 3)
	switch {
	case !res.Started:
		w.Fail("%s: %v", args[0], res.Err)
	case res.TimedOut:
		w.Fail("%s", e.timedOut(res.Err, c.Timeout, e.ownTimeout(s.Timeout)))
	case res.Err != nil && errors.Is(ctx.Err(), context.Canceled):
		w.Fail("interrupted")
	case res.Err != nil:
		w.Fail("%v", res.Err)
	case res.Truncated && s.Sample:
		w.Partial("bounded sample: the first %d entries", c.MaxLines)
	case res.Truncated:
		w.Fail("output over the %d-byte cap: discarded (a cut dump would be misread)", s.MaxBytes)
	case res.ExitStatus != 0:
		if stderr == "" {
			w.Fail("exit status %d", res.ExitStatus)
		} else {
			w.Fail("exit status %d: %s", res.ExitStatus, stderr)
		}
	case stderr != "" && !s.Sample:
		w.Note("stderr: %s", stderr)
	}
}

// firstLines returns up to n non-empty lines of b joined by " / ", each
// at most 300 bytes.
func firstLines(b []byte, n int) string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		if len(l) > 300 {
			l = l[:300] + "..."
		}
		out = append(out, l)
		if len(out) == n {
			break
		}
	}
	return strings.Join(out, " / ")
}

// readFileSource copies the file at s.Path.
func readFileSource(ctx context.Context, e *env, s *Source, w *Writer) {
	copyFile(e, e.path(s.Path), s.MaxBytes, w)
}

func copyFile(e *env, p string, max int64, w *Writer) {
	f, err := os.Open(p)
	if err != nil {
		if os.IsNotExist(err) {
			w.Skip("%s does not exist", strings.TrimPrefix(p, strings.TrimSuffix(e.root, "/")))
			return
		}
		w.Fail("%v", err)
		return
	}
	defer f.Close()
	r := io.Reader(f)
	if max > 0 {
		r = io.LimitReader(f, max+1)
	}
	n, err := io.Copy(w, r)
	if err != nil {
		w.Fail("reading %s: %v", p, err)
		return
	}
	if max > 0 && n > max {
		w.Fail("%s is over the %d-byte cap: discarded", p, max)
	}
}

func readBuiltinModules(ctx context.Context, e *env, s *Source, w *Writer) {
	rel := e.kernelRelease()
	if rel == "" {
		w.Skip("kernel release unknown (no /proc/sys/kernel/osrelease)")
		return
	}
	p := "/lib/modules/" + rel + "/modules.builtin"
	w.Record().Path = p
	copyFile(e, e.path(p), s.MaxBytes, w)
}

// sysctlKeys are the sysctls kube-proxy sets or depends on.
var sysctlKeys = []string{
	"net.ipv4.ip_forward",
	"net.ipv4.conf.all.forwarding",
	"net.ipv6.conf.all.forwarding",
	"net.ipv6.conf.all.disable_ipv6",
	"net.bridge.bridge-nf-call-iptables",
	"net.bridge.bridge-nf-call-ip6tables",
	"net.bridge.bridge-nf-call-arptables",
	"net.ipv4.conf.all.route_localnet",
	"net.ipv4.conf.all.rp_filter",
	"net.ipv4.conf.default.rp_filter",
	"net.ipv4.conf.all.arp_ignore",
	"net.ipv4.conf.all.arp_announce",
	"net.ipv4.ip_nonlocal_bind",
	"net.ipv4.ip_local_port_range",
	"net.ipv4.ip_local_reserved_ports",
	"net.ipv4.vs.conntrack",
	"net.ipv4.vs.conn_reuse_mode",
	"net.ipv4.vs.expire_nodest_conn",
	"net.ipv4.vs.expire_quiescent_template",
	"net.ipv4.vs.sloppy_tcp",
	"net.netfilter.nf_conntrack_max",
	"net.netfilter.nf_conntrack_count",
	"net.netfilter.nf_conntrack_buckets",
	"net.netfilter.nf_conntrack_tcp_be_liberal",
	"net.netfilter.nf_conntrack_tcp_loose",
	"net.netfilter.nf_conntrack_tcp_timeout_established",
	"net.netfilter.nf_conntrack_tcp_timeout_close_wait",
	"net.netfilter.nf_conntrack_tcp_timeout_time_wait",
	"net.netfilter.nf_conntrack_udp_timeout",
	"net.netfilter.nf_conntrack_udp_timeout_stream",
	"net.nf_conntrack_max",
	"net.core.somaxconn",
	"net.core.netdev_max_backlog",
}

// readSysctls writes the sysctls of sysctlKeys as `key = value` lines,
// as sysctl prints them, read from /proc/sys.
func readSysctls(ctx context.Context, e *env, s *Source, w *Writer) {
	var absent, denied []string
	n := 0
	for _, k := range sysctlKeys {
		b, err := os.ReadFile(e.path("/proc/sys/" + strings.ReplaceAll(k, ".", "/")))
		if errors.Is(err, fs.ErrNotExist) {
			absent = append(absent, k)
			continue
		}
		if err != nil {
			denied = append(denied, k)
			continue
		}
		n++
		fmt.Fprintf(w, "%s = %s\n", k, strings.TrimRight(string(b), "\n"))
	}
	if len(denied) > 0 {
		w.Note("unreadable (permission denied or another error; not absent): %s", strings.Join(denied, ", "))
	}
	if n == 0 {
		w.Fail("none of the %d sysctls could be read below %s", len(sysctlKeys), e.path("/proc/sys"))
		return
	}
	if len(absent) > 0 {
		w.Note("absent (module not loaded or not in this kernel): %s", strings.Join(absent, ", "))
	}
}
