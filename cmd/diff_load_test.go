package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/diff"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/internal/benchgen"
)

// diffJSON loads both sides with lo and returns their comparison as JSON.
func diffJSON(t *testing.T, old, new string, lo load.Options) string {
	t.Helper()
	o, err := load.Load([]string{old}, lo)
	if err != nil {
		t.Fatalf("%s: %v", old, err)
	}
	n, err := load.Load([]string{new}, lo)
	if err != nil {
		t.Fatalf("%s: %v", new, err)
	}
	b, err := json.Marshal(diff.Compare(diff.Tool{Name: "proxyscan"}, o, n, diff.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDiffLoadSameReport checks that the sides as diff loads them (the
// exports compacted) compare as the whole inputs do: every bundle of
// testdata with the next one and with itself, and the pairs of nodes and
// the changed bundle of testdata.
func TestDiffLoadSameReport(t *testing.T) {
	entries, err := os.ReadDir(testdata(t, "bundles"))
	if err != nil {
		t.Fatal(err)
	}
	var bundles []string
	for _, e := range entries {
		if e.IsDir() {
			bundles = append(bundles, testdata(t, "bundles", e.Name()))
		}
	}
	pairs := [][2]string{
		{testdata(t, "bundles", "iptables-healthy"), testdata(t, "diff", "after")},
		{testdata(t, "fleet", "nodes", "node-a"), testdata(t, "fleet", "nodes", "node-c")},
	}
	for i, b := range bundles {
		pairs = append(pairs, [2]string{b, b}, [2]string{b, bundles[(i+1)%len(bundles)]})
	}
	for _, p := range pairs {
		whole := diffJSON(t, p[0], p[1], load.Options{})
		if got := diffJSON(t, p[0], p[1], diffLoadOptions("", false)); got != whole {
			t.Errorf("%s → %s: the report differs when the sides are loaded as diff loads them:\nwhole: %s\ndiff:  %s",
				filepath.Base(p[0]), filepath.Base(p[1]), whole, got)
		}
	}
}

// TestDiffSharedExport: the sides of a diff whose exports are alike byte
// for byte share their decoding (the new side takes the old side's
// objects), those whose exports differ decode each their own, and either
// way the comparison is the one of the sides loaded each alone: with an
// export alike (two nodes of one cluster) and with an export of the same
// size that differs by one endpoint's address.
func TestDiffSharedExport(t *testing.T) {
	dir := t.TempDir()
	spec := benchgen.Spec{Services: 200, Endpoints: 800, NodePortEvery: 4}
	if err := spec.WriteFleet(dir, 3); err != nil {
		t.Fatal(err)
	}
	node := func(i int) string { return filepath.Join(dir, fmt.Sprintf("node-%04d", i)) }
	p := filepath.Join(node(3), "cluster", "cluster.json")
	export, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// The fleet's files are links to one: node-0003's is replaced.
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	changed := bytes.Replace(export, []byte(`"10.128.0.1"`), []byte(`"10.127.0.1"`), 1)
	if bytes.Equal(changed, export) {
		t.Fatal("the export has no endpoint 10.128.0.1")
	}
	if err := os.WriteFile(p, changed, 0o644); err != nil {
		t.Fatal(err)
	}
	lo := diffLoadOptions("", false)
	for _, tc := range []struct {
		other   int
		shared  bool
		changes string
	}{{2, true, ""}, {3, false, `"kind":"endpoint-removed"`}} {
		o, n, err := loadSides(node(1), node(tc.other), lo)
		if err != nil {
			t.Fatal(err)
		}
		if shared := o[0].Objects.Services[0] == n[0].Objects.Services[0]; shared != tc.shared {
			t.Errorf("node-0001 and node-%04d: the sides share their export's objects: %t, want %t", tc.other, shared, tc.shared)
		}
		b, err := json.Marshal(diff.Compare(diff.Tool{Name: "proxyscan"}, o, n, diff.Options{}))
		if err != nil {
			t.Fatal(err)
		}
		if alone := diffJSON(t, node(1), node(tc.other), lo); string(b) != alone {
			t.Errorf("node-0001 and node-%04d: the comparison differs from that of the sides loaded alone:\ntogether: %s\nalone:    %s", tc.other, b, alone)
		}
		if tc.changes != "" && !strings.Contains(string(b), tc.changes) {
			t.Errorf("node-0001 and node-%04d: no %s in %s", tc.other, tc.changes, b)
		}
	}
}

// TestDiffHeapFloor: diff paces its collector with a floor of its larger
// side's inputs, ended once the diff is written.
func TestDiffHeapFloor(t *testing.T) {
	saved := diffHeap
	t.Cleanup(func() { diffHeap = saved })
	var got []string
	ended := false
	diffHeap = func(paths []string) func() {
		got = paths
		return func() { ended = true }
	}
	old, new := testdata(t, "bundles", "iptables-healthy"), testdata(t, "diff", "after")
	f, _ := testFactory()
	if code := Run(f, []string{"diff", old, new, "-o", "json"}); code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
	want := []string{old}
	if inputSize([]string{new}) > inputSize([]string{old}) {
		want = []string{new}
	}
	if !slices.Equal(got, want) || !ended {
		t.Errorf("the heap's floor was of %q (ended: %t), want of %q, ended", got, ended, want)
	}
}
