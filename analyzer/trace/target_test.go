package trace_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/trace"
)

func TestTarget(t *testing.T) {
	snap := loadBundle(t, "iptables-healthy")
	for _, tc := range []struct {
		dst, proto, want string
	}{
		{"10.112.0.10:53", "udp", "10.112.0.10:53 is the cluster IP of kube-system/kube-dns:dns, port 53/UDP"},
		{"10.112.0.10:54", "udp", "10.112.0.10 belongs to kube-system/kube-dns, which has no port 54/UDP: its ports are 53/TCP (kube-system/kube-dns:dns-tcp), 53/UDP"},
		{"10.112.9.9:80", "tcp", "10.112.9.9 is no Service's address in the inputs, and port 80/TCP no node port"},
		{"172.20.8.12:30180", "tcp", "port 30180/TCP is the node port of "},
	} {
		got := trace.Target(snap.Ports, trace.Packet{Dst: netip.MustParseAddrPort(tc.dst), Proto: tc.proto})
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("Target(%s %s) = %q, want %q...", tc.proto, tc.dst, got, tc.want)
		}
	}
	if got := trace.Target(nil, trace.Packet{Dst: netip.MustParseAddrPort("10.0.0.1:1")}); got != "" {
		t.Errorf("without Services: %q", got)
	}
}
