package cmd

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/report"
	"github.com/proxyscan/proxyscan/internal/benchgen"
	"github.com/proxyscan/proxyscan/internal/benchgen/fleetreports"
)

// fleetInputs writes n bundles of a node of that many Services (5.5
// endpoints each) into a directory removed when the benchmark ends, and
// returns their paths.
func fleetInputs(b *testing.B, services, n int) []string {
	b.Helper()
	dir := b.TempDir()
	spec := benchgen.Spec{Services: services, Endpoints: services * 11 / 2, NodePortEvery: 4}
	if err := spec.WriteFleet(dir, n); err != nil {
		b.Fatal(err)
	}
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, filepath.Join(dir, fmt.Sprintf("node-%04d", i)))
	}
	return out
}

// peakHeap samples the heap's objects until stop is called and returns
// the largest size seen.
func peakHeap() (stop func() uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak
	}
}

// cpuTime is the CPU time the process used so far (user and system): the
// machine may be shared, and the wall time then says little.
func cpuTime() time.Duration { return benchgen.CPUTime() }

// benchFleet analyses n bundles of a node of that many Services and
// writes their JSON report, reporting the peak heap, the CPU time, the
// time per node and the heap the nodes' summaries hold once the report is
// written, per node (live-B/node).
func benchFleet(b *testing.B, services, n int) {
	benchFleetPaths(b, fleetInputs(b, services, n), n, false)
}

// benchFleetPaths is [benchFleet] of the n nodes of paths, read together
// when together; each unit decodes its own exports with decodeEach[0].
func benchFleetPaths(b *testing.B, paths []string, n int, together bool, decodeEach ...bool) {
	runtime.GC()
	b.ResetTimer()
	var peak uint64
	cpu0 := cpuTime()
	var live uint64
	for b.Loop() {
		stop := peakHeap()
		before, after := liveHeap(func() any {
			nodes, drift, err := analyzeFleet(paths, &fleetOptions{load: load.Options{Compact: true}, checks: checks.All, jobs: defaultJobs(), together: together, decodeEach: len(decodeEach) > 0 && decodeEach[0]})
			if err != nil {
				b.Fatal(err)
			}
			if len(nodes) != n {
				b.Fatalf("%d nodes, want %d", len(nodes), n)
			}
			if err := report.RenderJSON(io.Discard, report.BuildNodes(report.Tool{Name: "proxyscan", Version: reportVersion}, nodes, drift), report.Options{}); err != nil {
				b.Fatal(err)
			}
			return []any{nodes, drift}
		})
		peak = max(peak, stop())
		live = max(after, before) - before
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(live)/float64(n), "live-B/node")
	b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N)/float64(n), "ms/node")
}

// BenchmarkFleet10k analyses one bundle, then four, of a node of 10,000
// Services, each under its own name (go test -bench Fleet10k -benchtime 1x):
// a job loads its next bundle while it builds a node's print, so that
// the peak heap is near one's plus the print kept and one node loading
// per job. On two cores: one bundle about 0.85 s and 160 MB of peak heap;
// four about 4.2 s, 6.4 CPU-s and 345 MB (4.5 s, 6.5 CPU-s and 305 MB
// when each bundle was loaded after the one before was analysed). The
// four share the decoding of their exports, which are alike (see
// load.Exports): 4.4 to 4.7 CPU-s and 337 to 358 MB against 5.2 to 5.5
// CPU-s and 305 to 363 MB decoded each (4 runs each, load 3.7 to 5.4).
// A collection as each node but the last is dropped (collectDropped)
// took the peak from 341-389 MB to 296-308 (decoded each: 324-375 to
// 266-283; 2 runs each).
func BenchmarkFleet10k(b *testing.B) {
	for _, n := range []int{1, 4} {
		b.Run(fmt.Sprintf("bundles=%d", n), func(b *testing.B) { benchFleet(b, 10000, n) })
	}
	// The four bundles' exports are one file's copies: decoded by each
	// rather than once.
	b.Run("bundles=4/decoded-each", func(b *testing.B) { benchFleetPaths(b, fleetInputs(b, 10000, 4), 4, false, true) })
}

// BenchmarkFleet200 analyses 100, then 1,000 bundles of a node of 200
// Services and writes their JSON report (go test -bench Fleet200
// -benchtime 1x ./cmd): the time per node does not grow with the count,
// and the peak heap hardly does, nodes alike sharing their prints'
// lines, service ports and configuration, their summaries' inputs, notes,
// checklist and results, and the report written a node at a time. On two
// cores: 100 nodes, a peak heap of about 15 MB and 2.0 KB live per node
// (mostly what is kept once, spread over few nodes); 1,000, about 16 MB
// and 320 bytes per node, each node past the first hundred adding about
// 135 bytes.
func BenchmarkFleet200(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("bundles=%d", n), func(b *testing.B) { benchFleet(b, 200, n) })
	}
}

