package checks_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/checktest"
)

// TestPolicyEvidenceOnce: a traffic-policy-mismatch finding names each
// line of its evidence once, though in IPVS mode the entry and its
// dispatch are the same virtual server.
func TestPolicyEvidenceOnce(t *testing.T) {
	n := 0
	for _, file := range checktest.Files(t, "scenarios/*/traffic-policy-mismatch*.txtar") {
		name := filepath.Base(filepath.Dir(file)) + "/" + strings.TrimSuffix(filepath.Base(file), ".txtar")
		t.Run(name, func(t *testing.T) {
			for _, f := range checktest.Run(t, file, checks.All) {
				if f.Check != "traffic-policy-mismatch" {
					continue
				}
				n++
				seen := map[string]bool{}
				for _, e := range f.Evidence {
					k := fmt.Sprintf("%s:%d:%s:%s", e.File, e.Line, e.Path, e.Text)
					if seen[k] {
						t.Errorf("%s: evidence %s:%d given twice", f.Message, e.File, e.Line)
					}
					seen[k] = true
				}
			}
		})
	}
	if n == 0 {
		t.Fatal("no traffic-policy-mismatch finding in the scenarios")
	}
}
