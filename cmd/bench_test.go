package cmd

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/diff"
	"github.com/proxyscan/proxyscan/analyzer/report"
	"github.com/proxyscan/proxyscan/internal/benchgen"
)

// benchBundle writes the bundle of a node of benchgen.Default (10,000
// Services, 55,000 endpoints) into a directory removed when the benchmark
// ends, and returns its path.
func benchBundle(b *testing.B) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "node-1")
	if err := benchgen.Default.WriteBundle(dir); err != nil {
		b.Fatal(err)
	}
	return dir
}

// benchCommand runs run once per iteration, as the command does for a
// user (load, resolve, work, output), reporting the CPU time and the peak
// heap of a run.
func benchCommand(b *testing.B, run func(io *IOStreams) error) {
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	var peak uint64
	cpu0 := cpuTime()
	for b.Loop() {
		io, _, _ := Test()
		stop := peakHeap()
		if err := run(io); err != nil {
			b.Fatal(err)
		}
		peak = max(peak, stop())
		runtime.GC()
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
}

// BenchmarkTraceOnePacket is `proxyscan trace BUNDLE --dst CLUSTERIP:PORT`
// of one packet on a node of 10,000 Services (indented JSON export):
// loading the bundle is most of it. lean is the command as it runs,
// decoding of the export only the objects that may concern the packet
// (TraceOptions.load) and parsing of the dump's per-Service chains only
// those the packet reaches (iptables.ParseLenientLazy), nodeport the same
// for a node port; lean-wholedump parses the whole dump; whole also
// decodes every object of the export.
func BenchmarkTraceOnePacket(b *testing.B) {
	dir := benchBundle(b)
	for _, bc := range []struct {
		name, dst, from string
		lean, lazy      bool
	}{
		{"lean", "10.96.19.136:80", "pod", true, true},
		{"nodeport", "192.0.2.10:30136", "external", true, true},
		{"lean-wholedump", "10.96.19.136:80", "pod", true, false},
		{"whole", "10.96.19.136:80", "pod", false, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			defer func(was, lazy bool) { leanTrace, lazyTrace = was, lazy }(leanTrace, lazyTrace)
			leanTrace, lazyTrace = bc.lean, bc.lazy
			benchCommand(b, func(io *IOStreams) error {
				err := traceRun(&TraceOptions{IO: io, Paths: []string{dir}, Dst: bc.dst, Proto: "tcp", From: bc.from, Output: "json"})
				if errors.Is(err, errFindings) {
					err = nil // no path reaches an endpoint
				}
				return err
			})
		})
	}
}

// BenchmarkExpect10k is `proxyscan expect BUNDLE` on a node of 10,000
// Services: the iptables-save text kube-proxy writes for them.
func BenchmarkExpect10k(b *testing.B) {
	dir := benchBundle(b)
	benchCommand(b, func(io *IOStreams) error {
		return expectRun(&ExpectOptions{IO: io, Paths: []string{dir}})
	})
}

// BenchmarkAnalyze10k is `proxyscan analyze iptables-save.txt
// cluster-compact.json config.yaml -o json` of a node of 10,000 Services
// given as loose files, as `make bench-compare` times it: the dump read
// leniently beside the export, then the node assembled while the dump's
// tables are read ahead (checks.ReadAhead), the views and the sweep, the
// checks. On two cores the time per op is the wall time of the command
// less its start; cpu-s/op is its CPU time. On two cores (load 2 to 3):
// 0.58 to 0.67 s and 1.04 to 1.19 CPU-s, against 0.64 to 0.80 s and 1.15
// to 1.39 CPU-s when the passes over every rule of a table read its
// chains in their declared order, and 0.90 to 1.08 s and 1.3 to 1.6
// CPU-s when the dumps were not read ahead, the sweep took every core and
// its packets were listed before the views.
func BenchmarkAnalyze10k(b *testing.B) {
	dir := benchBundle(b)
	compact := filepath.Join(dir, "cluster-compact.json")
	f, err := os.Create(compact)
	if err != nil {
		b.Fatal(err)
	}
	err = benchgen.Default.WriteCompactJSON(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		b.Fatal(err)
	}
	paths := []string{filepath.Join(dir, "node", "iptables-save.txt"), compact, filepath.Join(dir, "kube-proxy", "config.yaml")}
	benchCommand(b, func(io *IOStreams) error {
		return analyzeRun(&AnalyzeOptions{IO: io, Paths: paths, Output: "json", FailOn: "never", Tool: report.Tool{Name: "proxyscan"}})
	})
}

