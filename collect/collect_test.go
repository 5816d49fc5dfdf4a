package collect

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/proxyscan/proxyscan/collect/redact"
	"github.com/proxyscan/proxyscan/internal/kubeapi/kubeapitest"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/kube"
	"github.com/proxyscan/proxyscan/parsers/manifest"
)

// fakeRunner answers commands from a table: output, exit status, or
// absence.
type fakeRunner struct {
	out    map[string]string // program -> stdout
	byArgs map[string]string // whole command line -> stdout, first
	exit   map[string]int
	err    map[string]string // program -> stderr

	mu  sync.Mutex // collect runs sources in parallel
	ran []string
}

func (f *fakeRunner) LookPath(name string) (string, error) {
	if _, ok := f.out[filepath.Base(name)]; ok {
		return "/fake/" + filepath.Base(name), nil
	}
	return "", fmt.Errorf("exec: %q: executable file not found in $PATH", name)
}

func (f *fakeRunner) Run(ctx context.Context, c Cmd, stdout io.Writer) CmdResult {
	name := filepath.Base(c.Args[0])
	f.mu.Lock()
	f.ran = append(f.ran, strings.Join(c.Args, " "))
	f.mu.Unlock()
	out, ok := f.out[name]
	if o, found := f.byArgs[strings.Join(c.Args, " ")]; found {
		out, ok = o, true
	}
	if !ok {
		return CmdResult{ExitStatus: -1, Err: fmt.Errorf("not found")}
	}
	w := &capWriter{w: stdout, maxBytes: c.MaxBytes, maxLines: c.MaxLines, stop: func(error) {}}
	_, _ = w.Write([]byte(out))
	return CmdResult{Path: "/fake/" + name, Started: true, ExitStatus: f.exit[name], Stderr: []byte(f.err[name]), Bytes: w.n, Truncated: w.capped}
}

// fakeNode builds a node file system: /proc with a kube-proxy process
// (its root, config and binary), sysctls, modules and pod logs.
func fakeNode(t *testing.T, metrics, healthz string) string {
	t.Helper()
	root := t.TempDir()
	write := func(p, content string, mode os.FileMode) {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	const uid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
	write("proc/sys/kernel/hostname", "Worker-1\n", 0o644)
	write("proc/sys/kernel/osrelease", "6.1.0-test\n", 0o644)
	write("proc/sys/net/ipv4/ip_forward", "1\n", 0o644)
	write("proc/sys/net/ipv4/ip_local_port_range", "32768\t60999\n", 0o644)
	write("proc/sys/net/netfilter/nf_conntrack_max", "131072\n", 0o644)
	write("proc/modules", "nf_tables 356352 0 - Live 0x0000000000000000\nip_set 61440 0 - Live 0x0000000000000000\n", 0o644)
	write("lib/modules/6.1.0-test/modules.builtin", "kernel/net/netfilter/nf_conntrack.ko\n", 0o644)
	write("proc/net/ip_tables_names", "", 0o644)
	// kube-proxy, pid 4242, in a container whose root is kproot.
	write("proc/4242/comm", "kube-proxy\n", 0o644)
	write("proc/4242/cmdline", "/usr/local/bin/kube-proxy\x00--config=/var/lib/kube-proxy/config.conf\x00--hostname-override=worker-1\x00", 0o644)
	write("proc/4242/cgroup", "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod"+strings.ReplaceAll(uid, "-", "_")+".slice/cri-containerd-abc.scope\n", 0o644)
	write("kproot/var/lib/kube-proxy/config.conf", "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: iptables\nmetricsBindAddress: "+metrics+"\nhealthzBindAddress: "+healthz+"\n", 0o644)
	write("kproot/usr/local/bin/kube-proxy", "#!/bin/sh\necho 'Kubernetes v1.37.2'\n", 0o755)
	if err := os.Symlink(filepath.Join(root, "kproot"), filepath.Join(root, "proc/4242/root")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "kproot/usr/local/bin/kube-proxy"), filepath.Join(root, "proc/4242/exe")); err != nil {
		t.Fatal(err)
	}
	// A shell whose command line mentions kube-proxy is not kube-proxy.
	write("proc/17/comm", "sh\n", 0o644)
	write("proc/17/cmdline", "/bin/sh\x00-c\x00kube-proxy --config=/x\x00", 0o644)
	// Logs of an old pod and of the running one (UID in the cgroup).
	var log strings.Builder
	for i := 0; i < 50; i++ {
		fmt.Fprintf(&log, "2026-03-02T08:%02d:00.000000000Z stderr F I0302 08:%02d:00.000000       1 proxier.go:%d] \"Syncing iptables rules\"\n", i, i, i)
	}
	write("var/log/pods/kube-system_kube-proxy-old12_11111111-2222-3333-4444-555555555555/kube-proxy/0.log", "old pod\n", 0o644)
	write("var/log/pods/kube-system_kube-proxy-abcde_"+uid+"/kube-proxy/0.log", log.String(), 0o644)
	old := time.Now().Add(-time.Hour)
	_ = os.Chtimes(filepath.Join(root, "var/log/pods/kube-system_kube-proxy-abcde_"+uid+"/kube-proxy/0.log"), old, old)
	return root
}

func bundleFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatalf("bundle file %s: %v", name, err)
	}
	return string(b)
}

func TestKubeProxySources(t *testing.T) {
	var metricsPath, healthPath string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			metricsPath = r.URL.Path
			fmt.Fprintln(w, "# TYPE kubeproxy_sync_proxy_rules_last_timestamp_seconds gauge\nkubeproxy_sync_proxy_rules_last_timestamp_seconds 1.7e+09")
		case "/healthz":
			healthPath = r.URL.Path
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"lastUpdated": "2026-03-02 08:00:00 +0000 UTC","currentTime": "2026-03-02 08:15:00 +0000 UTC"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	root := fakeNode(t, "127.0.0.1:"+port, "0.0.0.0:"+port)
	dir := filepath.Join(t.TempDir(), "b")
	var names []string
	for _, s := range Sources {
		if strings.HasPrefix(s.Name, "kube-proxy") || s.Name == "sysctl" || strings.HasPrefix(s.Name, "modules") {
			names = append(names, s.Name)
		}
	}
	res, err := Run(context.Background(), Options{Root: root, Dir: dir, Sources: pick(names...), LogLines: 20})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Manifest
	if m.Host != "Worker-1" || m.Kernel != "6.1.0-test" {
		t.Errorf("host %q kernel %q", m.Host, m.Kernel)
	}
	status := func(name string) *manifest.Source {
		s := m.Source(name)
		if s == nil {
			t.Fatalf("no source %s", name)
		}
		return s
	}
	if s := status("kube-proxy-cmdline"); s.Status != manifest.StatusOK || s.Path != "/proc/4242/cmdline" {
		t.Errorf("cmdline: %+v", s)
	}
	if got := bundleFile(t, dir, "kube-proxy/cmdline.txt"); !strings.Contains(got, "\x00--hostname-override=worker-1\x00") {
		t.Errorf("cmdline.txt is not NUL-separated as in /proc: %q", got)
	}
	if parsers.Detect([]byte(bundleFile(t, dir, "kube-proxy/cmdline.txt"))) != parsers.KindCmdline {
		t.Errorf("cmdline.txt is not detected as a kube-proxy command line")
	}
	if s := status("kube-proxy-config"); s.Status != manifest.StatusOK || s.Path != "/proc/4242/root/var/lib/kube-proxy/config.conf" {
		t.Errorf("config: %+v", s)
	}
	if got := bundleFile(t, dir, "kube-proxy/version.txt"); got != "Kubernetes v1.37.2\n" {
		t.Errorf("version.txt = %q", got)
	}
	if s := status("kube-proxy-metrics"); s.Status != manifest.StatusOK || s.HTTPStatus != 200 || s.Path != "http://127.0.0.1:"+port+"/metrics" || metricsPath == "" {
		t.Errorf("metrics: %+v", s)
	}
	// An unhealthy kube-proxy's healthz answer is kept, with its status.
	if s := status("kube-proxy-healthz"); s.Status != manifest.StatusOK || s.HTTPStatus != 503 || healthPath == "" || !strings.Contains(strings.Join(s.Notes, " "), "unhealthy") {
		t.Errorf("healthz: %+v", s)
	}
	if parsers.Detect([]byte(bundleFile(t, dir, "kube-proxy/healthz.json"))) != parsers.KindHealthz {
		t.Errorf("healthz.json is not detected as healthz")
	}
	if s := status("kube-proxy-livez"); s.Status != manifest.StatusFailed && s.Status != manifest.StatusOK {
		t.Errorf("livez: %+v", s)
	}
	log := bundleFile(t, dir, "kube-proxy/log.txt")
	if n := strings.Count(log, "\n"); n != 20 || !strings.Contains(log, "proxier.go:49]") || strings.Contains(log, "old pod") {
		t.Errorf("log tail: %d lines, from the running pod's log only:\n%s", n, log)
	}
	if s := status("kube-proxy-log"); s.Status != manifest.StatusPartial || !strings.Contains(s.Path, "kube-proxy-abcde_") {
		t.Errorf("log: %+v", s)
	}
	sys := bundleFile(t, dir, "node/sysctl.txt")
	if !strings.Contains(sys, "net.ipv4.ip_forward = 1\n") || !strings.Contains(sys, "net.ipv4.ip_local_port_range = 32768\t60999\n") {
		t.Errorf("sysctl.txt:\n%s", sys)
	}
	if parsers.Detect([]byte(sys)) != parsers.KindSysctl {
		t.Errorf("sysctl.txt is not detected as sysctl output")
	}
	if s := status("sysctl"); !strings.Contains(strings.Join(s.Notes, " "), "net.ipv4.vs.conntrack") {
		t.Errorf("sysctl notes do not list the absent keys: %v", s.Notes)
	}
	if s := status("modules-builtin"); s.Status != manifest.StatusOK || s.Path != "/lib/modules/6.1.0-test/modules.builtin" {
		t.Errorf("modules-builtin: %+v", s)
	}
}

