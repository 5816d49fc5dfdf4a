package proxier

import (
	"strconv"

	"github.com/proxyscan/proxyscan/analyzer/model"
)

// syncProxyRules124 writes what a sync of kube-proxy 1.24 writes. It
// follows pkg/proxy/iptables/proxier.go syncProxyRules of v1.24.17: the
// KUBE-SVL and KUBE-EXT chains replace KUBE-XLB, but traffic without an
// allowed source or without local endpoints is still marked with
// KUBE-MARK-DROP (kubelet's chain) in nat, and there is no
// KUBE-PROXY-FIREWALL.
func (p *iptablesProxier) syncProxyRules124() {
	for _, c := range []string{kubeServicesChain, kubeExternalServicesChain, kubeForwardChain, kubeNodePortsChain} {
		p.filter.declare(c)
	}
	p.writeStaticRules()
	for _, sp := range p.ports {
		p.syncServicePort124(sp)
	}
	p.writeNodePortsTail()
	p.writeForwardRules()
}

func (p *iptablesProxier) syncServicePort124(sp *model.ServicePort) {
	f := p.family
	protocol := sp.ProtoLower()
	name := sp.String()
	clusterIP, _ := sp.ClusterIP(f)
	svcPort := port(sp.Port)
	nat, filter := p.nat, p.filter

	cat := model.Categorize(sp, f, p.in.cat)
	clusterEndpoints, localEndpoints, hasEndpoints := cat.Cluster, cat.Local, cat.HasAny

	for _, ep := range cat.AllReachable {
		p.writeEndpointChain(sp, ep)
	}

	clusterPolicyChain, localPolicyChain := svcChain(sp), svlChain(sp)
	internalPolicyChain, externalPolicyChain := clusterPolicyChain, clusterPolicyChain
	if sp.InternalPolicyLocal {
		internalPolicyChain = localPolicyChain
	}
	if sp.ExternalPolicyLocal {
		externalPolicyChain = localPolicyChain
	}
	internalTrafficChain, externalTrafficChain := internalPolicyChain, extChain(sp)

	if hasEndpoints && sp.UsesClusterEndpoints(f) {
		nat.declare(clusterPolicyChain)
	}
	if hasEndpoints && sp.UsesLocalEndpoints(f) {
		nat.declare(localPolicyChain)
	}

	if hasEndpoints && sp.ExternallyAccessible(f) {
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
		nat.Write("-A", externalTrafficChain, "-j", externalPolicyChain)
	}

	noEndpoints := `"` + name + ` has no endpoints"`

	// Capture the clusterIP.
	if hasEndpoints {
		args := []string{
			"-m", "comment", "--comment", `"` + name + ` cluster IP"`,
			"-m", protocol, "-p", protocol, "-d", ipOf(clusterIP), "--dport", svcPort,
		}
		if p.masqueradeAll {
			nat.Write("-A", internalTrafficChain, args, "-j", kubeMarkMasqChain)
		} else if p.localDetector.implemented() {
			nat.Write("-A", internalTrafficChain, args, p.localDetector.ifNotLocal, "-j", kubeMarkMasqChain)
		}
		nat.Write("-A", kubeServicesChain, args, "-j", internalTrafficChain)
	} else {
		filter.Write("-A", kubeServicesChain, "-m", "comment", "--comment", noEndpoints,
			"-m", protocol, "-p", protocol, "-d", ipOf(clusterIP), "--dport", svcPort, "-j", "REJECT")
	}

	// Capture externalIPs.
	for _, eip := range sp.ExternalIPsOf(f) {
		if hasEndpoints {
			nat.Write("-A", kubeServicesChain,
				"-m", "comment", "--comment", `"`+name+` external IP"`,
				"-m", protocol, "-p", protocol, "-d", ipOf(eip), "--dport", svcPort,
				"-j", externalTrafficChain)
		} else {
			filter.Write("-A", kubeExternalServicesChain, "-m", "comment", "--comment", noEndpoints,
				"-m", protocol, "-p", protocol, "-d", ipOf(eip), "--dport", svcPort, "-j", "REJECT")
		}
	}

	// Capture load-balancer ingress; the firewall chain gets its rules once
	// per ingress IP.
	lbIPs := sp.LoadBalancerVIPsOf(f)
	ranges := sp.SourceRangesOf(f)
	if len(lbIPs) > 0 && hasEndpoints {
		next := externalTrafficChain
		if len(ranges) > 0 {
			next = fwChain(sp)
			nat.declare(next)
		}
		for _, lbip := range lbIPs {
			nat.Write("-A", kubeServicesChain,
				"-m", "comment", "--comment", `"`+name+` loadbalancer IP"`,
				"-m", protocol, "-p", protocol, "-d", ipOf(lbip), "--dport", svcPort,
				"-j", next)
			if len(ranges) == 0 {
				continue
			}
			args := []string{"-A", next, "-m", "comment", "--comment", `"` + name + ` loadbalancer IP"`}
			allowFromNode := false
			for _, src := range ranges {
				nat.Write(args, "-s", src.String(), "-j", externalTrafficChain)
				if p.nodeIP.IsValid() && src.Contains(p.nodeIP) {
					allowFromNode = true
				}
			}
			if allowFromNode {
				nat.Write(args, "-s", ipOf(lbip), "-j", externalTrafficChain)
			}
			nat.Write(args, "-j", kubeMarkDropChain)
		}
	} else {
		for _, lbip := range lbIPs {
			filter.Write("-A", kubeExternalServicesChain, "-m", "comment", "--comment", noEndpoints,
				"-m", protocol, "-p", protocol, "-d", ipOf(lbip), "--dport", svcPort, "-j", "REJECT")
		}
	}

	// Capture nodeports.
	if sp.NodePort != 0 && p.nodePortsEnabled() {
		if hasEndpoints {
			nat.Write("-A", kubeNodePortsChain, "-m", "comment", "--comment", name,
				"-m", protocol, "-p", protocol, "--dport", port(sp.NodePort), "-j", externalTrafficChain)
		} else {
			filter.Write("-A", kubeExternalServicesChain, "-m", "comment", "--comment", noEndpoints,
				"-m", "addrtype", "--dst-type", "LOCAL",
				"-m", protocol, "-p", protocol, "--dport", port(sp.NodePort), "-j", "REJECT")
		}
	}

	if sp.HealthCheckNodePort != 0 {
		filter.Write("-A", kubeNodePortsChain,
			"-m", "comment", "--comment", `"`+name+` health check node port"`,
			"-m", "tcp", "-p", "tcp", "--dport", port(sp.HealthCheckNodePort), "-j", "ACCEPT")
	}

	if sp.UsesClusterEndpoints(f) && len(clusterEndpoints) > 0 {
		p.writeServiceToEndpointRules(sp, clusterPolicyChain, clusterEndpoints)
	}
	if sp.UsesLocalEndpoints(f) {
		if len(localEndpoints) != 0 {
			p.writeServiceToEndpointRules(sp, localPolicyChain, localEndpoints)
		} else if hasEndpoints {
			nat.Write("-A", localPolicyChain, "-m", "comment", "--comment", `"`+name+` has no local endpoints"`,
				"-j", kubeMarkDropChain)
		}
	}
}

