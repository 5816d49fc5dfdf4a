package checks_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/internal/benchgen"
)

// benchSnapshot loads a generated 10,000-service node once; with
// podCIDR, its Node object too, which gives the node that pod CIDR.
func benchSnapshot(b *testing.B, podCIDR bool) *model.Snapshot {
	b.Helper()
	dir := b.TempDir()
	spec := benchgen.Default
	write := func(name string, fn func(*os.File) error) string {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		if err := fn(f); err != nil {
			b.Fatal(err)
		}
		f.Close()
		return p
	}
	paths := []string{
		write("iptables-save.txt", func(f *os.File) error { return spec.IPTablesSave(f) }),
		write("cluster.json", func(f *os.File) error { return spec.WriteJSON(f) }),
		write("config.yaml", func(f *os.File) error { _, err := f.Write(spec.Config()); return err }),
	}
	if podCIDR {
		paths = append(paths, write("node.yaml", func(f *os.File) error { _, err := f.WriteString(nodeYAML(spec.Node)); return err }))
	}
	snaps, err := load.Load(paths, load.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return snaps[0]
}

// BenchmarkChecks runs every check (views included) on a loaded
// 10,000-service snapshot.
func BenchmarkChecks(b *testing.B) { benchChecks(b, false) }

// BenchmarkChecksPodCIDR is BenchmarkChecks on the node with its Node
// object: knowing the pod CIDR, the tracer does not warn that it makes a
// pod's address up, so load-balance-skew compares the traced shares and
// the sweep takes the ruleset's problems into account.
func BenchmarkChecksPodCIDR(b *testing.B) { benchChecks(b, true) }

func benchChecks(b *testing.B, podCIDR bool) {
	s := benchSnapshot(b, podCIDR)
	b.ReportAllocs()
	for b.Loop() {
		for _, f := range checks.Run(s, checks.All).Findings {
			if f.Check != "ruleset-scale" { // rightly advises another mode at this size
				b.Fatalf("unexpected finding on a consistent input: %+v", f)
			}
		}
	}
}
