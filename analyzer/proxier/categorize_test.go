package proxier

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kpv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
	"github.com/proxyscan/proxyscan/parsers/kube"
)

// TestLegacyEndpointSelection checks the endpoint selection of 1.20-1.23,
// which the proxiers did themselves: pkg/proxy/topology.go FilterEndpoints
// (1.21-1.23) and the endpoint scan of syncProxyRules (iptables) and
// syncEndpoint (IPVS, 1.21-1.23).
//
// No upstream test of that code is transcribed here: the expectations
// follow the code of each release. 1.20: only ready endpoints are kept;
// the service chain gets them all, the KUBE-XLB chain of
// externalTrafficPolicy Local the local ones. 1.21: FilterEndpoints
// leaves the endpoints alone for externalTrafficPolicy Local or without
// EndpointSliceProxying, gives them to the topologyKeys filter with
// ServiceTopology, else keeps only the local ones for
// internalTrafficPolicy Local with ServiceInternalTrafficPolicy (alpha),
// else filters them by zone hints with TopologyAwareHints ("Auto" or
// "auto", a zone label, every endpoint hinted, some for the zone); the
// chains use the ready ones. 1.22: ServiceTopology is gone, the
// ServiceInternalTrafficPolicy gate is on by default, and with
// ProxyTerminatingEndpoints the KUBE-XLB chain falls back to the local
// serving terminating endpoints (internalTrafficPolicy Local does not).
// 1.23: the hints filter ignores endpoints that are not ready. The IPVS
// proxier's syncEndpoint takes the endpoints FilterEndpoints keeps, then
// the ready ones, or with onlyNodeLocalEndpoints the local ready ones,
// else (1.22+, with ProxyTerminatingEndpoints) the local serving
// terminating ones.
//
// hasEndpoints is "a ready endpoint" in 1.20 and 1.21, and "a ready
// endpoint, or for externalTrafficPolicy Local with
// ProxyTerminatingEndpoints a serving terminating one" from 1.22 on.
// That is 1.23's rule and that of the 1.22 patch releases that took its
// fix; v1.22.0 itself took any endpoint FilterEndpoints kept, ready or
// not. proxyscan models minors, not patch releases, and follows the fixed
// rule; the cases where v1.22.0 differs say so.
func TestLegacyEndpointSelection(t *testing.T) {
	for _, c := range legacyCases {
		t.Run(c.name, func(t *testing.T) {
			sp := c.servicePort(t)
			for minor := c.minors[0]; minor <= c.minors[1]; minor++ {
				in := &input{res: releaseResolution(minor, c.gates), cat: model.CategorizeOptions{NodeName: legacyNode, Zone: c.zone}}
				sel := in.selection(model.ModeIPTables, sp, model.IPv4)
				where := fmt.Sprintf("1.%d iptables", minor)
				checkEndpoints(t, where+" service chain", sel.Cluster, c.ready)
				checkEndpoints(t, where+" KUBE-XLB chain", sel.Local, c.local)
				if sel.HasEndpoints != c.hasEndpoints {
					t.Errorf("%s: hasEndpoints = %t, want %t", where, sel.HasEndpoints, c.hasEndpoints)
				}
				if minor < modeRanges[model.ModeIPVS].oldest {
					continue
				}
				ipvs := in.selection(model.ModeIPVS, sp, model.IPv4)
				where = fmt.Sprintf("1.%d ipvs", minor)
				checkEndpoints(t, where+" real servers", ipvs.Cluster, c.ready)
				if c.ipvsLocal != nil {
					checkEndpoints(t, where+" local real servers", ipvs.Local, c.ipvsLocal)
				}
			}
		})
	}
}

const legacyNode = "node-a"

// releaseResolution resolves an empty node of kube-proxy 1.minor with the
// feature gates given.
func releaseResolution(minor int, gates map[string]bool) *resolve.Resolution {
	s := &model.Snapshot{Objects: &kube.Objects{}, Version: model.Version{Version: kpversion.V(minor), Source: "test"}}
	if gates != nil {
		s.Config = &model.Config{KubeProxyConfiguration: &kpv1alpha1.KubeProxyConfiguration{FeatureGates: gates}, Source: "test"}
	}
	return resolve.Resolve(s, resolve.Options{})
}

