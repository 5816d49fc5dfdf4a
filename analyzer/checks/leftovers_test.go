package checks_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/checktest"
)

// leftoversCheck reports ModeLeftovers for every mode the data plane shows
// besides the node's, as mode-mismatch does for the pairs involving
// nftables.
var leftoversCheck = &checks.Check{
	ID: "mode-mismatch", Severity: checks.Warning, Title: "leftovers of another proxy mode",
	Run: func(p *checks.Pass) {
		current, _ := p.Mode()
		for _, m := range checks.ProgrammedModes(p.Snap) {
			if f, ok := checks.ModeLeftovers(p.Snap, current, m); ok {
				p.Report(f)
			}
		}
	},
}

// TestModeLeftovers runs the scenarios of testdata/leftovers: rules of
// another proxy mode next to nftables mode, or nftables leftovers next to
// iptables and IPVS mode, each made with the real tools in one scratch
// network namespace.
func TestModeLeftovers(t *testing.T) {
	files := checktest.Files(t, "leftovers/*.txtar")
	if len(files) == 0 {
		t.Fatal("no scenarios")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			fs := checktest.Run(t, file, []*checks.Check{leftoversCheck})
			for _, f := range fs {
				t.Logf("%s", f.Message)
				if len(f.Evidence) < 2 {
					t.Errorf("evidence of one mode only: %v", f.Evidence)
				}
			}
		})
	}
}

// TestModeLeftoversQuiet checks that nothing is reported where the data
// plane holds one mode.
func TestModeLeftoversQuiet(t *testing.T) {
	for _, file := range checktest.Files(t, "scenarios/nftables/healthy*.txtar") {
		s := checktest.Load(t, file)
		res := analyseWith(t, s.Dir, []*checks.Check{leftoversCheck})
		if len(res.Findings) != 0 {
			t.Errorf("%s: %v", filepath.Base(file), res.Findings)
		}
	}
}
