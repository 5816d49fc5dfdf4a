package collect

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/proxyscan/proxyscan/internal/kubeapi/kubeapitest"
	"github.com/proxyscan/proxyscan/parsers/kube"
	"github.com/proxyscan/proxyscan/parsers/manifest"
)

// collectCluster collects the cluster sources named (all when none) from
// a fake API server, for the node of fakeNode (worker-1).
func collectCluster(t *testing.T, srv *kubeapitest.Server, opts Options, names ...string) (*manifest.Manifest, string) {
	t.Helper()
	if len(names) == 0 {
		for _, s := range Sources {
			if strings.HasPrefix(s.Name, "cluster-") {
				names = append(names, s.Name)
			}
		}
	}
	opts.Root = fakeNode(t, "127.0.0.1:1", "127.0.0.1:1")
	opts.Dir = filepath.Join(t.TempDir(), "b")
	opts.Sources = pick(names...)
	opts.Kube = Kubeconfig(srv.Kubeconfig(t))
	res, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return res.Manifest, opts.Dir
}

// parseBundle parses a cluster file of a bundle as the loader does.
func parseBundle(t *testing.T, dir, name string) *kube.Objects {
	t.Helper()
	objs, err := kube.Parse(name, []byte(bundleFile(t, dir, name)))
	if err != nil {
		t.Fatalf("%s does not parse as a kubectl export: %v", name, err)
	}
	return objs
}

func source(t *testing.T, m *manifest.Manifest, name string) *manifest.Source {
	t.Helper()
	s := m.Source(name)
	if s == nil {
		t.Fatalf("no source %s in the manifest", name)
	}
	return s
}

// TestClusterPagination: lists longer than a page are read page by page,
// every request asking for 500 objects and passing the continue token on.
func TestClusterPagination(t *testing.T) {
	var objs []any
	for i := range 7 {
		objs = append(objs, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("svc-%d", i), Namespace: fmt.Sprintf("ns-%d", i%3)},
			Spec: corev1.ServiceSpec{ClusterIP: fmt.Sprintf("10.96.0.%d", 10+i), Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}})
	}
	for i := range 5 {
		objs = append(objs, &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("svc-%d-abcde", i), Namespace: fmt.Sprintf("ns-%d", i%3),
			Labels: map[string]string{discoveryv1.LabelServiceName: fmt.Sprintf("svc-%d", i)}}, AddressType: discoveryv1.AddressTypeIPv4})
	}
	srv := kubeapitest.New(t, objs...)
	srv.SetPageSize(2)
	m, dir := collectCluster(t, srv, Options{}, "cluster-services", "cluster-endpointslices")
	for _, name := range []string{"cluster-services", "cluster-endpointslices"} {
		if s := source(t, m, name); s.Status != manifest.StatusOK {
			t.Errorf("%s: %+v", name, s)
		}
	}
	svcs := parseBundle(t, dir, "cluster/services.yaml").Services
	var got []string
	for _, s := range svcs {
		got = append(got, s.Namespace+"/"+s.Name)
	}
	// As the API server lists them: by namespace, then name.
	want := "ns-0/svc-0 ns-0/svc-3 ns-0/svc-6 ns-1/svc-1 ns-1/svc-4 ns-2/svc-2 ns-2/svc-5"
	if strings.Join(got, " ") != want {
		t.Errorf("services %s\nwant     %s", strings.Join(got, " "), want)
	}
	if n := len(parseBundle(t, dir, "cluster/endpointslices.yaml").EndpointSlices); n != 5 {
		t.Errorf("%d endpointslices, want 5", n)
	}
	if s := source(t, m, "cluster-services"); !strings.Contains(strings.Join(s.Notes, " "), "7 objects") {
		t.Errorf("services notes %v", s.Notes)
	}
	pages := map[string][]string{}
	for _, r := range srv.Requests() {
		q := r.URL.Query()
		if q.Get("limit") != "500" {
			t.Errorf("%s asks for %q objects, not 500", r.URL, q.Get("limit"))
		}
		if ua := r.Header.Get("User-Agent"); ua != "proxyscan-collect" {
			t.Errorf("%s: user agent %q", r.URL, ua)
		}
		if a := r.Header.Get("Authorization"); a != "Bearer "+kubeapitest.Token {
			t.Errorf("%s: authorization %q, not the kubeconfig's token", r.URL, a)
		}
		pages[r.URL.Path] = append(pages[r.URL.Path], q.Get("continue"))
	}
	for path, n := range map[string]int{"/api/v1/services": 4, "/apis/discovery.k8s.io/v1/endpointslices": 3} {
		conts := pages[path]
		if len(conts) != n {
			t.Errorf("%s: %d pages, want %d", path, len(conts), n)
			continue
		}
		seen := map[string]bool{}
		for i, c := range conts {
			if (i == 0) != (c == "") || seen[c] {
				t.Errorf("%s page %d: continue %q (all %q)", path, i+1, c, conts)
			}
			seen[c] = true
		}
	}
}

