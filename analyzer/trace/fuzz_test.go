package trace_test

import (
	"net/netip"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/trace"
	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// FuzzTrace walks packets through arbitrary iptables dumps: the walk ends,
// never panics, and its probabilities sum to 1.
func FuzzTrace(f *testing.F) {
	// Small seeds: the fuzzer minimises every new input, which is slow for
	// whole dumps.
	f.Add([]byte(`*nat
:PREROUTING ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-SVC-A - [0:0]
:KUBE-SEP-1 - [0:0]
:KUBE-SEP-2 - [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-POSTROUTING - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A POSTROUTING -j KUBE-POSTROUTING
-A KUBE-SERVICES -d 10.112.0.10/32 -p tcp -m tcp --dport 53 -j KUBE-SVC-A
-A KUBE-SERVICES -m addrtype --dst-type LOCAL -j RETURN
-A KUBE-SVC-A ! -s 10.88.0.0/16 -j KUBE-MARK-MASQ
-A KUBE-SVC-A -m recent --rcheck --seconds 10 --reap --name KUBE-SEP-1 --mask 255.255.255.255 --rsource -j KUBE-SEP-1
-A KUBE-SVC-A -m statistic --mode random --probability 0.50000000000 -j KUBE-SEP-1
-A KUBE-SVC-A -j KUBE-SEP-2
-A KUBE-SEP-1 -p tcp -m recent --set --name KUBE-SEP-1 --mask 255.255.255.255 --rsource -m tcp -j DNAT --to-destination 10.88.1.4:53
-A KUBE-SEP-2 -p tcp -m tcp -j DNAT --to-destination 10.88.2.3:53
-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MASQUERADE --random-fully
COMMIT
*filter
:FORWARD ACCEPT [0:0]
-A FORWARD -m conntrack --ctstate INVALID -j DROP
-A FORWARD -m set --match-set KUBE-CLUSTER-IP dst,dst -m multiport --dports 1:100 -j ACCEPT
COMMIT
`), "10.112.0.10:53", uint8(0))
	f.Add([]byte("*filter\n:FORWARD DROP [0:0]\n:X - [0:0]\n-A FORWARD -g X\n-A X -j X\n-A X -m statistic --mode nth --every 3 --packet 0 -j RETURN\nCOMMIT\n"), "10.0.0.1:80", uint8(1))
	f.Add([]byte("*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -j DNAT --to-destination [fd00::1]:80-90\n-A PREROUTING -j DNAT --to-destination 1.2.3.4-1.2.3.9\nCOMMIT\n"), "[fd00::5]:80", uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, dst string, from uint8) {
		d, err := iptables.Parse("fuzz.rules", data)
		if err != nil {
			return
		}
		ap, err := netip.ParseAddrPort(dst)
		if err != nil {
			return
		}
		origins := []model.Origin{model.FromPod, model.FromNode, model.FromExternal}
		dp := &trace.Dataplane{Mode: "iptables", IPTables: []*iptables.Dump{d}, Local: testLocal}
		res, err := trace.Trace(dp, trace.Packet{Dst: ap, Proto: "tcp", From: origins[int(from)%3]}, trace.Options{MaxPaths: 64, MaxSteps: 500})
		if err != nil {
			return
		}
		sum := 0.0
		for _, p := range res.Paths {
			sum += p.Probability
		}
		if len(res.Paths) == 0 || sum < 1-1e-6 || sum > 1+1e-6 {
			t.Fatalf("%d paths, probabilities sum to %v", len(res.Paths), sum)
		}
	})
}
