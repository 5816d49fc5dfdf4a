package checks_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/checktest"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestPartialInputs analyses the inputs of testdata/partial, each a
// bundle with files replaced by what tickets hold of them (an export cut
// short, one named ipset, one nft map, a grepped page), and compares what
// the run says with the case's golden (rewritten with -update): its
// verdict, its findings, its gaps and needs, and the checks' notes. What
// such an input does not show is a gap, never a finding; what it shows
// wrong is still a finding.
func TestPartialInputs(t *testing.T) {
	for _, file := range checktest.Files(t, "partial/*.txtar") {
		name := strings.TrimSuffix(filepath.Base(file), ".txtar")
		t.Run(name, func(t *testing.T) {
			s := checktest.Load(t, file)
			snaps, err := load.Load([]string{s.Dir}, s.Options)
			if err != nil {
				t.Fatal(err)
			}
			if len(snaps) != 1 {
				t.Fatalf("%d nodes, want 1", len(snaps))
			}
			got := partialSummary(checks.Run(snaps[0], checks.All), s.Dir)
			golden := strings.TrimSuffix(file, ".txtar") + ".golden"
			if *parsetest.Update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("the analysis of %s is not %s (go test -run TestPartialInputs -update rewrites it):\n%s", file, golden, got)
			}
		})
	}
}

// partialSummary prints what a run says of its inputs' coverage: the
// verdict, each finding, each gap and need, and the checks' notes, with
// the bundle's directory dir left out of paths.
func partialSummary(res *checks.Result, dir string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "verdict: %s\n", res.Verdict())
	for _, f := range res.Findings {
		fmt.Fprintf(&b, "finding: %s %s: %s\n", f.Check, f.Severity, f.Message)
	}
	for _, g := range res.Coverage.Gaps {
		fmt.Fprintf(&b, "gap: %s\n", g)
	}
	for _, n := range res.Coverage.Needs {
		fmt.Fprintf(&b, "need: %s: %s\n", n.Input, n.Command)
	}
	for _, st := range res.Statuses {
		for _, n := range st.Notes {
			fmt.Fprintf(&b, "note: %s: %s\n", st.ID, n)
		}
	}
	return strings.ReplaceAll(b.String(), filepath.ToSlash(dir)+"/", "")
}
