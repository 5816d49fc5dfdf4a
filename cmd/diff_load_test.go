package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/diff"
	"github.com/proxyscan/proxyscan/analyzer/load"
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
