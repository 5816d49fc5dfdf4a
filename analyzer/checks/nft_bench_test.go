package checks_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/internal/benchgen"
	"github.com/proxyscan/proxyscan/internal/nftjson"
	"github.com/proxyscan/proxyscan/parsers/nft"
)

// nftBenchSnapshot loads a generated nftables-mode node of spec, its
// ruleset as nft lists it (form "txt") or as nft -j lists it ("json").
func nftBenchSnapshot(tb testing.TB, spec benchgen.Spec, form string) *model.Snapshot {
	tb.Helper()
	dir := tb.TempDir()
	var rules bytes.Buffer
	if err := spec.NFTRuleset(&rules); err != nil {
		tb.Fatal(err)
	}
	listing := rules.Bytes()
	if form == "json" {
		rs, err := nft.ParseText("nft-ruleset.txt", listing)
		if err != nil {
			tb.Fatal(err)
		}
		listing = nftjson.Format(rs)
	}
	var cluster bytes.Buffer
	if err := spec.WriteJSON(&cluster); err != nil {
		tb.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"node/nft-ruleset." + form: listing,
		"cluster/cluster.json":     cluster.Bytes(),
		"kube-proxy/config.yaml":   spec.NFTConfig(),
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	snaps, err := load.Load([]string{dir}, load.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return snaps[0]
}

// TestNFTBenchInputIsClean checks that a small generated nftables node
// analyses clean, in both forms: the benchmarks walk every service.
func TestNFTBenchInputIsClean(t *testing.T) {
	spec := benchgen.Spec{Services: 300, Endpoints: 1500, NodePortEvery: 4, Node: "bench-node-1"}
	for _, form := range []string{"txt", "json"} {
		s := nftBenchSnapshot(t, spec, form)
		res := checks.Run(s, checks.All)
		if res.Mode != model.ModeNFTables {
			t.Fatalf("%s: mode %s", form, res.Mode)
		}
		for _, f := range res.Findings {
			t.Errorf("%s: %s: %s", form, f.Check, f.Message)
		}
	}
}

// BenchmarkChecksNFT runs every check (the nftables views included) on a
// loaded 10,000-service nftables-mode snapshot.
func BenchmarkChecksNFT(b *testing.B) {
	for _, form := range []string{"txt", "json"} {
		b.Run(form, func(b *testing.B) {
			s := nftBenchSnapshot(b, benchgen.Default, form)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if r := checks.Run(s, checks.All); len(r.Findings) != 0 {
					b.Fatalf("%d findings, first %+v", len(r.Findings), r.Findings[0])
				}
			}
		})
	}
}
