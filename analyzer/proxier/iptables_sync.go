package proxier

import (
	"github.com/proxyscan/proxyscan/analyzer/model"
)

// syncProxyRules writes what one full sync of kube-proxy 1.25-1.37 writes.
//
// It follows pkg/proxy/iptables/proxier.go syncProxyRules of v1.37.2, with
// the differences of earlier releases: v1.25-v1.26 have no KUBE-FW tail
// rule and write no NodePort rules when nodePortAddresses select no node
// address; v1.26 adds the loopback exclusions of the node-ports tail rule;
// v1.27 adds kube-proxy's KUBE-FIREWALL copy; v1.29 omits the INVALID drop
// with a liberal conntrack; v1.31 adds the nfacct counters (the localhost
// NodePort rule and the INVALID counter).
func (p *iptablesProxier) syncProxyRules() {
	for _, c := range []string{kubeServicesChain, kubeExternalServicesChain, kubeForwardChain, kubeNodePortsChain, kubeProxyFirewallChain} {
		p.filter.declare(c)
	}
	p.writeStaticRules()
	p.writeKubeletFirewall()

	for _, sp := range p.ports {
		p.syncServicePort(sp)
	}

	p.writeNodePortsTail()
	p.writeForwardRules()
}

// syncServicePort writes the rules of one service port: the body of
// syncProxyRules' loop over svcPortMap (v1.25-v1.37).
func (p *iptablesProxier) syncServicePort(sp *model.ServicePort) {
	f := p.family
	protocol := sp.ProtoLower()
	name := sp.String()
	clusterIP, _ := sp.ClusterIP(f)
	externalIPs := sp.ExternalIPsOf(f)
	lbIPs := sp.LoadBalancerVIPsOf(f)
	sourceRanges := sp.SourceRangesOf(f)
	svcPort := port(sp.Port)

	cat := model.Categorize(sp, f, p.in.cat)
	clusterEndpoints, localEndpoints, allReachable, hasEndpoints := cat.Cluster, cat.Local, cat.AllReachable, cat.HasAny

	clusterPolicyChain := svcChain(sp)
	usesClusterPolicyChain := len(clusterEndpoints) > 0 && sp.UsesClusterEndpoints(f)
	localPolicyChain := svlChain(sp)
	usesLocalPolicyChain := len(localEndpoints) > 0 && sp.UsesLocalEndpoints(f)

	internalPolicyChain := clusterPolicyChain
	hasInternalEndpoints := hasEndpoints
	if sp.InternalPolicyLocal {
		internalPolicyChain = localPolicyChain
		if len(localEndpoints) == 0 {
			hasInternalEndpoints = false
		}
	}
	internalTrafficChain := internalPolicyChain

	externalPolicyChain := clusterPolicyChain
	hasExternalEndpoints := hasEndpoints
	if sp.ExternalPolicyLocal {
		externalPolicyChain = localPolicyChain
		if len(localEndpoints) == 0 {
			hasExternalEndpoints = false
		}
	}
	externalTrafficChain := extChain(sp)
	usesExternalTrafficChain := hasEndpoints && sp.ExternallyAccessible(f)

	loadBalancerTrafficChain := externalTrafficChain
	fw := fwChain(sp)
	usesFWChain := hasEndpoints && len(lbIPs) > 0 && len(sourceRanges) > 0
	if usesFWChain {
		loadBalancerTrafficChain = fw
	}

	var internalFilterTarget, internalFilterComment, externalFilterTarget, externalFilterComment string
	if !hasEndpoints {
		internalFilterTarget = "REJECT"
		internalFilterComment = `"` + name + ` has no endpoints"`
		externalFilterTarget, externalFilterComment = internalFilterTarget, internalFilterComment
	} else {
		if !hasInternalEndpoints {
			internalFilterTarget = "DROP"
			internalFilterComment = `"` + name + ` has no local endpoints"`
		}
		if !hasExternalEndpoints {
			externalFilterTarget = "DROP"
			externalFilterComment = `"` + name + ` has no local endpoints"`
		}
	}

	nat, filter := p.nat, p.filter

	// Capture the clusterIP.
	if hasInternalEndpoints {
		nat.Write("-A", kubeServicesChain,
			"-m", "comment", "--comment", `"`+name+` cluster IP"`,
			"-m", protocol, "-p", protocol, "-d", ipOf(clusterIP), "--dport", svcPort,
			"-j", internalTrafficChain)
	} else {
		filter.Write("-A", kubeServicesChain,
			"-m", "comment", "--comment", internalFilterComment,
			"-m", protocol, "-p", protocol, "-d", ipOf(clusterIP), "--dport", svcPort,
			"-j", internalFilterTarget)
	}

	// Capture externalIPs.
	for _, eip := range externalIPs {
		if hasEndpoints {
			nat.Write("-A", kubeServicesChain,
				"-m", "comment", "--comment", `"`+name+` external IP"`,
				"-m", protocol, "-p", protocol, "-d", ipOf(eip), "--dport", svcPort,
				"-j", externalTrafficChain)
		}
		if !hasExternalEndpoints {
			filter.Write("-A", kubeExternalServicesChain,
				"-m", "comment", "--comment", externalFilterComment,
				"-m", protocol, "-p", protocol, "-d", ipOf(eip), "--dport", svcPort,
				"-j", externalFilterTarget)
		}
	}

	// Capture load-balancer ingress.
	for _, lbip := range lbIPs {
		if hasEndpoints {
			nat.Write("-A", kubeServicesChain,
				"-m", "comment", "--comment", `"`+name+` loadbalancer IP"`,
				"-m", protocol, "-p", protocol, "-d", ipOf(lbip), "--dport", svcPort,
				"-j", loadBalancerTrafficChain)
		}
		if usesFWChain {
			filter.Write("-A", kubeProxyFirewallChain,
				"-m", "comment", "--comment", `"`+name+` traffic not accepted by `+fw+`"`,
				"-m", protocol, "-p", protocol, "-d", ipOf(lbip), "--dport", svcPort,
				"-j", "DROP")
		}
	}
	if !hasExternalEndpoints {
		for _, lbip := range lbIPs {
			filter.Write("-A", kubeExternalServicesChain,
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
				nat.Write("-A", kubeNodePortsChain,
					"-m", "comment", "--comment", name,
					"-m", protocol, "-p", protocol, "-d", "127.0.0.0/8", "--dport", nodePort,
					"-m", "nfacct", "--nfacct-name", nfacctLocalhostNodePorts,
					"-j", externalTrafficChain)
			}
			nat.Write("-A", kubeNodePortsChain,
				"-m", "comment", "--comment", name,
				"-m", protocol, "-p", protocol, "--dport", nodePort,
				"-j", externalTrafficChain)
		}
		if !hasExternalEndpoints {
			filter.Write("-A", kubeExternalServicesChain,
				"-m", "comment", "--comment", externalFilterComment,
				"-m", "addrtype", "--dst-type", "LOCAL",
				"-m", protocol, "-p", protocol, "--dport", nodePort,
				"-j", externalFilterTarget)
		}
	}

	// Capture healthCheckNodePorts.
	if sp.HealthCheckNodePort != 0 {
		filter.Write("-A", kubeNodePortsChain,
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
			nat.Write("-A", internalTrafficChain, args, "-j", kubeMarkMasqChain)
		} else if p.localDetector.implemented() {
			nat.declare(internalTrafficChain)
			nat.Write("-A", internalTrafficChain, args, p.localDetector.ifNotLocal, "-j", kubeMarkMasqChain)
		}
	}

	// Set up external traffic handling.
	if usesExternalTrafficChain {
		nat.declare(externalTrafficChain)
		if !sp.ExternalPolicyLocal {
			nat.Write("-A", externalTrafficChain,
				"-m", "comment", "--comment", `"masquerade traffic for `+name+` external destinations"`,
				"-j", kubeMarkMasqChain)
		} else {
			if p.localDetector.implemented() {
				nat.Write("-A", externalTrafficChain,
					"-m", "comment", "--comment", `"pod traffic for `+name+` external destinations"`,
					p.localDetector.ifLocal, "-j", clusterPolicyChain)
			}
			nat.Write("-A", externalTrafficChain,
				"-m", "comment", "--comment", `"masquerade LOCAL traffic for `+name+` external destinations"`,
				"-m", "addrtype", "--src-type", "LOCAL", "-j", kubeMarkMasqChain)
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
		allowFromNode := false
		for _, cidr := range sourceRanges {
			nat.Write(args, "-s", cidr.String(), "-j", externalTrafficChain)
			if p.nodeIP.IsValid() && cidr.Contains(p.nodeIP) {
				allowFromNode = true
			}
		}
		if allowFromNode {
			for _, lbip := range lbIPs {
				nat.Write(args, "-s", ipOf(lbip), "-j", externalTrafficChain)
			}
		}
		if p.minor >= 27 {
			nat.Write("-A", fw, "-m", "comment", "--comment", `"other traffic to `+name+` will be dropped by KUBE-PROXY-FIREWALL"`)
		}
	}

	if usesClusterPolicyChain {
		nat.declare(clusterPolicyChain)
		p.writeServiceToEndpointRules(sp, clusterPolicyChain, clusterEndpoints)
	}
	if usesLocalPolicyChain {
		nat.declare(localPolicyChain)
		p.writeServiceToEndpointRules(sp, localPolicyChain, localEndpoints)
	}

	// Generate the per-endpoint chains.
	for _, ep := range allReachable {
		p.writeEndpointChain(sp, ep)
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
	p.nat.Write(args, "-s", ipOf(ep.IP), "-j", kubeMarkMasqChain)
	if sp.AffinityClientIP {
		args = append(args, "-m", "recent", "--name", chain, "--set")
	}
	p.nat.Write(args, "-m", protocol, "-p", protocol, "-j", "DNAT", "--to-destination", ep.String())
}

// writeServiceToEndpointRules mirrors writeServiceToEndpointRules
// (v1.23-v1.37): the affinity checks first, then one rule per endpoint,
// each but the last matching with probability 1/(endpoints left). The
// comments are "C -> IP:port" from 1.24 and "C" in 1.23.
func (p *iptablesProxier) writeServiceToEndpointRules(sp *model.ServicePort, chain string, endpoints []*model.Endpoint) {
	comment := func(ep *model.Endpoint) string {
		if p.minor <= 23 {
			return sp.String()
		}
		return `"` + sp.String() + ` -> ` + ep.String() + `"`
	}
	if sp.AffinityClientIP {
		for _, ep := range endpoints {
			sep := p.sepChain(sp, ep)
			args := p.appendServiceComment([]string{"-A", chain}, comment(ep))
			p.nat.Write(args, "-m", "recent", "--name", sep,
				"--rcheck", "--seconds", port(sp.AffinityTimeout), "--reap", "-j", sep)
		}
	}
	n := len(endpoints)
	for i, ep := range endpoints {
		args := p.appendServiceComment([]string{"-A", chain}, comment(ep))
		if i < n-1 {
			args = append(args, "-m", "statistic", "--mode", "random", "--probability", probability(n-i))
		}
		p.nat.Write(args, "-j", p.sepChain(sp, ep))
	}
}
