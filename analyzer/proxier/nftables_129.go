package proxier

import "net/netip"

// The nftables layout of kube-proxy 1.29, the first (alpha) release of the
// mode (NFTablesFirstLayout; pkg/proxy/nftables/proxier.go of v1.29.0),
// where it differs from 1.30's: one endpoints-check chain for Services and
// node ports, a forward chain dropping INVALID packets, no cluster-ips set
// and cluster-ips-check chain, and LoadBalancerSourceRanges checked with
// two sets (firewall, firewall-allow) and a firewall-allow-check chain
// instead of the firewall-ips map and a firewall chain per service port.

// Names of 1.29 only.
const (
	nftEndpointsCheck129      = "endpoints-check"
	nftForwardChain129        = "forward"
	nftFirewallSet129         = "firewall"
	nftFirewallAllowSet129    = "firewall-allow"
	nftFirewallAllowCheck129  = "firewall-allow-check"
	nftNFTablesProxyModeGate  = "NFTablesProxyMode"
	nftFirewallAllowComment   = "destinations+sources that are allowed by LoadBalancerSourceRanges"
	nftFirewallSetComment129  = "destinations that are subject to LoadBalancerSourceRanges"
	nftFirewallAllowSetHeader = "flags interval"
)

// nftBaseChains129 mirrors nftablesBaseChains of v1.29: the filter chains
// at dstnat-1 (-101), the nat chains at dstnat (-100) and srcnat (100).
var nftBaseChains129 = []nftBaseChain{
	{nftFilterInput, "filter", "input", -101},
	{nftFilterForward, "filter", "forward", -101},
	{nftFilterOutput, "filter", "output", -101},
	{nftNATPrerouting, "nat", "prerouting", -100},
	{nftNATOutput, "nat", "output", -100},
	{nftNATPostrouting, "nat", "postrouting", 100},
}

// nftJumpChains129 mirrors nftablesJumpChains of v1.29, in its order.
var nftJumpChains129 = []nftJumpChain{
	{nftEndpointsCheck129, nftFilterInput, "ct state new"},
	{nftEndpointsCheck129, nftFilterForward, "ct state new"},
	{nftEndpointsCheck129, nftFilterOutput, "ct state new"},
	{nftForwardChain129, nftFilterForward, ""},
	{nftFirewallCheckChain, nftFilterInput, "ct state new"},
	{nftFirewallCheckChain, nftFilterOutput, "ct state new"},
	{nftFirewallCheckChain, nftFilterForward, "ct state new"},
	{nftServicesChain, nftNATOutput, ""},
	{nftServicesChain, nftNATPrerouting, ""},
	{nftMasqueradingChain, nftNATPostrouting, ""},
}

// setupFirewall129 writes the firewall sets of the first layout and the
// firewall-allow-check chain they send to.
func (p *nftProxier) setupFirewall129() {
	ipX, addr := p.ipX, p.addrType
	p.set(nftFirewallSet129, false, "type "+addr+" . inet_proto . inet_service", `comment "`+nftFirewallSetComment129+`"`)
	p.set(nftFirewallAllowSet129, false, "type "+addr+" . inet_proto . inet_service . "+addr, nftFirewallAllowSetHeader, `comment "`+nftFirewallAllowComment+`"`)
	p.chain(nftFirewallAllowCheck129)
	p.rule(nftFirewallCheckChain, ipX+" daddr . meta l4proto . th dport @"+nftFirewallSet129+" jump "+nftFirewallAllowCheck129, "")
	p.rule(nftFirewallAllowCheck129, ipX+" daddr . meta l4proto . th dport . "+ipX+" saddr @"+nftFirewallAllowSet129+" return", "")
	p.rule(nftFirewallAllowCheck129, "drop", "")
}

// firewall129 writes the firewall elements of one load balancer IP of a
// service port with source ranges (v1.29): the destination in the
// firewall set, and a firewall-allow element per source range (and one
// for the load balancer IP itself when a range holds the node IP), all
// but that last one commented with the service port name.
func (p *nftProxier) firewall129(dest, comment string, lbip netip.Addr, sourceRanges []netip.Prefix) {
	p.element(nftFirewallSet129, dest, comment, "")
	allowFromNode := false
	for _, cidr := range sourceRanges {
		p.element(nftFirewallAllowSet129, dest+" . "+nftPrefix(cidr), comment, "")
		if p.nodeIP.IsValid() && cidr.Contains(p.nodeIP) {
			allowFromNode = true
		}
	}
	if allowFromNode {
		p.element(nftFirewallAllowSet129, dest+" . "+lbip.String(), "", "")
	}
}
