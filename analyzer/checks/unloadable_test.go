package checks_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/checktest"
)

// TestUnloadableScenarios runs every check on the scenarios of
// testdata/unloadable, rulesets edited by hand that the kernel refuses to
// load (a rule naming a chain that was deleted), which therefore cannot be
// listed as nft or iptables-save print them, and compares the findings
// with their "# want" lines.
func TestUnloadableScenarios(t *testing.T) {
	for _, file := range checktest.Files(t, "unloadable/*/*.txtar") {
		name := filepath.Base(filepath.Dir(file)) + "/" + strings.TrimSuffix(filepath.Base(file), ".txtar")
		t.Run(name, func(t *testing.T) {
			checktest.Run(t, file, checks.All)
		})
	}
}
