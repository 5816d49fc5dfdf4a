package kube

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// doc is a Service as a document of a multi-document export, as kubectl
// prints it (keys sorted, status last).
func doc(name, ip string) string {
	return "apiVersion: v1\nkind: Service\nmetadata:\n  labels:\n    app: " + name + "\n  name: " + name + "\n  namespace: shop\n  resourceVersion: \"5\"\nspec:\n  clusterIP: " + ip +
		"\n  ports:\n  - name: http\n    port: 80\n    protocol: TCP\n  type: ClusterIP\nstatus:\n  loadBalancer: {}\n"
}

// slice is an EndpointSlice as a document, with ports named p0, p1, ...
func slice(name string, ports int) string {
	s := "addressType: IPv4\napiVersion: discovery.k8s.io/v1\nendpoints:\n- addresses:\n  - 10.244.1.5\n  conditions:\n    ready: true\n" +
		"kind: EndpointSlice\nmetadata:\n  labels:\n    kubernetes.io/service-name: " + name + "\n  name: " + name + "-x\n  namespace: shop\nports:\n"
	for i := 0; i < ports; i++ {
		s += fmt.Sprintf("- name: p%d\n  port: %d\n  protocol: TCP\n", i, 8080+i)
	}
	return s
}

// statusItem is a Service as a List item, with its status.
func statusItem(name, ip string) string {
	return item(name, ip) + "  status:\n    loadBalancer: {}\n"
}

// cutAt returns s up to and including the first line that contains at.
func cutAt(s, at string) string {
	i := strings.Index(s, at)
	if i < 0 {
		panic(at)
	}
	if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
		return s[:i+j+1]
	}
	return s
}

// TestCutExports checks that an export cut short inside its last object is
// read for what it holds and marked partial with the line of the cut and
// why — a multi-document export, a List that prints kind: first, a
// trailing --- with part of an object after it — and that whole exports,
// and objects that merely lack what others have before their last key,
// are not.
func TestCutExports(t *testing.T) {
	multi := doc("web", "10.96.0.20") + "---\n" + doc("api", "10.96.0.21") + "---\n" + doc("db", "10.96.0.22")
	kindFirst := "apiVersion: v1\nkind: List\nitems:\n" + statusItem("web", "10.96.0.20") + statusItem("api", "10.96.0.21") + statusItem("db", "10.96.0.22")
	for _, tc := range []struct {
		name, data string
		want       string // "" : not partial
		services   int
	}{
		{"multi-document, whole", multi, "", 3},
		{"multi-document, trailing ---", multi + "---\n", "", 3},
		{"multi-document, last cut in spec", cutAt(multi, "clusterIP: 10.96.0.22"),
			"cut short after line 46: the last Service (from line 37) lacks status, which every other Service of the export has", 3},
		{"multi-document, last cut in metadata", cutAt(multi, "name: db"),
			"cut short after line 42: the last Service (from line 37) lacks spec, status, which every other Service", 3},
		{"multi-document, ends mid-mapping", strings.TrimSuffix(multi, "  loadBalancer: {}\n"),
			"cut short after line 52: the export ends with a key without a value, in the middle of an object (kubectl never prints one)", 3},
		{"trailing --- and a partial object", multi + "---\napiVersion: v1\nmetadata:\n  name: cache\n",
			"cut short after line 57: the last object (from line 55) has no kind: line, which every other object of the export has; it was not read", 3},
		{"trailing --- and a lone dash", multi + "---\napiVersion: v1\nkind: Service\nspec:\n  ports:\n  -\n",
			"cut short after line 59: the export ends with a key without a value", 4},
		{"List with kind first, whole", kindFirst, "", 3},
		{"List with kind first, last item cut", cutAt(kindFirst, "clusterIP: 10.96.0.22"),
			"cut short after line 36: the last Service (from line 30) lacks status, which every other Service of the export has", 3},
		{"List with kind first, cut mid-item on a key", cutAt(kindFirst, "name: db") + "    namespace: shop\n  spec:\n",
			"cut short after line 35: the export ends with a key without a value", 3},
		{"List with kind first, cut before the last kind", cutAt(kindFirst, "clusterIP: 10.96.0.21") + "    ports:\n    - name: http\n      port: 80\n      protocol: TCP\n  status:\n    loadBalancer: {}\n- apiVersion: v1\n",
			"cut short after line 30: the last object (from line 30) has no kind: line, which every other object of the export has; it was not read", 2},
		// Cut in the last port of the last EndpointSlice, every top-level
		// key in place: its port lacks the protocol the other ports have.
		{"EndpointSlice cut in its last port", slice("web", 3) + "---\n" + strings.TrimSuffix(slice("api", 2), "  protocol: TCP\n"),
			"cut short after line 43: the last item of a list (from line 42) lacks protocol, which every other item of that list has", 0},
		{"EndpointSlices whole", slice("web", 3) + "---\n" + slice("api", 2), "", 0},
		// The last port is unnamed: name sorts before its last key.
		{"EndpointSlice whose last port has no name", slice("web", 2) + "- port: 9090\n  protocol: TCP\n", "", 0},
		// The last Service has no labels, which sort before its last key:
		// not a sign of a cut.
		{"multi-document, last lacks labels", multi[:strings.LastIndex(multi, "  labels:\n    app: db\n")] + multi[strings.LastIndex(multi, "  labels:\n    app: db\n")+len("  labels:\n    app: db\n"):], "", 3},
		// Hand-written manifests: no status anywhere.
		{"manifests without status", "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\nspec:\n  ports:\n  - port: 80\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: b\nspec:\n  ports:\n  - port: 81\n", "", 2},
		{"one object", doc("web", "10.96.0.20")[:strings.Index(doc("web", "10.96.0.20"), "status:")], "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse("export.yaml", []byte(tc.data))
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if tc.want == "" && o.Partial != "" || tc.want != "" && !strings.Contains(o.Partial, tc.want) {
				t.Errorf("partial %q, want %q", o.Partial, tc.want)
			}
			if len(o.Services) != tc.services {
				t.Errorf("%d Services read, want %d", len(o.Services), tc.services)
			}
			// Read as a stream, the same.
			so, err := ParseReader("export.yaml", bytes.NewReader([]byte(tc.data)), Options{})
			if err != nil || so.Partial != o.Partial {
				t.Errorf("read as a stream: partial %q, %v; whole: %q", so.Partial, err, o.Partial)
			}
		})
	}
}

