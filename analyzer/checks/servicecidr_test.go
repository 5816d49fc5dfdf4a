package checks

import (
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kpv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/kube"
	"github.com/proxyscan/proxyscan/parsers/manifest"
)

func serviceCIDR(name string, cidrs ...string) *kube.ServiceCIDR {
	return &kube.ServiceCIDR{
		ServiceCIDR: &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: cidrs}},
		Pos:         parsers.Pos{File: "cluster/servicecidrs.yaml", Line: 3},
	}
}

// TestOutsideRanges is the API server's test of a cluster IP against the
// ServiceCIDRs, on one family and on dual-stack ranges.
func TestOutsideRanges(t *testing.T) {
	dual := []*kube.ServiceCIDR{serviceCIDR("kubernetes", "10.96.0.0/16", "fd00:10:96::/112")}
	v4only := []*kube.ServiceCIDR{serviceCIDR("kubernetes", "10.96.0.0/16")}
	two := []*kube.ServiceCIDR{serviceCIDR("kubernetes", "10.96.0.0/20"), serviceCIDR("extra", "10.96.64.0/18", "fd00:10:96::/112")}
	unmasked := []*kube.ServiceCIDR{serviceCIDR("odd", "10.96.1.7/24")}
	for _, tc := range []struct {
		name   string
		objs   []*kube.ServiceCIDR
		ip     string
		want   string
		family model.Family
	}{
		{"v4 inside", dual, "10.96.0.10", "", model.IPv4},
		{"v4 last allocatable", dual, "10.96.255.254", "", model.IPv4},
		{"v4 outside", dual, "10.97.0.10", "outside", model.IPv4},
		{"v4 network address", dual, "10.96.0.0", "the network address of 10.96.0.0/16", model.IPv4},
		{"v4 broadcast address", dual, "10.96.255.255", "the broadcast address of 10.96.0.0/16", model.IPv4},
		{"v6 inside", dual, "fd00:10:96::a", "", model.IPv6},
		{"v6 last address is allocatable", dual, "fd00:10:96::ffff", "", model.IPv6},
		{"v6 outside", dual, "fd00:10:97::a", "outside", model.IPv6},
		{"v6 network address", dual, "fd00:10:96::", "the network address of fd00:10:96::/112", model.IPv6},
		{"v6 without a v6 range", v4only, "fd00:10:96::a", "outside", model.IPv6},
		{"v4-mapped v6 text", dual, "::ffff:10.96.0.10", "", model.IPv4},
		{"second ServiceCIDR", two, "10.96.70.1", "", model.IPv4},
		{"between two ServiceCIDRs", two, "10.96.31.40", "outside", model.IPv4},
		{"v6 of the second ServiceCIDR", two, "fd00:10:96::5", "", model.IPv6},
		{"range written unmasked", unmasked, "10.96.1.200", "", model.IPv4},
		{"network of a range written unmasked", unmasked, "10.96.1.0", "the network address of 10.96.1.0/24", model.IPv4},
		{"no ServiceCIDR", nil, "10.96.0.10", "outside", model.IPv4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ranges, bad := serviceRanges(serviceCIDRSources(tc.objs))
			if len(bad) > 0 {
				t.Fatalf("bad ranges %v", bad)
			}
			ip := netip.MustParseAddr(tc.ip)
			if got := outsideRanges(ranges, ip); got != tc.want {
				t.Errorf("outsideRanges(%s) = %q, want %q", tc.ip, got, tc.want)
			}
			if got := model.FamilyOf(ip.Unmap()); got != tc.family {
				t.Errorf("family of %s = %s, want %s", tc.ip, got, tc.family)
			}
		})
	}
}

func TestLastAddr(t *testing.T) {
	for _, tc := range []struct{ prefix, want string }{
		{"10.96.0.0/12", "10.111.255.255"},
		{"10.96.0.0/16", "10.96.255.255"},
		{"10.96.0.0/29", "10.96.0.7"},
		{"10.96.0.8/32", "10.96.0.8"},
		{"10.0.0.0/8", "10.255.255.255"},
		{"fd00:10:96::/112", "fd00:10:96::ffff"},
		{"fd00:10:96::/108", "fd00:10:96::f:ffff"},
	} {
		if got := lastAddr(netip.MustParsePrefix(tc.prefix)).String(); got != tc.want {
			t.Errorf("lastAddr(%s) = %s, want %s", tc.prefix, got, tc.want)
		}
	}
}

func TestServiceRangesBad(t *testing.T) {
	ranges, bad := serviceRanges(serviceCIDRSources([]*kube.ServiceCIDR{serviceCIDR("kubernetes", "10.96.0.0/16", "10.96.0.0/33", "not-a-range")}))
	if len(ranges) != 1 || strings.Join(bad, "|") != "kubernetes: 10.96.0.0/33|kubernetes: not-a-range" {
		t.Errorf("ranges %v, bad %q", ranges, bad)
	}
}

func TestClusterIPsOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec corev1.ServiceSpec
		want string
	}{
		{"dual-stack", corev1.ServiceSpec{ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10", "fd00:10:96::a"}}, "10.96.0.10 fd00:10:96::a"},
		{"clusterIP only (old export)", corev1.ServiceSpec{ClusterIP: "10.96.0.10"}, "10.96.0.10"},
		{"headless", corev1.ServiceSpec{ClusterIP: "None", ClusterIPs: []string{"None"}}, ""},
		{"ExternalName", corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ClusterIP: "10.96.0.10"}, ""},
		{"not allocated yet", corev1.ServiceSpec{}, ""},
	} {
		got := strings.Join(clusterIPsOf(&corev1.Service{Spec: tc.spec}), " ")
		if got != tc.want {
			t.Errorf("%s: clusterIPsOf = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestAddressClashes checks which other use of an address the inputs show,
// the most specific first.
func TestAddressClashes(t *testing.T) {
	node := &kube.Node{Node: &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "w9"},
		Spec:       corev1.NodeSpec{PodCIDRs: []string{"10.112.60.0/24", "fd00:112::5a00/120"}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: "10.112.60.1"},
			{Type: corev1.NodeHostName, Address: "10.112.61.1"},
			{Type: corev1.NodeExternalIP, Address: "2001:db8::9"},
		}},
	}}
	old := &kube.Node{Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w1"}, Spec: corev1.NodeSpec{PodCIDR: "10.112.62.0/24"}}}
	cfg := &model.Config{KubeProxyConfiguration: &kpv1alpha1.KubeProxyConfiguration{ClusterCIDR: "10.112.0.0/18, fd88::/56"}}
	p := &Pass{Snap: &model.Snapshot{Objects: &kube.Objects{Nodes: []*kube.Node{node, old}}, Config: cfg}}
	for _, tc := range []struct{ ip, want string }{
		{"10.112.60.1", "the InternalIP of Node w9"},
		{"2001:db8::9", "the ExternalIP of Node w9"},
		{"10.112.60.61", "in Node w9's pod range 10.112.60.0/24"},
		{"fd00:112::5a10", "in Node w9's pod range fd00:112::5a00/120"},
		{"10.112.62.5", "in Node w1's pod range 10.112.62.0/24"},
		{"10.112.61.1", "in the cluster's pod range 10.112.0.0/18 (kube-proxy's clusterCIDR)"},
		{"fd88::1", "in the cluster's pod range fd88::/56 (kube-proxy's clusterCIDR)"},
		{"10.112.64.1", ""},
		{"fd00:112::1", ""},
	} {
		got := ""
		if c := addressClashes(p, []netip.Addr{netip.MustParseAddr(tc.ip)}); len(c) > 0 {
			got = c[0].use.what
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.ip, got, tc.want)
		}
	}
	if c := addressClashes(&Pass{Snap: &model.Snapshot{Objects: &kube.Objects{}}}, []netip.Addr{netip.MustParseAddr("10.112.60.1")}); len(c) != 0 {
		t.Errorf("without Nodes or configuration: %v", c)
	}
}

func apiserverPod(name, image string, args ...string) *kube.Pod {
	return &kube.Pod{
		Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kube-apiserver", Image: image, Command: append([]string{"kube-apiserver"}, args...)}}}},
		Pos: parsers.Pos{File: "cluster/kube-apiserver.yaml", Line: 1},
	}
}

