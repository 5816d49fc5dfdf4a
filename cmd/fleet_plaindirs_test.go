package cmd

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/internal/benchgen"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestFleetPlainDirs: plain directories of several nodes' captures are
// analysed one at a time, as bundles are, and the report is byte for byte
// the one of reading every path together; directories that turn out, once
// read, to hold one node's files (sorted by family, or a table each) are
// read together after all, as one node.
func TestFleetPlainDirs(t *testing.T) {
	dir := t.TempDir()
	spec := benchgen.Spec{Services: 40, Endpoints: 220, NodePortEvery: 4}
	if err := spec.WriteFleet(filepath.Join(dir, "bundles"), 3); err != nil {
		t.Fatal(err)
	}
	root := parsetest.Root(t)
	healthy := filepath.Join(root, "testdata", "bundles", "iptables-healthy")
	copyTo := func(from, to string) {
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var nodes []string
	for i := 1; i <= 3; i++ {
		b := filepath.Join(dir, "bundles", fmt.Sprintf("node-%04d", i))
		d := filepath.Join(dir, "case", fmt.Sprintf("n%d", i))
		copyTo(filepath.Join(b, "node", "iptables-save.txt"), filepath.Join(d, "iptables-save.txt"))
		nodes = append(nodes, d)
	}
	// One of them lacks a Service's jump: service-missing tells it.
	n2 := filepath.Join(dir, "case", "n2", "iptables-save.txt")
	data, err := os.ReadFile(n2)
	if err != nil {
		t.Fatal(err)
	}
	var kept strings.Builder
	dropped := false
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if !dropped && strings.HasPrefix(l, "-A KUBE-SERVICES ") && strings.Contains(l, "-j KUBE-SVC-") {
			dropped = true
			continue
		}
		kept.WriteString(l)
	}
	if err := os.WriteFile(n2, []byte(kept.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cluster := filepath.Join(dir, "bundles", "node-0001", "cluster", "cluster.json")
	copyTo(filepath.Join(healthy, "node", "iptables-save.txt"), filepath.Join(dir, "one", "v4", "iptables-save.txt"))
	copyTo(filepath.Join(healthy, "node", "ip6tables-save.txt"), filepath.Join(dir, "one", "v6", "iptables-save.txt"))
	export := filepath.Join(healthy, "cluster", "cluster.yaml")
	copyTo(filepath.Join(healthy, "node", "iptables-save.txt"), filepath.Join(dir, "beside", "n1", "iptables-save.txt"))
	copyTo(filepath.Join(healthy, "node", "iptables-save.txt"), filepath.Join(dir, "beside", "n2", "iptables-save.txt"))
	copyTo(export, filepath.Join(dir, "beside", "cluster.yaml"))
	copyTo(filepath.Join(healthy, "node", "iptables-save.txt"), filepath.Join(dir, "notes", "n1", "iptables-save.txt"))
	copyTo(filepath.Join(healthy, "node", "iptables-save.txt"), filepath.Join(dir, "notes", "n2", "iptables-save.txt"))
	for _, n := range []string{"n1", "n2"} {
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		data, err := os.ReadFile(filepath.Join(healthy, "node", "iptables-save.txt"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := zw.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, "gz", n), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "gz", n, "iptables-save.txt.gz"), gz.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "notes", "README.txt"), []byte("captured on Monday, as asked\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		paths []string
		nodes int
		units bool
	}{
		{"directories given", append(nodes, cluster), 3, true},
		{"their parent given", []string{filepath.Join(dir, "case"), cluster}, 3, true},
		// Their heads are alike: the contents tell, once loaded.
		{"one node's families in two directories", []string{filepath.Join(dir, "one"), export}, 1, true},
		{"an export beside the node directories", []string{filepath.Join(dir, "beside")}, 2, true},
		// A file of no known kind beside them is listed once, not
		// analysed; named on the command line, it was meant to be read:
		// the directories are read together, as one file of theirs.
		{"notes beside them", []string{filepath.Join(dir, "notes")}, 2, true},
		{"notes named", []string{filepath.Join(dir, "notes", "n1"), filepath.Join(dir, "notes", "n2"), filepath.Join(dir, "notes", "README.txt")}, 2, false},
		{"compressed dumps", []string{filepath.Join(dir, "gz"), export}, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, _ := looseFleetJSON(t, tc.paths, 2, true)
			var rep struct {
				Nodes []struct{ Bundle string }
			}
			if err := json.Unmarshal(want, &rep); err != nil {
				t.Fatalf("%v: %s", err, want)
			}
			if got := max(1, len(rep.Nodes)); got != tc.nodes {
				t.Errorf("read together: %d nodes, want %d", got, tc.nodes)
			}
			if tc.nodes == 3 && !bytes.Contains(want, []byte(`"check": "service-missing"`)) {
				t.Errorf("read together: no finding tells the node that lacks a jump")
			}
			units, _, err := load.Plan(tc.paths, load.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(units) > 1; got != tc.units {
				t.Errorf("%d units, want units of their own: %t", len(units), tc.units)
			}
			for _, jobs := range fleetJobs() {
				got, _ := looseFleetJSON(t, tc.paths, jobs, false)
				if !bytes.Equal(got, want) {
					t.Errorf("jobs %d: the report differs from that of the paths read together:\n%s", jobs, firstDiff(got, want))
				}
			}
		})
	}
}
