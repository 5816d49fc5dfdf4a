package report

import (
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/model"
)

// TestMergeClusterScope lists once the findings nodes report alike from
// the cluster objects and configuration, and only those.
func TestMergeClusterScope(t *testing.T) {
	inputs := []model.Input{
		{Path: "cluster/cluster.yaml", Kind: "kube-objects"},
		{Path: "kube-proxy/config.yaml", Kind: "kube-proxy-config"},
		{Path: "node/iptables-save.txt", Kind: "iptables-save"},
	}
	export := model.Evidence{File: "cluster/cluster.yaml", Line: 12, Text: "clusterIP: 10.96.10.30"}
	config := model.Evidence{File: "kube-proxy/config.yaml", Line: 3, Text: "mode: ipvs"}
	rules := model.Evidence{File: "node/iptables-save.txt", Line: 73, Text: ":KUBE-SERVICES - [0:0]"}
	f := func(check, msg string, ev ...model.Evidence) checks.Finding {
		return checks.Finding{Check: check, Severity: checks.Warning, Message: msg, Evidence: ev}
	}
	tests := []struct {
		name string
		// per node, its findings
		nodes [][]checks.Finding
		// each finding listed: message and the nodes it names
		want []string
	}{
		{"one cause on three nodes", [][]checks.Finding{
			{f("clusterip-outside-servicecidr", "outside", export)},
			{f("clusterip-outside-servicecidr", "outside", export)},
			{f("clusterip-outside-servicecidr", "outside", export)},
		}, []string{"outside @n0 [n0 n1 n2]"}},
		{"configuration and export together", [][]checks.Finding{
			{f("config-invalid", "bad", config, export)},
			{f("config-invalid", "bad", config, export)},
		}, []string{"bad @n0 [n0 n1]"}},
		{"the data plane is the node's own", [][]checks.Finding{
			{f("service-missing", "missing", export, rules)},
			{f("service-missing", "missing", export, rules)},
		}, []string{"missing @n0 []", "missing @n1 []"}},
		{"no evidence", [][]checks.Finding{
			{f("kube-proxy-unhealthy", "down")},
			{f("kube-proxy-unhealthy", "down")},
		}, []string{"down @n0 []", "down @n1 []"}},
		{"different text", [][]checks.Finding{
			{f("clusterip-outside-servicecidr", "outside: a", export)},
			{f("clusterip-outside-servicecidr", "outside: b", export)},
		}, []string{"outside: a @n0 []", "outside: b @n1 []"}},
		{"different evidence", [][]checks.Finding{
			{f("config-invalid", "bad", config)},
			{f("config-invalid", "bad", model.Evidence{File: config.File, Line: 4, Text: config.Text})},
		}, []string{"bad @n0 []", "bad @n1 []"}},
		{"two of three nodes", [][]checks.Finding{
			{f("config-invalid", "bad", config)},
			{},
			{f("config-invalid", "bad", config), f("config-invalid", "worse", config)},
		}, []string{"bad @n0 [n0 n2]", "worse @n2 []"}},
		{"a cross-node check's finding naming the nodes alike, each with its own rules", [][]checks.Finding{
			{f("node-drift", "programmed on n2 but not on n0 and n1", rules, export)},
			{f("node-drift", "programmed on n2 but not on n0 and n1", model.Evidence{File: rules.File, Line: 80, Text: rules.Text}, export)},
			{},
		}, []string{"programmed on n2 but not on n0 and n1 @n0 [n0 n1]"}},
		{"a cross-node check's findings that differ", [][]checks.Finding{
			{f("node-drift", "mode is ipvs on n0 but iptables on n1", config)},
			{f("node-drift", "mode is iptables on n1 but ipvs on n0", config)},
		}, []string{"mode is ipvs on n0 but iptables on n1 @n0 []", "mode is iptables on n1 but ipvs on n0 @n1 []"}},
		{"one node", [][]checks.Finding{
			{f("clusterip-outside-servicecidr", "outside", export)},
		}, []string{"outside @n0 []"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var nodes []*Node
			for i, fs := range tt.nodes {
				name := "n" + string(rune('0'+i))
				for j := range fs {
					fs[j].Node = name
				}
				nodes = append(nodes, &Node{Name: name, Inputs: inputs, Result: &checks.Result{Findings: fs}})
			}
			var got []string
			for _, x := range mergeClusterScope(nodes) {
				got = append(got, x.Message+" @"+x.Node+" ["+strings.Join(x.Nodes, " ")+"]")
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			for _, n := range nodes {
				for _, x := range n.Result.Findings {
					if x.Nodes != nil {
						t.Errorf("the node's own finding was changed: %+v", x)
					}
				}
			}
		})
	}
}
