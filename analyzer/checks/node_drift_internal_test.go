package checks

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/model"
)

// TestDriftExplaining: a node's own finding explains a difference of a
// service port only when it is of a check that reports that kind of
// difference, about the same Service port, and names the same endpoint or
// entry.
func TestDriftExplaining(t *testing.T) {
	ep := func(label string) *printElem { return &printElem{key: "backend " + label, label: label, backend: true} }
	entry := func(label string) *printElem { return &printElem{key: "entry " + label, label: label} }
	lag := Finding{Check: "endpoint-stale", Service: "shop/web:http", Checks: []string{"endpoint-missing", "endpoint-stale"},
		Objects: []string{"10.244.3.5:8080 (ready, on node node-c) not programmed in KUBE-SVC-X", "10.244.3.4:8080 (in no EndpointSlice) programmed in KUBE-SVC-X"}}
	ports := Finding{Check: "endpoint-missing", Service: "kube-system/dns",
		Objects: []string{"10.244.3.2:53 of port dns (ready, on node node-c) not programmed in KUBE-SVC-A"}}
	one := Finding{Check: "endpoint-missing", Service: "shop/api:grpc", Endpoint: "[fd00:10:244::5]:9000"}
	missing := Finding{Check: "service-missing", Service: "shop/sessions", Message: "no entry for cluster IP 10.96.10.30:8443/tcp in nat KUBE-SERVICES (IPv4)"}
	missing6 := Finding{Check: "service-missing", Service: "shop/sessions", Message: "no entry for cluster IP [fd00:96::30]:8443/tcp in the service-ips map (IPv6)"}
	nodePort := Finding{Check: "nodeport-missing", Service: "shop/front:http", Message: "no entry for node port 30080/tcp in the service-nodeports map (IPv4)"}
	other := Finding{Check: "load-balance-skew", Service: "shop/web:http", Endpoint: "10.244.3.4:8080", Message: "10.244.3.4:8080 gets 90%"}
	misdirected := Finding{Check: "load-balance-skew", Service: "shop/web:http", Endpoint: "10.244.3.4:8080", Checks: []string{"endpoint-missing", "load-balance-skew"}}
	dangling := Finding{Check: "ruleset-invalid", Service: "shop/web:http", Endpoint: "10.244.3.4:8080", Checks: []string{"endpoint-missing", "ruleset-invalid"}}
	tests := []struct {
		name     string
		findings []Finding
		service  string
		elem     *printElem
		want     string
	}{
		{"lagging rules, endpoint not programmed", []Finding{lag}, "shop/web:http", ep("10.244.3.5:8080"), "endpoint-stale"},
		{"lagging rules, endpoint gone", []Finding{lag}, "shop/web:http", ep("10.244.3.4:8080"), "endpoint-stale"},
		{"an endpoint the finding does not name", []Finding{lag}, "shop/web:http", ep("10.244.3.9:8080"), ""},
		{"another port of the Service", []Finding{lag}, "shop/web:https", ep("10.244.3.5:8080"), ""},
		{"a finding of the Service's ports", []Finding{ports}, "kube-system/dns:dns", ep("10.244.3.2:53"), "endpoint-missing"},
		{"a finding of the Service's ports, another port", []Finding{ports}, "kube-system/dns:dns-tcp", ep("10.244.3.2:53"), ""},
		{"one endpoint, IPv6", []Finding{one}, "shop/api:grpc", ep("[fd00:10:244::5]:9000"), "endpoint-missing"},
		{"a check of another kind", []Finding{other}, "shop/web:http", ep("10.244.3.4:8080"), ""},
		{"a misdirected rule holding endpoint-missing", []Finding{misdirected}, "shop/web:http", ep("10.244.3.4:8080"), "load-balance-skew"},
		{"a missing chain holding endpoint-missing", []Finding{dangling}, "shop/web:http", ep("10.244.3.4:8080"), "ruleset-invalid"},
		{"a missing chain holding endpoint-missing, another endpoint", []Finding{dangling}, "shop/web:http", ep("10.244.3.5:8080"), ""},
		{"an endpoint finding for an entry", []Finding{lag}, "shop/web:http", entry("ClusterIP 10.244.3.5 tcp/8080"), ""},
		{"Service not programmed", []Finding{missing}, "shop/sessions", entry("ClusterIP 10.96.10.30 tcp/8443"), "service-missing"},
		{"Service not programmed, IPv6", []Finding{missing6}, "shop/sessions", entry("ClusterIP fd00:96::30 tcp/8443"), "service-missing"},
		{"another entry of the Service", []Finding{missing}, "shop/sessions", entry("ClusterIP 10.96.10.31 tcp/8443"), ""},
		{"another protocol", []Finding{missing}, "shop/sessions", entry("ClusterIP 10.96.10.30 udp/8443"), ""},
		{"an entry finding for an endpoint", []Finding{missing}, "shop/sessions", ep("10.96.10.30:8443"), ""},
		{"node port", []Finding{nodePort}, "shop/front:http", entry("NodePort tcp/30080"), "nodeport-missing"},
		{"another Service", []Finding{missing}, "shop/other", entry("ClusterIP 10.96.10.30 tcp/8443"), ""},
		{"no finding", nil, "shop/sessions", entry("ClusterIP 10.96.10.30 tcp/8443"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := &FleetNode{res: &Result{Findings: tt.findings}}
			if got := explaining(n, tt.service, tt.elem); got != tt.want {
				t.Errorf("explaining(%s, %s) = %q, want %q", tt.service, tt.elem.label, got, tt.want)
			}
		})
	}
}

