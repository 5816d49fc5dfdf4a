package iptables_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/proxyscan/proxyscan/internal/benchgen"
	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// BenchmarkJumps10k resolves the jumps of the nat table of a generated
// 10,000-Service dump (benchgen.Default, parsed from its text as analyze
// and trace read it, once per resolution): about 67,000 chains, most of
// whose rules jump to one of them.
func BenchmarkJumps10k(b *testing.B) {
	gen, err := benchgen.Default.IPTablesDump()
	if err != nil {
		b.Fatal(err)
	}
	data := iptables.Format(gen)
	b.ReportAllocs()
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		d, err := iptables.Parse("iptables-save.txt", data)
		if err != nil {
			b.Fatal(err)
		}
		tab := d.Table("nat")
		runtime.GC()
		cpu0 := benchgen.CPUTime()
		b.StartTimer()
		if _, ok := tab.Jumps().Target(tab.Chain("KUBE-SERVICES"), 0); !ok {
			b.Fatal("KUBE-SERVICES jumps to no chain")
		}
		cpu += benchgen.CPUTime() - cpu0
	}
	b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(b.N), "cpu-ms/op")
}
