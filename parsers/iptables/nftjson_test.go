package iptables

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/nftables"

	"github.com/proxyscan/proxyscan/internal/netnstest"
	"github.com/proxyscan/proxyscan/parsers/nft"
)

// chainRules are the rules of each chain of a dump as Format writes them
// ("-A CHAIN ..." without counters or what nft does not show), by table
// and chain.
func chainRules(d *Dump) map[string][]string {
	out := map[string][]string{}
	table := ""
	for _, l := range strings.Split(string(Format(d)), "\n") {
		l = nftShown(l)
		switch {
		case strings.HasPrefix(l, "*"):
			table = l[1:]
		case strings.HasPrefix(l, "-A "):
			chain, _, _ := strings.Cut(l[3:], " ")
			out[table+" "+chain] = append(out[table+" "+chain], nftVisible(l))
		}
	}
	return out
}

// checkNFTJSON reads js, what nft -j list ruleset printed of the IPv4
// iptables-nft tables that iptables-nft-save printed as save, and checks
// that each rule FromNFT reads from it is iptables-nft-save's rule of the
// same place, but for what nft does not show (comments, nfacct, bare -m
// tcp); that a rule is only left unread when nft's JSON names an xt match
// or target of it without its options; and that those are noted and make
// the dump partial. It returns how many rules were read and left.
func checkNFTJSON(t *testing.T, name string, js, save []byte) (read, left int) {
	t.Helper()
	return checkNFTJSONFamily(t, name, js, save, IPv4)
}

// checkNFTJSONFamily is checkNFTJSON of the tables of family f.
func checkNFTJSONFamily(t *testing.T, name string, js, save []byte, f Family) (read, left int) {
	t.Helper()
	want, err := Parse(name+".save", save)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := nft.Parse(name, js)
	if err != nil {
		t.Fatal(err)
	}
	dumps, notes, ok, err := FromNFT(name, rs)
	if err != nil || !ok || len(dumps) != 1 || dumps[0].Family != f {
		t.Fatalf("FromNFT: %d dumps, %v, %v", len(dumps), ok, err)
	}
	got := dumps[0]
	wantRules, gotRules := chainRules(want), chainRules(got)
	for _, tb := range rs.Tables {
		if tb.Family != map[Family]nftables.TableFamily{IPv4: nftables.TableFamilyIPv4, IPv6: nftables.TableFamilyIPv6}[f] || !iptablesNFTTables[tb.Name] {
			continue
		}
		for _, c := range tb.Chains {
			key := tb.Name + " " + c.Name
			w, g := wantRules[key], gotRules[key]
			if len(w) != len(c.Rules) {
				t.Fatalf("%s: nft lists %d rules, iptables-nft-save %d", key, len(c.Rules), len(w))
			}
			j := 0
			for k, r := range c.Rules {
				words, err := nft.RuleWords(r)
				if err != nil {
					t.Fatalf("%s: %v", r.Pos(), err)
				}
				if _, detail := nftRule(c.Name, words, f); detail != "" {
					left++
					if !strings.Contains(" "+strings.Join(words, " ")+" ", " xt ") {
						t.Errorf("%s: %s left unread (%s), though nft's JSON shows all of it: %s", r.Pos(), key, detail, w[k])
					}
					continue
				}
				read++
				if j >= len(g) {
					t.Errorf("%s: rule %d (%s) not read", key, k, w[k])
					continue
				}
				if g[j] != w[k] {
					t.Errorf("%s: %s\n got %s\nwant %s", key, r.Pos(), g[j], w[k])
				}
				j++
			}
			if j != len(g) {
				t.Errorf("%s: %d rules read, %d expected", key, len(g), j)
			}
		}
	}
	if got.NumRules() != read {
		t.Errorf("%d rules read, want %d", got.NumRules(), read)
	}
	if left > 0 {
		if !got.Partial || !strings.Contains(got.PartialReason, count(left, "rule")+" of the iptables-nft tables") ||
			!strings.Contains(got.PartialReason, "nft -j names xt matches and targets without their options: ") {
			t.Errorf("partial %v (%s), want %d rules left", got.Partial, got.PartialReason, left)
		}
		if len(notes) == 0 {
			t.Errorf("no notes of the %d rules left", left)
		}
	}
	for _, n := range notes {
		if n.Reason != ReasonNotTranslated || !n.Skipped || !strings.HasPrefix(n.Detail, "$.nftables[") || n.Line < 1 {
			t.Errorf("note %+v", n)
		}
	}
	checkRoundTrip(t, name, got)
	return read, left
}

