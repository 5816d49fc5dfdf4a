package view_test

import (
	"bytes"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/view"
	"github.com/proxyscan/proxyscan/internal/benchgen"
	"github.com/proxyscan/proxyscan/parsers/kube"
)

// benchAttribution returns the attribution of the service ports of a
// generated cluster.
func benchAttribution(b *testing.B, spec benchgen.Spec, opts model.BuildOptions) *view.Attribution {
	b.Helper()
	var cluster bytes.Buffer
	if err := spec.WriteJSON(&cluster); err != nil {
		b.Fatal(err)
	}
	objs, err := kube.Parse("cluster.json", cluster.Bytes())
	if err != nil {
		b.Fatal(err)
	}
	return view.NewAttribution(model.BuildServicePorts(objs, opts))
}

// BenchmarkFromIPTables builds the view of a generated 10,000-service
// iptables-save dump (parsed once).
func BenchmarkFromIPTables(b *testing.B) {
	spec := benchgen.Default
	attr := benchAttribution(b, spec, model.BuildOptions{NodeName: spec.Node})
	d, err := spec.IPTablesDump()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		v := view.FromIPTables(d, attr)
		if len(v.Entries) < spec.Services {
			b.Fatalf("%d entries", len(v.Entries))
		}
	}
}
