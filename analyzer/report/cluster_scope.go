package report

import (
	"encoding/json"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/parsers"
)

// clusterKinds are the kinds of input that describe the cluster (its
// objects, kube-proxy's configuration) rather than a node's data plane.
var clusterKinds = map[parsers.Kind]bool{parsers.KindKube: true, parsers.KindKubeProxyConfig: true}

// clusterScoped reports whether a finding is judged from the cluster's
// objects and kube-proxy's configuration alone: it has evidence, and every
// piece of it is in an input of those kinds (kinds maps a node's input
// paths to their kinds).
func clusterScoped(f *checks.Finding, kinds map[string]parsers.Kind) bool {
	if len(f.Evidence) == 0 {
		return false
	}
	for _, e := range f.Evidence {
		if !clusterKinds[kinds[e.File]] {
			return false
		}
	}
	return true
}

// crossNode reports whether the check of that ID compares nodes.
func crossNode(id string) bool {
	c := checks.ByID(id)
	return c != nil && c.RunFleet != nil
}

// mergeClusterScope lists once the findings that several nodes report
// alike from the cluster objects and configuration they share (the same
// check, severity, message, objects and evidence, the node aside), and
// the findings of a cross-node check that name several nodes alike (the
// same but for the evidence, each node's own: the first node's is kept):
// the finding keeps the first node's name in Node and names every such
// node, in the order of the nodes, in Nodes. Other findings are kept as
// they are, in their order.
func mergeClusterScope(nodes []*Node) []checks.Finding {
	var out []checks.Finding
	at := map[string]int{}
	for _, n := range nodes {
		kinds := map[string]parsers.Kind{}
		for _, in := range n.Inputs {
			kinds[in.Path] = in.Kind
		}
		for _, f := range n.Result.Findings {
			fleet := crossNode(f.Check)
			if len(nodes) < 2 || !fleet && !clusterScoped(&f, kinds) {
				out = append(out, f)
				continue
			}
			k := f
			k.Node, k.Nodes = "", nil
			if fleet {
				k.Evidence = nil
			}
			key, err := json.Marshal(k)
			if err != nil {
				out = append(out, f)
				continue
			}
			if i, ok := at[string(key)]; ok {
				out[i].Nodes = append(out[i].Nodes, f.Node)
				continue
			}
			at[string(key)] = len(out)
			f.Nodes = []string{f.Node}
			out = append(out, f)
		}
	}
	for i := range out {
		if len(out[i].Nodes) < 2 {
			out[i].Nodes = nil
		}
	}
	return out
}
