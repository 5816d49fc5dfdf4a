package trace

import (
	"math/rand/v2"
	"net/netip"
	"reflect"
	"testing"

	"github.com/proxyscan/proxyscan/internal/benchgen"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/nft"
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
		want := Merge(endPaths(ends, nil))
		got := endPaths(mergeEnds(ends, w))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("mergeEnds gives\n%+v\nmerge gives\n%+v", got, want)
		}
	}
}

// TestParseNATTo checks that the quick reading of "ip:port" gives what
// the full one gives.
func TestParseNATTo(t *testing.T) {
	for _, v := range []string{"10.0.0.1:80", "10.0.0.1:080", "10.0.0.1", "10.0.0.1:80-90", "10.0.0.1-10.0.0.9:80",
		"[fd00::1]:80", "[::ffff:10.0.0.1]:80", "[fe80::1%eth0]:80", "[10.0.0.1]:80", "::1:80", "fd00::1", "10.0.0.1:99999",
		"10.0.0.1:", ":80", "", "[fd00::1]", "[fd00::1]:80-81", "010.0.0.1:80"} {
		got, gotWarn := parseNATTo(v, 8080)
		want, wantWarn := parseNATRange(v, 8080)
		if got != want || gotWarn != wantWarn {
			t.Errorf("parseNATTo(%q) = %v %q, want %v %q", v, got, gotWarn, want, wantWarn)
		}
	}
}

// TestChainNames numbers every chain of a big table by its place, finds
// names that are no chain's as Table.Chain does, and numbers no chain of
// another table or deleted from it.
func TestChainNames(t *testing.T) {
	d, err := (benchgen.Spec{Services: 300, Endpoints: 1500, NodePortEvery: 3, Node: "n1"}).IPTablesDump()
	if err != nil {
		t.Fatal(err)
	}
	for _, tbl := range d.Tables {
		cn := newChainNames(tbl)
		if cn == nil {
			t.Fatalf("%s: no index", tbl.Name)
		}
		for i, c := range tbl.Chains {
			if got := cn.lookup(c.Name); got != int32(i) {
				t.Errorf("%s %s: number %d, want %d", tbl.Name, c.Name, got, i)
			}
		}
		for _, name := range []string{"", "KUBE-SEP-", "KUBE-SERVICES-", "kube-services", "KUBE-SEP-XXXXXXXXXXXXXXXXX"} {
			if got := cn.lookup(name); (got >= 0) != (tbl.Chain(name) != nil) {
				t.Errorf("%s %q: number %d", tbl.Name, name, got)
			}
		}
	}
	if newChainNames(&iptables.Table{Name: "nat", Chains: []*iptables.Chain{{Name: "X"}}}) != nil {
		t.Error("a table the parser did not make is indexed")
	}
	// A chain deleted with -X keeps its index, which no other chain takes.
	d, err = iptables.Parse("restore.txt", []byte("*nat\n:A - [0:0]\n:B - [0:0]\n-X A\n:C - [0:0]\nCOMMIT\n"))
	if err != nil {
		t.Fatal(err)
	}
	nat := d.Table("nat")
	cn := newChainNames(nat)
	if cn == nil {
		t.Fatal("nat: no index")
	}
	for i, c := range nat.Chains {
		if got := cn.number(c); got != int32(i) {
			t.Errorf("%s: number %d, want %d", c.Name, got, i)
		}
	}
	if got := cn.lookup("A"); got != -1 {
		t.Errorf("deleted chain A: number %d, want -1", got)
	}
	if got := cn.number(&iptables.Chain{Name: "B", Table: nat}); got != -1 {
		t.Errorf("a chain the table does not hold: number %d, want -1", got)
	}
}

// TestAppendDest compares the destinations ends are ordered by with
// AddrPort.String.
func TestAppendDest(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	dsts := []netip.AddrPort{{}, netip.AddrPortFrom(netip.Addr{}, 80), netip.MustParseAddrPort("[fd00::1]:80"),
		netip.MustParseAddrPort("[::ffff:10.0.0.1]:80"), netip.MustParseAddrPort("[fe80::1%eth0]:443"), netip.MustParseAddrPort("0.0.0.0:0")}
	for range 10000 {
		dsts = append(dsts, netip.AddrPortFrom(netip.AddrFrom4([4]byte{byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256))}),
			uint16(r.IntN(65536))))
	}
	for _, d := range dsts {
		if got := string(appendDest(nil, d)); got != d.String() {
			t.Errorf("appendDest(%v) = %q", d, got)
		}
	}
}

