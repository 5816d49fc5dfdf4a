package iptables_test

import (
	"testing"

	"github.com/proxyscan/proxyscan/internal/benchgen"
	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// BenchmarkMeanings reads every rule of a generated 10,000-Service dump
// (benchgen.Default) into its typed matches: the work the views and the
// tracer share.
func BenchmarkMeanings(b *testing.B) {
	var data []byte
	{
		d, err := benchgen.Default.IPTablesDump()
		if err != nil {
			b.Fatal(err)
		}
		data = iptables.Format(d)
	}
	b.ReportAllocs()
	rules, matches := 0, 0
	for b.Loop() {
		b.StopTimer()
		d, err := iptables.Parse("iptables-save.txt", data)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		rules, matches = 0, 0
		for _, t := range d.Tables {
			rd := t.Meanings()
			for _, c := range t.Chains {
				_, ms := rd.Chain(c)
				for i := range ms {
					rules++
					matches += len(rd.Det(&ms[i])) + len(rd.Fork(&ms[i]))
				}
			}
		}
	}
	b.ReportMetric(float64(rules), "rules/op")
	b.ReportMetric(float64(matches)/float64(rules), "matches/rule")
}