// syncProxyRulesXLB writes what a sync of kube-proxy 1.20-1.23 writes:
// pkg/proxy/iptables/proxier.go syncProxyRules of v1.23.17, with the
// differences of earlier releases. externalTrafficPolicy Local uses a
// KUBE-XLB chain; every load balancer IP goes through a KUBE-FW chain that
// ends with KUBE-MARK-DROP. v1.20-v1.21 write the masquerade rules in the
// capturing chains (KUBE-SERVICES, KUBE-NODEPORTS) rather than in
// KUBE-SVC; v1.20 captures external IPs with two rules (physdev and
// addrtype) and masquerades them unconditionally, and has no health-check
// rules in filter; v1.20-v1.22 comment the XLB balancing rules "Balancing
// rule N for C"; v1.22+ may use local serving terminating endpoints.
func (p *iptablesProxier) syncProxyRulesXLB() {
	filterChains := []string{kubeServicesChain, kubeExternalServicesChain, kubeForwardChain}
	if p.minor >= 21 {
		filterChains = append(filterChains, kubeNodePortsChain)
	}
	for _, c := range filterChains {
		p.filter.declare(c)
	}
	p.writeStaticRules()
	for _, sp := range p.ports {
		p.syncServicePortXLB(sp)
	}
	p.writeNodePortsTail()
	p.writeForwardRules()
}

