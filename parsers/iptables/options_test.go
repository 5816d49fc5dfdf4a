package iptables

import (
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/internal/netnstest"
)

// optionCases are rules whose long options need their module or target
// loaded before them, with what iptables-restore does with each in the
// families it is checked in, and the message the parser refuses it with
// ("" for a rule the parser takes).
var optionCases = []struct {
	rule string
	v4   bool   // checked with iptables-restore
	v6   bool   // checked with ip6tables-restore
	want string // the parser's refusal, or "" when it and the tools take the rule
}{
	// A protocol loads its own match: tcp, udp, sctp, dccp, esp, ah, ipcomp
	// by name or number in both families, icmp in IPv4, icmpv6 and mh in IPv6.
	{"-p tcp --dport 80 -j ACCEPT", true, true, ""},
	{"-p TCP --dport 80 -j ACCEPT", true, true, ""},
	{"-p 6 --dport 80 -j ACCEPT", true, true, ""},
	{"! -p tcp --dport 80 -j ACCEPT", true, true, ""},
	{"-p tcp ! --dport 80 -j ACCEPT", true, true, ""},
	{"-p tcp --syn -j ACCEPT", true, true, ""},
	{"-p tcp --dport 80 --sport 1024:65535 -j ACCEPT", true, true, ""},
	{"-p udp --dport 53 -j ACCEPT", true, true, ""},
	{"-p 17 --dport 53 -j ACCEPT", true, true, ""},
	{"-p sctp --dport 80 -j ACCEPT", true, true, ""},
	{"-p 132 --dport 80 -j ACCEPT", true, true, ""},
	{"-p dccp --dport 80 -j ACCEPT", true, true, ""},
	{"-p esp --espspi 1 -j ACCEPT", true, true, ""},
	{"-p ah --ahspi 1 -j ACCEPT", true, true, ""},
	{"-p ipcomp --ipcompspi 1 -j ACCEPT", true, true, ""},
	{"-p icmp --icmp-type 8 -j ACCEPT", true, false, ""},
	{"-p 1 --icmp-type 8 -j ACCEPT", true, false, ""},
	{"-p icmpv6 --icmpv6-type 128 -j ACCEPT", false, true, ""},
	{"-p ipv6-icmp --icmpv6-type 128 -j ACCEPT", false, true, ""},
	{"-p 58 --icmpv6-type 128 -j ACCEPT", false, true, ""},
	{"-p mh --mh-type 1 -j ACCEPT", false, true, ""},
	{"-p tcp -m udp --syn -j ACCEPT", true, true, ""}, // udp has no --syn: tcp is loaded for it
	{"--protocol tcp --dport 80 -j ACCEPT", true, true, ""},
	// Options of modules loaded anywhere before them, and of the target after -j.
	{"-p tcp -m comment --comment x --dport 80 -j ACCEPT", true, true, ""},
	{"-m comment --comment x -m comment --comment y -j ACCEPT", true, true, ""},
	{"--match comment --comment x -j ACCEPT", true, true, ""},
	{"-j ACCEPT -m comment --comment x", true, true, ""},
	{"-p tcp -j REJECT --reject-with tcp-reset", true, true, ""},
	{"-m mark --mark 1 -j CONNMARK --set-mark 2", true, true, ""},
	{"-m conntrack --ctstate NEW -m state --state NEW -j ACCEPT", true, true, ""},
	{"-p tcp -m set --match-set S dst -m tcp --dport 80 -j ACCEPT", false, false, ""}, // the tools want the set to exist
	{"-p tcp -j MASQUERADE --random-fully", true, true, ""},
	{"-p tcp -j REDIRECT --to-ports 80", true, true, ""},
	{"-p tcp -j DNAT --to-destination 10.0.0.1:80 --dport 80", true, false, ""},
	{"--set-counters 1 2 -j ACCEPT", true, true, ""},
	{"--ipv4 -j ACCEPT", true, true, ""},
	// Options without their module or target, or after it.
	{"-p tcp --comment foo -j ACCEPT", true, true, `--comment: option of -m comment without -m comment before it`},
	{"--dport 80 -j ACCEPT", true, true, `--dport: option of -m dccp, -m sctp, -m tcp or -m udp without one of them before it`},
	{"--dport 80 -p tcp -j ACCEPT", true, true, `--dport: option of -m dccp`},
	{"-p all --dport 80 -j ACCEPT", true, true, `--dport: option of -m dccp`},
	{"-p gre --dport 80 -j ACCEPT", true, true, `--dport: option of -m dccp`},
	{"-p udp --syn -j ACCEPT", true, true, `--syn: option of -m tcp without -m tcp before it`},
	{"-p udplite --dport 53 -j ACCEPT", true, true, `--dport: option of -m dccp`}, // iptables has no udplite match
	{"-p 136 --dport 53 -j ACCEPT", true, true, `--dport: option of -m dccp`},
	{"-p ipv6-mh --mh-type 1 -j ACCEPT", false, true, `--mh-type: option of -m mh without -m mh before it`}, // only "mh" loads it
	{"-p 135 --mh-type 1 -j ACCEPT", false, true, `--mh-type: option of -m mh`},
	{"-p tcp --dport 80 --espspi 1 -j ACCEPT", true, true, `--espspi: option of -m esp without -m esp before it`},
	{"-m tcp --probability 0.5 -j ACCEPT", true, true, `--probability: option of -m statistic without -m statistic before it`},
	{"-m conntrack --state NEW -j ACCEPT", true, true, `--state: option of -m state without -m state before it`},
	{"-m state --ctstate NEW -j ACCEPT", true, true, `--ctstate: option of -m conntrack without -m conntrack before it`},
	{"-p tcp --to-destination 10.0.0.1:80 -j DNAT", true, true, `--to-destination: option of -j DNAT without -j DNAT before it`},
	{"-p tcp -j DNAT --to-destination 10.0.0.1:80 --to-source 10.0.0.2", true, false, `--to-source: option of -j SNAT without -j SNAT before it`},
	{"-j CONNMARK --mark 2", true, true, `--mark: option of -m connmark or -m mark without one of them before it`},
	{"-j MARK --set-mark 1 --timeout 5", true, true, `--timeout: option of -j CT, -j IDLETIMER or -j SET without one of them before it`},
	// Options no module or target has.
	{"-p tcp --frobnicate 1 -j ACCEPT", true, true, `unknown option "--frobnicate", which iptables-restore refuses`},
	{"-m comment --frobnicate 1 -j ACCEPT", true, true, `unknown option "--frobnicate"`},
	{"--frobnicate 1 -j ACCEPT", true, true, `unknown option "--frobnicate"`},
	{"-j ACCEPT --frobnicate", true, true, `unknown option "--frobnicate"`},
}

