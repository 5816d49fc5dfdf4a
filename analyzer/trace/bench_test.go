package trace_test

import (
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/trace"
	"github.com/proxyscan/proxyscan/internal/benchgen"
	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// servicePackets returns a packet for every service port of a kube-proxy
// dump: each cluster IP rule of nat KUBE-SERVICES from a pod, each NodePort
// from outside to node.
func servicePackets(d *iptables.Dump, node netip.Addr) []trace.Packet {
	var out []trace.Packet
	for _, r := range d.Chain("nat", "KUBE-SERVICES").Rules {
		dst, port := r.Value("-d"), r.Value("--dport")
		if dst == "" || port == "" {
			continue
		}
		p, err1 := netip.ParsePrefix(dst)
		n, err2 := strconv.Atoi(port)
		if err1 != nil || err2 != nil {
			continue
		}
		out = append(out, trace.Packet{Dst: netip.AddrPortFrom(p.Addr(), uint16(n)), Proto: r.Value("-p"), From: model.FromPod})
	}
	for _, r := range d.Chain("nat", "KUBE-NODEPORTS").Rules {
		if n, err := strconv.Atoi(r.Value("--dport")); err == nil && !strings.Contains(r.Raw, "127.0.0.0/8") {
			out = append(out, trace.Packet{Dst: netip.AddrPortFrom(node, uint16(n)), Proto: r.Value("-p"), From: model.FromExternal})
		}
	}
	return out
}

func benchDump(b *testing.B) (*iptables.Dump, []trace.Packet, func() *trace.Dataplane) {
	d, err := benchgen.Default.IPTablesDump()
	if err != nil {
		b.Fatal(err)
	}
	node := netip.MustParseAddr("192.168.0.10")
	pkts := servicePackets(d, node)
	if len(pkts) < benchgen.Default.Services {
		b.Fatalf("%d packets, want one per Service at least", len(pkts))
	}
	newDP := func() *trace.Dataplane {
		return &trace.Dataplane{Mode: "iptables", IPTables: []*iptables.Dump{d}, Local: []netip.Addr{node, netip.MustParseAddr("127.0.0.1")},
			PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.128.0.0/24")}}
	}
	return d, pkts, newDP
}

func traceAll(b *testing.B, dp *trace.Dataplane, pkts []trace.Packet) {
	traceWith(b, dp, pkts, trace.Options{})
}

func traceWith(b *testing.B, dp *trace.Dataplane, pkts []trace.Packet, opts trace.Options) {
	for _, p := range pkts {
		res, err := trace.Trace(dp, p, opts)
		if err != nil {
			b.Fatal(err)
		}
		if !res.Reached() {
			b.Fatalf("%s: no endpoint reached", p)
		}
	}
}

// BenchmarkTraceEveryService traces every service port of a 10,000-Service
// dump (benchgen.Default: 10,000 cluster IPs and 2,500 NodePorts) once per
// iteration, compiling the rules afresh: one op is the whole sweep.
func BenchmarkTraceEveryService(b *testing.B) {
	_, pkts, newDP := benchDump(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		traceAll(b, newDP(), pkts)
	}
	b.ReportMetric(float64(len(pkts)), "packets/op")
}

// BenchmarkTraceEveryServiceCompiled is the same sweep over a data plane
// whose rules were compiled by an earlier trace.
func BenchmarkTraceEveryServiceCompiled(b *testing.B) {
	_, pkts, newDP := benchDump(b)
	dp := newDP()
	traceAll(b, dp, pkts)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		traceAll(b, dp, pkts)
	}
	b.ReportMetric(float64(len(pkts)), "packets/op")
}

// BenchmarkTraceEveryServiceSummary is the sweep analyze's reachability
// pass makes: paths without steps, on every CPU ([trace.Sweep]), the rules
// compiled afresh.
func BenchmarkTraceEveryServiceSummary(b *testing.B) {
	_, pkts, newDP := benchDump(b)
	benchSweep(b, newDP, pkts)
}

// benchSweep times trace.Sweep of pkts over the data plane dp returns for
// each op, on every CPU, failing on a packet that reaches no endpoint.
func benchSweep(b *testing.B, dp func() *trace.Dataplane, pkts []trace.Packet) {
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		sums, err := trace.Sweep(dp(), pkts, runtime.GOMAXPROCS(0))
		if err != nil {
			b.Fatal(err)
		}
		for i, sum := range sums {
			if !sum.Reached() {
				b.Fatalf("%s: no endpoint reached", pkts[i])
			}
		}
	}
	b.ReportMetric(float64(len(pkts)), "packets/op")
}

// BenchmarkValidateIPTables checks the jump graph of a 10,000-Service dump
// (benchgen.Default) for what iptables-restore refuses; it runs on every
// analysis, so its cost is part of analyze's.
func BenchmarkValidateIPTables(b *testing.B) {
	d, _, _ := benchDump(b)
	b.ReportAllocs()
	for b.Loop() {
		if ps := trace.ValidateIPTables([]*iptables.Dump{d}); len(ps) != 0 {
			b.Fatalf("%d problems in a healthy dump: %v", len(ps), ps[0])
		}
	}
}
