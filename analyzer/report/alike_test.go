package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/model"
)

// TestAlikeOnNodes: the findings several nodes report alike, their lines
// aside, are listed once in the table, markdown and HTML reports, naming
// the nodes, with the lines every node shares; others are left alone.
func TestAlikeOnNodes(t *testing.T) {
	rule := func(line int) model.Evidence {
		return model.Evidence{File: "node/iptables-save.txt", Line: line, Text: ":KUBE-SERVICES - [0:0]"}
	}
	export := model.Evidence{File: "cluster/cluster.yaml", Line: 262, Text: "- port: 8443"}
	f := func(node, msg string, ev ...model.Evidence) checks.Finding {
		return checks.Finding{Check: "service-missing", Severity: checks.Error, Service: "shop/sessions", Node: node, Message: msg, Evidence: ev}
	}
	tests := []struct {
		name string
		in   []checks.Finding
		// each finding listed: "message @nodes lines"
		want []string
	}{
		{"three nodes, the rule at other lines", []checks.Finding{
			f("a", "missing", rule(73), export), f("b", "missing", rule(80), export), f("c", "missing", rule(73), export),
		}, []string{"missing @a,b,c 0,262"}},
		{"same lines", []checks.Finding{
			f("a", "missing", rule(73), export), f("b", "missing", rule(73), export),
		}, []string{"missing @a,b 73,262"}},
		{"other messages", []checks.Finding{
			f("a", "missing", rule(73)), f("b", "missing too", rule(73)),
		}, []string{"missing @a 73", "missing too @b 73"}},
		{"other evidence text", []checks.Finding{
			f("a", "missing", rule(73)), f("b", "missing", model.Evidence{File: "node/iptables-save.txt", Line: 73, Text: "other"}),
		}, []string{"missing @a 73", "missing @b 73"}},
		{"one node twice", []checks.Finding{
			f("a", "missing", rule(73)), f("a", "missing", rule(90)),
		}, []string{"missing @a 73", "missing @a 90"}},
		{"a shared finding and a node's own", []checks.Finding{
			{Check: "config-invalid", Severity: checks.Error, Node: "a", Nodes: []string{"a", "b"}, Message: "bad", Evidence: []model.Evidence{export}},
			{Check: "config-invalid", Severity: checks.Error, Node: "c", Message: "bad", Evidence: []model.Evidence{export}},
		}, []string{"bad @a,b,c 262"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before []string
			for _, x := range tt.in {
				before = append(before, fmt.Sprint(x.Node, x.Nodes, x.Evidence))
			}
			var got []string
			for _, x := range alikeOnNodes(tt.in) {
				var lines []string
				for _, e := range x.Evidence {
					lines = append(lines, fmt.Sprint(e.Line))
				}
				got = append(got, x.Message+" @"+strings.Join(x.NodeNames(), ",")+" "+strings.Join(lines, ","))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			for i, x := range tt.in {
				if after := fmt.Sprint(x.Node, x.Nodes, x.Evidence); after != before[i] {
					t.Errorf("finding %d was changed: %s, was %s", i, after, before[i])
				}
			}
		})
	}

	// Rendered: one row naming the nodes, the rule without a line.
	var nodes []NodeReport
	var fs []checks.Finding
	for i := range 5 {
		name := fmt.Sprintf("n%d", i)
		nodes = append(nodes, NodeReport{Node: name})
		fs = append(fs, f(name, "no entry for cluster IP 10.96.10.30:8443/tcp", rule(70+i), export))
	}
	r := &Report{Nodes: nodes, Findings: fs}
	for format, want := range map[string][]string{
		"table":    {"(1 entry below: what several nodes report alike is one)", "n0 +4 more", "nodes n0, n1, n2 and 2 more nodes · service-missing", "    node/iptables-save.txt\n", "cluster/cluster.yaml:262"},
		"markdown": {"on nodes `n0, n1, n2 and 2 more nodes`"},
		"html":     {"n0, n1, n2 and 2 more nodes"},
	} {
		var b bytes.Buffer
		if err := Render(&b, format, r, Options{Width: 200}); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(b.String(), "no entry for cluster IP 10.96.10.30:8443/tcp"); n != 2 && format == "table" || n != 1 && format == "markdown" {
			t.Errorf("%s: the finding is written %d times:\n%s", format, n, b.String())
		}
		for _, w := range want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: no %q in:\n%s", format, w, b.String())
			}
		}
	}
}
