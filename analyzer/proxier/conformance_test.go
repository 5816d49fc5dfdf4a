package proxier

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
)

// conformanceCase is one scenario with what kube-proxy v1.37.2 programmed
// for it: restore-input files per family, in kube-proxy's writer form.
type conformanceCase struct {
	name, inputs, golden string
}

// conformanceCases lists the scenarios with iptables goldens: those of the
// upstream harness (testdata/upstream) and those of this package
// (testdata/proxier, generated with the same harness).
func conformanceCases(t *testing.T) []conformanceCase {
	var out []conformanceCase
	for _, root := range []struct{ golden, inputs string }{
		{"../../testdata/upstream/golden/iptables", "../../testdata/upstream/scenarios"},
		{"../../testdata/proxier/upstream/iptables", "../../testdata/proxier/scenarios"},
	} {
		dirs, err := os.ReadDir(root.golden)
		if err != nil {
			t.Fatalf("reading goldens: %v", err)
		}
		for _, d := range dirs {
			if d.IsDir() {
				out = append(out, conformanceCase{d.Name(), filepath.Join(root.inputs, d.Name()), filepath.Join(root.golden, d.Name())})
			}
		}
	}
	if len(out) < 20 {
		t.Fatalf("found %d conformance scenarios, want at least 20", len(out))
	}
	return out
}

// readGolden reads and canonicalises the restore files of a golden.
func readGolden(t *testing.T, dir string) *Dataplane {
	t.Helper()
	dp := &Dataplane{Mode: model.ModeIPTables}
	for _, fam := range []iptables.Family{iptables.IPv4, iptables.IPv6} {
		file := "iptables-restore.v4"
		if fam == iptables.IPv6 {
			file = "iptables-restore.v6"
		}
		data, err := os.ReadFile(filepath.Join(dir, file))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		d, err := iptables.Parse(filepath.Join(dir, file), data)
		if err != nil {
			t.Fatal(err)
		}
		d.Family = fam
		c, err := Canonicalize(d)
		if err != nil {
			t.Fatalf("canonicalising %s: %v", file, err)
		}
		dp.IPTables = append(dp.IPTables, c)
	}
	if len(dp.IPTables) == 0 {
		t.Fatalf("no restore files in %s", dir)
	}
	return dp
}

func loadScenario(t *testing.T, dir string) *model.Snapshot {
	t.Helper()
	snaps, err := load.Load([]string{dir}, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 1 {
		t.Fatalf("%s: %d snapshots, want 1", dir, len(snaps))
	}
	return snaps[0]
}

// chainRules returns every chain of a dump with its rules, sorted within
// the chains whose order carries no meaning.
func chainRules(d *iptables.Dump) map[string][]string {
	out := map[string][]string{}
	for _, t := range d.Tables {
		for _, c := range t.Chains {
			key := t.Name + " " + c.Name
			rules := []string{}
			for _, r := range c.Rules {
				rules = append(rules, r.Raw)
			}
			if unorderedChains[key] || c.Builtin() {
				sort.Strings(rules)
			}
			out[key] = rules
		}
	}
	return out
}

// TestUpstreamConformance checks that the proxier's iptables data plane
// for kube-proxy 1.37 equals what the real kube-proxy v1.37.2 programmed
// for every scenario: the same chains, and in every chain the same rules
// in the same order, except in the chains kube-proxy fills in map order.
func TestUpstreamConformance(t *testing.T) {
	for _, tc := range conformanceCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			snap := loadScenario(t, tc.inputs)
			golden := readGolden(t, tc.golden)
			fams := []model.Family{}
			for _, d := range golden.IPTables {
				fams = append(fams, model.Family(d.Family))
			}
			exp, err := expectFor(snap, testOptions{Mode: model.ModeIPTables, Version: kpversion.V(37)})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(exp.IPTables); got != len(fams) {
				t.Fatalf("generated %d families, kube-proxy %d (%v)", got, len(fams), fams)
			}
			for i, d := range exp.IPTables {
				if diff := cmp.Diff(chainRules(golden.IPTables[i]), chainRules(d)); diff != "" {
					t.Errorf("%s: rules differ from kube-proxy's (-kube-proxy +proxier):\n%s", d.Family, diff)
				}
			}
			golden.ports = snap.Ports
			for _, d := range Compare(exp, golden) {
				t.Errorf("Compare: %s %s %s %s: %s (%s)", d.Kind, d.Family, d.Table, d.Chain, d.Rule, d.Service)
			}
			checkNFAcct(t, tc.golden, exp)
		})
	}
}

// checkNFAcct checks that the rules use exactly the nfacct counters
// kube-proxy created.
func checkNFAcct(t *testing.T, dir string, dp *Dataplane) {
	data, err := os.ReadFile(filepath.Join(dir, "nfacct.txt"))
	if err != nil {
		return
	}
	want := map[string]bool{}
	for _, l := range strings.Fields(string(data)) {
		want[l] = true
	}
	for _, d := range dp.IPTables {
		for _, tb := range d.Tables {
			for _, c := range tb.Chains {
				for _, r := range c.Rules {
					if n := r.Value("--nfacct-name"); n != "" && !want[n] {
						t.Errorf("rule uses nfacct counter %s that kube-proxy did not create: %s", n, r.Raw)
					}
				}
			}
		}
	}
}
