package proxier

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/internal/benchgen"
	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// benchSpec is the benchmark cluster: 10,000 Services, 60,000 endpoints,
// a NodePort in every fourth Service.
var benchSpec = benchgen.Spec{Services: 10000, Endpoints: 60000, NodePortEvery: 4, Node: "bench-node-1"}

// benchSnapshot loads the generated cluster with the iptables-save dump
// benchgen writes for it.
func benchSnapshot(b testing.TB) *model.Snapshot { return specSnapshot(b, benchSpec) }

// specSnapshot loads the cluster of a spec with the iptables-save dump
// benchgen writes for it.
func specSnapshot(b testing.TB, benchSpec benchgen.Spec) *model.Snapshot {
	b.Helper()
	dir := b.TempDir()
	write := func(name string, fn func(*os.File) error) string {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		if err := fn(f); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		return p
	}
	paths := []string{
		write("iptables-save.txt", func(f *os.File) error { return benchSpec.IPTablesSave(f) }),
		write("cluster.json", func(f *os.File) error { return benchSpec.WriteJSON(f) }),
		write("config.yaml", func(f *os.File) error { _, err := f.Write(benchSpec.Config()); return err }),
	}
	snaps, err := load.Load(paths, load.Options{Node: benchSpec.Node})
	if err != nil {
		b.Fatal(err)
	}
	return snaps[0]
}

// BenchmarkExpectIPTables generates the iptables data plane (IPv4) of the
// benchmark cluster: rules written, canonicalised, and parsed back.
func BenchmarkExpectIPTables(b *testing.B) {
	s := benchSnapshot(b)
	opts := testOptions{Mode: model.ModeIPTables, Families: []model.Family{model.IPv4}}
	b.ReportAllocs()
	rules := 0
	for b.Loop() {
		dp, err := expectFor(s, opts)
		if err != nil {
			b.Fatal(err)
		}
		rules = dp.IPTables[0].NumRules()
	}
	b.ReportMetric(float64(rules), "rules")
}

// BenchmarkExpectIPTablesText generates the text of the iptables data
// plane (IPv4) of the benchmark cluster, as expect prints it: rules
// written and canonicalised, not parsed back.
func BenchmarkExpectIPTablesText(b *testing.B) {
	s := benchSnapshot(b)
	r := resolve.Resolve(s, resolve.Options{Mode: model.ModeIPTables})
	b.ReportAllocs()
	size := 0
	cpu := benchgen.CPUTime()
	for b.Loop() {
		dp, err := Expect(r, Options{Families: []model.Family{model.IPv4}, TextOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		size = len(dp.Files[0].Data)
	}
	b.ReportMetric(float64(size)/(1<<20), "MB")
	b.ReportMetric((benchgen.CPUTime()-cpu).Seconds()/float64(b.N), "cpu-s/op")
}

// BenchmarkCompareIPTables compares the expected data plane of the
// benchmark cluster with a capture equal to it (a separately parsed copy,
// as a healthy node gives): every rule of every chain is canonicalised and
// matched.
func BenchmarkCompareIPTables(b *testing.B) {
	s := benchSnapshot(b)
	exp, err := expectFor(s, testOptions{Mode: model.ModeIPTables, Families: []model.Family{model.IPv4}})
	if err != nil {
		b.Fatal(err)
	}
	d, err := iptables.Parse("node/iptables-save.txt", exp.Files[0].Data)
	if err != nil {
		b.Fatal(err)
	}
	d.Family = iptables.IPv4
	act := &Dataplane{Mode: model.ModeIPTables, IPTables: []*iptables.Dump{d}}
	b.ReportAllocs()
	for b.Loop() {
		if diffs := Compare(exp, act); len(diffs) != 0 {
			b.Fatalf("%d differences, first %+v", len(diffs), diffs[0])
		}
	}
}
