package iptables

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// describe writes the meaning of m, a rule of rd, as one line.
func describe(rd *Meanings, m *Meaning) string {
	var b strings.Builder
	one := func(x *Match) {
		if !strings.HasSuffix(b.String(), "[") {
			b.WriteString(" ")
		}
		if x.Neg {
			b.WriteString("!")
		}
		switch x.Kind {
		case MatchSource, MatchDestination:
			fmt.Fprintf(&b, "%s=%s", map[MatchKind]string{MatchSource: "src", MatchDestination: "dst"}[x.Kind], x.Prefix())
		case MatchInInterface, MatchOutInterface:
			fmt.Fprintf(&b, "iface=%s", rd.Ext(x).Iface)
		case MatchProtocol:
			fmt.Fprintf(&b, "proto=%d", x.Proto)
		case MatchDestPort, MatchSourcePort:
			name := "dport"
			if x.Kind == MatchSourcePort {
				name = "sport"
			}
			if x.Either {
				name = "ports"
			}
			if e := rd.Ext(x); e != nil {
				fmt.Fprintf(&b, "%s=%v", name, e.Ports)
			} else {
				fmt.Fprintf(&b, "%s=%d-%d", name, x.Port().Lo, x.Port().Hi)
			}
		case MatchMark:
			fmt.Fprintf(&b, "mark=%#x/%#x", x.Value(), x.Mask())
		case MatchSrcType, MatchDstType, MatchCtState:
			fmt.Fprintf(&b, "bits%d=%#x", x.Kind, x.Value())
		case MatchSet:
			fmt.Fprintf(&b, "set=%s%v", rd.Ext(x).Set.Name, rd.Ext(x).Set.Src)
		case MatchTCPFlags:
			fmt.Fprintf(&b, "tcp=%#x/%#x", x.TCPMask(), x.TCPComp())
		case MatchStatistic:
			fmt.Fprintf(&b, "statistic%d=%.12g", x.Value(), x.Prob())
		case MatchRecent:
			fmt.Fprintf(&b, "recent%d=%s/%d", x.Mask(), rd.Ext(x).Text, int32(x.Value()))
		case MatchIPVS:
			fmt.Fprintf(&b, "ipvs=%+v", *rd.Ext(x).IPVS)
		default:
			fmt.Fprintf(&b, "kind%d", x.Kind)
		}
	}
	b.WriteString("[")
	for i := range rd.Det(m) {
		one(&rd.Det(m)[i])
	}
	b.WriteString("] [")
	for i := range rd.Fork(m) {
		one(&rd.Fork(m)[i])
	}
	fmt.Fprintf(&b, "] target%d %q", m.Target, m.TargetName())
	if m.IsGoto() {
		b.WriteString(" goto")
	}
	if m.HasDst32() {
		fmt.Fprintf(&b, " dst32=%s", rd.Dst32(m))
	}
	if m.HasDport() {
		fmt.Fprintf(&b, " dport=%d", m.Dport)
	}
	if ap, ok := rd.NATDestination(m); ok {
		fmt.Fprintf(&b, " to=%s", ap)
	}
	if m.RecentSet() {
		b.WriteString(" recent-set")
	}
	if c := m.Comment(); c != "" {
		fmt.Fprintf(&b, " comment=%q", c)
	}
	if u := rd.Unknown(m); u != nil {
		fmt.Fprintf(&b, " unknown=%q", u)
	}
	return b.String()
}

