package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// fleetReport analyses the three-node fixture of testdata/fleet as
// `proxyscan analyze testdata/fleet/nodes/node-*` does.
func fleetReport(t *testing.T, extra ...string) *Report {
	t.Helper()
	root := parsetest.Root(t)
	var dirs []string
	for _, n := range []string{"node-a", "node-b", "node-c"} {
		dirs = append(dirs, filepath.Join("testdata", "fleet", "nodes", n))
	}
	dirs = append(dirs, extra...)
	wd, _ := os.Getwd()
	if err := os.Chdir(root); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	snaps, err := load.Load(dirs, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return BuildFleet(Tool{Name: "proxyscan", Version: "v0.0.0-test"}, snaps, checks.RunFleet(snaps, checks.All))
}

// TestFleetInput keeps testdata/report/fleet.in.json, the input of the
// renderer goldens with a drift matrix and checklists, equal to the
// analysis of testdata/fleet (rewritten with -update).
func TestFleetInput(t *testing.T) {
	var buf bytes.Buffer
	if err := RenderJSON(&buf, fleetReport(t), Options{}); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "fleet.in.json", buf.Bytes())
	for _, s := range []string{`"drift"`, `"checklist"`, `"node-drift"`} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("fleet report has no %s", s)
		}
	}
}

// TestPastedInput keeps testdata/report/pasted.in.json, the input of the
// renderer goldens with inputs read leniently (lines skipped and changed,
// a partial dump), equal to the analysis of a ticket's paste of a dump
// cut short (testdata/paste/ticket-cut-short.txt) with the exports and
// configuration of its bundle (rewritten with -update).
func TestPastedInput(t *testing.T) {
	t.Chdir(parsetest.Root(t))
	base := filepath.Join("testdata", "bundles", "iptables-mini")
	snaps, err := load.Load([]string{filepath.Join("testdata", "paste", "ticket-cut-short.txt"), filepath.Join(base, "cluster"), filepath.Join(base, "kube-proxy")}, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := BuildFleet(Tool{Name: "proxyscan", Version: "v0.0.0-test"}, snaps, checks.RunFleet(snaps, checks.All))
	var buf bytes.Buffer
	if err := RenderJSON(&buf, r, Options{}); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "pasted.in.json", buf.Bytes())
	for _, s := range []string{`"skipped"`, `"changed"`, `"partial"`, `"verdict": "inconclusive"`} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("pasted report has no %s", s)
		}
	}
}

// TestFleetSharedInput keeps testdata/report/fleet-shared.in.json equal to
// the analysis of testdata/fleet with a ServiceCIDR listing given once for
// every node (testdata/fleet/shared): clusterip-outside-servicecidr,
// judged from the shared objects alone, is one finding naming the three
// nodes, counted once in the summary and once in each node's.
func TestFleetSharedInput(t *testing.T) {
	r := fleetReport(t, filepath.Join("testdata", "fleet", "shared", "servicecidrs.yaml"))
	var buf bytes.Buffer
	if err := RenderJSON(&buf, r, Options{}); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "fleet-shared.in.json", buf.Bytes())
	var shared []checks.Finding
	for _, f := range r.Findings {
		if f.Check == "clusterip-outside-servicecidr" {
			shared = append(shared, f)
		}
	}
	if len(shared) != 1 {
		t.Fatalf("clusterip-outside-servicecidr: %d findings, want 1 naming the 3 nodes", len(shared))
	}
	if got, want := strings.Join(shared[0].Nodes, ","), "node-a,node-b,node-c"; got != want || shared[0].Node != "node-a" {
		t.Errorf("nodes of the shared finding: node %q, nodes %q, want node-a and %q", shared[0].Node, got, want)
	}
	var sum Summary
	for _, f := range r.Findings {
		sum.Add(f.Severity)
	}
	if sum != r.Summary {
		t.Errorf("summary %+v, the findings listed count %+v", r.Summary, sum)
	}
	for _, n := range r.Nodes {
		if n.Summary.Warning < 1 {
			t.Errorf("%s: summary %+v does not count the shared warning", n.Node, n.Summary)
		}
	}
}

// TestFleetClusters: nodes of two clusters (the fleet fixture and a
// bundle of another cluster) are listed by cluster in the drift section of
// the table, markdown and HTML reports, and the service ports alike are
// counted per cluster.
func TestFleetClusters(t *testing.T) {
	r := fleetReport(t, filepath.Join("testdata", "bundles", "iptables-healthy"))
	if r.Drift == nil || len(r.Drift.Clusters) != 2 {
		t.Fatalf("drift %+v, want two clusters", r.Drift)
	}
	for _, format := range []string{"table", "markdown", "html"} {
		var b bytes.Buffer
		if err := Render(&b, format, r, Options{Width: 400}); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			"nodes of 2 clusters, each compared only with the nodes of its own: east-w2 (Service default/kubernetes uid " +
				"5f2a13c1-6038-449b-b62b-11e8ddb66950); node-a, node-b, node-c (Service default/kubernetes uid ce01ad10-9066-ea10-26ab-0ca6513d1b21)",
			"programmed alike on every node of their cluster",
		} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("%s: no %q in:\n%s", format, want, b.String())
			}
		}
	}
}
