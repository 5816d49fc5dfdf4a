package checks

import (
	"strings"
	"testing"

	"github.com/google/nftables"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/nft"
)

// TestPrecedence covers the hook orders the example dumps do not show
// (kube-proxy and iptables always use dstnat): a lower priority runs first.
func TestPrecedence(t *testing.T) {
	side := func(mode string, pre, out int32) *leftSide {
		return &leftSide{mode: mode, prio: map[string]*nft.Priority{
			"prerouting": {Value: nftables.ChainPriority(pre), Text: nft.PriorityText(nftables.TableFamilyIPv4, "prerouting", nftables.ChainPriority(pre))},
			"output":     {Value: nftables.ChainPriority(out), Text: nft.PriorityText(nftables.TableFamilyIPv4, "output", nftables.ChainPriority(out))},
		}}
	}
	for _, tc := range []struct {
		nf, ipt *leftSide
		want    string
	}{
		{side(model.ModeNFTables, -100, -100), side(model.ModeIPTables, -100, -100), "same priorities (prerouting dstnat (-100), output -100)"},
		{side(model.ModeNFTables, -110, -110), side(model.ModeIPTables, -100, -100), "kube-proxy's nat chains (prerouting dstnat - 10 (-110), output -110) run before iptables' nat PREROUTING and OUTPUT (prerouting dstnat (-100), output -100): the first DNAT wins, so the nftables rules take the 3 destinations both program, and the 2 destinations only"},
		{side(model.ModeNFTables, -100, -100), side(model.ModeIPTables, -150, -150), "iptables' nat PREROUTING and OUTPUT (prerouting mangle (-150), output mangle (-150)) run before kube-proxy's nat chains"},
		{side(model.ModeNFTables, -110, -90), side(model.ModeIPTables, -100, -100), "(the output hooks are ordered otherwise"},
	} {
		got := precedence(tc.nf, tc.ipt, 3, 2, tc.ipt)
		if !strings.Contains(got, tc.want) {
			t.Errorf("precedence = %q, want it to contain %q", got, tc.want)
		}
	}
}
