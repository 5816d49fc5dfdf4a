package trace_test

import (
	"fmt"
	"math"
	"net/netip"
	"sort"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/trace"
	"github.com/proxyscan/proxyscan/parsers/ipset"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/ipvs"
)

// dumpOf builds an iptables-save dump: each table is given by its name and
// its rule lines; the chains the rules name are declared.
func dumpOf(t testing.TB, tables map[string][]string, policies map[string]string) *iptables.Dump {
	t.Helper()
	var b strings.Builder
	names := make([]string, 0, len(tables))
	for n := range tables {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, tbl := range names {
		fmt.Fprintf(&b, "*%s\n", tbl)
		seen := map[string]bool{}
		for _, c := range iptables.BuiltinChains(tbl) {
			pol := "ACCEPT"
			if p, ok := policies[tbl+":"+c]; ok {
				pol = p
			}
			fmt.Fprintf(&b, ":%s %s [0:0]\n", c, pol)
			seen[c] = true
		}
		for _, r := range tables[tbl] {
			f := strings.Fields(r)
			for i, w := range f {
				if (i == 1 && f[0] == "-A") || (i > 0 && (f[i-1] == "-j" || f[i-1] == "-g")) {
					if !seen[w] && !iptables.StandardTargets[w] && strings.ToUpper(w) == w && strings.HasPrefix(w, "X-") {
						fmt.Fprintf(&b, ":%s - [0:0]\n", w)
						seen[w] = true
					}
				}
			}
		}
		for _, r := range tables[tbl] {
			b.WriteString(r + "\n")
		}
		b.WriteString("COMMIT\n")
	}
	d, err := iptables.Parse("test.rules", []byte(b.String()))
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	return d
}

var testLocal = []netip.Addr{netip.MustParseAddr("192.168.0.10"), netip.MustParseAddr("127.0.0.1")}

func traceOne(t testing.TB, dp *trace.Dataplane, pkt trace.Packet) *trace.Result {
	t.Helper()
	res, err := trace.Trace(dp, pkt, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// outcomes sums the probabilities of a result by "VERDICT destination".
func outcomes(res *trace.Result) map[string]float64 {
	out := map[string]float64{}
	for _, p := range res.Paths {
		k := string(p.Verdict) + " " + p.Destination
		if p.Masquerade {
			k += " masq"
		}
		out[k] += p.Probability
	}
	return out
}

func TestMatches(t *testing.T) {
	pod := trace.Packet{Src: netip.MustParseAddr("10.244.0.5"), Dst: netip.MustParseAddrPort("10.96.0.1:80"), Proto: "tcp", From: model.FromPod, InIface: "veth1234"}
	cases := []struct {
		name string
		rule string // in filter FORWARD, target DROP
		pkt  trace.Packet
		drop bool
	}{
		{"source", "-s 10.244.0.0/16", pod, true},
		{"source negated", "! -s 10.244.0.0/16", pod, false},
		{"destination host", "-d 10.96.0.1/32", pod, true},
		{"destination other", "-d 10.96.0.2/32", pod, false},
		{"destination negated", "! -d 10.96.0.2/32", pod, true},
		{"dotted mask", "-d 10.96.0.0/255.255.0.0", pod, true},
		{"in interface prefix", "-i veth+", pod, true},
		{"in interface other", "-i eth0", pod, false},
		{"in interface negated", "! -i eth0", pod, true},
		{"protocol", "-p tcp", pod, true},
		{"protocol udp", "-p udp", pod, false},
		{"protocol negated", "! -p udp", pod, true},
		{"dport", "-p tcp -m tcp --dport 80", pod, true},
		{"dport other", "-p tcp -m tcp --dport 81", pod, false},
		{"dport negated", "-p tcp -m tcp ! --dport 81", pod, true},
		{"dport range", "-p tcp -m tcp --dport 70:90", pod, true},
		{"sport", "-p tcp -m tcp --sport 40000", pod, true},
		{"multiport", "-p tcp -m multiport --dports 22,80,443", pod, true},
		{"multiport range miss", "-p tcp -m multiport --dports 1:79,81:100", pod, false},
		{"syn", "-p tcp -m tcp --syn", pod, true},
		{"tcp flags", "-p tcp -m tcp --tcp-flags SYN,ACK SYN", pod, true},
		{"tcp flags ack", "-p tcp -m tcp --tcp-flags SYN,ACK ACK", pod, false},
		{"comment", `-m comment --comment "any text"`, pod, true},
		{"mark unset", "-m mark --mark 0x4000/0x4000", pod, false},
		{"mark negated", "-m mark ! --mark 0x4000/0x4000", pod, true},
		{"ctstate new", "-m conntrack --ctstate NEW", pod, true},
		{"ctstate established", "-m conntrack --ctstate RELATED,ESTABLISHED", pod, false},
		{"ctstate invalid", "-m conntrack --ctstate INVALID", pod, false},
		{"ctstate negated", "-m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT", pod, true},
		{"state new", "-m state --state NEW", pod, true},
		{"addrtype dst local", "-m addrtype --dst-type LOCAL", pod, false},
		{"addrtype dst local node", "-m addrtype --dst-type LOCAL", withDst(pod, "192.168.0.10:80"), false}, // delivered: INPUT, not FORWARD
		{"addrtype src not local", "-m addrtype ! --src-type LOCAL", pod, true},
		{"addrtype limit iface", "-m addrtype --dst-type UNICAST --limit-iface-out", pod, true},
		{"physdev not bridged", "-m physdev --physdev-is-in", pod, false},
		{"physdev negated", "-m physdev ! --physdev-is-in", pod, true},
		{"nfacct counts", "-m nfacct --nfacct-name x", pod, true},
		{"fragment", "-f", pod, false},
		{"set dst", "-m set --match-set S-IPPORT dst,dst", pod, true},
		{"set src", "-m set --match-set S-IPPORT src,dst", pod, false},
		{"set negated", "-m set ! --match-set S-IPPORT dst,dst", pod, false},
		{"set net", "-m set --match-set S-NET src", pod, true},
		{"set bitmap port", "-m set --match-set S-PORTS dst", pod, true},
		{"set ip port net", "-m set --match-set S-IPPORTNET dst,dst,src", pod, true},
		{"set ip port ip", "-m set --match-set S-IPPORTIP dst,dst,src", pod, false},
		{"set missing", "-m set --match-set NOPE dst", pod, false},
		{"unknown match", "-m owner --uid-owner 0", pod, false},
	}
	sets, err := ipset.Parse("sets", []byte(`create S-IPPORT hash:ip,port family inet hashsize 1024 maxelem 65536
add S-IPPORT 10.96.0.1,tcp:80
create S-NET hash:net family inet hashsize 1024 maxelem 65536
add S-NET 10.244.0.0/16
create S-PORTS bitmap:port range 0-65535
add S-PORTS 80
create S-IPPORTNET hash:ip,port,net family inet hashsize 1024 maxelem 65536
add S-IPPORTNET 10.96.0.1,tcp:80,10.244.0.0/24
create S-IPPORTIP hash:ip,port,ip family inet hashsize 1024 maxelem 65536
add S-IPPORTIP 10.96.0.1,tcp:80,10.244.0.6
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := dumpOf(t, map[string][]string{"filter": {"-A FORWARD " + c.rule + " -j DROP"}}, nil)
			dp := &trace.Dataplane{Mode: "iptables", IPTables: []*iptables.Dump{d}, Local: testLocal, IPSets: []*ipset.Dump{sets}}
			res := traceOne(t, dp, c.pkt)
			if len(res.Paths) != 1 {
				t.Fatalf("%d paths, want 1", len(res.Paths))
			}
			got := res.Paths[0].Verdict == trace.VerdictDrop
			if got != c.drop {
				t.Errorf("rule %q: dropped %t, want %t (verdict %s)", c.rule, got, c.drop, res.Paths[0].Verdict)
			}
			if c.name == "unknown match" {
				if len(res.Paths[0].Steps) != 1 || res.Paths[0].Steps[0].Warning == "" {
					t.Errorf("an unknown match gives a step with a warning, got %+v", res.Paths[0].Steps)
				}
			}
		})
	}
}

func withDst(p trace.Packet, dst string) trace.Packet {
	p.Dst = netip.MustParseAddrPort(dst)
	return p
}

// TestStatisticExact checks that kube-proxy's statistic chains give every
// endpoint exactly 1/n, with the probabilities iptables-save prints.
func TestStatisticExact(t *testing.T) {
	for n := 1; n <= 12; n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			rules := []string{"-A PREROUTING -d 10.96.0.1/32 -p tcp -m tcp --dport 80 -j X-SVC"}
			for i := 0; i < n; i++ {
				r := fmt.Sprintf("-A X-SVC -m comment --comment \"ep %d\"", i)
				if i < n-1 {
					// iptables-save prints the kernel's 31-bit fraction with 11 decimals.
					stored := math.Round((1.0 / float64(n-i)) * (1 << 31))
					r += fmt.Sprintf(" -m statistic --mode random --probability %.11f", stored/(1<<31))
				}
				rules = append(rules, r+fmt.Sprintf(" -j X-SEP%d", i))
				rules = append(rules, fmt.Sprintf("-A X-SEP%d -p tcp -m tcp -j DNAT --to-destination 10.244.%d.1:8080", i, i))
			}
			d := dumpOf(t, map[string][]string{"nat": rules}, nil)
			dp := &trace.Dataplane{Mode: "iptables", IPTables: []*iptables.Dump{d}, Local: testLocal}
			res := traceOne(t, dp, trace.Packet{Src: netip.MustParseAddr("10.244.0.5"), Dst: netip.MustParseAddrPort("10.96.0.1:80"), Proto: "tcp", From: model.FromPod})
			if len(res.Paths) != n {
				t.Fatalf("%d paths, want %d", len(res.Paths), n)
			}
			for _, p := range res.Paths {
				if math.Abs(p.Probability-1/float64(n)) > 1e-12 {
					t.Errorf("%s: probability %v, want exactly 1/%d", p.Destination, p.Probability, n)
				}
			}
		})
	}
}

func TestChainSemantics(t *testing.T) {
	pkt := trace.Packet{Src: netip.MustParseAddr("10.244.0.5"), Dst: netip.MustParseAddrPort("10.96.0.1:80"), Proto: "tcp", From: model.FromPod}
	cases := []struct {
		name     string
		rules    []string
		policies map[string]string
		want     string
	}{
		{"jump returns to the caller", []string{
			"-A FORWARD -j X-A",
			"-A FORWARD -j DROP",
			"-A X-A -j RETURN",
		}, nil, "DROP 10.96.0.1:80"},
		{"falling off a user chain returns", []string{
			"-A FORWARD -j X-A",
			"-A FORWARD -j REJECT",
			"-A X-A -s 1.2.3.4/32 -j ACCEPT",
		}, nil, "REJECT 10.96.0.1:80"},
		{"goto returns past the caller", []string{
			"-A FORWARD -j X-A",
			"-A FORWARD -j DROP",
			"-A X-A -g X-B",
			"-A X-A -j REJECT",
			"-A X-B -j RETURN",
		}, nil, "DROP 10.96.0.1:80"},
		{"jump comes back to the next rule", []string{
			"-A FORWARD -j X-A",
			"-A FORWARD -j DROP",
			"-A X-A -j X-B",
			"-A X-A -j REJECT",
			"-A X-B -j RETURN",
		}, nil, "REJECT 10.96.0.1:80"},
		{"goto from a built-in chain ends in its policy", []string{
			"-A FORWARD -g X-B",
			"-A FORWARD -j REJECT",
			"-A X-B -j RETURN",
		}, map[string]string{"filter:FORWARD": "DROP"}, "DROP 10.96.0.1:80"},
		{"policy drop", []string{"-A FORWARD -s 1.2.3.4/32 -j ACCEPT"}, map[string]string{"filter:FORWARD": "DROP"}, "DROP 10.96.0.1:80"},
		{"return from a built-in chain applies the policy", []string{"-A FORWARD -j RETURN", "-A FORWARD -j REJECT"}, map[string]string{"filter:FORWARD": "DROP"}, "DROP 10.96.0.1:80"},
		{"accept ends the chain", []string{"-A FORWARD -j ACCEPT", "-A FORWARD -j DROP"}, nil, "ACCEPT 10.96.0.1:80"},
		{"log continues", []string{"-A FORWARD -j LOG --log-prefix x", "-A FORWARD -j DROP"}, nil, "DROP 10.96.0.1:80"},
		{"unknown target continues", []string{"-A FORWARD -j CLASSIFY --set-class 1:1", "-A FORWARD -j DROP"}, nil, "DROP 10.96.0.1:80"},
		{"mark then match", []string{
			"-A FORWARD -j MARK --set-xmark 0x4000/0x4000",
			"-A FORWARD -m mark --mark 0x4000/0x4000 -j REJECT",
		}, nil, "REJECT 10.96.0.1:80"},
		{"or-mark and and-mark", []string{
			"-A FORWARD -j MARK --or-mark 0x4001",
			"-A FORWARD -j MARK --and-mark 0x4000",
			"-A FORWARD -m mark --mark 0x4000 -j REJECT",
		}, nil, "REJECT 10.96.0.1:80"},
		{"xor-mark clears", []string{
			"-A FORWARD -j MARK --set-xmark 0x4000/0x4000",
			"-A FORWARD -j MARK --xor-mark 0x4000",
			"-A FORWARD -m mark --mark 0x4000/0x4000 -j REJECT",
		}, nil, "ACCEPT 10.96.0.1:80"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := dumpOf(t, map[string][]string{"filter": c.rules}, c.policies)
			dp := &trace.Dataplane{Mode: "iptables", IPTables: []*iptables.Dump{d}, Local: testLocal}
			res := traceOne(t, dp, pkt)
			got := outcomes(res)
			if len(got) != 1 || got[c.want] != 1 {
				t.Errorf("outcomes %v, want %s", got, c.want)
			}
		})
	}
}

func TestNATAndMasquerade(t *testing.T) {
	nat := []string{
		"-A PREROUTING -j X-SERVICES",
		"-A OUTPUT -j X-SERVICES",
		"-A POSTROUTING -j X-POST",
		"-A X-SERVICES -d 10.96.0.1/32 -p tcp -m tcp --dport 80 -j X-SVC",
		"-A X-SERVICES -m addrtype --dst-type LOCAL -j X-NODEPORTS",
		"-A X-NODEPORTS -p tcp -m tcp --dport 30080 -j X-MASQ",
		"-A X-NODEPORTS -p tcp -m tcp --dport 30080 -j X-SVC",
		"-A X-SVC ! -s 10.244.0.0/16 -j X-MASQ",
		"-A X-SVC -p tcp -m tcp -j DNAT --to-destination 10.244.1.7:8080",
		"-A X-MASQ -j MARK --set-xmark 0x4000/0x4000",
		"-A X-POST -m mark ! --mark 0x4000/0x4000 -j RETURN",
		"-A X-POST -j MASQUERADE",
	}
	d := dumpOf(t, map[string][]string{"nat": nat}, nil)
	dp := &trace.Dataplane{Mode: "iptables", IPTables: []*iptables.Dump{d}, Local: testLocal, PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/24")}}
	cases := []struct {
		name string
		pkt  trace.Packet
		want string
	}{
		{"pod to cluster IP", trace.Packet{Dst: netip.MustParseAddrPort("10.96.0.1:80"), Proto: "tcp", From: model.FromPod}, "DNAT 10.244.1.7:8080"},
		{"node to cluster IP", trace.Packet{Dst: netip.MustParseAddrPort("10.96.0.1:80"), Proto: "tcp", From: model.FromNode}, "DNAT 10.244.1.7:8080 masq"},
		{"external to node port", trace.Packet{Dst: netip.MustParseAddrPort("192.168.0.10:30080"), Proto: "tcp", From: model.FromExternal}, "DNAT 10.244.1.7:8080 masq"},
		{"external to another port", trace.Packet{Dst: netip.MustParseAddrPort("192.168.0.10:22"), Proto: "tcp", From: model.FromExternal}, "LOCAL 192.168.0.10:22"},
		{"pod elsewhere", trace.Packet{Dst: netip.MustParseAddrPort("8.8.8.8:53"), Proto: "udp", From: model.FromPod}, "ACCEPT 8.8.8.8:53"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := traceOne(t, dp, c.pkt)
			got := outcomes(res)
			if len(got) != 1 || got[c.want] != 1 {
				t.Errorf("outcomes %v, want %s", got, c.want)
			}
		})
	}
	res := traceOne(t, dp, cases[0].pkt)
	if res.Packet.Src != netip.MustParseAddr("10.244.0.1") || res.Packet.InIface == "" {
		t.Errorf("chosen pod source %s iface %q, want the first host of the pod CIDR and a veth", res.Packet.Src, res.Packet.InIface)
	}
	res = traceOne(t, dp, cases[1].pkt)
	if res.Packet.Src != netip.MustParseAddr("192.168.0.10") {
		t.Errorf("chosen node source %s, want the node address", res.Packet.Src)
	}
}

func TestLimits(t *testing.T) {
	// A loop through two chains (the kernel refuses it on load; a
	// hand-written dump can hold it) and a fork bomb of statistics.
	loop := dumpOf(t, map[string][]string{"filter": {"-A FORWARD -j X-A", "-A X-A -j X-B", "-A X-B -j X-A"}}, nil)
	dp := &trace.Dataplane{Mode: "iptables", IPTables: []*iptables.Dump{loop}, Local: testLocal}
	pkt := trace.Packet{Src: netip.MustParseAddr("10.244.0.5"), Dst: netip.MustParseAddrPort("10.96.0.1:80"), Proto: "tcp", From: model.FromPod}
	res, err := trace.Trace(dp, pkt, trace.Options{MaxSteps: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Paths) != 1 || len(res.Paths[0].Warnings) == 0 {
		t.Errorf("a loop ends with a warning, got %+v", res.Paths)
	}
	var rules []string
	for i := 0; i < 20; i++ {
		rules = append(rules, "-A FORWARD -m statistic --mode random --probability 0.5 -j MARK --or-mark 0x1")
	}
	bomb := dumpOf(t, map[string][]string{"filter": rules}, nil)
	dp.IPTables = []*iptables.Dump{bomb}
	res, err = trace.Trace(dp, pkt, trace.Options{MaxPaths: 64})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Paths) > 64 || len(res.Warnings) == 0 {
		t.Errorf("%d paths, warnings %q: want at most 64 and a warning", len(res.Paths), res.Warnings)
	}
}

func TestIPVSSchedulers(t *testing.T) {
	list := `IP Virtual Server version 1.2.1 (size=4096)
Prot LocalAddress:Port Scheduler Flags
  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn
TCP  10.96.0.1:80 wrr
  -> 10.244.1.1:8080              Masq    3      0          0
  -> 10.244.1.2:8080              Masq    1      0          0
  -> 10.244.1.3:8080              Masq    0      5          0
TCP  10.96.0.2:80 lc
  -> 10.244.2.1:8080              Masq    1      0          0
  -> 10.244.2.2:8080              Masq    1      0          0
TCP  10.96.0.3:80 sh persistent 60
  -> 10.244.3.1:8080              Masq    1      0          0
TCP  10.96.0.4:80 rr
  -> 10.244.4.1:8080              Masq    0      0          0
TCP  10.96.0.5:80 rr
`
	tbl, err := ipvs.Parse("ipvsadm.txt", []byte(list))
	if err != nil {
		t.Fatal(err)
	}
	d := dumpOf(t, map[string][]string{"filter": {"-A INPUT -s 1.2.3.4/32 -j DROP"}}, nil)
	local := append([]netip.Addr{}, testLocal...)
	for i := 1; i <= 5; i++ {
		local = append(local, netip.MustParseAddr(fmt.Sprintf("10.96.0.%d", i)))
	}
	dp := &trace.Dataplane{Mode: "ipvs", IPTables: []*iptables.Dump{d}, IPVS: []*ipvs.Dump{tbl}, Local: local}
	cases := []struct {
		dst   string
		want  map[string]float64
		conds bool
	}{
		{"10.96.0.1:80", map[string]float64{"DNAT 10.244.1.1:8080": 0.75, "DNAT 10.244.1.2:8080": 0.25}, false},
		{"10.96.0.2:80", map[string]float64{"DNAT 10.244.2.1:8080": 0.5, "DNAT 10.244.2.2:8080": 0.5}, true},
		{"10.96.0.3:80", map[string]float64{"DNAT 10.244.3.1:8080": 1}, true},
		{"10.96.0.4:80", map[string]float64{"REJECT 10.96.0.4:80": 1}, false},
		{"10.96.0.5:80", map[string]float64{"REJECT 10.96.0.5:80": 1}, false},
		{"10.96.0.6:80", map[string]float64{"ACCEPT 10.96.0.6:80": 1}, false},
	}
	for _, c := range cases {
		t.Run(c.dst, func(t *testing.T) {
			res := traceOne(t, dp, trace.Packet{Dst: netip.MustParseAddrPort(c.dst), Proto: "tcp", From: model.FromPod})
			got := outcomes(res)
			if len(got) != len(c.want) {
				t.Fatalf("outcomes %v, want %v", got, c.want)
			}
			for k, p := range c.want {
				if math.Abs(got[k]-p) > 1e-12 {
					t.Errorf("outcomes %v, want %v", got, c.want)
				}
			}
			if (len(res.Paths[0].Conditions) > 0) != c.conds {
				t.Errorf("conditions %q, want some: %t", res.Paths[0].Conditions, c.conds)
			}
		})
	}
}

func TestCompare(t *testing.T) {
	good := dumpOf(t, map[string][]string{"nat": {
		"-A PREROUTING -j X-SVC",
		"-A X-SVC -m statistic --mode random --probability 0.50000000000 -j X-SEP1",
		"-A X-SVC -j X-SEP2",
		"-A X-SEP1 -p tcp -m tcp -j DNAT --to-destination 10.244.1.1:80",
		"-A X-SEP2 -p tcp -m tcp -j DNAT --to-destination 10.244.1.2:80",
	}}, nil)
	stale := dumpOf(t, map[string][]string{"nat": {
		"-A PREROUTING -j X-SVC",
		"-A X-SVC -j X-SEP1",
		"-A X-SEP1 -p tcp -m tcp -j DNAT --to-destination 10.244.1.1:80",
	}}, nil)
	pkt := trace.Packet{Src: netip.MustParseAddr("10.244.0.5"), Dst: netip.MustParseAddrPort("10.96.0.1:80"), Proto: "tcp", From: model.FromPod}
	exp := traceOne(t, &trace.Dataplane{Mode: "iptables", IPTables: []*iptables.Dump{good}, Local: testLocal, Expected: true}, pkt)
	act := traceOne(t, &trace.Dataplane{Mode: "iptables", IPTables: []*iptables.Dump{good}, Local: testLocal}, pkt)
	if c := trace.Compare(act, exp); c.Diverged || len(c.Outcomes) != 2 {
		t.Errorf("same rules: diverged %t, outcomes %+v", c.Diverged, c.Outcomes)
	}
	act = traceOne(t, &trace.Dataplane{Mode: "iptables", IPTables: []*iptables.Dump{stale}, Local: testLocal}, pkt)
	c := trace.Compare(act, exp)
	if !c.Diverged || len(c.Divergences) == 0 {
		t.Fatalf("stale rules: diverged %t, divergences %+v", c.Diverged, c.Divergences)
	}
	var d *trace.Divergence
	for i := range c.Divergences {
		if strings.Contains(c.Divergences[i].Outcome, "10.244.1.2:80") {
			d = &c.Divergences[i]
		}
	}
	if d == nil || d.Index != 1 || d.Actual == nil || d.Expected == nil || !strings.Contains(d.Expected.Rule, "-j X-SEP2") {
		t.Errorf("divergence for the missing endpoint: %+v", d)
	}
}

// TestIndexedChainMultiport: in a chain big enough to be indexed by
// destination, a rule matching a list of ports (and no one address) is
// a candidate for every packet, as in a small chain.
func TestIndexedChainMultiport(t *testing.T) {
	var rules []string
	for i := range 100 {
		rules = append(rules, fmt.Sprintf("-A PREROUTING -d 10.0.%d.%d/32 -p tcp -m tcp --dport 80 -j ACCEPT", i/250, i%250+1))
	}
	rules = append(rules, "-A PREROUTING -p tcp -m multiport --dports 443,8443 -j DNAT --to-destination 10.1.0.1:443")
	d := dumpOf(t, map[string][]string{"nat": rules}, nil)
	dp := &trace.Dataplane{Mode: "iptables", IPTables: []*iptables.Dump{d}, Local: testLocal}
	for _, port := range []string{"443", "8443"} {
		res := traceOne(t, dp, trace.Packet{Dst: netip.MustParseAddrPort("10.9.0.1:" + port), Proto: "tcp", From: model.FromPod})
		if got := outcomes(res); got["DNAT 10.1.0.1:443"] != 1 {
			t.Errorf("port %s: %v, want DNAT to 10.1.0.1:443", port, got)
		}
	}
}

// TestIPVSListingWithoutWeights traces through virtual servers read from
// listings that print no weights (ipvsadm -Ln --stats, --thresholds):
// every real server is live and equally likely, and the path says the
// listing did not say.
func TestIPVSListingWithoutWeights(t *testing.T) {
	plain := `IP Virtual Server version 1.2.1 (size=4096)
Prot LocalAddress:Port Scheduler Flags
  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn
TCP  10.96.0.1:80 wrr
  -> 10.244.1.1:8080              Masq    3      0          0
  -> 10.244.1.2:8080              Masq    1      0          0
  -> 10.244.1.3:8080              Masq    0      5          0
`
	full, err := ipvs.Parse("ipvsadm.txt", []byte(plain))
	if err != nil {
		t.Fatal(err)
	}
	d := dumpOf(t, map[string][]string{"filter": {"-A INPUT -s 1.2.3.4/32 -j DROP"}}, nil)
	local := append(append([]netip.Addr{}, testLocal...), netip.MustParseAddr("10.96.0.1"))
	third := 1.0 / 3
	for _, tc := range []struct {
		cols ipvs.Columns
		want map[string]float64
		cond string
	}{
		{ipvs.ColumnsPlain, map[string]float64{"DNAT 10.244.1.1:8080": 0.75, "DNAT 10.244.1.2:8080": 0.25}, ""},
		{ipvs.ColumnsStats, map[string]float64{"DNAT 10.244.1.1:8080": third, "DNAT 10.244.1.2:8080": third, "DNAT 10.244.1.3:8080": third},
			"ipvsadm -Ln --stats prints no scheduler, persistence or weights: every real server is counted as live and equally likely"},
		{ipvs.ColumnsThresholds, map[string]float64{"DNAT 10.244.1.1:8080": third, "DNAT 10.244.1.2:8080": third, "DNAT 10.244.1.3:8080": third},
			"ipvsadm -Ln --thresholds prints no weights: every real server is counted as live and equally likely"},
	} {
		t.Run(string(tc.cols), func(t *testing.T) {
			tbl, err := ipvs.Parse("ipvsadm.txt", ipvs.FormatList(full, ipvs.ListOptions{Columns: tc.cols}))
			if err != nil {
				t.Fatal(err)
			}
			dp := &trace.Dataplane{Mode: "ipvs", IPTables: []*iptables.Dump{d}, IPVS: []*ipvs.Dump{tbl}, Local: local}
			res := traceOne(t, dp, trace.Packet{Dst: netip.MustParseAddrPort("10.96.0.1:80"), Proto: "tcp", From: model.FromPod})
			got := outcomes(res)
			if len(got) != len(tc.want) {
				t.Fatalf("outcomes %v, want %v", got, tc.want)
			}
			for k, p := range tc.want {
				if math.Abs(got[k]-p) > 1e-12 {
					t.Errorf("outcomes %v, want %v", got, tc.want)
				}
			}
			conds := strings.Join(res.Paths[0].Conditions, "\n")
			if tc.cond != "" && !strings.Contains(conds, tc.cond) || tc.cond == "" && strings.Contains(conds, "equally likely") {
				t.Errorf("conditions %q, want %q", res.Paths[0].Conditions, tc.cond)
			}
		})
	}
}
