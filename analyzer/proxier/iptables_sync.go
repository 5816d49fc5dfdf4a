package proxier

import (
	"net/netip"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
)

// syncProxyRules writes what one full sync of kube-proxy 1.24-1.37 writes,
// the releases with PolicyChains.
//
// It follows pkg/proxy/iptables/proxier.go syncProxyRules of v1.37.2, with
// the differences of earlier releases, each a behaviour read where it
// applies: FilterTableFirewall (1.25; 1.24 marks what it drops with
// KUBE-MARK-DROP in nat, see syncServicePort), LocalhostNodePortsOption
// (1.26), NodePortsWithoutNodeAddress, FirewallChainTailComment and
// KubeletFirewallCopy (1.27), ConntrackTCPBeLiberal (1.29) and
// NFAcctCounters (1.31).
func (p *iptablesProxier) syncProxyRules() {
	chains := []string{kpnames.KubeServices, kpnames.KubeExternalServices, kpnames.KubeForward, kpnames.KubeNodePorts}
	if p.in.res.Has(resolve.FilterTableFirewall) {
		chains = append(chains, kpnames.KubeProxyFirewall)
	}
	for _, c := range chains {
		p.filter.declare(c)
	}
	p.writeStaticRules()
	p.writeKubeletFirewall()

	p.syncServicePorts((*iptablesProxier).syncServicePort)

	p.writeNodePortsTail()
	p.writeForwardRules()
}

