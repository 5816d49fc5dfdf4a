package proxier

import (
	"net/netip"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
)

// The IPVS layouts of kube-proxy 1.21 to 1.29, where they differ from
// 1.30's (pkg/proxy/ipvs/proxier.go of each release, syncProxyRules and
// writeIptablesRules), each named by a behaviour of resolve's table:
// IPVSNodePortsSkipLoopback (1.22), IPVSSCTPLocalFirst and
// ForwardConntrackOneRule (1.23), FilterTableFirewall (1.25, the
// KUBE-PROXY-FIREWALL chain jumped to from INPUT and FORWARD, to
// KUBE-SOURCE-RANGES-FIREWALL, which ends with DROP; before, KUBE-LOAD-BALANCER
// jumps to the nat chain KUBE-FIREWALL, ipvsNATFirewallChain124, which
// returns for the allowed sources and ends with a jump to kubelet's
// KUBE-MARK-DROP, ensured, not written), IPVSFilterChain (1.26),
// IPVSMaglevPortFlag (1.27), IPVSNodeAddressesUnbound (1.28),
// IPVSOutFilterChain (1.29) and IPVSExternalIPLocalReturn (1.30).

// ipvsNATFirewallChain124 is the nat chain of source ranges up to 1.24.
const ipvsNATFirewallChain124 = "KUBE-FIREWALL"

// ipvsSetWithIPTablesChain124 is ipsetWithIptablesChain of v1.24, in its
// order: the load balancer firewall sets in nat, before the Local RETURN
// of KUBE-LOAD-BALANCER.
var ipvsSetWithIPTablesChain124 = []struct {
	set, table, from, to, match, proto string
}{
	{kpnames.SetLoopBack, "nat", kpnames.KubePostrouting, "MASQUERADE", "dst,dst,src", ""},
	{kpnames.SetLoadBalancer, "nat", kpnames.KubeServices, kpnames.IPVSLoadBalancer, "dst,dst", ""},
	{kpnames.SetLoadBalancerFW, "nat", kpnames.IPVSLoadBalancer, ipvsNATFirewallChain124, "dst,dst", ""},
	{kpnames.SetLoadBalancerSrcCIDR, "nat", ipvsNATFirewallChain124, "RETURN", "dst,dst,src", ""},
	{kpnames.SetLoadBalancerSrcIP, "nat", ipvsNATFirewallChain124, "RETURN", "dst,dst,src", ""},
	{kpnames.SetLoadBalancerLocal, "nat", kpnames.IPVSLoadBalancer, "RETURN", "dst,dst", ""},
	{kpnames.SetNodePortLocalTCP, "nat", kpnames.IPVSNodePort, "RETURN", "dst", "tcp"},
	{kpnames.SetNodePortTCP, "nat", kpnames.IPVSNodePort, kpnames.KubeMarkMasq, "dst", "tcp"},
	{kpnames.SetNodePortLocalUDP, "nat", kpnames.IPVSNodePort, "RETURN", "dst", "udp"},
	{kpnames.SetNodePortUDP, "nat", kpnames.IPVSNodePort, kpnames.KubeMarkMasq, "dst", "udp"},
	{kpnames.SetNodePortLocalSCTP, "nat", kpnames.IPVSNodePort, "RETURN", "dst,dst", "sctp"},
	{kpnames.SetNodePortSCTP, "nat", kpnames.IPVSNodePort, kpnames.KubeMarkMasq, "dst,dst", "sctp"},
}

// ipvsSetRules returns ipsetWithIptablesChain of the release.
func ipvsSetRules(r *resolve.Resolution) []struct{ set, table, from, to, match, proto string } {
	switch {
	case !r.Has(resolve.IPVSSCTPLocalFirst):
		out := append([]struct{ set, table, from, to, match, proto string }(nil), ipvsSetWithIPTablesChain124...)
		for i := 0; i+1 < len(out); i++ {
			if out[i].set == kpnames.SetNodePortLocalSCTP && out[i+1].set == kpnames.SetNodePortSCTP {
				out[i], out[i+1] = out[i+1], out[i]
			}
		}
		return out
	case !r.Has(resolve.FilterTableFirewall):
		return ipvsSetWithIPTablesChain124
	}
	return ipvsSetWithIPTablesChain
}

// ipvsChainBehaviours are the behaviours that bring the chains of later
// releases: KUBE-PROXY-FIREWALL and KUBE-SOURCE-RANGES-FIREWALL,
// KUBE-IPVS-FILTER, KUBE-IPVS-OUT-FILTER.
var ipvsChainBehaviours = map[string]resolve.Behaviour{
	kpnames.KubeProxyFirewall:        resolve.FilterTableFirewall,
	kpnames.IPVSSourceRangesFirewall: resolve.FilterTableFirewall,
	kpnames.IPVSFilter:               resolve.IPVSFilterChain,
	kpnames.IPVSOutFilter:            resolve.IPVSOutFilterChain,
}

// ipvsChainAbsent reports the chains the release does not write.
func ipvsChainAbsent(r *resolve.Resolution, chain string) bool {
	b, ok := ipvsChainBehaviours[chain]
	return ok && !r.Has(b)
}

// ipvsChainsOf returns ipvsChains as the release writes them (before
// FilterTableFirewall with the nat KUBE-FIREWALL).
func ipvsChainsOf(r *resolve.Resolution) []struct{ table, chain string } {
	var out []struct{ table, chain string }
	for _, c := range ipvsChains {
		if !ipvsChainAbsent(r, c.chain) {
			out = append(out, c)
		}
	}
	if !r.Has(resolve.FilterTableFirewall) {
		out = append(out, struct{ table, chain string }{"nat", ipvsNATFirewallChain124})
	}
	return out
}

// ipvsJumpChainsOf returns ipvsJumpChains as the release writes them
// (without the jumps to the chains it does not write).
func ipvsJumpChainsOf(r *resolve.Resolution) []struct{ table, from, to, comment string } {
	var out []struct{ table, from, to, comment string }
	for _, j := range ipvsJumpChains {
		if !ipvsChainAbsent(r, j.to) {
			out = append(out, j)
		}
	}
	return out
}

// ipvsFilterReturnSets returns the sets KUBE-IPVS-FILTER returns for (dst,dst)
// before the health check node ports, in the release's order.
func ipvsFilterReturnSets(r *resolve.Resolution) []string {
	sets := []string{kpnames.SetLoadBalancer, kpnames.SetClusterIP, kpnames.SetExternalIP}
	if r.Has(resolve.IPVSExternalIPLocalReturn) {
		sets = append(sets, kpnames.SetExternalIPLocal)
	}
	return sets
}

// loopbackAddrs returns the loopback addresses of family f the node has,
// as the local routing table lists them: those of its loopback
// interfaces when the inputs hold them, else 127.0.0.1 or ::1.
func loopbackAddrs(in *input, f model.Family) []netip.Addr {
	var out []netip.Addr
	if a := in.snap.Addrs; a != nil {
		for _, i := range a.Interfaces {
			if !i.IsLoopback() {
				continue
			}
			for _, x := range i.Addresses {
				if model.FamilyOf(x.Local) == f {
					out = append(out, x.Local)
				}
			}
		}
	}
	if len(out) == 0 {
		lo := netip.MustParseAddr("127.0.0.1")
		if f == model.IPv6 {
			lo = netip.IPv6Loopback()
		}
		out = append(out, lo)
	}
	return out
}