// TestWholeExportsAreNotCut reads every kubectl export of the repository's
// test data, all of them whole: none is marked partial.
func TestWholeExportsAreNotCut(t *testing.T) {
	root := parsetest.Root(t)
	n := 0
	err := filepath.WalkDir(filepath.Join(root, "testdata"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if parsers.Detect(data) != parsers.KindKube {
			return nil
		}
		o, err := Parse(p, data)
		if err != nil {
			return nil // refused exports are other tests' business
		}
		n++
		if o.Partial != "" {
			t.Errorf("%s: partial: %s", p, o.Partial)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 20 {
		t.Errorf("only %d exports read", n)
	}
}

// TestKubectlCuts cuts what kubectl get -o yaml prints where a copy can
// stop: every key of the last object in place, the last value cut
// mid-word, or the List's trailer lost; each is marked partial. kubectl
// ends a List with its trailer (kind: List, metadata: with resourceVersion
// "") and all its output with a newline: only the List shape is held to
// the trailer (a single object ends with its own last key).
func TestKubectlCuts(t *testing.T) {
	dns := func(name string) string {
		return "- apiVersion: v1\n  kind: Service\n  metadata:\n    labels:\n      k8s-app: kube-dns\n    name: " + name + "\n    namespace: kube-system\n" +
			"    resourceVersion: \"231\"\n  spec:\n    clusterIP: 10.96.0.10\n    ports:\n    - name: dns\n      port: 53\n      protocol: UDP\n  status:\n    loadBalancer: {}\n"
	}
	list := "apiVersion: v1\nitems:\n" + dns("web") + dns("kube-dns") + "kind: List\nmetadata:\n  resourceVersion: \"\"\n"
	// The same List ending with an object whose last key is its name.
	byName := "apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata:\n    name: default\n- apiVersion: v1\n  kind: Namespace\n  metadata:\n    name: kube-dns\n" +
		"kind: List\nmetadata:\n  resourceVersion: \"\"\n"
	one := strings.TrimPrefix(strings.ReplaceAll(dns("kube-dns"), "\n  ", "\n"), "- ")
	upTo := func(s, at string) string {
		i := strings.Index(s, at)
		if i < 0 {
			t.Fatalf("no %q in the export", at)
		}
		return s[:i+len(at)]
	}
	for _, tc := range []struct {
		name, data, want string
	}{
		{"List whole", list, ""},
		{"List of pre-1.20 kubectl whole", strings.TrimSuffix(list, "\n") + "\n  selfLink: \"\"\n", ""},
		{"List re-saved by a YAML tool whole", strings.Replace(list, "resourceVersion: \"\"", "resourceVersion: ''", 1), ""},
		{"object whole", one, ""},
		{"object without status whole", upTo(one, "protocol: UDP\n"), ""},
		{"name cut mid-word", upTo(byName, "name: kube-dn"), "cut short in line 10: the export ends in the middle of a line"},
		{"List cut mid-value in the last item", upTo(list, "loadBalancer: {"), "cut short in line 31"},
		{"List cut after the last item", strings.TrimSuffix(list, "kind: List\nmetadata:\n  resourceVersion: \"\"\n"), "the List ends without the trailer kubectl prints"},
		{"List cut in kind", upTo(list, "kind: Li"), "the List ends without the trailer"},
		{"List cut after kind", upTo(list, "kind: List\n"), "the List ends without the trailer"},
		{"List cut in resourceVersion", upTo(list, "metadata:\n  resourceVersion: \""), "the List ends without the trailer"},
		{"List whole but the last newline", strings.TrimSuffix(list, "\n"), "the export ends in the middle of a line"},
		{"object cut mid-value", upTo(one, "clusterIP: 10.96.0"), "cut short in line 10: the export ends in the middle of a line"},
		{"object cut mid-key", upTo(one, "namesp"), "cut short in line 6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse("services.yaml", []byte(tc.data))
			if err != nil {
				// A cut that leaves a key without a value, or no kind:,
				// may be refused outright: that names the line too.
				if tc.want == "" || !strings.Contains(err.Error(), "services.yaml:") {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if tc.want == "" && o.Partial != "" || tc.want != "" && !strings.Contains(o.Partial, tc.want) {
				t.Errorf("partial %q, want %q", o.Partial, tc.want)
			}
			so, err := ParseReader("services.yaml", bytes.NewReader([]byte(tc.data)), Options{})
			if err != nil || so.Partial != o.Partial {
				t.Errorf("read as a stream: partial %q, %v; whole: %q", so.Partial, err, o.Partial)
			}
		})
	}
}

// TestKubectlJSONCuts checks that a JSON export cut anywhere is refused
// with the file and the line of what is not closed.
func TestKubectlJSONCuts(t *testing.T) {
	data := `{
    "apiVersion": "v1",
    "items": [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": "kube-dns",
                "namespace": "kube-system"
            },
            "spec": {
                "clusterIP": "10.96.0.10",
                "ports": [{"name": "dns", "port": 53, "protocol": "UDP"}]
            }
        }
    ],
    "kind": "List",
    "metadata": {
        "resourceVersion": ""
    }
}
`
	if _, err := Parse("services.json", []byte(data)); err != nil {
		t.Fatalf("whole export refused: %v", err)
	}
	for _, at := range []string{`"kube-dn`, `"name": "kube-dns",`, `"port": 5`, `}
        }`, `"kind": "Li`, `"resourceVersion": ""
    }`} {
		cut := data[:strings.Index(data, at)+len(at)]
		_, err := Parse("services.json", []byte(cut))
		if err == nil || !strings.Contains(err.Error(), "services.json:") {
			t.Errorf("cut after %q: %v, want an error naming services.json and a line", at, err)
		}
	}
}
