package proxier_test

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
	"github.com/proxyscan/proxyscan/analyzer/proxier"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
	"github.com/proxyscan/proxyscan/parsers/kube"
)

// TestEndpointSelection checks proxier.SelectEndpoints (in iptables mode,
// which selects as nftables mode does), for a node of each minor from 1.24
// (the first with pkg/proxy/topology.go CategorizeEndpoints) to 1.37 and
// each setting of the feature gates that change the selection, against upstream's own
// TestCategorizeEndpoints cases (pkg/proxy/topology_test.go of the
// releases named by each table) and against cases of the same form for
// what those tables do not cover.
//
// Each case holds for a range of minors; every gate setting of every minor
// of the range must match exactly one of its expectations. The first
// expectation is upstream's own (for the release its table names, with
// the gates upstream's test sets); the others say what the case gives in
// the other minors and gate settings, and why.
//
// The results are compared the way upstream's test compares them: an
// expected nil list must be nil, any other is compared as a set of
// "IP:port"; the expected reachable endpoints are the cluster ones when
// no local list is expected, the local ones when no cluster list is, else
// the case's own; and a usable endpoint exists when one is reachable or
// the case says that only remote ones are (onlyRemote).
func TestEndpointSelection(t *testing.T) {
	tables := []struct {
		source string
		cases  []selectionCase
	}{
		{"v1.24.2", casesV124},
		{"v1.28.0", casesV128},
		{"1.33-dev", casesV133},
		{"annotations", casesAnnotations},
		{"node-hints", casesNodeHints},
	}
	n := 0
	for _, tbl := range tables {
		for _, c := range tbl.cases {
			t.Run(tbl.source+"/"+c.name, func(t *testing.T) {
				sp := c.servicePort(t)
				for minor := c.minors[0]; minor <= c.minors[1]; minor++ {
					for _, set := range gateSettings(minor) {
						n++
						where := fmt.Sprintf("1.%d, %s", minor, describeGates(set))
						w, err := c.expectation(minor, effectiveGates(minor, set))
						if err != nil {
							t.Errorf("%s: %v", where, err)
							continue
						}
						sel := proxier.SelectEndpoints(nodeResolution(minor, set, c.zone), model.ModeIPTables, sp, model.IPv4)
						got := model.Category{Cluster: sel.Cluster, Local: sel.Local, AllReachable: sel.InUse, HasAny: sel.HasEndpoints, Topology: sel.Topology}
						for _, e := range w.check(got) {
							t.Errorf("%s: %s", where, e)
						}
					}
				}
			})
		}
	}
	t.Logf("%d selections checked", n)
}

// nodeResolution resolves the node the endpoints are selected for, of
// kube-proxy 1.minor with the gates set, in zone.
func nodeResolution(minor int, set map[string]bool, zone string) *resolve.Resolution {
	s := &model.Snapshot{Objects: &kube.Objects{}, Version: model.Version{Version: kpversion.V(minor), Source: "test"},
		Node: model.Node{Name: nodeName, Zone: zone}}
	if len(set) > 0 {
		s.Config = &model.Config{KubeProxyConfiguration: &kpv1alpha1.KubeProxyConfiguration{FeatureGates: set}, Source: "test"}
	}
	return resolve.Resolve(s, resolve.Options{})
}

// nodeName is the node the endpoints are selected for; local endpoints
// run on it.
const nodeName = "node-a"

// A selectionCase is one service port and its endpoints, as a
// TestCategorizeEndpoints case of upstream describes them.
type selectionCase struct {
	name string
	// minors is the range of minors the case is checked for.
	minors [2]int
	// zone is the node's topology.kubernetes.io/zone label ("" for none:
	// upstream's "empty node labels" and "empty zone label" alike).
	zone string
	svc  svcSpec
	eps  []ep
	want []expect
}

// svcSpec is upstream's test serviceInfo: the traffic policies as
// kube-proxy derives them, a node port that makes the Service externally
// accessible, and the topology annotation (hintsAnnotation is the value
// of service.kubernetes.io/topology-aware-hints, annotations any others).
type svcSpec struct {
	internalLocal, externalLocal bool
	nodePort                     int32
	hintsAnnotation              string
	annotations                  map[string]string
}

// ep is upstream's test endpoint: its "IP:port", zone and node hints,
// conditions, and whether it is on the node. Unset conditions are false,
// as in upstream's cases.
type ep struct {
	addr                               string
	zones, nodes                       []string
	ready, serving, terminating, local bool
}

// An expect is what Categorize returns when holds says so (nil: always).
type expect struct {
	holds               cond
	cluster, local, all []string
	onlyRemote          bool
}

// gates are the effective values of the gates the selection reads, in one
// minor with one setting (a gate the minor no longer reads acts as on, one
// it does not know yet as off).
type gates struct{ pte, hints, std, psd bool }

// A cond says whether an expectation holds in a minor with gates.
type cond func(minor int, g gates) bool

var (
	pte   cond = func(_ int, g gates) bool { return g.pte }
	hints cond = func(_ int, g gates) bool { return g.hints }
	std   cond = func(_ int, g gates) bool { return g.std }
	psd   cond = func(_ int, g gates) bool { return g.psd }
)

func from(minor int) cond { return func(m int, _ gates) bool { return m >= minor } }

func not(c cond) cond { return func(m int, g gates) bool { return !c(m, g) } }

func and(cs ...cond) cond {
	return func(m int, g gates) bool {
		for _, c := range cs {
			if !c(m, g) {
				return false
			}
		}
		return true
	}
}

