package benchgen_test

import (
	"bytes"
	"testing"

	"github.com/proxyscan/proxyscan/internal/benchgen"
	"github.com/proxyscan/proxyscan/internal/netnstest"
)

// TestNFTRulesetIsWhatNFTLists loads a small generated ruleset with nft -f
// into a scratch network namespace: nft must list it byte for byte as
// generated, so the benchmarks read what a node would show.
func TestNFTRulesetIsWhatNFTLists(t *testing.T) {
	netnstest.RequireTools(t, "nft")
	ns := netnstest.New(t)
	spec := benchgen.Spec{Services: 60, Endpoints: 200, NodePortEvery: 4, Node: "bench-node-1"}
	var b bytes.Buffer
	if err := spec.NFTRuleset(&b); err != nil {
		t.Fatal(err)
	}
	ns.Run(b.Bytes(), "nft", "-f", "-")
	got := ns.Run(nil, "nft", "list", "ruleset")
	if !bytes.Equal(got, b.Bytes()) {
		t.Errorf("nft lists the generated ruleset differently:\n--- generated\n%s\n--- listed\n%s", b.Bytes(), got)
	}
}
