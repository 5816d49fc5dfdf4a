package proxier

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/model"
)

// TestBundleConformance checks that for every iptables-mode bundle of
// testdata/bundles (captured from real kube-proxy releases: 1.37 for the
// healthy and mini bundles, older ones where present) the proxier, run for
// the bundle's kube-proxy version, reproduces the captured dumps: Compare
// finds nothing, in any family.
func TestBundleConformance(t *testing.T) {
	root := "../../testdata/bundles"
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		dir := filepath.Join(root, e.Name())
		if _, err := os.Stat(filepath.Join(dir, "node", "iptables-save.txt")); err != nil || !e.IsDir() {
			continue
		}
		snap := loadScenario(t, dir)
		if snap.Config.EffectiveMode() != model.ModeIPTables || !snap.Version.Supported() {
			continue // the layouts before 1.20 are read, not modelled
		}
		n++
		t.Run(e.Name(), func(t *testing.T) {
			exp, err := expectFor(snap, testOptions{})
			if err != nil {
				t.Fatal(err)
			}
			act, err := Captured(resolved(snap))
			if err != nil {
				t.Fatal(err)
			}
			if len(act.IPTables) != len(exp.IPTables) {
				t.Fatalf("captured %d families, expected %d", len(act.IPTables), len(exp.IPTables))
			}
			for _, d := range Compare(exp, act) {
				t.Errorf("%s %s %s %s: %s (%s) %s", d.Kind, d.Family, d.Table, d.Chain, d.Rule, d.Service, d.Note)
			}
			t.Logf("kube-proxy %s: %d families reproduced", exp.Version, len(exp.IPTables))
		})
	}
	if n < 2 {
		t.Fatalf("%d iptables bundles found, want at least 2", n)
	}
}
