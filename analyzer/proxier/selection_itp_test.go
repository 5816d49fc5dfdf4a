package proxier_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/proxier"
)

// TestInternalTrafficPolicyGate checks that a Service of
// internalTrafficPolicy Local is selected as a Cluster one where kube-proxy
// does not honour the field: 1.24 and 1.25 with ServiceInternalTrafficPolicy
// off, whose service tracker (newBaseServiceInfo) reads the policy only
// with the gate on, in iptables mode and in IPVS mode alike. With the gate
// on, and from 1.26 (where it can no longer be turned off), the field holds:
// iptables drops when the node has no local endpoint, and IPVS falls back
// to the Cluster endpoints (#97081), which CategorizeEndpoints leaves empty
// for a port only reached under the Local policy: an empty virtual server.
func TestInternalTrafficPolicyGate(t *testing.T) {
	both := []ep{
		{addr: "10.0.0.1:80", ready: true, serving: true, local: true},
		{addr: "10.0.0.2:80", ready: true, serving: true},
	}
	remote := []ep{{addr: "10.0.0.2:80", ready: true, serving: true}}
	off := map[string]bool{"ServiceInternalTrafficPolicy": false}
	on := map[string]bool{"ServiceInternalTrafficPolicy": true}
	cases := []struct {
		name   string
		minors []int
		gates  map[string]bool
		mode   string
		eps    []ep
		policy proxier.Policy
		route  string // the internal route's endpoints, or its verdict
	}{
		{"gate off, iptables", []int{24, 25}, off, model.ModeIPTables, both, proxier.PolicyCluster, "10.0.0.1:80 10.0.0.2:80"},
		{"gate off, ipvs", []int{24, 25}, off, model.ModeIPVS, both, proxier.PolicyCluster, "10.0.0.1:80 10.0.0.2:80"},
		{"gate off, iptables, remote only", []int{24, 25}, off, model.ModeIPTables, remote, proxier.PolicyCluster, "10.0.0.2:80"},
		{"gate off, ipvs, remote only", []int{24, 25}, off, model.ModeIPVS, remote, proxier.PolicyCluster, "10.0.0.2:80"},
		{"gate on, iptables", []int{24, 25}, on, model.ModeIPTables, both, proxier.PolicyLocal, "10.0.0.1:80"},
		{"gate on, ipvs", []int{24, 25}, on, model.ModeIPVS, both, proxier.PolicyLocal, "10.0.0.1:80"},
		{"gate on, iptables, remote only", []int{24, 25}, on, model.ModeIPTables, remote, proxier.PolicyLocal, "drop"},
		{"gate on, ipvs, remote only", []int{24, 25}, on, model.ModeIPVS, remote, proxier.PolicyCluster, "reject"},
		{"default, iptables", []int{24, 26, 37}, nil, model.ModeIPTables, both, proxier.PolicyLocal, "10.0.0.1:80"},
		{"default, nftables", []int{31, 37}, nil, model.ModeNFTables, remote, proxier.PolicyLocal, "drop"},
		{"gate off ignored from 1.26, ipvs", []int{26, 27}, off, model.ModeIPVS, both, proxier.PolicyLocal, "10.0.0.1:80"},
	}
	for _, c := range cases {
		sc := selectionCase{svc: svcSpec{internalLocal: true}, eps: c.eps}
		sp := sc.servicePort(t)
		for _, minor := range c.minors {
			t.Run(fmt.Sprintf("%s/1.%d", c.name, minor), func(t *testing.T) {
				sel := proxier.SelectEndpoints(nodeResolution(minor, c.gates, ""), c.mode, sp, model.IPv4)
				if sel.SP != sp {
					t.Errorf("selection names another service port than the one asked for")
				}
				if sel.Internal.Policy != c.policy {
					t.Errorf("internal policy %v, want %v", sel.Internal.Policy, c.policy)
				}
				if got := routeText(sel.Internal); got != c.route {
					t.Errorf("internal route %q, want %q", got, c.route)
				}
			})
		}
	}
}

// routeText is a route's endpoints ("IP:port" sorted, space separated),
// or "drop" or "reject" when it forwards nowhere.
func routeText(r proxier.Route) string {
	switch r.Verdict {
	case proxier.Drop:
		return "drop"
	case proxier.Reject:
		return "reject"
	}
	var out []string
	for _, e := range r.Endpoints {
		out = append(out, e.String())
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}
