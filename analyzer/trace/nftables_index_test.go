package trace

import (
	"fmt"
	"net/netip"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/parsers/nft"
)

// TestSetIndexSizes checks lookups in sets small enough to be listed,
// large enough to be sorted, and to be filtered alike: the first of
// duplicate elements wins, a range is found after the exact elements, and
// a value in none is not.
func TestSetIndexSizes(t *testing.T) {
	for _, n := range []int{3, smallSet, smallSet + 1, 40, minFiltered + 2} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			// addr is the address of the i-th element (from 1).
			addr := func(i int) string { return fmt.Sprintf("10.0.%d.%d", i>>8, i&255) }
			var els []nft.Element
			for i := range n - 2 {
				els = append(els, nft.NewElement([]string{addr(i + 1), "80"}, nil))
			}
			// A duplicate of the first element, and a range.
			els = append(els, nft.NewElement([]string{"10.0.0.1", "80"}, nil), nft.NewElement([]string{"10.1.0.0/16", "80"}, nil))
			ix := newSetIndex(els)
			if n > smallSet && ix.exact == nil || n <= smallSet && ix.exact != nil {
				t.Errorf("%d elements: sorted %v", n, ix.exact != nil)
			}
			if filtered := ix.exact != nil && ix.exact.absent != nil; filtered != (n-1 >= minFiltered) {
				t.Errorf("%d elements: filtered %v", n, filtered)
			}
			key := func(a string, port uint64) []nval {
				return []nval{{kind: kAddr, addr: netip.MustParseAddr(a)}, {kind: kNum, num: port}}
			}
			for _, tc := range []struct {
				vals []nval
				want int
			}{
				{key("10.0.0.1", 80), 0},
				{key(addr(n-2), 80), n - 3},
				{key(addr(n/2), 80), n/2 - 1},
				{key("10.1.2.3", 80), n - 1},
				{key("10.0.0.1", 81), -1},
				{key("10.2.0.1", 80), -1},
				// Flags are not hashed: compared with every element, by name.
				{[]nval{{kind: kFlags, flags: []string{"10.0.0.1"}}, {kind: kNum, num: 80}}, 0},
				{[]nval{{kind: kFlags, flags: []string{"new"}}, {kind: kNum, num: 80}}, -1},
			} {
				if got, ok := ix.lookup(tc.vals); !ok || got != tc.want {
					t.Errorf("lookup %v: %d, %v; want %d", tc.vals, got, ok, tc.want)
				}
			}
		})
	}
}

// TestSmallSetIndexAllocs checks that the index of a small set (the
// anonymous map of a Service's endpoints, one per Service of a large
// node) is a few allocations: its listed keys are one string.
func TestSmallSetIndexAllocs(t *testing.T) {
	var els []nft.Element
	for i := range smallSet {
		els = append(els, nft.NewElement([]string{fmt.Sprint(i)}, []string{fmt.Sprintf("10.128.0.%d", i), "8080"}))
	}
	n := testing.AllocsPerRun(20, func() { newSetIndex(els) })
	if n > 6 {
		t.Errorf("the index of %d elements made %v allocations", smallSet, n)
	}
	ix := newSetIndex(els)
	for i := range smallSet {
		if got, ok := ix.lookup([]nval{{kind: kNum, num: uint64(i)}}); !ok || got != i {
			t.Errorf("lookup %d: %d, %v", i, got, ok)
		}
	}
}