type legacyCase struct {
	name   string
	minors [2]int
	gates  map[string]bool
	zone   string
	svc    legacySvc
	eps    []legacyEp
	// ready are the endpoints of the service chain (and of the IPVS
	// virtual servers of the Cluster policy), local those of the KUBE-XLB
	// chain; ipvsLocal, when set, those of the IPVS virtual servers of a
	// Local policy (onlyNodeLocalEndpoints).
	ready, local, ipvsLocal []string
	hasEndpoints            bool
}

// legacySvc is a Service: of type NodePort when externalLocal (its
// externalTrafficPolicy Local), else ClusterIP.
type legacySvc struct {
	externalLocal, internalLocal bool
	hintsAnnotation              string
}

type legacyEp struct {
	addr                               string
	zones                              []string
	ready, serving, terminating, local bool
}

func (c *legacyCase) servicePort(t *testing.T) *model.ServicePort {
	t.Helper()
	ann := map[string]string{}
	if c.svc.hintsAnnotation != "" {
		ann[corev1.DeprecatedAnnotationTopologyAwareHints] = c.svc.hintsAnnotation
	}
	itp := corev1.ServiceInternalTrafficPolicyCluster
	if c.svc.internalLocal {
		itp = corev1.ServiceInternalTrafficPolicyLocal
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc", Annotations: ann},
		Spec: corev1.ServiceSpec{
			Type:                  corev1.ServiceTypeClusterIP,
			ClusterIP:             "172.30.0.10",
			Ports:                 []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}},
			InternalTrafficPolicy: &itp,
		},
	}
	if c.svc.externalLocal {
		svc.Spec.Type = corev1.ServiceTypeNodePort
		svc.Spec.Ports[0].NodePort = 30080
		svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	}
	port, proto := int32(80), corev1.ProtocolTCP
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: "svc-1", Labels: map[string]string{discoveryv1.LabelServiceName: "svc"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Port: &port, Protocol: &proto}},
	}
	for _, e := range c.eps {
		ap := netip.MustParseAddrPort(e.addr)
		node := "node-z"
		if e.local {
			node = legacyNode
		}
		ready, serving, terminating := e.ready, e.serving, e.terminating
		se := discoveryv1.Endpoint{
			Addresses:  []string{ap.Addr().String()},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
			NodeName:   &node,
		}
		if len(e.zones) > 0 {
			se.Hints = &discoveryv1.EndpointHints{}
			for _, z := range e.zones {
				se.Hints.ForZones = append(se.Hints.ForZones, discoveryv1.ForZone{Name: z})
			}
		}
		slice.Endpoints = append(slice.Endpoints, se)
	}
	ports := model.BuildServicePorts(&kube.Objects{
		Services:       []*kube.Service{{Service: svc}},
		EndpointSlices: []*kube.EndpointSlice{{EndpointSlice: slice}},
	}, model.BuildOptions{NodeName: legacyNode})
	if len(ports) != 1 || len(ports[0].Endpoints) != len(c.eps) {
		t.Fatalf("built %d ports, want one with %d endpoints", len(ports), len(c.eps))
	}
	return ports[0]
}

// checkEndpoints compares endpoints with the expected "IP:port" list as a
// set (nil and empty alike).
func checkEndpoints(t *testing.T, what string, got []*model.Endpoint, want []string) {
	t.Helper()
	var g []string
	for _, e := range got {
		g = append(g, e.String())
	}
	w := append([]string(nil), want...)
	sort.Strings(g)
	sort.Strings(w)
	if strings.Join(g, " ") != strings.Join(w, " ") {
		t.Errorf("%s = %v, want %v", what, g, w)
	}
}

// The endpoints of the hint cases: one hinted for each of zone-a, zone-b
// and zone-c, and a fourth for zone-a, all ready.
var (
	legacyHinted = []legacyEp{
		{addr: "10.1.2.3:80", zones: []string{"zone-a"}, ready: true},
		{addr: "10.1.2.4:80", zones: []string{"zone-b"}, ready: true},
		{addr: "10.1.2.5:80", zones: []string{"zone-c"}, ready: true},
		{addr: "10.1.2.6:80", zones: []string{"zone-a"}, ready: true},
	}
	legacyHintedAll   = []string{"10.1.2.3:80", "10.1.2.4:80", "10.1.2.5:80", "10.1.2.6:80"}
	legacyHintedZoneA = []string{"10.1.2.3:80", "10.1.2.6:80"}
)

