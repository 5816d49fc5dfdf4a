package proxier

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/nft"
)

// FuzzCompareNFT checks that comparing an expected nftables data plane
// with any listing the parser accepts never panics, that every difference
// names its kind, family and evidence, and that the expected listing
// itself compares clean.
func FuzzCompareNFT(f *testing.F) {
	listing, _ := os.ReadFile(filepath.Join("..", "..", "testdata", "bundles", "nftables-healthy", "node", "nft-ruleset.txt"))
	f.Add(listing)
	f.Add([]byte("table ip kube-proxy {\n\tmap service-ips {\n\t\ttype ipv4_addr . inet_proto . inet_service : verdict\n\t\telements = { 10.0.0.1 . tcp . 80 : goto service-AAAAAAAA-a/b/tcp/c }\n\t}\n\n\tchain service-AAAAAAAA-a/b/tcp/c {\n\t\tmeta l4proto tcp dnat to 10.1.0.1:80\n\t}\n}\n"))
	snaps, err := load.Load([]string{filepath.Join("..", "..", "testdata", "bundles", "nftables-healthy")}, load.Options{})
	if err != nil || len(snaps) != 1 {
		f.Fatalf("loading the bundle: %v", err)
	}
	exp, err := expectFor(snaps[0], testOptions{})
	if err != nil {
		f.Fatal(err)
	}
	self, err := nft.ParseText("self", exp.Files[0].Data)
	if err != nil {
		f.Fatal(err)
	}
	if diffs := Compare(exp, &Dataplane{Mode: model.ModeNFTables, NFT: self}); len(diffs) != 0 {
		f.Fatalf("the expected listing compares with %d differences", len(diffs))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := nft.ParseText("fuzz", data)
		if err != nil {
			return
		}
		for _, d := range Compare(exp, &Dataplane{Mode: model.ModeNFTables, NFT: rs}) {
			if d.Kind == "" || d.Family == "" || d.Evidence.Text == "" {
				t.Fatalf("incomplete difference %+v", d)
			}
		}
		_ = nftExpectedFor(exp, "shop/cart")
	})
}
