package kube_test

import (
	"bytes"
	"sync"
	"testing"

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

// BenchmarkParseJSONReference decodes the JSON export with the reference
// decoders only (encoding/json).
func BenchmarkParseJSONReference(b *testing.B) { benchParse(b, false, kube.Options{Reference: true}) }

// BenchmarkParseYAMLReference decodes the YAML export with the reference
// decoders only (sigs.k8s.io/yaml).
func BenchmarkParseYAMLReference(b *testing.B) { benchParse(b, true, kube.Options{Reference: true}) }
