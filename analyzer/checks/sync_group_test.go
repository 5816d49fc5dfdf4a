package checks_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestSyncFailuresGrouping lays the signals of failing rule syncs of
// testdata/syncgroup/pieces.txtar over a healthy bundle, alone and
// together: together they are one sync-failures finding led by the cause
// the log gives, which stands for the symptoms it explains; each alone is
// reported on its own as before, and the bundle without them is silent.
// On a dual-stack node (bundles/iptables-healthy) whose IPv6 syncs fail,
// the lag of IPv4 rules is its own finding. The finding of the failing
// syncs cites each line of kube-proxy's inputs once. The findings of each case are compared with testdata/syncgroup/CASE.golden
// (go test -run TestSyncFailuresGrouping -update rewrites them).
func TestSyncFailuresGrouping(t *testing.T) {
	root, pieces := syncPieces(t)
	const (
		metrics = "kube-proxy/metrics.txt"
		log     = "kube-proxy/log.txt"
		healthz = "kube-proxy/healthz.json"
		lag     = "lagging rules"
		// The dual-stack bundle: the IPv4 rules of media/web lag its
		// EndpointSlice, the IPv6 rules of media/web6 lag theirs.
		lag4 = "lagging IPv4 rules"
		lag6 = "lagging IPv6 rules"
	)
	for _, tc := range []struct {
		name string
		// bundle is the bundle of testdata/bundles the pieces are laid
		// over, iptables-mini when empty.
		bundle string
		// with maps each input of the bundle to the piece it holds; lag
		// makes the rules of kube-system/dns lag its EndpointSlice.
		with map[string]string
		// findings is how many findings the case must have, checks the
		// checks of the one sync-failures finding (none: it has none, or
		// it stands for its own alone).
		findings int
		checks   []string
	}{
		{name: "healthy", findings: 0},
		{name: "grouped", with: map[string]string{metrics: "metrics-failing.txt", log: "log.txt", healthz: "healthz-unhealthy.json", lag: ""}, findings: 1,
			checks: []string{"endpoint-missing", "endpoint-stale", "kube-proxy-unhealthy", "sync-failures", "sync-stale"}},
		{name: "metrics-and-log", with: map[string]string{metrics: "metrics-failing.txt", log: "log.txt"}, findings: 1},
		{name: "log-and-lag", with: map[string]string{log: "log.txt", lag: ""}, findings: 1,
			checks: []string{"endpoint-missing", "endpoint-stale", "sync-failures"}},
		{name: "recovered-and-lag", with: map[string]string{metrics: "metrics-recovered.txt", log: "log.txt", lag: ""}, findings: 2},
		{name: "metrics-and-lag", with: map[string]string{metrics: "metrics-failing.txt", lag: ""}, findings: 1,
			checks: []string{"endpoint-missing", "endpoint-stale", "sync-failures"}},
		{name: "metrics-healthz-and-lag", with: map[string]string{metrics: "metrics-failing.txt", healthz: "healthz-unhealthy.json", lag: ""}, findings: 1,
			checks: []string{"endpoint-missing", "endpoint-stale", "kube-proxy-unhealthy", "sync-failures", "sync-stale"}},
		{name: "dualstack-ipv6-failing-ipv4-lag", bundle: "iptables-healthy",
			with:     map[string]string{metrics: "metrics-failing-ipv6.txt", log: "log-ipv6.txt", healthz: "healthz-ipv6-unhealthy.json", lag4: ""},
			findings: 2, checks: []string{"kube-proxy-unhealthy", "sync-failures", "sync-stale"}},
		{name: "dualstack-ipv6-failing-ipv6-lag", bundle: "iptables-healthy",
			with:     map[string]string{metrics: "metrics-failing-ipv6.txt", log: "log-ipv6.txt", healthz: "healthz-ipv6-unhealthy.json", lag6: ""},
			findings: 1, checks: []string{"endpoint-missing", "endpoint-stale", "kube-proxy-unhealthy", "sync-failures", "sync-stale"}},
		{name: "dualstack-ipv6-failing-both-lag", bundle: "iptables-healthy",
			with:     map[string]string{metrics: "metrics-failing-ipv6.txt", log: "log-ipv6.txt", healthz: "healthz-ipv6-unhealthy.json", lag4: "", lag6: ""},
			findings: 2, checks: []string{"endpoint-missing", "endpoint-stale", "kube-proxy-unhealthy", "sync-failures", "sync-stale"}},
		{name: "metrics-alone", with: map[string]string{metrics: "metrics-failing.txt"}, findings: 1},
		{name: "log-alone", with: map[string]string{log: "log.txt"}, findings: 1},
		{name: "healthz-alone", with: map[string]string{healthz: "healthz-unhealthy.json"}, findings: 1},
		{name: "lag-alone", with: map[string]string{lag: ""}, findings: 1},
		{name: "sync-stale-alone", with: map[string]string{metrics: "metrics-stale.txt", healthz: "healthz-healthy.json"}, findings: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			bundle := tc.bundle
			if bundle == "" {
				bundle = "iptables-mini"
			}
			if err := os.CopyFS(dir, os.DirFS(filepath.Join(root, "testdata", "bundles", bundle))); err != nil {
				t.Fatal(err)
			}
			for input, piece := range tc.with {
				switch input {
				case lag:
					moveEndpoint(t, filepath.Join(dir, "cluster", "cluster.yaml"))
					continue
				case lag4:
					moveAddress(t, filepath.Join(dir, "cluster", "cluster.yaml"), "10.88.1.60", "10.88.1.99")
					continue
				case lag6:
					moveAddress(t, filepath.Join(dir, "cluster", "cluster.yaml"), "fd88:0:0:2::61", "fd88:0:0:2::99")
					continue
				}
				data, ok := pieces[piece]
				if !ok {
					t.Fatalf("no %s in pieces.txtar", piece)
				}
				if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(input)), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			snaps, err := load.Load([]string{dir}, load.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			var all []checks.Finding
			for _, s := range snaps {
				res := checks.Run(s, checks.All)
				all = append(all, res.Findings...)
				for _, st := range res.Statuses {
					for _, n := range st.Notes {
						if strings.Contains(n, "sync-failures") {
							fmt.Fprintf(&out, "note: %s: %s\n", st.ID, n)
						}
					}
				}
			}
			for _, f := range all {
				fmt.Fprintf(&out, "finding: %s %s: %s\n", f.Check, f.Severity, f.Message)
				if len(f.Checks) > 0 {
					fmt.Fprintf(&out, "  checks: %s\n", strings.Join(f.Checks, ", "))
				}
				for _, o := range f.Objects {
					fmt.Fprintf(&out, "  object: %s\n", o)
				}
				for _, e := range f.Evidence {
					fmt.Fprintf(&out, "  evidence: %s:%d: %s\n", e.File, e.Line, e.Text)
				}
				fmt.Fprintf(&out, "  advice: %s\n", f.Advice)
			}
			if len(all) != tc.findings {
				t.Errorf("%d findings, want %d:\n%s", len(all), tc.findings, out.String())
			}
			var grouped []string
			for _, f := range all {
				if f.Check != "sync-failures" {
					continue
				}
				grouped = f.Checks
				// Each line of kube-proxy's inputs once (a line of the
				// EndpointSlices is cited per port of the endpoint).
				cited := map[string]bool{}
				for _, e := range f.Evidence {
					k := fmt.Sprintf("%s:%d", e.File, e.Line)
					if strings.HasPrefix(e.File, "kube-proxy/") && cited[k] {
						t.Errorf("the sync-failures finding cites %s more than once", k)
					}
					cited[k] = true
				}
			}
			if strings.Join(grouped, ",") != strings.Join(tc.checks, ",") {
				t.Errorf("the sync-failures finding stands for %v, want %v", grouped, tc.checks)
			}
			parsetest.GoldenFile(t, filepath.Join(root, "testdata", "syncgroup", tc.name+".golden"), []byte(out.String()))
		})
	}
}

