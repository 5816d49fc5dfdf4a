package trace_test

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/google/nftables"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/trace"
	"github.com/proxyscan/proxyscan/internal/benchgen"
	"github.com/proxyscan/proxyscan/parsers/nft"
)

// benchNFT returns the data plane of benchgen's 10,000-service nftables
// node and the packets to every service port (ClusterIP from a pod,
// NodePort from outside).
func benchNFT(tb testing.TB) (*trace.Dataplane, []trace.Packet) {
	tb.Helper()
	var buf bytes.Buffer
	if err := benchgen.Default.NFTRuleset(&buf); err != nil {
		tb.Fatal(err)
	}
	rs, err := nft.ParseText("nft-ruleset.txt", buf.Bytes())
	if err != nil {
		tb.Fatal(err)
	}
	node := netip.MustParseAddr(benchgen.NodeIP)
	dp := &trace.Dataplane{Mode: model.ModeNFTables, NFT: []*nft.Ruleset{rs}, Local: []netip.Addr{node},
		PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.128.0.0/24")}}
	var pkts []trace.Packet
	for _, s := range rs.Table(nftables.TableFamilyIPv4, "kube-proxy").Set("service-ips").Elements {
		pkts = append(pkts, trace.Packet{Dst: netip.AddrPortFrom(netip.MustParseAddr(s.Key()[0]), 80), Proto: "tcp", From: model.FromPod})
	}
	for _, s := range rs.Table(nftables.TableFamilyIPv4, "kube-proxy").Set("service-nodeports").Elements {
		pkts = append(pkts, trace.Packet{Dst: netip.MustParseAddrPort(benchgen.NodeIP + ":" + s.Key()[1]), Proto: "tcp", From: model.FromExternal})
	}
	return dp, pkts
}

// BenchmarkTraceNFT traces every service port of a 10,000-service
// nftables ruleset (one op is the whole set of packets), with every step
// and as a summary (what analyze asks for). cpu-ms/op, the process's CPU
// time, varies less than ns/op on a busy machine.
func BenchmarkTraceNFT(b *testing.B) {
	dp, pkts := benchNFT(b)
	for _, c := range []struct {
		name string
		opts trace.Options
	}{{"steps", trace.Options{}}, {"summary", trace.Options{Summary: true}}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := benchgen.CPUTime()
			for b.Loop() {
				for _, p := range pkts {
					res, err := trace.Trace(dp, p, c.opts)
					if err != nil {
						b.Fatal(err)
					}
					if res.Paths[0].Verdict != trace.VerdictDNAT {
						b.Fatalf("%s: %s", p, res.Paths[0].Verdict)
					}
				}
			}
			b.ReportMetric(float64(len(pkts)), "packets/op")
			b.ReportMetric(float64((benchgen.CPUTime()-cpu0).Microseconds())/1e3/float64(b.N), "cpu-ms/op")
		})
	}
}

// BenchmarkSweepNFT is the sweep analyze's reachability pass makes over a
// 10,000-service nftables ruleset ([trace.Sweep] on every CPU): one op is
// every service port.
func BenchmarkSweepNFT(b *testing.B) {
	dp, pkts := benchNFT(b)
	benchSweep(b, func() *trace.Dataplane { return dp }, pkts)
}

// BenchmarkReadNFTAhead reads the tables of a 10,000-service nftables
// ruleset as trace.ReadNFTAhead does ahead of analyze's sweep (one op is
// the ruleset's reading, taken by a trace of one packet).
func BenchmarkReadNFTAhead(b *testing.B) {
	dp, pkts := benchNFT(b)
	b.ReportAllocs()
	for b.Loop() {
		rs := dp.NFT
		trace.ReadNFTAhead(rs)
		fresh := &trace.Dataplane{Mode: dp.Mode, NFT: rs, Local: dp.Local, PodCIDRs: dp.PodCIDRs}
		if _, err := trace.Trace(fresh, pkts[0], trace.Options{Summary: true}); err != nil {
			b.Fatal(err)
		}
	}
}
