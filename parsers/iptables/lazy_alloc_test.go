package iptables_test

import (
	"runtime"
	"testing"

	"github.com/proxyscan/proxyscan/internal/benchgen"
	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// TestParseLenientLazyAllocs guards what a lazy parse saves: on a
// generated dump of 2,000 Services it allocates at most 90% of the bytes
// of a whole parse (about 85%, 81% on 10,000 Services: the options of the
// per-Service chains' rules are not read, their rules and chains are
// still made).
func TestParseLenientLazyAllocs(t *testing.T) {
	spec := benchgen.Spec{Services: 2000, Endpoints: 11000, NodePortEvery: 4, Node: "bench-node-1"}
	d, err := spec.IPTablesDump()
	if err != nil {
		t.Fatal(err)
	}
	data := iptables.Format(d)
	measure := func(parse func() (*iptables.Dump, error)) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		d, err := parse()
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		runtime.KeepAlive(d)
		return after.TotalAlloc - before.TotalAlloc
	}
	whole := measure(func() (*iptables.Dump, error) {
		d, _, err := iptables.ParseLenient("iptables-save.txt", data)
		return d, err
	})
	lazy := measure(func() (*iptables.Dump, error) {
		d, _, err := iptables.ParseLenientLazy("iptables-save.txt", data, perService)
		if err == nil {
			if n, _ := d.LazyChains(); n == 0 {
				t.Error("no chain read lazily")
			}
		}
		return d, err
	})
	t.Logf("whole: %d bytes, lazy: %d bytes", whole, lazy)
	if lazy*100 > whole*90 {
		t.Errorf("a lazy parse allocates %d bytes, a whole one %d", lazy, whole)
	}
}
