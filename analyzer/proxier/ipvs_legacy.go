package proxier

import "github.com/proxyscan/proxyscan/analyzer/view"

// The IPVS layouts of kube-proxy 1.26 to 1.29, where they differ from
// 1.30's (pkg/proxy/ipvs/proxier.go of each release, syncProxyRules and
// writeIptablesRules). Each constant is the first release of a change;
// the older releases write the rules without it.
const (
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

// ipvsChainsOf returns ipvsChains as the release writes them (no
// KUBE-IPVS-OUT-FILTER before 1.29).
func ipvsChainsOf(minor int) []struct{ table, chain string } {
	if minor >= ipvsMinorOutFilter {
		return ipvsChains
	}
	var out []struct{ table, chain string }
	for _, c := range ipvsChains {
		if c.chain != ipvsOutFilterChain {
			out = append(out, c)
		}
	}
	return out
}

// ipvsJumpChainsOf returns ipvsJumpChains as the release writes them (no
// OUTPUT jump to KUBE-IPVS-OUT-FILTER before 1.29).
func ipvsJumpChainsOf(minor int) []struct{ table, from, to, comment string } {
	if minor >= ipvsMinorOutFilter {
		return ipvsJumpChains
	}
	var out []struct{ table, from, to, comment string }
	for _, j := range ipvsJumpChains {
		if j.to != ipvsOutFilterChain {
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
