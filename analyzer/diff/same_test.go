package diff

import (
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/kube"
)

// TestSamePort: two service ports are told the same, and their signatures
// not compared, only when every value the signature describes is equal:
// a change of any of them is compared.
func TestSamePort(t *testing.T) {
	a := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	base := model.ServicePort{Protocol: "TCP", Port: 80, NodePort: 30080, ClusterIPs: []netip.Addr{a("10.96.0.1")},
		ExternalIPs: []netip.Addr{a("192.0.2.1")}, LoadBalancerVIPs: []netip.Addr{a("198.51.100.1")},
		AffinityClientIP: true, AffinityTimeout: 10800}
	for name, change := range map[string]func(*model.ServicePort){
		"protocol":              func(sp *model.ServicePort) { sp.Protocol = "UDP" },
		"port":                  func(sp *model.ServicePort) { sp.Port = 81 },
		"node port":             func(sp *model.ServicePort) { sp.NodePort = 0 },
		"cluster IPs":           func(sp *model.ServicePort) { sp.ClusterIPs = append(sp.ClusterIPs, a("fd00::1")) },
		"external IPs":          func(sp *model.ServicePort) { sp.ExternalIPs = nil },
		"load balancer IPs":     func(sp *model.ServicePort) { sp.LoadBalancerVIPs = []netip.Addr{a("198.51.100.2")} },
		"external policy":       func(sp *model.ServicePort) { sp.ExternalPolicyLocal = true },
		"internal policy":       func(sp *model.ServicePort) { sp.InternalPolicyLocal = true },
		"affinity":              func(sp *model.ServicePort) { sp.AffinityClientIP = false },
		"affinity timeout":      func(sp *model.ServicePort) { sp.AffinityTimeout = 60 },
		"skipped":               func(sp *model.ServicePort) { sp.Skip = "no cluster IP" },
		"the same values, anew": func(sp *model.ServicePort) { sp.ClusterIPs = []netip.Addr{a("10.96.0.1")} },
	} {
		o, n := base, base
		change(&n)
		same := samePort(&o, &n)
		if sigSame := reflect.DeepEqual(portSig(&o), portSig(&n)); same && !sigSame {
			t.Errorf("%s: told the same, but the signatures differ", name)
		}
		if want := name == "the same values, anew"; same != want {
			t.Errorf("%s: same %t, want %t", name, same, want)
		}
	}
}

// TestSameEndpoints: endpoints are passed over only when both sides list
// the same endpoints in the same states in the same order; otherwise they
// are compared, which finds no change when only their order differs.
func TestSameEndpoints(t *testing.T) {
	ep := func(ip string, ready bool) *model.Endpoint {
		return &model.Endpoint{IP: netip.MustParseAddr(ip), Port: 8080, Ready: ready, Serving: ready}
	}
	x, y := ep("10.244.0.1", true), ep("10.244.0.2", true)
	for _, tc := range []struct {
		name    string
		o, n    []*model.Endpoint
		same    bool
		changes int
	}{
		{"alike", []*model.Endpoint{x, y}, []*model.Endpoint{ep("10.244.0.1", true), ep("10.244.0.2", true)}, true, 0},
		{"reordered", []*model.Endpoint{x, y}, []*model.Endpoint{y, x}, false, 0},
		{"not ready", []*model.Endpoint{x, y}, []*model.Endpoint{x, ep("10.244.0.2", false)}, false, 1},
		{"terminating", []*model.Endpoint{x}, []*model.Endpoint{{IP: x.IP, Port: x.Port, Ready: true, Serving: true, Terminating: true}}, false, 1},
		{"another port", []*model.Endpoint{x}, []*model.Endpoint{{IP: x.IP, Port: 9090, Ready: true, Serving: true}}, false, 2},
		{"one more", []*model.Endpoint{x}, []*model.Endpoint{x, y}, false, 1},
	} {
		if got := sameEndpoints(tc.o, tc.n); got != tc.same {
			t.Errorf("%s: same %t, want %t", tc.name, got, tc.same)
		}
		c := &comparer{r: &Result{}}
		c.endpoints("ns/svc:http", &model.ServicePort{Endpoints: tc.o}, &model.ServicePort{Endpoints: tc.n})
		if len(c.r.Changes) != tc.changes {
			t.Errorf("%s: %d changes, want %d: %+v", tc.name, len(c.r.Changes), tc.changes, c.r.Changes)
		}
	}
}

// TestServicesByName: a Service is added or removed by its name,
// "namespace/name", whether a side knows it by its object or by its
// service ports only; two Services whose names are the same string are
// one, and a side's Services the other knows are not listed.
func TestServicesByName(t *testing.T) {
	snap := func(svcs [][2]string, ports ...model.ServicePortName) *model.Snapshot {
		s := &model.Snapshot{Objects: &kube.Objects{}}
		for i, x := range svcs {
			s.Objects.Services = append(s.Objects.Services, &kube.Service{
				Service: &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: x[0], Name: x[1]}},
				Pos:     parsers.Pos{File: "cluster.json", Line: i + 1}})
		}
		for _, n := range ports {
			s.Ports = append(s.Ports, &model.ServicePort{Name: n, Port: 80, Protocol: "TCP"})
		}
		return s
	}
	o := snap([][2]string{{"a", "x"}, {"a/b", "c"}, {"a", "gone"}, {"a", "gone"}}, model.ServicePortName{Namespace: "a", Name: "gone", Port: "http"},
		model.ServicePortName{Namespace: "p", Name: "portsonly"})
	n := snap([][2]string{{"a", "x"}, {"a", "b/c"}, {"a", "new"}})
	c := &comparer{r: &Result{}}
	gone := c.services(o, n)
	var got []string
	for _, ch := range c.r.Changes {
		ev := ""
		for _, e := range append(ch.OldEvidence, ch.NewEvidence...) {
			ev += fmt.Sprintf(" %s:%d %q", e.File, e.Line, e.Text)
		}
		got = append(got, fmt.Sprintf("%s %s %v%s", ch.Kind, ch.Service, ch.Details, ev))
	}
	want := []string{
		`service-removed a/gone [port http 80/TCP, 0 endpoints] cluster.json:4 "Service a/gone"`,
		`service-removed p/portsonly [port - 80/TCP, 0 endpoints] :0 ""`,
		`service-added a/new [] cluster.json:3 "Service a/new"`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(gone) != 3 || !gone["a/gone"] || !gone["p/portsonly"] || !gone["a/new"] {
		t.Errorf("gone: %v", gone)
	}
}