// TestClusterForbidden: a 403 fails the source with the API server's
// message; the sources it does not concern are read.
func TestClusterForbidden(t *testing.T) {
	srv := kubeapitest.New(t,
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.7"}},
		&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-x7k2p", Namespace: "shop", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}}, AddressType: discoveryv1.AddressTypeIPv4},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy-abcde", Namespace: "kube-system", Labels: map[string]string{"k8s-app": "kube-proxy"}}, Spec: corev1.PodSpec{NodeName: "worker-1"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}},
	)
	srv.Forbid("list", "services")
	srv.Forbid("get", "configmaps")
	srv.Forbid("get", "daemonsets.apps")
	m, dir := collectCluster(t, srv, Options{})
	const user = `User "system:serviceaccount:kube-system:proxyscan"`
	for name, want := range map[string]string{
		"cluster-services":             `listing services: services is forbidden: ` + user + ` cannot list resource "services" in API group "" at the cluster scope`,
		"cluster-kube-proxy-configmap": `getting configmap kube-system/kube-proxy: configmaps "kube-proxy" is forbidden: ` + user + ` cannot get resource "configmaps" in API group "" in the namespace "kube-system"`,
		"cluster-kube-proxy-daemonset": `getting daemonset kube-system/kube-proxy: daemonsets.apps "kube-proxy" is forbidden: ` + user + ` cannot get resource "daemonsets" in API group "apps" in the namespace "kube-system"`,
	} {
		if s := source(t, m, name); s.Status != manifest.StatusFailed || s.Error != want || s.File != "" {
			t.Errorf("%s: %s %q\nwant error %q", name, s.Status, s.Error, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "cluster/services.yaml")); err == nil {
		t.Errorf("a failed source left cluster/services.yaml")
	}
	// The pods are still found, with kube-proxy's usual label when its
	// DaemonSet cannot be read.
	for _, name := range []string{"cluster-endpointslices", "cluster-kube-proxy-pods", "cluster-node"} {
		if s := source(t, m, name); s.Status != manifest.StatusOK || s.File == "" {
			t.Errorf("%s: %+v", name, s)
		}
	}
	if s := source(t, m, "cluster-kube-proxy-pods"); s.Path != "pods -n kube-system -l k8s-app=kube-proxy" {
		t.Errorf("pods path %q", s.Path)
	}
}

