package iptables

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDumpOrder reads a nat table whose rules are written in another
// order than its chains are declared (as kube-proxy writes its restore
// input): the passes over every rule take the chains in the order of
// their rules, the chains without rules first, and what the table's
// readers get of each rule is what they get of the same table written
// chain by chain, as iptables-save writes it.
func TestDumpOrder(t *testing.T) {
	const declared = `*nat
:PREROUTING ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:KUBE-SEP-A - [0:0]
:KUBE-SEP-B - [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-SVC-X - [0:0]
`
	rules := map[string][]string{
		"PREROUTING":    {"-A PREROUTING -j KUBE-SERVICES"},
		"KUBE-SERVICES": {"-A KUBE-SERVICES -d 10.0.0.1/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-X", "-A KUBE-SERVICES -j KUBE-MISSING"},
		"KUBE-SVC-X": {"-A KUBE-SVC-X -m statistic --mode random --probability 0.50000000000 -j KUBE-SEP-A",
			"-A KUBE-SVC-X -j KUBE-SEP-B"},
		"KUBE-SEP-A": {"-A KUBE-SEP-A -s 10.1.0.1/32 -j MARK --set-xmark 0x4000/0x4000", "-A KUBE-SEP-A -p tcp -m tcp -j DNAT --to-destination 10.1.0.1:80"},
		"KUBE-SEP-B": {"-A KUBE-SEP-B -p tcp -m tcp -j DNAT --to-destination 10.1.0.2:80"},
	}
	write := func(order ...string) []byte {
		text := declared
		for _, c := range order {
			for _, r := range rules[c] {
				text += r + "\n"
			}
		}
		return []byte(text + "COMMIT\n")
	}
	parse := func(data []byte) *Table {
		d, err := Parse("nat.txt", data)
		if err != nil {
			t.Fatal(err)
		}
		return d.Table("nat")
	}
	// kube-proxy's order: KUBE-SERVICES, then each Service's chains.
	kp := parse(write("PREROUTING", "KUBE-SERVICES", "KUBE-SVC-X", "KUBE-SEP-A", "KUBE-SEP-B"))
	saved := parse(write("PREROUTING", "KUBE-SEP-A", "KUBE-SEP-B", "KUBE-SERVICES", "KUBE-SVC-X"))

	names := func(tab *Table, places []int32) []string {
		var out []string
		for _, p := range places {
			out = append(out, tab.Chains[p].Name)
		}
		return out
	}
	want := []string{"OUTPUT", "PREROUTING", "KUBE-SERVICES", "KUBE-SVC-X", "KUBE-SEP-A", "KUBE-SEP-B"}
	if got := names(kp, DumpOrder(kp)); !slices.Equal(got, want) {
		t.Errorf("DumpOrder = %v, want %v", got, want)
	}
	if got := names(kp, kp.Jumps().Order()); !slices.Equal(got, want) {
		t.Errorf("Jumps.Order = %v, want %v", got, want)
	}
	// The rules' places follow the dump: a pass over every rule reads
	// the jumps and meanings it writes in order.
	j := kp.Jumps()
	if s, x, a := j.start[kp.Chain("KUBE-SERVICES").Index()], j.start[kp.Chain("KUBE-SVC-X").Index()], j.start[kp.Chain("KUBE-SEP-A").Index()]; !(s < x && x < a) {
		t.Errorf("rules placed at KUBE-SERVICES %d, KUBE-SVC-X %d, KUBE-SEP-A %d: not in the dump's order", s, x, a)
	}
	// iptables-save's order is the chains' own: nothing to sort.
	wantSaved := []string{"OUTPUT", "PREROUTING", "KUBE-SEP-A", "KUBE-SEP-B", "KUBE-SERVICES", "KUBE-SVC-X"}
	if got := names(saved, saved.Jumps().Order()); !slices.Equal(got, wantSaved) {
		t.Errorf("Jumps.Order of the saved table = %v, want %v", got, wantSaved)
	}

	read := func(tab *Table) map[string][]string {
		out := map[string][]string{}
		rd, j := tab.Meanings(), tab.Jumps()
		for _, c := range tab.Chains {
			_, ms := rd.Chain(c)
			for i := range ms {
				to := "-"
				if tc := j.TargetChain(c, i); tc != nil {
					to = tc.Name
				}
				out[c.Name] = append(out[c.Name], to+" "+describe(rd, &ms[i]))
			}
		}
		return out
	}
	a, b := read(kp), read(saved)
	for _, c := range want {
		if !slices.Equal(a[c], b[c]) {
			t.Errorf("%s read from kube-proxy's order:\n%q\nfrom iptables-save's:\n%q", c, a[c], b[c])
		}
	}
	if len(a["KUBE-SVC-X"]) != 2 || a["KUBE-SVC-X"][0][:len("KUBE-SEP-A")] != "KUBE-SEP-A" {
		t.Errorf("KUBE-SVC-X: %q", a["KUBE-SVC-X"])
	}
}

// TestRadixSort orders places by line as a stable sort does, lines of
// every magnitude included.
func TestRadixSort(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 3, 100, 5000} {
		for _, limit := range []uint32{3, 1 << 11, 1 << 22, math.MaxUint32} {
			lines := make([]uint32, n)
			for i := range lines {
				lines[i] = rnd.Uint32N(limit)
			}
			got := make([]int32, n)
			for i := range got {
				got[i] = int32(i)
			}
			want := slices.Clone(got)
			slices.SortStableFunc(want, func(a, b int32) int { return cmp.Compare(lines[a], lines[b]) })
			radixSort(got, lines)
			if !slices.Equal(got, want) {
				t.Fatalf("%d places, lines below %d: %v, want %v", n, limit, got, want)
			}
		}
	}
}
