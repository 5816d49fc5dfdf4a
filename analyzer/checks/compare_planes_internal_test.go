package checks

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/model"
)

// TestComparePlaneOf: the walk of two sides' sorted elements gives the
// changes that comparePort, node-drift's comparison, gives over the same
// elements (for each service port by name, the elements only one side
// programs, entries first, then endpoints, each in key order; an element
// that one side programs twice counted once, with its first evidence), on
// random sides: ports on one side only, entries and endpoints that both,
// one or none of the sides program, in any order, some twice.
func TestComparePlaneOf(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	elem := func(backend bool, n, line int) printElem {
		ev := []model.Evidence{{File: "f", Line: line}}
		if backend {
			l := fmt.Sprintf("10.0.0.%d:80", n)
			return printElem{key: "backend " + l, label: l, backend: true, evidence: ev}
		}
		l := fmt.Sprintf("ClusterIP 10.96.0.%d tcp/80", n)
		return printElem{key: "entry " + l, label: l, evidence: ev}
	}
	for round := 0; round < 200; round++ {
		var sides [2]*Plane
		for i := range sides {
			sides[i] = &Plane{ports: map[string]*planePort{}}
		}
		for p := 0; p < 1+r.IntN(8); p++ {
			name := fmt.Sprintf("ns/svc-%d:http", r.IntN(10))
			for i, side := range sides {
				if r.IntN(5) == 0 {
					continue
				}
				pl := side.ports[name]
				if pl == nil {
					pl = &planePort{}
					side.ports[name] = pl
				}
				for e := 0; e < r.IntN(12); e++ {
					pl.elems = append(pl.elems, elem(r.IntN(2) == 0, r.IntN(6), 100*i+e))
				}
			}
		}
		// The reference: each side's elements made unique as the print's
		// are, compared by comparePort.
		var want []PlaneChange
		names := map[string]bool{}
		sets := [2]map[string][]printElem{{}, {}}
		for i, side := range sides {
			for name, pl := range side.ports {
				names[name] = true
				sets[i][name] = uniqueElems(append([]printElem(nil), pl.elems...), false)
			}
		}
		for _, name := range sortedKeys(names) {
			comparePort([][]printElem{sets[0][name], sets[1][name]}, []int{0, 1}, false, func(e *printElem, in, _ []int) {
				subject := strings.TrimPrefix(e.key, "entry ")
				if e.backend {
					subject = e.label
				}
				want = append(want, PlaneChange{Service: name, Backend: e.backend, Subject: subject, Old: in[0] == 0, Evidence: e.evidence})
			})
		}
		for _, side := range sides {
			for _, pl := range side.ports {
				pl.elems = sortedUnique(pl.elems)
			}
		}
		if got := ComparePlaneOf(sides[0], sides[1]); !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d:\ngot  %+v\nwant %+v", round, got, want)
		}
	}
}
