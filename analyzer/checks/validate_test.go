package checks

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

var reID = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)

// TestCatalogue enforces the house rules of check definitions.
func TestCatalogue(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range All {
		if !reID.MatchString(c.ID) {
			t.Errorf("%s: ID is not kebab-case", c.ID)
		}
		if seen[c.ID] {
			t.Errorf("%s: duplicate ID", c.ID)
		}
		seen[c.ID] = true
		if c.Severity < Info || c.Severity > Error {
			t.Errorf("%s: no severity", c.ID)
		}
		if c.Title == "" || len(c.Title) > 60 || strings.HasSuffix(c.Title, ".") || strings.ToLower(c.Title[:1]) != c.Title[:1] {
			t.Errorf("%s: title %q must be lower case, without a final period, at most 60 characters", c.ID, c.Title)
		}
		for name, text := range map[string]string{"What": c.What, "Why": c.Why, "Fix": c.Fix} {
			if len(text) < 40 || !strings.HasSuffix(strings.TrimSpace(text), ".") {
				t.Errorf("%s: %s must be full sentences ending with a period", c.ID, name)
			}
		}
		if (c.Run == nil) == (c.RunFleet == nil) {
			t.Errorf("%s: needs exactly one of Run and RunFleet", c.ID)
		}
	}
}

// TestContractIDs checks that the checks and the contract's table of check
// IDs (docs/contract.md) list the same IDs.
func TestContractIDs(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "contract.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(data)
	start := strings.Index(section, "## Check IDs")
	if start < 0 {
		t.Fatal("docs/contract.md has no \"## Check IDs\" section")
	}
	section = section[start:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	var contract []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9-]+)` \\|").FindAllStringSubmatch(section, -1) {
		contract = append(contract, m[1])
	}
	var code []string
	for _, c := range All {
		code = append(code, c.ID)
	}
	sort.Strings(contract)
	sort.Strings(code)
	if strings.Join(contract, " ") != strings.Join(code, " ") {
		t.Errorf("check IDs differ:\ncontract: %v\ncode:     %v", contract, code)
	}
}
