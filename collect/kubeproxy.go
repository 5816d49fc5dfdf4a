package collect

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/proxyscan/proxyscan/parsers/kpcmdline"
	"github.com/proxyscan/proxyscan/parsers/kpconfig"
)

// kubeProxy is the kube-proxy process found through /proc.
type kubeProxy struct {
	pid     int
	dir     string // <root>/proc/<pid>
	cmdline []byte
	cl      *kpcmdline.Cmdline
	others  []int
	// elsewhere are the kube-proxy processes of other network
	// namespaces, left out; unsure says that the process's namespace
	// could not be read.
	elsewhere []int
	unsure    bool
	config    *kpconfig.Config
}

// findKubeProxy looks for kube-proxy among the processes of proc: a
// process whose comm is kube-proxy, whose argv[0] is a kube-proxy binary,
// or `hyperkube kube-proxy|proxy`. Only a process of collect's own network
// namespace is kube-proxy of the data plane collected: one whose
// namespace is another (proc/PID/ns/net) is left out, and one whose
// namespace cannot be read is taken only when none is known to share it.
func findKubeProxy(proc string) (*kubeProxy, blocker) {
	ents, err := os.ReadDir(proc)
	if err != nil {
		return nil, blocker{why: fmt.Sprintf("cannot list processes: %v", err), failed: true}
	}
	var pids []int
	for _, de := range ents {
		pid, err := strconv.Atoi(de.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	self, _ := os.Readlink(filepath.Join(proc, "self", "ns", "net"))
	var same, unsure, elsewhere []*kubeProxy
	for _, pid := range pids {
		dir := filepath.Join(proc, strconv.Itoa(pid))
		raw, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil || len(raw) == 0 {
			continue // gone, or a kernel thread
		}
		comm, _ := os.ReadFile(filepath.Join(dir, "comm"))
		if !isKubeProxy(strings.TrimSpace(string(comm)), raw) {
			continue
		}
		kp := &kubeProxy{pid: pid, dir: dir, cmdline: raw}
		ns, err := os.Readlink(filepath.Join(dir, "ns", "net"))
		switch {
		case self == "" || (err == nil && ns == self):
			same = append(same, kp)
		case err != nil:
			kp.unsure = true
			unsure = append(unsure, kp)
		default:
			elsewhere = append(elsewhere, kp)
		}
	}
	cands := append(same, unsure...)
	if len(cands) == 0 {
		if len(elsewhere) > 0 {
			return nil, skip("kube-proxy is not running on this node (this network namespace): the kube-proxy processes %v run in other network namespaces", pidsOf(elsewhere))
		}
		// A /proc mounted with hidepid hides the processes of other
		// users, init's among them: kube-proxy may run unseen.
		if _, err := os.Lstat(filepath.Join(proc, "self")); err == nil {
			if _, err := os.Stat(filepath.Join(proc, "1")); err != nil {
				return nil, blocker{why: fmt.Sprintf("cannot tell whether kube-proxy runs: %s hides other users' processes (hidepid); run collect as root", proc), failed: true}
			}
		}
		return nil, skip("kube-proxy is not running on this node (no kube-proxy process in %s)", proc)
	}
	found := cands[0]
	found.others = pidsOf(cands[1:])
	found.elsewhere = pidsOf(elsewhere)
	if cl, err := kpcmdline.Parse("kube-proxy/cmdline.txt", found.cmdline); err == nil {
		found.cl = cl
	}
	return found, blocker{}
}

// noKubeProxy records why a kube-proxy source cannot be read.
func (e *env) noKubeProxy(w *Writer) {
	if e.kpWhy.failed {
		w.Fail("%s", e.kpWhy.why)
	} else {
		w.Skip("%s", e.kpWhy.why)
	}
}

func pidsOf(kps []*kubeProxy) []int {
	var out []int
	for _, kp := range kps {
		out = append(out, kp.pid)
	}
	return out
}

func isKubeProxy(comm string, cmdline []byte) bool {
	argv := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	base := path.Base(argv[0])
	if comm == "kube-proxy" || base == "kube-proxy" {
		return true
	}
	return (base == "hyperkube" || comm == "hyperkube") && len(argv) > 1 && (argv[1] == "kube-proxy" || argv[1] == "proxy")
}

func (kp *kubeProxy) flag(name string) (string, bool) {
	if kp.cl == nil {
		return "", false
	}
	return kp.cl.Flag(name)
}

// hostnameOverride returns the node name kube-proxy uses when it is set
// explicitly (flag or configuration).
func (kp *kubeProxy) hostnameOverride() string {
	if v, ok := kp.flag("hostname-override"); ok && v != "" {
		return strings.ToLower(strings.TrimSpace(v))
	}
	if kp.config != nil && kp.config.Config.HostnameOverride != "" {
		return strings.ToLower(strings.TrimSpace(kp.config.Config.HostnameOverride))
	}
	return ""
}

func (kp *kubeProxy) procPath(p string) string {
	return "/proc/" + strconv.Itoa(kp.pid) + p
}

func readKubeProxyCmdline(ctx context.Context, e *env, s *Source, w *Writer) {
	if e.kp == nil {
		e.noKubeProxy(w)
		return
	}
	w.Record().Path = e.kp.procPath("/cmdline")
	if len(e.kp.others) > 0 {
		w.Note("more kube-proxy processes are running: %v (pid %d was read)", e.kp.others, e.kp.pid)
	}
	if len(e.kp.elsewhere) > 0 {
		w.Note("kube-proxy processes of other network namespaces were left out: %v", e.kp.elsewhere)
	}
	if e.kp.unsure {
		w.Note("the network namespace of pid %d could not be read (%s): it may be another namespace's kube-proxy", e.kp.pid, e.kp.procPath("/ns/net"))
	}
	_, _ = w.Write(e.kp.cmdline)
}

func readKubeProxyConfig(ctx context.Context, e *env, s *Source, w *Writer) {
	kp := e.kp
	if kp == nil {
		e.noKubeProxy(w)
		return
	}
	p, ok := kp.flag("config")
	if !ok || p == "" {
		w.Skip("kube-proxy runs without --config: its configuration is its command line (kube-proxy/cmdline.txt)")
		return
	}
	if !path.IsAbs(p) {
		cwd, err := os.Readlink(filepath.Join(kp.dir, "cwd"))
		if err != nil {
			cwd = "/"
		}
		p = path.Join(cwd, p)
	}
	w.Record().Path = kp.procPath("/root" + p)
	data, err := readCapped(filepath.Join(kp.dir, "root", filepath.FromSlash(p)), s.MaxBytes)
	if err != nil {
		w.Fail("reading kube-proxy's --config %s through its root: %v", p, err)
		return
	}
	_, _ = w.Write(data)
	cfg, err := kpconfig.ParseLenient("kube-proxy/config.yaml", data)
	if err != nil {
		w.Note("the configuration does not decode (%v): kube-proxy's default addresses are assumed", err)
		return
	}
	kp.config = cfg
}

func readCapped(p string, max int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("over the %d-byte cap", max)
	}
	return data, nil
}

func readKubeProxyVersion(ctx context.Context, e *env, s *Source, w *Writer) {
	kp := e.kp
	if kp == nil {
		e.noKubeProxy(w)
		return
	}
	args := []string{filepath.Join(kp.dir, "exe"), "--version"}
	if kp.cl != nil && kp.cl.Subcommand != "" {
		args = []string{args[0], kp.cl.Subcommand, "--version"}
	}
	w.Record().Command = append([]string{kp.procPath("/exe")}, args[1:]...)
	res := e.runner.Run(ctx, Cmd{Args: args, Timeout: e.timeout(s.Timeout), MaxBytes: s.MaxBytes}, w)
	if res.Started {
		x := res.ExitStatus
		w.Record().ExitStatus = &x
	}
	switch {
	case !res.Started:
		w.Fail("running kube-proxy's binary (%s) with --version: %v", kp.procPath("/exe"), res.Err)
	case res.Err != nil:
		w.Fail("%v", res.Err)
	case res.Truncated:
		w.Fail("output over the %d-byte cap", s.MaxBytes)
	case res.ExitStatus != 0:
		w.Fail("exit status %d: %s", res.ExitStatus, firstLines(res.Stderr, 2))
	}
}

// kube-proxy's default bind addresses (pkg/cluster/ports, v1alpha1
// defaults): metrics on loopback, health on every address.
const (
	defaultMetricsBind = "127.0.0.1:10249"
	defaultHealthzBind = "0.0.0.0:10256"
)

// bindAddress returns the address kube-proxy serves an endpoint on and
// where the value came from.
func (e *env) bindAddress(endpoint string) (string, string) {
	kp := e.kp
	metrics := endpoint == "/metrics"
	if kp != nil && kp.config != nil {
		c := kp.config.Config
		if metrics && c.MetricsBindAddress != "" {
			return withPort(c.MetricsBindAddress, kpconfig.MetricsPort), "metricsBindAddress of kube-proxy's configuration"
		}
		if !metrics && c.HealthzBindAddress != "" {
			return withPort(c.HealthzBindAddress, kpconfig.HealthzPort), "healthzBindAddress of kube-proxy's configuration"
		}
	}
	if kp != nil {
		name, portFlag, port := "healthz-bind-address", "healthz-port", kpconfig.HealthzPort
		if metrics {
			name, portFlag, port = "metrics-bind-address", "metrics-port", kpconfig.MetricsPort
		}
		if v, ok := kp.flag(name); ok && v != "" {
			return withPort(v, port), "--" + name
		}
		if v, ok := kp.flag(portFlag); ok && v != "" {
			return net.JoinHostPort("127.0.0.1", v), "--" + portFlag
		}
	}
	if metrics {
		return defaultMetricsBind, "kube-proxy's default"
	}
	return defaultHealthzBind, "kube-proxy's default"
}

func withPort(a string, port int) string {
	if _, _, err := net.SplitHostPort(a); err == nil {
		return a
	}
	return net.JoinHostPort(strings.Trim(a, "[]"), strconv.Itoa(port))
}

// loopbackURL turns a bind address into a loopback URL, or says why it
// cannot be reached on loopback.
func loopbackURL(bind, endpoint string) (string, string) {
	host, port, err := net.SplitHostPort(bind)
	if err != nil {
		return "", fmt.Sprintf("cannot read bind address %q: %v", bind, err)
	}
	if port == "0" {
		return "", "the server is disabled (port 0)"
	}
	var ip netip.Addr
	switch {
	case host == "":
		ip = netip.MustParseAddr("127.0.0.1")
	case strings.Contains(host, "/"):
		// 1.31+ accept a CIDR: kube-proxy listens on the local addresses in it.
		pfx, err := netip.ParsePrefix(host)
		if err != nil {
			return "", fmt.Sprintf("cannot read bind address %q", bind)
		}
		for _, lo := range []string{"127.0.0.1", "::1"} {
			if a := netip.MustParseAddr(lo); pfx.Contains(a) {
				ip = a
				break
			}
		}
		if !ip.IsValid() {
			return "", fmt.Sprintf("bound to %s, which holds no loopback address: not fetched (collect only contacts loopback)", bind)
		}
	default:
		a, err := netip.ParseAddr(host)
		if err != nil {
			return "", fmt.Sprintf("bound to %q: not an IP address: not fetched (collect only contacts loopback)", host)
		}
		switch {
		case a.IsUnspecified():
			ip = netip.MustParseAddr("127.0.0.1")
		case a.IsLoopback():
			ip = a
		default:
			return "", fmt.Sprintf("bound to %s, not a loopback or wildcard address: not fetched (collect only contacts loopback)", bind)
		}
	}
	return "http://" + net.JoinHostPort(ip.String(), port) + endpoint, ""
}

func readKubeProxyHTTP(ctx context.Context, e *env, s *Source, w *Writer) {
	if e.kp == nil {
		// Nothing to ask; and no packet is sent when none is needed.
		e.noKubeProxy(w)
		return
	}
	bind, from := e.bindAddress(s.Path)
	url, why := loopbackURL(bind, s.Path)
	if why != "" {
		w.Skip("%s (%s)", why, from)
		return
	}
	w.Record().Path = url
	{
		self, err1 := os.Readlink("/proc/self/ns/net")
		theirs, err2 := os.Readlink(filepath.Join(e.kp.dir, "ns", "net"))
		if err1 == nil && err2 == nil && self != theirs {
			w.Skip("kube-proxy runs in another network namespace (%s, collect runs in %s): its loopback is not reachable; run collect with the host network", theirs, self)
			return
		}
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout(s.Timeout))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		w.Fail("%v", err)
		return
	}
	resp, err := e.http.Do(req)
	if err != nil {
		w.Fail("%v", err)
		return
	}
	defer resp.Body.Close()
	w.Record().HTTPStatus = resp.StatusCode
	body, err := io.ReadAll(io.LimitReader(resp.Body, s.MaxBytes+1))
	if err != nil {
		w.Fail("reading the response: %v", err)
		return
	}
	if int64(len(body)) > s.MaxBytes {
		w.Fail("response over the %d-byte cap: discarded", s.MaxBytes)
		return
	}
	if s.Path == "/metrics" {
		if resp.StatusCode != http.StatusOK {
			w.Fail("HTTP %s", resp.Status)
			return
		}
	} else if resp.StatusCode != http.StatusOK {
		w.Note("kube-proxy reports itself unhealthy: HTTP %s", resp.Status)
	}
	_, _ = w.Write(body)
}

