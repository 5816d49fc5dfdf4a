package iptables

import (
	"fmt"
	"testing"
)

// TestChainIndexFind checks that a chainIndex finds every chain it holds
// and none it does not, whatever the number of chains (and so the bits a
// slot's place takes and its tag gets).
func TestChainIndexFind(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 255, 256, 1000, 70000} {
		chains := make([]*Chain, n)
		for i := range chains {
			chains[i] = &Chain{Name: fmt.Sprintf("KUBE-SEP-%016X", i*7919)}
		}
		ix := newChainIndex(chains)
		for i, c := range chains {
			if got := ix.find(chains, c.Name); got != c {
				t.Fatalf("%d chains: chain %d (%s) not found", n, i, c.Name)
			}
		}
		for i := range min(n+1, 1000) {
			name := fmt.Sprintf("KUBE-SVC-%016X", i*7919)
			if got := ix.find(chains, name); got != nil {
				t.Fatalf("%d chains: %s found as %s", n, name, got.Name)
			}
		}
	}
}