// TestFromNFTJSONFixtures reads the JSON listings of testdata/nft (nft -j
// list ruleset of each dump of nftFixtures restored by
// iptables-nft-restore) and finds iptables-nft-save's rules, as
// checkNFTJSON says.
func TestFromNFTJSONFixtures(t *testing.T) {
	for _, f := range nftFixtures {
		t.Run(f.name, func(t *testing.T) {
			js, err := os.ReadFile(filepath.Join("testdata", "nft", f.name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			save, err := os.ReadFile(filepath.Join("testdata", "nft", f.name+".save"))
			if err != nil {
				t.Fatal(err)
			}
			read, left := checkNFTJSON(t, f.name+".json", js, save)
			t.Logf("%d rules read, %d left", read, left)
			if read == 0 || left == 0 {
				t.Errorf("%d rules read, %d left: the fixture no longer shows both", read, left)
			}
		})
	}
}

// TestFromNFTJSONLive restores each dump of nftFixtures with
// iptables-nft-restore in a scratch network namespace and reads what
// nft -j list ruleset prints of it as checkNFTJSON says, against what
// iptables-nft-save prints (needs root; any version of the tools).
func TestFromNFTJSONLive(t *testing.T) {
	netnstest.RequireTools(t, "iptables-nft-restore", "iptables-nft-save", "nft", "nfacct", "ipset")
	for _, f := range nftFixtures {
		t.Run(f.name, func(t *testing.T) {
			dump, err := os.ReadFile(f.dump)
			if err != nil {
				t.Fatal(err)
			}
			ns := restoreNFT(t, dump)
			js := ns.Run(nil, "nft", "-j", "list", "ruleset")
			read, left := checkNFTJSON(t, f.name+".json", js, nftSave(ns, "iptables-nft-save"))
			t.Logf("%d rules read, %d left", read, left)
			if read == 0 {
				t.Error("no rule read")
			}
		})
	}
}

// TestFromNFTJSONLiveIPv6 is TestFromNFTJSONLive of the IPv6 dump of
// bundles/iptables-healthy restored by ip6tables-nft-restore.
func TestFromNFTJSONLiveIPv6(t *testing.T) {
	netnstest.RequireTools(t, "ip6tables-nft-restore", "ip6tables-nft-save", "nft", "nfacct")
	dump, err := os.ReadFile("../../testdata/bundles/iptables-healthy/node/ip6tables-save.txt")
	if err != nil {
		t.Fatal(err)
	}
	ns := netnstest.New(t)
	ns.Run(nil, "nfacct", "add", "ct_state_invalid_dropped_pkts")
	ns.Run(nil, "nfacct", "add", "localhost_nps_accepted_pkts")
	ns.Run(dump, "ip6tables-nft-restore")
	js := ns.Run(nil, "nft", "-j", "list", "ruleset")
	read, left := checkNFTJSONFamily(t, "healthy6.json", js, nftSave(ns, "ip6tables-nft-save"), IPv6)
	t.Logf("%d rules read, %d left", read, left)
	if read == 0 {
		t.Error("no rule read")
	}
}

// TestFromNFTJSONUnread checks what is left of rules nft's JSON cannot
// say in full, and the summary of the xt statements that made them so.
func TestFromNFTJSONUnread(t *testing.T) {
	js := `{"nftables": [{"table": {"family": "ip", "name": "nat", "handle": 1}},
{"chain": {"family": "ip", "table": "nat", "name": "KUBE-SEP-A", "handle": 2}},
{"rule": {"family": "ip", "table": "nat", "chain": "KUBE-SEP-A", "handle": 3, "expr": [{"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "saddr"}}, "right": "10.244.1.2"}}, {"xt": {"type": "match", "name": "comment"}}, {"counter": {"packets": 4, "bytes": 240}}, {"jump": {"target": "KUBE-MARK-MASQ"}}]}},
{"rule": {"family": "ip", "table": "nat", "chain": "KUBE-SEP-A", "handle": 4, "expr": [{"match": {"op": "==", "left": {"meta": {"key": "l4proto"}}, "right": "tcp"}}, {"xt": {"type": "match", "name": "comment"}}, {"counter": {"packets": 0, "bytes": 0}}, {"xt": {"type": "target", "name": "DNAT"}}]}},
{"rule": {"family": "ip", "table": "nat", "chain": "KUBE-SEP-A", "handle": 5, "expr": [{"xt": {"type": "match", "name": "statistic"}}, {"counter": {"packets": 0, "bytes": 0}}, {"xt": {"type": "target", "name": "DNAT"}}]}}]}`
	rs, err := nft.Parse("r.json", []byte(js))
	if err != nil {
		t.Fatal(err)
	}
	dumps, notes, ok, err := FromNFT("r.json", rs)
	if err != nil || !ok || len(dumps) != 1 {
		t.Fatalf("FromNFT: %d dumps, %v, %v", len(dumps), ok, err)
	}
	d := dumps[0]
	if got, want := strings.Join(chainRules(d)["nat KUBE-SEP-A"], "\n"), "-A KUBE-SEP-A -s 10.244.1.2/32 -j KUBE-MARK-MASQ"; got != want {
		t.Errorf("rules read:\n%s\nwant\n%s", got, want)
	}
	r := d.Table("nat").Chain("KUBE-SEP-A").Rules[0]
	if p, b, _ := r.Counters(); r.Line != 3 || p != 4 || b != 240 {
		t.Errorf("rule read at line %d with %d packets, %d bytes", r.Line, p, b)
	}
	wantWhy := "2 rules of the iptables-nft tables listed by nft in a form that does not say which iptables rule it is (nft -j names xt matches and targets without their options: target DNAT 2 times, match statistic 1 time; nft list ruleset, without -j, spells most of them)"
	if d.PartialReason != wantWhy {
		t.Errorf("partial reason\n %s\nwant\n %s", d.PartialReason, wantWhy)
	}
	want := fmt.Sprint([]string{`4 $.nftables[3]: "xt target DNAT"`, `5 $.nftables[4]: "xt match statistic counter packets 0 bytes 0 xt target DNAT"`})
	var got []string
	for _, n := range notes {
		got = append(got, fmt.Sprintf("%d %s", n.Line, n.Detail))
	}
	if fmt.Sprint(got) != want {
		t.Errorf("notes %v\nwant %v", got, want)
	}
}