// notTaken are rules iptables-restore takes that the parser refuses, as
// iptables-save never writes them so: abbreviations, values joined with
// "=", options of the command that are none of a rule's.
var notTaken = []struct{ rule, want string }{
	{"-p tcp --dpor 80 -j ACCEPT", `option "--dpor" is an abbreviation of --dport, which this reader does not take (write --dport)`},
	{"-m statistic --mode random --prob 0.5 -j ACCEPT", `option "--prob" is an abbreviation of --probability`},
	{"-p tcp --dport=80 -j ACCEPT", `option "--dport=80" is joined to its value with "=", which this reader does not take (write --dport 80)`},
	{"-m comment --comment=x -j ACCEPT", `option "--comment=x" is joined to its value`},
	{"--verbose -j ACCEPT", `option "--verbose" is an option of the iptables command, not of a rule`},
	{"--modprobe /bin/true -j ACCEPT", `option "--modprobe" is an option of the iptables command`},
}

// optionDump is a dump with rule in OUTPUT of the table its target
// needs.
func optionDump(rule string) string {
	table := "filter"
	if strings.Contains(rule, "NAT") || strings.Contains(rule, "REDIRECT") || strings.Contains(rule, "MASQUERADE") {
		table = "nat"
	}
	return dumpOf(table, "-A OUTPUT "+rule)
}

