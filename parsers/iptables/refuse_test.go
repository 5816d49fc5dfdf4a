package iptables

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/internal/netnstest"
	"github.com/proxyscan/proxyscan/parsers"
)

// refused are rules with values iptables-restore refuses, in the table
// they go in, with the message the parser gives.
var refused = []struct {
	name, table, rule, want string
	v6                      bool
}{
	{"mask /33", "filter", "-A OUTPUT -d 10.0.0.0/33 -j ACCEPT", "-d: invalid mask /33 of 10.0.0.0 (at most /32)", false},
	{"source mask /33", "filter", "-A OUTPUT -s 10.0.0.0/40 -j ACCEPT", "-s: invalid mask /40 of 10.0.0.0 (at most /32)", false},
	{"mask /129", "filter", "-A OUTPUT -d fd00::/129 -j ACCEPT", "-d: invalid mask /129 of fd00:: (at most /128)", true},
	{"port name", "filter", "-A OUTPUT -p tcp --dport abc -j ACCEPT", `--dport: port "abc" is not a number from 0 to 65535`, false},
	{"port too large", "filter", "-A OUTPUT -p tcp --dport 70000 -j ACCEPT", `--dport: port "70000" is not a number from 0 to 65535`, false},
	{"port range", "filter", "-A OUTPUT -p tcp --sport 5:abc -j ACCEPT", `--sport: port "abc"`, false},
	{"multiport", "filter", "-A OUTPUT -p tcp -m multiport --dports 80,abc -j ACCEPT", `--dports: port "abc"`, false},
	{"negative probability", "filter", "-A OUTPUT -m statistic --mode random --probability -0.5 -j ACCEPT", `--probability: probability "-0.5" is not a number from 0 to 1`, false},
	{"probability over 1", "filter", "-A OUTPUT -m statistic --mode random --probability 1.5 -j ACCEPT", `--probability: probability "1.5"`, false},
	{"probability not a number", "filter", "-A OUTPUT -m statistic --mode random --probability abc -j ACCEPT", `--probability: probability "abc"`, false},
	{"empty DNAT target", "nat", `-A OUTPUT -p tcp -j DNAT --to-destination ""`, "--to-destination: empty address", false},
	{"unknown match", "filter", `-A OUTPUT -m comnent --comment "x" -j ACCEPT`, `-m: unknown match module "comnent"`, false},
	{"match glued to -m", "filter", `-A OUTPUT -m0comment --comment "x" -j ACCEPT`, `-m: unknown match module "0comment"`, false},
	{"unknown target with options", "nat", "-A OUTPUT -p tcp -j DNAX --to-destination 10.0.0.1:80", `-j: "DNAX" is not a target iptables knows, and a jump to a chain takes no option (--to-destination)`, false},
	{"unknown protocol", "filter", "-A OUTPUT -p tcx -j ACCEPT", `-p: unknown protocol "tcx"`, false},
	{"set flag", "filter", "-A OUTPUT -m set --match-set KUBE-CLUSTER-IP d3t -j ACCEPT", `--match-set: flag "d3t" of set KUBE-CLUSTER-IP is neither src nor dst`, false},
	{"set without flags", "filter", "-A OUTPUT -m set --match-set KUBE-CLUSTER-IP -j ACCEPT", `--match-set: "KUBE-CLUSTER-IP" is not a set name followed by src/dst flags`, false},
	{"statistic mode", "filter", "-A OUTPUT -m statistic --mode randon --probability 0.5 -j ACCEPT", `--mode: mode "randon" is neither random nor nth`, false},
	{"DNAT address", "nat", "-A OUTPUT -p tcp -j DNAT --to-destination abc", `--to-destination: bad address "abc"`, false},
	{"DNAT port", "nat", "-A OUTPUT -p tcp -j DNAT --to-destination 10.0.0.1:8o", `--to-destination: port "8o" is not a number from 0 to 65535`, false},
	{"SNAT address", "nat", "-A POSTROUTING -j SNAT --to-source 10.0.0.300", `--to-source: bad address "10.0.0.300"`, false},
	{"REDIRECT ports", "nat", "-A OUTPUT -p tcp -j REDIRECT --to-ports 80-x", `--to-ports: port "x"`, false},
	{"mark not a number", "filter", "-A OUTPUT -m mark --mark abc -j ACCEPT", `--mark: "abc" is not a 32-bit number`, false},
	{"mark mask not hex", "filter", "-A OUTPUT -m mark --mark 0x4000/0x4g00 -j ACCEPT", `--mark: "0x4g00" is not a 32-bit number`, false},
	{"mark over 32 bits", "filter", "-A OUTPUT -m mark --mark 0x100000000 -j ACCEPT", `--mark: "0x100000000" is not a 32-bit number`, false},
	{"set-xmark not hex", "nat", "-A OUTPUT -j MARK --set-xmark 0x4000/0x40o0", `--set-xmark: "0x40o0" is not a 32-bit number`, false},
	{"ctstate", "filter", "-A OUTPUT -m conntrack --ctstate INVALIX -j DROP", `--ctstate: unknown state "INVALIX"`, false},
	{"addrtype", "filter", "-A OUTPUT -m addrtype --dst-type LOCXL -j ACCEPT", `--dst-type: unknown address type "LOCXL"`, false},
	{"reject type", "filter", "-A OUTPUT -p tcp -j REJECT --reject-with icmp-port-unreachablf", `--reject-with: unknown reject type "icmp-port-unreachablf"`, false},
	{"unknown short option", "filter", "-A OUTPUT -w 10.0.0.0/8 -j ACCEPT", `unknown option "-w"`, false},
	{"short option of a listing", "filter", "-A OUTPUT -n ACCEPT", `unknown option "-n"`, false},
	{"carriage return in a value", "filter", "-A OUTPUT -p tcp --dport 8\r0 -j ACCEPT", `--dport: value "8\r0" holds the control character 0x0d`, false},
	{"control character in an option", "filter", "-A OUTPUT -p tcp --d\x10ort 80 -j ACCEPT", `option "--d\x10ort" holds the control character 0x10`, false},
}