func TestNonLoopbackBindIsNotFetched(t *testing.T) {
	root := fakeNode(t, "10.0.0.5:10249", "192.0.2.7:10256")
	res, err := Run(context.Background(), Options{Root: root, Dir: filepath.Join(t.TempDir(), "b"), Sources: pick("kube-proxy-config", "kube-proxy-metrics", "kube-proxy-healthz")})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"kube-proxy-metrics", "kube-proxy-healthz"} {
		s := res.Manifest.Source(name)
		if s.Status != manifest.StatusSkipped || !strings.Contains(s.Error, "not a loopback or wildcard address") {
			t.Errorf("%s: %+v", name, s)
		}
	}
}

func TestLoopbackURL(t *testing.T) {
	for _, tc := range []struct{ bind, url, why string }{
		{"0.0.0.0:10256", "http://127.0.0.1:10256/healthz", ""},
		{"127.0.0.1:10249", "http://127.0.0.1:10249/healthz", ""},
		{"[::]:10256", "http://127.0.0.1:10256/healthz", ""},
		{"[::1]:10256", "http://[::1]:10256/healthz", ""},
		{":10256", "http://127.0.0.1:10256/healthz", ""},
		{"127.0.0.0/8:10249", "http://127.0.0.1:10249/healthz", ""},
		{"10.0.0.0/8:10249", "", "holds no loopback address"},
		{"10.1.2.3:10249", "", "not a loopback"},
		{"0.0.0.0:0", "", "disabled"},
	} {
		url, why := loopbackURL(tc.bind, "/healthz")
		if url != tc.url || (tc.why == "") != (why == "") || !strings.Contains(why, tc.why) {
			t.Errorf("loopbackURL(%q) = %q, %q; want %q, %q", tc.bind, url, why, tc.url, tc.why)
		}
	}
}

func pick(names ...string) []Source {
	var out []Source
	for _, s := range Sources {
		for _, n := range names {
			if s.Name == n {
				out = append(out, s)
			}
		}
	}
	return out
}

