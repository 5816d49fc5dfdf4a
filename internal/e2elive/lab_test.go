//go:build e2elive && linux

package e2elive

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/proxyscan/proxyscan/internal/kubeapi/kubeapitest"
	"github.com/proxyscan/proxyscan/internal/netnstest"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// nodeName is the Node of the inputs, which kube-proxy runs as.
const nodeName = "east-w2"

// kubeProxyImage is the image of the fixture's kube-proxy DaemonSet: the
// release the binary is built from, whatever version string it reports.
const kubeProxyImage = "registry.k8s.io/kube-proxy:v1.37.2"

// syncWait bounds the wait for kube-proxy's first sync.
const syncWait = 2 * time.Minute

// TestMain deletes the namespaces of the run when it is interrupted
// (SIGINT, SIGTERM), which ends the tests before their cleanups: the
// kube-proxy processes die with the test binary (their parent-death
// signal), the namespaces would stay.
func TestMain(m *testing.M) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		names, _ := filepath.Glob(fmt.Sprintf("/var/run/netns/proxyscan-test-%d-*", os.Getpid()))
		for _, n := range names {
			_ = exec.Command("ip", "netns", "del", filepath.Base(n)).Run()
		}
		fmt.Fprintf(os.Stderr, "e2e-live: %v: deleted the namespaces %v\n", sig, names)
		os.Exit(1)
	}()
	os.Exit(m.Run())
}

// binaries returns the kube-proxy and proxyscan binaries the run was given;
// the test fails without them or without root: make e2e-live is asked for
// explicitly, so nothing is skipped silently.
func binaries(t *testing.T) (kubeProxy, proxyscan string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("e2e-live needs root: it creates network namespaces and runs kube-proxy in them")
	}
	kubeProxy, proxyscan = os.Getenv("E2E_KUBE_PROXY"), os.Getenv("E2E_PROXYSCAN")
	for env, p := range map[string]string{"E2E_KUBE_PROXY": kubeProxy, "E2E_PROXYSCAN": proxyscan} {
		if p == "" {
			t.Fatalf("%s is not set: run the test with make e2e-live, which builds the binaries", env)
		}
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s: %v", env, err)
		}
	}
	for _, tool := range []string{"ip", "iptables-save", "ip6tables-save", "iptables", "nft", "conntrack", "ipset"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (apt-get install iproute2 iptables nftables conntrack ipset)", tool)
		}
	}
	return kubeProxy, proxyscan
}

// inputs is the directory of the cluster the cases run.
func inputs(t *testing.T) string {
	return filepath.Join(parsetest.Root(t), "testdata", "upstream", "inputs", "shapes")
}

// fixture is the cluster of the inputs for mode: the Services,
// EndpointSlices and Node of cluster/, the kube-proxy ConfigMap of the
// mode, the ServiceCIDRs, and a kube-proxy DaemonSet of kubeProxyImage.
func fixture(t *testing.T, mode string) []any {
	t.Helper()
	dir := inputs(t)
	files, _ := filepath.Glob(filepath.Join(dir, "cluster", "*.yaml"))
	more, _ := filepath.Glob(filepath.Join(dir, mode, "cluster", "*.yaml"))
	var objs []any
	for _, f := range append(files, more...) {
		objs = append(objs, decodeObjects(t, f)...)
	}
	cidrs, err := os.ReadFile(filepath.Join(dir, "service-cidrs.txt"))
	if err != nil {
		t.Fatal(err)
	}
	sc := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes"}}
	sc.Spec.CIDRs = strings.Fields(string(cidrs))
	objs = append(objs, sc)
	labels := map[string]string{"k8s-app": "kube-proxy"}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: "kube-system", Labels: labels}}
	ds.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
	ds.Spec.Template.Labels = labels
	ds.Spec.Template.Spec.Containers = []corev1.Container{{
		Name: "kube-proxy", Image: kubeProxyImage,
		Command: []string{"/usr/local/bin/kube-proxy", "--config=/var/lib/kube-proxy/config.conf", "--hostname-override=$(NODE_NAME)"},
	}}
	ds.Status = appsv1.DaemonSetStatus{DesiredNumberScheduled: 1, CurrentNumberScheduled: 1, NumberReady: 1, NumberAvailable: 1, UpdatedNumberScheduled: 1}
	return append(objs, ds)
}