// accepted are values next to the refused ones that iptables-restore
// takes.
var accepted = []struct {
	table, rule string
	v6          bool
}{
	{"filter", "-A OUTPUT -d 10.0.0.0/32 -j ACCEPT", false},
	{"filter", "-A OUTPUT -s 10.0.0.1/0 -j ACCEPT", false},
	{"filter", "-A OUTPUT -d 1.2.3.4/255.255.0.0 -j ACCEPT", false},
	{"filter", "-A OUTPUT -d fd00::/128 -j ACCEPT", true},
	{"filter", "-A OUTPUT -p tcp --dport 65535 -j ACCEPT", false},
	{"filter", "-A OUTPUT -p tcp --sport 1:2 -j ACCEPT", false},
	{"filter", "-A OUTPUT -p tcp --sport 1024: -j ACCEPT", false},
	{"filter", "-A OUTPUT -p tcp -m multiport --dports 80,443,8000:8080 -j ACCEPT", false},
	{"filter", "-A OUTPUT -m statistic --mode random --probability 1 -j ACCEPT", false},
	{"filter", "-A OUTPUT -m statistic --mode random --probability 0.33333333349 -j ACCEPT", false},
	{"nat", "-A OUTPUT -p tcp -j DNAT --to-destination 10.0.0.1:80", false},
	{"nat", "-A OUTPUT -p tcp -j DNAT --to-destination :80", false},
	{"nat", "-A OUTPUT -p tcp -j DNAT --to-destination 10.0.0.1-10.0.0.9:80-90", false},
	{"nat", "-A OUTPUT -p tcp -j DNAT --to-destination [fd00::1]:80", true},
	{"nat", "-A OUTPUT -p tcp -j REDIRECT --to-ports 80-90", false},
	{"nat", "-A OUTPUT -j MARK --set-xmark 0x4000/0x4000", false},
	{"filter", "-A OUTPUT -m mark --mark 16384/0xffffffff -j ACCEPT", false},
	{"filter", "-A OUTPUT -m comment --comment \"a\rb\" -j ACCEPT", false},
	{"filter", "-A OUTPUT -m comment --comment \"x\" -p tcp -m tcp --dport 80 -j ACCEPT", false},
	{"filter", "-A OUTPUT -m conntrack --ctstate new,Established -j ACCEPT", false},
	{"filter", "-A OUTPUT -m addrtype --dst-type local -j ACCEPT", false},
	{"filter", "-A OUTPUT -p TCP -j REJECT --reject-with TCP-RESET", false},
	{"filter", "-A OUTPUT -p 132 -j ACCEPT", false},
	{"filter", "-A OUTPUT ! -f -j ACCEPT", false},
	{"filter", "-A OUTPUT -m statistic --mode nth --every 2 --packet 0 -j ACCEPT", false},
	{"filter", "-A OUTPUT -j ACCEPT -m comment --comment \"x\"", false},
	{"filter", "-A OUTPUT -p tcp -j REJECT --reject-with icmp-port-unreachable", false},
	{"filter", "-A OUTPUT -p tcp -j REJECT --reject-with icmp6-port-unreachable", true},
}

