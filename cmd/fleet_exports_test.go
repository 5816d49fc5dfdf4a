package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/report"
	"github.com/proxyscan/proxyscan/internal/benchgen"
)

// ownExportsFleet writes a fleet of 5 bundles of one node spec, each with
// its own export: those of node-0001, node-0002 and node-0005 are byte for
// byte one export; that of node-0003 differs by one endpoint's address
// and is of the same size; that of node-0004 differs by one address and
// by its size. It returns the bundles.
func ownExportsFleet(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	spec := benchgen.Spec{Services: 300, Endpoints: 1200, NodePortEvery: 4}
	if err := spec.WriteFleet(dir, 5); err != nil {
		t.Fatal(err)
	}
	var bundles []string
	for i := 1; i <= 5; i++ {
		bundles = append(bundles, filepath.Join(dir, "node-000"+string(rune('0'+i))))
	}
	export, err := os.ReadFile(filepath.Join(bundles[0], "cluster", "cluster.json"))
	if err != nil {
		t.Fatal(err)
	}
	change := func(b, old, new string) {
		if bytes.Count(export, []byte(old)) != 1 {
			t.Fatalf("%s is not once in the export", old)
		}
		p := filepath.Join(b, "cluster", "cluster.json")
		// The bundles' files are links of one file: write a new one.
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, bytes.Replace(export, []byte(old), []byte(new), 1), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	change(bundles[2], `"10.128.0.1"`, `"10.127.0.1"`)
	change(bundles[3], `"10.128.0.2"`, `"10.127.0.20"`)
	return bundles
}

// TestFleetOwnExportsShared: bundles holding byte-identical exports of
// their own share one decoding of them, and every node's answers are
// those of the node analysed alone, its evidence citing its own bundle's
// file; the report is byte for byte that of each bundle decoding its own
// export, with exports alike, differing by one object at one size, and
// differing in size. The bundles are directories, or archives (tgz, txz,
// zip) as collect and support tools write them.
func TestFleetOwnExportsShared(t *testing.T) {
	for _, form := range []string{"directory", "tgz", "txz", "zip"} {
		t.Run(form, func(t *testing.T) { testFleetOwnExportsShared(t, form) })
	}
}

func testFleetOwnExportsShared(t *testing.T, form string) {
	bundles := ownExportsFleet(t)
	if form != "directory" {
		for i, b := range bundles {
			bundles[i] = packDir(t, b, form)
		}
	}
	opts := load.Options{Compact: true}
	want := aloneAll(t, bundles, opts)
	if want[2] == want[0] || want[3] == want[0] {
		t.Fatal("the nodes of the changed exports answer as the others: the test tells nothing")
	}
	render := func(nodes []*report.Node, drift *checks.Drift) []byte {
		var buf bytes.Buffer
		if err := report.RenderJSON(&buf, report.BuildNodes(report.Tool{Name: "proxyscan", Version: "v0.0.0-test"}, nodes, drift), report.Options{}); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	nodes, drift, err := analyzeFleet(bundles, &fleetOptions{load: opts, checks: checks.All, jobs: 1, decodeEach: true})
	if err != nil {
		t.Fatal(err)
	}
	each := render(nodes, drift)
	for _, jobs := range fleetJobs() {
		nodes, drift := sharedFleetAlone(t, bundles, opts, jobs, want)
		if got := render(nodes, drift); !bytes.Equal(got, each) {
			t.Errorf("jobs %d: the report differs from that of each bundle decoding its own export:\n%s", jobs, firstDiff(got, each))
		}
	}
}

// TestFleetSharedExportLocal: nodes of other names (and one node twice)
// whose bundles hold one export alike share its decoding and its service
// ports, built once, and still get their own local endpoints: with the
// NodePort Services' external traffic policy Local, which the dumps do not
// program, what each node is told it lacks depends on the endpoints local
// to it, and every node answers as when analysed alone.
func TestFleetSharedExportLocal(t *testing.T) {
	spec := benchgen.Spec{Services: 300, Endpoints: 1200, NodePortEvery: 4}
	bundles, err := spec.WriteNodes(t.TempDir(), []string{"bench-node-1", "bench-node-2", "bench-node-3", "bench-node-1"}, func(export []byte) []byte {
		return bytes.ReplaceAll(export, []byte(`"externalTrafficPolicy": "Cluster"`), []byte(`"externalTrafficPolicy": "Local"`))
	})
	if err != nil {
		t.Fatal(err)
	}
	opts := load.Options{Compact: true}
	want := aloneAll(t, bundles, opts)
	if want[0] == want[1] || want[1] == want[2] || want[0] == want[2] {
		t.Fatal("nodes with other local endpoints answer alike: the test tells nothing")
	}
	for _, jobs := range fleetJobs() {
		sharedFleetAlone(t, bundles, opts, jobs, want)
	}
}

// sharedFleetAlone analyses bundles as a fleet of jobs units in flight,
// checks that they shared their exports and that each node answers as
// want, its analysis alone, says, and returns the fleet's nodes and drift.
func sharedFleetAlone(t *testing.T, bundles []string, opts load.Options, jobs int, want []string) ([]*report.Node, *checks.Drift) {
	t.Helper()
	fo := &fleetOptions{load: opts, checks: checks.All, jobs: jobs}
	nodes, drift, err := analyzeFleet(bundles, fo)
	if err != nil {
		t.Fatal(err)
	}
	if fo.exports == nil {
		t.Fatalf("jobs %d: the exports are not shared", jobs)
	}
	for i, n := range nodes {
		if got := alone(t, n); got != want[i] {
			t.Errorf("jobs %d: node %d (%s) differs from its analysis alone:\n%s\nwant:\n%s", jobs, i, bundles[i], got, want[i])
		}
	}
	return nodes, drift
}
