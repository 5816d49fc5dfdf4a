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

// TestNodeDriftPartialNodeShows: what a node whose dump is cut short does
// show and differs is still reported. node-c of the fleet fixture, cut
// after the rules of shop/web:http, still forwards it to a stale endpoint;
// what it lacks (Service shop/sessions, the endpoint 10.244.3.5:8080 its
// peers use) may only be past the cut and is not reported.
func TestNodeDriftPartialNodeShows(t *testing.T) {
	src := filepath.Join(parsetest.Root(t), "testdata", "fleet", "nodes")
	dir := t.TempDir()
	dirs := fleetDirs(t, dir)
	for _, d := range dirs {
		parsetest.CopyTree(t, filepath.Join(src, filepath.Base(d)), d, nil)
	}
	dump := filepath.Join(dirs[2], "node", "iptables-save.txt")
	data, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	if !strings.Contains(lines[157], "shop/web:http -> 10.244.3.4:8080") {
		t.Fatalf("line 158 of node-c's dump: %q", lines[157])
	}
	if err := os.WriteFile(dump, []byte(strings.Join(lines[:158], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	_, drift := runFleetWith(t, dirs, without("service-missing", "endpoint-missing", "endpoint-stale"))
	var got []string
	for _, f := range drift {
		got = append(got, f.Node+": "+f.Message)
	}
	want := "node-c: node-c forwards to 10.244.3.4:8080, node-a and node-b do not; the exports' EndpointSlices do not say to forward to it"
	if len(got) != 1 || got[0] != want {
		t.Errorf("node-drift findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), want)
	}
}
