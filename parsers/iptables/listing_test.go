package iptables

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
	"github.com/proxyscan/proxyscan/parsers/paste"
)

// TestListingIsTheDump reads the listing of the three tables of
// iptables-mini that iptables -L -n -v -x printed (testdata/paste/forms),
// prompts and all, and finds the rules, policies and counters of the
// iptables-save of the same tables.
func TestListingIsTheDump(t *testing.T) {
	want, listing := formsListing(t)
	c := paste.Clean(listing, paste.All)
	got, notes, err := ParseListing("listing", c.Data, listing)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) > 0 || got.Partial {
		t.Fatalf("notes %v, partial %q", notes, got.PartialReason)
	}
	if a, b := tablesText(want), tablesText(got); a != b {
		t.Errorf("the listing is not the dump:\n%s", parsetest.Diff([]byte(a), []byte(b)))
	}
}

// TestListingWordsAround reads the same listing with the words of the
// person who pasted it above and below (a greeting naming the node, a
// thanks): they are skipped as text, and the listing is still the dump,
// whole; words inside a chain's rows are not taken for text.
func TestListingWordsAround(t *testing.T) {
	want, listing := formsListing(t)
	head := "Hi team, here is what we see on worker-7:\n\n"
	tail := "\nThanks, it started on node-2. Any idea?\n"
	in := []byte(head + string(listing) + tail)
	c := paste.Clean(in, paste.All)
	got, notes, err := ParseListing("listing", c.Data, in)
	if err != nil {
		t.Fatal(err)
	}
	last := strings.Count(string(in), "\n")
	var skipped []string
	for _, n := range notes {
		skipped = append(skipped, fmt.Sprintf("%d %s", n.Line, n.Reason))
	}
	if w := []string{"1 " + ReasonText, fmt.Sprintf("%d %s", last, ReasonText)}; strings.Join(skipped, "; ") != strings.Join(w, "; ") || got.Partial {
		t.Fatalf("notes %q, want %q; partial %q", skipped, w, got.PartialReason)
	}
	if a, b := tablesText(want), tablesText(got); a != b {
		t.Errorf("the listing is not the dump:\n%s", parsetest.Diff([]byte(a), []byte(b)))
	}

	// Words between two chains are in the listing: not understood.
	second := strings.Index(string(listing), "\nChain ") + 1
	second += strings.Index(string(listing[second:]), "\nChain ")
	inner := string(listing[:second]) + "\nsee the rules below" + string(listing[second:])
	c = paste.Clean([]byte(inner), paste.All)
	got, notes, err = ParseListing("listing", c.Data, []byte(inner))
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || notes[0].Reason == ReasonText || !got.Partial {
		t.Errorf("words inside the listing: notes %v, partial %v", notes, got.Partial)
	}
}

