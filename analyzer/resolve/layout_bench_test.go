package resolve_test

import (
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/internal/benchgen"
	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// BenchmarkRecognizeLayout10k reads the rule layout off the dump of a
// generated 10,000-Service node (parsed once): every rule of its nat
// table is looked at, since a current layout has none of the old traits.
// cpu-ms/op, the process's CPU time, varies less than ns/op on a busy
// machine.
func BenchmarkRecognizeLayout10k(b *testing.B) {
	d, err := benchgen.Default.IPTablesDump()
	if err != nil {
		b.Fatal(err)
	}
	s := &model.Snapshot{IPTables: []*iptables.Dump{d}}
	b.ReportAllocs()
	cpu0 := benchgen.CPUTime()
	for b.Loop() {
		if l := resolve.RecognizeLayout(s); l == nil || l.Old() {
			b.Fatalf("layout %v", l)
		}
	}
	b.ReportMetric(float64((benchgen.CPUTime()-cpu0).Microseconds())/1e3/float64(b.N), "cpu-ms/op")
}
