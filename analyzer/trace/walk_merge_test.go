package trace

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// TestCallsAreTheWalk checks that a summary walking every chain as a call
// (see call) ends as the full trace does, on chains that call the next
// twice (-j) or go to it (-g) on two branches, and on a loop.
func TestCallsAreTheWalk(t *testing.T) {
	defer func(n int) { callAfter = n }(callAfter)
	callAfter = -1
	shape := func(n int, op string) string {
		var b strings.Builder
		b.WriteString("*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n")
		for i := 0; i <= n; i++ {
			fmt.Fprintf(&b, ":C%d - [0:0]\n", i)
		}
		b.WriteString("-A FORWARD -j C0\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "-A C%d -m statistic --mode random --probability 0.25 %s C%d\n-A C%d -j MARK --or-mark 0x%x\n-A C%d %s C%d\n", i, op, i+1, i, 1<<i, i, op, i+1)
		}
		fmt.Fprintf(&b, "-A C%d -m mark --mark 0x3/0x3 -j DROP\n-A C%d -m statistic --mode random --probability 0.5 -j ACCEPT\n-A C%d -j REJECT\nCOMMIT\n*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n:SVC - [0:0]\n-A PREROUTING -j SVC\n-A SVC -m statistic --mode random --probability 0.5 -j DNAT --to-destination 10.0.0.1:80\n-A SVC -j DNAT --to-destination 10.0.0.2:80\nCOMMIT\n", n, n, n)
		return b.String()
	}
	loop := "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:A - [0:0]\n:B - [0:0]\n-A FORWARD -j A\n-A A -j B\n-A B -m statistic --mode random --probability 0.5 -j A\nCOMMIT\n"
	pkt := Packet{Src: netip.MustParseAddr("10.244.0.5"), Dst: netip.MustParseAddrPort("10.96.0.1:80"), Proto: "tcp", From: model.FromPod}
	for name, text := range map[string]string{"-j": shape(3, "-j"), "-g": shape(3, "-g"), "loop": loop} {
		d, err := iptables.Parse("iptables-save.txt", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		dp := &Dataplane{Mode: "iptables", IPTables: []*iptables.Dump{d}}
		sum, err := Trace(dp, pkt, Options{Summary: true})
		if err != nil {
			t.Fatal(err)
		}
		if name == "loop" {
			// The full trace forks at every round: it stops at the bound.
			e := Summarize(sum, nil).Ends
			if len(e) != 2 || e[0].Verdict() != VerdictDrop || !e[0].Warned || e[0].Probability != 0.5 {
				t.Errorf("loop: summary ends %+v, want a DROP with a warning", e)
			}
			continue
		}
		full, err := Trace(dp, pkt, Options{})
		if err != nil {
			t.Fatal(err)
		}
		// The full trace's paths differ by their steps: the summary's are
		// compared with their sums by end.
		type end struct {
			v      Verdict
			dst    netip.AddrPort
			warned bool
		}
		total := func(es []End) map[end]float64 {
			m := map[end]float64{}
			for _, e := range es {
				m[end{e.Verdict(), e.Destination, e.Warned}] += e.Probability
			}
			return m
		}
		a, b := total(Summarize(sum, nil).Ends), total(Summarize(full, nil).Ends)
		ok := len(a) == len(b) && len(a) > 2
		for k, p := range a {
			ok = ok && abs(p-b[k]) < 1e-9
		}
		if !ok {
			t.Errorf("%s: summary ends %v, full trace ends %v", name, a, b)
		}
	}
}
