package trace_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/analyzer/trace"
)

// TestExternalMasquerade: a packet from outside the node to a node port,
// load balancer IP or external IP of a Service of externalTrafficPolicy
// Cluster shows, in every mode, the step that sets the masquerade mark
// (its mark before and after) and the step that masquerades it; one to a
// Service of policy Local is not masqueraded and its last step says why.
func TestExternalMasquerade(t *testing.T) {
	for _, bundle := range []string{"iptables-healthy", "ipvs-healthy", "nftables-healthy"} {
		dp := trace.FromSnapshot(resolve.Resolve(loadBundle(t, bundle), resolve.Options{}))
		for _, tc := range []struct {
			name, dst, src string
			masq           bool
		}{
			{"nodeport", "172.20.8.12:30180", "", true},
			{"loadbalancer", "203.0.113.10:80", "192.0.2.7", true},
			{"external-ip", "172.20.8.200:80", "", true},
			{"nodeport-etp-local", "172.20.8.12:31080", "", false},
			{"loadbalancer-etp-local", "203.0.113.11:80", "", false},
		} {
			t.Run(bundle+"/"+tc.name, func(t *testing.T) {
				pkt := trace.Packet{Dst: netip.MustParseAddrPort(tc.dst), Proto: "tcp", From: model.FromExternal}
				if tc.src != "" {
					pkt.Src = netip.MustParseAddr(tc.src)
				}
				res, err := trace.Trace(dp, pkt, trace.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Paths) == 0 {
					t.Fatal("no path")
				}
				for i, p := range res.Paths {
					if p.Verdict != trace.VerdictDNAT {
						t.Fatalf("path %d: verdict %s, want DNAT", i+1, p.Verdict)
					}
					if p.Masquerade != tc.masq {
						t.Errorf("path %d: masquerade %t, want %t", i+1, p.Masquerade, tc.masq)
					}
					var notes []string
					for _, s := range p.Steps {
						notes = append(notes, s.Note)
					}
					all := strings.Join(notes, "\n")
					marked := strings.Contains(all, "mark 0x0 -> 0x4000")
					masqueraded := strings.Contains(all, "masquerade: source NAT to the address of the outgoing interface")
					if marked != tc.masq || masqueraded != tc.masq {
						t.Errorf("path %d: mark set noted %t, masquerade noted %t, want %t:\n%s", i+1, marked, masqueraded, tc.masq, all)
					}
					why := strings.Contains(notes[len(notes)-1], "not masqueraded: no rule masqueraded the packet (it leaves with mark 0x0), so it keeps the client's source address "+res.Packet.Src.String())
					if why == tc.masq {
						t.Errorf("path %d: why not masqueraded noted %t, want %t:\n%s", i+1, why, !tc.masq, all)
					}
				}
			})
		}
	}
}
