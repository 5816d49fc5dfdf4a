package cmd

import (
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/report"
	"github.com/proxyscan/proxyscan/internal/benchgen"
	"github.com/proxyscan/proxyscan/internal/benchgen/fleetreports"
)

// liveNodeBound is the most a node alike to the others may keep live once
// a fleet is analysed, its report not yet written: its summary (a name,
// its bundle's path, pointers to the values it shares with the others)
// and its place in the list of nodes. What nodes alike have alike
// (inputs, notes, checklist, check results) is kept once.
const liveNodeBound = 768

// liveHeap returns the bytes of the heap that are live after f, holding
// what f returns, and before it, once each is collected.
func liveHeap(f func() any) (before, after uint64) {
	// Two collections: the first moves what sync.Pools hold to their
	// victim caches, the second frees it.
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	before = m.HeapAlloc
	v := f()
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	runtime.KeepAlive(v)
	return before, m.HeapAlloc
}

// liveFleet returns what analysing the first n of paths keeps live: the
// least of three runs, as what else the process allocates meanwhile (the
// test runner, other goroutines' garbage not yet swept) only adds to it.
func liveFleet(t testing.TB, paths []string, n int, fo *fleetOptions) uint64 {
	t.Helper()
	least := uint64(math.MaxUint64)
	for range 3 {
		before, after := liveHeap(func() any {
			sums, drift, err := analyzeFleet(paths[:n], fo)
			if err != nil {
				t.Fatal(err)
			}
			if len(sums) != n || drift == nil {
				t.Fatalf("%d nodes, drift %v", len(sums), drift)
			}
			return []any{sums, drift}
		})
		least = min(least, max(after, before)-before)
	}
	return least
}

// TestFleetLiveBytesPerNode analyses fleets of nodes alike, from their
// bundles and from their node reports, of 20 then 120 nodes: what each
// node beyond the first 20 keeps live, its report not yet written, stays
// within liveNodeBound.
func TestFleetLiveBytesPerNode(t *testing.T) {
	const small, large = 20, 120
	spec := benchgen.Spec{Services: 20, Endpoints: 110, NodePortEvery: 4}
	for _, tc := range []struct {
		name  string
		write func(dir string) error
	}{
		{"bundles", func(dir string) error { return spec.WriteFleet(dir, large) }},
		{"node reports", func(dir string) error {
			return fleetreports.Write(spec, dir, large, report.Tool{Name: "proxyscan", Version: reportVersion})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := tc.write(dir); err != nil {
				t.Fatal(err)
			}
			var paths []string
			for i := 1; i <= large; i++ {
				paths = append(paths, filepath.Join(dir, fmt.Sprintf("node-%04d", i)))
			}
			fo := &fleetOptions{load: load.Options{Compact: true}, checks: checks.All, jobs: 2, version: reportVersion}
			liveFleet(t, paths, small, fo) // what the first run sets up once
			a := liveFleet(t, paths, small, fo)
			b := liveFleet(t, paths, large, fo)
			per := (float64(b) - float64(a)) / (large - small)
			t.Logf("live: %d nodes %d bytes, %d nodes %d bytes: %.0f bytes per node", small, a, large, b, per)
			if per > liveNodeBound {
				t.Errorf("each node alike keeps %.0f bytes live, want at most %d", per, liveNodeBound)
			}
		})
	}
}
