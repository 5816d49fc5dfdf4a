package checks

import (
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestPrintsShared: nodes that program their service ports alike share the
// prints of those ports, whatever the lines of the rules in their dumps
// (node-c's rules are at other lines than node-a's), so a fleet of like
// nodes keeps one copy; a port that a node programs differently has its own
// print there; the lines of each node's evidence are its own.
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
			// Its own print keeps the texts it has alike with the
			// port's first print once.
			if x != nil && len(x.elems) > 0 {
				e := x.elems[0]
				if own := pp.elem(e.key); own != nil && own.label == e.label && unsafe.StringData(own.label) != unsafe.StringData(e.label) {
					t.Errorf("%s: the label %s is kept twice", pp.service, e.label)
				}
			}
		}
	}
	if shared == 0 || own == 0 || stored != len(a.ports)+own {
		t.Errorf("node-c shares %d prints and has %d of its own; %d stored for %d ports of node-a", shared, own, stored, len(a.ports))
	}
	// The evidence of a shared print is at each node's own lines.
	for _, pp := range c.ports {
		if a.port(pp.service) != pp || len(pp.elems) == 0 {
			continue
		}
		la, lc := a.full(pp.service).elems[0].evidence[0].Line, c.full(pp.service).elems[0].evidence[0].Line
		if la == 0 || lc == 0 || la == lc {
			t.Errorf("%s: lines %d on node-a and %d on node-c", pp.service, la, lc)
		}
		break
	}
}
