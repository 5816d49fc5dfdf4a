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
// shared cores: 114-141 ms, 28.0 MB and 256k allocations a print (from
// 146-220 ms, 36.6 MB and 401k when entry labels were formatted with
// fmt, a Service's evidence text formatted twice, and endpoints sorted
// after entries).
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
// nodes alike after the first is. On two shared cores (load 7): 55-117
// ms, 0.33 MB and 17 allocations an add (from 78-123 ms, 11.0 MB and
// 137k when each port's evidence was copied and its lines taken out
// before it was compared, the stored print encoded again to compare it,
// and each port's lines allocated before they were found stored).
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
// copied and stored.
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
