package checks_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

func fleetDirs(t *testing.T, root string) []string {
	var out []string
	for _, n := range []string{"node-a", "node-b", "node-c"} {
		out = append(out, filepath.Join(root, n))
	}
	return out
}

func runFleet(t *testing.T, dirs []string) (*checks.FleetResult, []checks.Finding) {
	t.Helper()
	return runFleetWith(t, dirs, checks.All)
}

func runFleetWith(t *testing.T, dirs []string, list []*checks.Check) (*checks.FleetResult, []checks.Finding) {
	t.Helper()
	snaps, err := load.Load(dirs, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fr := checks.RunFleet(snaps, list)
	var drift []checks.Finding
	for _, r := range fr.Results {
		for _, f := range r.Findings {
			if f.Check == "node-drift" {
				drift = append(drift, f)
			}
		}
	}
	return fr, drift
}

// without returns every check but those named.
func without(ids ...string) []*checks.Check {
	var out []*checks.Check
	for _, c := range checks.All {
		if !slices.Contains(ids, c.ID) {
			out = append(out, c)
		}
	}
	return out
}

// TestNodeDriftFleet runs node-drift on the three-node fixture, where node-c
// is stale: it lacks Service shop/sessions and still forwards shop/web:http
// to an old endpoint. node-c's own findings (service-missing, and
// endpoint-stale's finding of the rules of shop/web that lag its
// EndpointSlices) report both: node-drift names them in its matrix and
// reports nothing more; without those checks, node-drift reports each
// difference itself.
func TestNodeDriftFleet(t *testing.T) {
	sessions := struct{ service, endpoint, re string }{"shop/sessions", "", `^programmed on node-a and node-b but not on node-c: no entry for ClusterIP 10\.96\.10\.30 tcp/8443; the exports' Service defines it$`}
	staleEP := struct{ service, endpoint, re string }{"shop/web:http", "10.244.3.4:8080", `^node-c forwards to 10\.244\.3\.4:8080, node-a and node-b do not; the exports' EndpointSlices do not say to forward to it$`}
	newEP := struct{ service, endpoint, re string }{"shop/web:http", "10.244.3.5:8080", `^node-a and node-b forward to 10\.244\.3\.5:8080, node-c does not; the exports' EndpointSlices say to forward to it$`}
	tests := []struct {
		name   string
		checks []*checks.Check
		want   []struct{ service, endpoint, re string }
		// explained is, per service port listed, node-c's explainedBy.
		explained map[string]string
	}{
		{"every check", checks.All, nil, map[string]string{"shop/sessions": "service-missing", "shop/web:http": "endpoint-stale"}},
		{"without service-missing", without("service-missing"), []struct{ service, endpoint, re string }{sessions},
			map[string]string{"shop/sessions": "", "shop/web:http": "endpoint-stale"}},
		// endpoint-missing reports the endpoint node-c lacks, nothing the
		// one it still has.
		{"without endpoint-stale", without("endpoint-stale"), []struct{ service, endpoint, re string }{staleEP},
			map[string]string{"shop/sessions": "service-missing", "shop/web:http": "endpoint-missing"}},
		{"without the endpoint checks", without("endpoint-missing", "endpoint-stale"), []struct{ service, endpoint, re string }{staleEP, newEP},
			map[string]string{"shop/sessions": "service-missing", "shop/web:http": ""}},
		{"without any of them", without("service-missing", "endpoint-missing", "endpoint-stale"), []struct{ service, endpoint, re string }{sessions, staleEP, newEP},
			map[string]string{"shop/sessions": "", "shop/web:http": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fr, drift := runFleetWith(t, fleetDirs(t, filepath.Join(parsetest.Root(t), "testdata", "fleet", "nodes")), tt.checks)
			if len(drift) != len(tt.want) {
				for _, f := range drift {
					t.Logf("%s %s %s: %s", f.Node, f.Service, f.Endpoint, f.Message)
				}
				t.Fatalf("%d node-drift findings, want %d", len(drift), len(tt.want))
			}
			for i, w := range tt.want {
				f := drift[i]
				if f.Node != "node-c" || f.Service != w.service || f.Endpoint != w.endpoint || !regexp.MustCompile(w.re).MatchString(f.Message) {
					t.Errorf("finding %d: node %q service %q endpoint %q message %q; want node-c, %q, %q, %s", i, f.Node, f.Service, f.Endpoint, f.Message, w.service, w.endpoint, w.re)
				}
				if len(f.Evidence) == 0 {
					t.Errorf("finding %d has no evidence", i)
				}
				// The stale endpoint's evidence is its DNAT rule on node-c.
				if ev := f.Evidence; f.Endpoint == "10.244.3.4:8080" && (!strings.Contains(ev[0].Text, "10.244.3.4:8080") || ev[0].File != "node/iptables-save.txt") {
					t.Errorf("stale endpoint evidence %+v", ev)
				}
			}
			if fr.Drift == nil {
				t.Fatal("no drift matrix")
			}
			if got := strings.Join(fr.Drift.Nodes, ","); got != "node-a,node-b,node-c" {
				t.Errorf("matrix nodes %s", got)
			}
			states := map[string]string{}
			for _, p := range fr.Drift.Ports {
				var s []string
				for j, c := range p.Cells {
					s = append(s, c.State)
					if j < 2 && len(c.ExplainedBy) > 0 {
						t.Errorf("%s: %s explained on %s", p.Service, c.ExplainedBy, fr.Drift.Nodes[j])
					}
				}
				states[p.Service] = strings.Join(s, ",")
				if got := strings.Join(p.Cells[2].ExplainedBy, ","); got != tt.explained[p.Service] {
					t.Errorf("%s on node-c explained by %q, want %q", p.Service, got, tt.explained[p.Service])
				}
			}
			// The matrix is the same whichever findings explain it: only the
			// rows that differ are listed; the others are counted.
			for svc, want := range map[string]string{"shop/sessions": "ok,ok,missing", "shop/web:http": "ok,ok,differs", "kube-system/dns:dns": ""} {
				if states[svc] != want {
					t.Errorf("matrix row %s: %q, want %q", svc, states[svc], want)
				}
			}
			if len(fr.Drift.Ports) != 2 || fr.Drift.Alike == 0 {
				t.Errorf("%d rows listed, %d alike: want the 2 that differ, and the others counted", len(fr.Drift.Ports), fr.Drift.Alike)
			}
			for i, r := range fr.Results {
				for _, st := range r.Statuses {
					if st.ID == "node-drift" && st.State != "ran" {
						t.Errorf("node %d: node-drift %s (%s)", i, st.State, st.Reason)
					}
				}
			}
		})
	}
}

// TestNodeDriftHealthy: two healthy nodes of the same cluster do not drift,
// though their Local-policy rules differ.
func TestNodeDriftHealthy(t *testing.T) {
	root := filepath.Join(parsetest.Root(t), "testdata", "fleet", "nodes")
	_, drift := runFleet(t, []string{filepath.Join(root, "node-a"), filepath.Join(root, "node-b")})
	for _, f := range drift {
		t.Errorf("unexpected finding on %s: %s", f.Node, f.Message)
	}
}

// TestNodeDriftSettings changes the configuration and the version of one
// node of the healthy pair and a third copy.
func TestNodeDriftSettings(t *testing.T) {
	src := filepath.Join(parsetest.Root(t), "testdata", "fleet", "nodes")
	dir := t.TempDir()
	for _, n := range []string{"node-a", "node-b", "node-c"} {
		from := n
		if n == "node-c" {
			from = "node-a" // a copy of node-a (named node-a#2 in messages)
		}
		parsetest.CopyTree(t, filepath.Join(src, from), filepath.Join(dir, n), nil)
	}
	cfg := filepath.Join(dir, "node-b", "kube-proxy", "config.yaml")
	data, _ := os.ReadFile(cfg)
	data = []byte(strings.Replace(string(data), "  syncPeriod: 30s\nipvs:", "  syncPeriod: 1m0s\nipvs:", 1))
	os.WriteFile(cfg, data, 0o644)
	os.WriteFile(filepath.Join(dir, "node-b", "kube-proxy", "version.txt"), []byte("Kubernetes v1.37.1\n"), 0o644)
	fr, drift := runFleet(t, fleetDirs(t, dir))
	var msgs []string
	for _, f := range drift {
		if f.Node != "node-b" {
			t.Errorf("finding names %s: %s", f.Node, f.Message)
		}
		msgs = append(msgs, f.Message)
	}
	got := strings.Join(msgs, "\n")
	for _, want := range []string{
		"iptables.syncPeriod is 1m0s on node-b but 30s on node-a and node-a#2",
		"kube-proxy version is v1.37.1 on node-b but v1.37.2 on node-a and node-a#2",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no finding %q in:\n%s", want, got)
		}
	}
	if len(fr.Drift.Fields) != 2 {
		t.Errorf("drift fields %+v", fr.Drift.Fields)
	}
	for _, f := range drift {
		if strings.HasPrefix(f.Message, "iptables.syncPeriod") && (f.Evidence[0].File != "kube-proxy/config.yaml" || f.Evidence[0].Line == 0) {
			t.Errorf("syncPeriod evidence %+v", f.Evidence)
		}
	}
}