// BenchmarkFleetLoose analyses 10, then 100 bundles of a node of 200
// Services without their own exports, given with one loose export of the
// cluster (go test -bench 'FleetLoose$' -benchtime 1x ./cmd): the bundles
// are analysed one at a time, the export decoded once for all, and the
// peak heap does not grow with the count. On two shared cores (load 5),
// before the fleet's room (see below): 9-11 MB of peak heap for 10 bundles and 11-14 MB for 100 (read
// together, as before, the "together" runs: 28-30 and 230-235 MB). The
// 100 took 1.9 CPU-seconds, read together 1.5: the collector, at GC
// percent 50 over a heap of a few megabytes, ran several times a node
// (with GOGC=100: 1.5 and 1.4; GOGC=200: 1.3 and 1.3). With the room a
// fleet's heap gets over what is live (fleetRoom), at load 1.5: 1.1-1.2
// CPU-seconds and 20-21.5 MB of peak heap for the 100 (before,
// 1.65-1.9 and 11-12; read together 1.4-1.5), 19 MB for the 10.
func BenchmarkFleetLoose(b *testing.B) {
	for _, c := range []struct {
		n        int
		together bool
	}{{10, false}, {100, false}, {10, true}, {100, true}} {
		name := fmt.Sprintf("bundles=%d", c.n)
		if c.together {
			name += "/together"
		}
		b.Run(name, func(b *testing.B) { benchFleetLoose(b, 200, c.n, c.together) })
	}
}

// BenchmarkFleetLoose10k analyses one bundle, then four, of a node of
// 10,000 Services without its own export, given with one loose export of
// the cluster (go test -bench FleetLoose10k -benchtime 1x ./cmd): one
// bundle is read with the export, four are analysed one at a time, the
// export decoded once for all. On two shared cores (load 5-6): one
// bundle 1.1 CPU-seconds and 140-170 MB of peak heap, four 4.8-5.2
// CPU-seconds and 370-380 MB.
func BenchmarkFleetLoose10k(b *testing.B) {
	for _, n := range []int{1, 4} {
		b.Run(fmt.Sprintf("bundles=%d", n), func(b *testing.B) { benchFleetLoose(b, 10000, n, false) })
	}
}

// benchFleetLoose analyses n bundles of a node of that many Services
// without their own exports, given with one loose export (read together
// with them when together).
func benchFleetLoose(b *testing.B, services, n int, together bool) {
	paths := fleetInputs(b, services, n)
	for _, p := range paths {
		if err := os.Remove(filepath.Join(p, "cluster", "cluster.json")); err != nil {
			b.Fatal(err)
		}
	}
	export := filepath.Join(b.TempDir(), "cluster.json")
	f, err := os.Create(export)
	if err != nil {
		b.Fatal(err)
	}
	spec := benchgen.Spec{Services: services, Endpoints: services * 11 / 2, NodePortEvery: 4}
	if err := spec.WriteJSON(f); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	benchFleetPaths(b, append(paths, export), n, together)
}

// BenchmarkMergeReports merges the node reports of 1,000 nodes of a
// cluster of 10,000 Services (5.5 endpoints each), one node in a hundred
// lacking a Service (go test -bench MergeReports -benchtime 1x ./cmd): the
// reports are generated once, before the timer; the merge reads them,
// runs node-drift and writes the JSON report. On two cores: about 4
// CPU-seconds and a peak heap of about 210 MB (proxyscan analyze of the
// same reports: 3.6 CPU-seconds, 280 MB resident; the same with every
// node's lines different: 3.7 CPU-seconds, 275 MB).
func BenchmarkMergeReports(b *testing.B) {
	const nodes = 1000
	dir := b.TempDir()
	spec := benchgen.Spec{Services: 10000, Endpoints: 55000, NodePortEvery: 4}
	if err := fleetreports.Write(spec, dir, nodes, report.Tool{Name: "proxyscan", Version: reportVersion}); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	b.ResetTimer()
	var peak uint64
	cpu0 := cpuTime()
	var live uint64
	for b.Loop() {
		stop := peakHeap()
		before, after := liveHeap(func() any {
			sums, drift, err := analyzeFleet([]string{dir}, &fleetOptions{load: load.Options{Compact: true}, checks: checks.All, jobs: defaultJobs(), version: reportVersion})
			if err != nil {
				b.Fatal(err)
			}
			if len(sums) != nodes || drift == nil || len(drift.Ports) != 1 {
				b.Fatalf("%d nodes, drift %v", len(sums), drift)
			}
			if err := report.RenderJSON(io.Discard, report.BuildNodes(report.Tool{Name: "proxyscan", Version: reportVersion}, sums, drift), report.Options{}); err != nil {
				b.Fatal(err)
			}
			return []any{sums, drift}
		})
		peak = max(peak, stop())
		live = max(after, before) - before
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(live)/nodes, "live-B/node")
	b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
}
