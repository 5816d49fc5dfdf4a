package checks

import (
	"path/filepath"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestPrintsShared: nodes that program their service ports alike, with the
// same evidence, share the prints of those ports, so a fleet of like nodes
// keeps one copy; a node whose dump differs (node-c's rules, at other
// lines) has its own.
func TestPrintsShared(t *testing.T) {
	root := filepath.Join(parsetest.Root(t), "testdata", "fleet", "nodes")
	ps := NewPrints()
	var nodes []*FleetNode
	for _, n := range []string{"node-a", "node-a", "node-c"} {
		snaps, err := load.Load([]string{filepath.Join(root, n)}, load.Options{Compact: true})
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, AnalyzeNode(snaps[0], All, ps))
	}
	a, a2, c := nodes[0].print, nodes[1].print, nodes[2].print
	if len(a.ports) == 0 || len(a.ports) != len(a2.ports) {
		t.Fatalf("%d and %d ports", len(a.ports), len(a2.ports))
	}
	for i := range a.ports {
		if a.ports[i] != a2.ports[i] {
			t.Errorf("%s: two copies of one node hold two prints", a.ports[i].service)
		}
	}
	stored := 0
	for _, list := range ps.ports {
		stored += len(list)
	}
	shared, own := 0, 0
	for _, pp := range c.ports {
		if x := a.port(pp.service); x == pp {
			shared++
		} else {
			own++
			if pp.service == "shop/web:http" && x != nil && pp.elem("backend 10.244.3.4:8080") == nil {
				t.Errorf("node-c's print of shop/web:http lacks its stale endpoint")
			}
		}
	}
	if own == 0 || stored != len(a.ports)+own {
		t.Errorf("node-c shares %d prints and has %d of its own; %d stored for %d ports of node-a", shared, own, stored, len(a.ports))
	}
}
