package trace

import (
	"net/netip"
	"slices"

	"github.com/proxyscan/proxyscan/analyzer/model"
)

// This file says why a packet enters each hook of its path (the Hops of a
// Path): where it arrives, the routing decision, the loop back in on lo.
// Every engine uses these words.

// Hooks of a path's hops.
const (
	hookInput       = "INPUT"
	hookPostrouting = "POSTROUTING"
	hookIPVS        = "IPVS"
)

// arrivalWhy says where pkt enters the data plane.
func arrivalWhy(pkt Packet) string {
	switch pkt.From {
	case model.FromNode:
		return "sent by the node itself"
	case model.FromExternal:
		return "arrives from outside the node on " + pkt.InIface
	}
	return "arrives from a pod of the node on " + pkt.InIface
}

// localWhy says what makes a, a local address of dp, local.
func (dp *Dataplane) localWhy(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case a.IsLoopback():
		return "is a loopback address"
	case slices.Contains(dp.AssumedLocal, a) && dp.AssumedLocalWhy != "":
		return "is bound to kube-ipvs0 (assumed: " + dp.AssumedLocalWhy + ")"
	case slices.Contains(dp.AssumedLocal, a):
		return "is bound to kube-ipvs0 (assumed: no ip addr in the inputs)"
	case dp.Expected && slices.Contains(dp.Bound, a):
		return "is bound to kube-ipvs0 (the expected rules bind it)"
	case slices.Contains(dp.NodeAddrs, a):
		return "is an address of the node"
	case dp.isVirtualServer(a):
		return "is bound to kube-ipvs0"
	}
	return "is an address of the node"
}

// isVirtualServer reports whether a is the address of an IPVS virtual
// server of dp.
func (dp *Dataplane) isVirtualServer(a netip.Addr) bool {
	for _, d := range dp.IPVS {
		for _, s := range d.Services {
			if ip, ok := netip.AddrFromSlice(s.Address); ok && ip.Unmap() == a {
				return true
			}
		}
	}
	return false
}

// routeWhy says why the routing decision after PREROUTING sends a packet
// for dst (rewritten by DNAT when dnat) to INPUT or to FORWARD.
func (dp *Dataplane) routeWhy(dst netip.Addr, dnat bool) string {
	what := dst.String()
	if dnat {
		what += " (after DNAT)"
	}
	if dp.IsLocal(dst) {
		return "routing decision: " + what + " " + dp.localWhy(dst)
	}
	where := "out of the node"
	if dp.outIface(dst) == "" {
		where = "to a pod of the node"
	}
	return "routing decision: " + what + " is not an address of the node: forwarded " + where
}

// loopbackWhy says why a packet the node sent to dst comes back in.
func (dp *Dataplane) loopbackWhy(dst netip.Addr) string {
	return dst.String() + " " + dp.localWhy(dst) + ": the packet loops back in on lo"
}

// usualWhy says why a packet enters hook when nothing particular did it:
// after FORWARD or OUTPUT (to leave on out, "" for a pod's veth), or
// after the routing decision of a packet looping back in.
func usualWhy(hook, out string) string {
	switch hook {
	case hookPostrouting:
		if out == "" {
			return "the packet leaves toward a pod of the node"
		}
		return "the packet leaves on " + out
	case hookInput:
		return "the packet is delivered to the node"
	}
	return ""
}

// outIface guesses the interface a packet to dst leaves on: lo for a local
// address, "" (unknown) for an address in the node's pod range (a pod's
// veth), else the node's external interface.
func (dp *Dataplane) outIface(dst netip.Addr) string {
	if dp.IsLocal(dst) {
		return "lo"
	}
	for _, p := range dp.PodCIDRs {
		if p.Contains(dst) {
			return ""
		}
	}
	return defaultExternalIface
}
