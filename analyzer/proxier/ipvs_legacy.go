package proxier

import (
	"net/netip"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/view"
)

// The IPVS layouts of kube-proxy 1.21 to 1.29, where they differ from
// 1.30's (pkg/proxy/ipvs/proxier.go of each release, syncProxyRules and
// writeIptablesRules). Each constant is the first release of a change;
// the older releases write the rules without it.
const (
	// ipvsMinorNoLoopbackNodePorts: 1.22 leaves the loopback addresses out
	// of the node IPs NodePort virtual servers are created on; 1.21 takes
	// every local address but kube-ipvs0's (the local routing table), the
	// loopback ones included. 1.22 also adds the ProxyTerminatingEndpoints
	// gate (ipvsLegacyEndpoints).
	ipvsMinorNoLoopbackNodePorts = 22
	// ipvsMinorSCTPLocalFirst: 1.23 writes the KUBE-NODE-PORT RETURN for
	// KUBE-NODE-PORT-LOCAL-SCTP before the KUBE-MARK-MASQ jump for
	// KUBE-NODE-PORT-SCTP, as for TCP and UDP; the order was the reverse
	// before.
	ipvsMinorSCTPLocalFirst = 23
	// ipvsMinorForwardConntrack: 1.23 accepts RELATED,ESTABLISHED traffic
	// in KUBE-FORWARD with one "kubernetes forwarding conntrack rule";
	// 1.22 writes the same match twice, as the "pod source" and "pod
	// destination" rules.
	ipvsMinorForwardConntrack = 23
	// ipvsMinorProxyFirewall: 1.25 checks LoadBalancer source ranges in
	// the filter table (KUBE-PROXY-FIREWALL, jumped to from INPUT and
	// FORWARD, to KUBE-SOURCE-RANGES-FIREWALL, which ends with DROP).
	// Before, KUBE-LOAD-BALANCER jumps to the nat chain KUBE-FIREWALL
	// (ipvsNATFirewallChain124), which returns for the allowed sources and
	// ends with a jump to kubelet's KUBE-MARK-DROP (ensured, not written).
	ipvsMinorProxyFirewall = 25
	// ipvsMinorIPVSFilter: 1.26 adds the KUBE-IPVS-FILTER chain, jumped to
	// from INPUT, which rejects new connections to the addresses on
	// kube-ipvs0 (the KUBE-IPVS-IPS set, new too) but to the service
	// ports, and the KUBE-SERVICES RETURN for loopback sources; the
	// ServiceInternalTrafficPolicy gate, GA, is no longer read.
	ipvsMinorIPVSFilter = 26
	// ipvsMinorMaglevPort: 1.27 gives the virtual servers of the mh
	// scheduler the flag FlagSourceHash (mh-port, IP_VS_SVC_F_SCHED2).
	ipvsMinorMaglevPort = 27
	// ipvsMinorNodeAddrUnbound: 1.28 no longer binds to kube-ipvs0 the
	// external and load balancer IPs that are addresses of the node
	// (shouldBind), and KUBE-IPVS-FILTER returns for the health check node
	// ports (KUBE-HEALTH-CHECK-NODE-PORT) before its REJECT.
	ipvsMinorNodeAddrUnbound = 28
	// ipvsMinorOutFilter: 1.29 adds the KUBE-IPVS-OUT-FILTER chain, jumped
	// to from OUTPUT, which drops the node's own traffic to load balancer
	// IPs whose source ranges leave the node out.
	ipvsMinorOutFilter = 29
	// ipvsMinorExternalIPLocalFilter: 1.30 adds the KUBE-EXTERNAL-IP-LOCAL
	// RETURN to KUBE-IPVS-FILTER (external IPs of Local services were
	// rejected before).
	ipvsMinorExternalIPLocalFilter = 30
)

// ipvsNATFirewallChain124 is the nat chain of source ranges up to 1.24.
const ipvsNATFirewallChain124 = "KUBE-FIREWALL"

// ipvsSetWithIPTablesChain124 is ipsetWithIptablesChain of v1.24, in its
// order: the load balancer firewall sets in nat, before the Local RETURN
// of KUBE-LOAD-BALANCER.
var ipvsSetWithIPTablesChain124 = []struct {
	set, table, from, to, match, proto string
}{
	{view.SetLoopBack, "nat", kubePostroutingChain, "MASQUERADE", "dst,dst,src", ""},
	{view.SetLoadBalancer, "nat", kubeServicesChain, ipvsLoadBalancerChain, "dst,dst", ""},
	{view.SetLoadBalancerFW, "nat", ipvsLoadBalancerChain, ipvsNATFirewallChain124, "dst,dst", ""},
	{view.SetLoadBalancerSrcCIDR, "nat", ipvsNATFirewallChain124, "RETURN", "dst,dst,src", ""},
	{view.SetLoadBalancerSrcIP, "nat", ipvsNATFirewallChain124, "RETURN", "dst,dst,src", ""},
	{view.SetLoadBalancerLocal, "nat", ipvsLoadBalancerChain, "RETURN", "dst,dst", ""},
	{view.SetNodePortLocalTCP, "nat", ipvsNodePortChain, "RETURN", "dst", "tcp"},
	{view.SetNodePortTCP, "nat", ipvsNodePortChain, kubeMarkMasqChain, "dst", "tcp"},
	{view.SetNodePortLocalUDP, "nat", ipvsNodePortChain, "RETURN", "dst", "udp"},
	{view.SetNodePortUDP, "nat", ipvsNodePortChain, kubeMarkMasqChain, "dst", "udp"},
	{view.SetNodePortLocalSCTP, "nat", ipvsNodePortChain, "RETURN", "dst,dst", "sctp"},
	{view.SetNodePortSCTP, "nat", ipvsNodePortChain, kubeMarkMasqChain, "dst,dst", "sctp"},
}

