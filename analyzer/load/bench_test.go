package load

import (
	"os"
	"path/filepath"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/internal/benchgen"
	"github.com/proxyscan/proxyscan/parsers/iptables"
)

var (
	benchOnce sync.Once
	benchDir  string
	benchErr  error
)

// benchInputs generates the benchmark inputs once per test binary run
// (benchgen.Default: 10,000 Services, 55,000 endpoints).
func benchInputs(b *testing.B) string {
	b.Helper()
	benchOnce.Do(func() {
		benchDir, benchErr = os.MkdirTemp("", "proxyscan-bench-")
		if benchErr != nil {
			return
		}
		spec := benchgen.Default
		for name, write := range map[string]func(f *os.File) error{
			"node/iptables-save.txt": func(f *os.File) error { return spec.IPTablesSave(f) },
			"cluster/cluster.json":   func(f *os.File) error { return spec.WriteJSON(f) },
			"cluster/compact.json":   func(f *os.File) error { return spec.WriteCompactJSON(f) },
			"cluster/cluster.yaml":   func(f *os.File) error { return spec.WriteYAML(f) },
			"kube-proxy/config.yaml": func(f *os.File) error { _, err := f.Write(spec.Config()); return err },
			"node/nft-ruleset.txt":   func(f *os.File) error { return spec.NFTRuleset(f) },
			"kube-proxy/nft.yaml":    func(f *os.File) error { _, err := f.Write(spec.NFTConfig()); return err },
		} {
			p := filepath.Join(benchDir, name)
			if benchErr = os.MkdirAll(filepath.Dir(p), 0o755); benchErr != nil {
				return
			}
			f, err := os.Create(p)
			if err != nil {
				benchErr = err
				return
			}
			if benchErr = write(f); benchErr != nil {
				return
			}
			f.Close()
		}
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchDir
}

// BenchmarkParseIPTables parses the 10,000-service iptables-save dump.
func BenchmarkParseIPTables(b *testing.B) {
	dir := benchInputs(b)
	data, err := os.ReadFile(filepath.Join(dir, "node/iptables-save.txt"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := iptables.Parse("iptables-save.txt", data); err != nil {
			b.Fatal(err)
		}
	}
}

// benchAnalyze loads the dump with the export and the configuration as
// analyze does (Options.Compact) and runs every check, reporting the peak
// heap against the input's size.
func benchAnalyze(b *testing.B, dump, export, config string) {
	dir := benchInputs(b)
	paths := []string{filepath.Join(dir, "node", dump), filepath.Join(dir, "cluster", export), filepath.Join(dir, "kube-proxy", config)}
	var size int64
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			b.Fatal(err)
		}
		size += st.Size()
	}
	b.SetBytes(size)
	b.ReportAllocs()
	peak := watchHeap()
	for b.Loop() {
		snaps, err := Load(paths, Options{Compact: true})
		if err != nil {
			b.Fatal(err)
		}
		res := checks.Run(snaps[0], checks.All)
		for _, f := range res.Findings {
			if f.Check != "ruleset-scale" { // rightly advises another mode at this size
				b.Fatalf("unexpected finding on a consistent input: %+v", f)
			}
		}
	}
	p, l := peak()
	b.ReportMetric(float64(p)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(p)/float64(size), "peak-heap/input")
	b.ReportMetric(float64(l)/(1<<20), "peak-live-MiB")
}

// watchHeap samples the bytes of live and not yet collected heap objects
// until the function it returns is called, which returns the largest
// seen: the peak heap of what ran in between; and the largest heap a
// collection left live, which does not depend on the GC settings.
func watchHeap() (stop func() (peak, live uint64)) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	read := func() (uint64, uint64) {
		metrics.Read(sample)
		return sample[0].Value.Uint64(), sample[1].Value.Uint64()
	}
	done := make(chan struct{})
	result := make(chan [2]uint64)
	go func() {
		var peak, live uint64
		note := func() {
			p, l := read()
			peak, live = max(peak, p), max(live, l)
		}
		note()
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				note()
			case <-done:
				note()
				result <- [2]uint64{peak, live}
				return
			}
		}
	}()
	return func() (uint64, uint64) {
		close(done)
		r := <-result
		return r[0], r[1]
	}
}

// BenchmarkAnalyzeCompactJSON loads the dump with the export as compact
// JSON (as an API client or kubectl get --raw returns it) and runs every
// check; it reports the peak heap, as the others do.
func BenchmarkAnalyzeCompactJSON(b *testing.B) {
	benchAnalyze(b, "iptables-save.txt", "compact.json", "config.yaml")
}

// BenchmarkAnalyzeJSON loads the dump with the export as kubectl JSON and
// runs every check.
func BenchmarkAnalyzeJSON(b *testing.B) {
	benchAnalyze(b, "iptables-save.txt", "cluster.json", "config.yaml")
}

// BenchmarkAnalyzeYAML does the same with the export as kubectl YAML.
func BenchmarkAnalyzeYAML(b *testing.B) {
	benchAnalyze(b, "iptables-save.txt", "cluster.yaml", "config.yaml")
}

// BenchmarkAnalyzeNFTables loads the nftables node of the same cluster
// (its `nft list ruleset`, the export as compact JSON) and runs every
// check.
func BenchmarkAnalyzeNFTables(b *testing.B) {
	benchAnalyze(b, "nft-ruleset.txt", "compact.json", "nft.yaml")
}
