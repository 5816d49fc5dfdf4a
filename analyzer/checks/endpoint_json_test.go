package checks_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
)

// TestEndpointMissingJSONAddressLine checks that endpoint-missing cites
// the line of the endpoint's address in an indented JSON export, as in a
// YAML one, and the EndpointSlice's line (the file's only one) in a
// compact export.
func TestEndpointMissingJSONAddressLine(t *testing.T) {
	for _, indent := range []bool{true, false} {
		dir := editedBundle(t, "iptables-mini", []edit{
			{"node/iptables-save.txt", "-", "-j KUBE-SEP-4C2XVE4HDBOXUXNK"},
		})
		y, err := os.ReadFile(filepath.Join(dir, "cluster", "cluster.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		js, err := yaml.YAMLToJSON(y)
		if err != nil {
			t.Fatal(err)
		}
		if indent {
			var b bytes.Buffer
			if err := json.Indent(&b, js, "", "    "); err != nil {
				t.Fatal(err)
			}
			js = b.Bytes()
		}
		if err := os.Remove(filepath.Join(dir, "cluster", "cluster.yaml")); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cluster", "cluster.json"), js, 0o644); err != nil {
			t.Fatal(err)
		}
		// The line of the address, the only one of this address alone.
		want := 1
		if indent {
			want = 0
			for i, l := range strings.Split(string(js), "\n") {
				if strings.TrimSpace(l) == `"10.244.1.2"` {
					if want != 0 {
						t.Fatal("the address is on two lines of the JSON export")
					}
					want = i + 1
				}
			}
			if want == 0 {
				t.Fatal("no line of the address in the JSON export")
			}
		}
		snaps, err := load.Load([]string{dir}, load.Options{Compact: true})
		if err != nil {
			t.Fatal(err)
		}
		res := checks.Run(snaps[0], []*checks.Check{checks.ByID("endpoint-missing")})
		found := false
		for _, f := range res.Findings {
			for _, e := range f.Evidence {
				if e.File == "cluster/cluster.json" {
					found = true
					if e.Line != want {
						t.Errorf("indented %v: evidence %s:%d %q, want line %d", indent, e.File, e.Line, e.Text, want)
					}
				}
			}
		}
		if !found {
			t.Errorf("indented %v: no endpoint-missing evidence in the export: %v", indent, res.Findings)
		}
	}
}
