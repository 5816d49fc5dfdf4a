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

// TestSweptIndex checks that the index of a sweep's packets finds each
// listed packet at its place, and no other packet, those without a key
// included.
func TestSweptIndex(t *testing.T) {
	var l sweepPackets
	var want []trace.Packet
	for i := range 300 {
		pkt := trace.Packet{Dst: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, byte(i / 7), byte(i)}), uint16(80+i%3)),
			Proto: []string{"tcp", "udp", "sctp"}[i%3], From: model.Origins[i%2]}
		if i%50 == 0 {
			pkt.Src = netip.MustParseAddr("203.0.113.1")
		}
		if i%9 == 0 {
			pkt.Dst = netip.AddrPortFrom(netip.MustParseAddr("fd00::1").Next(), uint16(i))
		}
		l.add(pkt)
		want = append(want, pkt)
	}
	const base = 17
	x := newSweptIndex(l.keys, base)
	for i, pkt := range want {
		k, ok := keyOf(pkt)
		if !ok {
			continue
		}
		if got, ok := x.lookup(k); !ok || got != base+int32(i) {
			t.Errorf("packet %d (%v): place %d, %v; want %d", i, pkt, got, ok, base+i)
		}
		k.port++
		if got, ok := x.lookup(k); ok {
			if k2, _ := keyOf(want[got-base]); k2 != k {
				t.Errorf("a packet not listed found at %d", got)
			}
		}
	}
	if _, ok := x.lookup(pktKey{}); ok {
		t.Error("the zero key found")
	}
	if _, ok := x.lookup(pktKey{port: 1, proto: 1, from: 1, dst4: true}); ok {
		t.Error("a packet not listed found")
	}
}
