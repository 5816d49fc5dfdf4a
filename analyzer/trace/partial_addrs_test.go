package trace_test

import (
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checktest"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/analyzer/trace"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestPartialAddrsAssumeBound: an ip addr listing of other interfaces than
// kube-ipvs0 (ip addr show eth0) does not show the bindings of the IPVS
// virtual servers: a packet to a cluster IP is taken to IPVS as bound,
// the assumption saying why, not forwarded out of the node.
func TestPartialAddrsAssumeBound(t *testing.T) {
	s := checktest.Load(t, filepath.Join(parsetest.Root(t), "testdata", "partial", "ip-addr-show-eth0.txtar"))
	snaps, err := load.Load([]string{s.Dir}, s.Options)
	if err != nil {
		t.Fatal(err)
	}
	dp := trace.FromSnapshot(resolve.Resolve(snaps[0], resolve.Options{}))
	res, err := trace.Trace(dp, trace.Packet{Dst: netip.MustParseAddrPort("10.96.0.10:53"), Proto: "udp", From: model.FromPod}, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Paths {
		if p.Verdict != trace.VerdictDNAT {
			t.Errorf("path %s, want DNAT to an endpoint:\n%s", p.Verdict, hooksOf(p))
		}
		if h := hooksOf(p); !strings.Contains(h, "10.96.0.10 is bound to kube-ipvs0 (assumed: ip addr does not show kube-ipvs0)") ||
			strings.Contains(h, "forwarded out of the node") {
			t.Errorf("hops do not take the address as bound by assumption:\n%s", h)
		}
	}
	if len(res.Assumed) == 0 || !strings.HasPrefix(res.Assumed[0], "ip addr does not show kube-ipvs0 (it is partial: the command line above it (`ip addr show eth0`)") {
		t.Errorf("assumed %q", res.Assumed)
	}
}