var (
	pteOn  = map[string]bool{"ProxyTerminatingEndpoints": true}
	hintOn = map[string]bool{"TopologyAwareHints": true}
	itpOn  = map[string]bool{"ServiceInternalTrafficPolicy": true}
)

var legacyCases = []legacyCase{
	// Readiness and the Cluster policy.
	{
		name:   "ready endpoints only",
		minors: [2]int{20, 23},
		eps: []legacyEp{
			{addr: "10.0.0.1:80", ready: true, serving: true},
			{addr: "10.0.0.2:80"},
		},
		ready:        []string{"10.0.0.1:80"},
		hasEndpoints: true,
	},
	{
		// v1.22.0: hasEndpoints true (an endpoint, though not ready).
		name:   "no ready endpoint",
		minors: [2]int{20, 23},
		eps: []legacyEp{
			{addr: "10.0.0.1:80"},
			{addr: "10.0.0.2:80"},
		},
	},
	{
		name:   "serving terminating endpoints, Cluster policy",
		minors: [2]int{20, 21},
		eps: []legacyEp{
			{addr: "10.0.0.1:80", serving: true, terminating: true, local: true},
			{addr: "10.0.0.2:80", serving: true, terminating: true},
		},
	},
	{
		// The fallback of 1.22-1.23 is for externalTrafficPolicy Local
		// only. v1.22.0: hasEndpoints true.
		name:   "serving terminating endpoints, Cluster policy, ProxyTerminatingEndpoints",
		minors: [2]int{22, 23},
		gates:  pteOn,
		eps: []legacyEp{
			{addr: "10.0.0.1:80", serving: true, terminating: true, local: true},
			{addr: "10.0.0.2:80", serving: true, terminating: true},
		},
	},

	// externalTrafficPolicy Local (a NodePort Service).
	{
		name:   "externalTrafficPolicy Local, local ready endpoint",
		minors: [2]int{20, 23},
		svc:    legacySvc{externalLocal: true},
		eps: []legacyEp{
			{addr: "10.0.0.1:80", ready: true, serving: true, local: true},
			{addr: "10.0.0.2:80", ready: true, serving: true},
			{addr: "10.0.0.3:80", local: true},
		},
		ready:        []string{"10.0.0.1:80", "10.0.0.2:80"},
		local:        []string{"10.0.0.1:80"},
		ipvsLocal:    []string{"10.0.0.1:80"},
		hasEndpoints: true,
	},
	{
		name:   "externalTrafficPolicy Local, no local endpoint",
		minors: [2]int{20, 23},
		svc:    legacySvc{externalLocal: true},
		eps: []legacyEp{
			{addr: "10.0.0.2:80", ready: true, serving: true},
		},
		ready:        []string{"10.0.0.2:80"},
		local:        []string{},
		ipvsLocal:    []string{},
		hasEndpoints: true,
	},
	{
		name:   "externalTrafficPolicy Local, local serving terminating endpoint, no gate",
		minors: [2]int{20, 23},
		svc:    legacySvc{externalLocal: true},
		eps: []legacyEp{
			{addr: "10.0.0.1:80", serving: true, terminating: true, local: true},
			{addr: "10.0.0.2:80", ready: true, serving: true},
		},
		ready:        []string{"10.0.0.2:80"},
		local:        []string{},
		ipvsLocal:    []string{},
		hasEndpoints: true,
	},
	{
		name:   "externalTrafficPolicy Local, local serving terminating endpoint, ProxyTerminatingEndpoints",
		minors: [2]int{22, 23},
		gates:  pteOn,
		svc:    legacySvc{externalLocal: true},
		eps: []legacyEp{
			{addr: "10.0.0.1:80", serving: true, terminating: true, local: true},
			{addr: "10.0.0.2:80", ready: true, serving: true},
		},
		ready:        []string{"10.0.0.2:80"},
		local:        []string{"10.0.0.1:80"},
		ipvsLocal:    []string{"10.0.0.1:80"},
		hasEndpoints: true,
	},
	{
		name:   "externalTrafficPolicy Local, ready local endpoint before terminating ones, ProxyTerminatingEndpoints",
		minors: [2]int{22, 23},
		gates:  pteOn,
		svc:    legacySvc{externalLocal: true},
		eps: []legacyEp{
			{addr: "10.0.0.1:80", ready: true, serving: true, local: true},
			{addr: "10.0.0.2:80", serving: true, terminating: true, local: true},
		},
		ready:        []string{"10.0.0.1:80"},
		local:        []string{"10.0.0.1:80"},
		ipvsLocal:    []string{"10.0.0.1:80"},
		hasEndpoints: true,
	},
	{
		name:   "externalTrafficPolicy Local, only serving terminating endpoints, no gate",
		minors: [2]int{20, 23},
		svc:    legacySvc{externalLocal: true},
		eps: []legacyEp{
			{addr: "10.0.0.1:80", serving: true, terminating: true, local: true},
			{addr: "10.0.0.2:80", serving: true, terminating: true},
		},
		local:     []string{},
		ipvsLocal: []string{},
	},
	{
		name:   "externalTrafficPolicy Local, only serving terminating endpoints, ProxyTerminatingEndpoints",
		minors: [2]int{22, 23},
		gates:  pteOn,
		svc:    legacySvc{externalLocal: true},
		eps: []legacyEp{
			{addr: "10.0.0.1:80", serving: true, terminating: true, local: true},
			{addr: "10.0.0.2:80", serving: true, terminating: true},
		},
		local:        []string{"10.0.0.1:80"},
		ipvsLocal:    []string{"10.0.0.1:80"},
		hasEndpoints: true,
	},
	{
		// A serving terminating endpoint anywhere counts.
		name:   "externalTrafficPolicy Local, only remote serving terminating endpoints, ProxyTerminatingEndpoints",
		minors: [2]int{22, 23},
		gates:  pteOn,
		svc:    legacySvc{externalLocal: true},
		eps: []legacyEp{
			{addr: "10.0.0.2:80", serving: true, terminating: true},
		},
		local:        []string{},
		ipvsLocal:    []string{},
		hasEndpoints: true,
	},
	{
		// Not serving: no fallback. v1.22.0: hasEndpoints true.
		name:   "externalTrafficPolicy Local, terminating endpoint not serving, ProxyTerminatingEndpoints",
		minors: [2]int{22, 23},
		gates:  pteOn,
		svc:    legacySvc{externalLocal: true},
		eps: []legacyEp{
			{addr: "10.0.0.1:80", terminating: true, local: true},
		},
		local:     []string{},
		ipvsLocal: []string{},
	},

	// internalTrafficPolicy Local.
	{
		name:   "internalTrafficPolicy Local, gate off by default",
		minors: [2]int{20, 21},
		svc:    legacySvc{internalLocal: true},
		eps: []legacyEp{
			{addr: "10.0.0.1:80", ready: true, serving: true, local: true},
			{addr: "10.0.0.2:80", ready: true, serving: true},
		},
		ready:        []string{"10.0.0.1:80", "10.0.0.2:80"},
		hasEndpoints: true,
	},
	{
		name:   "internalTrafficPolicy Local, ServiceInternalTrafficPolicy",
		minors: [2]int{21, 21},
		gates:  itpOn,
		svc:    legacySvc{internalLocal: true},
		eps: []legacyEp{
			{addr: "10.0.0.1:80", ready: true, serving: true, local: true},
			{addr: "10.0.0.2:80", ready: true, serving: true},
		},
		ready:        []string{"10.0.0.1:80"},
		ipvsLocal:    []string{"10.0.0.1:80"},
		hasEndpoints: true,
	},
	{
		name:   "internalTrafficPolicy Local, some endpoints local",
		minors: [2]int{22, 23},
		svc:    legacySvc{internalLocal: true},
		eps: []legacyEp{
			{addr: "10.0.0.1:80", ready: true, serving: true, local: true},
			{addr: "10.0.0.2:80", ready: true, serving: true},
		},
		ready:        []string{"10.0.0.1:80"},
		ipvsLocal:    []string{"10.0.0.1:80"},
		hasEndpoints: true,
	},
	{
		name:   "internalTrafficPolicy Local, ServiceInternalTrafficPolicy off",
		minors: [2]int{22, 23},
		gates:  map[string]bool{"ServiceInternalTrafficPolicy": false},
		svc:    legacySvc{internalLocal: true},
		eps: []legacyEp{
			{addr: "10.0.0.1:80", ready: true, serving: true, local: true},
			{addr: "10.0.0.2:80", ready: true, serving: true},
		},
		ready:        []string{"10.0.0.1:80", "10.0.0.2:80"},
		hasEndpoints: true,
	},
	{
		name:   "internalTrafficPolicy Local, all endpoints remote",
		minors: [2]int{22, 23},
		svc:    legacySvc{internalLocal: true},
		eps: []legacyEp{
			{addr: "10.0.0.2:80", ready: true, serving: true},
		},
		ipvsLocal: []string{},
	},
	{
		// v1.22.0: hasEndpoints true (FilterEndpoints keeps the local
		// endpoint, ready or not).
		name:   "internalTrafficPolicy Local, local endpoint not ready",
		minors: [2]int{22, 23},
		svc:    legacySvc{internalLocal: true},
		eps: []legacyEp{
			{addr: "10.0.0.1:80", local: true},
			{addr: "10.0.0.2:80", ready: true, serving: true},
		},
		ipvsLocal: []string{},
	},
	{
		// No terminating fallback for internalTrafficPolicy in iptables
		// mode; IPVS's syncEndpoint applies its fallback to any Local
		// policy (onlyNodeLocalEndpoints), which the IPVS selection
		// follows. v1.22.0: hasEndpoints true.
		name:   "internalTrafficPolicy Local, local serving terminating endpoint, ProxyTerminatingEndpoints",
		minors: [2]int{22, 23},
		gates:  pteOn,
		svc:    legacySvc{internalLocal: true},
		eps: []legacyEp{
			{addr: "10.0.0.1:80", serving: true, terminating: true, local: true},
			{addr: "10.0.0.2:80", ready: true, serving: true},
		},
		ipvsLocal: []string{"10.0.0.1:80"},
	},
	{
		// FilterEndpoints leaves the endpoints of externalTrafficPolicy
		// Local alone.
		name:   "internalTrafficPolicy Local and externalTrafficPolicy Local",
		minors: [2]int{22, 23},
		svc:    legacySvc{internalLocal: true, externalLocal: true},
		eps: []legacyEp{
			{addr: "10.0.0.1:80", ready: true, serving: true, local: true},
			{addr: "10.0.0.2:80", ready: true, serving: true},
		},
		ready:        []string{"10.0.0.1:80", "10.0.0.2:80"},
		local:        []string{"10.0.0.1:80"},
		ipvsLocal:    []string{"10.0.0.1:80"},
		hasEndpoints: true,
	},

	// Zone hints (TopologyAwareHints: alpha 1.21-1.22, beta but off by
	// default in 1.23). v1.21.0's release notes list "Auto" as a valid
	// annotation value (#100728) as well as "auto".
	{
		name:         "hints, gate off by default",
		minors:       [2]int{20, 23},
		zone:         "zone-a",
		svc:          legacySvc{hintsAnnotation: "auto"},
		eps:          legacyHinted,
		ready:        legacyHintedAll,
		hasEndpoints: true,
	},
	{
		name:         "hints, annotation auto",
		minors:       [2]int{21, 23},
		gates:        hintOn,
		zone:         "zone-a",
		svc:          legacySvc{hintsAnnotation: "auto"},
		eps:          legacyHinted,
		ready:        legacyHintedZoneA,
		hasEndpoints: true,
	},
	{
		name:         "hints, annotation Auto",
		minors:       [2]int{21, 23},
		gates:        hintOn,
		zone:         "zone-a",
		svc:          legacySvc{hintsAnnotation: "Auto"},
		eps:          legacyHinted,
		ready:        legacyHintedZoneA,
		hasEndpoints: true,
	},
	{
		name:         "hints, annotation aUto",
		minors:       [2]int{21, 23},
		gates:        hintOn,
		zone:         "zone-a",
		svc:          legacySvc{hintsAnnotation: "aUto"},
		eps:          legacyHinted,
		ready:        legacyHintedAll,
		hasEndpoints: true,
	},
	{
		name:         "hints, no annotation",
		minors:       [2]int{21, 23},
		gates:        hintOn,
		zone:         "zone-a",
		eps:          legacyHinted,
		ready:        legacyHintedAll,
		hasEndpoints: true,
	},
	{
		name:         "hints, no zone label",
		minors:       [2]int{21, 23},
		gates:        hintOn,
		svc:          legacySvc{hintsAnnotation: "auto"},
		eps:          legacyHinted,
		ready:        legacyHintedAll,
		hasEndpoints: true,
	},
	{
		name:   "hints, ready endpoint without a hint",
		minors: [2]int{21, 23},
		gates:  hintOn,
		zone:   "zone-a",
		svc:    legacySvc{hintsAnnotation: "auto"},
		eps: []legacyEp{
			{addr: "10.1.2.3:80", zones: []string{"zone-a"}, ready: true},
			{addr: "10.1.2.4:80", zones: []string{"zone-b"}, ready: true},
			{addr: "10.1.2.5:80", ready: true},
		},
		ready:        []string{"10.1.2.3:80", "10.1.2.4:80", "10.1.2.5:80"},
		hasEndpoints: true,
	},
	{
		name:         "hints, no endpoint for the zone",
		minors:       [2]int{21, 23},
		gates:        hintOn,
		zone:         "zone-d",
		svc:          legacySvc{hintsAnnotation: "auto"},
		eps:          legacyHinted,
		ready:        legacyHintedAll,
		hasEndpoints: true,
	},
	{
		// 1.21-1.22: every endpoint, ready or not, must have a hint.
		name:   "hints, unready endpoint without a hint, 1.21-1.22",
		minors: [2]int{21, 22},
		gates:  hintOn,
		zone:   "zone-a",
		svc:    legacySvc{hintsAnnotation: "auto"},
		eps: []legacyEp{
			{addr: "10.1.2.3:80", zones: []string{"zone-a"}, ready: true},
			{addr: "10.1.2.4:80", zones: []string{"zone-b"}, ready: true},
			{addr: "10.1.2.6:80"},
		},
		ready:        []string{"10.1.2.3:80", "10.1.2.4:80"},
		hasEndpoints: true,
	},
	{
		// 1.23 ignores the endpoints that are not ready (#106507).
		name:   "hints, unready endpoint without a hint, 1.23",
		minors: [2]int{23, 23},
		gates:  hintOn,
		zone:   "zone-a",
		svc:    legacySvc{hintsAnnotation: "auto"},
		eps: []legacyEp{
			{addr: "10.1.2.3:80", zones: []string{"zone-a"}, ready: true},
			{addr: "10.1.2.4:80", zones: []string{"zone-b"}, ready: true},
			{addr: "10.1.2.6:80"},
		},
		ready:        []string{"10.1.2.3:80"},
		hasEndpoints: true,
	},
	{
		// 1.21-1.22 keep the unready endpoints of the zone, and the
		// chains then have no ready endpoint. v1.22.0: hasEndpoints true.
		name:   "hints, only unready endpoints in the zone, 1.21-1.22",
		minors: [2]int{21, 22},
		gates:  hintOn,
		zone:   "zone-a",
		svc:    legacySvc{hintsAnnotation: "auto"},
		eps: []legacyEp{
			{addr: "10.1.2.3:80", zones: []string{"zone-a"}},
			{addr: "10.1.2.4:80", zones: []string{"zone-b"}, ready: true},
			{addr: "10.1.2.5:80", zones: []string{"zone-c"}, ready: true},
			{addr: "10.1.2.6:80", zones: []string{"zone-a"}},
		},
	},
	{
		name:   "hints, only unready endpoints in the zone, 1.23",
		minors: [2]int{23, 23},
		gates:  hintOn,
		zone:   "zone-a",
		svc:    legacySvc{hintsAnnotation: "auto"},
		eps: []legacyEp{
			{addr: "10.1.2.3:80", zones: []string{"zone-a"}},
			{addr: "10.1.2.4:80", zones: []string{"zone-b"}, ready: true},
			{addr: "10.1.2.5:80", zones: []string{"zone-c"}, ready: true},
			{addr: "10.1.2.6:80", zones: []string{"zone-a"}},
		},
		ready:        []string{"10.1.2.4:80", "10.1.2.5:80"},
		hasEndpoints: true,
	},
	{
		name:   "hints, externalTrafficPolicy Local",
		minors: [2]int{21, 23},
		gates:  hintOn,
		zone:   "zone-a",
		svc:    legacySvc{externalLocal: true, hintsAnnotation: "auto"},
		eps: []legacyEp{
			{addr: "10.1.2.3:80", zones: []string{"zone-a"}, ready: true, local: true},
			{addr: "10.1.2.4:80", zones: []string{"zone-b"}, ready: true, local: true},
			{addr: "10.1.2.5:80", zones: []string{"zone-c"}, ready: true},
			{addr: "10.1.2.6:80", zones: []string{"zone-a"}, ready: true},
		},
		ready:        legacyHintedAll,
		local:        []string{"10.1.2.3:80", "10.1.2.4:80"},
		ipvsLocal:    []string{"10.1.2.3:80", "10.1.2.4:80"},
		hasEndpoints: true,
	},
	{
		// internalTrafficPolicy Local comes before the hints.
		name:   "hints, internalTrafficPolicy Local",
		minors: [2]int{22, 23},
		gates:  hintOn,
		zone:   "zone-a",
		svc:    legacySvc{internalLocal: true, hintsAnnotation: "auto"},
		eps: []legacyEp{
			{addr: "10.1.2.3:80", zones: []string{"zone-a"}, ready: true},
			{addr: "10.1.2.4:80", zones: []string{"zone-b"}, ready: true, local: true},
			{addr: "10.1.2.5:80", zones: []string{"zone-c"}, ready: true},
			{addr: "10.1.2.6:80", zones: []string{"zone-a"}, ready: true},
		},
		ready:        []string{"10.1.2.4:80"},
		ipvsLocal:    []string{"10.1.2.4:80"},
		hasEndpoints: true,
	},

	// The gates of 1.21 that come first in FilterEndpoints. The
	// topologyKeys filter of ServiceTopology keeps every endpoint when the
	// Service has no topologyKeys, which the API no longer has (proxyscan
	// cannot read them).
	{
		name:   "ServiceTopology before internalTrafficPolicy",
		minors: [2]int{21, 21},
		gates:  map[string]bool{"ServiceTopology": true, "ServiceInternalTrafficPolicy": true},
		svc:    legacySvc{internalLocal: true},
		eps: []legacyEp{
			{addr: "10.0.0.1:80", ready: true, serving: true, local: true},
			{addr: "10.0.0.2:80", ready: true, serving: true},
		},
		ready:        []string{"10.0.0.1:80", "10.0.0.2:80"},
		ipvsLocal:    []string{"10.0.0.1:80"},
		hasEndpoints: true,
	},
	{
		name:         "ServiceTopology before hints",
		minors:       [2]int{21, 21},
		gates:        map[string]bool{"ServiceTopology": true, "TopologyAwareHints": true},
		zone:         "zone-a",
		svc:          legacySvc{hintsAnnotation: "auto"},
		eps:          legacyHinted,
		ready:        legacyHintedAll,
		hasEndpoints: true,
	},
	{
		name:   "EndpointSliceProxying off, no filtering",
		minors: [2]int{21, 21},
		gates:  map[string]bool{"EndpointSliceProxying": false, "ServiceInternalTrafficPolicy": true},
		svc:    legacySvc{internalLocal: true},
		eps: []legacyEp{
			{addr: "10.0.0.1:80", ready: true, serving: true, local: true},
			{addr: "10.0.0.2:80", ready: true, serving: true},
		},
		ready:        []string{"10.0.0.1:80", "10.0.0.2:80"},
		ipvsLocal:    []string{"10.0.0.1:80"},
		hasEndpoints: true,
	},
}
