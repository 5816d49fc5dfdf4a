package report

import (
	"encoding/json"

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
		if !ok || overlaps(out[i].NodeNames(), f.NodeNames()) {
			at[string(key)] = len(out)
			out = append(out, f)
			continue
		}
		g := &out[i]
		g.Nodes = append(append([]string(nil), g.NodeNames()...), f.NodeNames()...)
		ev := append([]model.Evidence(nil), g.Evidence...)
		for j := range ev {
			if ev[j].Line != f.Evidence[j].Line {
				ev[j].Line = 0
			}
		}
		g.Evidence = ev
	}
	return out
}

// overlaps reports whether two lists of nodes share one.
func overlaps(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}