// decodeObjects reads the objects of a kubectl YAML file: one object or a
// List of them.
func decodeObjects(t *testing.T, file string) []any {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var list struct {
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(js, &list); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	raws := []json.RawMessage{js}
	if list.Kind == "List" {
		raws = list.Items
	}
	var out []any
	for _, raw := range raws {
		var head struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var obj any
		switch head.Kind {
		case "Service":
			obj = &corev1.Service{}
		case "EndpointSlice":
			obj = &discoveryv1.EndpointSlice{}
		case "Node":
			obj = &corev1.Node{}
		case "ConfigMap":
			obj = &corev1.ConfigMap{}
		default:
			t.Fatalf("%s: unexpected kind %q", file, head.Kind)
		}
		if err := json.Unmarshal(raw, obj); err != nil {
			t.Fatalf("%s: %s: %v", file, head.Kind, err)
		}
		out = append(out, obj)
	}
	return out
}

// inNetns runs fn on an OS thread moved into the network namespace name:
// a socket fn opens belongs to that namespace. The thread is given back
// only once it is back in the namespace it came from.
func inNetns(name string, fn func() error) error {
	target, err := os.Open(filepath.Join("/var/run/netns", name))
	if err != nil {
		return fmt.Errorf("opening network namespace %s: %w", name, err)
	}
	defer target.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer self.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("entering network namespace %s: %w", name, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
			// The thread stays locked and ends with this goroutine.
			errc <- fmt.Errorf("leaving network namespace %s: %w", name, err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// lab is one node: a network namespace with the node's addresses, the
// fake API server and kube-proxy in it.
type lab struct {
	t          *testing.T
	mode       string
	ns         *netnstest.NS
	api        *kubeapitest.Server
	kubeconfig string
	dir        string
	kubeProxy  string
	proxyscan  string
	kp         *exec.Cmd
	kpDone     chan struct{}
	kpLog      string
	http       *http.Client
}

// newLab makes the namespace and its API server holding objs.
func newLab(t *testing.T, mode string, objs []any) *lab {
	t.Helper()
	kubeProxy, proxyscan := binaries(t)
	l := &lab{t: t, mode: mode, kubeProxy: kubeProxy, proxyscan: proxyscan, dir: t.TempDir()}
	l.ns = netnstest.New(t)
	// The node's interface with the Node's InternalIPs (no dummy driver
	// is needed: ifb lists the same), and the forwarding a node has.
	l.ns.Shell(`
ip link add eth0 address 02:42:ac:14:08:0c type ifb
ip addr add 172.20.8.12/24 dev eth0
ip addr add 2001:db8:20::12/64 dev eth0 nodad
ip link set eth0 up
sysctl -q -w net.ipv4.ip_forward=1
sysctl -q -w net.ipv6.conf.all.forwarding=1
`)
	var ln net.Listener
	if err := inNetns(l.ns.Name, func() error {
		var err error
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	l.api = kubeapitest.NewOn(t, ln, objs...)
	l.kubeconfig = l.api.Kubeconfig(t)
	l.http = &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{
			DisableKeepAlives: true,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				var c net.Conn
				err := inNetns(l.ns.Name, func() error {
					var err error
					c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
					return err
				})
				return c, err
			},
		},
	}
	return l
}

// config is the kube-proxy configuration of the mode from the inputs,
// with the kubeconfig of the lab's server, JSON for its content type, and
// the replacements edits makes (whole lines, "key: value" as in the file).
func (l *lab) config(edits ...string) []byte {
	l.t.Helper()
	data, err := os.ReadFile(filepath.Join(inputs(l.t), l.mode, "kube-proxy", "config.yaml"))
	if err != nil {
		l.t.Fatal(err)
	}
	s := string(data)
	edits = append([]string{
		"  kubeconfig: " + l.kubeconfig,
		"  contentType: application/json",
		"  acceptContentTypes: application/json",
	}, edits...)
	for _, e := range edits {
		key := strings.SplitN(e, ":", 2)[0] + ":"
		re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(key) + `.*$`)
		if !re.MatchString(s) {
			l.t.Fatalf("kube-proxy configuration: no line %q to replace", key)
		}
		s = re.ReplaceAllLiteralString(s, e)
	}
	return []byte(s)
}

// startKubeProxy runs kube-proxy in the namespace with the configuration
// and waits for its first sync of both families.
func (l *lab) startKubeProxy(config []byte) {
	l.t.Helper()
	l.launchKubeProxy(config)
	l.waitSynced()
}

// launchKubeProxy runs kube-proxy in the namespace with the configuration,
// without waiting for it.
func (l *lab) launchKubeProxy(config []byte) {
	l.t.Helper()
	cfg := filepath.Join(l.dir, "config.conf")
	if err := os.WriteFile(cfg, config, 0o600); err != nil {
		l.t.Fatal(err)
	}
	l.kpLog = filepath.Join(l.dir, "kube-proxy.log")
	logf, err := os.Create(l.kpLog)
	if err != nil {
		l.t.Fatal(err)
	}
	// ip netns exec runs kube-proxy in its own process (exec, no fork), so
	// that the pid is kube-proxy's; it dies with the test.
	cmd := exec.Command("ip", "netns", "exec", l.ns.Name, l.kubeProxy, "--config="+cfg, "--hostname-override="+nodeName, "--v=2")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		l.t.Fatalf("starting kube-proxy: %v", err)
	}
	logf.Close()
	l.kp, l.kpDone = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(l.kpDone) }()
	l.t.Cleanup(func() {
		l.stopKubeProxy()
		if l.t.Failed() {
			l.t.Logf("kube-proxy's log starts:\n%s\nand ends:\n%s", head(l.kpLog, 40), tail(l.kpLog, 40))
		}
	})
}

// stopKubeProxy kills kube-proxy (a stopped one too) and waits for it.
func (l *lab) stopKubeProxy() {
	if l.kp == nil {
		return
	}
	select {
	case <-l.kpDone:
		return
	default:
	}
	_ = l.kp.Process.Signal(syscall.SIGKILL)
	_ = l.kp.Process.Signal(syscall.SIGCONT)
	select {
	case <-l.kpDone:
	case <-time.After(30 * time.Second):
		l.t.Errorf("kube-proxy (pid %d) did not exit after SIGKILL", l.kp.Process.Pid)
	}
}

// signal sends sig to kube-proxy.
func (l *lab) signal(sig syscall.Signal) {
	l.t.Helper()
	if err := l.kp.Process.Signal(sig); err != nil {
		l.t.Fatalf("kill -%d %d: %v", sig, l.kp.Process.Pid, err)
	}
}

// get GETs a kube-proxy URL of the namespace's loopback.
func (l *lab) get(url string) (int, string, error) {
	resp, err := l.http.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

var reLastSync = regexp.MustCompile(`(?m)^kubeproxy_sync_proxy_rules_last_timestamp_seconds\{ip_family="(IPv[46])"\} ([0-9.e+]+)$`)

// waitSynced polls until kube-proxy answers healthy, its metrics count a
// sync, and its rules for both families are in the kernel.
func (l *lab) waitSynced() {
	l.t.Helper()
	start := time.Now()
	var why string
	for time.Since(start) < syncWait {
		select {
		case <-l.kpDone:
			l.t.Fatalf("kube-proxy exited before its first sync; its log:\n%s", tail(l.kpLog, 60))
		default:
		}
		why = l.unsynced()
		if why == "" {
			l.t.Logf("kube-proxy synced in %s", time.Since(start).Round(10*time.Millisecond))
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	l.t.Fatalf("kube-proxy not synced after %s: %s; its log:\n%s", syncWait, why, tail(l.kpLog, 60))
}

func (l *lab) unsynced() string {
	code, _, err := l.get("http://127.0.0.1:10256/healthz")
	if err != nil || code != http.StatusOK {
		return fmt.Sprintf("healthz: %d %v", code, err)
	}
	_, metrics, err := l.get("http://127.0.0.1:10249/metrics")
	if err != nil {
		return fmt.Sprintf("metrics: %v", err)
	}
	synced := map[string]bool{}
	for _, m := range reLastSync.FindAllStringSubmatch(metrics, -1) {
		synced[m[1]] = m[2] != "0"
	}
	if !synced["IPv4"] || !synced["IPv6"] {
		return "no sync of both families in the metrics yet"
	}
	switch l.mode {
	case "nftables":
		for _, fam := range []string{"ip", "ip6"} {
			out, err := l.ns.Try(nil, "nft", "list", "map", fam, "kube-proxy", "service-ips")
			if err != nil || !strings.Contains(string(out), "goto service-") {
				return fmt.Sprintf("no service-ips elements in %s kube-proxy yet", fam)
			}
		}
	case "ipvs":
		out, err := l.ns.Try(nil, "ipvsadm", "-Ln")
		if err != nil || !strings.Contains(string(out), "TCP  10.112.") {
			return "no virtual servers of the cluster IPs yet"
		}
	default:
		for _, save := range []string{"iptables-save", "ip6tables-save"} {
			out, err := l.ns.Try(nil, save, "-t", "nat")
			if err != nil || !strings.Contains(string(out), "-j KUBE-SVC-") {
				return fmt.Sprintf("no KUBE-SVC jumps in %s yet", save)
			}
		}
	}
	return ""
}

// natRule returns the line of iptables-save -t nat matching every one of
// parts.
func (l *lab) natRule(parts ...string) string {
	l.t.Helper()
	for _, line := range strings.Split(string(l.ns.Run(nil, "iptables-save", "-t", "nat")), "\n") {
		ok := strings.HasPrefix(line, "-A ")
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			return line
		}
	}
	l.t.Fatalf("no nat rule with %q", parts)
	return ""
}

// deleteNATRule deletes a rule, given as iptables-save prints it.
func (l *lab) deleteNATRule(rule string) {
	l.t.Helper()
	l.ns.Run(nil, "sh", "-c", "iptables -t nat -D "+strings.TrimPrefix(rule, "-A "))
}

// collect runs proxyscan collect in the namespace and returns the bundle.
func (l *lab) collect(args ...string) string {
	l.t.Helper()
	dir := filepath.Join(l.dir, "bundle")
	if keep := os.Getenv("E2E_KEEP"); keep != "" {
		// Kept for a look after the run.
		dir = filepath.Join(keep, strings.ReplaceAll(l.t.Name(), "/", "_"))
		_ = os.RemoveAll(dir)
	}
	start := time.Now()
	argv := append([]string{"netns", "exec", l.ns.Name, l.proxyscan, "collect", "--dir", dir, "--kubeconfig", l.kubeconfig, "--no-color"}, args...)
	out, err := exec.Command("ip", argv...).CombinedOutput()
	if err != nil {
		l.t.Fatalf("proxyscan collect: %v\n%s", err, out)
	}
	l.t.Logf("collected in %s", time.Since(start).Round(10*time.Millisecond))
	return dir
}

// report is what the cases read of analyze's JSON report.
type report struct {
	Verdict          string `json:"verdict"`
	Mode             string `json:"mode"`
	KubeProxyVersion string `json:"kubeProxyVersion"`
	VersionSource    string `json:"versionSource"`
	Findings         []struct {
		Check    string   `json:"check"`
		Severity string   `json:"severity"`
		Service  string   `json:"service"`
		Endpoint string   `json:"endpoint"`
		Message  string   `json:"message"`
		Objects  []string `json:"objects"`
		Checks   []string `json:"checks"`
	} `json:"findings"`
	Checks []struct {
		ID     string `json:"id"`
		State  string `json:"state"`
		Reason string `json:"reason"`
	} `json:"checks"`
	Notes []string `json:"notes"`
	raw   []byte
	exit  int
}

// analyze runs proxyscan analyze -o json on the bundle.
func (l *lab) analyze(bundle string) *report {
	l.t.Helper()
	cmd := exec.Command(l.proxyscan, "analyze", "-o", "json", bundle)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	r := &report{raw: out}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.exit = ee.ExitCode()
	case err != nil:
		l.t.Fatalf("proxyscan analyze: %v", err)
	}
	if r.exit > 1 {
		l.t.Fatalf("proxyscan analyze: exit %d\n%s", r.exit, stderr.String())
	}
	if err := json.Unmarshal(out, r); err != nil {
		l.t.Fatalf("proxyscan analyze -o json: %v\n%s", err, out)
	}
	return r
}

// findings returns the findings of check.
func (r *report) findings(check string) []int {
	var out []int
	for i, f := range r.Findings {
		if f.Check == check {
			out = append(out, i)
		}
	}
	return out
}

// check returns the state and reason of a check.
func (r *report) check(id string) (string, string) {
	for _, c := range r.Checks {
		if c.ID == id {
			return c.State, c.Reason
		}
	}
	return "", ""
}

// summary lists the findings, one a line, for failure messages.
func (r *report) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "verdict %s, exit %d, %d findings:\n", r.Verdict, r.exit, len(r.Findings))
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "  %s %s [%s] %s\n", f.Severity, f.Check, f.Service, f.Message)
	}
	return b.String()
}

