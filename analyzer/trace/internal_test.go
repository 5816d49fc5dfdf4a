package trace

import (
	"math/rand/v2"
	"net/netip"
	"reflect"
	"strconv"
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

// TestPrefixMatch compares the address matches with netip.Prefix.Contains.
func TestPrefixMatch(t *testing.T) {
	addrs := []netip.Addr{{}, netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("10.1.255.255"), netip.MustParseAddr("0.0.0.0"),
		netip.MustParseAddr("255.255.255.255"), netip.MustParseAddr("::ffff:10.1.2.3"), netip.MustParseAddr("fd00::1"),
		netip.MustParseAddr("fd00:0:0:1::1"), netip.MustParseAddr("fe80::1%eth0"), netip.MustParseAddr("::"), netip.MustParseAddr("::1")}
	var prefixes []netip.Prefix
	for _, s := range []string{"10.1.2.3", "::ffff:10.1.2.3", "fd00::1", "::ffff:10.0.0.0", "::", "0.0.0.0", "255.255.255.255"} {
		a := netip.MustParseAddr(s)
		for bits := 0; bits <= a.BitLen(); bits++ {
			prefixes = append(prefixes, netip.PrefixFrom(a, bits).Masked())
		}
	}
	for _, p := range prefixes {
		var m cmatch
		m.setPrefix(p)
		for _, a := range addrs {
			if got, want := m.contains(a), p.Contains(a); got != want {
				t.Errorf("%s contains %s: %t, want %t", p, a, got, want)
			}
		}
		a, ok := m.singleIP()
		if want := p.IsSingleIP(); ok != want || ok && a != p.Addr() {
			t.Errorf("%s: single address %s %t, want %t", p, a, ok, want)
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

// joinPieces returns 20,000 strings of one to nine pieces each, drawn
// with the given seed: inputs for comparing a quick parser with the
// standard library's.
func joinPieces(seed uint64, pieces []string) []string {
	r := rand.New(rand.NewPCG(seed, seed+1))
	out := make([]string, 0, 20000)
	for range 20000 {
		var b []byte
		for range 1 + r.IntN(9) {
			b = append(b, pieces[r.IntN(len(pieces))]...)
		}
		out = append(out, string(b))
	}
	return out
}

// TestParseIPv4Prefix compares the quick reading of IPv4 prefixes with
// netip.ParsePrefix.
func TestParseIPv4Prefix(t *testing.T) {
	pieces := []string{"0", "1", "10", "255", "256", "010", "00", "1000", ".", "/", "32", "33", "0/", "-1", "+1", " ", "", "a", ":"}
	inputs := []string{"10.128.0.0/32", "10.128.0.0/9", "0.0.0.0/0", "255.255.255.255/32", "10.0.0.1/24", "10.0.0.1/032",
		"10.0.0.1/33", "1.2.3/8", "1.2.3.4.5/8", "01.2.3.4/8", "1.2.3.4/", "1.2.3.4", "1.2.3.4/8/8", "::/0", "1.2.3.256/8"}
	inputs = append(inputs, joinPieces(3, pieces)...)
	for _, s := range inputs {
		got, ok := parseIPv4Prefix(s)
		if !ok {
			continue
		}
		want, err := netip.ParsePrefix(s)
		if err != nil || got != want.Masked() {
			t.Errorf("parseIPv4Prefix(%q) = %v, ParsePrefix gives %v, %v", s, got, want.Masked(), err)
		}
	}
	for _, s := range []string{"10.128.0.0/32", "0.0.0.0/0", "10.0.0.1/24"} {
		if _, ok := parseIPv4Prefix(s); !ok {
			t.Errorf("parseIPv4Prefix(%q) leaves the usual form to ParsePrefix", s)
		}
	}
}

// TestParseProbability compares the quick reading of probabilities with
// strconv.ParseFloat.
func TestParseProbability(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	inputs := []string{"0.16666666651", "0.50000000000", "0.33333333349", "0.", "0.0", "0.999999999999999", "0.1234567890123456",
		"1", "1.0", "0.1e3", "0.x", ".5", "0.5 ", "00.5"}
	for range 100000 {
		n := 1 + r.IntN(15)
		b := []byte("0.")
		for range n {
			b = append(b, byte('0'+r.IntN(10)))
		}
		inputs = append(inputs, string(b))
	}
	for _, s := range inputs {
		got, gotErr := parseProbability(s)
		want, wantErr := strconv.ParseFloat(s, 64)
		if got != want || (gotErr == nil) != (wantErr == nil) {
			t.Errorf("parseProbability(%q) = %v, %v; ParseFloat gives %v, %v", s, got, gotErr, want, wantErr)
		}
	}
}

// TestParseIPv4AddrPort compares the quick reading of IPv4 addresses and
// ports with netip.ParseAddrPort.
func TestParseIPv4AddrPort(t *testing.T) {
	pieces := []string{"0", "1", "10", "255", "256", "010", "00", "65535", "65536", "080", ".", ":", "[", "]", "-1", "", "a"}
	inputs := []string{"10.128.0.0:8080", "0.0.0.0:0", "255.255.255.255:65535", "10.0.0.1:080", "10.0.0.1:65536", "10.0.0.1",
		"10.0.0.1:", "[10.0.0.1]:80", "1.2.3.4:5:6"}
	inputs = append(inputs, joinPieces(7, pieces)...)
	for _, s := range inputs {
		got, ok := parseIPv4AddrPort(s)
		if !ok {
			continue
		}
		want, err := netip.ParseAddrPort(s)
		if err != nil || got != want {
			t.Errorf("parseIPv4AddrPort(%q) = %v, ParseAddrPort gives %v, %v", s, got, want, err)
		}
	}
	if _, ok := parseIPv4AddrPort("10.128.0.0:8080"); !ok {
		t.Error("the usual form is left to ParseAddrPort")
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
		{Key: []string{"10.96.0.10", "tcp", "53"}},
		{Key: []string{"10.96.0.10", "udp", "53"}},
		{Key: []string{"10.96.0.10", "tcp", "53"}}, // a duplicate: never found
		{Key: []string{"10.0.0.0/8", "tcp", "80-90"}},
		{Key: []string{"fd00::10", "tcp", "443"}},
		{Key: []string{"10.96.0.11", "tcp", "8080"}},
		{Key: []string{"10.96.0.12", "0x11", "8080"}},
	}
	ifaces := []nft.Element{{Key: []string{"\"eth*\""}}, {Key: []string{"\"lo\""}}}
	ports := []nft.Element{
		{Key: []string{"30000-32767"}},
		{Key: []string{"31000"}}, // exact: found before the range above
		{Key: []string{"1", "2", "3", "4", "5", "6", "7"}},
	}
	states := []nft.Element{{Key: []string{"invalid"}}, {Key: []string{"established,related"}}}
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
		ps := make([]part, len(e.Key))
		exact := len(e.Key) <= maxHashParts
		for j, k := range e.Key {
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
		ps := make([]part, len(elems[i].Key))
		for j, k := range elems[i].Key {
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
