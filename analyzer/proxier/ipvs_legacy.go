package proxier

import "github.com/proxyscan/proxyscan/analyzer/view"

// The IPVS layouts of kube-proxy 1.25 to 1.29, where they differ from
// 1.30's (pkg/proxy/ipvs/proxier.go of each release, syncProxyRules and
// writeIptablesRules). Each constant is the first release of a change;
// the older releases write the rules without it.
const (
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

// ipvsChainAbsent reports the chains the release does not write:
// KUBE-IPVS-OUT-FILTER before 1.29, KUBE-IPVS-FILTER before 1.26.
func ipvsChainAbsent(minor int, chain string) bool {
	switch chain {
	case ipvsOutFilterChain:
		return minor < ipvsMinorOutFilter
	case ipvsFilterChain:
		return minor < ipvsMinorIPVSFilter
	}
	return false
}

// ipvsChainsOf returns ipvsChains as the release writes them.
func ipvsChainsOf(minor int) []struct{ table, chain string } {
	var out []struct{ table, chain string }
	for _, c := range ipvsChains {
		if !ipvsChainAbsent(minor, c.chain) {
			out = append(out, c)
		}
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
