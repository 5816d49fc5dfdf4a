package proxier

import (
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/nft"
)

// benchNFTSnapshot loads the benchmark cluster with its nftables-mode
// configuration.
func benchNFTSnapshot(b *testing.B) *model.Snapshot {
	b.Helper()
	dir := b.TempDir()
	data := func(fn func(w *fileWriter) error) []byte {
		w := &fileWriter{}
		if err := fn(w); err != nil {
			b.Fatal(err)
		}
		return w.buf
	}
	writeFile(b, dir+"/cluster.json", data(func(w *fileWriter) error { return benchSpec.WriteJSON(w) }))
	writeFile(b, dir+"/config.yaml", benchSpec.NFTConfig())
	snaps, err := load.Load([]string{dir + "/cluster.json", dir + "/config.yaml"}, load.Options{Node: benchSpec.Node})
	if err != nil {
		b.Fatal(err)
	}
	return snaps[0]
}

// fileWriter collects what a benchgen writer writes.
type fileWriter struct{ buf []byte }

func (w *fileWriter) Write(p []byte) (int, error) { w.buf = append(w.buf, p...); return len(p), nil }

// BenchmarkExpectNFTables generates the nftables data plane (IPv4) of the
// benchmark cluster: the table written, parsed into the model and
// formatted as nft lists it.
func BenchmarkExpectNFTables(b *testing.B) {
	s := benchNFTSnapshot(b)
	opts := testOptions{Mode: model.ModeNFTables, Families: []model.Family{model.IPv4}}
	b.ReportAllocs()
	rules, elements := 0, 0
	for b.Loop() {
		dp, err := expectFor(s, opts)
		if err != nil {
			b.Fatal(err)
		}
		rules, elements = 0, 0
		for _, c := range dp.NFT.Tables[0].Chains {
			rules += len(c.Rules)
		}
		for _, st := range dp.NFT.Tables[0].Sets {
			elements += len(st.Elements)
		}
	}
	b.ReportMetric(float64(rules), "rules")
	b.ReportMetric(float64(elements), "elements")
}

// BenchmarkCompareNFTables compares the expected nftables data plane of
// the benchmark cluster with a capture equal to it (its listing parsed
// again, as a healthy node gives).
func BenchmarkCompareNFTables(b *testing.B) {
	s := benchNFTSnapshot(b)
	exp, err := expectFor(s, testOptions{Mode: model.ModeNFTables, Families: []model.Family{model.IPv4}})
	if err != nil {
		b.Fatal(err)
	}
	rs, err := nft.ParseText("node/nft-ruleset.txt", exp.Files[0].Data)
	if err != nil {
		b.Fatal(err)
	}
	act := &Dataplane{Mode: model.ModeNFTables, NFT: rs}
	b.ReportAllocs()
	for b.Loop() {
		if diffs := Compare(exp, act); len(diffs) != 0 {
			b.Fatalf("%d differences, first %+v", len(diffs), diffs[0])
		}
	}
}