// syncServicePort writes the rules of one service port: the body of
// syncProxyRules' loop over svcPortMap (v1.24-v1.37). Before
// FilterTableFirewall (1.24) kube-proxy drops nothing in filter: a Service
// with endpoints but no local ones is sent to its policy chains, the
// local one of which marks the traffic with KUBE-MARK-DROP, and each load
// balancer IP with source ranges gets the KUBE-FW rules of its own, ending
// with KUBE-MARK-DROP.
func (p *iptablesProxier) syncServicePort(sp *model.ServicePort) {
	markDrop := !p.in.res.Has(resolve.FilterTableFirewall)
	f := p.family
	protocol := sp.ProtoLower()
	name := sp.String()
	clusterIP, _ := sp.ClusterIP(f)
	externalIPs := sp.ExternalIPsOf(f)
	lbIPs := sp.LoadBalancerVIPsOf(f)
	sourceRanges := sp.SourceRangesOf(f)
	svcPort := port(sp.Port)

	sel := p.in.selection(model.ModeIPTables, sp, f)
	clusterEndpoints, localEndpoints, allReachable, hasEndpoints := sel.Cluster, sel.Local, sel.InUse, sel.HasEndpoints

	clusterPolicyChain := svcChain(sp)
	usesClusterPolicyChain := len(clusterEndpoints) > 0 && sel.UsesCluster
	localPolicyChain := svlChain(sp)
	usesLocalPolicyChain := len(localEndpoints) > 0 && sel.UsesLocal

	policyChain := func(pol Policy) string {
		if pol == PolicyLocal {
			return localPolicyChain
		}
		return clusterPolicyChain
	}
	internalPolicyChain := policyChain(sel.Internal.Policy)
	hasInternalEndpoints := sel.Internal.Verdict == Forward
	internalTrafficChain := internalPolicyChain

	externalPolicyChain := policyChain(sel.External.Policy)
	hasExternalEndpoints := sel.External.Verdict == Forward
	externalTrafficChain := extChain(sp)
	usesExternalTrafficChain := hasEndpoints && sp.ExternallyAccessible(f)

	nat, filter := p.nat, p.filter
	if markDrop {
		// The policy chains exist as soon as there are endpoints; a local
		// one without endpoints drops what it gets.
		hasInternalEndpoints, hasExternalEndpoints = hasEndpoints, hasEndpoints
		if hasEndpoints && sel.UsesCluster {
			nat.declare(clusterPolicyChain)
		}
		if hasEndpoints && sel.UsesLocal {
			nat.declare(localPolicyChain)
		}
	}

	loadBalancerTrafficChain := externalTrafficChain
	fw := fwChain(sp)
	usesFWChain := hasEndpoints && len(lbIPs) > 0 && len(sourceRanges) > 0
	if usesFWChain {
		loadBalancerTrafficChain = fw
	}

	internalFilterTarget, internalFilterComment := filterVerdict(name, sel.Internal.Verdict)
	externalFilterTarget, externalFilterComment := filterVerdict(name, sel.External.Verdict)

	// Capture the clusterIP.
	if hasInternalEndpoints {
		nat.Write("-A", kpnames.KubeServices,
			"-m", "comment", "--comment", `"`+name+` cluster IP"`,
			"-m", protocol, "-p", protocol, "-d", ipOf(clusterIP), "--dport", svcPort,
			"-j", internalTrafficChain)
	} else {
		filter.Write("-A", kpnames.KubeServices,
			"-m", "comment", "--comment", internalFilterComment,
			"-m", protocol, "-p", protocol, "-d", ipOf(clusterIP), "--dport", svcPort,
			"-j", internalFilterTarget)
	}

	// Capture externalIPs.
	for _, eip := range externalIPs {
		if hasEndpoints {
			nat.Write("-A", kpnames.KubeServices,
				"-m", "comment", "--comment", `"`+name+` external IP"`,
				"-m", protocol, "-p", protocol, "-d", ipOf(eip), "--dport", svcPort,
				"-j", externalTrafficChain)
		}
		if !hasExternalEndpoints {
			filter.Write("-A", kpnames.KubeExternalServices,
				"-m", "comment", "--comment", externalFilterComment,
				"-m", protocol, "-p", protocol, "-d", ipOf(eip), "--dport", svcPort,
				"-j", externalFilterTarget)
		}
	}

	// Capture load-balancer ingress.
	for _, lbip := range lbIPs {
		if hasEndpoints {
			nat.Write("-A", kpnames.KubeServices,
				"-m", "comment", "--comment", `"`+name+` loadbalancer IP"`,
				"-m", protocol, "-p", protocol, "-d", ipOf(lbip), "--dport", svcPort,
				"-j", loadBalancerTrafficChain)
		}
		if usesFWChain && !markDrop {
			filter.Write("-A", kpnames.KubeProxyFirewall,
				"-m", "comment", "--comment", `"`+name+` traffic not accepted by `+fw+`"`,
				"-m", protocol, "-p", protocol, "-d", ipOf(lbip), "--dport", svcPort,
				"-j", "DROP")
		}
	}
	if !hasExternalEndpoints {
		for _, lbip := range lbIPs {
			filter.Write("-A", kpnames.KubeExternalServices,
				"-m", "comment", "--comment", externalFilterComment,
				"-m", protocol, "-p", protocol, "-d", ipOf(lbip), "--dport", svcPort,
				"-j", externalFilterTarget)
		}
	}

	// Capture nodeports.
	if sp.NodePort != 0 && p.nodePortsEnabled() {
		nodePort := port(sp.NodePort)
		if hasEndpoints {
			if p.nfacct && p.localhostNodePorts && !p.isIPv6 {
				nat.Write("-A", kpnames.KubeNodePorts,
					"-m", "comment", "--comment", name,
					"-m", protocol, "-p", protocol, "-d", "127.0.0.0/8", "--dport", nodePort,
					"-m", "nfacct", "--nfacct-name", nfacctLocalhostNodePorts,
					"-j", externalTrafficChain)
			}
			nat.Write("-A", kpnames.KubeNodePorts,
				"-m", "comment", "--comment", name,
				"-m", protocol, "-p", protocol, "--dport", nodePort,
				"-j", externalTrafficChain)
		}
		if !hasExternalEndpoints {
			filter.Write("-A", kpnames.KubeExternalServices,
				"-m", "comment", "--comment", externalFilterComment,
				"-m", "addrtype", "--dst-type", "LOCAL",
				"-m", protocol, "-p", protocol, "--dport", nodePort,
				"-j", externalFilterTarget)
		}
	}

	// Capture healthCheckNodePorts.
	if sp.HealthCheckNodePort != 0 {
		filter.Write("-A", kpnames.KubeNodePorts,
			"-m", "comment", "--comment", `"`+name+` health check node port"`,
			"-m", "tcp", "-p", "tcp", "--dport", port(sp.HealthCheckNodePort),
			"-j", "ACCEPT")
	}

	// Set up internal traffic handling.
	if hasInternalEndpoints {
		args := []string{
			"-m", "comment", "--comment", `"` + name + ` cluster IP"`,
			"-m", protocol, "-p", protocol, "-d", ipOf(clusterIP), "--dport", svcPort,
		}
		if p.masqueradeAll {
			nat.declare(internalTrafficChain)
			nat.Write("-A", internalTrafficChain, args, "-j", kpnames.KubeMarkMasq)
		} else if p.localDetector.implemented() {
			nat.declare(internalTrafficChain)
			nat.Write("-A", internalTrafficChain, args, p.localDetector.ifNotLocal, "-j", kpnames.KubeMarkMasq)
		}
	}

	// Set up external traffic handling.
	if usesExternalTrafficChain {
		nat.declare(externalTrafficChain)
		if !sp.ExternalPolicyLocal {
			nat.Write("-A", externalTrafficChain,
				"-m", "comment", "--comment", `"masquerade traffic for `+name+` external destinations"`,
				"-j", kpnames.KubeMarkMasq)
		} else {
			if p.localDetector.implemented() {
				nat.Write("-A", externalTrafficChain,
					"-m", "comment", "--comment", `"pod traffic for `+name+` external destinations"`,
					p.localDetector.ifLocal, "-j", clusterPolicyChain)
			}
			nat.Write("-A", externalTrafficChain,
				"-m", "comment", "--comment", `"masquerade LOCAL traffic for `+name+` external destinations"`,
				"-m", "addrtype", "--src-type", "LOCAL", "-j", kpnames.KubeMarkMasq)
			nat.Write("-A", externalTrafficChain,
				"-m", "comment", "--comment", `"route LOCAL traffic for `+name+` external destinations"`,
				"-m", "addrtype", "--src-type", "LOCAL", "-j", clusterPolicyChain)
		}
		if hasExternalEndpoints {
			nat.Write("-A", externalTrafficChain, "-j", externalPolicyChain)
		}
	}

	// Set up the firewall chain.
	if usesFWChain {
		nat.declare(fw)
		args := []string{"-A", fw, "-m", "comment", "--comment", `"` + name + ` loadbalancer IP"`}
		if markDrop {
			for _, lbip := range lbIPs {
				p.writeFirewallSources(args, sourceRanges, []netip.Addr{lbip}, externalTrafficChain)
				nat.Write(args, "-j", kpnames.KubeMarkDrop)
			}
		} else {
			p.writeFirewallSources(args, sourceRanges, lbIPs, externalTrafficChain)
		}
		if p.in.res.Has(resolve.FirewallChainTailComment) {
			nat.Write("-A", fw, "-m", "comment", "--comment", `"other traffic to `+name+` will be dropped by KUBE-PROXY-FIREWALL"`)
		}
	}

	if usesClusterPolicyChain {
		nat.declare(clusterPolicyChain)
		p.writeServiceToEndpointRules(sp, clusterPolicyChain, clusterEndpoints, p.endpointComment(sp))
	}
	if usesLocalPolicyChain {
		nat.declare(localPolicyChain)
		p.writeServiceToEndpointRules(sp, localPolicyChain, localEndpoints, p.endpointComment(sp))
	} else if markDrop && hasEndpoints && sel.UsesLocal {
		nat.Write("-A", localPolicyChain, "-m", "comment", "--comment", `"`+name+` has no local endpoints"`,
			"-j", kpnames.KubeMarkDrop)
	}

	// Generate the per-endpoint chains.
	for _, ep := range allReachable {
		p.writeEndpointChain(sp, ep)
	}
}

