package checks

import (
	"testing"
	"time"

	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/internal/benchgen"
)

// BenchmarkNodePrint builds the print of a generated node of 10,000
// Services (go test -bench NodePrint -run '^$' ./analyzer/checks), part
// of what a node of a fleet costs beyond its analysis alone. On two
// shared cores (load 2.9-4.7, medians of six runs): 0.044 CPU-seconds
// (46 ms), 18.2 MB and 0.85k allocations a print, its endpoints'
// evidence left for Prints.add to read (from 0.143 CPU-seconds, 143 ms,
// 26.8 MB and 236k when it read that evidence into a slice per
// endpoint, made each element's key, each port's elements and each
// Service's evidence text allocations of their own, kept its ports in a
// map, and searched each port's endpoints for each element; earlier
// 146-220 ms, 36.6 MB and 401k when entry labels were formatted with
// fmt).
func BenchmarkNodePrint(b *testing.B) {
	s, f := analysedBenchNode(b)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchgen.CPUTime()
	for b.Loop() {
		newNodePrint(s, f)
	}
	b.ReportMetric((benchgen.CPUTime()-cpu).Seconds()/float64(b.N), "cpu-s/op")
}

// BenchmarkPrintsAdd adds the print of a generated node of 10,000
// Services to a fleet's prints that hold it already (go test -bench
// PrintsAdd -run '^$' ./analyzer/checks), as each node of a fleet of
// nodes alike after the first is. On two shared cores (load 2.9-4.7,
// medians of six runs): 0.029 CPU-seconds (29 ms), 0.33 MB and 17
// allocations an add, which reads the endpoints' evidence and compares
// each port with the port's first print before encoding it (from 0.039
// CPU-seconds, 38 ms, when the print was built with its evidence read
// and each port was encoded and hashed; earlier 78-123 ms, 11.0 MB and
// 137k when each port's evidence was copied and its lines taken out
// before it was compared).
func BenchmarkPrintsAdd(b *testing.B) {
	s, f := analysedBenchNode(b)
	ps := NewPrints()
	ps.add(newNodePrint(s, f))
	b.ReportAllocs()
	b.ResetTimer()
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		np := newNodePrint(s, f)
		b.StartTimer()
		cpu0 := benchgen.CPUTime()
		ps.add(np)
		cpu += benchgen.CPUTime() - cpu0
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}

// BenchmarkPrintsStore adds the print of a generated node of 10,000
// Services to empty prints (go test -bench PrintsStore -run '^$'
// ./analyzer/checks), as a fleet's first node is: each port's print is
// copied and stored. On two shared cores (load 2.9-4.7, six runs):
// 0.08-0.15 CPU-seconds (median 0.10), 46.6 MB and 73k allocations,
// reading the endpoints' evidence and copying each port's print, which
// the print's building did before (from 0.08-0.11, median 0.09, 45.6 MB
// and 151k with a slice per element's evidence copied).
func BenchmarkPrintsStore(b *testing.B) {
	s, f := analysedBenchNode(b)
	b.ReportAllocs()
	b.ResetTimer()
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		np, ps := newNodePrint(s, f), NewPrints()
		b.StartTimer()
		cpu0 := benchgen.CPUTime()
		ps.add(np)
		cpu += benchgen.CPUTime() - cpu0
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}

// analysedBenchNode loads the generated benchmark node (benchgen.Default)
// and runs every check on it: what a node's print is built from.
func analysedBenchNode(b *testing.B) (*model.Snapshot, *facts) {
	b.Helper()
	dir := b.TempDir()
	if err := benchgen.Default.WriteBundle(dir); err != nil {
		b.Fatal(err)
	}
	snaps, err := load.Load([]string{dir}, load.Options{Compact: true})
	if err != nil {
		b.Fatal(err)
	}
	s := snaps[0]
	f := newFacts(s, All)
	run(s, f, All)
	return s, f
}
