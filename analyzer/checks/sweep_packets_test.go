package checks

import (
	"net/netip"
	"testing"
	"unsafe"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/proxier"
	"github.com/proxyscan/proxyscan/analyzer/trace"
)

// TestSweepPackets checks that the packets a sweep's list keeps as keys
// come back as they were listed, those without a key (a source, an
// interface, a zone, an unknown protocol) included, in their places.
func TestSweepPackets(t *testing.T) {
	ap := netip.MustParseAddrPort
	pkts := []trace.Packet{
		{Dst: ap("10.0.0.1:80"), Proto: "tcp", From: model.FromPod},
		{Dst: ap("10.0.0.1:80"), Proto: "tcp", From: model.FromNode},
		{Dst: ap("[fd00::1]:53"), Proto: "udp", From: model.FromExternal},
		{Dst: ap("[::ffff:10.0.0.2]:9"), Proto: "sctp", From: model.FromPod},
		{Dst: ap("10.0.0.3:443"), Proto: "tcp", From: model.FromExternal, Src: netip.MustParseAddr("203.0.113.7")},
		{Dst: ap("10.0.0.4:443"), Proto: "tcp", From: model.FromExternal, InIface: "eth1"},
		{Dst: ap("[fe80::1%eth0]:80"), Proto: "tcp", From: model.FromPod},
		{Dst: ap("10.0.0.5:1"), Proto: "icmp", From: model.FromPod},
		{Dst: ap("0.0.0.0:0"), Proto: "udp", From: model.FromNode},
	}
	var l sweepPackets
	for _, pkt := range pkts {
		l.add(pkt)
	}
	if len(l.keys) != len(pkts) {
		t.Fatalf("%d packets listed, want %d", len(l.keys), len(pkts))
	}
	for i, want := range pkts {
		if got := l.packet(i); got != want {
			t.Errorf("packet %d: %+v, want %+v", i, got, want)
		}
	}
	if len(l.other) != 4 {
		t.Errorf("%d packets kept whole, want 4", len(l.other))
	}
	if n := unsafe.Sizeof(pktKey{}); n > 24 {
		t.Errorf("a packet's key takes %d bytes, want at most 24", n)
	}
}

// TestExpectSize guards the room of what the checks expect of a service
// port, made for every one of the node's (10,000 on the generated node)
// as the sweep's packets are listed: a Selection of 200 bytes, an Expect
// of 224 (a size class of the allocator).
func TestExpectSize(t *testing.T) {
	if n := unsafe.Sizeof(proxier.Route{}); n > 32 {
		t.Errorf("a Route takes %d bytes, want at most 32", n)
	}
	if n := unsafe.Sizeof(proxier.Selection{}); n > 200 {
		t.Errorf("a Selection takes %d bytes, want at most 200", n)
	}
	if n := unsafe.Sizeof(Expect{}); n > 224 {
		t.Errorf("an Expect takes %d bytes, want at most 224", n)
	}
}