func dumpOf(table, rule string) string {
	return fmt.Sprintf("*%s\n:OUTPUT ACCEPT [0:0]\n%s\nCOMMIT\n", table, rule)
}

// TestRefusedValues checks that a value iptables-restore refuses is an
// error at its line when read strictly, and a line skipped with the
// reason when read leniently; the values next to them are read.
func TestRefusedValues(t *testing.T) {
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("dump.txt", []byte(dumpOf(tc.table, tc.rule)))
			if err == nil || !strings.Contains(err.Error(), "dump.txt:3: "+tc.want) {
				t.Errorf("strict: want the error dump.txt:3: %s, got %v", tc.want, err)
			}
			d, notes, err := ParseLenient("dump.txt", []byte(dumpOf(tc.table, tc.rule)))
			if err != nil {
				t.Fatalf("lenient: %v", err)
			}
			if n := d.NumRules(); n != 0 {
				t.Errorf("lenient: %d rules read, want the rule skipped", n)
			}
			found := false
			for _, n := range notes {
				found = found || n.Line == 3 && n.Reason == ReasonNotUnderstood && strings.Contains(n.Detail, tc.want)
			}
			if !found {
				t.Errorf("lenient: no note skipping line 3 with %q: %+v", tc.want, notes)
			}
		})
	}
	for _, tc := range accepted {
		if _, err := Parse("dump.txt", []byte(dumpOf(tc.table, tc.rule))); err != nil {
			t.Errorf("%s: %v", tc.rule, err)
		}
	}
}

// TestRefusedValuesRestore checks, with the real iptables-restore in a
// network namespace, that it refuses every value the parser refuses and
// takes every value next to them that the parser takes.
func TestRefusedValuesRestore(t *testing.T) {
	ns := netnstest.New(t)
	netnstest.RequireTools(t, "iptables-restore", "ip6tables-restore")
	tool := func(v6 bool) string {
		if v6 {
			return "ip6tables-restore"
		}
		return "iptables-restore"
	}
	for _, tc := range refused {
		if out, err := ns.Try([]byte(dumpOf(tc.table, tc.rule)), tool(tc.v6), "--test"); err == nil {
			t.Errorf("%s: %s accepted %q: %s", tc.name, tool(tc.v6), tc.rule, out)
		}
	}
	for _, tc := range accepted {
		if out, err := ns.Try([]byte(dumpOf(tc.table, tc.rule)), tool(tc.v6), "--test"); err != nil {
			t.Errorf("%s refused %q: %v: %s", tool(tc.v6), tc.rule, err, out)
		}
	}
}

