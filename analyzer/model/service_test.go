package model

import (
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/proxyscan/proxyscan/parsers/kube"
)

// TestCategorize checks Categorize on its own, with the options given
// directly: which endpoints the Cluster and Local policies use, the union
// of both, whether any is usable, and the topology mode.
func TestCategorize(t *testing.T) {
	type ep struct {
		addr                               string
		ready, serving, terminating, local bool
		zones, nodes                       []string
	}
	type want struct {
		cluster, local, all string // space-separated ("" for none)
		hasAny              bool
		topology            string
	}
	hinted := []ep{
		{addr: "10.0.0.1:80", ready: true, serving: true, local: true, zones: []string{"zone-a"}, nodes: []string{"node-a"}},
		{addr: "10.0.0.2:80", ready: true, serving: true, zones: []string{"zone-a"}, nodes: []string{"node-b"}},
		{addr: "10.0.0.3:80", ready: true, serving: true, zones: []string{"zone-b"}, nodes: []string{"node-c"}},
	}
	auto := map[string]string{corev1.DeprecatedAnnotationTopologyAwareHints: "Auto"}
	cases := []struct {
		name                    string
		internalLocal, external bool
		externalLocal           bool
		annotations             map[string]string
		opts                    CategorizeOptions
		eps                     []ep
		want                    want
	}{
		{name: "no endpoints", want: want{cluster: "", local: "", all: ""}},
		{name: "cluster policy takes the ready endpoints",
			eps:  []ep{{addr: "10.0.0.1:80", ready: true, serving: true}, {addr: "10.0.0.2:80"}, {addr: "[fd00::1]:80", ready: true}},
			want: want{cluster: "10.0.0.1:80", local: "", all: "10.0.0.1:80", hasAny: true}},
		{name: "no ready endpoint, no fallback",
			eps:  []ep{{addr: "10.0.0.1:80", serving: true, terminating: true}},
			want: want{cluster: "", local: "", all: ""}},
		{name: "no ready endpoint, serving terminating fallback",
			opts: CategorizeOptions{TerminatingFallback: true},
			eps:  []ep{{addr: "10.0.0.1:80", serving: true, terminating: true}, {addr: "10.0.0.2:80", terminating: true}},
			want: want{cluster: "10.0.0.1:80", local: "", all: "10.0.0.1:80", hasAny: true}},
		{name: "internal Local policy only: no Cluster endpoints",
			internalLocal: true,
			eps:           []ep{{addr: "10.0.0.1:80", ready: true, local: true}, {addr: "10.0.0.2:80", ready: true}},
			want:          want{cluster: "", local: "10.0.0.1:80", all: "10.0.0.1:80", hasAny: true}},
		{name: "internal Local policy, remote endpoints only",
			internalLocal: true,
			eps:           []ep{{addr: "10.0.0.2:80", ready: true}},
			want:          want{cluster: "", local: "", all: "", hasAny: true}},
		{name: "external Local policy ignored without an external destination",
			externalLocal: true,
			eps:           []ep{{addr: "10.0.0.1:80", ready: true, local: true}, {addr: "10.0.0.2:80", ready: true}},
			want:          want{cluster: "10.0.0.1:80 10.0.0.2:80", local: "", all: "10.0.0.1:80 10.0.0.2:80", hasAny: true}},
		{name: "external Local policy, local serving terminating fallback only with its option",
			external: true, externalLocal: true,
			eps:  []ep{{addr: "10.0.0.1:80", serving: true, terminating: true, local: true}, {addr: "10.0.0.2:80", ready: true}},
			want: want{cluster: "10.0.0.2:80", local: "", all: "10.0.0.2:80", hasAny: true}},
		{name: "external Local policy, local serving terminating fallback",
			external: true, externalLocal: true, opts: CategorizeOptions{LocalTerminatingFallback: true},
			eps:  []ep{{addr: "10.0.0.1:80", serving: true, terminating: true, local: true}, {addr: "10.0.0.2:80", ready: true}},
			want: want{cluster: "10.0.0.2:80", local: "10.0.0.1:80", all: "10.0.0.1:80 10.0.0.2:80", hasAny: true}},
		{name: "zone hints with the annotation",
			annotations: auto, opts: CategorizeOptions{Zone: "zone-a", ZoneHints: true, TopologyAnnotation: AnnotationAuto},
			eps:  hinted,
			want: want{cluster: "10.0.0.1:80 10.0.0.2:80", local: "", all: "10.0.0.1:80 10.0.0.2:80", hasAny: true, topology: "PreferSameZone"}},
		{name: "zone hints without the annotation the rule asks for",
			opts: CategorizeOptions{Zone: "zone-a", ZoneHints: true, TopologyAnnotation: AnnotationAuto},
			eps:  hinted,
			want: want{cluster: "10.0.0.1:80 10.0.0.2:80 10.0.0.3:80", local: "", all: "10.0.0.1:80 10.0.0.2:80 10.0.0.3:80", hasAny: true}},
		{name: "zone hints not read",
			annotations: auto, opts: CategorizeOptions{Zone: "zone-a", TopologyAnnotation: AnnotationIgnored},
			eps:  hinted,
			want: want{cluster: "10.0.0.1:80 10.0.0.2:80 10.0.0.3:80", local: "", all: "10.0.0.1:80 10.0.0.2:80 10.0.0.3:80", hasAny: true}},
		{name: "node hints before zone hints",
			opts: CategorizeOptions{NodeName: "node-a", Zone: "zone-a", ZoneHints: true, NodeHints: true},
			eps:  hinted,
			want: want{cluster: "10.0.0.1:80", local: "", all: "10.0.0.1:80", hasAny: true, topology: "PreferSameNode"}},
		{name: "topology and a Local policy: the union is reachable",
			external: true, externalLocal: true, opts: CategorizeOptions{NodeName: "node-a", Zone: "zone-b", ZoneHints: true},
			eps:  hinted,
			want: want{cluster: "10.0.0.3:80", local: "10.0.0.1:80", all: "10.0.0.1:80 10.0.0.3:80", hasAny: true, topology: "PreferSameZone"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			svc := &kube.Service{Service: &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc", Annotations: c.annotations}}}
			sp := &ServicePort{Service: svc, Protocol: corev1.ProtocolTCP, Port: 80, InternalPolicyLocal: c.internalLocal, ExternalPolicyLocal: c.externalLocal}
			if c.external {
				sp.NodePort = 30080
			}
			for _, e := range c.eps {
				ap := netip.MustParseAddrPort(e.addr)
				x := &Endpoint{IP: ap.Addr(), Port: int32(ap.Port()), Ready: e.ready, Serving: e.serving, Terminating: e.terminating, Local: e.local}
				if e.zones != nil || e.nodes != nil {
					x.setHints(&endpointHints{zones: e.zones, nodes: e.nodes})
				}
				sp.Endpoints = append(sp.Endpoints, x)
			}
			got := Categorize(sp, IPv4, c.opts)
			for _, l := range []struct {
				what string
				got  []*Endpoint
				want string
			}{{"Cluster", got.Cluster, c.want.cluster}, {"Local", got.Local, c.want.local}, {"AllReachable", got.AllReachable, c.want.all}} {
				if s := listOf(l.got); s != l.want {
					t.Errorf("%s = %q, want %q", l.what, s, l.want)
				}
			}
			if got.HasAny != c.want.hasAny {
				t.Errorf("HasAny = %t, want %t", got.HasAny, c.want.hasAny)
			}
			if got.Topology != c.want.topology {
				t.Errorf("Topology = %q, want %q", got.Topology, c.want.topology)
			}
		})
	}
}

// listOf returns the endpoints space-separated.
func listOf(eps []*Endpoint) string {
	var s []string
	for _, e := range eps {
		s = append(s, e.String())
	}
	return strings.Join(s, " ")
}

// TestActivePorts: the active ports are the ports not skipped, in order;
// with none skipped they are the ports themselves, not a copy (the checks
// ask for them many times), and appending to them leaves the ports alone.
func TestActivePorts(t *testing.T) {
	a, b, c := &ServicePort{}, &ServicePort{Skip: "no cluster IP"}, &ServicePort{}
	s := &Snapshot{Ports: []*ServicePort{a, b, c}}
	if got := s.ActivePorts(); len(got) != 2 || got[0] != a || got[1] != c {
		t.Errorf("ActivePorts = %v, want a and c", got)
	}
	s.Ports = append(make([]*ServicePort, 0, 4), a, c)
	if n := testing.AllocsPerRun(10, func() { s.ActivePorts() }); n != 0 {
		t.Errorf("ActivePorts allocates %v times with no port skipped, want 0", n)
	}
	_ = append(s.ActivePorts(), b)
	if s.Ports[:3][2] != nil {
		t.Errorf("appending to ActivePorts changed the ports: %v", s.Ports)
	}
}

// TestProtoLower: the protocol in lower case, without allocating for the
// protocols kube-proxy knows.
func TestProtoLower(t *testing.T) {
	for proto, want := range map[corev1.Protocol]string{corev1.ProtocolTCP: "tcp", corev1.ProtocolUDP: "udp", corev1.ProtocolSCTP: "sctp", "Other": "other"} {
		sp := &ServicePort{Protocol: proto}
		if got := sp.ProtoLower(); got != want {
			t.Errorf("ProtoLower of %s = %q, want %q", proto, got, want)
		}
	}
	sp := &ServicePort{Protocol: corev1.ProtocolTCP}
	if n := testing.AllocsPerRun(10, func() { sp.ProtoLower() }); n != 0 {
		t.Errorf("ProtoLower allocates %v times, want 0", n)
	}
}
