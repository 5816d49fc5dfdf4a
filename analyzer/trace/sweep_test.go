package trace_test

import (
	"bytes"
	"net/netip"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"weak"

	"github.com/google/nftables"

	"github.com/proxyscan/proxyscan/analyzer/checktest"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/analyzer/trace"
	"github.com/proxyscan/proxyscan/internal/benchgen"
	"github.com/proxyscan/proxyscan/internal/fault"
	"github.com/proxyscan/proxyscan/internal/netnstest"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/nft"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// portPackets returns packets to every destination of the service ports
// of snap, from every origin, and a few the tracer refuses.
func portPackets(snap *model.Snapshot) []trace.Packet {
	var out []trace.Packet
	add := func(a netip.Addr, port int32, proto string, src netip.Addr, from ...model.Origin) {
		for _, f := range from {
			out = append(out, trace.Packet{Dst: netip.AddrPortFrom(a, uint16(port)), Proto: proto, From: f, Src: src})
		}
	}
	for _, sp := range snap.Ports {
		proto := sp.ProtoLower()
		for _, a := range sp.ClusterIPs {
			add(a, sp.Port, proto, netip.Addr{}, model.FromPod, model.FromNode)
		}
		if sp.NodePort != 0 {
			for _, a := range snap.Node.Addresses {
				add(a, sp.NodePort, proto, netip.Addr{}, model.FromExternal, model.FromPod, model.FromNode)
			}
		}
		for _, a := range append(append([]netip.Addr(nil), sp.ExternalIPs...), sp.LoadBalancerVIPs...) {
			add(a, sp.Port, proto, netip.Addr{}, model.FromExternal, model.FromPod)
			for _, r := range sp.SourceRanges {
				add(a, sp.Port, proto, r.Addr().Next(), model.FromExternal)
			}
		}
	}
	out = append(out, trace.Packet{Dst: netip.MustParseAddrPort("10.96.0.10:53"), Proto: "icmp"},
		trace.Packet{Proto: "tcp"}, trace.Packet{Dst: netip.MustParseAddrPort("[fd00::1]:80")})
	return out
}

// checkSweep compares the sweep of pkts with the summaries of their
// summary traces, one by one. The packets are traced first: on a data
// plane whose tables' rules were not read yet, the traces read the
// chains they meet alone, the sweep the tables' rules.
func checkSweep(t *testing.T, name string, dp *trace.Dataplane, pkts []trace.Packet, workers int) {
	t.Helper()
	traced := make([]trace.Summary, len(pkts))
	for i, pkt := range pkts {
		traced[i] = trace.Summarize(trace.Trace(dp, pkt, trace.Options{Summary: true}))
	}
	got, err := trace.Sweep(dp, pkts, workers)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(got) != len(pkts) {
		t.Fatalf("%s: %d summaries for %d packets", name, len(got), len(pkts))
	}
	for i, pkt := range pkts {
		want := traced[i]
		if !reflect.DeepEqual(got[i], want) {
			t.Errorf("%s: %s: swept\n%+v\ntraced\n%+v", name, pkt, got[i], want)
		}
		// The summary of a full trace ends in the same places, unless
		// paths of different steps end alike (they are then not merged).
		full := trace.Summarize(trace.Trace(dp, pkt, trace.Options{}))
		if len(full.Ends) == len(want.Ends) && !reflect.DeepEqual(full, want) {
			t.Errorf("%s: %s: swept\n%+v\nfully traced\n%+v", name, pkt, got[i], full)
		}
	}
}

// TestSweepIsTrace sweeps the service ports of every bundle and scenario
// and compares each packet's summary with its trace's.
func TestSweepIsTrace(t *testing.T) {
	bundles, err := filepath.Glob(filepath.Join("..", "..", "testdata", "bundles", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	var opts []load.Options
	for _, b := range bundles {
		if !strings.HasSuffix(b, ".md") {
			dirs, opts = append(dirs, b), append(opts, load.Options{})
		}
	}
	nbundles := len(dirs)
	for _, file := range checktest.Files(t, "scenarios/*/*.txtar") {
		s := checktest.Load(t, file)
		dirs, opts = append(dirs, s.Dir), append(opts, s.Options)
	}
	for i, dir := range dirs {
		snaps, err := load.Load([]string{dir}, opts[i])
		if err != nil {
			continue // scenarios of invalid inputs
		}
		for _, snap := range snaps {
			pkts := portPackets(snap)
			modes := []string{"", model.ModeIPTables, model.ModeIPVS, model.ModeNFTables}
			if testing.Short() {
				// The bundles in the resolved mode and one other, in
				// turn, the scenarios in their own; every mode without
				// -short.
				modes = []string{"", modes[1+i%3]}
				if i >= nbundles {
					modes = modes[:1]
				}
			}
			for _, mode := range modes {
				checkSweep(t, filepath.Base(dir)+"/"+mode, trace.FromSnapshot(resolve.Resolve(snap, resolve.Options{Mode: mode})), pkts, 3)
			}
		}
	}
}

// generatedPlane returns the iptables dump of spec, its data plane as a
// node of address node sees it, and that address.
func generatedPlane(t *testing.T, spec benchgen.Spec) (*iptables.Dump, *trace.Dataplane, netip.Addr) {
	t.Helper()
	d, err := spec.IPTablesDump()
	if err != nil {
		t.Fatal(err)
	}
	node := netip.MustParseAddr("192.168.0.10")
	dp := &trace.Dataplane{Mode: "iptables", IPTables: []*iptables.Dump{d}, Local: []netip.Addr{node, netip.MustParseAddr("127.0.0.1")},
		PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.128.0.0/24")}}
	return d, dp, node
}

// TestSweepEvicts sweeps a node with more Service chains than the cache
// keeps, in an order that comes back to the Services traced first.
func TestSweepEvicts(t *testing.T) {
	netnstest.SkipShort(t, "large generated input")
	spec := benchgen.Spec{Services: 1500, Endpoints: 8000, NodePortEvery: 3, Node: "n1"}
	d, dp, node := generatedPlane(t, spec)
	pkts := servicePackets(d, node)
	for _, p := range pkts[:len(pkts)/2] {
		p.From = model.FromNode
		pkts = append(pkts, p)
	}
	checkSweep(t, "benchgen", dp, pkts, 2)
}

// TestSweepReleasesReading: once a sweep is waited for, it keeps nothing
// of what it compiled, so that the tables' typed reading, which its
// compiled chains read, goes when the table drops it (the checks drop
// it once the sweep and the views are done, and keep the sweep's run
// until a check takes its summaries).
func TestSweepReleasesReading(t *testing.T) {
	spec := benchgen.Spec{Services: 40, Endpoints: 120, NodePortEvery: 3, Node: "n1"}
	d, dp, node := generatedPlane(t, spec)
	nat := d.Table("nat")
	reading := weak.Make(nat.Meanings())
	run := trace.StartSweep(dp, servicePackets(d, node), 2)
	sums, err := run.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) == 0 {
		t.Fatal("no packets swept")
	}
	nat.DropMeanings()
	runtime.GC()
	if reading.Value() != nil {
		t.Error("the nat table's typed reading is still reachable after its sweep was waited for and the table dropped it")
	}
	runtime.KeepAlive(run)
}

// TestSweepWorkerPanic makes the first worker of a sweep panic: Sweep
// returns the panic as a *fault.Error once the others are done.
func TestSweepWorkerPanic(t *testing.T) {
	snaps, err := load.Load([]string{filepath.Join(parsetest.Root(t), "testdata", "bundles", "iptables-mini")}, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var started atomic.Int32
	fault.TestHook = func(pool string) {
		if pool == "trace.Sweep" && started.Add(1) == 1 {
			panic("injected")
		}
	}
	defer func() { fault.TestHook = nil }()
	sums, err := trace.Sweep(trace.FromSnapshot(resolve.Resolve(snaps[0], resolve.Options{})), portPackets(snaps[0]), 3)
	if sums != nil || !fault.Is(err) || err.Error() != "panic: injected" {
		t.Errorf("Sweep() = %d summaries, %v; want the worker's panic", len(sums), err)
	}
	if n := started.Load(); n != 3 {
		t.Errorf("%d workers started, want 3", n)
	}
}

// TestSweepHelpers sweeps the bundles' packets with one worker and
// helpers that join it (StartSweep, Help), as the checks that wait for a
// sweep do: the summaries are those of Sweep, a helper that comes once
// the sweep was waited for returns at once, and a helper's panic is
// returned by Wait.
func TestSweepHelpers(t *testing.T) {
	snaps, err := load.Load([]string{filepath.Join(parsetest.Root(t), "testdata", "bundles", "iptables-healthy")}, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dp := trace.FromSnapshot(resolve.Resolve(snaps[0], resolve.Options{}))
	pkts := portPackets(snaps[0])
	for len(pkts) < 200 { // several batches for the helpers to take
		pkts = append(pkts, pkts...)
	}
	want, err := trace.Sweep(dp, pkts, 1)
	if err != nil {
		t.Fatal(err)
	}
	run := trace.StartSweep(dp, pkts, 1)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(run.Help)
	}
	got, err := run.Wait()
	wg.Wait()
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("with helpers: %d summaries, %v; want those of Sweep (%d)", len(got), err, len(want))
	}
	run.Help() // after Wait: nothing left, returns at once

	// A helper that panics (no data plane) while the worker has not
	// started: Help returns, and Wait returns the panic.
	release := make(chan struct{})
	fault.TestHook = func(pool string) {
		if pool == "trace.Sweep" {
			<-release
		}
	}
	defer func() { fault.TestHook = nil }()
	run = trace.StartSweep(nil, pkts, 1)
	run.Help()
	close(release)
	if sums, err := run.Wait(); sums != nil || !fault.Is(err) {
		t.Errorf("a helper's panic: Wait() = %d summaries, %v; want the panic", len(sums), err)
	}
}

// TestSweepNFTGenerated sweeps a generated nftables node (kube-proxy's
// tables for Services of several endpoints, some of them NodePorts) from
// every origin and compares each packet's summary with its trace's.
func TestSweepNFTGenerated(t *testing.T) {
	spec := benchgen.Spec{Services: 120, Endpoints: 600, NodePortEvery: 3, Node: "n1"}
	if !testing.Short() {
		spec = benchgen.Spec{Services: 1500, Endpoints: 8000, NodePortEvery: 3, Node: "n1"}
	}
	var buf bytes.Buffer
	if err := spec.NFTRuleset(&buf); err != nil {
		t.Fatal(err)
	}
	rs, err := nft.ParseText("nft-ruleset.txt", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	node := netip.MustParseAddr(benchgen.NodeIP)
	dp := &trace.Dataplane{Mode: model.ModeNFTables, NFT: []*nft.Ruleset{rs}, Local: []netip.Addr{node, netip.MustParseAddr("127.0.0.1")},
		PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.128.0.0/24")}}
	table := rs.Table(nftables.TableFamilyIPv4, "kube-proxy")
	var pkts []trace.Packet
	for _, e := range table.Set("service-ips").Elements {
		for _, from := range []model.Origin{model.FromPod, model.FromNode} {
			pkts = append(pkts, trace.Packet{Dst: netip.AddrPortFrom(netip.MustParseAddr(e.Key()[0]), 80), Proto: "tcp", From: from})
		}
	}
	for _, e := range table.Set("service-nodeports").Elements {
		for _, from := range []model.Origin{model.FromExternal, model.FromPod, model.FromNode} {
			pkts = append(pkts, trace.Packet{Dst: netip.MustParseAddrPort(benchgen.NodeIP + ":" + e.Key()[1]), Proto: "tcp", From: from})
		}
	}
	if len(pkts) < 3*spec.Services {
		t.Fatalf("%d packets for %d Services", len(pkts), spec.Services)
	}
	checkSweep(t, "benchgen nftables", dp, pkts, 2)
}
