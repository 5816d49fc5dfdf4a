package checks

import (
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/load"
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
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		newNodePrint(s, f)
	}
}