// meaningCases are rules of every kind of match and target, and their
// reading as describe prints it.
var meaningCases = []struct{ rule, want string }{
	{`-d 10.96.0.10/32 -p tcp -m comment --comment "ns/dns:tcp cluster IP" -m tcp --dport 53 -j KUBE-SVC-A`,
		`[dst=10.96.0.10/32 proto=6 dport=53-53] [] target14 "KUBE-SVC-A" dst32=10.96.0.10 dport=53 comment="ns/dns:tcp cluster IP"`},
	{`! -s 10.244.0.0/16 -d 10.0.0.1/255.255.255.0 -j KUBE-MARK-MASQ`,
		`[!src=10.244.0.0/16 dst=10.0.0.0/24] [] target14 "KUBE-MARK-MASQ"`},
	{`-d ::ffff:10.0.0.1 -i cni0 ! -o eth+ -p udp -j ACCEPT`,
		`[dst=10.0.0.1/32 iface=cni0 !iface=eth+ proto=17] [] target1 "ACCEPT" dst32=10.0.0.1`},
	{`-p tcp -m multiport --dports 80,443 -m multiport --sports 1000:2000 -j DROP`,
		`[proto=6 dport=[{80 80} {443 443}] sport=1000-2000] [] target2 "DROP"`},
	{`-p tcp -m tcp --dport 80 -m tcp --dport 81 -j DROP`,
		`[proto=6 dport=80-80 dport=81-81] [] target2 "DROP"`},
	{`-p sctp -m multiport --ports 5000: -j REJECT`,
		`[proto=132 ports=5000-65535] [] target3 "REJECT"`},
	{`-m mark ! --mark 0x4000/0x4000 -j RETURN`,
		`[!mark=0x4000/0x4000] [] target4 "RETURN"`},
	{`-m addrtype --src-type LOCAL -m addrtype --dst-type local,MULTICAST -j KUBE-EXT-A`,
		`[bits8=0x1 bits9=0x9] [] target14 "KUBE-EXT-A"`},
	{`-m conntrack --ctstate INVALID,DNAT -j DROP`,
		`[bits10=0x48] [] target2 "DROP"`},
	{`-m set --match-set KUBE-CLUSTER-IP dst,dst -p tcp --syn -g KUBE-MARK-MASQ`,
		`[set=KUBE-CLUSTER-IP[false false] proto=6 tcp=0x17/0x2] [] target14 "KUBE-MARK-MASQ" goto`},
	{`-m comment --comment "ns/a:p -> 10.0.0.1:80" -m recent --name KUBE-SEP-A --mask 255.255.255.255 --rsource --rcheck --seconds 10800 --reap -j KUBE-SEP-A`,
		`[] [recent1=KUBE-SEP-A/10800] target14 "KUBE-SEP-A" comment="ns/a:p -> 10.0.0.1:80"`},
	{`-m statistic --mode random --probability 0.33333333349 -j KUBE-SEP-A`,
		`[] [statistic1=0.333333333333] target14 "KUBE-SEP-A"`},
	{`-m statistic --mode random --probability 0.20000000019 -j KUBE-SEP-A`,
		`[] [statistic1=0.2] target14 "KUBE-SEP-A"`},
	{`-m statistic --mode nth --every 4 --packet 0 -j KUBE-SEP-B`,
		`[] [statistic2=0.25] target14 "KUBE-SEP-B"`},
	{`-m statistic --mode random ! --probability 0.25000000000 -j KUBE-SEP-B`,
		`[] [!statistic1=0.25] target14 "KUBE-SEP-B"`},
	{`-m statistic --mode nth --every 2 --packet 0 --probability 0.5 -j KUBE-SEP-B`,
		`[] [statistic2=0.5] target14 "KUBE-SEP-B"`},
	{`-p tcp -m recent --set --name KUBE-SEP-A --mask 255.255.255.255 --rsource -m tcp -j DNAT --to-destination 10.88.1.4:53`,
		`[proto=6] [] target5 "DNAT" to=10.88.1.4:53 recent-set`},
	{`-m recent --update --seconds x --hitcount 2 --rttl --name L -j DROP`,
		`[] [recent2=L/0] target2 "DROP"`},
	{`-p tcp -j DNAT --to-destination [::ffff:10.0.0.1]:8080`,
		`[proto=6] [] target5 "DNAT" to=10.0.0.1:8080`},
	{`-p tcp -j DNAT --to-destination 10.0.0.1-10.0.0.9:80`,
		`[proto=6] [] target5 "DNAT"`},
	{`-m ipvs --ipvs --vaddr 10.0.0.1/32 ! --vport 80 --vproto tcp --vdir ORIGINAL -j ACCEPT`,
		`[ipvs={Property:true PropertyNeg:false VAddr:10.0.0.1/32 VAddrNeg:false VPort:80 VPortNeg:true VProto:6 VProtoNeg:false Unknown:[--vdir ORIGINAL]}] [] target1 "ACCEPT"`},
	{`-p icmp -m icmp --icmp-type 8 -m quota --quota 5 -m limit --limit 5/s -d bogus --limit-burst 80 -j LOG`,
		`[proto=1] [] target10 "LOG" unknown=["-m icmp --icmp-type 8" "-m quota" "-m quota --quota 5" "-m limit -d bogus"]`},
	{`-p tcp -m tcp --tcp-flags SYN -j MARK --set-xmark 0x1/0x1`,
		`[proto=6 kind18] [] target9 "MARK"`},
	{`-f -m physdev --physdev-is-bridged -j CT --notrack`,
		`[kind13 kind12] [] target12 "CT"`},
	{`-p tcp -m comment --comment x -j NFQUEUE`,
		`[proto=6] [] target13 "NFQUEUE" comment="x"`},
	{`-s 10.0.0.0/8`, `[src=10.0.0.0/8] [] target0 ""`},
	{`-p tcp -j KUBE-A -j KUBE-B`, `[proto=6] [] target14 "KUBE-A"`},
}

