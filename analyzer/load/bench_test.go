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

func benchAnalyze(b *testing.B, export string) {
	dir := benchInputs(b)
	paths := []string{filepath.Join(dir, "node/iptables-save.txt"), filepath.Join(dir, "cluster", export), filepath.Join(dir, "kube-proxy/config.yaml")}
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
		snaps, err := Load(paths, Options{})
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
	p := peak()
	b.ReportMetric(float64(p)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(p)/float64(size), "peak-heap/input")
}

// watchHeap samples the bytes of live and not yet collected heap objects
// until the function it returns is called, which returns the largest
// seen: the peak heap of what ran in between.
func watchHeap() (stop func() uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	done := make(chan struct{})
	result := make(chan uint64)
	go func() {
		peak := read()
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				peak = max(peak, read())
			case <-done:
				result <- max(peak, read())
				return
			}
		}
	}()
	return func() uint64 {
		close(done)
		return <-result
	}
}

// BenchmarkAnalyzeCompactJSON loads the dump with the export as compact
// JSON (as an API client or kubectl get --raw returns it) and runs every
// check; it reports the peak heap, as the others do.
func BenchmarkAnalyzeCompactJSON(b *testing.B) { benchAnalyze(b, "compact.json") }

// BenchmarkAnalyzeJSON loads the dump with the export as kubectl JSON and
// runs every check.
func BenchmarkAnalyzeJSON(b *testing.B) { benchAnalyze(b, "cluster.json") }

// BenchmarkAnalyzeYAML does the same with the export as kubectl YAML.
func BenchmarkAnalyzeYAML(b *testing.B) { benchAnalyze(b, "cluster.yaml") }