// moveEndpoint moves the endpoint 10.244.2.2 of kube-system/dns to
// 10.244.3.2 in the EndpointSlices of the export at path: the rules of the
// bundle, which still balance to 10.244.2.2, lag them.
func moveEndpoint(t *testing.T, path string) {
	t.Helper()
	moveAddress(t, path, "10.244.2.2", "10.244.3.2")
}

// moveAddress moves the endpoint address addr to another, to, in the
// EndpointSlices of the export at path, which must list it once.
func moveAddress(t *testing.T, path, addr, to string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	from, to := "    - "+addr+"\n", "    - "+to+"\n"
	if strings.Count(string(data), from) != 1 {
		t.Fatalf("%s does not list the endpoint %s once", path, addr)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), from, to, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSyncFailuresFleet: a node whose syncs fail, beside one whose rules
// follow the EndpointSlices, differs from it in the endpoints of
// kube-system/dns. The one finding of the failing syncs holds the lagging
// endpoints, so node-drift reports no finding of its own and names
// sync-failures in the cells.
func TestSyncFailuresFleet(t *testing.T) {
	root, pieces := syncPieces(t)
	var dirs []string
	for _, failing := range []bool{false, true} {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(filepath.Join(root, "testdata", "bundles", "iptables-mini"))); err != nil {
			t.Fatal(err)
		}
		moveEndpoint(t, filepath.Join(dir, "cluster", "cluster.yaml"))
		if failing {
			for input, piece := range map[string]string{"kube-proxy/metrics.txt": "metrics-failing.txt", "kube-proxy/log.txt": "log.txt", "kube-proxy/healthz.json": "healthz-unhealthy.json"} {
				if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(input)), pieces[piece], 0o644); err != nil {
					t.Fatal(err)
				}
			}
		} else {
			// The rules of the node that syncs follow the slices.
			p := filepath.Join(dir, "node", "iptables-save.txt")
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			moved := strings.NewReplacer("10.244.2.2/32", "10.244.3.2/32", "10.244.2.2:53", "10.244.3.2:53").Replace(string(data))
			if err := os.WriteFile(p, []byte(moved), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		dirs = append(dirs, dir)
	}
	var snaps []*model.Snapshot
	for _, dir := range dirs {
		s, err := load.Load([]string{dir}, load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, s...)
	}
	fr := checks.RunFleet(snaps, checks.All)
	var found []string
	for _, res := range fr.Results {
		for _, f := range res.Findings {
			found = append(found, f.Check)
		}
	}
	if strings.Join(found, " ") != "sync-failures" {
		t.Errorf("findings %v, want the one of sync-failures", found)
	}
	if fr.Drift == nil || len(fr.Drift.Ports) == 0 {
		t.Fatal("node-drift finds no difference in the endpoints of kube-system/dns")
	}
	for _, row := range fr.Drift.Ports {
		if c := row.Cells[1]; strings.Join(c.ExplainedBy, ",") != "sync-failures" {
			t.Errorf("%s: the failing node's cell is explained by %v, want sync-failures", row.Service, c.ExplainedBy)
		}
	}
}

// syncPieces returns the repository's root and the files of
// testdata/syncgroup/pieces.txtar by name, which the cases put together.
func syncPieces(t *testing.T) (root string, pieces map[string][]byte) {
	t.Helper()
	root = parsetest.Root(t)
	a, err := txtar.ParseFile(filepath.Join(root, "testdata", "syncgroup", "pieces.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	pieces = map[string][]byte{}
	for _, f := range a.Files {
		pieces[f.Name] = f.Data
	}
	return root, pieces
}