// ipvsSetRules returns ipsetWithIptablesChain of the release.
func ipvsSetRules(minor int) []struct{ set, table, from, to, match, proto string } {
	switch {
	case minor < ipvsMinorSCTPLocalFirst:
		out := append([]struct{ set, table, from, to, match, proto string }(nil), ipvsSetWithIPTablesChain124...)
		for i := 0; i+1 < len(out); i++ {
			if out[i].set == view.SetNodePortLocalSCTP && out[i+1].set == view.SetNodePortSCTP {
				out[i], out[i+1] = out[i+1], out[i]
			}
		}
		return out
	case minor < ipvsMinorProxyFirewall:
		return ipvsSetWithIPTablesChain124
	}
	return ipvsSetWithIPTablesChain
}

// ipvsChainAbsent reports the chains the release does not write:
// KUBE-IPVS-OUT-FILTER before 1.29, KUBE-IPVS-FILTER before 1.26,
// KUBE-PROXY-FIREWALL and KUBE-SOURCE-RANGES-FIREWALL before 1.25.
func ipvsChainAbsent(minor int, chain string) bool {
	switch chain {
	case kubeProxyFirewallChain, ipvsSourceRangesFirewall:
		return minor < ipvsMinorProxyFirewall
	case ipvsOutFilterChain:
		return minor < ipvsMinorOutFilter
	case ipvsFilterChain:
		return minor < ipvsMinorIPVSFilter
	}
	return false
}

// ipvsChainsOf returns ipvsChains as the release writes them (up to
// 1.24 with the nat KUBE-FIREWALL).
func ipvsChainsOf(minor int) []struct{ table, chain string } {
	var out []struct{ table, chain string }
	for _, c := range ipvsChains {
		if !ipvsChainAbsent(minor, c.chain) {
			out = append(out, c)
		}
	}
	if minor < ipvsMinorProxyFirewall {
		out = append(out, struct{ table, chain string }{"nat", ipvsNATFirewallChain124})
	}
	return out
}

// ipvsJumpChainsOf returns ipvsJumpChains as the release writes them
// (without the jumps to the chains it does not write).
func ipvsJumpChainsOf(minor int) []struct{ table, from, to, comment string } {
	var out []struct{ table, from, to, comment string }
	for _, j := range ipvsJumpChains {
		if !ipvsChainAbsent(minor, j.to) {
			out = append(out, j)
		}
	}
	return out
}

// ipvsFilterReturnSets returns the sets KUBE-IPVS-FILTER returns for (dst,dst)
// before the health check node ports, in the release's order.
func ipvsFilterReturnSets(minor int) []string {
	sets := []string{view.SetLoadBalancer, view.SetClusterIP, view.SetExternalIP}
	if minor >= ipvsMinorExternalIPLocalFilter {
		sets = append(sets, view.SetExternalIPLocal)
	}
	return sets
}

// ipvsMinorCategorize: 1.24 selects the real servers with
// CategorizeEndpoints, falling back to the cluster endpoints for a Local
// policy without local ones (#97081); see ipvsLegacyEndpoints before.
const ipvsMinorCategorize = 24

// ipvsLegacyEndpoints mirrors syncEndpoint of 1.21-1.23: the endpoints of
// the family filtered by FilterEndpoints (filterEndpointsLegacy), then
// the ready ones, or with onlyLocal the local ready ones (none is none: no
// fallback), the local serving terminating ones when there are none and
// the ProxyTerminatingEndpoints gate is on.
func (p *ipvsProxier) ipvsLegacyEndpoints(sp *model.ServicePort, onlyLocal bool) []*model.Endpoint {
	var eps []*model.Endpoint
	for _, e := range sp.Endpoints {
		if e.Family() == p.family {
			eps = append(eps, e)
		}
	}
	eps = p.in.filterEndpointsLegacy(p.minor, sp, eps)
	if !onlyLocal {
		return filterEndpoints(eps, func(e *model.Endpoint) bool { return e.Ready })
	}
	out := filterEndpoints(eps, func(e *model.Endpoint) bool { return e.Local && e.Ready })
	if len(out) == 0 && p.minor >= 22 && p.in.gate("ProxyTerminatingEndpoints", false) {
		out = filterEndpoints(eps, func(e *model.Endpoint) bool { return e.Local && e.Serving && e.Terminating })
	}
	return out
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