func (p *iptablesProxier) syncServicePortXLB(sp *model.ServicePort) {
	f := p.family
	protocol := sp.ProtoLower()
	name := sp.String()
	clusterIP, _ := sp.ClusterIP(f)
	svcPort := port(sp.Port)
	nat, filter := p.nat, p.filter
	local := nodeLocalExternal(sp)
	sel := p.legacyEndpoints(sp)
	hasEndpoints := sel.hasEndpoints
	noEndpoints := `"` + name + ` has no endpoints"`

	// 1.22+ writes the endpoint chains first; the content is the same.
	if p.minor >= 22 {
		for _, ep := range sel.inUse {
			p.writeEndpointChain(sp, ep)
		}
	}

	svc, xlb := svcChain(sp), xlbChain(sp)
	if hasEndpoints {
		nat.declare(svc)
	}
	if local {
		nat.declare(xlb)
	}
	// masqChain is where masquerade rules for traffic captured in chain
	// go: the service chain from 1.22, the capturing chain before.
	masqChain := func(capturing string) string {
		if p.minor >= 22 {
			return svc
		}
		return capturing
	}

	// Capture the clusterIP.
	if hasEndpoints {
		args := []string{
			"-m", "comment", "--comment", `"` + name + ` cluster IP"`,
			"-m", protocol, "-p", protocol, "-d", ipOf(clusterIP), "--dport", svcPort,
		}
		if p.masqueradeAll {
			nat.Write("-A", masqChain(kubeServicesChain), args, "-j", kubeMarkMasqChain)
		} else if p.localDetector.implemented() {
			nat.Write("-A", masqChain(kubeServicesChain), args, p.localDetector.ifNotLocal, "-j", kubeMarkMasqChain)
		}
		nat.Write("-A", kubeServicesChain, args, "-j", svc)
	} else {
		filter.Write("-A", kubeServicesChain, "-m", "comment", "--comment", noEndpoints,
			"-m", protocol, "-p", protocol, "-d", ipOf(clusterIP), "--dport", svcPort, "-j", "REJECT")
	}

	// Capture externalIPs.
	for _, eip := range sp.ExternalIPsOf(f) {
		if !hasEndpoints {
			filter.Write("-A", kubeExternalServicesChain, "-m", "comment", "--comment", noEndpoints,
				"-m", protocol, "-p", protocol, "-d", ipOf(eip), "--dport", svcPort, "-j", "REJECT")
			continue
		}
		args := []string{
			"-m", "comment", "--comment", `"` + name + ` external IP"`,
			"-m", protocol, "-p", protocol, "-d", ipOf(eip), "--dport", svcPort,
		}
		dest := xlb
		if !local {
			dest = svc
			switch {
			case p.minor == 20:
				nat.Write("-A", kubeServicesChain, args, "-j", kubeMarkMasqChain)
			case p.localDetector.implemented():
				nat.Write("-A", masqChain(kubeServicesChain), args, p.localDetector.ifNotLocal, "-j", kubeMarkMasqChain)
			default:
				nat.Write("-A", masqChain(kubeServicesChain), args, "-j", kubeMarkMasqChain)
			}
		}
		if p.minor == 20 {
			nat.Write("-A", kubeServicesChain, args, "-m", "physdev", "!", "--physdev-is-in",
				"-m", "addrtype", "!", "--src-type", "LOCAL", "-j", dest)
			nat.Write("-A", kubeServicesChain, args, "-m", "addrtype", "--dst-type", "LOCAL", "-j", dest)
		} else {
			nat.Write("-A", kubeServicesChain, args, "-j", dest)
		}
	}

	// Capture load-balancer ingress: every ingress IP through the
	// firewall chain, which has its rules once per ingress IP.
	fw := fwChain(sp)
	ranges := sp.SourceRangesOf(f)
	for _, lbip := range sp.LoadBalancerVIPsOf(f) {
		if !hasEndpoints {
			filter.Write("-A", kubeExternalServicesChain, "-m", "comment", "--comment", noEndpoints,
				"-m", protocol, "-p", protocol, "-d", ipOf(lbip), "--dport", svcPort, "-j", "REJECT")
			continue
		}
		nat.declare(fw)
		nat.Write("-A", kubeServicesChain,
			"-m", "comment", "--comment", `"`+name+` loadbalancer IP"`,
			"-m", protocol, "-p", protocol, "-d", ipOf(lbip), "--dport", svcPort, "-j", fw)
		args := []string{"-A", fw, "-m", "comment", "--comment", `"` + name + ` loadbalancer IP"`}
		chosen := xlb
		if !local {
			nat.Write(args, "-j", kubeMarkMasqChain)
			chosen = svc
		}
		if len(ranges) == 0 {
			nat.Write(args, "-j", chosen)
		} else {
			allowFromNode := false
			for _, src := range ranges {
				nat.Write(args, "-s", src.String(), "-j", chosen)
				if p.nodeIP.IsValid() && src.Contains(p.nodeIP) {
					allowFromNode = true
				}
			}
			if allowFromNode {
				nat.Write(args, "-s", ipOf(lbip), "-j", chosen)
			}
		}
		nat.Write(args, "-j", kubeMarkDropChain)
	}

	// Capture nodeports. (1.20 skips the rest of the service when
	// nodePortAddresses select no node address.)
	if sp.NodePort != 0 {
		if !p.nodePortsEnabled() {
			if p.minor == 20 {
				return
			}
		} else if hasEndpoints {
			args := []string{
				"-m", "comment", "--comment", name,
				"-m", protocol, "-p", protocol, "--dport", port(sp.NodePort),
			}
			if !local {
				nat.Write("-A", masqChain(kubeNodePortsChain), args, "-j", kubeMarkMasqChain)
				nat.Write("-A", kubeNodePortsChain, args, "-j", svc)
			} else {
				loopback := "127.0.0.0/8"
				if p.isIPv6 {
					loopback = "::1/128"
				}
				nat.Write("-A", kubeNodePortsChain, args, "-s", loopback, "-j", kubeMarkMasqChain)
				nat.Write("-A", kubeNodePortsChain, args, "-j", xlb)
			}
		} else {
			filter.Write("-A", kubeExternalServicesChain, "-m", "comment", "--comment", noEndpoints,
				"-m", "addrtype", "--dst-type", "LOCAL",
				"-m", protocol, "-p", protocol, "--dport", port(sp.NodePort), "-j", "REJECT")
		}
	}

	if p.minor >= 21 && sp.HealthCheckNodePort != 0 {
		filter.Write("-A", kubeNodePortsChain,
			"-m", "comment", "--comment", `"`+name+` health check node port"`,
			"-m", "tcp", "-p", "tcp", "--dport", port(sp.HealthCheckNodePort), "-j", "ACCEPT")
	}

	if !hasEndpoints {
		return
	}
	if p.minor < 22 {
		for _, ep := range sel.inUse {
			p.writeEndpointChain(sp, ep)
		}
	}
	p.writeServiceToEndpointRulesLegacy(sp, svc, sel.ready, false)

	if !local {
		return
	}
	if p.localDetector.implemented() {
		nat.Write("-A", xlb, "-m", "comment", "--comment", `"Redirect pods trying to reach external loadbalancer VIP to clusterIP"`,
			p.localDetector.ifLocal, "-j", svc)
	}
	nat.Write("-A", xlb, "-m", "comment", "--comment", `"masquerade LOCAL traffic for `+name+` LB IP"`,
		"-m", "addrtype", "--src-type", "LOCAL", "-j", kubeMarkMasqChain)
	nat.Write("-A", xlb, "-m", "comment", "--comment", `"route LOCAL traffic for `+name+` LB IP to service chain"`,
		"-m", "addrtype", "--src-type", "LOCAL", "-j", svc)
	if len(sel.local) == 0 {
		nat.Write("-A", xlb, "-m", "comment", "--comment", `"`+name+` has no local endpoints"`, "-j", kubeMarkDropChain)
		return
	}
	p.writeServiceToEndpointRulesLegacy(sp, xlb, sel.local, p.minor <= 22)
}

