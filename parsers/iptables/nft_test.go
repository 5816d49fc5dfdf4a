package iptables

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/internal/netnstest"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/nft"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
	"github.com/proxyscan/proxyscan/parsers/paste"
)

// nftFixtures are the rulesets of testdata/nft: what nft list ruleset
// prints of a dump restored with iptables-nft-restore (the dump of
// bundles/iptables-mini, and testdata/listing/forms.rules with its
// counters).
var nftFixtures = []struct{ name, dump string }{
	{"mini", "../../testdata/bundles/iptables-mini/node/iptables-save.txt"},
	{"forms", "testdata/listing/forms.rules"},
}

// nftFixtureTools are the versions of the tools that made them.
var nftFixtureTools = map[string]string{"iptables-nft": listingFormsTool, "nft": "nftables v1.0.6 (Lester Gooch #5)"}

// TestNFTFixtures keeps testdata/nft equal to what nft list ruleset
// prints of each dump of nftFixtures restored by iptables-nft-restore
// in a scratch network namespace (rewritten with -update; it needs root
// and the tools that made them).
func TestNFTFixtures(t *testing.T) {
	netnstest.RequireTools(t, "iptables-nft-restore", "nft", "nfacct", "ipset")
	for tool, want := range nftFixtureTools {
		out, err := exec.Command(tool, "--version").Output()
		if err != nil {
			t.Skipf("%s --version: %v", tool, err)
		}
		if got := strings.TrimSpace(string(out)); got != want {
			t.Skipf("the fixtures are what %s prints, this is %s", want, got)
		}
	}
	for _, f := range nftFixtures {
		t.Run(f.name, func(t *testing.T) {
			dump, err := os.ReadFile(f.dump)
			if err != nil {
				t.Fatal(err)
			}
			ns := restoreNFT(t, dump)
			out := ns.Run(nil, "nft", "list", "ruleset")
			parsetest.GoldenFile(t, filepath.Join("testdata", "nft", f.name+".nft"), []byte("[root@node-a ~]# nft list ruleset\n"+string(out)))
			parsetest.GoldenFile(t, filepath.Join("testdata", "nft", f.name+".json"), ns.Run(nil, "nft", "-j", "list", "ruleset"))
			parsetest.GoldenFile(t, filepath.Join("testdata", "nft", f.name+".save"), nftSave(ns, "iptables-nft-save"))
		})
	}
}

// restoreNFT restores dump with iptables-nft-restore -c in a scratch
// network namespace, with the nfacct objects and the ipset its rules
// name.
func restoreNFT(t *testing.T, dump []byte) *netnstest.NS {
	t.Helper()
	ns := netnstest.New(t)
	ns.Run(nil, "nfacct", "add", "ct_state_invalid_dropped_pkts")
	ns.Run(nil, "nfacct", "add", "localhost_nps_accepted_pkts")
	ns.Run(nil, "ipset", "create", "KUBE-CLUSTER-IP", "hash:ip,port")
	ns.Run(dump, "iptables-nft-restore", "-c")
	return ns
}

// nftSave is what save (iptables-nft-save, ip6tables-nft-save) -c
// prints in ns, without its comment lines (which carry the date).
func nftSave(ns *netnstest.NS, save string) []byte {
	var out []string
	for _, l := range strings.SplitAfter(string(ns.Run(nil, save, "-c")), "\n") {
		if !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return []byte(strings.Join(out, ""))
}

// readNFTFixture reads a ruleset of testdata/nft as pasted (after its
// prompt) into iptables dumps.
func readNFTFixture(t *testing.T, name string) (*Dump, []parsers.LineNote) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "nft", name+".nft"))
	if err != nil {
		t.Fatal(err)
	}
	c := paste.Clean(data, paste.All)
	rs, err := nft.ParseText(name, c.Data)
	if err != nil {
		t.Fatal(err)
	}
	dumps, notes, ok, err := FromNFT(name, rs)
	if err != nil || !ok || len(dumps) != 1 {
		t.Fatalf("FromNFT: %d dumps, %v, %v", len(dumps), ok, err)
	}
	return dumps[0], notes
}

