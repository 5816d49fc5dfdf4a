package iptables

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestJumps resolves every rule's target once per table: user chains by
// place, everything else (verdicts, extensions, built-in chains, chains
// the table does not hold, deleted ones) to none.
func TestJumps(t *testing.T) {
	const dump = `*nat
:PREROUTING ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-SVC-A - [0:0]
:KUBE-GONE - [0:0]
:KUBE-SEP-B - [0:0]
-A PREROUTING -j KUBE-SERVICES
-A KUBE-SERVICES -d 10.0.0.1/32 -p tcp --dport 80 -j KUBE-SVC-A
-A KUBE-SERVICES -g KUBE-SEP-B
-A KUBE-SERVICES -j OUTPUT
-A KUBE-SERVICES -j RETURN
-A KUBE-SERVICES -j KUBE-MISSING
-A KUBE-SERVICES -p tcp
-A KUBE-SVC-A -j KUBE-GONE
-A KUBE-SVC-A -j DNAT --to-destination 10.1.0.1:80
-A KUBE-SEP-B -s 10.1.0.1/32 -j KUBE-SVC-A
-A KUBE-SEP-B -p tcp -j DNAT --to-destination 10.1.0.1:80
-A KUBE-SEP-B -s 10.1.0.2/32 -j KUBE-SVC-A
-A KUBE-SEP-B -s 10.1.0.3/32 -j KUBE-SERVICES
-A KUBE-SEP-B -p udp -j DNAT --to-destination 10.1.0.1:80
-A KUBE-SEP-B -s 10.1.0.4/32 -j KUBE-SVC-A
-A KUBE-SEP-B -s 10.1.0.5/32 -j KUBE-SERVICES
-A KUBE-SEP-B -s 10.1.0.6/32 -j KUBE-SERVICES
-X KUBE-GONE
COMMIT
`
	d, notes, err := ParseLenient("nat.txt", []byte(dump))
	if err != nil {
		t.Fatal(err, notes)
	}
	tab := d.Table("nat")
	j := tab.Jumps()
	if j != tab.Jumps() {
		t.Error("Jumps is resolved again")
	}
	got := map[string]string{}
	for _, c := range tab.Chains {
		for i, r := range c.Rules {
			to := "-"
			if p, ok := j.Target(c, i); ok {
				to = tab.Chains[p].Name
				if j.TargetChain(c, i) != tab.Chains[p] {
					t.Errorf("%s: TargetChain is not chain %d", r.Raw, p)
				}
			} else if j.TargetChain(c, i) != nil {
				t.Errorf("%s: TargetChain without a Target", r.Raw)
			}
			got[r.Raw] = to
		}
	}
	want := map[string]string{
		"-A PREROUTING -j KUBE-SERVICES":                                  "KUBE-SERVICES",
		"-A KUBE-SERVICES -d 10.0.0.1/32 -p tcp --dport 80 -j KUBE-SVC-A": "KUBE-SVC-A",
		"-A KUBE-SERVICES -g KUBE-SEP-B":                                  "KUBE-SEP-B",
		"-A KUBE-SERVICES -j OUTPUT":                                      "-", // a built-in chain is no target
		"-A KUBE-SERVICES -j RETURN":                                      "-",
		"-A KUBE-SERVICES -j KUBE-MISSING":                                "-",
		"-A KUBE-SERVICES -p tcp":                                         "-",
		"-A KUBE-SVC-A -j KUBE-GONE":                                      "-", // deleted by -X
		"-A KUBE-SVC-A -j DNAT --to-destination 10.1.0.1:80":              "-",
		// Targets alternating, coming back after one or two others.
		"-A KUBE-SEP-B -s 10.1.0.1/32 -j KUBE-SVC-A":                "KUBE-SVC-A",
		"-A KUBE-SEP-B -p tcp -j DNAT --to-destination 10.1.0.1:80": "-",
		"-A KUBE-SEP-B -s 10.1.0.2/32 -j KUBE-SVC-A":                "KUBE-SVC-A",
		"-A KUBE-SEP-B -s 10.1.0.3/32 -j KUBE-SERVICES":             "KUBE-SERVICES",
		"-A KUBE-SEP-B -p udp -j DNAT --to-destination 10.1.0.1:80": "-",
		"-A KUBE-SEP-B -s 10.1.0.4/32 -j KUBE-SVC-A":                "KUBE-SVC-A",
		"-A KUBE-SEP-B -s 10.1.0.5/32 -j KUBE-SERVICES":             "KUBE-SERVICES",
		"-A KUBE-SEP-B -s 10.1.0.6/32 -j KUBE-SERVICES":             "KUBE-SERVICES",
	}
	for raw, to := range want {
		if got[raw] != to {
			t.Errorf("%s: target %q, want %q", raw, got[raw], to)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d rules, want %d: %v", len(got), len(want), got)
	}
	for _, c := range tab.Chains {
		if p, ok := j.Place(c); !ok || tab.Chains[p] != c {
			t.Errorf("Place(%s) = %d, %v", c.Name, p, ok)
		}
		if _, ok := j.Target(c, len(c.Rules)); ok {
			t.Errorf("%s: a target past the last rule", c.Name)
		}
	}
	// A chain of another table is looked up by its rule's target name.
	other, err := Parse("other.txt", []byte("*nat\n:KUBE-SERVICES - [0:0]\n:KUBE-SVC-A - [0:0]\n-A KUBE-SERVICES -j KUBE-SVC-A\nCOMMIT\n"))
	if err != nil {
		t.Fatal(err)
	}
	oc := other.Chain("nat", "KUBE-SERVICES")
	if c := j.TargetChain(oc, 0); c != tab.Chain("KUBE-SVC-A") {
		t.Errorf("a chain apart from the table: target %v, want this table's KUBE-SVC-A", c)
	}
}

// TestJumpsConcurrent: readers asking at once get the same answers.
func TestJumpsConcurrent(t *testing.T) {
	var b strings.Builder
	b.WriteString("*nat\n:KUBE-SERVICES - [0:0]\n")
	for i := range 200 {
		fmt.Fprintf(&b, ":KUBE-SVC-%d - [0:0]\n", i)
	}
	for i := range 200 {
		fmt.Fprintf(&b, "-A KUBE-SERVICES -d 10.0.%d.%d/32 -p tcp --dport 80 -j KUBE-SVC-%d\n", i/250, i%250, i)
	}
	b.WriteString("COMMIT\n")
	d, err := Parse("many.txt", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	tab := d.Table("nat")
	svc := tab.Chain("KUBE-SERVICES")
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j := tab.Jumps()
			for i, r := range svc.Rules {
				if c := j.TargetChain(svc, i); c == nil || c.Name != r.Target() {
					t.Errorf("%s: target %v", r.Raw, c)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkJumps resolves the jumps of a nat table of 10,000 Services
// (one chain each, and one rule per Service in KUBE-SERVICES jumping to
// it, plus two endpoint chains per Service).
func BenchmarkJumps(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("*nat\n:KUBE-SERVICES - [0:0]\n:KUBE-MARK-MASQ - [0:0]\n")
	const n = 10000
	for i := range n {
		fmt.Fprintf(&sb, ":KUBE-SVC-%d - [0:0]\n:KUBE-SEP-%da - [0:0]\n:KUBE-SEP-%db - [0:0]\n", i, i, i)
	}
	for i := range n {
		fmt.Fprintf(&sb, "-A KUBE-SERVICES -d 10.%d.%d.1/32 -p tcp --dport 80 -j KUBE-SVC-%d\n", i/250, i%250, i)
		fmt.Fprintf(&sb, "-A KUBE-SVC-%d -m statistic --mode random --probability 0.5 -j KUBE-SEP-%da\n-A KUBE-SVC-%d -j KUBE-SEP-%db\n", i, i, i, i)
		for _, s := range []string{"a", "b"} {
			fmt.Fprintf(&sb, "-A KUBE-SEP-%d%s -s 10.200.0.1/32 -j KUBE-MARK-MASQ\n-A KUBE-SEP-%d%s -p tcp -j DNAT --to-destination 10.200.0.1:80\n", i, s, i, s)
		}
	}
	sb.WriteString("COMMIT\n")
	d, err := Parse("nat.txt", []byte(sb.String()))
	if err != nil {
		b.Fatal(err)
	}
	tab := d.Table("nat")
	b.ReportAllocs()
	for b.Loop() {
		if j := newJumps(tab); len(j.to) != 7*n {
			b.Fatalf("%d rules", len(j.to))
		}
	}
}

// TestJumpsInParts checks that the jumps resolved on every core, each
// worker a part of the chains in the dump's order, are those resolved on
// one: a dump written in another order than its chains' headers, with
// deleted chains, verdicts, extensions and chains missing.
func TestJumpsInParts(t *testing.T) {
	var b strings.Builder
	b.WriteString("*nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n:KUBE-GONE - [0:0]\n")
	const n = 400
	for i := range n {
		fmt.Fprintf(&b, ":KUBE-SVC-%04d - [0:0]\n:KUBE-SEP-%04d - [0:0]\n", i, i)
	}
	for i := n - 1; i >= 0; i-- {
		fmt.Fprintf(&b, "-A KUBE-SERVICES -d 10.0.%d.%d/32 -j KUBE-SVC-%04d\n", i/256, i%256, i)
		fmt.Fprintf(&b, "-A KUBE-SEP-%04d -j KUBE-MARK-MASQ\n-A KUBE-SEP-%04d -p tcp -j DNAT --to-destination 10.1.0.1:80\n", i, i)
		fmt.Fprintf(&b, "-A KUBE-SVC-%04d -j KUBE-SEP-%04d\n-A KUBE-SVC-%04d -j KUBE-GONE\n-A KUBE-SVC-%04d -j KUBE-MISSING\n-A KUBE-SVC-%04d -j RETURN\n", i, i, i, i, i)
	}
	b.WriteString("-A PREROUTING -j KUBE-SERVICES\n-X KUBE-GONE\nCOMMIT\n")
	lenient := func() *Table {
		d, _, err := ParseLenient("dump", []byte(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		return d.Table("nat")
	}
	defer func(n int) { parallelJumps = n }(parallelJumps)
	parallelJumps = 1 << 30
	whole := newJumps(lenient())
	parallelJumps = 1
	tb := lenient()
	parts := newJumps(tb)
	if fmt.Sprint(parts.to, parts.start, parts.pos, parts.order) != fmt.Sprint(whole.to, whole.start, whole.pos, whole.order) {
		t.Fatal("the jumps resolved in parts differ from those resolved whole")
	}
	resolved := 0
	for _, to := range parts.to {
		if to >= 0 {
			resolved++
		}
	}
	if resolved != 2*n+1 {
		t.Errorf("%d jumps to chains resolved, want %d", resolved, 2*n+1)
	}
}