// TestAPIServerServiceRange checks when the API server's flag is the range
// cluster IPs are allocated from, and the reasons given when it is not
// known to be.
func TestAPIServerServiceRange(t *testing.T) {
	const flag = "--service-cluster-ip-range=10.96.0.0/16,fd00:10:96::/112"
	other := &kube.Pod{Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "etcd"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: "registry.k8s.io/etcd:3.5.9-0", Command: []string{"etcd"}}}}}}
	for _, tc := range []struct {
		name     string
		pods     []*kube.Pod
		manifest *manifest.Source
		want     string // the ranges, or the start of the reason
	}{
		{"1.32 with the flag", []*kube.Pod{apiserverPod("a", "registry.k8s.io/kube-apiserver:v1.32.4", flag)}, nil,
			"10.96.0.0/16 fd00:10:96::/112"},
		{"last occurrence wins", []*kube.Pod{apiserverPod("a", "registry.k8s.io/kube-apiserver:v1.24.17", "--service-cluster-ip-range=10.0.0.0/24", "--service-cluster-ip-range=10.96.0.0/12")}, nil,
			"10.96.0.0/12"},
		{"flag as two arguments", []*kube.Pod{apiserverPod("a", "registry.k8s.io/kube-apiserver:v1.24.17", "--service-cluster-ip-range", "10.96.0.0/12")}, nil,
			"10.96.0.0/12"},
		{"image by digest", []*kube.Pod{apiserverPod("a", "registry.k8s.io/kube-apiserver:v1.30.1@sha256:0123", flag)}, nil,
			"10.96.0.0/16 fd00:10:96::/112"},
		{"three agreeing Pods", []*kube.Pod{apiserverPod("a", "k8s.example:5000/kube-apiserver:v1.29.0", flag), apiserverPod("b", "k8s.example:5000/kube-apiserver:v1.29.0", flag), other}, nil,
			"10.96.0.0/16 fd00:10:96::/112"},
		{"1.33", []*kube.Pod{apiserverPod("a", "registry.k8s.io/kube-apiserver:v1.33.0", flag)}, nil,
			"no ServiceCIDR objects in the inputs, and the kube-apiserver Pod kube-system/a is 1.33"},
		{"gate enabled", []*kube.Pod{apiserverPod("a", "registry.k8s.io/kube-apiserver:v1.31.2", flag, "--feature-gates=Foo=false,MultiCIDRServiceAllocator=true")}, nil,
			"no ServiceCIDR objects in the inputs, and the kube-apiserver Pod kube-system/a enables MultiCIDRServiceAllocator"},
		{"gate disabled", []*kube.Pod{apiserverPod("a", "registry.k8s.io/kube-apiserver:v1.31.2", flag, "--feature-gates=MultiCIDRServiceAllocator=false")}, nil,
			"10.96.0.0/16 fd00:10:96::/112"},
		{"no version", []*kube.Pod{apiserverPod("a", "registry.k8s.io/kube-apiserver:latest", flag)}, nil,
			"no ServiceCIDR objects in the inputs, and the version of the kube-apiserver Pod kube-system/a is not known"},
		{"development build", []*kube.Pod{apiserverPod("a", "kind/kube-apiserver:v0.0.0-master_abc", flag)}, nil,
			"no ServiceCIDR objects in the inputs, and the version of the kube-apiserver Pod kube-system/a is not known"},
		{"no tag", []*kube.Pod{apiserverPod("a", "k8s.example:5000/kube-apiserver", flag)}, nil,
			"no ServiceCIDR objects in the inputs, and the version of the kube-apiserver Pod kube-system/a is not known"},
		{"flag unset (no default guessed)", []*kube.Pod{apiserverPod("a", "registry.k8s.io/kube-apiserver:v1.28.3", "--secure-port=6443")}, nil,
			"no ServiceCIDR objects in the inputs, and the kube-apiserver Pod kube-system/a sets no --service-cluster-ip-range"},
		{"Pods disagree", []*kube.Pod{apiserverPod("a", "registry.k8s.io/kube-apiserver:v1.28.3", flag), apiserverPod("b", "registry.k8s.io/kube-apiserver:v1.28.3", "--service-cluster-ip-range=10.96.0.0/12")}, nil,
			"no ServiceCIDR objects in the inputs, and the kube-apiserver Pods disagree"},
		{"a hosted control plane's API server", []*kube.Pod{func() *kube.Pod {
			p := apiserverPod("kube-apiserver-0", "registry.k8s.io/kube-apiserver:v1.30.0", flag)
			p.Namespace = "tenant-a"
			return p
		}()}, nil,
			"no ServiceCIDR objects in the inputs (add the output of kubectl get servicecidrs -o yaml)"},
		{"no Pod", []*kube.Pod{other}, nil,
			"no ServiceCIDR objects in the inputs (add the output of kubectl get servicecidrs -o yaml)"},
		{"no Pod, API server before 1.33", nil, &manifest.Source{Name: "cluster-servicecidrs", Status: manifest.StatusSkipped, Error: "the API server serves no networking.k8s.io/v1 ServiceCIDRs (Kubernetes before 1.33)"},
			"no ServiceCIDR objects in the inputs: the bundle's manifest records that the API server serves none (the API server serves no networking.k8s.io/v1 ServiceCIDRs (Kubernetes before 1.33)); add the kube-apiserver Pod"},
		{"no Pod, none listed", nil, &manifest.Source{Name: "cluster-servicecidrs", Status: manifest.StatusOK},
			"no ServiceCIDR objects in the inputs: the bundle's cluster-servicecidrs source listed none; add the kube-apiserver Pod"},
		{"no Pod, listing failed", nil, &manifest.Source{Name: "cluster-servicecidrs", Status: manifest.StatusFailed, Error: "forbidden"},
			"no ServiceCIDR objects in the inputs: the bundle's cluster-servicecidrs source failed (forbidden); add the output of kubectl get servicecidrs -o yaml"},
		{"no Pod, other sources only", nil, &manifest.Source{Name: "cluster-services", Status: manifest.StatusOK},
			"no ServiceCIDR objects in the inputs (add the output of kubectl get servicecidrs -o yaml)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &model.Snapshot{Objects: &kube.Objects{Pods: tc.pods}}
			if tc.manifest != nil {
				s.Manifest = &manifest.Manifest{Sources: []manifest.Source{*tc.manifest}}
			}
			src, why := apiserverServiceRange(s)
			got := why
			if src != nil {
				got = strings.Join(src.cidrs, " ")
				if src.ev.File != "cluster/kube-apiserver.yaml" || !strings.Contains(src.ev.Text, "--service-cluster-ip-range=") {
					t.Errorf("evidence %+v", src.ev)
				}
			}
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
