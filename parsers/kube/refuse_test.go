package kube

import (
	"strings"
	"testing"
)

// item is a Service as a List item, as kubectl prints it.
func item(name, ip string) string {
	return "- apiVersion: v1\n  kind: Service\n  metadata:\n    name: " + name + "\n    namespace: shop\n  spec:\n    clusterIP: " + ip +
		"\n    ports:\n    - name: http\n      port: 80\n      protocol: TCP\n"
}

const listTail = "kind: List\nmetadata:\n  resourceVersion: \"\"\n"

// TestRefusedYAML checks that what YAML or kubectl never writes is an
// error at its line rather than read as something else: a tab in the
// indentation, a key given twice, a List cut between its items; and that
// a known kind of an API version that is not read is ignored, not read
// as the known one.
func TestRefusedYAML(t *testing.T) {
	whole := "apiVersion: v1\nitems:\n" + item("web", "10.96.0.20") + item("api", "10.96.0.21") + listTail
	for _, tc := range []struct {
		name, data, want string
	}{
		{"tab in an item", strings.Replace(whole, "      port: 80", "\t      port: 80", 1), "export.yaml:12: a tab in the indentation (YAML indents with spaces only)"},
		{"tab after spaces", strings.Replace(whole, "      port: 80", "  \t    port: 80", 1), "export.yaml:12: a tab in the indentation"},
		{"tab in a document", "apiVersion: v1\nkind: Service\nmetadata:\n\tname: web\n", "export.yaml:4: a tab in the indentation"},
		{"duplicate key", strings.Replace(whole, "    name: web\n", "    name: web\n    name: web2\n", 1), `export.yaml:7: invalid YAML in Service (v1): key "name" given twice in one mapping`},
		{"duplicate key in a document", "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\nspec:\n  clusterIP: 10.96.0.1\n  clusterIP: 10.96.0.2\n", `export.yaml:7: invalid YAML in Service (v1): key "clusterIP" given twice`},
		{"cut between items", "apiVersion: v1\nitems:\n" + item("web", "10.96.0.20"), "export.yaml:13: the List ends without its kind: line (kubectl prints kind: List after the items): the export was cut short after this line"},
		{"cut after items:", "apiVersion: v1\nitems:\n", "export.yaml:2: the List ends without its kind"},
		{"whole", whole, ""},
		{"kind first", "apiVersion: v1\nkind: List\nitems:\n" + item("web", "10.96.0.20"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse("export.yaml", []byte(tc.data))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "" && len(o.Services) == 0:
				t.Fatalf("no Service read")
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("want the error %q, got %v", tc.want, err)
			}
		})
	}
	// An API version of a known kind that is not read.
	data := "apiVersion: v1\nitems:\n" + strings.Replace(item("web", "10.96.0.20"), "- apiVersion: v1", "- apiVersion: v9", 1) +
		strings.Replace(item("ds", "10.96.0.21"), "- apiVersion: v1\n  kind: Service", "- apiVersion: extensions/v1beta1\n  kind: DaemonSet", 1) + listTail
	o, err := Parse("export.yaml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Services) != 0 || len(o.DaemonSets) != 0 || len(o.Ignored) != 2 || o.Ignored[0].APIVersion != "v9" || o.Ignored[0].Pos.Line != 3 {
		t.Errorf("want the v9 Service and the extensions/v1beta1 DaemonSet ignored, got %d Services, %d DaemonSets, ignored %+v", len(o.Services), len(o.DaemonSets), o.Ignored)
	}
}