// TestOptionsNeedTheirModule checks that the parser refuses a long option
// that no module or target loaded before it takes, strictly at its line
// and leniently as a line skipped with the reason, and takes the others.
func TestOptionsNeedTheirModule(t *testing.T) {
	check := func(rule, want string) {
		t.Helper()
		_, err := Parse("dump.txt", []byte(optionDump(rule)))
		if want == "" {
			if err != nil {
				t.Errorf("%s: %v", rule, err)
			}
			return
		}
		if err == nil || !strings.Contains(err.Error(), "dump.txt:3: "+want) {
			t.Errorf("%s: strict: want the error dump.txt:3: %s, got %v", rule, want, err)
		}
		d, notes, err := ParseLenient("dump.txt", []byte(optionDump(rule)))
		if err != nil {
			t.Fatalf("%s: lenient: %v", rule, err)
		}
		if d.NumRules() != 0 || !d.Partial {
			t.Errorf("%s: lenient: %d rules read, partial %v: want the rule skipped, the dump partial", rule, d.NumRules(), d.Partial)
		}
		found := false
		for _, n := range notes {
			found = found || n.Line == 3 && n.Reason == ReasonNotUnderstood && strings.Contains(n.Detail, want)
		}
		if !found {
			t.Errorf("%s: lenient: no note skipping line 3 with %q: %+v", rule, want, notes)
		}
	}
	for _, tc := range optionCases {
		check(tc.rule, tc.want)
	}
	for _, tc := range notTaken {
		check(tc.rule, tc.want)
	}
}

// restoreTools are the iptables-restore programs, by family, of each
// backend (legacy, nft) that is installed, or the default one.
func restoreTools(t *testing.T) (v4, v6 []string) {
	t.Helper()
	netnstest.RequireTools(t, "iptables-restore", "ip6tables-restore")
	for _, b := range []string{"legacy", "nft"} {
		_, err4 := exec.LookPath("iptables-" + b + "-restore")
		_, err6 := exec.LookPath("ip6tables-" + b + "-restore")
		if err4 == nil && err6 == nil {
			v4, v6 = append(v4, "iptables-"+b+"-restore"), append(v6, "ip6tables-"+b+"-restore")
		}
	}
	if len(v4) == 0 {
		v4, v6 = []string{"iptables-restore"}, []string{"ip6tables-restore"}
	}
	return v4, v6
}

// TestOptionsNeedTheirModuleRestore checks, with the real iptables-restore
// and ip6tables-restore (legacy and nft where installed) in a network
// namespace, that they refuse the rules the parser refuses for an option
// without its module or unknown, take those it takes, and take the
// spellings the parser does not.
func TestOptionsNeedTheirModuleRestore(t *testing.T) {
	ns := netnstest.New(t)
	v4, v6 := restoreTools(t)
	agree := 0
	for _, tc := range optionCases {
		var tools []string
		if tc.v4 {
			tools = append(tools, v4...)
		}
		if tc.v6 {
			tools = append(tools, v6...)
		}
		for _, tool := range tools {
			out, err := ns.Try([]byte(optionDump(tc.rule)), tool, "--test")
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%s refused %q, which the parser takes: %v %s", tool, tc.rule, err, out)
			case tc.want != "" && err == nil:
				t.Errorf("%s took %q, which the parser refuses", tool, tc.rule)
			case tc.want != "" && !strings.Contains(err.Error(), "unknown option"):
				t.Errorf("%s refused %q for another reason than an unknown option: %v", tool, tc.rule, err)
			default:
				agree++
			}
		}
	}
	for _, tc := range notTaken {
		for _, tool := range append(append([]string(nil), v4...), v6...) {
			if out, err := ns.Try([]byte(optionDump(tc.rule)), tool, "--test"); err != nil {
				t.Errorf("%s refused %q: %v %s", tool, tc.rule, err, out)
			}
		}
	}
	t.Logf("%d verdicts of %v and %v agree with the parser's", agree, v4, v6)
}

