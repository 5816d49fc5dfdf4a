package cmd

import (
	"path/filepath"
	"testing"

	"github.com/proxyscan/proxyscan/internal/benchgen"
)

// TestProcessEndsSameOutput runs the commands that load one node (and
// analyze of two bundles, which keeps their text on the heap) on a node
// whose dump is large enough to be read outside the Go heap when the
// process ends with the run, and checks that they print the same as when
// it does not.
func TestProcessEndsSameOutput(t *testing.T) {
	dir := t.TempDir()
	spec := benchgen.Spec{Services: 1000, Endpoints: 5500, NodePortEvery: 4, Node: "n1"}
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := spec.WriteBundle(a); err != nil {
		t.Fatal(err)
	}
	spec.Node = "n2"
	if err := spec.WriteBundle(b); err != nil {
		t.Fatal(err)
	}
	dump := filepath.Join(a, "node", "iptables-save.txt")
	for _, args := range [][]string{
		{"analyze", a, "-o", "json"},
		{"analyze", dump, filepath.Join(a, "cluster", "cluster.json"), filepath.Join(a, "kube-proxy", "config.yaml"), "-o", "json"},
		{"analyze", a, b, "-o", "json"},
		{"analyze", a, "--service", "ns-001/svc-00001", "-o", "json"},
		{"trace", a, "--dst", "10.96.0.1:80", "-o", "json"},
		{"expect", a},
		{"diff", a, b, "-o", "json"},
	} {
		run := func(ends bool) (int, string, string) {
			processEnds = ends
			defer func() { processEnds = false }()
			f, out := testFactory()
			code := Run(f, args)
			stdout, stderr := out()
			return code, stdout, stderr
		}
		hcode, hout, herr := run(false)
		ocode, oout, oerr := run(true)
		if hcode != ocode || hout != oout || herr != oerr {
			t.Errorf("%v: exit %d, %d bytes out, stderr %q on the heap; exit %d, %d bytes out, stderr %q off it", args[:2], hcode, len(hout), herr, ocode, len(oout), oerr)
		}
		if hout == "" {
			t.Errorf("%v: nothing printed", args[:2])
		}
	}
}