// TestNodeDriftSingleNode: one node, the check is skipped with the reason.
func TestNodeDriftSingleNode(t *testing.T) {
	fr, drift := runFleet(t, []string{filepath.Join(parsetest.Root(t), "testdata", "bundles", "iptables-mini")})
	if len(drift) != 0 || fr.Drift != nil {
		t.Fatalf("node-drift ran on one node")
	}
	for _, st := range fr.Results[0].Statuses {
		if st.ID == "node-drift" && (st.State != "skipped" || st.Reason != checks.SingleNode) {
			t.Errorf("status %+v", st)
		}
	}
}

// TestNodeDriftAllBundles runs node-drift over every bundle of testdata
// (clusters, versions and modes that differ) and keeps its matrix and
// findings in testdata/fleet/drift-all.golden.json (rewritten with
// -update): the differences node-drift finds between many unlike nodes.
func TestNodeDriftAllBundles(t *testing.T) {
	t.Chdir(parsetest.Root(t))
	dirs, err := filepath.Glob(filepath.Join("testdata", "bundles", "*-*"))
	if err != nil {
		t.Fatal(err)
	}
	dirs = append(dirs, fleetDirs(t, filepath.Join("testdata", "fleet", "nodes"))...)
	fr, drift := runFleet(t, dirs)
	if fr.Drift == nil || len(fr.Drift.Ports) == 0 || len(fr.Drift.Fields) == 0 || len(drift) == 0 {
		t.Fatalf("no drift found between unlike nodes: %+v", fr.Drift)
	}
	parsetest.GoldenFile(t, filepath.Join("testdata", "fleet", "drift-all.golden.json"), parsetest.JSON(t, struct {
		Drift    *checks.Drift
		Findings []checks.Finding
	}{fr.Drift, drift}))
}