// shapeRules are rules of a few shapes (see shapes) whose options are
// right or not depending on the values of their shape (-m, -p, -j) or
// on the values checked one by one, for TestShapes.
var shapeRules = []string{
	"-A OUTPUT -p tcp -j KUBE-X",
	"-A OUTPUT -p tcp -j FOO",
	"-A OUTPUT -p tcp -j KUBE-X --to-destination 10.0.0.1",
	"-A OUTPUT -p tcp -j FOO --to-destination 10.0.0.1",
	"-A OUTPUT -p tcp -j DNAT --to-destination 10.0.0.1",
	"-A OUTPUT -p tcp -g DNAT --to-destination 10.0.0.1",
	"-A OUTPUT -p udp -j DNAT --to-destination 10.0.0.1:x",
	"-A OUTPUT -p tcp -j KUBE-X -m comment --comment x",
	"-A OUTPUT -p tcp -j FOO -p udp",
	"-A OUTPUT -p tcp --dport 80 -j ACCEPT",
	"-A OUTPUT -p udp --dport 80 -j ACCEPT",
	"-A OUTPUT -p TCP --dport 80 -j ACCEPT",
	"-A OUTPUT -p icmp --dport 80 -j ACCEPT",
	"-A OUTPUT -p tcp --dport 99999 -j ACCEPT",
	"-A OUTPUT -p tcx --dport 80 -j ACCEPT",
	"-A OUTPUT -m tcp -p udp --dport 80 -j ACCEPT",
	"-A OUTPUT -m udp -p udp --dport 80 -j ACCEPT",
	"-A OUTPUT -m statistic --mode random --probability 0.5 -j KUBE-X",
	"-A OUTPUT -m statistic --mode randon --probability 0.5 -j KUBE-X",
	"-A OUTPUT -m comment --mode random --probability 0.5 -j KUBE-X",
	"-A OUTPUT -m statistic --mode nth --every 2 -j KUBE-X",
	"-A OUTPUT -m mark --mark 0x4000/0x4000 -j RETURN",
	"-A OUTPUT -m mark --mark 0x4000/0x4g00 -j RETURN",
	"-A OUTPUT -m connmark --mark 0x4000/0x4000 -j RETURN",
	"-A OUTPUT -j MARK --set-xmark 0x4000/0x4000",
	"-A OUTPUT -j MARK --set-xmark 0x4000/0x40o0",
	"-A OUTPUT -j CONNMARK --set-xmark 0x4000/0x4000",
	"-A OUTPUT -j KUBE-X --set-xmark 0x4000/0x4000",
	"-A OUTPUT -m conntrack --ctstate INVALID -j DROP",
	"-A OUTPUT -m conntrack --ctstate INVALIX -j DROP",
	"-A OUTPUT -m state --ctstate INVALID -j DROP",
	"-A OUTPUT -p tcp -j REJECT --reject-with tcp-reset",
	"-A OUTPUT -p tcp -j REJECT --reject-with tcp-resex",
	"-A OUTPUT -m set --match-set S dst,dst -j ACCEPT",
	"-A OUTPUT -m set --match-set S dst,dsx -j ACCEPT",
	"-A OUTPUT -m addrtype --dst-type LOCAL -j ACCEPT",
	"-A OUTPUT -m addrtype --dst-type LOCXL -j ACCEPT",
	"-A OUTPUT -p tcp -j REDIRECT --to-ports 80",
	"-A OUTPUT -p tcp -j REDIRECT --to-ports 8x",
	"-A OUTPUT -p tcp -j MASQUERADE --to-ports 80",
	"-A OUTPUT -m comnent --comment x -j ACCEPT",
	"-A OUTPUT -mcomment --comment x -j ACCEPT",
	"-A OUTPUT -w 10.0.0.0/8 -j ACCEPT",
	"-A OUTPUT -p tcp --dpor 80 -j ACCEPT",
	"-A OUTPUT -p tcp --dport=80 -j ACCEPT",
}