// TestMeanings reads every kind of match and target once, as the views
// and the tracer use them.
func TestMeanings(t *testing.T) {
	for _, tc := range meaningCases {
		d, err := Parse("rules.txt", []byte("*filter\n:X - [0:0]\n-A X "+tc.rule+"\nCOMMIT\n"))
		if err != nil {
			t.Fatalf("%s: %v", tc.rule, err)
		}
		c := d.Chain("filter", "X")
		rd, ms := c.Table.Meanings().Chain(c)
		if got := describe(rd, &ms[0]); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.rule, got, tc.want)
		}
		if ms[0].Rule != c.Rules[0] {
			t.Errorf("%s: the meaning of another rule", tc.rule)
		}
		if got, want := ms[0].TargetIsRules(), ms[0].TargetName() == c.Rules[0].Target() && ms[0].Target != TargetNone; got != want {
			t.Errorf("%s: target is the rule's %t, want %t", tc.rule, got, want)
		}
		// ArgName, which the reading skips options with, names what Arg
		// reads.
		for j := range c.Rules[0].NumArgs() {
			if r := c.Rules[0]; r.ArgName(j) != r.Arg(j).Name {
				t.Errorf("%s: option %d named %q, Arg says %q", r.Raw, j, r.ArgName(j), r.Arg(j).Name)
			}
		}
	}
}

// TestMeaningsTable reads a table once for all its readers: every chain's
// rules in order, a chain apart from the table's list afresh, the same
// reading for readers that ask at once.
func TestMeaningsTable(t *testing.T) {
	const dump = `*nat
:PREROUTING ACCEPT [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-GONE - [0:0]
:KUBE-SVC-A - [0:0]
-A PREROUTING -j KUBE-SERVICES
-A KUBE-SERVICES -d 10.0.0.1/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-A
-A KUBE-SERVICES -d 10.0.0.2/32 -p tcp -m tcp --dport 81 -j KUBE-SVC-A
-A KUBE-GONE -j DROP
-A KUBE-SVC-A -m statistic --mode random --probability 0.50000000000 -j DNAT --to-destination 10.1.0.1:80
-A KUBE-SVC-A -j DNAT --to-destination 10.1.0.2:80
-X KUBE-GONE
COMMIT
`
	d, err := Parse("nat.txt", []byte(dump))
	if err != nil {
		t.Fatal(err)
	}
	tab := d.Table("nat")
	var wg sync.WaitGroup
	got := make([]*Meanings, 8)
	for i := range got {
		wg.Go(func() { got[i] = tab.Meanings() })
	}
	wg.Wait()
	for _, rd := range got[1:] {
		if rd != got[0] {
			t.Fatal("readers that ask at once get different readings")
		}
	}
	rd := got[0]
	for _, c := range tab.Chains {
		crd, ms := rd.Chain(c)
		if crd != rd || len(ms) != len(c.Rules) {
			t.Fatalf("%s: %d meanings of its own reading, want the table's %d", c.Name, len(ms), len(c.Rules))
		}
		for i := range ms {
			if ms[i].Rule != c.Rules[i] {
				t.Errorf("%s rule %d: the meaning of %q", c.Name, i, ms[i].Rule.Raw)
			}
		}
	}
	_, ms := rd.Chain(tab.Chain("KUBE-SERVICES"))
	if a := rd.Dst32(&ms[1]); a.String() != "10.0.0.2" || ms[1].Dport != 81 {
		t.Errorf("second service rule: %s port %d", a, ms[1].Dport)
	}
	// A chain the table does not list is read apart.
	apart := &Chain{Name: "KUBE-GONE", Table: tab, Rules: []*Rule{tab.Chain("KUBE-SVC-A").Rules[1]}, idx: -1}
	crd, ms := rd.Chain(apart)
	if crd == rd || len(ms) != 1 {
		t.Fatalf("a chain apart: %d meanings, reading of the table %t", len(ms), crd == rd)
	}
	if ap, ok := crd.NATDestination(&ms[0]); !ok || ap.String() != "10.1.0.2:80" {
		t.Errorf("a chain apart: DNAT to %s %t", ap, ok)
	}
	_, ms = rd.Chain(tab.Chain("KUBE-SVC-A"))
	st, ok := rd.FirstFork(&ms[0], MatchStatistic)
	if !ok || st.Probability() != 0.5 || math.IsNaN(st.Prob()) {
		t.Errorf("statistic: %+v %t", st, ok)
	}
	if _, ok := rd.First(&ms[0], MatchStatistic); ok {
		t.Error("a statistic match among the deterministic ones")
	}
}