// TestExtensionOptions checks the table of options: each option of an
// extension is known once the extension is loaded and not before, and
// an option no extension has is not.
func TestExtensionOptions(t *testing.T) {
	for ext, opts := range extensionOptions {
		if !matchModules[ext] && !targetNames[ext] {
			t.Errorf("options of %s, which is neither a match module nor a target", ext)
		}
		for o := range opts {
			var s optionState
			if msg := s.checkLongOption(o); msg == "" && !generalOptions[o] {
				t.Errorf("%s of %s is known before %s is loaded", o, ext, ext)
			}
			s.load(ext)
			if msg := s.checkLongOption(o); msg != "" {
				t.Errorf("%s of %s: %s", o, ext, msg)
			}
			if msg := s.checkLongOption("--frobnicate"); !strings.Contains(msg, "unknown option") {
				t.Errorf("--frobnicate after %s: %q", ext, msg)
			}
		}
	}
	var s optionState
	for i := range 12 { // past the loaded array
		s.load(fmt.Sprint("x", i))
	}
	s.load("comment")
	if msg := s.checkLongOption("--comment"); msg != "" {
		t.Errorf("--comment after 13 modules: %s", msg)
	}
}

// familyOnly are the options of an extension of both families that only
// one family's takes.
var familyOnly = map[string]int{"ah --ahlen": 6, "ah --ahres": 6}

// TestExtensionOptionsRestore checks the table of options against the
// real tools: each option of an extension is one iptables-restore knows
// after it (in each family that has the extension), and --frobnicate is
// not.
func TestExtensionOptionsRestore(t *testing.T) {
	ns := netnstest.New(t)
	v4, v6 := restoreTools(t)
	exts := make([]string, 0, len(extensionOptions))
	for ext := range extensionOptions {
		exts = append(exts, ext)
	}
	sort.Strings(exts)
	checked := 0
	for _, ext := range exts {
		var opts []string
		for o := range extensionOptions[ext] {
			opts = append(opts, o)
		}
		sort.Strings(opts)
		opts = append(opts, "--frobnicate")
		families := 0
		for _, tools := range [][]string{v4, v6} {
			unknown := map[string]bool{}
			loads := true
			for _, tool := range tools {
				for _, o := range opts {
					rule := fmt.Sprintf("-A OUTPUT -m %s %s 1 -j ACCEPT", ext, o)
					if targetNames[ext] {
						rule = fmt.Sprintf("-A OUTPUT -j %s %s 1", ext, o)
					}
					_, err := ns.Try([]byte(dumpOf("filter", rule)), tool, "--test")
					switch {
					case err != nil && strings.Contains(err.Error(), "Couldn't load"):
						loads = false
					case err != nil && strings.Contains(err.Error(), fmt.Sprintf("unknown option %q", o)):
						unknown[o] = true
					}
					checked++
				}
			}
			// A family without the extension: a match that does not load,
			// a target that is a jump to a chain (without options; an option
			// that abbreviates one of the command, as CLUSTERIP's --new does
			// --new-chain, is known to it anyway).
			known := 0
			for _, o := range opts {
				if !unknown[o] && !strings.HasPrefix("--new-chain", o) {
					known++
				}
			}
			if !loads || known == 0 {
				continue
			}
			families++
			for _, o := range opts {
				if unknown[o] != (o == "--frobnicate") && !(tools[0] == v4[0] && familyOnly[ext+" "+o] == 6) {
					t.Errorf("%v: %s after %s: unknown %v", tools, o, ext, unknown[o])
				}
			}
		}
		if families == 0 && len(opts) > 1 {
			t.Errorf("%s: no family has it", ext)
		}
	}
	t.Logf("%d runs of %v and %v", checked, v4, v6)
}