// TestClusterNotFound: the 404s the collection expects lead to its
// fallbacks: the ConfigMap under its other name, the DaemonSets whose name
// mentions kube-proxy, the Node by its hostname label; a Node found by
// neither is a note, not a failure.
func TestClusterNotFound(t *testing.T) {
	srv := kubeapitest.New(t,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy-config", Namespace: "kube-system"}, Data: map[string]string{"config": "mode: nftables\n"}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy-linux", Namespace: "kube-system"}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system"}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: "other"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-0-21.ec2.internal", Labels: map[string]string{corev1.LabelHostname: "worker-1"}},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.21"}}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-2", Labels: map[string]string{corev1.LabelHostname: "worker-2"}}},
	)
	m, dir := collectCluster(t, srv, Options{}, "cluster-kube-proxy-configmap", "cluster-kube-proxy-daemonset", "cluster-node")
	for _, name := range []string{"cluster-kube-proxy-configmap", "cluster-kube-proxy-daemonset", "cluster-node"} {
		if s := source(t, m, name); s.Status != manifest.StatusOK || s.File == "" {
			t.Errorf("%s: %+v", name, s)
		}
	}
	if cms := parseBundle(t, dir, "cluster/kube-proxy-configmap.yaml").ConfigMaps; len(cms) != 1 || cms[0].Name != "kube-proxy-config" {
		t.Errorf("configmaps %v", cms)
	}
	if ds := parseBundle(t, dir, "cluster/kube-proxy-daemonset.yaml").DaemonSets; len(ds) != 1 || ds[0].Name != "kube-proxy-linux" || ds[0].Namespace != "kube-system" {
		t.Errorf("daemonsets %v", ds)
	}
	if n := parseBundle(t, dir, "cluster/node.yaml").Nodes; len(n) != 1 || n[0].Name != "ip-10-0-0-21.ec2.internal" {
		t.Errorf("nodes %v", n)
	}
	if len(m.NodeIPs) != 1 || m.NodeIPs[0].String() != "10.0.0.21" {
		t.Errorf("node IPs %v", m.NodeIPs)
	}
	var sawLabel bool
	for _, r := range srv.Requests() {
		sawLabel = sawLabel || (r.URL.Path == "/api/v1/nodes" && r.URL.Query().Get("labelSelector") == corev1.LabelHostname+"=worker-1")
	}
	if !sawLabel {
		t.Errorf("the Node was not looked up by its hostname label")
	}

	// No Node at all.
	srv = kubeapitest.New(t)
	m, dir = collectCluster(t, srv, Options{}, "cluster-node", "cluster-kube-proxy-configmap")
	for _, name := range []string{"cluster-node", "cluster-kube-proxy-configmap"} {
		if s := source(t, m, name); s.Status != manifest.StatusOK || s.File != "" || s.Error != "" {
			t.Errorf("%s: %+v", name, s)
		}
	}
	if s := source(t, m, "cluster-node"); !strings.Contains(strings.Join(s.Notes, " "), `no Node named "worker-1"`) {
		t.Errorf("node notes %v", s.Notes)
	}
	if _, err := os.Stat(filepath.Join(dir, "cluster")); err == nil {
		t.Errorf("cluster files written for no objects")
	}
}

// TestClusterKubeProxyPods: the pods are selected by the DaemonSet's
// selector and this node's name; with none on this node, every kube-proxy
// pod is listed.
func TestClusterKubeProxyPods(t *testing.T) {
	pod := func(name, node string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", Labels: labels}, Spec: corev1.PodSpec{NodeName: node}}
	}
	kp := map[string]string{"k8s-app": "kube-proxy", "tier": "node"}
	objs := []any{
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: "kube-system"},
			Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-proxy"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"node"}}}}}},
		pod("kube-proxy-aaaaa", "worker-1", kp),
		pod("kube-proxy-bbbbb", "worker-2", kp),
		pod("kube-proxy-old", "worker-1", map[string]string{"k8s-app": "kube-proxy"}),
		pod("coredns-ccccc", "worker-1", map[string]string{"k8s-app": "kube-dns"}),
	}
	srv := kubeapitest.New(t, objs...)
	m, dir := collectCluster(t, srv, Options{}, "cluster-kube-proxy-pods", "cluster-kube-proxy-daemonset")
	s := source(t, m, "cluster-kube-proxy-pods")
	if s.Status != manifest.StatusOK || s.Path != "pods -n kube-system -l k8s-app=kube-proxy,tier in (node)" {
		t.Errorf("pods: %+v", s)
	}
	if pods := parseBundle(t, dir, "cluster/kube-proxy-pods.yaml").Pods; len(pods) != 1 || pods[0].Name != "kube-proxy-aaaaa" {
		t.Errorf("pods %v", pods)
	}
	var query string
	for _, r := range srv.Requests() {
		if r.URL.Path == "/api/v1/namespaces/kube-system/pods" {
			query = r.URL.Query().Get("labelSelector") + " " + r.URL.Query().Get("fieldSelector")
		}
	}
	if query != "k8s-app=kube-proxy,tier in (node) spec.nodeName=worker-1" {
		t.Errorf("pods selected by %q", query)
	}

	// On a node without a kube-proxy pod, every kube-proxy pod is listed.
	m, dir = collectCluster(t, srv, Options{Hostname: "worker-9"}, "cluster-kube-proxy-pods")
	s = source(t, m, "cluster-kube-proxy-pods")
	if s.Status != manifest.StatusOK || !strings.Contains(strings.Join(s.Notes, " "), `no kube-proxy pod on node "worker-9": listing every kube-proxy pod`) {
		t.Errorf("pods: %+v", s)
	}
	var names []string
	for _, p := range parseBundle(t, dir, "cluster/kube-proxy-pods.yaml").Pods {
		names = append(names, p.Name+"@"+p.Spec.NodeName)
	}
	if strings.Join(names, " ") != "kube-proxy-aaaaa@worker-1 kube-proxy-bbbbb@worker-2" {
		t.Errorf("pods %v", names)
	}
}

