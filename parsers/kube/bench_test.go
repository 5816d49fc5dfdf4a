package kube_test

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/proxyscan/proxyscan/internal/benchgen"
	"github.com/proxyscan/proxyscan/parsers/kube"
)

var (
	exportsOnce            sync.Once
	exportJSON, exportYAML []byte
	exportErr              error
)

// exports generates the benchmark export (benchgen.Default: 10,000
// Services and their EndpointSlices) as kubectl JSON and YAML, once.
func exports(b *testing.B) (jsonData, yamlData []byte) {
	b.Helper()
	exportsOnce.Do(func() {
		var j, y bytes.Buffer
		if exportErr = benchgen.Default.WriteJSON(&j); exportErr != nil {
			return
		}
		exportErr = benchgen.Default.WriteYAML(&y)
		exportJSON, exportYAML = j.Bytes(), y.Bytes()
	})
	if exportErr != nil {
		b.Fatal(exportErr)
	}
	return exportJSON, exportYAML
}

func benchParse(b *testing.B, yaml bool, opts kube.Options) {
	j, y := exports(b)
	data, name := j, "cluster.json"
	if yaml {
		data, name = y, "cluster.yaml"
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		o, err := kube.ParseWith(name, data, opts)
		if err != nil {
			b.Fatal(err)
		}
		if len(o.Services) != benchgen.Default.Services {
			b.Fatalf("%d Services read, want %d", len(o.Services), benchgen.Default.Services)
		}
	}
}

// BenchmarkParseJSON decodes the 10,000-Service export as kubectl JSON.
func BenchmarkParseJSON(b *testing.B) { benchParse(b, false, kube.Options{}) }

// BenchmarkParseYAML decodes the same export as kubectl YAML.
func BenchmarkParseYAML(b *testing.B) { benchParse(b, true, kube.Options{}) }

// BenchmarkParseJSONReader decodes the JSON export as it reads it
// (ParseReader), as the loader does with an export on disk.
func BenchmarkParseJSONReader(b *testing.B) {
	data, _ := exports(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		o, err := kube.ParseReader("cluster.json", bytes.NewReader(data), kube.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if len(o.Services) != benchgen.Default.Services {
			b.Fatalf("%d Services read, want %d", len(o.Services), benchgen.Default.Services)
		}
	}
}

// BenchmarkParseJSONLean decodes the compact JSON export lean, as it
// reads it, as analyze and trace do.
func BenchmarkParseJSONLean(b *testing.B) {
	exports(b)
	compactOnce.Do(func() { compactJSON = writeCompact(b) })
	b.SetBytes(int64(len(compactJSON)))
	b.ReportAllocs()
	cpu := benchgen.CPUTime()
	for b.Loop() {
		o, err := kube.ParseReader("cluster.json", bytes.NewReader(compactJSON), kube.Options{Lean: true})
		if err != nil {
			b.Fatal(err)
		}
		if len(o.Services) != benchgen.Default.Services {
			b.Fatalf("%d Services read, want %d", len(o.Services), benchgen.Default.Services)
		}
	}
	reportCPU(b, cpu)
}

// BenchmarkParseJSONReference decodes the JSON export with the reference
// decoders only (encoding/json).
func BenchmarkParseJSONReference(b *testing.B) { benchParse(b, false, kube.Options{Reference: true}) }

// BenchmarkParseYAMLReference decodes the YAML export with the reference
// decoders only (sigs.k8s.io/yaml).
func BenchmarkParseYAMLReference(b *testing.B) { benchParse(b, true, kube.Options{Reference: true}) }

func benchSplit(b *testing.B, data []byte, streamed bool) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	cpu := benchgen.CPUTime()
	for b.Loop() {
		n, err := kube.SplitJSON(data, streamed)
		if err != nil {
			b.Fatal(err)
		}
		if n < benchgen.Default.Services {
			b.Fatalf("%d objects split, want at least %d", n, benchgen.Default.Services)
		}
	}
	reportCPU(b, cpu)
}

// reportCPU reports the CPU time per operation since cpu (cpu-ns/op),
// which a shared machine's load moves less than the wall time.
func reportCPU(b *testing.B, cpu time.Duration) {
	if used := benchgen.CPUTime() - cpu; used > 0 {
		b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

var (
	compactOnce sync.Once
	compactJSON []byte
)

// writeCompact returns the benchmark export as compact JSON.
func writeCompact(b *testing.B) []byte {
	var buf bytes.Buffer
	if err := benchgen.Default.WriteCompactJSON(&buf); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkSplitJSON splits the JSON export, indented as kubectl prints
// it and compact, into its items, in memory and as it is read
// (ParseReader's path): the two should take about as long.
func BenchmarkSplitJSON(b *testing.B) {
	indented, _ := exports(b)
	compactOnce.Do(func() { compactJSON = writeCompact(b) })
	for _, in := range []struct {
		name string
		data []byte
	}{{"indented", indented}, {"compact", compactJSON}} {
		b.Run(in.name+"/memory", func(b *testing.B) { benchSplit(b, in.data, false) })
		b.Run(in.name+"/streamed", func(b *testing.B) { benchSplit(b, in.data, true) })
	}
}
