package cmd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/report"
	"github.com/proxyscan/proxyscan/internal/benchgen"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// looseFleetJSON analyses paths as analyze does, the bundles one at a time
// with the loose files read once, or (together) every path at once, and
// returns the JSON report; shared says whether loose files were read
// once for every bundle.
func looseFleetJSON(t *testing.T, paths []string, jobs int, together bool) (out []byte, shared bool) {
	t.Helper()
	fo := &fleetOptions{load: load.Options{Compact: true}, checks: checks.All, jobs: jobs, together: together}
	nodes, drift, err := analyzeFleet(paths, fo)
	// Files is nil when the loose files were to be read together after all.
	shared = fo.load.Shared != nil && fo.load.Shared.Files() != nil
	if err != nil {
		return []byte("error: " + err.Error()), shared
	}
	var buf bytes.Buffer
	if err := report.RenderJSON(&buf, report.BuildNodes(report.Tool{Name: "proxyscan", Version: "v0.0.0-test"}, nodes, drift), report.Options{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), shared
}

// TestFleetLooseClusterFiles: bundles given with loose exports and
// kube-proxy configuration files are analysed one at a time, the loose
// files read once for all, and the report is byte for byte the one of
// reading every path together: with and without the bundles' own exports
// and configuration, with a loose configuration, and on the bundles of
// testdata, and for a directory of bundles with a README and an export
// beside them. Loose files of a node, and a file of no known kind named
// on the command line, keep the paths together; a loose export that
// cannot be read is reported as when every path is read together.
func TestFleetLooseClusterFiles(t *testing.T) {
	dir := t.TempDir()
	spec := benchgen.Spec{Services: 40, Endpoints: 220, NodePortEvery: 4}
	fleet := func(name string, n int, drop ...string) []string {
		d := filepath.Join(dir, name)
		if err := spec.WriteFleet(d, n); err != nil {
			t.Fatal(err)
		}
		var out []string
		for i := 1; i <= n; i++ {
			b := filepath.Join(d, fmt.Sprintf("node-%04d", i))
			for _, f := range drop {
				if err := os.Remove(filepath.Join(b, f)); err != nil {
					t.Fatal(err)
				}
			}
			out = append(out, b)
		}
		return out
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var export bytes.Buffer
	if err := spec.WriteYAML(&export); err != nil {
		t.Fatal(err)
	}
	cluster := write("cluster.yaml", export.Bytes())
	config := write("config.yaml", []byte("apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: iptables\nclusterCIDR: 10.128.0.0/9\n"))
	ipvsConfig := write("ipvs.yaml", []byte("apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: ipvs\n"))
	dump := write("iptables-save.txt", []byte("*nat\n:KUBE-SERVICES - [0:0]\nCOMMIT\n"))
	broken := write("broken.yaml", []byte("apiVersion: v1\nkind: Service\nmetadata: [\n"))
	brokenNodes := write("nodes.yaml", []byte("apiVersion: v1\nkind: Node\nmetadata:\n  name: [\n"))
	own := fleet("own", 4)
	// A ticket's folder of bundles, with notes and the export beside them.
	fleet("folder", 3, "cluster/cluster.json")
	folder := filepath.Join(dir, "folder")
	write(filepath.Join("folder", "README.md"), []byte("bundles of the nodes that lost DNS\n"))
	write(filepath.Join("folder", "cluster.yaml"), export.Bytes())
	bare := fleet("bare", 4, "cluster/cluster.json")
	noConfig := fleet("noconfig", 3, "cluster/cluster.json", "kube-proxy/config.yaml")
	t.Chdir(parsetest.Root(t))
	cidrs := filepath.Join("testdata", "fleet", "shared", "servicecidrs.yaml")
	testBundles := append(testBundles(t), cidrs)
	// Their node reports were written without the loose files: the
	// bundles are analysed from their dumps, as when read together.
	reported := append(reportedBundles(t), cidrs)
	for _, tc := range []struct {
		name   string
		paths  []string
		shared bool
	}{
		{"bundles with their own exports", append(own, cluster), true},
		{"bundles without exports", append(bare, cluster), true},
		{"a loose export and configuration", append(noConfig, cluster, config), true},
		{"a loose configuration of another mode", append(bare, ipvsConfig, cluster), true},
		{"the export of a bundle, given loose", append(own[1:], filepath.Join(own[0], "cluster", "cluster.json")), true},
		{"testdata bundles", testBundles, true},
		{"bundles holding node reports", reported, true},
		{"a folder of bundles with notes and an export beside", []string{folder}, true},
		{"the folder's bundles with its notes named", append(bare, cluster, filepath.Join(folder, "README.md")), false},
		{"a loose dump", append(bare, cluster, dump), false},
		{"an export that cannot be read", append(bare, cluster, broken), false},
		{"a Node export that cannot be read, before another", append(bare, brokenNodes, cluster), false},
		{"one bundle", []string{bare[0], cluster}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, _ := looseFleetJSON(t, tc.paths, 2, true)
			for _, jobs := range fleetJobs() {
				got, shared := looseFleetJSON(t, tc.paths, jobs, false)
				if shared != tc.shared {
					t.Errorf("jobs %d: loose files read once for every bundle: %t, want %t", jobs, shared, tc.shared)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("jobs %d: the report differs from that of the paths read together:\n%s", jobs, firstDiff(got, want))
				}
			}
		})
	}
	// testdata/report/fleet-shared.in.json is the report of testdata/fleet
	// with a ServiceCIDR listing read together.
	want, err := os.ReadFile(filepath.Join("testdata", "report", "fleet-shared.in.json"))
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{filepath.Join("testdata", "fleet", "nodes", "node-a"), filepath.Join("testdata", "fleet", "nodes", "node-b"),
		filepath.Join("testdata", "fleet", "nodes", "node-c"), filepath.Join("testdata", "fleet", "shared", "servicecidrs.yaml")}
	if got, shared := looseFleetJSON(t, paths, 2, false); !shared || !bytes.Equal(got, want) {
		t.Errorf("testdata/fleet with a shared ServiceCIDR listing (read once: %t): the report differs from fleet-shared.in.json:\n%s", shared, firstDiff(got, want))
	}
}

// firstDiff shows where two reports part, with some lines around.
func firstDiff(got, want []byte) string {
	g, w := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := 0; i < len(g) || i < len(w); i++ {
		if i < len(g) && i < len(w) && bytes.Equal(g[i], w[i]) {
			continue
		}
		lines := func(ls [][]byte) string {
			from, to := max(0, i-3), min(len(ls), i+4)
			return string(bytes.Join(ls[from:to], []byte("\n")))
		}
		return fmt.Sprintf("line %d: got\n%s\nwant\n%s", i+1, lines(g), lines(w))
	}
	return "(same lines)"
}
