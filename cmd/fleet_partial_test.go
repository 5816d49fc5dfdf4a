package cmd

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestFleetPartialNodeDrift: of two nodes alike, one whose iptables-save
// is cut short in its nat table is not reported by node-drift for what it
// does not show (main reported 135 warnings on a fleet of this kind):
// node-drift's note says the IPv4 data plane of that node was not
// compared, and the node's coverage lists it as a gap. Read from the
// nodes' reports (collect --analyze), the fleet's report is the same.
func TestFleetPartialNodeDrift(t *testing.T) {
	dir := t.TempDir()
	var bundles []string
	for _, name := range []string{"node-a", "node-b"} {
		dst := filepath.Join(dir, name)
		parsetest.CopyTree(t, testdata(t, "bundles", "iptables-healthy"), dst, nil)
		bundles = append(bundles, dst)
	}
	dump := filepath.Join(bundles[1], "node", "iptables-save.txt")
	data, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	if err := os.WriteFile(dump, []byte(strings.Join(lines[:200], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := fleetJSON(t, bundles, fleetOptions{reanalyze: true})
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Findings []struct {
			Check   string `json:"check"`
			Node    string `json:"node"`
			Message string `json:"message"`
		} `json:"findings"`
		Nodes []struct {
			Node     string `json:"node"`
			Coverage struct {
				Gaps []string `json:"gaps"`
			} `json:"coverage"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(got, &rep); err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		if f.Check == "node-drift" {
			t.Errorf("node-drift reports what the cut dump does not show: %s: %s", f.Node, f.Message)
		}
	}
	if len(rep.Nodes) != 2 {
		t.Fatalf("%d nodes, want 2", len(rep.Nodes))
	}
	const gap = "node-drift: not checked for node east-w2#2 (IPv4): node/iptables-save.txt is partial: cut short: table nat"
	found := false
	for _, g := range rep.Nodes[1].Coverage.Gaps {
		found = found || strings.HasPrefix(g, gap)
	}
	if !found {
		t.Errorf("the cut node's coverage gaps %q lack %q", rep.Nodes[1].Coverage.Gaps, gap)
	}
	for _, g := range rep.Nodes[0].Coverage.Gaps {
		if strings.HasPrefix(g, "node-drift:") {
			t.Errorf("the whole node's coverage lists %q", g)
		}
	}
	// The same from the nodes' reports, without their dumps.
	for _, b := range bundles {
		if err := writeNodeReport(b, &CollectOptions{Tool: toolOf(reportVersion)}); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		dropDumps(t, b)
	}
	merged, err := fleetJSON(t, bundles, fleetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(merged, got) {
		t.Errorf("read from node reports, the fleet's report differs: %s", firstDiff(merged, got))
	}
}
