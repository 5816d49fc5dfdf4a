package trace_test

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/trace"
	"github.com/proxyscan/proxyscan/internal/netnstest"
	"github.com/proxyscan/proxyscan/parsers/ipset"
	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// setRules is a filter table whose rules match the set KUBE-CLUSTER-IP
// and, on line 5, the set named by the verb.
const setRules = "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n" +
	"-A OUTPUT -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT\n" +
	"-A OUTPUT -m set --match-set %s src -j DROP\nCOMMIT\n"

const clusterIPSet = "create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536\n"

func parseSets(t *testing.T, text string, lenient bool) *ipset.Dump {
	t.Helper()
	parse := ipset.Parse
	if lenient {
		parse = ipset.ParseLenient
	}
	d, err := parse("ipset-save.txt", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestValidateSets checks that a rule matching a set the node's ipset
// dump does not hold is a problem at its line, and that nothing is said
// without a whole ipset dump.
func TestValidateSets(t *testing.T) {
	cut := "Name: KUBE-CLUSTER-IP\nType: hash:ip,port\nRevision: 6\nHeader: family inet hashsize 1024 maxelem 65536\n" +
		"Size in memory: 408\nReferences: 1\nNumber of entries: 2\nMembers:\n10.96.0.1,tcp:443\n"
	for _, tc := range []struct {
		name, set string
		sets      []*ipset.Dump
		want      string
	}{
		{"missing set", "NODE-ALLOW", []*ipset.Dump{parseSets(t, clusterIPSet, false)},
			`iptables-save.txt:6: chain OUTPUT matches set NODE-ALLOW, which ipset-save.txt does not hold: iptables-restore refuses the table ("Set NODE-ALLOW doesn't exist")`},
		{"every set present", "KUBE-CLUSTER-IP", []*ipset.Dump{parseSets(t, clusterIPSet, false)}, ""},
		{"empty ipset dump", "KUBE-CLUSTER-IP", []*ipset.Dump{{Form: ipset.FormSave}},
			`iptables-save.txt:5: chain OUTPUT matches set KUBE-CLUSTER-IP, which the ipset dump given does not hold`},
		{"no ipset dump", "NODE-ALLOW", nil, ""},
		{"ipset listing cut short", "NODE-ALLOW", []*ipset.Dump{parseSets(t, cut, true)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := parseIPT(t, fmt.Sprintf(setRules, tc.set))
			probs := trace.ValidateSets([]*iptables.Dump{d}, tc.sets)
			got := fmt.Sprint(probs)
			if tc.want == "" && len(probs) != 0 || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("got %s, want %q", got, tc.want)
			}
			for _, p := range probs {
				if p.Kind != trace.ProblemMissingSet {
					t.Errorf("kind %s", p.Kind)
				}
			}
		})
	}
}

// TestTraceMissingSet checks that a trace through rules matching a set
// the node does not have says that the kernel refuses them.
func TestTraceMissingSet(t *testing.T) {
	pkt := trace.Packet{Src: netip.MustParseAddr("10.244.0.5"), Dst: netip.MustParseAddrPort("10.96.0.1:80"), Proto: "tcp", From: model.FromPod}
	for _, set := range []string{"NODE-ALLOW", "KUBE-CLUSTER-IP"} {
		dp := &trace.Dataplane{Mode: "iptables", IPTables: []*iptables.Dump{parseIPT(t, fmt.Sprintf(setRules, set))},
			IPSets: []*ipset.Dump{parseSets(t, clusterIPSet, false)}, Local: testLocal}
		res, err := trace.Trace(dp, pkt, trace.Options{})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, w := range res.Warnings {
			found = found || strings.Contains(w, "the kernel refuses this ruleset") && strings.Contains(w, "matches set NODE-ALLOW")
		}
		if found != (set == "NODE-ALLOW") {
			t.Errorf("set %s: warnings %q", set, res.Warnings)
		}
	}
}

// TestKernelRefusesMissingSet checks with the real iptables-restore that
// the rules are refused while the set is missing, and loaded once it
// exists.
func TestKernelRefusesMissingSet(t *testing.T) {
	netnstest.SkipShort(t, "loads rulesets into the kernel")
	netnstest.RequireRoot(t)
	netnstest.RequireTools(t, "iptables-restore", "ipset")
	ns := netnstest.New(t)
	ns.Run([]byte(clusterIPSet), "ipset", "restore")
	rules := []byte(fmt.Sprintf(setRules, "NODE-ALLOW"))
	if out, err := ns.Try(rules, "iptables-restore", "--test"); err == nil || !strings.Contains(string(out)+err.Error(), "NODE-ALLOW") {
		t.Errorf("iptables-restore took rules matching a missing set: %v: %s", err, out)
	}
	ns.Run(nil, "ipset", "create", "NODE-ALLOW", "hash:ip")
	if out, err := ns.Try(rules, "iptables-restore", "--test"); err != nil {
		t.Errorf("iptables-restore refused the rules once the set exists: %v: %s", err, out)
	}
}