// writeFirewallSources writes the rules of a KUBE-FW chain (args) that
// send the allowed sources to next: the source ranges and, when one of
// them holds the node IP, the load balancer IPs lbIPs themselves.
func (p *iptablesProxier) writeFirewallSources(args []string, sourceRanges []netip.Prefix, lbIPs []netip.Addr, next string) {
	allowFromNode := false
	for _, cidr := range sourceRanges {
		p.nat.Write(args, "-s", cidr.String(), "-j", next)
		if p.nodeIP.IsValid() && cidr.Contains(p.nodeIP) {
			allowFromNode = true
		}
	}
	if allowFromNode {
		for _, lbip := range lbIPs {
			p.nat.Write(args, "-s", ipOf(lbip), "-j", next)
		}
	}
}

// writeEndpointChain writes one KUBE-SEP chain: the hairpin masquerade
// rule and the DNAT rule (with the affinity list update for ClientIP
// affinity). The same in every version 1.20-1.37.
func (p *iptablesProxier) writeEndpointChain(sp *model.ServicePort, ep *model.Endpoint) {
	chain := p.sepChain(sp, ep)
	protocol := sp.ProtoLower()
	p.nat.declare(chain)
	args := p.appendServiceComment([]string{"-A", chain}, sp.String())
	p.nat.Write(args, "-s", ipOf(ep.IP), "-j", kpnames.KubeMarkMasq)
	if sp.AffinityClientIP {
		args = append(args, "-m", "recent", "--name", chain, "--set")
	}
	p.nat.Write(args, "-m", protocol, "-p", protocol, "-j", "DNAT", "--to-destination", ep.String())
}