// reNFTHidden are the parts of rules that nft's listing of iptables-nft
// tables does not show: comments, nfacct matches, a -m tcp or -m udp
// without options.
var reNFTHidden = regexp.MustCompile(` -m comment --comment (?:"(?:[^"\\]|\\.)*"|\S+)| -m nfacct --nfacct-name +\S+| -m (?:tcp|udp)(?: -| *$)`)

// nftComparable is a dump's rules as FromNFT reads them back: without
// what nft does not show, without counters, without the rules skip
// says are not read.
func nftComparable(d *Dump, skip func(string) bool) string {
	var out []string
	for _, l := range strings.Split(string(Format(d)), "\n") {
		if strings.HasPrefix(l, "#") {
			continue
		}
		l = nftShown(l)
		if skip != nil && skip(l) {
			continue
		}
		out = append(out, nftVisible(l))
	}
	return tablesOrder(strings.Join(out, "\n"))
}

// nftShown is a line of iptables-save's form without its counters.
func nftShown(l string) string {
	if strings.HasPrefix(l, "[") {
		l = l[strings.IndexByte(l, ']')+2:]
	}
	if strings.HasPrefix(l, ":") {
		l = rePolicyCounters.ReplaceAllString(l, "$1 [0:0]")
	}
	return l
}

// nftVisible is a line without what nft does not show (reNFTHidden).
func nftVisible(l string) string {
	return reNFTHidden.ReplaceAllStringFunc(l, func(m string) string {
		if strings.HasSuffix(m, " -") {
			return " -"
		}
		return ""
	})
}

// TestFromNFTMini reads what nft lists of iptables-mini's dump restored
// by iptables-nft-restore and finds the dump's rules, but for what nft
// does not show (comments, nfacct, bare -m tcp) and the rules it lists in
// a form that does not say which iptables rule they are (the recent
// matches of session affinity, shown as "xt match recent", and a
// conntrack match nft shows as "ct status dnat"): those are noted and the
// dump is partial.
func TestFromNFTMini(t *testing.T) {
	clean, err := os.ReadFile(nftFixtures[0].dump)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Parse("save", clean)
	if err != nil {
		t.Fatal(err)
	}
	got, notes := readNFTFixture(t, "mini")
	untranslated := func(l string) bool {
		return strings.Contains(l, "-m recent") || strings.Contains(l, "--ctstate RELATED,ESTABLISHED,DNAT")
	}
	if a, b := nftComparable(want, untranslated), nftComparable(got, nil); a != b {
		t.Errorf("the rules read are not the dump's:\n%s", parsetest.Diff([]byte(a), []byte(b)))
	}
	n := 0
	for _, l := range strings.Split(string(clean), "\n") {
		if untranslated(l) {
			n++
		}
	}
	if got.NumRules() != want.NumRules()-n {
		t.Errorf("%d rules read, want %d", got.NumRules(), want.NumRules()-n)
	}
	if len(notes) != n {
		t.Errorf("%d notes, want %d: %v", len(notes), n, notes)
	}
	for _, no := range notes {
		if no.Reason != ReasonNotTranslated || !no.Skipped {
			t.Errorf("note %+v", no)
		}
	}
	if !got.Partial || !strings.Contains(got.PartialReason, fmt.Sprintf("%d rules", n)) {
		t.Errorf("partial %v (%s)", got.Partial, got.PartialReason)
	}
	checkRoundTrip(t, "mini", got)
}