// TestNodeDriftClusters: nodes whose exports name two clusters (two uids
// of Service default/kubernetes) are compared only within their cluster;
// a node alone in its cluster, or of no known cluster among several, is
// compared with none and says why; with one cluster known, a node that
// does not say its own is compared with it, as before.
func TestNodeDriftClusters(t *testing.T) {
	root := parsetest.Root(t)
	bundle := func(name string) string { return filepath.Join(root, "testdata", "bundles", name) }
	node := func(name string) string { return filepath.Join(root, "testdata", "fleet", "nodes", name) }
	// noUID is a copy of fleet node-c whose export holds no uid.
	noUID := filepath.Join(t.TempDir(), "node-c")
	if err := os.CopyFS(noUID, os.DirFS(node("node-c"))); err != nil {
		t.Fatal(err)
	}
	export := filepath.Join(noUID, "cluster", "cluster.yaml")
	data, err := os.ReadFile(export)
	if err != nil {
		t.Fatal(err)
	}
	data = regexp.MustCompile(`(?m)^\s+uid: .*\n`).ReplaceAll(data, nil)
	if err := os.WriteFile(export, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		dirs []string
		// clusters lists the nodes of each cluster (none: one cluster).
		clusters [][]string
		// skipped maps a node to the reason node-drift gives for not
		// comparing it.
		skipped map[string]string
		// findings must be among the node-drift findings.
		findings []string
	}{{
		name:     "two clusters",
		dirs:     []string{bundle("iptables-healthy"), node("node-a"), bundle("ipvs-healthy"), node("node-b")},
		clusters: [][]string{{"east-w2", "east-w2#2"}, {"node-a", "node-b"}},
		findings: []string{"mode is iptables on east-w2 but ipvs on east-w2#2"},
	}, {
		name:     "alone in its cluster",
		dirs:     []string{bundle("iptables-healthy"), node("node-a"), node("node-b")},
		clusters: [][]string{{"east-w2"}, {"node-a", "node-b"}},
		skipped:  map[string]string{"east-w2": "east-w2 is the only node of its cluster"},
	}, {
		name:     "cluster not known among two",
		dirs:     []string{bundle("iptables-healthy"), bundle("ipvs-healthy"), node("node-a"), node("node-b"), noUID},
		clusters: [][]string{{"east-w2", "east-w2#2"}, {"node-a", "node-b"}},
		skipped:  map[string]string{"node-c": "the inputs hold nodes of 2 clusters and this node's exports do not say"},
	}, {
		name: "one cluster known",
		dirs: []string{node("node-a"), node("node-b"), noUID},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			fr, drift := runFleet(t, tc.dirs)
			var got [][]string
			for _, c := range fr.Drift.Clusters {
				got = append(got, c.Nodes)
			}
			if !slices.EqualFunc(got, tc.clusters, slices.Equal) {
				t.Errorf("clusters %v, want %v", got, tc.clusters)
			}
			cluster := map[string]int{}
			for i, nodes := range tc.clusters {
				for _, n := range nodes {
					cluster[n] = i + 1
				}
			}
			for _, f := range drift {
				for n, c := range cluster {
					if c != cluster[f.Node] && regexp.MustCompile(`\b`+regexp.QuoteMeta(n)+`\b`).MatchString(f.Message) {
						t.Errorf("%s is compared with %s of another cluster: %s", f.Node, n, f.Message)
					}
				}
			}
			for _, want := range tc.findings {
				if !slices.ContainsFunc(drift, func(f checks.Finding) bool { return strings.Contains(f.Message, want) }) {
					t.Errorf("no finding %q", want)
				}
			}
			for i, r := range fr.Results {
				name := fr.Drift.Nodes[i]
				for _, st := range r.Statuses {
					if st.ID != "node-drift" {
						continue
					}
					want, skip := tc.skipped[name]
					switch {
					case skip && (st.State != "skipped" || !strings.Contains(st.Reason, want)):
						t.Errorf("%s: status %+v, want skipped: %s", name, st, want)
					case !skip && st.State != "ran":
						t.Errorf("%s: status %+v, want ran", name, st)
					}
				}
			}
			for _, row := range fr.Drift.Ports {
				for i, c := range row.Cells {
					if len(tc.clusters) > 0 && c.State != checks.CellUnknown && cluster[fr.Drift.Nodes[i]] != cluster[clusterNodes(fr.Drift, row.Cluster)[0]] {
						t.Errorf("%s: cell of %s (%s) in a row of cluster %s", row.Service, fr.Drift.Nodes[i], c.State, row.Cluster)
					}
				}
			}
		})
	}
}