// TestReadingSize guards the room a table's reading takes per rule and
// per match: a 10,000-Service node's nat table has about 190,000 rules
// and 290,000 matches, read once and kept for the whole analysis.
func TestReadingSize(t *testing.T) {
	if n := unsafe.Sizeof(Meaning{}); n > 24 {
		t.Errorf("a rule's Meaning takes %d bytes, want at most 24", n)
	}
	if n := unsafe.Sizeof(Match{}); n > 24 {
		t.Errorf("a Match takes %d bytes, want at most 24", n)
	}
}

// TestRuleSize guards the room a parsed rule and chain take (a
// 10,000-Service node has about 216,000 rules and 67,000 chains) and that the counters of a dump written with
// -c, kept beside its rules, are still each rule's own.
func TestRuleSize(t *testing.T) {
	if n := unsafe.Sizeof(Rule{}); n > 40 {
		t.Errorf("a Rule takes %d bytes, want at most 40", n)
	}
	if n := unsafe.Sizeof(Chain{}); n > 80 {
		t.Errorf("a Chain takes %d bytes, want at most 80", n)
	}
	d, err := Parse("x", []byte("*filter\n:INPUT ACCEPT [0:0]\n:FOO - [0:0]\n[1:2] -A FOO\n[3:4] -A FOO\n-A FOO -j ACCEPT\nCOMMIT\n"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range d.Chain("filter", "FOO").Rules {
		pk, by, ok := r.Counters()
		got = append(got, fmt.Sprint(pk, by, ok))
	}
	if want := "[1 2 true 3 4 true 0 0 false]"; fmt.Sprint(got) != want {
		t.Errorf("counters %v, want %s", got, want)
	}
}

// TestChainIndexRoom: once a dump is parsed, its tables find their chains by
// name in an index of a few bytes per chain, not a map; every chain is
// found, a deleted or unknown one is not.
func TestChainIndexRoom(t *testing.T) {
	var b strings.Builder
	b.WriteString("*nat\n:PREROUTING ACCEPT [0:0]\n")
	const n = 5000
	for i := range n {
		fmt.Fprintf(&b, ":KUBE-SEP-%06d - [0:0]\n", i)
	}
	b.WriteString("-X KUBE-SEP-000007\nCOMMIT\n")
	d, err := Parse("x", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	tb := d.Table("nat")
	if tb.index == nil {
		t.Fatalf("the table has no index of its chains")
	}
	if per := float64(4*len(tb.index.slots)) / float64(len(tb.Chains)); per > 8 {
		t.Errorf("the index takes %.1f bytes per chain, want at most 8", per)
	}
	for _, c := range tb.Chains {
		if got := tb.Chain(c.Name); got != c {
			t.Errorf("Chain(%s) = %v", c.Name, got)
		}
	}
	for _, name := range []string{"KUBE-SEP-000007", "KUBE-SEP-999999", ""} {
		if c := tb.Chain(name); c != nil {
			t.Errorf("Chain(%q) = %v, want nil", name, c.Name)
		}
	}
	if len(tb.Chains) != n {
		t.Errorf("%d chains, want %d", len(tb.Chains), n)
	}
}

// TestMeaningsSplit reads a table in two halves at once as a large one
// is: the reading is the one a single pass makes, the matches, their
// extensions and the matches not modelled of each rule in the same
// places, wherever the halves meet.
func TestMeaningsSplit(t *testing.T) {
	var b strings.Builder
	b.WriteString("*filter\n")
	const chains = 40
	for i := range chains {
		fmt.Fprintf(&b, ":C%d - [0:0]\n", i)
	}
	for i := range chains {
		// Chains of different lengths, some empty, each with a different
		// mix of the rules.
		for k := range (i * 7) % 23 {
			fmt.Fprintf(&b, "-A C%d %s\n", i, meaningCases[(i+k*5)%len(meaningCases)].rule)
		}
	}
	b.WriteString("COMMIT\n")
	d, err := Parse("rules.txt", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	tab := d.Table("filter")
	j := tab.Jumps()
	one := tab.readMeanings(j, false)
	two := tab.readMeanings(j, true)
	if len(two.ms) != len(one.ms) || len(two.exts) != len(one.exts) || len(two.unknown) != len(one.unknown) {
		t.Fatalf("split reading: %d matches, %d extensions, %d rules with unknown matches; want %d, %d, %d",
			len(two.ms), len(two.exts), len(two.unknown), len(one.ms), len(one.exts), len(one.unknown))
	}
	for _, c := range tab.Chains {
		_, ms1 := one.Chain(c)
		_, ms2 := two.Chain(c)
		for i := range ms1 {
			if ms1[i] != ms2[i] {
				t.Errorf("%s rule %d: split reading %+v, want %+v", c.Name, i, ms2[i], ms1[i])
			}
			if got, want := describe(two, &ms2[i]), describe(one, &ms1[i]); got != want {
				t.Errorf("%s rule %d: split reading %s, want %s", c.Name, i, got, want)
			}
			if !slices.Equal(two.unknown[&ms2[i]], one.unknown[&ms1[i]]) {
				t.Errorf("%s rule %d: unknown %q, want %q", c.Name, i, two.unknown[&ms2[i]], one.unknown[&ms1[i]])
			}
		}
	}
	if !slices.Equal(two.ms, one.ms) {
		t.Error("split reading: the block of matches differs")
	}
	if !reflect.DeepEqual(two.exts, one.exts) {
		t.Error("split reading: the extensions differ")
	}
}

// TestDropMeanings checks that a dropped reading is made again, the same,
// by the next reader, and that a reader holding the old one keeps it.
func TestDropMeanings(t *testing.T) {
	d, err := Parse("rules.txt", []byte("*nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n"+
		"-A PREROUTING -j KUBE-SERVICES\n-A KUBE-SERVICES -d 10.0.0.1/32 -p tcp -m tcp --dport 80 -j DNAT --to-destination 10.1.0.1:8080\nCOMMIT\n"))
	if err != nil {
		t.Fatal(err)
	}
	tab := d.Table("nat")
	first := tab.Meanings()
	if !tab.MeaningsRead() {
		t.Fatal("MeaningsRead false after Meanings")
	}
	tab.DropMeanings()
	if tab.MeaningsRead() {
		t.Fatal("MeaningsRead true after DropMeanings")
	}
	again := tab.Meanings()
	if again == first {
		t.Fatal("Meanings returned the dropped reading")
	}
	c := tab.Chain("KUBE-SERVICES")
	_, ms1 := first.Chain(c)
	_, ms2 := again.Chain(c)
	if len(ms1) != 1 || len(ms2) != 1 {
		t.Fatalf("rules read: %d before the drop, %d after; want 1", len(ms1), len(ms2))
	}
	if ms1[0].Dport != 80 || ms2[0].Dport != ms1[0].Dport || ms2[0].Target != ms1[0].Target {
		t.Errorf("reading after the drop %+v, before %+v", ms2[0], ms1[0])
	}
	if !slices.Equal(first.Det(&ms1[0]), again.Det(&ms2[0])) {
		t.Errorf("matches after the drop %v, before %v", again.Det(&ms2[0]), first.Det(&ms1[0]))
	}
}