// writeServiceToEndpointRulesLegacy writes the affinity and balancing
// rules of 1.20-1.23, commented with the service port name. balancing
// selects the XLB form of 1.20-1.22: affinity rules always commented and
// balancing rules commented "Balancing rule N for C".
func (p *iptablesProxier) writeServiceToEndpointRulesLegacy(sp *model.ServicePort, chain string, endpoints []*model.Endpoint, balancing bool) {
	name := sp.String()
	if sp.AffinityClientIP {
		for _, ep := range endpoints {
			sep := p.sepChain(sp, ep)
			args := []string{"-A", chain}
			if balancing {
				args = append(args, "-m", "comment", "--comment", name)
			} else {
				args = p.appendServiceComment(args, name)
			}
			p.nat.Write(args, "-m", "recent", "--name", sep,
				"--rcheck", "--seconds", port(sp.AffinityTimeout), "--reap", "-j", sep)
		}
	}
	n := len(endpoints)
	for i, ep := range endpoints {
		args := []string{"-A", chain}
		if balancing {
			args = append(args, "-m", "comment", "--comment", `"Balancing rule `+strconv.Itoa(i)+` for `+name+`"`)
		} else {
			args = p.appendServiceComment(args, name)
		}
		if i < n-1 {
			args = append(args, "-m", "statistic", "--mode", "random", "--probability", probability(n-i))
		}
		p.nat.Write(args, "-j", p.sepChain(sp, ep))
	}
}