// TestSetIndex compares the set index's lookups with a plain scan of the
// elements: the first element with an exact key equal to the values,
// else the first other element whose key matches them, else none.
func TestSetIndex(t *testing.T) {
	services := []nft.Element{
		nft.NewElement([]string{"10.96.0.10", "tcp", "53"}, nil),
		nft.NewElement([]string{"10.96.0.10", "udp", "53"}, nil),
		nft.NewElement([]string{"10.96.0.10", "tcp", "53"}, nil), // a duplicate: never found
		nft.NewElement([]string{"10.0.0.0/8", "tcp", "80-90"}, nil),
		nft.NewElement([]string{"fd00::10", "tcp", "443"}, nil),
		nft.NewElement([]string{"10.96.0.11", "tcp", "8080"}, nil),
		nft.NewElement([]string{"10.96.0.12", "0x11", "8080"}, nil),
	}
	ifaces := []nft.Element{nft.NewElement([]string{"\"eth*\""}, nil), nft.NewElement([]string{"\"lo\""}, nil)}
	ports := []nft.Element{
		nft.NewElement([]string{"30000-32767"}, nil),
		nft.NewElement([]string{"31000"}, nil), // exact: found before the range above
		nft.NewElement([]string{"1", "2", "3", "4", "5", "6", "7"}, nil),
	}
	states := []nft.Element{nft.NewElement([]string{"invalid"}, nil), nft.NewElement([]string{"established,related"}, nil)}
	addr := func(s string) nval { return nval{kind: kAddr, addr: netip.MustParseAddr(s)} }
	num := func(n uint64) nval { return nval{kind: kNum, num: n} }
	str := func(s string) nval { return nval{kind: kStr, str: s} }
	for _, tc := range []struct {
		elems []nft.Element
		vals  []nval
		want  int
	}{
		{services, []nval{addr("10.96.0.10"), num(6), num(53)}, 0},
		{services, []nval{addr("10.96.0.10"), num(17), num(53)}, 1},
		{services, []nval{addr("10.1.2.3"), num(6), num(85)}, 3},
		{services, []nval{addr("10.96.0.10"), num(6), num(85)}, 3},
		{services, []nval{addr("fd00::10"), num(6), num(443)}, 4},
		{services, []nval{addr("::ffff:10.96.0.11"), num(6), num(8080)}, -1}, // a mapped address is another address
		{services, []nval{addr("10.96.0.11"), num(6), num(8080)}, 5},
		{services, []nval{addr("10.96.0.12"), num(17), num(8080)}, 6},
		{services, []nval{addr("10.96.0.12"), num(6), num(8080)}, -1},
		{services, []nval{addr("10.96.0.12"), num(17), num(8080 + 256)}, -1},
		{services, []nval{addr("10.96.0.10"), num(6)}, -1},
		{ifaces, []nval{str("eth0")}, 0},
		{ifaces, []nval{str("lo")}, 1},
		{ifaces, []nval{str("l")}, -1},
		{ports, []nval{num(31000)}, 1},
		{ports, []nval{num(31000 + 256)}, 0}, // same low byte as 31000: in the range only
		{ports, []nval{num(30001)}, 0},
		{ports, []nval{num(29999)}, -1},
		{ports, []nval{num(1), num(2), num(3), num(4), num(5), num(6), num(7)}, 2},
		{ports, []nval{num(1), num(2), num(3), num(4), num(5), num(6), num(8)}, -1},
		// Flag values are not hashed: every element is compared.
		{states, []nval{{kind: kFlags, flags: []string{"related"}}}, 1},
		{states, []nval{{kind: kFlags, flags: []string{"invalid"}}}, 0},
		{states, []nval{{kind: kFlags, flags: []string{"new"}}}, -1},
	} {
		got, ok := newSetIndex(tc.elems).lookup(tc.vals)
		if !ok || got != tc.want {
			t.Errorf("%v: element %d (ok %v), want %d", tc.vals, got, ok, tc.want)
		}
		if want, ok := scanSet(tc.elems, tc.vals); !ok || want != got {
			t.Errorf("%v: element %d, a scan finds %d (ok %v)", tc.vals, got, want, ok)
		}
	}
}

// scanSet finds vals among elems by compiling every key and scanning
// them: exact keys first, then the others in order.
func scanSet(elems []nft.Element, vals []nval) (int, bool) {
	var rest []int
	for i, e := range elems {
		ps := make([]part, len(e.Key()))
		exact := len(e.Key()) <= maxHashParts
		for j, k := range e.Key() {
			ps[j] = compilePart(k)
			if _, ok := ps[j].exact(); !ok {
				exact = false
			}
		}
		if !exact {
			rest = append(rest, i)
			continue
		}
		if m, ok := matchParts(ps, vals); !ok {
			return -1, false
		} else if m {
			return i, true
		}
	}
	for _, i := range rest {
		ps := make([]part, len(elems[i].Key()))
		for j, k := range elems[i].Key() {
			ps[j] = compilePart(k)
		}
		if m, ok := matchParts(ps, vals); !ok {
			return -1, false
		} else if m {
			return i, true
		}
	}
	return -1, true
}

// TestForget checks that a validation Prevalidate started and no one took
// is dropped by Forget, with the dump it holds, and that the dump is then
// validated afresh.
func TestForget(t *testing.T) {
	d, err := iptables.Parse("forget", []byte("*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n-A FORWARD -j MISSING\nCOMMIT\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := validateDump(d)
	if len(want) != 1 {
		t.Fatalf("problems %v, want one (a missing chain)", want)
	}
	Prevalidate([]*iptables.Dump{d})
	if !prevalidated.Wait(d) {
		t.Fatal("Prevalidate started nothing")
	}
	Forget([]*iptables.Dump{d})
	if prevalidated.Wait(d) {
		t.Error("Forget left the validation of the dump")
	}
	if got := ValidateIPTables([]*iptables.Dump{d}); !reflect.DeepEqual(got, want) {
		t.Errorf("validated after Forget: %v, want %v", got, want)
	}
}
