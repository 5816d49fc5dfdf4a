package kube_test

import (
	"bytes"
	"testing"

	"github.com/proxyscan/proxyscan/internal/benchgen"
	"github.com/proxyscan/proxyscan/parsers/kube"
)

// TestDirectReadsGeneratedExports checks that the direct decoder reads
// every Service and EndpointSlice of a generated export, JSON and YAML,
// as encoding/json does.
func TestDirectReadsGeneratedExports(t *testing.T) {
	spec := benchgen.Spec{Services: 200, Endpoints: 1100, NodePortEvery: 4, Node: "node-1"}
	var j, y bytes.Buffer
	if err := spec.WriteJSON(&j); err != nil {
		t.Fatal(err)
	}
	if err := spec.WriteYAML(&y); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"cluster.json": j.Bytes(), "cluster.yaml": y.Bytes()} {
		read, total, err := kube.CheckDirect(name, data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if total != 2*spec.Services || read != total {
			t.Errorf("%s: the direct decoder read %d of %d Services and EndpointSlices, want all %d", name, read, total, 2*spec.Services)
		}
	}
}
