package diff

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// compare loads two paths relative to the repository root, as `proxyscan
// diff OLD NEW` run there does.
func compare(t *testing.T, old, new string) *Result {
	t.Helper()
	wd, _ := os.Getwd()
	if err := os.Chdir(parsetest.Root(t)); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	o, err := load.Load([]string{old}, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := load.Load([]string{new}, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := Compare(Tool{Name: "proxyscan", Version: "v0.0.0-test"}, o, n, Options{})
	r.OldPath, r.NewPath = old, new
	return r
}

func kinds(r *Result) []string {
	var out []string
	for _, c := range r.Changes {
		out = append(out, c.Kind+" "+c.Service+" "+c.Subject)
	}
	return out
}

// TestModeSwitch is the before/after fixture of testdata/diff: the node of
// bundles/iptables-healthy switched to nftables mode, with Service
// shop/cart deleted. The diff lists exactly the mode change (with the
// default that follows from it) and the Service's removal: the iptables
// rules before and the nftables rules after program the same entries and
// backends for every other Service, compared in mode-neutral form.
func TestModeSwitch(t *testing.T) {
	r := compare(t, "testdata/bundles/iptables-healthy", "testdata/diff/after")
	got := strings.Join(kinds(r), "\n")
	want := "mode-changed  mode\nservice-removed shop/cart "
	if got != want {
		t.Fatalf("changes:\n%s\nwant:\n%s", got, want)
	}
	m := r.Changes[0]
	if m.Old != "iptables" || m.New != "nftables" || m.Node != "east-w2" {
		t.Errorf("mode change %+v", m)
	}
	if len(m.OldEvidence) != 1 || m.OldEvidence[0].File != "kube-proxy/config.yaml" || m.OldEvidence[0].Line == 0 {
		t.Errorf("mode change evidence %+v", m.OldEvidence)
	}
	if len(m.Details) != 1 || !strings.HasPrefix(m.Details[0], "nodePortAddresses: unset → [primary]") {
		t.Errorf("mode change details %q", m.Details)
	}
	s := r.Changes[1]
	if len(s.Details) != 1 || s.Details[0] != "port http 80/TCP, 3 endpoints" || s.OldEvidence[0].File != "cluster/cluster.yaml" {
		t.Errorf("service removal %+v", s)
	}
	notes := strings.Join(r.Notes, "\n")
	if !strings.Contains(notes, "the mode changed: entries and backends are compared in mode-neutral form (iptables rules before, nftables after)") {
		t.Errorf("notes do not say the data planes were compared across modes:\n%s", notes)
	}
	if !r.Differs() {
		t.Error("Differs is false")
	}
	goldens(t, "mode-switch", r)
}

// TestDataPlane compares two nodes of testdata/fleet: node-c's rules are
// those of an older cluster state (no shop/sessions, an old endpoint of
// shop/web), and Local-policy rules differ between the nodes.
func TestDataPlane(t *testing.T) {
	r := compare(t, "testdata/fleet/nodes/node-a", "testdata/fleet/nodes/node-c")
	want := []string{
		"node-renamed  node",
		"entry-removed shop/sessions ClusterIP 10.96.10.30 tcp/8443",
		"backend-added shop/static:http 10.244.3.8:8080",
		"backend-added shop/web:http 10.244.3.4:8080",
		"backend-removed shop/sessions 10.244.1.7:8443",
		"backend-removed shop/sessions 10.244.2.7:8443",
		"backend-removed shop/static:http 10.244.1.8:8080",
		"backend-removed shop/web:http 10.244.3.5:8080",
		"finding-appeared shop/sessions service-missing",
		// The old endpoint still programmed and the new one missing: one
		// cause, the rules of shop/web lag its EndpointSlices.
		"finding-appeared shop/web:http endpoint-stale",
	}
	if got := kinds(r); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, c := range r.Changes[1:8] {
		ev := append(c.OldEvidence, c.NewEvidence...)
		if len(ev) == 0 || ev[0].File != "node/iptables-save.txt" || ev[0].Line == 0 {
			t.Errorf("%s %s: evidence %+v", c.Kind, c.Subject, ev)
		}
	}
	goldens(t, "data-plane", r)
}

// TestSame: a bundle against itself has no difference.
func TestSame(t *testing.T) {
	r := compare(t, "testdata/bundles/iptables-mini", "testdata/bundles/iptables-mini")
	if r.Differs() {
		t.Fatalf("differences: %q", kinds(r))
	}
}

// TestConfigAndEndpoints changes a configuration field, the version and an
// endpoint's state in a copy of the mini bundle.
func TestConfigAndEndpoints(t *testing.T) {
	root := parsetest.Root(t)
	dir := t.TempDir()
	src := filepath.Join(root, "testdata", "bundles", "iptables-mini")
	filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		data, _ := os.ReadFile(p)
		return os.WriteFile(filepath.Join(dir, rel), data, 0o644)
	})
	edit := func(file, old, new string) {
		p := filepath.Join(dir, file)
		data, _ := os.ReadFile(p)
		if !strings.Contains(string(data), old) {
			t.Fatalf("%s has no %q", file, old)
		}
		os.WriteFile(p, []byte(strings.Replace(string(data), old, new, 1)), 0o644)
	}
	edit("kube-proxy/config.yaml", "  minSyncPeriod: 1s\n", "  minSyncPeriod: 5s\n")
	edit("kube-proxy/version.txt", "v1.37.2", "v1.37.3")
	edit("cluster/cluster.yaml", "    - 10.244.2.5\n    conditions:\n      ready: true", "    - 10.244.2.5\n    conditions:\n      ready: false")
	o, err := load.Load([]string{src}, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := load.Load([]string{dir}, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := Compare(Tool{}, o, n, Options{})
	got := strings.Join(kinds(r), "\n")
	for _, want := range []string{
		"version-changed  kube-proxy version",
		"config-changed  iptables.minSyncPeriod",
		"endpoint-changed shop/web:http 10.244.2.5:8080",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
}

// goldens compares a result's JSON with testdata/diff/NAME.golden.json
// (rewritten with -update); analyzer/report renders the goldens of the
// other formats from it.
func goldens(t *testing.T, name string, r *Result) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		t.Fatal(err)
	}
	parsetest.GoldenFile(t, filepath.Join(parsetest.Root(t), "testdata", "diff", name+".golden.json"), buf.Bytes())
}
