package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/report"
	"github.com/proxyscan/proxyscan/internal/benchgen"
)

// TestFleetSharedAnswers analyses a generated fleet of 50 nodes alike,
// whose evidence lines, service ports, configuration and check statuses
// are then kept once: every node says what it says analysed by itself,
// and the JSON report, written a node at a time, is byte for byte the one
// encoding/json writes of the whole report.
func TestFleetSharedAnswers(t *testing.T) {
	const n = 50
	dir := t.TempDir()
	spec := benchgen.Spec{Services: 20, Endpoints: 110, NodePortEvery: 4}
	if err := spec.WriteFleet(dir, n); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for i := 1; i <= n; i++ {
		paths = append(paths, filepath.Join(dir, fmt.Sprintf("node-%04d", i)))
	}
	opts := load.Options{Compact: true}
	nodes, drift, err := analyzeNodes(paths, opts, checks.All, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != n || drift == nil {
		t.Fatalf("%d nodes, drift %v", len(nodes), drift)
	}
	for _, i := range []int{0, 1, n / 2, n - 1} {
		snaps, err := load.Load([]string{paths[i]}, opts)
		if err != nil {
			t.Fatal(err)
		}
		want := alone(t, report.Summarize(snaps[0], checks.Run(snaps[0], checks.All)))
		if got := alone(t, nodes[i]); got != want {
			t.Errorf("node %d differs from its analysis alone:\n%s\nwant:\n%s", i, got, want)
		}
	}
	if &nodes[0].Result.Statuses[0] != &nodes[n-1].Result.Statuses[0] {
		t.Error("the statuses of nodes alike are not kept once")
	}
	rep := report.BuildNodes(report.Tool{Name: "proxyscan", Version: "test"}, nodes, drift)
	var got, want bytes.Buffer
	if err := report.RenderJSON(&got, rep, report.Options{}); err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(&want)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rep); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("the JSON report written a node at a time differs from encoding/json's (%d and %d bytes)", got.Len(), want.Len())
	}
}
