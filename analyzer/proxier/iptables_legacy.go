package proxier

import (
	"net/netip"
	"strconv"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
)

// syncProxyRulesXLB writes what a sync of kube-proxy 1.20-1.23 writes, the
// releases before PolicyChains: pkg/proxy/iptables/proxier.go
// syncProxyRules of v1.23.17, with the differences of earlier releases.
// externalTrafficPolicy Local uses a KUBE-XLB chain; every load balancer
// IP goes through a KUBE-FW chain that ends with KUBE-MARK-DROP. Before
// MasqueradeInServiceChain (1.20-1.21) the masquerade rules are in the
// capturing chains (KUBE-SERVICES, KUBE-NODEPORTS) rather than in
// KUBE-SVC; 1.20 has ExternalIPPhysdevRules and
// NodePortAddressErrorSkipsService, and no health-check rules in filter
// (HealthCheckNodePortsAccepted); 1.20-1.22 have BalancingRuleComments;
// 1.22+ may use local serving terminating endpoints.
func (p *iptablesProxier) syncProxyRulesXLB() {
	filterChains := []string{kpnames.KubeServices, kpnames.KubeExternalServices, kpnames.KubeForward}
	if p.in.res.Has(resolve.HealthCheckNodePortsAccepted) {
		filterChains = append(filterChains, kpnames.KubeNodePorts)
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
	sel := p.in.selection(model.ModeIPTables, sp, f)
	hasEndpoints := sel.HasEndpoints
	noEndpoints := `"` + name + ` has no endpoints"`
	inServiceChain := p.in.res.Has(resolve.MasqueradeInServiceChain)
	physdev := p.in.res.Has(resolve.ExternalIPPhysdevRules)

	svc, xlb := svcChain(sp), xlbChain(sp)
	if hasEndpoints {
		nat.declare(svc)
	}
	if local {
		nat.declare(xlb)
	}
	// masqChain is where masquerade rules for traffic captured in chain
	// go: the service chain with MasqueradeInServiceChain, the capturing
	// chain before.
	masqChain := func(capturing string) string {
		if inServiceChain {
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
			nat.Write("-A", masqChain(kpnames.KubeServices), args, "-j", kpnames.KubeMarkMasq)
		} else if p.localDetector.implemented() {
			nat.Write("-A", masqChain(kpnames.KubeServices), args, p.localDetector.ifNotLocal, "-j", kpnames.KubeMarkMasq)
		}
		nat.Write("-A", kpnames.KubeServices, args, "-j", svc)
	} else {
		filter.Write("-A", kpnames.KubeServices, "-m", "comment", "--comment", noEndpoints,
			"-m", protocol, "-p", protocol, "-d", ipOf(clusterIP), "--dport", svcPort, "-j", "REJECT")
	}

	// Capture externalIPs.
	for _, eip := range sp.ExternalIPsOf(f) {
		if !hasEndpoints {
			filter.Write("-A", kpnames.KubeExternalServices, "-m", "comment", "--comment", noEndpoints,
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
			case physdev:
				nat.Write("-A", kpnames.KubeServices, args, "-j", kpnames.KubeMarkMasq)
			case p.localDetector.implemented():
				nat.Write("-A", masqChain(kpnames.KubeServices), args, p.localDetector.ifNotLocal, "-j", kpnames.KubeMarkMasq)
			default:
				nat.Write("-A", masqChain(kpnames.KubeServices), args, "-j", kpnames.KubeMarkMasq)
			}
		}
		if physdev {
			nat.Write("-A", kpnames.KubeServices, args, "-m", "physdev", "!", "--physdev-is-in",
				"-m", "addrtype", "!", "--src-type", "LOCAL", "-j", dest)
			nat.Write("-A", kpnames.KubeServices, args, "-m", "addrtype", "--dst-type", "LOCAL", "-j", dest)
		} else {
			nat.Write("-A", kpnames.KubeServices, args, "-j", dest)
		}
	}

	// Capture load-balancer ingress: every ingress IP through the
	// firewall chain, which has its rules once per ingress IP.
	fw := fwChain(sp)
	ranges := sp.SourceRangesOf(f)
	for _, lbip := range sp.LoadBalancerVIPsOf(f) {
		if !hasEndpoints {
			filter.Write("-A", kpnames.KubeExternalServices, "-m", "comment", "--comment", noEndpoints,
				"-m", protocol, "-p", protocol, "-d", ipOf(lbip), "--dport", svcPort, "-j", "REJECT")
			continue
		}
		nat.declare(fw)
		nat.Write("-A", kpnames.KubeServices,
			"-m", "comment", "--comment", `"`+name+` loadbalancer IP"`,
			"-m", protocol, "-p", protocol, "-d", ipOf(lbip), "--dport", svcPort, "-j", fw)
		args := []string{"-A", fw, "-m", "comment", "--comment", `"` + name + ` loadbalancer IP"`}
		chosen := xlb
		if !local {
			nat.Write(args, "-j", kpnames.KubeMarkMasq)
			chosen = svc
		}
		if len(ranges) == 0 {
			nat.Write(args, "-j", chosen)
		} else {
			p.writeFirewallSources(args, ranges, []netip.Addr{lbip}, chosen)
		}
		nat.Write(args, "-j", kpnames.KubeMarkDrop)
	}

	// Capture nodeports (with NodePortAddressErrorSkipsService, nothing
	// more of the service when nodePortAddresses select no node address).
	if sp.NodePort != 0 {
		if !p.nodePortsEnabled() {
			if p.in.res.Has(resolve.NodePortAddressErrorSkipsService) {
				return
			}
		} else if hasEndpoints {
			args := []string{
				"-m", "comment", "--comment", name,
				"-m", protocol, "-p", protocol, "--dport", port(sp.NodePort),
			}
			if !local {
				nat.Write("-A", masqChain(kpnames.KubeNodePorts), args, "-j", kpnames.KubeMarkMasq)
				nat.Write("-A", kpnames.KubeNodePorts, args, "-j", svc)
			} else {
				loopback := "127.0.0.0/8"
				if p.isIPv6 {
					loopback = "::1/128"
				}
				nat.Write("-A", kpnames.KubeNodePorts, args, "-s", loopback, "-j", kpnames.KubeMarkMasq)
				nat.Write("-A", kpnames.KubeNodePorts, args, "-j", xlb)
			}
		} else {
			filter.Write("-A", kpnames.KubeExternalServices, "-m", "comment", "--comment", noEndpoints,
				"-m", "addrtype", "--dst-type", "LOCAL",
				"-m", protocol, "-p", protocol, "--dport", port(sp.NodePort), "-j", "REJECT")
		}
	}

	if sp.HealthCheckNodePort != 0 && p.in.res.Has(resolve.HealthCheckNodePortsAccepted) {
		filter.Write("-A", kpnames.KubeNodePorts,
			"-m", "comment", "--comment", `"`+name+` health check node port"`,
			"-m", "tcp", "-p", "tcp", "--dport", port(sp.HealthCheckNodePort), "-j", "ACCEPT")
	}

	// The endpoint chains: none without endpoints, as every endpoint in use
	// makes the service port have endpoints.
	if !hasEndpoints {
		return
	}
	for _, ep := range sel.InUse {
		p.writeEndpointChain(sp, ep)
	}
	p.writeServiceToEndpointRules(sp, svc, sel.Cluster, p.legacyEndpointComment(sp, false))

	if !local {
		return
	}
	if p.localDetector.implemented() {
		nat.Write("-A", xlb, "-m", "comment", "--comment", `"Redirect pods trying to reach external loadbalancer VIP to clusterIP"`,
			p.localDetector.ifLocal, "-j", svc)
	}
	nat.Write("-A", xlb, "-m", "comment", "--comment", `"masquerade LOCAL traffic for `+name+` LB IP"`,
		"-m", "addrtype", "--src-type", "LOCAL", "-j", kpnames.KubeMarkMasq)
	nat.Write("-A", xlb, "-m", "comment", "--comment", `"route LOCAL traffic for `+name+` LB IP to service chain"`,
		"-m", "addrtype", "--src-type", "LOCAL", "-j", svc)
	if sel.External.Verdict == Drop {
		nat.Write("-A", xlb, "-m", "comment", "--comment", `"`+name+` has no local endpoints"`, "-j", kpnames.KubeMarkDrop)
		return
	}
	p.writeServiceToEndpointRules(sp, xlb, sel.Local, p.legacyEndpointComment(sp, p.in.res.Has(resolve.BalancingRuleComments)))
}

// legacyEndpointComment comments the rules of writeServiceToEndpointRules
// of 1.20-1.23 with the service port name, but in large-cluster mode.
// balancing selects the KUBE-XLB form of BalancingRuleComments: affinity
// checks always commented, the other rules "Balancing rule N for C".
func (p *iptablesProxier) legacyEndpointComment(sp *model.ServicePort, balancing bool) func([]string, int, *model.Endpoint) []string {
	name := sp.String()
	return func(args []string, i int, _ *model.Endpoint) []string {
		switch {
		case !balancing:
			return p.appendServiceComment(args, name)
		case i < 0:
			return append(args, "-m", "comment", "--comment", name)
		}
		return append(args, "-m", "comment", "--comment", `"Balancing rule `+strconv.Itoa(i)+` for `+name+`"`)
	}
}