// clusterNodes returns the nodes of the cluster of that id.
func clusterNodes(d *checks.Drift, id string) []string {
	for _, c := range d.Clusters {
		if c.ID == id {
			return c.Nodes
		}
	}
	return nil
}

// copyNode copies fleet node from into dir under the node name to.
func copyNode(t *testing.T, dir, from, to string) string {
	t.Helper()
	dst := filepath.Join(dir, to)
	if err := os.CopyFS(dst, os.DirFS(filepath.Join(parsetest.Root(t), "testdata", "fleet", "nodes", from))); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dst, "cluster", "node.yaml")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(data), from, to)), 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestNodeDriftNamesNodesAlike: the nodes that lack (or have in excess)
// the same entries and endpoints of a service port get one message naming
// them all, and a message names at most a few of their peers: with six
// healthy nodes and two stale ones, each stale node's findings name both
// stale nodes and three healthy ones and count the rest.
func TestNodeDriftNamesNodesAlike(t *testing.T) {
	dir := t.TempDir()
	var dirs []string
	for _, n := range []string{"node-a", "node-b", "h1", "h2", "h3", "h4"} {
		dirs = append(dirs, copyNode(t, dir, map[bool]string{true: n, false: "node-b"}[strings.HasPrefix(n, "node-")], n))
	}
	dirs = append(dirs, copyNode(t, dir, "node-c", "node-c"), copyNode(t, dir, "node-c", "stale2"))
	_, drift := runFleetWith(t, dirs, without("service-missing", "endpoint-stale", "endpoint-missing"))
	want := []string{
		"programmed on h1, h2, h3 and 3 more nodes but not on node-c and stale2: no entry for ClusterIP 10.96.10.30 tcp/8443; the exports' Service defines it",
		"node-c and stale2 forward to 10.244.3.4:8080, h1, h2, h3 and 3 more nodes do not; the exports' EndpointSlices do not say to forward to it",
		"h1, h2, h3 and 3 more nodes forward to 10.244.3.5:8080, node-c and stale2 do not; the exports' EndpointSlices say to forward to it",
	}
	var got []string
	for _, f := range drift {
		got = append(got, f.Node+": "+f.Message)
	}
	for _, node := range []string{"node-c", "stale2"} {
		for _, w := range want {
			if !slices.Contains(got, node+": "+w) {
				t.Errorf("no finding %q on %s in:\n%s", w, node, strings.Join(got, "\n"))
			}
		}
	}
	if len(got) != 2*len(want) {
		t.Errorf("%d findings, want %d:\n%s", len(got), 2*len(want), strings.Join(got, "\n"))
	}
}

