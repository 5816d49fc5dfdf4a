package cmd

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/report"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// testBundles returns every bundle of testdata, one unit each.
func testBundles(t *testing.T) []string {
	t.Helper()
	// testdata/bundles holds a README next to its bundles: it is not a
	// directory of bundles.
	dirs, err := filepath.Glob(testdata(t, "bundles", "*-*"))
	if err != nil {
		t.Fatal(err)
	}
	units, err := load.Units(append(dirs, testdata(t, "fleet", "nodes"), testdata(t, "diff", "after")))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, u := range units {
		if len(u) != 1 {
			t.Fatalf("unit %v: want one bundle", u)
		}
		out = append(out, u[0])
	}
	if len(out) < 14 {
		t.Fatalf("%d bundles: %v", len(out), out)
	}
	return out
}

// fleetJobs are the --jobs values a fleet is analysed with to compare it
// with its nodes alone: one at a time and several, or under -short only
// several (the workers' path; one job at a time is what analysing a
// bundle alone already does).
func fleetJobs() []int {
	if testing.Short() {
		return []int{3}
	}
	return []int{1, 3}
}

// aloneAll returns, for each bundle in turn, the answers of each of its
// nodes analysed alone (see alone).
func aloneAll(t *testing.T, bundles []string, opts load.Options) []string {
	t.Helper()
	var want []string
	for _, b := range bundles {
		snaps, err := load.Load([]string{b}, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range snaps {
			want = append(want, alone(t, report.Summarize(s, checks.Run(s, checks.All))))
		}
	}
	return want
}

// alone is what a node's report says when the node is analysed by itself,
// the cross-node checks aside.
func alone(t *testing.T, n *report.Node) string {
	t.Helper()
	var fs []checks.Finding
	for _, f := range n.Result.Findings {
		if f.Check != "node-drift" {
			fs = append(fs, f)
		}
	}
	var sts []checks.Status
	for _, st := range n.Result.Statuses {
		if st.ID != "node-drift" {
			sts = append(sts, st)
		}
	}
	var notes []string
	for _, n := range n.Notes {
		if !strings.HasSuffix(n, sameNodeTail) { // a note of the fleet
			notes = append(notes, n)
		}
	}
	data, err := json.MarshalIndent(struct {
		Name      string
		Inputs    any
		Findings  []checks.Finding
		Statuses  []checks.Status
		Coverage  checks.Coverage
		Migration *checks.Migration
		Checklist []report.ChecklistItem
		Notes     []string
	}{n.Name, n.InputList(), fs, sts, n.Result.Coverage, n.Result.Migration, n.Checklist, notes}, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestFleetSameAnswers analyses every bundle of testdata as one fleet, one
// and three at a time, and each bundle by itself: every node's findings,
// checks, coverage and checklist are the same.
func TestFleetSameAnswers(t *testing.T) {
	bundles := testBundles(t)
	opts := load.Options{Compact: true}
	want := aloneAll(t, bundles, opts)
	for _, jobs := range fleetJobs() {
		nodes, drift, err := analyzeNodes(bundles, opts, checks.All, jobs, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(nodes) != len(want) {
			t.Fatalf("jobs %d: %d nodes, want %d", jobs, len(nodes), len(want))
		}
		for i, n := range nodes {
			if got := alone(t, n); got != want[i] {
				t.Errorf("jobs %d: node %d (%s) differs from its analysis alone:\n%s\nwant:\n%s", jobs, i, bundles[i], got, want[i])
			}
		}
		if drift == nil || len(drift.Nodes) != len(want) {
			t.Errorf("jobs %d: drift %+v", jobs, drift)
		}
	}
}

// TestFleetReportUnchanged: analysing the directory of testdata/fleet's
// bundles node by node gives the report of testdata/report/fleet.in.json,
// which analyses them together.
func TestFleetReportUnchanged(t *testing.T) {
	t.Chdir(parsetest.Root(t))
	want, err := os.ReadFile(filepath.Join("testdata", "report", "fleet.in.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{filepath.Join("testdata", "fleet", "nodes")},
		{filepath.Join("testdata", "fleet", "nodes", "node-*")},
		{filepath.Join("testdata", "fleet", "nodes", "node-c"), filepath.Join("testdata", "fleet", "nodes", "node-a"), filepath.Join("testdata", "fleet", "nodes", "node-b")},
	} {
		for _, jobs := range []int{1, 2} {
			nodes, drift, err := analyzeNodes(args, load.Options{Compact: true}, checks.All, jobs, nil)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := report.RenderJSON(&buf, report.BuildNodes(report.Tool{Name: "proxyscan", Version: "v0.0.0-test"}, nodes, drift), report.Options{}); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("%v, jobs %d: the report differs from fleet.in.json", args, jobs)
			}
		}
	}
}

// TestFleetErrors: the error of a run is that of the first bundle, in
// order, that cannot be read, and names the bundle.
func TestFleetErrors(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a", "b", "c"} {
		parsetest.CopyTree(t, testdata(t, "fleet", "nodes", "node-a"), filepath.Join(dir, n), nil)
	}
	for _, n := range []string{"b", "c"} {
		if err := os.WriteFile(filepath.Join(dir, n, "node", "iptables-save.txt"), []byte("*nat\nCOMMIT\nnot a rule\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, jobs := range []int{1, 3} {
		_, _, err := analyzeNodes([]string{dir}, load.Options{Strict: true}, checks.All, jobs, nil)
		if err == nil || !strings.HasPrefix(err.Error(), filepath.Join(dir, "b", "node", "iptables-save.txt")+":3: ") || !load.IsInputError(err) {
			t.Errorf("jobs %d: error %v, want b's", jobs, err)
		}
	}
	f, output := testFactory()
	if code := Run(f, []string{"analyze", "--jobs", "-1", dir}); code != 2 {
		_, stderr := output()
		t.Errorf("--jobs -1: exit %d, want 2: %s", code, stderr)
	}
}

// TestFleetProgressLine: nodes done of the total, and the time left once one
// is done.
func TestFleetProgressLine(t *testing.T) {
	for _, tc := range []struct {
		count, total int
		elapsed      time.Duration
		want         string
	}{
		{0, 400, 3 * time.Second, "0/400 nodes analysed"},
		{100, 400, 20 * time.Second, "100/400 nodes analysed, about 1m0s left"},
		{400, 400, 80 * time.Second, "400/400 nodes analysed"},
	} {
		if got := progressLine(tc.count, tc.total, tc.elapsed); got != tc.want {
			t.Errorf("progressLine(%d, %d, %s) = %q, want %q", tc.count, tc.total, tc.elapsed, got, tc.want)
		}
	}
}

// TestFleetProgress: the line is drawn once the run takes long, and
// cleared at the end; a quick run draws nothing.
func TestFleetProgress(t *testing.T) {
	var buf bytes.Buffer
	p := newFleetProgress(&buf, 2)
	p.done()
	p.stop()
	if buf.Len() != 0 {
		t.Errorf("a quick run drew %q", buf.String())
	}
	buf.Reset()
	p = newFleetProgress(&buf, 2)
	p.done()
	p.draw()
	p.stop()
	if got := buf.String(); !strings.Contains(got, "1/2 nodes analysed, about") || !strings.HasSuffix(got, "\r\033[K") {
		t.Errorf("progress %q", got)
	}
}

// TestFleetLoadsAhead: one job loads the next bundle while it analyses
// one (the next starts loading before the one before it is analysed), and
// never more: a bundle starts loading only once the one two before it is
// analysed.
func TestFleetLoadsAhead(t *testing.T) {
	bundles := testBundles(t)[:4]
	var mu sync.Mutex
	loading := map[int]chan struct{}{}
	started := func(i int) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		if loading[i] == nil {
			loading[i] = make(chan struct{})
		}
		return loading[i]
	}
	analysed := map[int]bool{}
	unitEvent = func(event string, i int) {
		switch event {
		case "load":
			mu.Lock()
			if i >= 2 && !analysed[i-2] {
				t.Errorf("bundle %d loads before bundle %d is analysed", i, i-2)
			}
			mu.Unlock()
			close(started(i))
		case "analysed":
			if i+1 < len(bundles) {
				select {
				case <-started(i + 1):
				case <-time.After(20 * time.Second):
					t.Errorf("bundle %d is analysed and bundle %d not yet loading", i, i+1)
				}
			}
			mu.Lock()
			analysed[i] = true
			mu.Unlock()
		}
	}
	defer func() { unitEvent = nil }()
	nodes, _, err := analyzeNodes(bundles, load.Options{Compact: true}, checks.All, 1, nil)
	if err != nil || len(nodes) != len(bundles) {
		t.Fatalf("%d nodes, error %v", len(nodes), err)
	}
}

// TestFleetSameNodeTwice: two bundles of one node (captures taken at two
// times) are analysed as two nodes, and each says so and points to diff;
// bundles of different nodes say nothing of it.
func TestFleetSameNodeTwice(t *testing.T) {
	const note = "node node-a is the node of 2 bundles ("
	for _, tc := range []struct {
		name string
		args []string
		want bool
	}{
		{"one node twice", []string{copyBundle(t, "iptables-mini"), copyBundle(t, "iptables-mini")}, true},
		{"two nodes", []string{copyBundle(t, "iptables-mini"), copyBundle(t, "ipvs-healthy")}, false},
		// The loose files (here a directory of exports) come first
		// among each node's inputs; the note names the bundles.
		{"one node twice with loose exports", []string{bareBundle(t, "a"), bareBundle(t, "b"), testdata(t, "bundles", "iptables-mini", "cluster")}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, outputs := testFactory()
			code := Run(f, append([]string{"analyze", "-o", "json"}, tc.args...))
			stdout, stderr := outputs()
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if got := strings.Count(stdout, note); tc.want && got != 2 || !tc.want && got != 0 {
				t.Errorf("the note %q appears %d times, want it on each node: %t", note, got, tc.want)
			}
			if tc.want && !strings.Contains(stdout, "run proxyscan diff OLD NEW") {
				t.Errorf("the note does not point to diff")
			}
			if tc.want && !strings.Contains(stdout, note+filepath.Clean(tc.args[0])+", "+filepath.Clean(tc.args[1])+")") {
				t.Errorf("the note does not name the bundles %s and %s:\n%s", tc.args[0], tc.args[1], stdout)
			}
		})
	}
}

// bareBundle returns a copy of the iptables-mini bundle without its
// cluster exports, named name.
func bareBundle(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dir, os.DirFS(testdata(t, "bundles", "iptables-mini"))); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "cluster")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestFleetNamelessNodes: nodes whose inputs say no node name (a dump
// alone in each bundle), given with a loose export, are named by their
// bundles, in the table (five nodes: one line per verdict naming three;
// two: each with its verdict) and in the JSON report's nodes[].bundle.
func TestFleetNamelessNodes(t *testing.T) {
	dump, err := os.ReadFile(testdata(t, "bundles", "iptables-mini", "node", "iptables-save.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var bundles []string
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		dir := filepath.Join(t.TempDir(), name)
		if err := os.MkdirAll(filepath.Join(dir, "node"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "node", "iptables-save.txt"), dump, 0o644); err != nil {
			t.Fatal(err)
		}
		bundles = append(bundles, dir)
	}
	export := testdata(t, "bundles", "iptables-mini", "cluster", "cluster.yaml")
	for _, tc := range []struct {
		name, format string
		bundles      []string
		want         []string
	}{
		{"five, table", "table", bundles, []string{"(" + bundles[0] + ", " + bundles[1] + ", " + bundles[2] + " and 2 more nodes)"}},
		{"two, table", "table", bundles[:2], []string{bundles[0] + ": ", bundles[1] + ": "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, outputs := testFactory()
			code := Run(f, append(append([]string{"analyze", "-o", tc.format}, tc.bundles...), export))
			stdout, stderr := outputs()
			if code == 2 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			// The table wraps its lines.
			flat := strings.Join(strings.Fields(stdout), " ")
			for _, w := range tc.want {
				if !strings.Contains(flat, strings.Join(strings.Fields(w), " ")) {
					t.Errorf("the report does not say %q:\n%s", w, stdout)
				}
			}
		})
	}
	f, outputs := testFactory()
	code := Run(f, []string{"analyze", "-o", "json", bundles[0], bundles[1], export})
	stdout, stderr := outputs()
	var r struct {
		Nodes []struct{ Node, Bundle string }
	}
	if err := json.Unmarshal([]byte(stdout), &r); code == 2 || err != nil {
		t.Fatalf("exit %d, %v: %s", code, err, stderr)
	}
	if len(r.Nodes) != 2 || r.Nodes[0].Bundle != bundles[0] || r.Nodes[1].Bundle != bundles[1] {
		t.Errorf("nodes %+v, want the bundles %s and %s", r.Nodes, bundles[0], bundles[1])
	}
}