// TestTableSharesConstants checks that rules spelling a constant alike
// share its compiled form, and that each keeps its own text.
func TestTableSharesConstants(t *testing.T) {
	rs, err := nft.ParseText("rules.nft", []byte("table ip t {\n\tchain a {\n\t\ttcp dport 80 accept\n\t\ttcp dport 80 drop\n\t\ttcp dport 81 drop\n\t}\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	nt := newNFTTable(rs.Tables[0])
	var parts []*part
	for _, r := range rs.Tables[0].Chains[0].Rules {
		v := r.Stmts[0].(*nft.Match).Right.(*nft.Value)
		parts = append(parts, nt.valuePart(v))
	}
	if parts[0] != parts[1] || parts[0] == parts[2] || parts[0].text != "80" || parts[2].text != "81" {
		t.Errorf("parts of 80, 80, 81: %p %p %p (%q, %q)", parts[0], parts[1], parts[2], parts[0].text, parts[2].text)
	}
	if nt.parts != nil {
		t.Error("the table keeps the constants by text once built")
	}
}

// TestStateKey checks the key a summary's walk holds the ends of a chain
// by: the same for states that are the same (whatever the order of their
// set updates), different when any field the walk reads differs.
func TestStateKey(t *testing.T) {
	base := func() *nftState {
		return &nftState{src: netip.MustParseAddr("10.0.0.1"), dst: netip.MustParseAddr("10.96.0.1"), dport: 80, proto: "tcp",
			iif: "eth0", mark: 0x4000, conds: []string{"a"}, updated: map[string]bool{"x": true, "y": false}, hook: "prerouting"}
	}
	key := func(s *nftState) string { return string(s.appendKey(nil)) }
	want := key(base())
	for range 20 {
		if got := key(base()); got != want {
			t.Fatalf("the same state gave %q and %q", want, got)
		}
	}
	if s := base(); key(s) != key((&nftWalk{}).clone(s)) {
		t.Error("a clone's key differs")
	}
	for name, change := range map[string]func(*nftState){
		"src":      func(s *nftState) { s.src = netip.Addr{} },
		"dst":      func(s *nftState) { s.dst = netip.MustParseAddr("10.96.0.2") },
		"dport":    func(s *nftState) { s.dport = 8 },
		"proto":    func(s *nftState) { s.proto = "udp" },
		"iif":      func(s *nftState) { s.iif = "lo" },
		"oif":      func(s *nftState) { s.oif = "eth0" },
		"mark":     func(s *nftState) { s.mark = 0 },
		"ctmark":   func(s *nftState) { s.ctmark = 1 },
		"dnat":     func(s *nftState) { s.dnat = netip.MustParseAddrPort("10.128.0.1:8080") },
		"masq":     func(s *nftState) { s.masq = true },
		"snat":     func(s *nftState) { s.snat = "10.0.0.9" },
		"natDone":  func(s *nftState) { s.natDone[1] = true },
		"hook":     func(s *nftState) { s.hook = "input" },
		"conds":    func(s *nftState) { s.conds = []string{"a", ""} },
		"warnings": func(s *nftState) { s.warnings = []string{"a"} },
		"updated":  func(s *nftState) { s.updated["y"] = true },
		"updates":  func(s *nftState) { delete(s.updated, "y") },
	} {
		s := base()
		change(s)
		if key(s) == want {
			t.Errorf("%s changed, the key did not: %q", name, want)
		}
	}
}

// TestSetIndexRoom guards the room the index of a large set keeps (a
// 10,000-Service node's service-ips map has an element per cluster IP
// and port): its exact keys sorted in one block, not hashed.
func TestSetIndexRoom(t *testing.T) {
	const n = 20000
	els := make([]nft.Element, n)
	for i := range els {
		els[i] = nft.NewElement([]string{fmt.Sprintf("10.%d.%d.%d", i>>16, i>>8&255, i&255), "80"}, nil)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ix := newSetIndex(els)
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
	if per > 40 {
		t.Errorf("the index of %d elements keeps %.0f bytes per element, want at most 40", n, per)
	}
	if i, _ := ix.lookup([]nval{{kind: kAddr, addr: netip.MustParseAddr("10.0.77.32")}, {kind: kNum, num: 80}}); i != 77<<8|32 {
		t.Errorf("lookup of element %d: %d", 77<<8|32, i)
	}
	runtime.KeepAlive(ix)
}

// TestWalkChainByName checks the chains a walk jumps to by name: those
// it remembers are its table's, not another table's of the same name, and
// a name not remembered (more names than it remembers, one of no chain)
// is looked up.
func TestWalkChainByName(t *testing.T) {
	var text string
	for _, tab := range []string{"a", "b"} {
		text += "table ip " + tab + " {\n"
		for i := range 6 {
			text += fmt.Sprintf("\tchain c%d {\n\t\tcomment \"%s\"\n\t}\n", i, tab)
		}
		text += "}\n"
	}
	rs, err := nft.ParseText("rules.nft", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	ta, tb := newNFTTable(rs.Tables[0]), newNFTTable(rs.Tables[1])
	w := &nftWalk{}
	for round := range 3 {
		for i := range 7 {
			for _, nt := range []*nftTable{ta, tb, ta} {
				name := fmt.Sprintf("c%d", i)
				got := w.chain(nt, name)
				if want := nt.chains[name]; got != want || i < 6 && (got == nil || got.Comment != nt.t.Name) {
					t.Fatalf("round %d: chain %s of table %s: got %v, want %v", round, name, nt.t.Name, got, want)
				}
			}
		}
	}
}

// TestWalkRemembersSetsAndValues checks the sets and constants a walk
// remembers: the index and set of each set reference, the compiled
// constant of each value, as the table gives them, for more references
// and values than it remembers, met again and again.
func TestWalkRemembersSetsAndValues(t *testing.T) {
	text := "table ip t {\n"
	for i := range 6 {
		flags := ""
		if i%2 == 0 {
			flags = "\t\tflags dynamic\n"
		}
		text += fmt.Sprintf("\tset s%d {\n\t\ttype ipv4_addr\n%s\t\telements = { 10.0.0.%d }\n\t}\n", i, flags, i)
	}
	text += "\tchain a {\n"
	for i := range 6 {
		text += fmt.Sprintf("\t\tip daddr @s%d tcp dport %d accept\n", i, 80+i)
	}
	text += "\t}\n}\n"
	rs, err := nft.ParseText("rules.nft", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	nt := newNFTTable(rs.Tables[0])
	w := &nftWalk{}
	for round := range 3 {
		for i, r := range rs.Tables[0].Chains[0].Rules {
			ref := r.Stmts[0].(*nft.Match).Right.(*nft.SetRef)
			ix, set, dynamic, why := w.index(nt, ref)
			if want := nt.sets[ref.Name]; why != "" || set != want || ix != nt.setIndex(want) || dynamic != (i%2 == 0) {
				t.Fatalf("round %d: rule %d: set %v (%q, dynamic %v), want %v", round, i, set, why, dynamic, want)
			}
			v := r.Stmts[1].(*nft.Match).Right.(*nft.Value)
			if p := w.value(nt, v); p != nt.valuePart(v) || p.text != fmt.Sprint(80+i) {
				t.Fatalf("round %d: rule %d: constant %q, want %d", round, i, p.text, 80+i)
			}
		}
	}
}

// TestReadNFTAhead checks the tables read ahead: a trace takes them (the
// same tables, not read again) and traces as it does without them; a
// reading not taken is forgotten; a table read ahead that panicked is
// read again where the trace asks.
func TestReadNFTAhead(t *testing.T) {
	text := "table ip t {\n\tchain pre {\n\t\ttype nat hook prerouting priority dstnat; policy accept;\n" +
		"\t\tip daddr 10.96.0.1 tcp dport 80 dnat to 10.0.0.1:8080\n\t}\n}\n"
	parse := func() *nft.Ruleset {
		rs, err := nft.ParseText("rules.nft", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	pkt := Packet{Dst: netip.MustParseAddrPort("10.96.0.1:80"), Proto: "tcp"}
	trace := func(rs *nft.Ruleset) (*Dataplane, *Result) {
		dp := &Dataplane{Mode: "nftables", NFT: []*nft.Ruleset{rs}}
		res, err := Trace(dp, pkt, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return dp, res
	}
	_, want := trace(parse())
	if len(want.Paths) != 1 || want.Paths[0].Destination != "10.0.0.1:8080" {
		t.Fatalf("traced without reading ahead: %+v", want.Paths)
	}

	rs := parse()
	ReadNFTAhead([]*nft.Ruleset{rs})
	if !readNFT.Wait(rs.Tables[0]) {
		t.Fatal("no reading of the table started")
	}
	ForgetNFT([]*nft.Ruleset{rs})
	// The reading ahead, as ReadNFTAhead starts it, of a table the
	// test knows.
	var read *nftTable
	readNFT.Start(rs.Tables[0], func() *nftTable { read = newNFTTable(rs.Tables[0]); return read })
	dp, got := trace(rs)
	if !reflect.DeepEqual(got.Paths, want.Paths) {
		t.Errorf("traced with the table read ahead: %+v, want %+v", got.Paths, want.Paths)
	}
	if readNFT.Wait(rs.Tables[0]) {
		t.Error("the reading ahead was not taken")
	}
	if ix := dp.nftIdx[true]; ix == nil || len(ix.tables) != 1 || ix.tables[0] != read {
		t.Error("the trace read the table again")
	}

	rs = parse()
	ReadNFTAhead([]*nft.Ruleset{rs})
	ForgetNFT([]*nft.Ruleset{rs})
	if readNFT.Wait(rs.Tables[0]) {
		t.Error("a reading forgotten is still held")
	}
}

// TestReadNFTAheadValidates checks the validation ReadNFTAhead starts: the
// next validation of the ruleset takes it, with the problems it finds of
// the ruleset itself; one not taken is forgotten.
func TestReadNFTAheadValidates(t *testing.T) {
	text := "table ip t {\n\tchain pre {\n\t\ttype filter hook prerouting priority 0; policy accept;\n" +
		"\t\tjump nowhere\n\t}\n}\n"
	parse := func() *nft.Ruleset {
		rs, err := nft.ParseText("rules.nft", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	want := ValidateNFT([]*nft.Ruleset{parse()})
	if len(want) != 1 || want[0].Kind != ProblemMissingChain {
		t.Fatalf("validated without reading ahead: %+v", want)
	}
	rs := parse()
	ReadNFTAhead([]*nft.Ruleset{rs})
	if !prevalidatedNFT.Wait(rs) {
		t.Fatal("no validation of the ruleset started")
	}
	if got := ValidateNFT([]*nft.Ruleset{rs}); !reflect.DeepEqual(got, want) {
		t.Errorf("validated ahead: %+v, want %+v", got, want)
	}
	if prevalidatedNFT.Wait(rs) {
		t.Error("the validation ahead was not taken")
	}
	ForgetNFT([]*nft.Ruleset{rs})
	rs = parse()
	ReadNFTAhead([]*nft.Ruleset{rs})
	ForgetNFT([]*nft.Ruleset{rs})
	if prevalidatedNFT.Wait(rs) || readNFT.Wait(rs.Tables[0]) {
		t.Error("a validation or reading forgotten is still held")
	}
}

// TestKeyValsIsEvalKey checks that keyVals reads the keys it reads as
// evalKey does (their one value, or their one variant's values), that a
// part absent or not modelled is the concatenation's answer, and that it
// leaves to evalKey the keys of several values and the concatenations of
// more parts than it holds.
func TestKeyValsIsEvalKey(t *testing.T) {
	keys := []string{
		"ip daddr", "th dport", "udp dport", "tcp sport", "meta mark & 0x4000", "ct status",
		"ip saddr . ip daddr . meta l4proto . th dport",
		"ip daddr . udp dport", "ip daddr . tcp sport . th dport",
		"ip daddr . numgen random mod 2", "numgen inc mod 3",
		"meta mark . meta mark . meta mark . meta mark . meta mark . meta mark . meta mark . meta mark . meta mark",
	}
	values := []string{
		"10.0.0.1", "80", "80", "80", "0x4000", "dnat",
		"10.0.0.1 . 10.0.0.2 . tcp . 80",
		"10.0.0.1 . 80", "10.0.0.1 . 80 . 80",
		"10.0.0.1 . 1", "1",
		"1 . 1 . 1 . 1 . 1 . 1 . 1 . 1 . 1",
	}
	var text string
	for i, k := range keys {
		text += fmt.Sprintf("\t\t%s %s counter\n", k, values[i])
	}
	rs, err := nft.ParseText("rules.nft", []byte("table ip t {\n\tchain c {\n"+text+"\t}\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	st := &nftState{prob: 1, src: netip.MustParseAddr("10.0.0.1"), dst: netip.MustParseAddr("10.96.0.1"), dport: 80, proto: "tcp",
		mark: 0x4001, dnat: netip.MustParseAddrPort("10.1.0.1:8080"), hook: "forward"}
	w := &nftWalk{dp: &Dataplane{}}
	for i, r := range rs.Tables[0].Chains[0].Rules {
		m, isMatch := r.Stmts[0].(*nft.Match)
		if !isMatch {
			t.Fatalf("%s: not read as a match: %s", keys[i], r.Raw)
		}
		e := m.Left
		var buf [maxKeyParts]nval
		vals, res, why := w.keyVals(st, e, &buf)
		want := w.evalKey(st, e)
		var ok bool
		switch res {
		case sOne:
			ok = !want.absent && want.why == "" && (want.isOne && reflect.DeepEqual(vals, []nval{want.one}) ||
				!want.isOne && len(want.vars) == 1 && want.vars[0].weight == 1 && want.vars[0].note == "" && reflect.DeepEqual(vals, want.vars[0].vals))
		case sAbsent:
			ok = want.absent
		case sWhy:
			ok = why != "" && why == want.why
		case sNot:
			ok = !want.absent && want.why == "" && (len(want.vars) > 1 || strings.Count(keys[i], " . ") >= maxKeyParts)
		}
		if !ok {
			t.Errorf("%s: keyVals %v (%d, %q), evalKey %+v", keys[i], vals, res, why, want)
		}
	}
}