func TestExecSourcesWithFakeRunner(t *testing.T) {
	root := fakeNode(t, "127.0.0.1:1", "127.0.0.1:1")
	f := &fakeRunner{
		out: map[string]string{
			"iptables-nft-save": "*nat\n:KUBE-SERVICES - [0:0]\nCOMMIT\n",
			"ipset":             "",
			"nft":               strings.Repeat("x", 100),
			"conntrack":         strings.Repeat("tcp      6 100 ESTABLISHED src=10.0.0.1 dst=10.96.0.1\n", 50),
			"ip":                "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536\n",
		},
		exit: map[string]int{"ip": 2},
		err:  map[string]string{"ip": "Cannot open netlink socket: Operation not permitted\n"},
	}
	srcs := pick("iptables-nft-save", "ip6tables-nft-save", "iptables-legacy-save", "ipvsadm", "ipset-save", "nft-ruleset", "ip-addr", "conntrack-dnat")
	for i := range srcs {
		if srcs[i].Name == "nft-ruleset" {
			srcs[i].MaxBytes = 10
		}
	}
	res, err := Run(context.Background(), Options{Root: root, Runner: f, Dir: filepath.Join(t.TempDir(), "b"), Sources: srcs, ConntrackSample: 7, Netlink: failingNetlink{}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct{ status, file, text string }{
		"iptables-nft-save":    {manifest.StatusOK, "node/iptables-save.txt", ""},
		"ip6tables-nft-save":   {manifest.StatusSkipped, "", "ip6tables-nft-save is not installed (not found in PATH); ip6tables-save is not installed"},
		"iptables-legacy-save": {manifest.StatusSkipped, "", "/proc/net/ip_tables_names is empty"},
		"ipvsadm":              {manifest.StatusSkipped, "", "IPVS is not loaded"},
		"ipset-save":           {manifest.StatusOK, "", ""},
		"nft-ruleset":          {manifest.StatusFailed, "", "output over the 10-byte cap: discarded"},
		"ip-addr":              {manifest.StatusFailed, "", "exit status 2: Cannot open netlink socket: Operation not permitted"},
		"conntrack-dnat":       {manifest.StatusPartial, "node/conntrack-dnat.txt", ""},
	}
	for name, w := range want {
		s := res.Manifest.Source(name)
		if s.Status != w.status || s.File != w.file || !strings.Contains(s.Error, w.text) {
			t.Errorf("%s: %s %q %q; want %s %q %q", name, s.Status, s.File, s.Error, w.status, w.file, w.text)
		}
	}
	if s := res.Manifest.Source("conntrack-dnat"); s.Bytes != int64(7*len("tcp      6 100 ESTABLISHED src=10.0.0.1 dst=10.96.0.1\n")) {
		t.Errorf("conntrack sample is %d bytes, want 7 lines", s.Bytes)
	}
	for _, c := range f.ran {
		if strings.HasPrefix(c, "ipvsadm") {
			t.Errorf("ipvsadm ran although IPVS is not loaded")
		}
	}
}

// failingNetlink stands in for a kernel without the families.
type failingNetlink struct{}

func (failingNetlink) IPVS() ([]VirtualServer, error)         { return nil, fmt.Errorf("no IPVS") }
func (failingNetlink) NFTables(w io.Writer) ([]string, error) { return nil, fmt.Errorf("no nf_tables") }
func (failingNetlink) NFTTables() ([]string, error)           { return nil, fmt.Errorf("no nf_tables") }

// fakeNetlink returns fixed virtual servers and tables.
type fakeNetlink struct {
	vs     []VirtualServer
	tables []string
}

// IPVS returns a copy of the virtual servers, as each read of the kernel
// gives a listing of its own (the sources sort theirs in parallel).
func (f fakeNetlink) IPVS() ([]VirtualServer, error) {
	vs := slices.Clone(f.vs)
	for i := range vs {
		vs[i].Dests = slices.Clone(vs[i].Dests)
	}
	return vs, nil
}

func (fakeNetlink) NFTables(w io.Writer) ([]string, error) { return nil, fmt.Errorf("no nf_tables") }
func (f fakeNetlink) NFTTables() ([]string, error)         { return f.tables, nil }

func TestIPVSOverNetlinkWhenIpvsadmIsMissing(t *testing.T) {
	root := fakeNode(t, "127.0.0.1:1", "127.0.0.1:1")
	if err := os.MkdirAll(filepath.Join(root, "proc/net"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "proc/net/ip_vs"), []byte("IP Virtual Server version 1.2.1 (size=4096)\nProt LocalAddress:Port Scheduler Flags\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	nl := fakeNetlink{vs: ipvsSample()}
	dir := filepath.Join(t.TempDir(), "b")
	res, err := Run(context.Background(), Options{Root: root, Runner: &fakeRunner{}, Netlink: nl, Dir: dir, Sources: pick("ipvsadm", "ipvsadm-save")})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ipvsadm", "ipvsadm-save"} {
		s := res.Manifest.Source(name)
		if s.Method != manifest.MethodNetlink || s.Status != manifest.StatusOK || !strings.Contains(strings.Join(s.Notes, " "), "read over netlink instead") {
			t.Errorf("%s: %+v", name, s)
		}
	}
	if k := parsers.Detect([]byte(bundleFile(t, dir, "node/ipvsadm.txt"))); k != parsers.KindIPVSList {
		t.Errorf("ipvsadm.txt detected as %s", k)
	}
	if k := parsers.Detect([]byte(bundleFile(t, dir, "node/ipvsadm-save.txt"))); k != parsers.KindIPVSSave {
		t.Errorf("ipvsadm-save.txt detected as %s", k)
	}
}

func TestClusterObjects(t *testing.T) {
	name, proto, port := "http", corev1.ProtocolTCP, int32(8080)
	srv := kubeapitest.New(t,
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
			Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.7", Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}},
		&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-x7k2p", Namespace: "shop", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
			AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{{Name: &name, Protocol: &proto, Port: &port}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.5"}}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: "kube-system"}, Data: map[string]string{"config.conf": "mode: ipvs\n"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy-token", Namespace: "kube-system"}, Data: map[string][]byte{"token": []byte("s3cr3t-token")}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.21"}}}},
	)
	root := fakeNode(t, "127.0.0.1:1", "127.0.0.1:1")
	dir := filepath.Join(t.TempDir(), "b")
	var srcs []Source
	for _, s := range Sources {
		if strings.HasPrefix(s.Name, "cluster-") || s.Phase == 0 {
			srcs = append(srcs, s)
		}
	}
	res, err := Run(context.Background(), Options{Root: root, Dir: dir, Sources: srcs, Kube: Kubeconfig(srv.Kubeconfig(t))})
	if err != nil {
		t.Fatal(err)
	}
	var all bytes.Buffer
	for _, f := range []string{"cluster/services.yaml", "cluster/endpointslices.yaml", "cluster/kube-proxy-configmap.yaml", "cluster/node.yaml"} {
		data := bundleFile(t, dir, f)
		all.WriteString(data)
		objs, err := kube.Parse(f, []byte(data))
		if err != nil {
			t.Fatalf("%s does not parse as a kubectl export: %v\n%s", f, err, data)
		}
		if len(objs.Services)+len(objs.EndpointSlices)+len(objs.ConfigMaps)+len(objs.Nodes) != 1 {
			t.Errorf("%s: %d services, %d slices, %d configmaps, %d nodes", f, len(objs.Services), len(objs.EndpointSlices), len(objs.ConfigMaps), len(objs.Nodes))
		}
		if !strings.HasPrefix(data, "apiVersion: v1\nitems:\n- ") || !strings.Contains(data, "kind: List\n") {
			t.Errorf("%s is not a List as kubectl prints it:\n%s", f, data)
		}
	}
	if strings.Contains(all.String(), "managedFields") || strings.Contains(all.String(), "s3cr3t") {
		t.Errorf("managed fields or a secret in the cluster files:\n%s", all.String())
	}
	// The node was found by kube-proxy's --hostname-override and gives
	// the node IPs.
	if len(res.Manifest.NodeIPs) != 1 || res.Manifest.NodeIPs[0].String() != "10.0.0.21" {
		t.Errorf("node IPs %v", res.Manifest.NodeIPs)
	}
	if s := res.Manifest.Source("cluster-kube-proxy-daemonset"); s.Status != manifest.StatusOK || s.File != "" {
		t.Errorf("daemonset (none exists): %+v", s)
	}
}

func TestArchiveOutput(t *testing.T) {
	root := fakeNode(t, "127.0.0.1:1", "127.0.0.1:1")
	dir := t.TempDir()
	out := filepath.Join(dir, "node.tgz")
	now := time.Date(2026, 3, 2, 8, 15, 0, 0, time.UTC)
	res, err := Run(context.Background(), Options{Root: root, Output: out, Sources: pick("sysctl", "kube-proxy-cmdline"), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Path != out {
		t.Errorf("path %s", res.Path)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "node.tgz" {
		t.Errorf("output directory holds %v", ents)
	}
	names := tarNames(t, out)
	want := []string{"proxyscan-Worker-1-20260302T081500Z/", "proxyscan-Worker-1-20260302T081500Z/manifest.json",
		"proxyscan-Worker-1-20260302T081500Z/kube-proxy/", "proxyscan-Worker-1-20260302T081500Z/kube-proxy/cmdline.txt",
		"proxyscan-Worker-1-20260302T081500Z/node/", "proxyscan-Worker-1-20260302T081500Z/node/sysctl.txt"}
	if strings.Join(names, "\n") != strings.Join(want, "\n") {
		t.Errorf("archive entries:\n%s\nwant:\n%s", strings.Join(names, "\n"), strings.Join(want, "\n"))
	}
	// -o - writes the same archive to stdout, and nothing else.
	var stdout bytes.Buffer
	if _, err := Run(context.Background(), Options{Root: root, Output: "-", Stdout: &stdout, Sources: pick("sysctl")}); err != nil {
		t.Fatal(err)
	}
	if b := stdout.Bytes(); len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("stdout is not a gzip archive")
	}
	// A non-empty --dir is refused before anything runs.
	if _, err := Run(context.Background(), Options{Root: root, Dir: dir, Sources: pick("sysctl")}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("non-empty --dir: %v", err)
	}
}

func TestInterruptedRunLeavesNothing(t *testing.T) {
	root := fakeNode(t, "127.0.0.1:1", "127.0.0.1:1")
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, Options{Root: root, Output: filepath.Join(dir, "b.tgz"), Sources: pick("sysctl")})
	if err != ErrInterrupted {
		t.Fatalf("err = %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
}

func TestRedactedArchiveName(t *testing.T) {
	root := fakeNode(t, "127.0.0.1:1", "127.0.0.1:1")
	r, err := redact.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "b.tgz")
	res, err := Run(context.Background(), Options{Root: root, Output: out, Sources: pick("sysctl", "kube-proxy-cmdline"), Redact: r})
	if err != nil {
		t.Fatal(err)
	}
	if res.Manifest.Host == "Worker-1" || !strings.HasPrefix(res.Manifest.Host, "node-") {
		t.Errorf("host %q not redacted", res.Manifest.Host)
	}
	for _, n := range tarNames(t, out) {
		if strings.Contains(n, "Worker-1") || !strings.HasPrefix(n, "proxyscan-"+res.Manifest.Host+"-") {
			t.Errorf("archive entry %s names the host", n)
		}
	}
	cmdline := ""
	for _, n := range tarNames(t, out) {
		if strings.HasSuffix(n, "cmdline.txt") {
			cmdline = n
		}
	}
	if cmdline == "" {
		t.Fatal("no cmdline.txt")
	}
}

func TestNFTLeavesOutIPTablesTablesOnBigNodes(t *testing.T) {
	root := fakeNode(t, "127.0.0.1:1", "127.0.0.1:1")
	big := "*nat\n" + strings.Repeat("-A KUBE-SERVICES -j KUBE-SVC-ABCDEFGHIJKLMNOP\n", bigIPTables/45+1) + "COMMIT\n"
	f := &fakeRunner{
		out: map[string]string{"iptables-nft-save": big, "nft": "unexpected"},
		byArgs: map[string]string{
			"nft list tables":                 "table ip filter\ntable ip nat\ntable ip kube-proxy\ntable inet cilium\n",
			"nft list table ip kube-proxy":    "table ip kube-proxy {\n}\n",
			"nft list table inet cilium":      "table inet cilium {\n}\n",
			"nft -j list table ip kube-proxy": `{"nftables": [{"metainfo": {"version": "1.0.6"}}, {"table": {"family": "ip", "name": "kube-proxy"}}]}`,
			"nft -j list table inet cilium":   `{"nftables": [{"metainfo": {"version": "1.0.6"}}, {"table": {"family": "inet", "name": "cilium"}}]}`,
		},
	}
	dir := filepath.Join(t.TempDir(), "b")
	nl := fakeNetlink{tables: []string{"ip filter", "ip nat", "ip kube-proxy", "inet cilium"}}
	res, err := Run(context.Background(), Options{Root: root, Runner: f, Netlink: nl, Dir: dir, Sources: pick("iptables-nft-save", "nft-ruleset", "nft-ruleset-json")})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"nft-ruleset", "nft-ruleset-json"} {
		s := res.Manifest.Source(name)
		if s.Status != manifest.StatusPartial || !strings.Contains(strings.Join(s.Notes, " "), "the tables of iptables-nft (ip filter, ip nat) are left out") {
			t.Errorf("%s: %+v", name, s)
		}
	}
	if got := bundleFile(t, dir, "node/nft-ruleset.txt"); got != "table ip kube-proxy {\n}\ntable inet cilium {\n}\n" {
		t.Errorf("nft-ruleset.txt = %q", got)
	}
	want := `{"nftables":[{"metainfo":{"version":"1.0.6"}},{"table":{"family":"ip","name":"kube-proxy"}},{"table":{"family":"inet","name":"cilium"}}]}` + "\n"
	if got := bundleFile(t, dir, "node/nft-ruleset.json"); got != want {
		t.Errorf("nft-ruleset.json = %s", got)
	}
	for _, c := range f.ran {
		if c == "nft list ruleset" || c == "nft -j list ruleset" {
			t.Errorf("listed the whole ruleset on a big node: %s", c)
		}
	}
}
