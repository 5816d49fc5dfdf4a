package load

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/kube"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

const miniSlice = `---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-abc
  namespace: shop
  labels:
    kubernetes.io/service-name: web
addressType: IPv4
ports:
- name: http
  port: 8080
  protocol: TCP
endpoints:
- addresses: ["10.244.1.5"]
  conditions: {ready: true}
  nodeName: node-a
  zone: zone-1
- addresses: ["10.244.2.7"]
  conditions: {ready: false, serving: true, terminating: true}
  nodeName: node-b
`

// TestCompactKeepsPorts loads two bundles sharing a loose export with and
// without Compact: the service ports (endpoints, positions, locality) are
// the same, and with Compact the Services keep their names and positions
// but no labels or selector, and the EndpointSlices are released (and
// counted).
func TestCompactKeepsPorts(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a/node/iptables-save.txt", []byte(miniDump))
	writeFile(t, dir, "a/manifest.json", []byte(`{"node":"node-a"}`))
	writeFile(t, dir, "b/node/iptables-save.txt", []byte(miniDump))
	// The Service of miniService with labels and a selector.
	svc := strings.Replace(miniService, "  namespace: shop\n", "  namespace: shop\n  labels: {app: web}\n", 1)
	svc = strings.Replace(svc, "spec:\n", "spec:\n  selector: {app: web}\n", 1)
	export := writeFile(t, dir, "svc.yaml", []byte(svc+miniSlice))
	paths := []string{filepath.Join(dir, "a"), filepath.Join(dir, "b"), export}
	for _, node := range []string{"", "node-b"} {
		full, err := Load(paths, Options{Node: node})
		if err != nil {
			t.Fatal(err)
		}
		compact, err := Load(paths, Options{Node: node, Compact: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(full) != 2 || len(compact) != 2 {
			t.Fatalf("got %d and %d snapshots, want 2", len(full), len(compact))
		}
		for i := range full {
			f, c := full[i], compact[i]
			if len(f.Ports) != 1 || len(f.Ports[0].Endpoints) != 2 {
				t.Fatalf("snapshot %d: ports %v, want one with 2 endpoints", i, f.Ports)
			}
			if !reflect.DeepEqual(withoutObjects(f.Ports), withoutObjects(c.Ports)) {
				t.Errorf("snapshot %d (node %q): compact ports differ:\n%+v\nwant\n%+v", i, node, c.Ports, f.Ports)
			}
			if len(c.Objects.EndpointSlices) != 0 || c.Objects.EndpointObjects() != 1 || f.Objects.EndpointObjects() != 1 {
				t.Fatalf("snapshot %d: %d slices kept, %d counted (%d without Compact), want 0, 1 (1)", i,
					len(c.Objects.EndpointSlices), c.Objects.EndpointObjects(), f.Objects.EndpointObjects())
			}
			if ep := c.Ports[0].Endpoints[0]; ep.Pos().Line == 0 {
				t.Errorf("snapshot %d: compact endpoint %s lost the position of its slice", i, ep)
			}
			if c.Objects.Services[0].Labels != nil || c.Objects.Services[0].Spec.Selector != nil {
				t.Errorf("snapshot %d: compact Service keeps labels %v or selector %v", i, c.Objects.Services[0].Labels, c.Objects.Services[0].Spec.Selector)
			}
			if c.Ports[0].Service != c.Objects.Services[0] || c.Objects.Services[0].Name != "web" {
				t.Errorf("snapshot %d: the compact port does not point at its Service", i)
			}
			if f.Objects.Services[0].Labels == nil || f.Objects.Services[0].Spec.Selector == nil || f.Objects.EndpointSlices[0].Labels == nil {
				t.Errorf("snapshot %d: without Compact the objects lost their labels or selector", i)
			}
			if len(f.Objects.EndpointSlices[0].Endpoints) != 2 {
				t.Errorf("snapshot %d: without Compact the slice lost its endpoints", i)
			}
		}
	}
}

// TestFilesReadWhenParsed checks that files on disk are read as they are
// parsed: only their kind is known before, and a file gone by then is an
// error naming it.
func TestFilesReadWhenParsed(t *testing.T) {
	dir := t.TempDir()
	dump := writeFile(t, dir, "iptables-save.txt", []byte(miniDump))
	export := writeFile(t, dir, "svc.yaml", []byte(miniService+miniSlice))
	var files []file
	for _, p := range []string{dump, export} {
		fs, err := readPath(p, DefaultLimits, kube.Options{})
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, fs...)
	}
	for _, f := range files {
		if f.data != nil || f.length() == 0 {
			t.Errorf("%s: read before it is parsed (%d bytes held, size %d)", f.name, len(f.data), f.length())
		}
	}
	if k := files[1].detectKind(); k != parsers.KindKube {
		t.Errorf("export detected as %q", k)
	}
	if err := os.Remove(dump); err != nil {
		t.Fatal(err)
	}
	res, err := parseAll(files, kube.Options{}, nil, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].err == nil || !strings.Contains(res[0].err.Error(), "no such file") {
		t.Errorf("removed dump: err = %v, want no such file", res[0].err)
	}
	if res[1].err != nil || res[1].size != int64(len(miniService+miniSlice)) {
		t.Errorf("export: err %v, size %d", res[1].err, res[1].size)
	}
}

// withoutObjects returns copies of ports without their Service objects,
// which Compact trims.
func withoutObjects(ports []*model.ServicePort) []model.ServicePort {
	out := make([]model.ServicePort, len(ports))
	for i, sp := range ports {
		out[i] = *sp
		out[i].Service = nil
	}
	return out
}

// TestClusterUIDKept: the uid of Service default/kubernetes, which names
// the cluster a node's exports come from (node-drift compares nodes of one
// cluster), survives lean decoding and trimming, in YAML and JSON exports;
// no other Service keeps its uid.
func TestClusterUIDKept(t *testing.T) {
	dir := filepath.Join(parsetest.Root(t), "testdata", "bundles", "iptables-healthy")
	yamlDir := t.TempDir()
	jsonDir := t.TempDir()
	export, err := os.ReadFile(filepath.Join(dir, "cluster", "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	asJSON, err := yaml.YAMLToJSON(export)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(yamlDir, "cluster.yaml"), export, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(jsonDir, "cluster.json"), asJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{yamlDir, jsonDir} {
		for _, o := range []Options{{Compact: true}, {Lean: true}} {
			snaps, err := Load([]string{filepath.Join(dir, "node", "iptables-save.txt"), in}, o)
			if err != nil {
				t.Fatal(err)
			}
			uids := map[string]string{}
			for _, sp := range snaps[0].Ports {
				if sp.Service != nil && sp.Service.Service != nil && sp.Service.UID != "" {
					uids[sp.Name.Namespace+"/"+sp.Name.Name] = string(sp.Service.UID)
				}
			}
			if len(uids) != 1 || uids["default/kubernetes"] != "5f2a13c1-6038-449b-b62b-11e8ddb66950" {
				t.Errorf("%s, %+v: uids %v, want that of default/kubernetes only", filepath.Base(in), o, uids)
			}
		}
	}
}
