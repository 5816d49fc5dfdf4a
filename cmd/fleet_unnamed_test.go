package cmd

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/report"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestFleetUnnamedNodes: nodes whose inputs say no name (plain
// directories of pasted dumps, without a Node export) report their
// findings under the names node-drift gives them (their directories'
// base names): the JSON report says which node each finding is of, one
// finding per node, and the table lists what the nodes report alike once,
// naming them, rather than once per node with no node.
func TestFleetUnnamedNodes(t *testing.T) {
	dump, err := os.ReadFile(filepath.Join(parsetest.Root(t), "testdata", "bundles", "iptables-healthy", "node", "iptables-save.txt"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	names := []string{"n1", "n2", "n3"}
	for _, name := range names {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "iptables-save.txt"), dump, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, jobs := range fleetJobs() {
		fo := &fleetOptions{load: load.Options{Compact: true}, checks: checks.All, jobs: jobs}
		nodes, drift, err := analyzeFleet([]string{dir}, fo)
		if err != nil {
			t.Fatal(err)
		}
		rep := report.BuildNodes(report.Tool{Name: "proxyscan", Version: reportVersion}, nodes, drift)
		var js bytes.Buffer
		if err := report.RenderJSON(&js, rep, report.Options{}); err != nil {
			t.Fatal(err)
		}
		var got struct {
			Findings []struct{ Check, Node, Message string }
		}
		if err := json.Unmarshal(js.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		per := map[string]int{}
		for _, f := range got.Findings {
			if f.Node == "" {
				t.Errorf("jobs %d: %s finding without a node: %s", jobs, f.Check, f.Message)
			}
			per[f.Node]++
		}
		if per["n1"] == 0 || per["n1"] != per["n2"] || per["n1"] != per["n3"] || len(per) != len(names) {
			t.Errorf("jobs %d: findings per node %v, want as many on n1, n2 and n3 (alike), and some", jobs, per)
		}
		var table bytes.Buffer
		if err := report.RenderTable(&table, rep, report.Options{Width: 200}); err != nil {
			t.Fatal(err)
		}
		if rows := strings.Count(table.String(), "services-without-endpoints"); rows != 2*per["n1"] {
			t.Errorf("jobs %d: the table shows services-without-endpoints %d times, want once per finding alike in the rows and once in the details (%d):\n%s", jobs, rows, 2*per["n1"], table.String())
		}
		if !strings.Contains(table.String(), "nodes n1, n2, n3") {
			t.Errorf("jobs %d: the table's details do not name the nodes:\n%s", jobs, table.String())
		}
	}
}

// TestFleetNodeLabels: the nodes of a report are named for people as
// node-drift names them, in the summary line and the list of what was not
// checked too: two bundles of one node name are that name and "NAME#2",
// and a node no input names, read from no bundle (a pasted dump beside
// the bundles, under a prompt that names no host), is "node 3" rather
// than nothing.
func TestFleetNodeLabels(t *testing.T) {
	dir := t.TempDir()
	for _, b := range []string{"a", "b"} {
		if err := os.CopyFS(filepath.Join(dir, b), os.DirFS(testdata(t, "bundles", "iptables-v1.20-mini"))); err != nil {
			t.Fatal(err)
		}
	}
	dump, err := os.ReadFile(testdata(t, "bundles", "iptables-v1.20-mini", "node", "iptables-save.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "paste.txt"), append([]byte("sh-4.2# iptables-save\n"), dump...), 0o644); err != nil {
		t.Fatal(err)
	}
	fo := &fleetOptions{load: load.Options{Compact: true}, checks: checks.All, jobs: 2}
	nodes, drift, err := analyzeFleet([]string{dir}, fo)
	if err != nil {
		t.Fatal(err)
	}
	rep := report.BuildNodes(report.Tool{Name: "proxyscan", Version: reportVersion}, nodes, drift)
	var got []string
	for i := range rep.Nodes {
		got = append(got, rep.Nodes[i].Label())
	}
	if want := []string{"node-a", "node-a#2", "node 3"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("node labels %q, want %q", got, want)
	}
	if drift == nil || strings.Join(drift.Nodes, "|") != strings.Join(got, "|") {
		t.Errorf("node-drift names the nodes %v, the report %q", drift, got)
	}
	var table bytes.Buffer
	if err := report.RenderTable(&table, rep, report.Options{Width: 200}); err != nil {
		t.Fatal(err)
	}
	out := table.String()
	if !strings.Contains(out, "node-a: ok · node-a#2: ok · node 3: ") {
		t.Errorf("the summary line does not name the nodes apart:\n%s", out)
	}
	if strings.Contains(out, "\n  - : ") || strings.Contains(out, " · : ") {
		t.Errorf("a node is listed without a name:\n%s", out)
	}
}