func set(s ...string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func z(s ...string) []string { return s }

// gateFacts is upstream's history of a gate of the selection (the
// feature-gate reference of kubernetes.io and the KEPs' kep.yaml), kept
// apart from parsers/kpconfig's table so that the test checks that too.
type gateFacts struct {
	name string
	// since is the first minor with the gate, defaultOn the first where it
	// is on by default, always the first whose selection no longer reads it
	// (it is locked on, or kube-proxy's code has no check any more), and
	// lastSet the last minor a configuration is tested with it.
	since, defaultOn, always, lastSet int
}

var selectionGates = []gateFacts{
	// Alpha 1.22, beta 1.26, GA 1.28 (topology.go of 1.28 has no check),
	// removed 1.30.
	{"ProxyTerminatingEndpoints", 22, 26, 28, 29},
	// Alpha 1.21, beta 1.23 (off), on by default 1.24, GA 1.33 (kube-proxy
	// reads no gate from 1.33). When it was removed is not established:
	// it is set up to 1.33 only.
	{"TopologyAwareHints", 21, 24, 33, 33},
	// Alpha 1.30, beta 1.31, GA 1.33; set up to 1.33 only, likewise.
	{"ServiceTrafficDistribution", 30, 31, 33, 33},
	// Alpha 1.33, beta 1.34, GA 1.35.
	{"PreferSameTrafficDistribution", 33, 34, 35, 37},
}

// gateSettings returns every setting of the selection's gates a minor
// accepts: each gate it knows unset, on, or off (only unset or on once it
// is locked on).
func gateSettings(minor int) []map[string]bool {
	out := []map[string]bool{{}}
	for _, g := range selectionGates {
		if minor < g.since || minor > g.lastSet {
			continue
		}
		vals := []bool{true, false}
		if minor >= g.always {
			vals = vals[:1]
		}
		var next []map[string]bool
		for _, s := range out {
			next = append(next, s)
			for _, v := range vals {
				c := map[string]bool{g.name: v}
				for k, x := range s {
					c[k] = x
				}
				next = append(next, c)
			}
		}
		out = next
	}
	return out
}

func effectiveGates(minor int, set map[string]bool) gates {
	on := func(name string) bool {
		for _, g := range selectionGates {
			if g.name != name {
				continue
			}
			if minor < g.since {
				return false
			}
			if minor >= g.always {
				return true
			}
			if v, ok := set[name]; ok {
				return v
			}
			return minor >= g.defaultOn
		}
		panic(name)
	}
	return gates{
		pte:   on("ProxyTerminatingEndpoints"),
		hints: on("TopologyAwareHints"),
		std:   on("ServiceTrafficDistribution"),
		psd:   on("PreferSameTrafficDistribution"),
	}
}

func describeGates(set map[string]bool) string {
	if len(set) == 0 {
		return "default gates"
	}
	var parts []string
	for k, v := range set {
		parts = append(parts, fmt.Sprintf("%s=%t", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// expectation returns the one expectation that holds.
func (c *selectionCase) expectation(minor int, g gates) (expect, error) {
	var found []expect
	for _, w := range c.want {
		if w.holds == nil || w.holds(minor, g) {
			found = append(found, w)
		}
	}
	if len(found) != 1 {
		return expect{}, fmt.Errorf("%d expectations hold (gates %+v), want 1", len(found), g)
	}
	return found[0], nil
}

// servicePort builds the case's Service and EndpointSlice and derives the
// service port from them as proxyscan does for a snapshot.
func (c *selectionCase) servicePort(t *testing.T) *model.ServicePort {
	t.Helper()
	ann := map[string]string{}
	if c.svc.hintsAnnotation != "" {
		ann[corev1.DeprecatedAnnotationTopologyAwareHints] = c.svc.hintsAnnotation
	}
	for k, v := range c.svc.annotations {
		ann[k] = v
	}
	etp, itp := corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceInternalTrafficPolicyCluster
	if c.svc.externalLocal {
		etp = corev1.ServiceExternalTrafficPolicyLocal
	}
	if c.svc.internalLocal {
		itp = corev1.ServiceInternalTrafficPolicyLocal
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc", Annotations: ann},
		Spec: corev1.ServiceSpec{
			Type:                  corev1.ServiceTypeClusterIP,
			ClusterIP:             "172.30.0.10",
			ClusterIPs:            []string{"172.30.0.10"},
			Ports:                 []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}},
			ExternalTrafficPolicy: etp,
			InternalTrafficPolicy: &itp,
		},
	}
	if c.svc.nodePort != 0 {
		svc.Spec.Type = corev1.ServiceTypeNodePort
		svc.Spec.Ports[0].NodePort = c.svc.nodePort
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: "svc-1", Labels: map[string]string{discoveryv1.LabelServiceName: "svc"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Port: ptr(int32(80)), Protocol: ptr(corev1.ProtocolTCP)}},
	}
	for _, e := range c.eps {
		ap := netip.MustParseAddrPort(e.addr)
		if ap.Port() != 80 {
			t.Fatalf("endpoint %s: the cases use port 80", e.addr)
		}
		node := "node-z"
		if e.local {
			node = nodeName
		}
		se := discoveryv1.Endpoint{
			Addresses:  []string{ap.Addr().String()},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr(e.ready), Serving: ptr(e.serving), Terminating: ptr(e.terminating)},
			NodeName:   ptr(node),
		}
		if len(e.zones) > 0 || len(e.nodes) > 0 {
			se.Hints = &discoveryv1.EndpointHints{}
			for _, n := range e.zones {
				se.Hints.ForZones = append(se.Hints.ForZones, discoveryv1.ForZone{Name: n})
			}
			for _, n := range e.nodes {
				se.Hints.ForNodes = append(se.Hints.ForNodes, discoveryv1.ForNode{Name: n})
			}
		}
		slice.Endpoints = append(slice.Endpoints, se)
	}
	objs := &kube.Objects{
		Services:       []*kube.Service{{Service: svc}},
		EndpointSlices: []*kube.EndpointSlice{{EndpointSlice: slice}},
	}
	ports := model.BuildServicePorts(objs, model.BuildOptions{NodeName: nodeName})
	if len(ports) != 1 || ports[0].Skip != "" || len(ports[0].Endpoints) != len(c.eps) {
		t.Fatalf("built %d ports (%+v), want one with %d endpoints", len(ports), ports, len(c.eps))
	}
	sp := ports[0]
	// Upstream's serviceInfo sets the policies as kube-proxy derives them;
	// "externalTrafficPolicy ignored if not externally accessible" sets
	// externalPolicyLocal without a node port, which a Service of type
	// ClusterIP does not give, so they are set as the case says.
	sp.InternalPolicyLocal, sp.ExternalPolicyLocal = c.svc.internalLocal, c.svc.externalLocal
	return sp
}

func ptr[T any](v T) *T { return &v }

// check compares a selection with the expectation as upstream's test does.
func (w expect) check(c model.Category) []string {
	var errs []string
	checkList := func(what string, want []string, got []*model.Endpoint) {
		if want == nil {
			if got != nil {
				errs = append(errs, fmt.Sprintf("%s = %v, want nil", what, names(got)))
			}
			return
		}
		if !sameSet(want, names(got)) {
			errs = append(errs, fmt.Sprintf("%s = %v, want %v", what, names(got), want))
		}
	}
	checkList("clusterEndpoints", w.cluster, c.Cluster)
	checkList("localEndpoints", w.local, c.Local)
	all := w.all
	switch {
	case w.cluster != nil && w.local == nil:
		all = w.cluster
	case w.local != nil && w.cluster == nil:
		all = w.local
	}
	if !sameSet(all, names(c.AllReachable)) {
		errs = append(errs, fmt.Sprintf("allReachable = %v, want %v", names(c.AllReachable), all))
	}
	if hasAny := len(all) > 0 || w.onlyRemote; c.HasAny != hasAny {
		errs = append(errs, fmt.Sprintf("hasAny = %t, want %t", c.HasAny, hasAny))
	}
	return errs
}

func names(eps []*model.Endpoint) []string {
	var out []string
	for _, e := range eps {
		out = append(out, e.String())
	}
	return out
}

func sameSet(want, got []string) bool {
	if len(want) != len(got) {
		return false
	}
	w := map[string]bool{}
	for _, s := range want {
		w[s] = true
	}
	for _, s := range got {
		if !w[s] {
			return false
		}
		delete(w, s)
	}
	return len(w) == 0
}

// The endpoints most hint cases share: one hinted for each of zone-a,
// zone-b and zone-c, and a fourth for zone-a, all ready.
var (
	hintedABCA = []ep{
		{addr: "10.1.2.3:80", zones: z("zone-a"), ready: true},
		{addr: "10.1.2.4:80", zones: z("zone-b"), ready: true},
		{addr: "10.1.2.5:80", zones: z("zone-c"), ready: true},
		{addr: "10.1.2.6:80", zones: z("zone-a"), ready: true},
	}
	allABCA   = set("10.1.2.3:80", "10.1.2.4:80", "10.1.2.5:80", "10.1.2.6:80")
	zoneAABCA = set("10.1.2.3:80", "10.1.2.6:80")
)

// Conditions under which zone hints are used, whatever upstream's case
// assumed of the gates and the annotation.
var (
	// hintsOff: the TopologyAwareHints gate is off; kube-proxy 1.21-1.32
	// then records no zone hints (endpointslicecache.go), so there is no
	// topology (1.26-1.32 also check the gate in canUseTopology).
	hintsOff = not(hints)
	// annotationIgnored: ServiceTrafficDistribution (on by default from
	// 1.31, GA 1.33) makes canUseTopology skip the annotation, so hints are
	// used whatever it says (1.30+, with the hints recorded).
	annotationIgnored = and(hints, std)
	// anyValue: from 1.27 any annotation value but "", "disabled" and
	// "Disabled" enables hints ("aUto" too), and topology-mode stands in
	// for a missing topology-aware-hints.
	anyValue = and(hints, from(27))
)

// casesV124 are pkg/proxy/topology_test.go TestCategorizeEndpoints of
// v1.24.2 (its 36 cases; CategorizeEndpoints of 1.25 is the same code).
// Upstream's test sets TopologyAwareHints and ProxyTerminatingEndpoints as
// each case says (unset: off). They are checked for 1.24 to 1.37: the
// later expectations come from topology.go of 1.26 (canUseTopology checks
// TopologyAwareHints), 1.27 (any annotation value), 1.28 (no
// ProxyTerminatingEndpoints checks) and 1.30 (ServiceTrafficDistribution).
var casesV124 = []selectionCase{
	{
		name:   "hints enabled, hints annotation == auto",
		minors: [2]int{24, 37},
		zone:   "zone-a",
		svc:    svcSpec{hintsAnnotation: "auto"},
		eps:    hintedABCA,
		want: []expect{
			{holds: hints, cluster: zoneAABCA},
			{holds: hintsOff, cluster: allABCA},
		},
	},
	{
		name:   "hints, hints annotation == disabled, hints ignored",
		minors: [2]int{24, 37},
		zone:   "zone-a",
		svc:    svcSpec{hintsAnnotation: "disabled"},
		eps:    hintedABCA,
		want: []expect{
			{holds: not(annotationIgnored), cluster: allABCA},
			{holds: annotationIgnored, cluster: zoneAABCA},
		},
	},
	{
		name:   "hints, hints annotation == aUto (wrong capitalization), hints ignored",
		minors: [2]int{24, 37},
		zone:   "zone-a",
		svc:    svcSpec{hintsAnnotation: "aUto"},
		eps:    hintedABCA,
		want: []expect{
			{holds: not(anyValue), cluster: allABCA},
			// v1.28.0's "hints no longer ignored" (1.27+).
			{holds: anyValue, cluster: zoneAABCA},
		},
	},
	{
		name:   "hints, hints annotation empty, hints ignored",
		minors: [2]int{24, 37},
		zone:   "zone-a",
		svc:    svcSpec{},
		eps:    hintedABCA,
		want: []expect{
			{holds: not(annotationIgnored), cluster: allABCA},
			{holds: annotationIgnored, cluster: zoneAABCA},
		},
	},
	{
		name:   "externalTrafficPolicy: Local, topology ignored for Local endpoints",
		minors: [2]int{24, 37},
		zone:   "zone-a",
		svc:    svcSpec{externalLocal: true, nodePort: 8080, hintsAnnotation: "auto"},
		eps: []ep{
			{addr: "10.1.2.3:80", zones: z("zone-a"), ready: true, local: true},
			{addr: "10.1.2.4:80", zones: z("zone-b"), ready: true, local: true},
			{addr: "10.1.2.5:80", zones: z("zone-c"), ready: true},
			{addr: "10.1.2.6:80", zones: z("zone-a"), ready: true},
		},
		want: []expect{
			{holds: hints, cluster: zoneAABCA, local: set("10.1.2.3:80", "10.1.2.4:80"), all: set("10.1.2.3:80", "10.1.2.4:80", "10.1.2.6:80")},
			{holds: hintsOff, cluster: allABCA, local: set("10.1.2.3:80", "10.1.2.4:80"), all: allABCA},
		},
	},
	{
		name:   "internalTrafficPolicy: Local, topology ignored for Local endpoints",
		minors: [2]int{24, 37},
		zone:   "zone-a",
		svc:    svcSpec{internalLocal: true, hintsAnnotation: "auto", externalLocal: false, nodePort: 8080},
		eps: []ep{
			{addr: "10.1.2.3:80", zones: z("zone-a"), ready: true, local: true},
			{addr: "10.1.2.4:80", zones: z("zone-b"), ready: true, local: true},
			{addr: "10.1.2.5:80", zones: z("zone-c"), ready: true},
			{addr: "10.1.2.6:80", zones: z("zone-a"), ready: true},
		},
		want: []expect{
			{holds: hints, cluster: zoneAABCA, local: set("10.1.2.3:80", "10.1.2.4:80"), all: set("10.1.2.3:80", "10.1.2.4:80", "10.1.2.6:80")},
			{holds: hintsOff, cluster: allABCA, local: set("10.1.2.3:80", "10.1.2.4:80"), all: allABCA},
		},
	},
	{
		name:   "empty node labels",
		minors: [2]int{24, 37},
		svc:    svcSpec{hintsAnnotation: "auto"},
		eps:    []ep{{addr: "10.1.2.3:80", zones: z("zone-a"), ready: true}},
		want:   []expect{{cluster: set("10.1.2.3:80")}},
	},
	{
		name:   "empty zone label",
		minors: [2]int{24, 37},
		zone:   "",
		svc:    svcSpec{hintsAnnotation: "auto"},
		eps:    []ep{{addr: "10.1.2.3:80", zones: z("zone-a"), ready: true}},
		want:   []expect{{cluster: set("10.1.2.3:80")}},
	},
	{
		name:   "node in different zone, no endpoint filtering",
		minors: [2]int{24, 37},
		zone:   "zone-b",
		svc:    svcSpec{hintsAnnotation: "auto"},
		eps:    []ep{{addr: "10.1.2.3:80", zones: z("zone-a"), ready: true}},
		want:   []expect{{cluster: set("10.1.2.3:80")}},
	},
	{
		name:   "normal endpoint filtering, auto annotation",
		minors: [2]int{24, 37},
		zone:   "zone-a",
		svc:    svcSpec{hintsAnnotation: "auto"},
		eps:    hintedABCA,
		want: []expect{
			{holds: hints, cluster: zoneAABCA},
			{holds: hintsOff, cluster: allABCA},
		},
	},
	{
		name:   "unready endpoint",
		minors: [2]int{24, 37},
		zone:   "zone-a",
		svc:    svcSpec{hintsAnnotation: "auto"},
		eps: []ep{
			{addr: "10.1.2.3:80", zones: z("zone-a"), ready: true},
			{addr: "10.1.2.4:80", zones: z("zone-b"), ready: true},
			{addr: "10.1.2.5:80", zones: z("zone-c"), ready: true},
			{addr: "10.1.2.6:80", zones: z("zone-a"), ready: false},
		},
		want: []expect{
			{holds: hints, cluster: set("10.1.2.3:80")},
			{holds: hintsOff, cluster: set("10.1.2.3:80", "10.1.2.4:80", "10.1.2.5:80")},
		},
	},
	{
		name:   "only unready endpoints in same zone (should not filter)",
		minors: [2]int{24, 37},
		zone:   "zone-a",
		svc:    svcSpec{hintsAnnotation: "auto"},
		eps: []ep{
			{addr: "10.1.2.3:80", zones: z("zone-a"), ready: false},
			{addr: "10.1.2.4:80", zones: z("zone-b"), ready: true},
			{addr: "10.1.2.5:80", zones: z("zone-c"), ready: true},
			{addr: "10.1.2.6:80", zones: z("zone-a"), ready: false},
		},
		want: []expect{{cluster: set("10.1.2.4:80", "10.1.2.5:80")}},
	},
	{
		name:   "normal endpoint filtering, Auto annotation",
		minors: [2]int{24, 37},
		zone:   "zone-a",
		svc:    svcSpec{hintsAnnotation: "Auto"},
		eps:    hintedABCA,
		want: []expect{
			{holds: hints, cluster: zoneAABCA},
			{holds: hintsOff, cluster: allABCA},
		},
	},
	{
		name:   "hintsAnnotation empty, no filtering applied",
		minors: [2]int{24, 37},
		zone:   "zone-a",
		svc:    svcSpec{hintsAnnotation: ""},
		eps:    hintedABCA,
		want: []expect{
			{holds: not(annotationIgnored), cluster: allABCA},
			{holds: annotationIgnored, cluster: zoneAABCA},
		},
	},
	{
		name:   "hintsAnnotation disabled, no filtering applied",
		minors: [2]int{24, 37},
		zone:   "zone-a",
		svc:    svcSpec{hintsAnnotation: "disabled"},
		eps:    hintedABCA,
		want: []expect{
			{holds: not(annotationIgnored), cluster: allABCA},
			{holds: annotationIgnored, cluster: zoneAABCA},
		},
	},
	{
		name:   "missing hints, no filtering applied",
		minors: [2]int{24, 37},
		zone:   "zone-a",
		svc:    svcSpec{hintsAnnotation: "auto"},
		eps: []ep{
			{addr: "10.1.2.3:80", zones: z("zone-a"), ready: true},
			{addr: "10.1.2.4:80", zones: z("zone-b"), ready: true},
			{addr: "10.1.2.5:80", zones: nil, ready: true},
			{addr: "10.1.2.6:80", zones: z("zone-a"), ready: true},
		},
		want: []expect{{cluster: allABCA}},
	},
	{
		name:   "multiple hints per endpoint, filtering includes any endpoint with zone included",
		minors: [2]int{24, 37},
		zone:   "zone-c",
		svc:    svcSpec{hintsAnnotation: "auto"},
		eps: []ep{
			{addr: "10.1.2.3:80", zones: z("zone-a", "zone-b", "zone-c"), ready: true},
			{addr: "10.1.2.4:80", zones: z("zone-b", "zone-c"), ready: true},
			{addr: "10.1.2.5:80", zones: z("zone-b", "zone-d"), ready: true},
			{addr: "10.1.2.6:80", zones: z("zone-c"), ready: true},
		},
		want: []expect{
			{holds: hints, cluster: set("10.1.2.3:80", "10.1.2.4:80", "10.1.2.6:80")},
			{holds: hintsOff, cluster: allABCA},
		},
	},
	{
		name:   "conflicting topology and localness require merging allEndpoints",
		minors: [2]int{24, 37},
		zone:   "zone-a",
		svc:    svcSpec{internalLocal: false, externalLocal: true, nodePort: 8080, hintsAnnotation: "auto"},
		eps: []ep{
			{addr: "10.0.0.0:80", zones: z("zone-a"), ready: true, local: true},
			{addr: "10.0.0.1:80", zones: z("zone-b"), ready: true, local: true},
			{addr: "10.0.0.2:80", zones: z("zone-a"), ready: true, local: false},
			{addr: "10.0.0.3:80", zones: z("zone-b"), ready: true, local: false},
		},
		want: []expect{
			{holds: hints, cluster: set("10.0.0.0:80", "10.0.0.2:80"), local: set("10.0.0.0:80", "10.0.0.1:80"), all: set("10.0.0.0:80", "10.0.0.1:80", "10.0.0.2:80")},
			{holds: hintsOff, cluster: set("10.0.0.0:80", "10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80"), local: set("10.0.0.0:80", "10.0.0.1:80"), all: set("10.0.0.0:80", "10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80")},
		},
	},
	{
		name:   "internalTrafficPolicy: Local, with empty endpoints",
		minors: [2]int{24, 37},
		svc:    svcSpec{internalLocal: true},
		eps:    nil,
		want:   []expect{{cluster: nil, local: set()}},
	},
	{
		name:   "internalTrafficPolicy: Local, but all endpoints are remote",
		minors: [2]int{24, 37},
		svc:    svcSpec{internalLocal: true},
		eps: []ep{
			{addr: "10.0.0.0:80", ready: true, local: false},
			{addr: "10.0.0.1:80", ready: true, local: false},
		},
		want: []expect{{cluster: nil, local: set(), onlyRemote: true}},
	},
	{
		name:   "internalTrafficPolicy: Local, all endpoints are local",
		minors: [2]int{24, 37},
		svc:    svcSpec{internalLocal: true},
		eps: []ep{
			{addr: "10.0.0.0:80", ready: true, local: true},
			{addr: "10.0.0.1:80", ready: true, local: true},
		},
		want: []expect{{cluster: nil, local: set("10.0.0.0:80", "10.0.0.1:80")}},
	},
	{
		name:   "internalTrafficPolicy: Local, some endpoints are local",
		minors: [2]int{24, 37},
		svc:    svcSpec{internalLocal: true},
		eps: []ep{
			{addr: "10.0.0.0:80", ready: true, local: true},
			{addr: "10.0.0.1:80", ready: true, local: false},
		},
		want: []expect{{cluster: nil, local: set("10.0.0.0:80")}},
	},
	{
		name:   "Cluster traffic policy, endpoints not Ready",
		minors: [2]int{24, 37},
		svc:    svcSpec{},
		eps: []ep{
			{addr: "10.0.0.0:80", ready: false},
			{addr: "10.0.0.1:80", ready: false},
		},
		want: []expect{{cluster: set(), local: nil}},
	},
	{
		name:   "Cluster traffic policy, some endpoints are Ready",
		minors: [2]int{24, 37},
		svc:    svcSpec{},
		eps: []ep{
			{addr: "10.0.0.0:80", ready: false},
			{addr: "10.0.0.1:80", ready: true},
		},
		want: []expect{{cluster: set("10.0.0.1:80"), local: nil}},
	},
	{
		name:   "Cluster traffic policy, PTE enabled, all endpoints are terminating",
		minors: [2]int{24, 37},
		svc:    svcSpec{},
		eps: []ep{
			{addr: "10.0.0.0:80", ready: false, serving: true, terminating: true, local: true},
			{addr: "10.0.0.1:80", ready: false, serving: true, terminating: true, local: false},
		},
		want: []expect{
			{holds: pte, cluster: set("10.0.0.0:80", "10.0.0.1:80"), local: nil},
			// "PTE disabled" (1.24-1.27 with the gate off).
			{holds: not(pte), cluster: set(), local: nil},
		},
	},
	{
		name:   "Cluster traffic policy, PTE disabled, all endpoints are terminating",
		minors: [2]int{24, 37},
		svc:    svcSpec{},
		eps: []ep{
			{addr: "10.0.0.0:80", ready: false, serving: true, terminating: true, local: true},
			{addr: "10.0.0.1:80", ready: false, serving: true, terminating: true, local: false},
		},
		want: []expect{
			{holds: not(pte), cluster: set(), local: nil},
			{holds: pte, cluster: set("10.0.0.0:80", "10.0.0.1:80"), local: nil},
		},
	},
	{
		name:   "iTP: Local, eTP: Cluster, some endpoints local",
		minors: [2]int{24, 37},
		svc:    svcSpec{internalLocal: true, externalLocal: false, nodePort: 8080},
		eps: []ep{
			{addr: "10.0.0.0:80", ready: true, local: true},
			{addr: "10.0.0.1:80", ready: true, local: false},
		},
		want: []expect{{cluster: set("10.0.0.0:80", "10.0.0.1:80"), local: set("10.0.0.0:80"), all: set("10.0.0.0:80", "10.0.0.1:80")}},
	},
	{
		name:   "iTP: Cluster, eTP: Local, some endpoints local",
		minors: [2]int{24, 37},
		svc:    svcSpec{internalLocal: false, externalLocal: true, nodePort: 8080},
		eps: []ep{
			{addr: "10.0.0.0:80", ready: true, local: true},
			{addr: "10.0.0.1:80", ready: true, local: false},
		},
		want: []expect{{cluster: set("10.0.0.0:80", "10.0.0.1:80"), local: set("10.0.0.0:80"), all: set("10.0.0.0:80", "10.0.0.1:80")}},
	},
	{
		name:   "iTP: Local, eTP: Local, some endpoints local",
		minors: [2]int{24, 37},
		svc:    svcSpec{internalLocal: true, externalLocal: true, nodePort: 8080},
		eps: []ep{
			{addr: "10.0.0.0:80", ready: true, local: true},
			{addr: "10.0.0.1:80", ready: true, local: false},
		},
		want: []expect{{cluster: set("10.0.0.0:80", "10.0.0.1:80"), local: set("10.0.0.0:80"), all: set("10.0.0.0:80", "10.0.0.1:80")}},
	},
	{
		name:   "iTP: Local, eTP: Local, all endpoints remote",
		minors: [2]int{24, 37},
		svc:    svcSpec{internalLocal: true, externalLocal: true, nodePort: 8080},
		eps: []ep{
			{addr: "10.0.0.0:80", ready: true, local: false},
			{addr: "10.0.0.1:80", ready: true, local: false},
		},
		want: []expect{{cluster: set("10.0.0.0:80", "10.0.0.1:80"), local: set(), all: set("10.0.0.0:80", "10.0.0.1:80")}},
	},
	{
		name:   "iTP: Local, eTP: Local, PTE disabled, all endpoints remote and terminating",
		minors: [2]int{24, 37},
		svc:    svcSpec{internalLocal: true, externalLocal: true, nodePort: 8080},
		eps: []ep{
			{addr: "10.0.0.0:80", ready: false, serving: true, terminating: true, local: false},
			{addr: "10.0.0.1:80", ready: false, serving: true, terminating: true, local: false},
		},
		want: []expect{
			{holds: not(pte), cluster: set(), local: set(), all: set()},
			{holds: pte, cluster: set("10.0.0.0:80", "10.0.0.1:80"), local: set(), all: set("10.0.0.0:80", "10.0.0.1:80"), onlyRemote: true},
		},
	},
	{
		name:   "iTP: Local, eTP: Local, PTE enabled, all endpoints remote and terminating",
		minors: [2]int{24, 37},
		svc:    svcSpec{internalLocal: true, externalLocal: true, nodePort: 8080},
		eps: []ep{
			{addr: "10.0.0.0:80", ready: false, serving: true, terminating: true, local: false},
			{addr: "10.0.0.1:80", ready: false, serving: true, terminating: true, local: false},
		},
		want: []expect{
			{holds: pte, cluster: set("10.0.0.0:80", "10.0.0.1:80"), local: set(), all: set("10.0.0.0:80", "10.0.0.1:80"), onlyRemote: true},
			{holds: not(pte), cluster: set(), local: set(), all: set()},
		},
	},
	{
		name:   "iTP: Cluster, eTP: Local, PTE disabled, with terminating endpoints",
		minors: [2]int{24, 37},
		svc:    svcSpec{internalLocal: false, externalLocal: true, nodePort: 8080},
		eps: []ep{
			{addr: "10.0.0.0:80", ready: true, local: false},
			{addr: "10.0.0.1:80", ready: false, serving: false, local: true},
			{addr: "10.0.0.2:80", ready: false, serving: true, terminating: true, local: true},
			{addr: "10.0.0.3:80", ready: false, serving: true, terminating: true, local: false},
		},
		want: []expect{
			{holds: not(pte), cluster: set("10.0.0.0:80"), local: set(), all: set("10.0.0.0:80")},
			{holds: pte, cluster: set("10.0.0.0:80"), local: set("10.0.0.2:80"), all: set("10.0.0.0:80", "10.0.0.2:80")},
		},
	},
	{
		name:   "iTP: Cluster, eTP: Local, PTE enabled, with terminating endpoints",
		minors: [2]int{24, 37},
		svc:    svcSpec{internalLocal: false, externalLocal: true, nodePort: 8080},
		eps: []ep{
			{addr: "10.0.0.0:80", ready: true, local: false},
			{addr: "10.0.0.1:80", ready: false, serving: false, local: true},
			{addr: "10.0.0.2:80", ready: false, serving: true, terminating: true, local: true},
			{addr: "10.0.0.3:80", ready: false, serving: true, terminating: true, local: false},
		},
		want: []expect{
			{holds: pte, cluster: set("10.0.0.0:80"), local: set("10.0.0.2:80"), all: set("10.0.0.0:80", "10.0.0.2:80")},
			{holds: not(pte), cluster: set("10.0.0.0:80"), local: set(), all: set("10.0.0.0:80")},
		},
	},
	{
		name:   "externalTrafficPolicy ignored if not externally accessible",
		minors: [2]int{24, 37},
		svc:    svcSpec{externalLocal: true},
		eps: []ep{
			{addr: "10.0.0.0:80", ready: true, local: false},
			{addr: "10.0.0.1:80", ready: true, local: true},
		},
		want: []expect{{cluster: set("10.0.0.0:80", "10.0.0.1:80"), local: nil, all: set("10.0.0.0:80", "10.0.0.1:80")}},
	},
	{
		name:   "no cluster endpoints for iTP:Local internal-only service",
		minors: [2]int{24, 37},
		svc:    svcSpec{internalLocal: true},
		eps: []ep{
			{addr: "10.0.0.0:80", ready: true, local: false},
			{addr: "10.0.0.1:80", ready: true, local: true},
		},
		want: []expect{{cluster: nil, local: set("10.0.0.1:80"), all: set("10.0.0.1:80")}},
	},
}

// casesV128 are pkg/proxy/topology_test.go TestCategorizeEndpoints of
// v1.28.0 (its 34 cases; 1.29 only renames methods, and 1.30 adds the
// ServiceTrafficDistribution check, which 1.31 and 1.32 are taken to
// keep). Upstream's test sets TopologyAwareHints as each case says (unset:
// off); ProxyTerminatingEndpoints is no longer read. They are checked for
// 1.28 to 1.37.
var casesV128 = []selectionCase{
	{
		name:   "hints disabled, hints annotation == auto",
		minors: [2]int{28, 37},
		zone:   "zone-a",
		svc:    svcSpec{hintsAnnotation: "auto"},
		eps:    hintedABCA,
		want: []expect{
			{holds: hintsOff, cluster: allABCA},
			{holds: hints, cluster: zoneAABCA},
		},
	},
	{
		name:   "hints, hints annotation == aUto (wrong capitalization), hints no longer ignored",
		minors: [2]int{28, 37},
		zone:   "zone-a",
		svc:    svcSpec{hintsAnnotation: "aUto"},
		eps:    hintedABCA,
		want: []expect{
			{holds: hints, cluster: zoneAABCA},
			{holds: hintsOff, cluster: allABCA},
		},
	},
	{
		name:   "Cluster traffic policy, all endpoints are terminating",
		minors: [2]int{28, 37},
		svc:    svcSpec{},
		eps: []ep{
			{addr: "10.0.0.0:80", ready: false, serving: true, terminating: true, local: true},
			{addr: "10.0.0.1:80", ready: false, serving: true, terminating: true, local: false},
		},
		want: []expect{{cluster: set("10.0.0.0:80", "10.0.0.1:80"), local: nil}},
	},
	{
		name:   "iTP: Local, eTP: Local, all endpoints remote and terminating",
		minors: [2]int{28, 37},
		svc:    svcSpec{internalLocal: true, externalLocal: true, nodePort: 8080},
		eps: []ep{
			{addr: "10.0.0.0:80", ready: false, serving: true, terminating: true, local: false},
			{addr: "10.0.0.1:80", ready: false, serving: true, terminating: true, local: false},
		},
		want: []expect{{cluster: set("10.0.0.0:80", "10.0.0.1:80"), local: set(), all: set("10.0.0.0:80", "10.0.0.1:80"), onlyRemote: true}},
	},
	{
		name:   "iTP: Cluster, eTP: Local, with terminating endpoints",
		minors: [2]int{28, 37},
		svc:    svcSpec{internalLocal: false, externalLocal: true, nodePort: 8080},
		eps: []ep{
			{addr: "10.0.0.0:80", ready: true, local: false},
			{addr: "10.0.0.1:80", ready: false, serving: false, local: true},
			{addr: "10.0.0.2:80", ready: false, serving: true, terminating: true, local: true},
			{addr: "10.0.0.3:80", ready: false, serving: true, terminating: true, local: false},
		},
		want: []expect{{cluster: set("10.0.0.0:80"), local: set("10.0.0.2:80"), all: set("10.0.0.0:80", "10.0.0.2:80")}},
	},
}

// casesV133 are pkg/proxy/topology_test.go TestCategorizeEndpoints of the
// 1.33 development branch (commit 6c039d9075ef, after kube-proxy stopped
// reading the topology gates and the annotation; its 26 cases). Upstream's
// test sets no gate. They hold for 1.33 to 1.37 with every setting of
// PreferSameTrafficDistribution: no endpoint has a node hint.
var casesV133 = []selectionCase{
	{
		name:   "should use topology since all endpoints have hints, node has a zone label and and there are endpoints for the node's zone",
		minors: [2]int{33, 37},
		zone:   "zone-a",
		svc:    svcSpec{},
		eps:    hintedABCA,
		want:   []expect{{cluster: zoneAABCA, local: nil}},
	},
	{
		name:   "externalTrafficPolicy: Local, topology ignored for Local endpoints",
		minors: [2]int{33, 37},
		zone:   "zone-a",
		svc:    svcSpec{externalLocal: true, nodePort: 8080},
		eps: []ep{
			{addr: "10.1.2.3:80", zones: z("zone-a"), ready: true, local: true},
			{addr: "10.1.2.4:80", zones: z("zone-b"), ready: true, local: true},
			{addr: "10.1.2.5:80", zones: z("zone-c"), ready: true},
			{addr: "10.1.2.6:80", zones: z("zone-a"), ready: true},
		},
		want: []expect{{cluster: zoneAABCA, local: set("10.1.2.3:80", "10.1.2.4:80"), all: set("10.1.2.3:80", "10.1.2.4:80", "10.1.2.6:80")}},
	},
	{
		name:   "internalTrafficPolicy: Local, topology ignored for Local endpoints",
		minors: [2]int{33, 37},
		zone:   "zone-a",
		svc:    svcSpec{internalLocal: true, externalLocal: false, nodePort: 8080},
		eps: []ep{
			{addr: "10.1.2.3:80", zones: z("zone-a"), ready: true, local: true},
			{addr: "10.1.2.4:80", zones: z("zone-b"), ready: true, local: true},
			{addr: "10.1.2.5:80", zones: z("zone-c"), ready: true},
			{addr: "10.1.2.6:80", zones: z("zone-a"), ready: true},
		},
		want: []expect{{cluster: zoneAABCA, local: set("10.1.2.3:80", "10.1.2.4:80"), all: set("10.1.2.3:80", "10.1.2.4:80", "10.1.2.6:80")}},
	},
	{
		name:   "empty node labels",
		minors: [2]int{33, 37},
		svc:    svcSpec{},
		eps:    []ep{{addr: "10.1.2.3:80", zones: z("zone-a"), ready: true}},
		want:   []expect{{cluster: set("10.1.2.3:80"), local: nil}},
	},
	{
		name:   "empty zone label",
		minors: [2]int{33, 37},
		zone:   "",
		svc:    svcSpec{},
		eps:    []ep{{addr: "10.1.2.3:80", zones: z("zone-a"), ready: true}},
		want:   []expect{{cluster: set("10.1.2.3:80"), local: nil}},
	},
	{
		name:   "node in different zone, no endpoint filtering",
		minors: [2]int{33, 37},
		zone:   "zone-b",
		svc:    svcSpec{},
		eps:    []ep{{addr: "10.1.2.3:80", zones: z("zone-a"), ready: true}},
		want:   []expect{{cluster: set("10.1.2.3:80"), local: nil}},
	},
	{
		name:   "unready endpoint",
		minors: [2]int{33, 37},
		zone:   "zone-a",
		svc:    svcSpec{},
		eps: []ep{
			{addr: "10.1.2.3:80", zones: z("zone-a"), ready: true},
			{addr: "10.1.2.4:80", zones: z("zone-b"), ready: true},
			{addr: "10.1.2.5:80", zones: z("zone-c"), ready: true},
			{addr: "10.1.2.6:80", zones: z("zone-a"), ready: false},
		},
		want: []expect{{cluster: set("10.1.2.3:80"), local: nil}},
	},
	{
		name:   "only unready endpoints in same zone (should not filter)",
		minors: [2]int{33, 37},
		zone:   "zone-a",
		svc:    svcSpec{},
		eps: []ep{
			{addr: "10.1.2.3:80", zones: z("zone-a"), ready: false},
			{addr: "10.1.2.4:80", zones: z("zone-b"), ready: true},
			{addr: "10.1.2.5:80", zones: z("zone-c"), ready: true},
			{addr: "10.1.2.6:80", zones: z("zone-a"), ready: false},
		},
		want: []expect{{cluster: set("10.1.2.4:80", "10.1.2.5:80"), local: nil}},
	},
	{
		name:   "missing hints, no filtering applied",
		minors: [2]int{33, 37},
		zone:   "zone-a",
		svc:    svcSpec{},
		eps: []ep{
			{addr: "10.1.2.3:80", zones: z("zone-a"), ready: true},
			{addr: "10.1.2.4:80", zones: z("zone-b"), ready: true},
			{addr: "10.1.2.5:80", zones: nil, ready: true},
			{addr: "10.1.2.6:80", zones: z("zone-a"), ready: true},
		},
		want: []expect{{cluster: allABCA, local: nil}},
	},
	{
		name:   "multiple hints per endpoint, filtering includes any endpoint with zone included",
		minors: [2]int{33, 37},
		zone:   "zone-c",
		svc:    svcSpec{},
		eps: []ep{
			{addr: "10.1.2.3:80", zones: z("zone-a", "zone-b", "zone-c"), ready: true},
			{addr: "10.1.2.4:80", zones: z("zone-b", "zone-c"), ready: true},
			{addr: "10.1.2.5:80", zones: z("zone-b", "zone-d"), ready: true},
			{addr: "10.1.2.6:80", zones: z("zone-c"), ready: true},
		},
		want: []expect{{cluster: set("10.1.2.3:80", "10.1.2.4:80", "10.1.2.6:80"), local: nil}},
	},
	{
		name:   "conflicting topology and localness require merging allEndpoints",
		minors: [2]int{33, 37},
		zone:   "zone-a",
		svc:    svcSpec{internalLocal: false, externalLocal: true, nodePort: 8080},
		eps: []ep{
			{addr: "10.0.0.0:80", zones: z("zone-a"), ready: true, local: true},
			{addr: "10.0.0.1:80", zones: z("zone-b"), ready: true, local: true},
			{addr: "10.0.0.2:80", zones: z("zone-a"), ready: true, local: false},
			{addr: "10.0.0.3:80", zones: z("zone-b"), ready: true, local: false},
		},
		want: []expect{{cluster: set("10.0.0.0:80", "10.0.0.2:80"), local: set("10.0.0.0:80", "10.0.0.1:80"), all: set("10.0.0.0:80", "10.0.0.1:80", "10.0.0.2:80")}},
	},
}

// casesAnnotations cover the annotation kube-proxy reads from 1.27
// (pkg/proxy/service.go HintsAnnotation: the value of
// service.kubernetes.io/topology-aware-hints when that key is there, even
// empty, else that of service.kubernetes.io/topology-mode), which no
// upstream case of TestCategorizeEndpoints sets: its cases give the
// derived value. Expectations follow canUseTopology of each release.
var casesAnnotations = []selectionCase{
	{
		name:   "topology-mode Auto",
		minors: [2]int{24, 37},
		zone:   "zone-a",
		svc:    svcSpec{annotations: map[string]string{corev1.AnnotationTopologyMode: "Auto"}},
		eps:    hintedABCA,
		want: []expect{
			// 1.24-1.26 read topology-aware-hints only.
			{holds: not(anyValue), cluster: allABCA},
			{holds: anyValue, cluster: zoneAABCA},
		},
	},
	{
		name:   "topology-aware-hints empty, topology-mode Auto",
		minors: [2]int{24, 37},
		zone:   "zone-a",
		svc: svcSpec{annotations: map[string]string{
			corev1.DeprecatedAnnotationTopologyAwareHints: "",
			corev1.AnnotationTopologyMode:                 "Auto",
		}},
		eps: hintedABCA,
		want: []expect{
			{holds: not(annotationIgnored), cluster: allABCA},
			{holds: annotationIgnored, cluster: zoneAABCA},
		},
	},
	{
		name:   "topology-aware-hints Disabled, topology-mode Auto",
		minors: [2]int{24, 37},
		zone:   "zone-a",
		svc: svcSpec{annotations: map[string]string{
			corev1.DeprecatedAnnotationTopologyAwareHints: "Disabled",
			corev1.AnnotationTopologyMode:                 "Auto",
		}},
		eps: hintedABCA,
		want: []expect{
			{holds: not(annotationIgnored), cluster: allABCA},
			{holds: annotationIgnored, cluster: zoneAABCA},
		},
	},
	{
		name:   "topology-mode PreferZone",
		minors: [2]int{24, 37},
		zone:   "zone-a",
		svc:    svcSpec{annotations: map[string]string{corev1.AnnotationTopologyMode: "PreferZone"}},
		eps:    hintedABCA,
		want: []expect{
			{holds: not(anyValue), cluster: allABCA},
			{holds: anyValue, cluster: zoneAABCA},
		},
	},
}

// casesNodeHints cover PreferSameNode (KEP-3015): upstream's cases for it
// (topology_test.go of 1.33 and later) were not available, so these follow
// topologyModeFromHints of 1.33: with PreferSameTrafficDistribution, when
// every ready endpoint has a node hint and one is for the node, the
// endpoints hinted for the node; else the zone hints as before; else
// every ready endpoint. Before 1.33 node hints are not read.
var casesNodeHints = []selectionCase{
	{
		name:   "node hints for every endpoint, one for the node",
		minors: [2]int{24, 37},
		zone:   "zone-a",
		svc:    svcSpec{hintsAnnotation: "Auto"},
		eps: []ep{
			{addr: "10.1.2.3:80", zones: z("zone-a"), nodes: z("node-a"), ready: true, local: true},
			{addr: "10.1.2.4:80", zones: z("zone-a"), nodes: z("node-b"), ready: true},
			{addr: "10.1.2.5:80", zones: z("zone-b"), nodes: z("node-c"), ready: true},
		},
		want: []expect{
			{holds: psd, cluster: set("10.1.2.3:80")},
			{holds: and(hints, not(psd)), cluster: set("10.1.2.3:80", "10.1.2.4:80")},
			{holds: hintsOff, cluster: set("10.1.2.3:80", "10.1.2.4:80", "10.1.2.5:80")},
		},
	},
	{
		name:   "an endpoint without a node hint, zone hints used",
		minors: [2]int{33, 37},
		zone:   "zone-a",
		eps: []ep{
			{addr: "10.1.2.3:80", zones: z("zone-a"), nodes: z("node-a"), ready: true, local: true},
			{addr: "10.1.2.4:80", zones: z("zone-a"), ready: true},
			{addr: "10.1.2.5:80", zones: z("zone-b"), nodes: z("node-c"), ready: true},
		},
		want: []expect{{cluster: set("10.1.2.3:80", "10.1.2.4:80")}},
	},
	{
		name:   "no node hint for the node, zone hints used",
		minors: [2]int{33, 37},
		zone:   "zone-a",
		eps: []ep{
			{addr: "10.1.2.3:80", zones: z("zone-a"), nodes: z("node-b"), ready: true},
			{addr: "10.1.2.4:80", zones: z("zone-a"), nodes: z("node-b"), ready: true},
			{addr: "10.1.2.5:80", zones: z("zone-b"), nodes: z("node-c"), ready: true},
		},
		want: []expect{{cluster: set("10.1.2.3:80", "10.1.2.4:80")}},
	},
	{
		name:   "node hints without zone hints",
		minors: [2]int{33, 37},
		zone:   "zone-a",
		eps: []ep{
			{addr: "10.1.2.3:80", nodes: z("node-a"), ready: true, local: true},
			{addr: "10.1.2.4:80", nodes: z("node-b"), ready: true},
		},
		want: []expect{
			{holds: psd, cluster: set("10.1.2.3:80")},
			{holds: not(psd), cluster: set("10.1.2.3:80", "10.1.2.4:80")},
		},
	},
	{
		name:   "unready endpoint without a node hint ignored",
		minors: [2]int{33, 37},
		zone:   "zone-a",
		eps: []ep{
			{addr: "10.1.2.3:80", nodes: z("node-a"), ready: true, local: true},
			{addr: "10.1.2.4:80", nodes: z("node-b"), ready: true},
			{addr: "10.1.2.5:80", ready: false},
		},
		want: []expect{
			{holds: psd, cluster: set("10.1.2.3:80")},
			{holds: not(psd), cluster: set("10.1.2.3:80", "10.1.2.4:80")},
		},
	},
	{
		name:   "only an unready endpoint hinted for the node",
		minors: [2]int{33, 37},
		zone:   "zone-a",
		eps: []ep{
			{addr: "10.1.2.3:80", zones: z("zone-a"), nodes: z("node-a"), ready: false, local: true},
			{addr: "10.1.2.4:80", zones: z("zone-b"), nodes: z("node-b"), ready: true},
			{addr: "10.1.2.5:80", zones: z("zone-b"), nodes: z("node-c"), ready: true},
		},
		want: []expect{{cluster: set("10.1.2.4:80", "10.1.2.5:80")}},
	},
	{
		name:   "externalTrafficPolicy: Local, node hints ignored for Local endpoints",
		minors: [2]int{33, 37},
		zone:   "zone-a",
		svc:    svcSpec{externalLocal: true, nodePort: 8080},
		eps: []ep{
			{addr: "10.0.0.0:80", nodes: z("node-b"), ready: true, local: true},
			{addr: "10.0.0.1:80", nodes: z("node-a"), ready: true},
			{addr: "10.0.0.2:80", nodes: z("node-c"), ready: true},
		},
		want: []expect{
			{holds: psd, cluster: set("10.0.0.1:80"), local: set("10.0.0.0:80"), all: set("10.0.0.0:80", "10.0.0.1:80")},
			{holds: not(psd), cluster: set("10.0.0.0:80", "10.0.0.1:80", "10.0.0.2:80"), local: set("10.0.0.0:80"), all: set("10.0.0.0:80", "10.0.0.1:80", "10.0.0.2:80")},
		},
	},
	{
		name:   "all endpoints terminating, node hints ignored",
		minors: [2]int{33, 37},
		zone:   "zone-a",
		eps: []ep{
			{addr: "10.0.0.0:80", nodes: z("node-b"), serving: true, terminating: true},
			{addr: "10.0.0.1:80", nodes: z("node-a"), serving: true, terminating: true, local: true},
		},
		want: []expect{{cluster: set("10.0.0.0:80", "10.0.0.1:80")}},
	},
}
