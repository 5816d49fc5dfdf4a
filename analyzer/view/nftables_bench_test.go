package view_test

import (
	"bytes"
	"testing"

	"github.com/google/nftables"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/view"
	"github.com/proxyscan/proxyscan/internal/benchgen"
	"github.com/proxyscan/proxyscan/internal/nftjson"
	"github.com/proxyscan/proxyscan/parsers/nft"
)

// BenchmarkFromNFT builds the view of a generated 10,000-service
// nftables ruleset (parsed once, from its text and its JSON listing).
func BenchmarkFromNFT(b *testing.B) {
	spec := benchgen.Default
	var rules bytes.Buffer
	if err := spec.NFTRuleset(&rules); err != nil {
		b.Fatal(err)
	}
	attr := benchAttribution(b, spec, model.BuildOptions{NodeName: spec.Node, HonourIPMode: true})
	txt, err := nft.ParseText("nft-ruleset.txt", rules.Bytes())
	if err != nil {
		b.Fatal(err)
	}
	js, err := nft.ParseJSON("nft-ruleset.json", nftjson.Format(txt))
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		rs   *nft.Ruleset
	}{{"txt", txt}, {"json", js}} {
		b.Run(tc.name, func(b *testing.B) {
			t := tc.rs.Table(nftables.TableFamilyIPv4, "kube-proxy")
			b.ReportAllocs()
			for b.Loop() {
				v := view.FromNFT(t, attr)
				if len(v.Entries) != spec.Services+spec.Services/spec.NodePortEvery {
					b.Fatalf("%d entries", len(v.Entries))
				}
			}
		})
	}
}
