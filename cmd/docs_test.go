package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestDocsCurrent regenerates the check pages, man pages and completions
// and compares them with docs/ (make docs rewrites them).
func TestDocsCurrent(t *testing.T) {
	dir := t.TempDir()
	f, outputs := testFactory()
	if code := Run(f, []string{"docs", "--dir", dir}); code != 0 {
		_, stderr := outputs()
		t.Fatalf("docs: exit %d: %s", code, stderr)
	}
	docs := filepath.Join(parsetest.Root(t), "docs")
	for _, sub := range []string{"checks", "man", "completion"} {
		list := func(root string) []string {
			var out []string
			entries, _ := os.ReadDir(filepath.Join(root, sub))
			for _, e := range entries {
				out = append(out, e.Name())
			}
			sort.Strings(out)
			return out
		}
		got, want := list(dir), list(docs)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("docs/%s: generated %v, committed %v (run make docs)", sub, got, want)
			continue
		}
		for _, name := range got {
			g, _ := os.ReadFile(filepath.Join(dir, sub, name))
			w, _ := os.ReadFile(filepath.Join(docs, sub, name))
			if !bytes.Equal(g, w) {
				t.Errorf("docs/%s/%s is stale (run make docs):\n%s", sub, name, parsetest.Diff(w, g))
			}
		}
	}
	page, _ := os.ReadFile(filepath.Join(dir, "checks", "node-drift.md"))
	if !bytes.Contains(page, []byte("## How to fix it")) || !bytes.Contains(page, []byte("one bundle per node")) {
		t.Errorf("node-drift page:\n%s", page)
	}
	man, _ := os.ReadFile(filepath.Join(dir, "man", "proxyscan-analyze.1"))
	if !bytes.Contains(man, []byte("sarif")) || !bytes.Contains(man, []byte(".TH \"PROXYSCAN\"")) {
		t.Errorf("analyze man page lacks the formats or its header")
	}
}

// TestChecksMarkdownSeverityRule: the catalogue states how severity is
// chosen before the checks, with the rule ruleset-scale follows.
func TestChecksMarkdownSeverityRule(t *testing.T) {
	f, outputs := testFactory()
	if code := Run(f, []string{"checks", "-o", "markdown"}); code != 0 {
		_, stderr := outputs()
		t.Fatalf("checks -o markdown: exit %d: %s", code, stderr)
	}
	out, _ := outputs()
	rule := strings.Index(out, "Severity follows harm.")
	table := strings.Index(out, "| ID | severity | title |")
	if rule < 0 || table < 0 || rule > table || !strings.Contains(out, "`ruleset-scale` is information unless") {
		t.Errorf("checks -o markdown does not lead with the severity rule:\n%.600s", out)
	}
}