// TestClusterTimeout: an API server that does not answer fails the
// sources at their timeout, and the collection goes on.
func TestClusterTimeout(t *testing.T) {
	srv := kubeapitest.New(t)
	srv.Stall()
	start := time.Now()
	m, _ := collectCluster(t, srv, Options{Timeout: 300 * time.Millisecond}, "cluster-services", "cluster-node", "sysctl")
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the collection took %v", d)
	}
	for _, name := range []string{"cluster-services", "cluster-node"} {
		s := source(t, m, name)
		if s.Status != manifest.StatusFailed || !strings.Contains(s.Error, "context deadline exceeded") || s.DurationMS > 5000 {
			t.Errorf("%s: %s after %dms: %q", name, s.Status, s.DurationMS, s.Error)
		}
	}
	if s := source(t, m, "cluster-services"); !strings.HasPrefix(s.Error, "listing services: Get \""+srv.URL+"/api/v1/services?limit=500\"") {
		t.Errorf("services error %q", s.Error)
	}
	if s := source(t, m, "sysctl"); s.Status != manifest.StatusOK {
		t.Errorf("sysctl: %+v", s)
	}
}

// TestNoKubeconfig: without credentials the cluster sources are skipped;
// with a kubeconfig that cannot be loaded they fail, saying why.
func TestNoKubeconfig(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBECONFIG", "")
	root := fakeNode(t, "127.0.0.1:1", "127.0.0.1:1")
	res, err := Run(context.Background(), Options{Root: root, Dir: filepath.Join(t.TempDir(), "b"), Sources: pick("cluster-services"), Kube: Kubeconfig("")})
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Manifest.Source("cluster-services"); s.Status != manifest.StatusSkipped || s.Error != ErrNoKubeconfig.Error() {
		t.Errorf("no kubeconfig: %+v", s)
	}
	res, err = Run(context.Background(), Options{Root: root, Dir: filepath.Join(t.TempDir(), "b"), Sources: pick("cluster-services"), Kube: Kubeconfig(filepath.Join(t.TempDir(), "absent"))})
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Manifest.Source("cluster-services"); s.Status != manifest.StatusFailed || !strings.HasPrefix(s.Error, "loading the kubeconfig: ") {
		t.Errorf("absent kubeconfig: %+v", s)
	}
}

// TestClusterServiceCIDRs: the ServiceCIDRs are exported as kubectl would,
// and read back by the loader's parser.
func TestClusterServiceCIDRs(t *testing.T) {
	srv := kubeapitest.New(t,
		&networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.96.0.0/16", "fd00:10:96::/112"}}},
	)
	m, dir := collectCluster(t, srv, Options{}, "cluster-servicecidrs")
	if s := source(t, m, "cluster-servicecidrs"); s.Status != manifest.StatusOK || s.File != "cluster/servicecidrs.yaml" {
		t.Fatalf("source %+v", s)
	}
	objs := parseBundle(t, dir, "cluster/servicecidrs.yaml")
	if len(objs.ServiceCIDRs) != 1 || strings.Join(objs.ServiceCIDRs[0].Spec.CIDRs, ",") != "10.96.0.0/16,fd00:10:96::/112" {
		t.Errorf("read back %+v", objs.ServiceCIDRs)
	}
}
