package trace

import (
	"math/rand/v2"
	"net/netip"
	"reflect"
	"testing"

	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// TestIsBuiltin compares isBuiltin with the parser's list.
func TestIsBuiltin(t *testing.T) {
	for _, table := range []string{"filter", "nat", "mangle", "raw", "security", "other", ""} {
		for _, chain := range []string{"PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING", "KUBE-SERVICES", "input", ""} {
			if got, want := isBuiltin(table, chain), iptables.IsBuiltinChain(table, chain); got != want {
				t.Errorf("isBuiltin(%q, %q) = %t, want %t", table, chain, got, want)
			}
		}
	}
}

// TestMergeEndsIsMerge merges random ends both ways: mergeEnds must give
// merge's paths, in merge's order, with the same sums.
func TestMergeEndsIsMerge(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	dsts := []netip.AddrPort{
		netip.MustParseAddrPort("10.0.0.1:80"), netip.MustParseAddrPort("10.0.0.10:80"), netip.MustParseAddrPort("10.0.0.2:8080"),
		netip.MustParseAddrPort("[fd00::1]:80"), netip.MustParseAddrPort("[::ffff:10.0.0.1]:80"), {},
	}
	probs := []float64{1.0 / 3, 1.0 / 6, 0.5, 1.0/3 + 1e-13, 0.25, 0, 1}
	conds := [][]string{nil, {"a"}, {"a,b"}, {"a", "b"}, {""}}
	verdicts := []Verdict{VerdictDNAT, VerdictAccept, VerdictDrop, VerdictLocal}
	w := &walker{}
	for range 3000 {
		n := r.IntN(40)
		ends := make([]pathEnd, n)
		for i := range ends {
			ends[i] = pathEnd{prob: probs[r.IntN(len(probs))], verdict: verdicts[r.IntN(len(verdicts))], dst: dsts[r.IntN(len(dsts))],
				masq: r.IntN(2) == 0, conds: conds[r.IntN(len(conds))]}
			if r.IntN(5) == 0 {
				ends[i].snat = "192.0.2.1"
			}
			if r.IntN(5) == 0 {
				ends[i].warnings = []string{"w"}
			}
		}
		want := Merge(endPaths(ends))
		got := endPaths(mergeEnds(ends, w))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("mergeEnds gives\n%+v\nmerge gives\n%+v", got, want)
		}
	}
}