// TestComparePort: the elements some sides program and others do not,
// entries before endpoints, with the first side's element; sides not
// taking part and endpoints left out (noBackends) are not compared.
func TestComparePort(t *testing.T) {
	ep := func(label, src string) printElem {
		return printElem{key: "backend " + label, label: label, backend: true, evidence: []model.Evidence{{File: src}}}
	}
	entry := func(label, src string) printElem {
		return printElem{key: "entry " + label, label: label, evidence: []model.Evidence{{File: src}}}
	}
	a := []printElem{ep("10.0.0.1:80", "a"), ep("10.0.0.2:80", "a"), entry("ClusterIP 10.96.0.1 tcp/80", "a")}
	b := []printElem{ep("10.0.0.1:80", "b"), entry("ClusterIP 10.96.0.1 tcp/80", "b"), entry("NodePort tcp/30080", "b")}
	c := []printElem{ep("10.0.0.3:80", "c"), entry("NodePort tcp/30080", "c")}
	tests := []struct {
		name       string
		sets       [][]printElem
		have       []int
		noBackends bool
		want       []string
	}{
		{"two sides", [][]printElem{a, b}, []int{0, 1}, false, []string{
			"NodePort tcp/30080 from b in [1] out [0]",
			"10.0.0.2:80 from a in [0] out [1]",
		}},
		{"three nodes", [][]printElem{a, b, c}, []int{0, 1, 2}, false, []string{
			"ClusterIP 10.96.0.1 tcp/80 from a in [0 1] out [2]",
			"NodePort tcp/30080 from b in [1 2] out [0]",
			"10.0.0.1:80 from a in [0 1] out [2]",
			"10.0.0.2:80 from a in [0] out [1 2]",
			"10.0.0.3:80 from c in [2] out [0 1]",
		}},
		{"entries only", [][]printElem{a, b, c}, []int{0, 1, 2}, true, []string{
			"ClusterIP 10.96.0.1 tcp/80 from a in [0 1] out [2]",
			"NodePort tcp/30080 from b in [1 2] out [0]",
		}},
		{"a side without a view", [][]printElem{a, nil, a}, []int{0, 2}, false, nil},
		{"a side that programs nothing", [][]printElem{nil, c}, []int{0, 1}, false, []string{
			"NodePort tcp/30080 from c in [1] out [0]",
			"10.0.0.3:80 from c in [1] out [0]",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			comparePort(tt.sets, tt.have, tt.noBackends, func(e *printElem, in, out []int) {
				got = append(got, fmt.Sprintf("%s from %s in %v out %v", e.label, e.evidence[0].File, in, out))
			})
			if !slices.Equal(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