// loadDependent are the checks whose findings say how busy the machine
// is rather than what state the node is in: on two loaded cores
// kube-proxy's first sync takes more than a second, and sync-slow rightly
// says so. They are logged, and asserted only when a case wants them.
var loadDependent = map[string]bool{"sync-slow": true}

// loaded reports whether the report holds findings of load-dependent
// checks, which it logs.
func (l *lab) loaded(r *report) bool {
	found := false
	for _, f := range r.Findings {
		if loadDependent[f.Check] {
			l.t.Logf("on this machine's load: %s %s: %s", f.Severity, f.Check, f.Message)
			found = true
		}
	}
	return found
}

// expect checks the findings: exactly the checks of want (check ID to
// number of findings), load-dependent ones aside, and the exit status.
func (l *lab) expect(r *report, want map[string]int, exit int) {
	l.t.Helper()
	got := map[string]int{}
	for _, f := range r.Findings {
		if loadDependent[f.Check] && want[f.Check] == 0 {
			continue
		}
		got[f.Check]++
	}
	bad := r.exit != exit || len(got) != len(want)
	for id, n := range want {
		bad = bad || got[id] != n
	}
	if bad {
		l.t.Errorf("want findings %v and exit %d, got %s", want, exit, r.summary())
	}
}

// head returns the first n lines of a file.
func head(file string, n int) string {
	data, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	lines := strings.SplitN(string(data), "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// tail returns the last n lines of a file.
func tail(file string, n int) string {
	data, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