var rePodUID = regexp.MustCompile(`pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})`)

// readKubeProxyLog writes a bounded tail of kube-proxy's container logs
// from the kubelet's pod log directory: the current container's log, and
// the previous one's when the tail has room (a crash is in there).
func readKubeProxyLog(ctx context.Context, e *env, s *Source, w *Writer) {
	dirs, _ := filepath.Glob(e.path("/var/log/pods/kube-system_kube-proxy-*/kube-proxy"))
	if len(dirs) == 0 {
		w.Skip("no kube-proxy pod logs under /var/log/pods (kube-proxy is not run by the kubelet here, or logs elsewhere)")
		return
	}
	dir := pickLogDir(e, dirs)
	var files []string
	for _, pat := range []string{"*.log", "*.log.*"} {
		m, _ := filepath.Glob(filepath.Join(dir, pat))
		for _, f := range m {
			if !strings.HasSuffix(f, ".gz") {
				files = append(files, f)
			}
		}
	}
	if len(files) == 0 {
		w.Skip("no log files in %s", strings.TrimPrefix(dir, strings.TrimSuffix(e.root, "/")))
		return
	}
	sort.Slice(files, func(i, j int) bool { return mtime(files[i]).Before(mtime(files[j])) })
	maxLines, maxBytes := e.opts.LogLines, e.opts.LogBytes
	if maxLines <= 0 {
		maxLines = 10000
	}
	if maxBytes <= 0 {
		maxBytes = 8 << 20
	}
	var parts [][]byte
	var used []string
	cut := false
	for i := len(files) - 1; i >= 0 && maxLines > 0 && maxBytes > 0 && len(used) < 2; i-- {
		tail, whole, err := tailFile(files[i], maxLines, maxBytes)
		if err != nil {
			w.Note("reading %s: %v", files[i], err)
			continue
		}
		parts = append([][]byte{tail}, parts...)
		used = append([]string{strings.TrimPrefix(files[i], strings.TrimSuffix(e.root, "/"))}, used...)
		maxLines -= bytes.Count(tail, []byte("\n"))
		maxBytes -= int64(len(tail))
		if !whole {
			cut = true
			break
		}
	}
	if len(used) < len(files) {
		cut = true
	}
	w.Record().Path = strings.Join(used, ",")
	for _, p := range parts {
		_, _ = w.Write(p)
	}
	if cut {
		w.Partial("tail of the log: at most %d lines and %d bytes, from %s", e.logLines(), e.logBytes(), strings.Join(used, ", "))
	}
}

