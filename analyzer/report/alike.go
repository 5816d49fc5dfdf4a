package report

import (
	"encoding/json"
	"slices"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/model"
)

// alikeOnNodes returns the findings as the table, markdown and HTML
// reports list them: the findings several nodes report alike (the same
// check, severity, service, message, objects, advice and evidence text,
// the lines in each node's dumps aside) as one, naming the nodes in the
// order they come, with the evidence's lines kept only where every node
// has them at the same line. A fleet of three hundred nodes that all
// lack one Service is one row, not three hundred; the JSON report keeps
// each node's finding with its own lines. Findings of one node only, and
// findings a node reports twice, are left as they are.
func alikeOnNodes(fs []checks.Finding) []checks.Finding {
	out := make([]checks.Finding, 0, len(fs))
	at := map[string]int{}
	// seen holds the nodes an entry of out names, once a finding was
	// considered for it; an entry in it has Nodes and Evidence of its
	// own (copies), so that merging never changes the report's findings.
	seen := map[int]map[string]bool{}
	for _, f := range fs {
		k := f
		k.Node, k.Nodes = "", nil
		k.Evidence = make([]model.Evidence, len(f.Evidence))
		for i, e := range f.Evidence {
			e.Line = 0
			k.Evidence[i] = e
		}
		key, err := json.Marshal(k)
		if err != nil || f.Node == "" {
			out = append(out, f)
			continue
		}
		i, ok := at[string(key)]
		if ok && seen[i] == nil {
			g := &out[i]
			names := map[string]bool{}
			for _, n := range g.NodeNames() {
				names[n] = true
			}
			seen[i] = names
			g.Nodes = append([]string(nil), g.NodeNames()...)
			g.Evidence = append([]model.Evidence(nil), g.Evidence...)
		}
		if !ok || slices.ContainsFunc(f.NodeNames(), func(n string) bool { return seen[i][n] }) {
			at[string(key)] = len(out)
			out = append(out, f)
			continue
		}
		g := &out[i]
		for _, n := range f.NodeNames() {
			g.Nodes = append(g.Nodes, n)
			seen[i][n] = true
		}
		for j := range g.Evidence {
			if g.Evidence[j].Line != f.Evidence[j].Line {
				g.Evidence[j].Line = 0
			}
		}
	}
	for i := range out {
		if len(out[i].Nodes) < 2 {
			// A finding of one node made ready to be merged into and
			// never merged names its node as before (Nodes, as in the
			// report, holds two nodes or more).
			out[i].Nodes = nil
		}
	}
	return out
}