// writeServiceToEndpointRules mirrors writeServiceToEndpointRules: the
// affinity checks first, then one rule per endpoint, each but the last
// matching with probability 1/(endpoints left). comment appends to args
// the comment of the rule of the i-th endpoint ep (i is -1 for its
// affinity check).
func (p *iptablesProxier) writeServiceToEndpointRules(sp *model.ServicePort, chain string, endpoints []*model.Endpoint, comment func(args []string, i int, ep *model.Endpoint) []string) {
	if sp.AffinityClientIP {
		for _, ep := range endpoints {
			sep := p.sepChain(sp, ep)
			p.nat.Write(comment([]string{"-A", chain}, -1, ep), "-m", "recent", "--name", sep,
				"--rcheck", "--seconds", port(sp.AffinityTimeout), "--reap", "-j", sep)
		}
	}
	n := len(endpoints)
	for i, ep := range endpoints {
		args := comment([]string{"-A", chain}, i, ep)
		if i < n-1 {
			args = append(args, "-m", "statistic", "--mode", "random", "--probability", probability(n-i))
		}
		p.nat.Write(args, "-j", p.sepChain(sp, ep))
	}
}

// endpointComment comments the rules of writeServiceToEndpointRules
// "C -> IP:port" (v1.24-v1.37), but in large-cluster mode.
func (p *iptablesProxier) endpointComment(sp *model.ServicePort) func([]string, int, *model.Endpoint) []string {
	return func(args []string, _ int, ep *model.Endpoint) []string {
		return p.appendServiceComment(args, `"`+sp.String()+` -> `+ep.String()+`"`)
	}
}

// filterVerdict returns the filter target and comment of the rule that
// blocks the traffic of a route with verdict v to the service port name.
func filterVerdict(name string, v Verdict) (target, comment string) {
	switch v {
	case Reject:
		return "REJECT", `"` + name + ` has no endpoints"`
	case Drop:
		return "DROP", `"` + name + ` has no local endpoints"`
	}
	return "", ""
}