func (e *env) logLines() int {
	if e.opts.LogLines > 0 {
		return e.opts.LogLines
	}
	return 10000
}

func (e *env) logBytes() int64 {
	if e.opts.LogBytes > 0 {
		return e.opts.LogBytes
	}
	return 8 << 20
}

// pickLogDir prefers the log directory of the running kube-proxy's pod
// (its UID is in the process's cgroup), else the newest.
func pickLogDir(e *env, dirs []string) string {
	if e.kp != nil {
		if cg, err := os.ReadFile(filepath.Join(e.kp.dir, "cgroup")); err == nil {
			if m := rePodUID.FindSubmatch(cg); m != nil {
				uid := strings.ReplaceAll(string(m[1]), "_", "-")
				for _, d := range dirs {
					if strings.HasSuffix(filepath.Base(filepath.Dir(d)), "_"+uid) {
						return d
					}
				}
			}
		}
	}
	sort.Slice(dirs, func(i, j int) bool { return mtime(dirs[i]).After(mtime(dirs[j])) })
	return dirs[0]
}

func mtime(p string) time.Time {
	st, err := os.Stat(p)
	if err != nil {
		return time.Time{}
	}
	return st.ModTime()
}

// tailFile returns the last whole lines of a file, at most maxLines lines
// and maxBytes bytes, and whether that is the whole file.
func tailFile(p string, maxLines int, maxBytes int64) ([]byte, bool, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	size := st.Size()
	off := size - maxBytes
	if off < 0 {
		off = 0
	}
	buf := make([]byte, size-off)
	if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
		return nil, false, err
	}
	whole := off == 0
	if !whole {
		// Drop the first, partial line.
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			buf = buf[i+1:]
		} else {
			buf = nil
		}
	}
	if len(buf) > 0 && buf[len(buf)-1] != '\n' {
		buf = append(buf, '\n')
	}
	if n := bytes.Count(buf, []byte("\n")); n > maxLines {
		whole = false
		for skip := n - maxLines; skip > 0; skip-- {
			buf = buf[bytes.IndexByte(buf, '\n')+1:]
		}
	}
	return buf, whole, nil
}
