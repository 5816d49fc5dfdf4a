package model

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/kube"
)

// TestExportCut: an export cut short lacks, of the kind it was cut in,
// only what sorts at or after the last object read when the kind is
// printed together and sorted, as kubectl prints it; any object of it
// otherwise; nothing of a kind followed by another; and all of a kind it
// holds none of, unless another export holds it.
func TestExportCut(t *testing.T) {
	svc := func(line int, ns, name string) *kube.Service {
		return &kube.Service{Service: &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, Pos: parsers.Pos{Line: line}}
	}
	slice := func(line int, ns, name string) *kube.EndpointSlice {
		return &kube.EndpointSlice{EndpointSlice: &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, Pos: parsers.Pos{Line: line}}
	}
	type probe struct {
		ns, name           string
		service, endpoints bool // may lie after the cut
	}
	for _, tc := range []struct {
		name   string
		objs   *kube.Objects
		others *kube.Objects // of other exports
		probes []probe
	}{
		{name: "cut in the slices",
			objs: &kube.Objects{
				Services:       []*kube.Service{svc(1, "default", "kubernetes"), svc(20, "shop", "cart"), svc(40, "shop", "web")},
				EndpointSlices: []*kube.EndpointSlice{slice(60, "default", "kubernetes"), slice(80, "shop", "cart-x1a2b"), slice(100, "shop", "ledger-x1a2b")},
			},
			probes: []probe{
				{"shop", "cart", false, false},
				{"default", "kubernetes", false, false},
				{"shop", "db", false, false},              // sorts before ledger-x1a2b: no slice
				{"shop", "ledger", false, true},           // a second slice may follow
				{"shop", "led", false, false},             // led-... sorts before ledger-...
				{"shop", "web", false, true},              // after the cut
				{"zoo", "a", false, true},                 // a later namespace
				{"shop", "ledger-x1a2b-api", false, true}, // sorts after
			}},
		{name: "cut in the Services",
			objs: &kube.Objects{Services: []*kube.Service{svc(1, "default", "kubernetes"), svc(20, "shop", "cart"), svc(40, "shop", "ledger")}},
			probes: []probe{
				{"shop", "cart", false, true},
				{"shop", "ledger", true, true}, // the last one read may be cut inside
				{"shop", "web", true, true},
				{"default", "zzz", false, true},
			}},
		{name: "cut in the Services, slices in another export",
			objs:   &kube.Objects{Services: []*kube.Service{svc(1, "shop", "cart"), svc(20, "shop", "ledger")}},
			others: &kube.Objects{EndpointSlices: []*kube.EndpointSlice{slice(1, "shop", "cart-x1a2b")}},
			probes: []probe{{"shop", "web", true, false}, {"shop", "cart", false, false}}},
		{name: "unsorted",
			objs:   &kube.Objects{Services: []*kube.Service{svc(1, "shop", "web"), svc(20, "shop", "cart")}},
			probes: []probe{{"shop", "a", true, true}, {"shop", "web", true, true}}},
		{name: "kinds interleaved",
			objs: &kube.Objects{
				Services:       []*kube.Service{svc(1, "shop", "cart"), svc(40, "shop", "web")},
				EndpointSlices: []*kube.EndpointSlice{slice(20, "shop", "cart-x1a2b"), slice(60, "shop", "web-x1a2b")},
			},
			probes: []probe{{"shop", "a", true, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.objs.Partial = "cut short"
			s := &Snapshot{Objects: &kube.Objects{}}
			s.Objects.Merge(tc.objs)
			if tc.others != nil {
				s.Objects.Merge(tc.others)
			}
			s.ExportCuts = []ExportCut{CutOf("cluster.yaml", tc.objs)}
			s.SettleCuts()
			for _, p := range tc.probes {
				if got := s.ServiceCut(p.ns, p.name) != nil; got != p.service {
					t.Errorf("Service %s/%s may lie after the cut: %t, want %t", p.ns, p.name, got, p.service)
				}
				if got := s.EndpointsCut(p.ns, p.name) != nil; got != p.endpoints {
					t.Errorf("endpoints of %s/%s may lie after the cut: %t, want %t", p.ns, p.name, got, p.endpoints)
				}
			}
		})
	}
}