// BenchmarkAnalyzeNFT10k is `proxyscan analyze` of the nftables node of
// 10,000 Services (its `nft list ruleset`, the compact JSON export and its
// configuration as loose files; go test -run '^$' -bench AnalyzeNFT10k
// ./cmd). peak-heap-MB is what the heap's objects reached: with the
// elements of the listing's sets and maps kept as their text in it rather
// than lists of parts and the views' and the sweep's garbage cut, 89.5 MiB
// where it was 98.7 (5 runs each, load 4; see docs/design.md,
// "Performance").
func BenchmarkAnalyzeNFT10k(b *testing.B) {
	dir := b.TempDir()
	spec := benchgen.Default
	paths := []string{filepath.Join(dir, "nft-ruleset.txt"), filepath.Join(dir, "cluster-compact.json"), filepath.Join(dir, "config.yaml")}
	for i, write := range []func(io.Writer) error{
		spec.NFTRuleset,
		spec.WriteCompactJSON,
		func(w io.Writer) error { _, err := w.Write(spec.NFTConfig()); return err },
	} {
		f, err := os.Create(paths[i])
		if err != nil {
			b.Fatal(err)
		}
		err = write(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	benchCommand(b, func(io *IOStreams) error {
		return analyzeRun(&AnalyzeOptions{IO: io, Paths: paths, Output: "json", FailOn: "never", Tool: report.Tool{Name: "proxyscan"}})
	})
}

// BenchmarkDiff10k is `proxyscan diff OLD NEW -o json` of two bundles of
// a node of 10,000 Services (go test -run '^$' -bench Diff10k ./cmd):
// "shared", their exports alike byte for byte (two nodes of one cluster,
// or one node while the cluster did not change), which the sides decode
// once; "apart", the new side's export differs by one endpoint's address
// (same size), and each side decodes its own. On two shared cores (load 4
// to 5, 4 runs): shared 1.85 CPU-s, 427 MB and 1.73 million allocations
// per op, apart 2.08 CPU-s, 471 MB and 2.07 million; each side decoding
// its own export and the comparison rebuilding each side's data plane
// after both sides' checks, as before, 2.06 to 2.17 CPU-s, 507 MB and 2.54
// million allocations per op, whether the exports were alike or not.
// With the exports told alike or not byte for byte rather than hashed,
// each side's plane read as digests and the Services compared by name
// (3 to 12 runs, load 2 to 4): shared 357 MB and 1.11 million allocations
// per op instead of 392 MB and 1.19 million, apart 402 MB and 1.59 million
// instead of 443 MB and 1.68 million (the CPU time in process, 1.8 to 2.3
// CPU-s either way, does not tell them apart at that load; the pages the
// first iteration faulted in are the next ones' heap, unlike a process's:
// see docs/design.md, "Performance").
func BenchmarkDiff10k(b *testing.B) {
	old := benchBundle(b)
	for _, c := range []struct {
		name string
		edit func([]byte) []byte
	}{
		{"shared", func(d []byte) []byte { return d }},
		{"apart", func(d []byte) []byte { return bytes.Replace(d, []byte(`"10.128.0.1"`), []byte(`"10.127.0.1"`), 1) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			new := filepath.Join(b.TempDir(), "node-2")
			if err := benchgen.Default.WriteBundle(new); err != nil {
				b.Fatal(err)
			}
			// Two bundles written apart differ in their exports' times: the
			// new side's export is the old side's, edited.
			data, err := os.ReadFile(filepath.Join(old, "cluster", "cluster.json"))
			if err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(new, "cluster", "cluster.json"), c.edit(data), 0o644); err != nil {
				b.Fatal(err)
			}
			benchCommand(b, func(io *IOStreams) error {
				err := diffRun(&DiffOptions{IO: io, Old: old, New: new, Output: "json", Tool: diff.Tool{Name: "proxyscan"}})
				if errors.Is(err, errDifferences) {
					err = nil
				}
				return err
			})
		})
	}
}
