package checks_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/checktest"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// inetReject is a host firewall table of the inet family that rejects
// every forwarded packet not already accepted: it stops the service
// traffic of both families at one rule.
const inetReject = `
table inet host-firewall {
	chain forward {
		type filter hook forward priority filter + 10; policy accept;
		ct state established,related accept
		reject with icmpx admin-prohibited
	}
}
`

// TestInetRuleOneCause: one rule of an inet table that rejects the
// service traffic of IPv4 and IPv6 is one finding of service-unreachable
// that names both families and cites the rule once, not one finding per
// family.
func TestInetRuleOneCause(t *testing.T) {
	s := checktest.Load(t, filepath.Join(parsetest.Root(t), "testdata", "scenarios", "nftables", "healthy.txtar"))
	ruleset := filepath.Join(s.Dir, "node", "nft-ruleset.txt")
	data, err := os.ReadFile(ruleset)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ruleset, append(data, inetReject...), 0o644); err != nil {
		t.Fatal(err)
	}
	snaps, err := load.Load([]string{s.Dir}, s.Options)
	if err != nil {
		t.Fatal(err)
	}
	var got []checks.Finding
	for _, f := range checks.Run(snaps[0], checks.All).Findings {
		if f.Check == "service-unreachable" {
			got = append(got, f)
		}
	}
	if len(got) != 1 {
		for _, f := range got {
			t.Log(f.Message)
		}
		t.Fatalf("%d findings of service-unreachable, want 1 for the one rule", len(got))
	}
	f := got[0]
	if !strings.HasPrefix(f.Message, "one rule, inet host-firewall forward: reject") || !strings.Contains(f.Message, "destinations, IPv4 and IPv6)") {
		t.Errorf("message %q does not lead with the rule and name both families", f.Message)
	}
	if len(f.Evidence) != 1 || f.Evidence[0].File != "node/nft-ruleset.txt" {
		t.Errorf("evidence %+v, want the rule once", f.Evidence)
	}
	v6 := false
	for _, o := range f.Objects {
		v6 = v6 || strings.Contains(o, "[")
	}
	if !v6 {
		t.Errorf("objects %q list no IPv6 destination", f.Objects)
	}
}
