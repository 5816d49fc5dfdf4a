package checks_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestNodeDriftPartialNode: a node whose iptables-save is cut short in its
// nat table lacks what follows the cut; node-drift does not report that as
// a difference, says in a note that the node's IPv4 data plane was not
// compared, and the node's coverage lists the note as a gap.
func TestNodeDriftPartialNode(t *testing.T) {
	src := filepath.Join(parsetest.Root(t), "testdata", "fleet", "nodes")
	for _, tt := range []struct {
		name string
		// from names the fixture each node copies; cut the nodes whose
		// iptables-save keeps its first 120 lines only.
		from []string
		cut  map[string]bool
	}{
		{"whole", []string{"node-a", "node-b"}, nil},
		{"one cut", []string{"node-a", "node-b"}, map[string]bool{"node-b": true}},
		{"one cut of three", []string{"node-a", "node-b", "node-a"}, map[string]bool{"node-a": true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var dirs []string
			for i, from := range tt.from {
				dst := filepath.Join(dir, []string{"node-a", "node-b", "node-c"}[i])
				parsetest.CopyTree(t, filepath.Join(src, from), dst, nil)
				dirs = append(dirs, dst)
				if !tt.cut[filepath.Base(dst)] {
					continue
				}
				dump := filepath.Join(dst, "node", "iptables-save.txt")
				data, err := os.ReadFile(dump)
				if err != nil {
					t.Fatal(err)
				}
				lines := strings.SplitAfter(string(data), "\n")
				if err := os.WriteFile(dump, []byte(strings.Join(lines[:120], "")), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			fr, drift := runFleet(t, dirs)
			for _, f := range drift {
				t.Errorf("finding on %s: %s", f.Node, f.Message)
			}
			for i, res := range fr.Results {
				name := filepath.Base(dirs[i])
				gaps := 0
				for _, g := range res.Coverage.Gaps {
					if strings.HasPrefix(g, "node-drift: not checked for node ") {
						gaps++
						if !strings.Contains(g, "(IPv4): node/iptables-save.txt is partial: cut short") {
							t.Errorf("%s: gap %q", name, g)
						}
					}
				}
				if want := map[bool]int{true: 1}[tt.cut[name]]; gaps != want {
					t.Errorf("%s: %d node-drift gaps, want %d: %q", name, gaps, want, res.Coverage.Gaps)
				}
				if tt.cut[name] && res.Coverage.Complete {
					t.Errorf("%s: coverage complete", name)
				}
				for _, st := range res.Statuses {
					if st.ID != "node-drift" {
						continue
					}
					notes := strings.Join(st.Notes, "\n")
					for n := range tt.cut {
						if !strings.Contains(notes, "not checked for node "+n+" (IPv4)") {
							t.Errorf("%s: node-drift's notes do not name %s:\n%s", name, n, notes)
						}
					}
				}
			}
		})
	}
}
