package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestReadmeExample checks that the report README.md shows for
// testdata/fleet/nodes/node-c is the one analyze prints at 80 columns:
// every line of the example, in order ("..." standing for lines left
// out), and the same verdict and footer, so that the example cannot drift
// from the checks.
func TestReadmeExample(t *testing.T) {
	root := parsetest.Root(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	const prompt = "$ proxyscan analyze testdata/fleet/nodes/node-c\n"
	text := string(readme)
	i := strings.Index(text, prompt)
	if i < 0 {
		t.Fatalf("README.md has no example %q", strings.TrimSpace(prompt))
	}
	text = text[i+len(prompt):]
	want := strings.Split(text[:strings.Index(text, "```")], "\n")
	f, outputs := testFactory()
	f.IO.Width = 80
	if code := Run(f, []string{"analyze", filepath.Join(root, "testdata", "fleet", "nodes", "node-c"), "-o", "table"}); code != 1 {
		t.Fatalf("analyze: exit %d, want 1", code)
	}
	stdout, _ := outputs()
	// The report keeps a count and its unit together with a no-break
	// space; the README spells it as a space.
	got := strings.Split(strings.ReplaceAll(stdout, "\u00a0", " "), "\n")
	next, skip := 0, false
	for _, line := range want {
		if line == "" && next < len(got) && got[next] != "" && !skip {
			t.Fatalf("README.md example: blank line where analyze prints %q", got[next])
		}
		if line == "..." {
			skip = true
			continue
		}
		for next < len(got) && got[next] != line {
			if !skip {
				t.Fatalf("README.md example: %q where analyze prints %q (update the example)", line, got[next])
			}
			next++
		}
		if next == len(got) {
			t.Fatalf("README.md example: %q not printed by analyze (update the example)\nanalyze:\n%s", line, stdout)
		}
		next, skip = next+1, false
	}
	if rest := strings.TrimSpace(strings.Join(got[next:], "\n")); rest != "" {
		t.Errorf("README.md example ends before analyze's report does; it leaves out:\n%s", rest)
	}
}
