package trace_test

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/proxier"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/analyzer/trace"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

func loadBundle(t testing.TB, name string) *model.Snapshot {
	t.Helper()
	snaps, err := load.Load([]string{filepath.Join("..", "..", "testdata", "bundles", name)}, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 1 {
		t.Fatalf("%s: %d snapshots, want 1", name, len(snaps))
	}
	return snaps[0]
}

// summary writes a result compactly: one block per path, one line per step.
func summary(res *trace.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "packet %s src %s in %q mode %s\n", res.Packet.Dst, res.Packet.Src, res.Packet.InIface, res.Mode)
	for _, w := range res.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	for i, p := range res.Paths {
		fmt.Fprintf(&b, "path %d: p=%.6f %s %s masq=%t", i+1, p.Probability, p.Verdict, p.Destination, p.Masquerade)
		if p.SNAT != "" {
			fmt.Fprintf(&b, " snat=%s", p.SNAT)
		}
		b.WriteString("\n")
		for _, c := range p.Conditions {
			fmt.Fprintf(&b, "  if %s\n", c)
		}
		for _, s := range p.Steps {
			fmt.Fprintf(&b, "  %s:%d %s %s", filepath.Base(s.File), s.Line, s.Table, s.Chain)
			if s.Note != "" {
				fmt.Fprintf(&b, " (%s)", s.Note)
			}
			if s.Warning != "" {
				fmt.Fprintf(&b, " WARNING %s", s.Warning)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

type goldenCase struct {
	name  string
	dst   string
	proto string
	from  model.Origin
	src   string
}

func runGolden(t *testing.T, bundle string, cases []goldenCase) {
	snap := loadBundle(t, bundle)
	dp := trace.FromSnapshot(resolve.Resolve(snap, resolve.Options{}))
	var ar txtar.Archive
	for _, c := range cases {
		pkt := trace.Packet{Dst: netip.MustParseAddrPort(c.dst), Proto: c.proto, From: c.from}
		if c.src != "" {
			pkt.Src = netip.MustParseAddr(c.src)
		}
		res, err := trace.Trace(dp, pkt, trace.Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		checkResult(t, c.name, res)
		ar.Files = append(ar.Files, txtar.File{Name: fmt.Sprintf("%s: %s %s from %s", c.name, c.proto, c.dst, c.from), Data: []byte(summary(res))})
	}
	got := txtar.Format(&ar)
	parsetest.GoldenFile(t, filepath.Join("testdata", bundle+".txtar"), got)
}

// checkResult holds for every trace: probabilities sum to 1, every path
// has a verdict and steps that name a file and line.
func checkResult(t *testing.T, name string, res *trace.Result) {
	t.Helper()
	sum := 0.0
	for _, p := range res.Paths {
		sum += p.Probability
		if p.Verdict == "" {
			t.Errorf("%s: path without verdict", name)
		}
		for _, s := range p.Steps {
			if s.File == "" || s.Line == 0 {
				t.Errorf("%s: step %+v has no position", name, s)
			}
		}
	}
	if len(res.Paths) == 0 || sum < 1-1e-9 || sum > 1+1e-9 {
		t.Errorf("%s: %d paths, probabilities sum to %v, want 1", name, len(res.Paths), sum)
	}
}

// healthyCases cover every service type and policy of the example
// bundles (the iptables and IPVS bundles are made from the same cluster).
var healthyCases = []goldenCase{
	{"clusterip-udp", "10.112.0.10:53", "udp", model.FromPod, ""},
	{"clusterip-udp-node", "10.112.0.10:53", "udp", model.FromNode, ""},
	{"clusterip-three-endpoints", "10.112.31.40:80", "tcp", model.FromPod, ""},
	{"clusterip-three-endpoints-node", "10.112.31.40:443", "tcp", model.FromNode, ""},
	{"clusterip-host-endpoint", "10.112.0.1:443", "tcp", model.FromPod, ""},
	{"clusterip-sctp", "10.112.88.30:3868", "sctp", model.FromPod, ""},
	{"session-affinity", "10.112.60.61:80", "tcp", model.FromPod, ""},
	{"itp-local", "10.112.70.2:80", "tcp", model.FromPod, ""},
	{"itp-local-no-local-endpoints", "10.112.70.9:80", "tcp", model.FromPod, ""},
	{"no-endpoints", "10.112.100.20:6379", "tcp", model.FromPod, ""},
	{"terminating-drain", "10.112.120.8:80", "tcp", model.FromPod, ""},
	{"terminating-rollout", "10.112.120.15:80", "tcp", model.FromPod, ""},
	{"nodeport", "172.20.8.12:30180", "tcp", model.FromExternal, ""},
	{"nodeport-udp", "172.20.8.12:30504", "udp", model.FromExternal, ""},
	{"nodeport-localhost", "127.0.0.1:30180", "tcp", model.FromNode, ""},
	{"nodeport-from-pod", "172.20.8.12:30554", "tcp", model.FromPod, ""},
	{"nodeport-etp-local", "172.20.8.12:31080", "tcp", model.FromExternal, ""},
	{"nodeport-etp-local-no-local-endpoints", "172.20.8.12:30943", "tcp", model.FromExternal, ""},
	{"health-check-nodeport", "172.20.8.12:32080", "tcp", model.FromExternal, ""},
	{"loadbalancer-allowed-source", "203.0.113.10:80", "tcp", model.FromExternal, "192.0.2.7"},
	{"loadbalancer-denied-source", "203.0.113.10:443", "tcp", model.FromExternal, "198.51.100.7"},
	{"loadbalancer-etp-local", "203.0.113.11:80", "tcp", model.FromExternal, ""},
	{"loadbalancer-etp-local-from-pod", "203.0.113.11:80", "tcp", model.FromPod, ""},
	{"loadbalancer-etp-local-from-node", "203.0.113.11:80", "tcp", model.FromNode, ""},
	{"external-ip", "172.20.8.200:80", "tcp", model.FromExternal, ""},
	{"external-ip-from-pod", "172.20.8.200:80", "tcp", model.FromPod, ""},
	{"not-a-service", "10.112.1.1:80", "tcp", model.FromPod, ""},
	{"ipv6-clusterip", "[fd00:112::5a04]:80", "tcp", model.FromPod, ""},
}

func TestGoldenIPTablesHealthy(t *testing.T) { runGolden(t, "iptables-healthy", healthyCases) }

func TestGoldenIPVSHealthy(t *testing.T) { runGolden(t, "ipvs-healthy", healthyCases) }

// TestHealthyAgreesWithExpected traces every case through the captured
// rules of the healthy bundles and through the rules the reference
// proxier generates for them: a healthy node takes every packet where
// kube-proxy would.
func TestHealthyAgreesWithExpected(t *testing.T) {
	for _, bundle := range []string{"iptables-healthy", "ipvs-healthy"} {
		snap := loadBundle(t, bundle)
		r := resolve.Resolve(snap, resolve.Options{})
		actual := trace.FromSnapshot(r)
		exp, err := proxier.Expect(r, proxier.Options{})
		if err != nil {
			t.Fatalf("%s: %v", bundle, err)
		}
		expected := trace.FromExpected(r, exp)
		for _, c := range healthyCases {
			pkt := trace.Packet{Dst: netip.MustParseAddrPort(c.dst), Proto: c.proto, From: c.from}
			if c.src != "" {
				pkt.Src = netip.MustParseAddr(c.src)
			}
			a, err := trace.Trace(actual, pkt, trace.Options{})
			if err != nil {
				t.Fatal(err)
			}
			e, err := trace.Trace(expected, pkt, trace.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if cmp := trace.Compare(a, e); cmp.Diverged {
				t.Errorf("%s %s: captured and expected traces diverge: %+v", bundle, c.name, cmp.Outcomes)
			}
		}
	}
}