// formsListing returns the dump of iptables-mini and the listing of its
// three tables that iptables -L -n -v -x printed (testdata/paste/forms).
func formsListing(t *testing.T) (*Dump, []byte) {
	t.Helper()
	root := parsetest.Root(t)
	clean, err := os.ReadFile(filepath.Join(root, "testdata/bundles/iptables-mini/node/iptables-save.txt"))
	if err != nil {
		t.Fatal(err)
	}
	listing, err := os.ReadFile(filepath.Join(root, "testdata/paste/forms/iptables-L-both-nvx.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := Parse("save", clean)
	if err != nil {
		t.Fatal(err)
	}
	return want, listing
}

// tablesText is a dump's tables as iptables-save writes them, without
// comments, the tables in name order.
func tablesText(d *Dump) string {
	var parts []string
	for _, l := range strings.Split(string(Format(d)), "\n") {
		if strings.HasPrefix(l, "[") { // the counters iptables-save prints with -c only
			l = l[strings.IndexByte(l, ']')+2:]
		}
		if !strings.HasPrefix(l, "#") {
			parts = append(parts, l)
		}
	}
	tables := strings.SplitAfter(strings.Join(parts, "\n"), "COMMIT\n")
	sortStrings(tables)
	return strings.Join(tables, "")
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// TestListingRows reads rows of each form a listing prints.
func TestListingRows(t *testing.T) {
	const head = "Chain KUBE-FORWARD (1 references)\ntarget     prot opt source               destination\n"
	const headV = "Chain KUBE-FORWARD (1 references)\n pkts bytes target     prot opt in     out     source               destination\n"
	for _, tc := range []struct {
		name, in string
		rule     string // the rule read, "" for none
		reason   string // the note of the row, if any
		detail   string
	}{
		{name: "blank target", in: head + "           all  --  anywhere             anywhere             /* a comment */\n",
			rule: `-A KUBE-FORWARD -m comment --comment "a comment"`},
		{name: "goto", in: head + "KUBE-Y     all  --  0.0.0.0/0            0.0.0.0/0            [goto] \n",
			rule: "-A KUBE-FORWARD -g KUBE-Y"},
		{name: "negations", in: head + "KUBE-MARK-MASQ  tcp  --  !10.244.0.0/16        10.96.0.1            tcp dpt:!443 ! ctstate NEW\n",
			rule: "-A KUBE-FORWARD ! -s 10.244.0.0/16 -d 10.96.0.1/32 -p tcp -m tcp ! --dport 443 -m conntrack ! --ctstate NEW -j KUBE-MARK-MASQ"},
		{name: "interfaces", in: headV + "    0     0 ACCEPT     all  --  eth0   !lo     0.0.0.0/0            0.0.0.0/0\n",
			rule: "[0:0] -A KUBE-FORWARD -i eth0 ! -o lo -j ACCEPT"},
		{name: "rounded counters", in: headV + "   12K  3M ACCEPT     all  --  *      *       0.0.0.0/0            0.0.0.0/0\n",
			rule: "-A KUBE-FORWARD -j ACCEPT"},
		{name: "statistic nth", in: head + "KUBE-SEP-A  all  --  0.0.0.0/0  0.0.0.0/0  statistic mode nth every 2 packet 0\n",
			rule: "-A KUBE-FORWARD -m statistic --mode nth --every 2 --packet 0 -j KUBE-SEP-A"},
		{name: "recent check", in: head + "KUBE-SEP-A  all  --  0.0.0.0/0  0.0.0.0/0  recent: CHECK seconds: 10800 reap name: KUBE-SEP-A side: source mask: 255.255.255.255\n",
			rule: "-A KUBE-FORWARD -m recent --rcheck --seconds 10800 --reap --name KUBE-SEP-A --mask 255.255.255.255 --rsource -j KUBE-SEP-A"},
		{name: "mark set", in: head + "MARK       all  --  0.0.0.0/0  0.0.0.0/0  MARK set 0x8000\n",
			rule: "-A KUBE-FORWARD -j MARK --set-xmark 0x8000/0xffffffff"},
		{name: "multiport and set", in: head + "ACCEPT     tcp  --  0.0.0.0/0  0.0.0.0/0  multiport dports 80,443 match-set KUBE-CLUSTER-IP dst,dst\n",
			rule: "-A KUBE-FORWARD -p tcp -m multiport --dports 80,443 -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT"},
		{name: "state and addrtype", in: head + "ACCEPT     all  --  0.0.0.0/0  0.0.0.0/0  state RELATED,ESTABLISHED addrtype match dst-type !LOCAL\n",
			rule: "-A KUBE-FORWARD -m state --state RELATED,ESTABLISHED -m addrtype ! --dst-type LOCAL -j ACCEPT"},
		{name: "ipv6", in: head + "ACCEPT     6    --  ::/0                 fd00::1              tcp dpt:80\n",
			rule: "-A KUBE-FORWARD -d fd00::1/128 -p tcp -m tcp --dport 80 -j ACCEPT"},
		{name: "host name", in: head + "KUBE-SVC-A  udp  --  anywhere             kube-dns.kube-system.svc.cluster.local  udp dpt:domain\n",
			rule: "-A KUBE-FORWARD -d kube-dns.kube-system.svc.cluster.local -p udp -m udp --dport 53 -j KUBE-SVC-A", reason: ReasonServiceName,
			detail: "domain (53)"},
		{name: "port names", in: head + "KUBE-SVC-A  tcp  --  anywhere             10.96.0.1            multiport dports http,8000:https tcp spt:!postgresql\n",
			rule: "-A KUBE-FORWARD -d 10.96.0.1/32 -p tcp -m multiport --dports 80,8000:443 -m tcp ! --sport 5432 -j KUBE-SVC-A", reason: ReasonServiceName,
			detail: "http (80), https (443), postgresql (5432)"},
		{name: "unknown port name", in: head + "KUBE-SVC-A  tcp  --  anywhere             10.96.0.1            tcp dpt:kube-api\n",
			rule: "-A KUBE-FORWARD -d 10.96.0.1/32 -p tcp -m tcp --dport kube-api -j KUBE-SVC-A", reason: ReasonUnresolved,
			detail: "kube-api (a port)"},
		{name: "tcp flags", in: head + "ACCEPT     tcp  --  0.0.0.0/0  0.0.0.0/0  tcp dpt:22 flags:!0x17/0x02\n",
			rule: "-A KUBE-FORWARD -p tcp -m tcp --dport 22 ! --tcp-flags FIN,SYN,RST,ACK SYN -j ACCEPT"},
		{name: "tcp flags by name", in: head + "ACCEPT     tcp  --  anywhere  anywhere  tcp flags:ALL/NONE\n",
			rule: "-A KUBE-FORWARD -p tcp -m tcp --tcp-flags FIN,SYN,RST,PSH,ACK,URG NONE -j ACCEPT"},
		{name: "tcp flags unknown", in: head + "ACCEPT     tcp  --  0.0.0.0/0  0.0.0.0/0  tcp flags:0x17/0xff\n",
			reason: ReasonNotDetermined, detail: `tcp option "flags:0x17/0xff"`},
		{name: "LOG", in: head + "LOG        all  --  0.0.0.0/0  0.0.0.0/0  LOG flags 0 level 4\n",
			rule: "-A KUBE-FORWARD -j LOG"},
		{name: "LOG prefix", in: head + `LOG        all  --  0.0.0.0/0  0.0.0.0/0  limit: avg 5/min burst 10 LOG flags 9 level 7 prefix "a "b" "` + "\n",
			rule: `-A KUBE-FORWARD -m limit --limit 5/min --limit-burst 10 -j LOG --log-prefix "a \"b\" " --log-level 7 --log-tcp-sequence --log-uid`},
		{name: "LOG names", in: head + `LOG        all  --  anywhere  anywhere  LOG level alert ip-options prefix "drop"` + "\n",
			rule: `-A KUBE-FORWARD -j LOG --log-prefix drop --log-level 1 --log-ip-options`},
		{name: "LOG unknown flags", in: head + "LOG        all  --  0.0.0.0/0  0.0.0.0/0  LOG flags 64 level 4\n",
			reason: ReasonNotDetermined, detail: `LOG target flags 64 level 4`},
		{name: "icmp", in: head + "ACCEPT     1    --  0.0.0.0/0  0.0.0.0/0  icmp !type 3 code 4\n",
			rule: "-A KUBE-FORWARD -p icmp -m icmp ! --icmp-type 3/4 -j ACCEPT"},
		{name: "icmp name", in: head + "ACCEPT     icmp --  anywhere  anywhere  icmp port-unreachable\n",
			rule: "-A KUBE-FORWARD -p icmp -m icmp --icmp-type 3/3 -j ACCEPT"},
		{name: "icmp codes", in: head + "ACCEPT     1    --  0.0.0.0/0  0.0.0.0/0  icmptype 3 codes 1-4\n",
			reason: ReasonNotDetermined, detail: `icmp match icmptype 3 codes 1-4`},
		{name: "conntrack", in: head + "ACCEPT     all  --  0.0.0.0/0  0.0.0.0/0  ! ctstate NEW ctorigdst 10.0.0.1 ! ctstatus DNAT ctdir REPLY\n",
			rule: "-A KUBE-FORWARD -m conntrack ! --ctstate NEW --ctorigdst 10.0.0.1 ! --ctstatus DNAT --ctdir REPLY -j ACCEPT"},
		{name: "CONNMARK", in: head + "CONNMARK   all  --  0.0.0.0/0  0.0.0.0/0  connmark match ! 0x1/0xff CONNMARK and 0xffffbfff\n",
			rule: "-A KUBE-FORWARD -m connmark ! --mark 0x1/0xff -j CONNMARK --set-xmark 0x0/0x4000"},
		{name: "CONNMARK restore", in: head + "CONNMARK   all  --  0.0.0.0/0  0.0.0.0/0  CONNMARK restore mask 0xff\n",
			rule: "-A KUBE-FORWARD -j CONNMARK --restore-mark --nfmask 0xff --ctmask 0xff"},
		{name: "CT", in: head + "CT         17   --  0.0.0.0/0  0.0.0.0/0  udp dpt:53 CT notrack zone 2\n",
			rule: "-A KUBE-FORWARD -p udp -m udp --dport 53 -j CT --notrack --zone 2"},
		{name: "NOTRACK", in: head + "CT         all  --  0.0.0.0/0  0.0.0.0/0  NOTRACK\n",
			rule: "-A KUBE-FORWARD -j NOTRACK"},
		{name: "physdev", in: head + "ACCEPT     all  --  0.0.0.0/0  0.0.0.0/0  PHYSDEV match ! --physdev-in veth0 --physdev-is-bridged\n",
			rule: "-A KUBE-FORWARD -m physdev ! --physdev-in veth0 --physdev-is-bridged -j ACCEPT"},
		{name: "addrtype limit", in: head + "ACCEPT     all  --  0.0.0.0/0  0.0.0.0/0  ADDRTYPE match dst-type LOCAL limit-out\n",
			rule: "-A KUBE-FORWARD -m addrtype --dst-type LOCAL --limit-iface-out -j ACCEPT"},
		{name: "connlimit", in: head + "REJECT     6    --  0.0.0.0/0  0.0.0.0/0  #conn dst/24 <= 3 reject-with tcp-reset\n",
			rule: "-A KUBE-FORWARD -p tcp -m connlimit --connlimit-upto 3 --connlimit-mask 24 --connlimit-daddr -j REJECT --reject-with tcp-reset"},
		{name: "masquerade", in: head + "MASQUERADE  all  --  0.0.0.0/0  0.0.0.0/0  random-fully\n",
			rule: "-A KUBE-FORWARD -j MASQUERADE --random-fully"},
		{name: "NFLOG", in: head + "NFLOG      all  --  0.0.0.0/0  0.0.0.0/0  nflog-prefix x nflog-group 5\n",
			rule: "-A KUBE-FORWARD -j NFLOG --nflog-prefix x --nflog-group 5"},
		{name: "TPROXY", in: head + "TPROXY     6    --  0.0.0.0/0  0.0.0.0/0  socket --transparent TPROXY redirect 0.0.0.0:4000 mark 0x200/0xffffffff\n",
			rule: "-A KUBE-FORWARD -p tcp -m socket --transparent -j TPROXY --on-port 4000 --on-ip 0.0.0.0 --tproxy-mark 0x200/0xffffffff"},
		{name: "iprange", in: head + "ACCEPT     all  --  0.0.0.0/0  0.0.0.0/0  source IP range ! 10.0.0.1-10.0.0.9\n",
			rule: "-A KUBE-FORWARD -m iprange ! --src-range 10.0.0.1-10.0.0.9 -j ACCEPT"},
		{name: "unknown target", in: head + "CLASSIFY   all  --  0.0.0.0/0  0.0.0.0/0  CLASSIFY set 1:10\n",
			reason: ReasonNotDetermined, detail: `"CLASSIFY" (an option of target CLASSIFY)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, notes, err := ParseListing("l", []byte(tc.in), nil)
			if err != nil {
				t.Fatal(err)
			}
			var rules []string
			for _, tb := range d.Tables {
				for _, c := range tb.Chains {
					for _, r := range c.Rules {
						s := r.Raw
						if p, b, ok := r.Counters(); ok && d.Counters {
							s = "[" + itoa(p) + ":" + itoa(b) + "] " + s
						}
						rules = append(rules, s)
					}
				}
			}
			if got := strings.Join(rules, "\n"); got != tc.rule {
				t.Errorf("rule %q, want %q (notes %v)", got, tc.rule, notes)
			}
			var note parsers.LineNote
			for _, n := range notes {
				if n.Line == 3 {
					note = n
				}
			}
			if note.Reason != tc.reason || note.Detail != tc.detail {
				t.Errorf("note %q (%s), want %q (%s)", note.Reason, note.Detail, tc.reason, tc.detail)
			}
			if tc.reason != "" && !d.Partial {
				t.Errorf("not partial")
			}
		})
	}
}

func itoa(n uint64) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
		if n == 0 {
			return string(b)
		}
	}
}

// TestListingTables finds the table of each listing: the command's -t,
// filter without it, else the built-in chains listed, else the rules.
func TestListingTables(t *testing.T) {
	const nat = "Chain PREROUTING (policy ACCEPT)\ntarget     prot opt source               destination\nKUBE-SERVICES  all  --  0.0.0.0/0  0.0.0.0/0\n\n" +
		"Chain POSTROUTING (policy ACCEPT)\ntarget     prot opt source               destination\n"
	const chain = "Chain KUBE-SERVICES (2 references)\ntarget     prot opt source               destination\n" +
		"REJECT     tcp  --  0.0.0.0/0  10.96.10.40  tcp dpt:80 reject-with icmp-port-unreachable\n"
	for _, tc := range []struct {
		name, orig, data, want string
	}{
		{"built-in chains", "", nat, "nat"},
		{"command with -t", "$ sudo iptables -t nat -L KUBE-SERVICES -n\n", "\n" + chain, "nat"},
		{"command without -t", "[root@a ~]# iptables -nL KUBE-SERVICES\n", "\n" + chain, "filter"},
		{"rules", "", chain, "filter"},
		{"two tables", "# iptables -L -n\n" + strings.Repeat("\n", 3) + "# iptables -t nat -L -n\n", "\n" + chain + "\n" + nat, "filter nat"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.data)
			var orig []byte
			if tc.orig != "" {
				lines := strings.Split(tc.data, "\n")
				ol := strings.Split(tc.orig, "\n")
				for i := range ol {
					if i < len(lines) && lines[i] == "" {
						lines[i] = ol[i]
					}
				}
				orig = []byte(strings.Join(lines, "\n"))
			}
			d, _, err := ParseListing("l", data, orig)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tb := range d.Tables {
				got = append(got, tb.Name)
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("tables %v, want %s", got, tc.want)
			}
		})
	}
}

// FuzzParseListing checks that ParseListing, on any input and on paste
// damage around it, never panics, fails only naming the file, notes lines
// of the input only, and returns dumps that Format writes as a whole dump
// Parse reads back unchanged.
func FuzzParseListing(f *testing.F) {
	root, err := os.Getwd()
	if err == nil {
		files, _ := filepath.Glob(filepath.Join(root, "..", "..", "testdata", "paste", "forms", "*.txt"))
		real, _ := filepath.Glob(filepath.Join(root, "testdata", "listing", "*.txt"))
		files = append(files, real...)
		for _, file := range files {
			if b, err := os.ReadFile(file); err == nil {
				f.Add(b[:min(len(b), 600)]) // the start of it: the fuzzer is slow on large seeds
			}
		}
	}
	f.Add([]byte("Chain X (1 references)\ntarget prot opt source destination\nA all -- 0.0.0.0/0 0.0.0.0/0 /* x */ tcp dpt:1 MARK or 0x1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := paste.Clean(data, paste.All)
		d, notes, err := ParseListing("fuzz.txt", c.Data, data)
		if err != nil {
			if !bytes.HasPrefix([]byte(err.Error()), []byte("fuzz.txt")) {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		lines := bytes.Count(data, []byte("\n")) + 1
		unresolved := false
		for _, n := range notes {
			if n.Line < 1 || n.Line > lines {
				t.Fatalf("note %+v of a %d-line input", n, lines)
			}
			unresolved = unresolved || n.Reason == ReasonUnresolved
		}
		// Rules that keep names in place of ports are not what
		// iptables-save writes, and Parse refuses them.
		if !unresolved {
			checkRoundTrip(t, "fuzz", d)
		}
	})
}