// TestShapes checks that what the parser makes of a rule (read, or
// refused with a message) does not depend on the rules read before it,
// whose shapes it remembers: every pair of the rules above and of
// those of TestRefusedValues, one after the other in a dump, against the
// second alone.
func TestShapes(t *testing.T) {
	rules := append([]string(nil), shapeRules...)
	for _, tc := range refused {
		if tc.table == "filter" && !tc.v6 {
			rules = append(rules, tc.rule)
		}
	}
	for _, tc := range accepted {
		if tc.table == "filter" && !tc.v6 {
			rules = append(rules, tc.rule)
		}
	}
	dump := func(rules ...string) []byte {
		return []byte("*filter\n:OUTPUT ACCEPT [0:0]\n:KUBE-X - [0:0]\n:FOO - [0:0]\n" + strings.Join(rules, "\n") + "\nCOMMIT\n")
	}
	// A rule's verdict: the error at its line, "" for none.
	verdict := func(err error, line int) string {
		if err == nil {
			return ""
		}
		var list parsers.ErrorList
		if !errors.As(err, &list) {
			t.Fatalf("not an error list: %v", err)
		}
		prefix := fmt.Sprintf("dump.txt:%d: ", line)
		for _, e := range list {
			if msg, ok := strings.CutPrefix(e.Error(), prefix); ok {
				return msg
			}
		}
		return ""
	}
	alone := make([]string, len(rules))
	for i, r := range rules {
		_, err := Parse("dump.txt", dump(r))
		alone[i] = verdict(err, 5)
	}
	for _, a := range rules {
		for j, b := range rules {
			_, err := Parse("dump.txt", dump(a, b))
			if got := verdict(err, 6); got != alone[j] {
				t.Errorf("%q after %q: %q, alone: %q", b, a, got, alone[j])
			}
		}
	}
}

// TestQuickValues checks the quick checks of the values kube-proxy
// writes against the checks of any value: an IPv4 address, an address
// and a port of DNAT, a probability.
func TestQuickValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const chars = "0123456789.:-\"[]ab "
	for range 200000 {
		b := make([]byte, rng.IntN(18))
		for i := range b {
			if rng.IntN(4) == 0 {
				b[i] = chars[rng.IntN(len(chars))]
			} else {
				b[i] = chars[rng.IntN(11)]
			}
		}
		s := string(b)
		if rng.IntN(2) == 0 {
			// Four numbers, some past 255 or with a leading zero, and a
			// port.
			field := func(max int) string {
				f := strconv.Itoa(rng.IntN(max))
				if rng.IntN(8) == 0 {
					f = "0" + f
				}
				return f
			}
			s = field(300) + "." + field(300) + "." + field(300) + "." + field(300)
			if rng.IntN(4) > 0 {
				s += ":" + field(70000)
			}
		}
		if a, err := netip.ParseAddr(s); isDottedQuad(s) != (err == nil && a.Is4()) {
			t.Errorf("isDottedQuad(%q) = %v, netip.ParseAddr: %v, %v", s, isDottedQuad(s), a, err)
		}
		if isAddrPort4(s) && checkNATRangeOf(s) != "" {
			t.Errorf("%q: a quick address and port, but %s", s, checkNATRangeOf(s))
		}
		if f, err := strconv.ParseFloat(s, 64); isDecimalFraction(s) && (err != nil || f < 0 || f > 1) {
			t.Errorf("%q: a quick fraction, but %v, %v", s, f, err)
		}
	}
	for _, s := range []string{"0", "1", "0.5", "0.00000000001", "0.99999999999999999999"} {
		if !isDecimalFraction(s) {
			t.Errorf("%q: not a quick fraction", s)
		}
	}
	for _, s := range []string{"10.128.0.1:8080", "0.0.0.0:0", "255.255.255.255:65535"} {
		if !isAddrPort4(s) {
			t.Errorf("%q: not a quick address and port", s)
		}
	}
}