// TestNodeDriftMajorityStale: when most nodes lag behind the
// EndpointSlices and the Services (three copies of the stale node-c) and
// one follows them (node-a), the exports decide: node-drift names the
// stale nodes, says the exports decide, and names nothing on node-a, in
// its findings as in its matrix. Without exports, the split is stated
// without taking a side.
func TestNodeDriftMajorityStale(t *testing.T) {
	dir := t.TempDir()
	dirs := []string{copyNode(t, dir, "node-a", "node-a")}
	for _, n := range []string{"node-c", "stale2", "stale3"} {
		dirs = append(dirs, copyNode(t, dir, "node-c", n))
	}
	fr, drift := runFleetWith(t, dirs, without("service-missing", "endpoint-stale", "endpoint-missing"))
	want := []string{
		"programmed on node-a but not on node-c, stale2 and stale3: no entry for ClusterIP 10.96.10.30 tcp/8443; the exports' Service defines it",
		"node-c, stale2 and stale3 forward to 10.244.3.4:8080, node-a does not; the exports' EndpointSlices do not say to forward to it",
		"node-a forwards to 10.244.3.5:8080, node-c, stale2 and stale3 do not; the exports' EndpointSlices say to forward to it",
	}
	var got []string
	for _, f := range drift {
		got = append(got, f.Node+": "+f.Message)
		if f.Node == "node-a" {
			t.Errorf("the healthy node is named: %s", f.Message)
		}
	}
	for _, node := range []string{"node-c", "stale2", "stale3"} {
		for _, w := range want {
			if !slices.Contains(got, node+": "+w) {
				t.Errorf("no finding %q on %s in:\n%s", w, node, strings.Join(got, "\n"))
			}
		}
	}
	for _, row := range fr.Drift.Ports {
		if s := row.Cells[0].State; s != checks.CellOK {
			t.Errorf("%s: node-a is %s in the matrix, want ok", row.Service, s)
		}
	}
	// With every check, the stale nodes' own findings report each
	// difference: node-drift adds none, and names none on node-a.
	_, drift = runFleet(t, dirs)
	for _, f := range drift {
		t.Errorf("node-drift with every check: %s: %s", f.Node, f.Message)
	}

	// Without exports, nothing decides: the minority is named, the
	// message taking no side.
	for _, d := range dirs {
		for _, f := range []string{"cluster.yaml", "kube-proxy-configmap.yaml", "node.yaml"} {
			if err := os.Remove(filepath.Join(d, "cluster", f)); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, drift = runFleetWith(t, dirs, without("service-missing", "endpoint-stale", "endpoint-missing"))
	if len(drift) == 0 {
		t.Fatal("no node-drift finding without exports")
	}
	for _, f := range drift {
		if f.Node != "node-a" || !strings.HasSuffix(f.Message, "; no node's exports say which side is right") {
			t.Errorf("without exports: %s: %s", f.Node, f.Message)
		}
	}
}