// TestFromNFTForms reads what nft lists of the rules of
// testdata/listing/forms.rules (the matches and targets of kube-proxy
// and common CNI plugins) into testdata/nft/forms.golden: the rules read,
// with their counters, and those not read (rewritten with -update).
func TestFromNFTForms(t *testing.T) {
	got, notes := readNFTFixture(t, "forms")
	var b strings.Builder
	b.Write(Format(got))
	fmt.Fprintf(&b, "partial: %s\n", got.PartialReason)
	for _, n := range notes {
		fmt.Fprintf(&b, "%d: %s: %s\n", n.Line, n.Reason, n.Detail)
	}
	parsetest.GoldenFile(t, filepath.Join("testdata", "nft", "forms.golden"), []byte(b.String()))
	checkRoundTrip(t, "forms", got)
}

// TestNFTRule translates rules of each form nft lists, and refuses those
// that do not say which iptables rule they are.
func TestNFTRule(t *testing.T) {
	for _, tc := range []struct{ in, want, detail string }{
		{in: `meta l4proto tcp ip daddr 10.96.0.1 tcp dport 443 counter packets 3 bytes 180 jump KUBE-SVC-X comment "default/kubernetes:https cluster IP"`,
			want: `[3:180] -A C -d 10.96.0.1/32 -p tcp -m tcp --dport 443 -m comment --comment "default/kubernetes:https cluster IP" -j KUBE-SVC-X`},
		{in: `meta l4proto tcp xt match "comment" tcp sport 1-2 tcp dport != 80 counter packets 0 bytes 0 accept`,
			want: `[0:0] -A C -p tcp -m tcp --sport 1:2 ! --dport 80 -j ACCEPT`},
		{in: `iifname "cali*" oifname != "eth0" # xt_nfacct counter packets 0 bytes 0 goto X`,
			want: `[0:0] -A C -i cali+ ! -o eth0 -g X`},
		{in: `ct direction reply ct state ! established,related ct mark & 0x0000ff00 == 0x00000100 counter packets 0 bytes 0 drop`,
			want: `[0:0] -A C -m conntrack --ctdir REPLY ! --ctstate ESTABLISHED,RELATED -m connmark --mark 0x100/0xff00 -j DROP`},
		{in: `fib saddr type local fib daddr type != local counter packets 0 bytes 0 reject with icmp type host-prohibited`,
			want: `[0:0] -A C -m addrtype --src-type LOCAL ! --dst-type LOCAL -j REJECT --reject-with icmp-host-prohibited`},
		{in: `meta random & 2147483647 < 715827883 counter packets 0 bytes 0 jump KUBE-SEP-A`,
			want: `[0:0] -A C -m statistic --mode random --probability 0.33333333349 -j KUBE-SEP-A`},
		{in: `counter packets 0 bytes 0 log prefix "dropped: " level info flags tcp sequence flags ether`,
			want: `[0:0] -A C -j LOG --log-prefix "dropped: " --log-level 6 --log-tcp-sequence --log-macdecode`},
		{in: `meta l4proto udp counter packets 0 bytes 0 dnat to 10.244.1.2:53 persistent`,
			want: `[0:0] -A C -p udp -j DNAT --to-destination 10.244.1.2:53 --persistent`},
		{in: `tcp flags != syn / syn,rst tcp dport 22 tcp sport 1024-65535 counter packets 0 bytes 12 accept`,
			want: `[0:12] -A C -p tcp -m tcp --sport 1024:65535 --dport 22 ! --tcp-flags SYN,RST SYN -j ACCEPT`},
		{in: `xt match recent counter packets 0 bytes 0 jump KUBE-SEP-A`, detail: `"xt match recent counter packets 0 bytes 0 jump KUBE-SEP-A"`},
		{in: `ct status dnat counter packets 0 bytes 0 drop`, detail: `"ct status dnat counter packets 0 bytes 0 drop"`},
		{in: `ip daddr @kube-svc counter packets 0 bytes 0 accept`, detail: `"@kube-svc counter packets 0 bytes 0 accept"`},
		{in: `counter packets 0 bytes 0 accept drop`, detail: `"drop"`},
	} {
		w, err := nft.Words(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		text, detail := nftRule("C", w, IPv4)
		if text != tc.want || detail != tc.detail {
			t.Errorf("%s:\n got %q (%s)\nwant %q (%s)", tc.in, text, detail, tc.want, tc.detail)
		}
	}
}

// FuzzFromNFT checks that FromNFT, on any ruleset nft.Parse reads (text
// or JSON),
// never panics, notes lines of the input only, and returns dumps that
// Format writes as a whole dump Parse reads back unchanged.
func FuzzFromNFT(f *testing.F) {
	for _, fx := range nftFixtures {
		if b, err := os.ReadFile(filepath.Join("testdata", "nft", fx.name+".nft")); err == nil {
			c := paste.Clean(b, paste.All)
			f.Add(c.Data[:min(len(c.Data), 1500)])
		}
	}
	f.Add([]byte("table ip nat {\n\tchain X {\n\t\tmeta l4proto tcp tcp dport { 1, 2-3 } counter packets 1 bytes 2 jump Y comment \"a\"\n\t}\n}\n"))
	for _, fx := range nftFixtures {
		if b, err := os.ReadFile(filepath.Join("testdata", "nft", fx.name+".json")); err == nil {
			f.Add(b[:min(len(b), 3000)])
		}
	}
	f.Add([]byte(`{"nftables": [{"table": {"family": "ip6", "name": "nat"}},` + "\n" +
		`{"chain": {"family": "ip6", "table": "nat", "name": "KUBE-SEP-A"}},` + "\n" +
		`{"rule": {"family": "ip6", "table": "nat", "chain": "KUBE-SEP-A", "comment": "x", "expr": [{"xt": {"type": "match", "name": "comment"}}, {"counter": {"packets": 1, "bytes": 2}}, {"xt": {"type": "target", "name": "DNAT"}}]}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := nft.Parse("fuzz.nft", data)
		if err != nil {
			return
		}
		dumps, notes, _, err := FromNFT("fuzz.nft", rs)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.nft") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		lines := strings.Count(string(data), "\n") + 1
		for _, n := range notes {
			if n.Line < 1 || n.Line > lines {
				t.Fatalf("note %+v of a %d-line input", n, lines)
			}
		}
		for _, d := range dumps {
			checkRoundTrip(t, "fuzz", d)
		}
	})
}

// TestFromNFTCutShort reads iptables-nft's tables from an nft listing cut
// short (nft.ParseTextLenient): the dump of the family cut is partial,
// saying where the listing was cut, and its rules are those read.
func TestFromNFTCutShort(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(parsetest.Root(t), "testdata", "paste", "forms", "nft-ruleset-iptables-nft.txt"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	text = text[strings.Index(text, "\ntable ")+1:] // past the prompt
	for _, tc := range []struct {
		name, cut string
		partial   string // in the reason, "" for none
	}{
		{"whole", text, ""},
		{"in table ip filter", text[:strings.Index(text, "chain KUBE-SERVICES")], "table ip filter is not closed"},
		{"in the header of table ip nat", text[:strings.Index(text, "table ip nat")+8], "its last line"},
		{"in a rule", text[:strings.LastIndex(text, "dnat to")], "its last line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, _, err := nft.ParseTextLenient("paste.txt", []byte(tc.cut))
			if err != nil {
				t.Fatal(err)
			}
			dumps, _, ok, err := FromNFT("paste.txt", rs)
			if err != nil || !ok || len(dumps) == 0 {
				t.Fatalf("FromNFT: %v %v %d dumps", ok, err, len(dumps))
			}
			d := dumps[0]
			cut := strings.Contains(d.PartialReason, "cut short at line ")
			if cut != (tc.partial != "") || tc.partial != "" && (!d.Partial || !strings.Contains(d.PartialReason, tc.partial)) {
				t.Errorf("partial %v %q, want %q", d.Partial, d.PartialReason, tc.partial)
			}
			if tc.partial != "" && d.NumRules() == 0 {
				t.Error("no rule read")
			}
		})
	}
}
