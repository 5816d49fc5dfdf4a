package iptables

import (
	"fmt"
	"strings"
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
		ix := indexWithRoom(chains, len(chains))
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

// TestChainIndexGrows checks that a table finds its chains by name when
// it has more of them than its chain headers (a lenient read makes a chain
// for a rule of a chain not declared, and the index grows) and after one is
// deleted (the places of the chains after it move).
func TestChainIndexGrows(t *testing.T) {
	var b strings.Builder
	b.WriteString("*nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n")
	const n = 3000
	for i := range n {
		fmt.Fprintf(&b, "-A KUBE-SEP-%06d -j DNAT --to-destination 10.0.0.1:80\n", i)
	}
	b.WriteString("-X KUBE-SEP-000007\n")
	for i := n; i < n+100; i++ {
		fmt.Fprintf(&b, "-A KUBE-SEP-%06d -j DNAT --to-destination 10.0.0.1:80\n", i)
	}
	b.WriteString("COMMIT\n")
	d, _, err := ParseLenient("x", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	tb := d.Table("nat")
	if len(tb.Chains) != n+100+1 {
		t.Fatalf("%d chains, want %d", len(tb.Chains), n+100+1)
	}
	for _, c := range tb.Chains {
		if got := tb.Chain(c.Name); got != c {
			t.Fatalf("Chain(%s) = %v", c.Name, got)
		}
	}
	for _, name := range []string{"KUBE-SEP-000007", "KUBE-SVC-000001"} {
		if got := tb.Chain(name); got != nil {
			t.Errorf("Chain(%s) = %s, want none", name, got.Name)
		}
	}
}
