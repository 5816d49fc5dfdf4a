package proxier

import (
	"fmt"
	"net/netip"

	"github.com/google/nftables"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/nft"
)

// The nftables layout of kube-proxy 1.29, the first (alpha) release of the
// mode (pkg/proxy/nftables/proxier.go of v1.29.0), where it differs from
// 1.30's: one endpoints-check chain for Services and node ports, a forward
// chain dropping INVALID packets, no cluster-ips set and cluster-ips-check
// chain, and LoadBalancerSourceRanges checked with two sets (firewall,
// firewall-allow) and a firewall-allow-check chain instead of the
// firewall-ips map and a firewall chain per service port.

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

// nftCheck129 returns why kube-proxy 1.29 would not run the nftables
// mode of in: the mode is alpha, behind the NFTablesProxyMode gate.
func nftCheck129(in *input) error {
	if !in.gate(nftNFTablesProxyModeGate, false) {
		return fmt.Errorf("kube-proxy 1.29 runs the nftables mode only with the %s feature gate (alpha), which the configuration does not enable", nftNFTablesProxyModeGate)
	}
	return nil
}

// setup129 mirrors setupNFTables of v1.29.
func (p *nftProxier) setup129() {
	ipX, addr := p.ipX, p.addrType
	matchNotLocalhost := "ip daddr != 127.0.0.0/8"
	fam := nftables.TableFamilyIPv4
	if p.family == model.IPv6 {
		matchNotLocalhost = "ip6 daddr != ::1"
		fam = nftables.TableFamilyIPv6
	}
	for _, bc := range nftBaseChains129 {
		p.chain(bc.name).header = []string{fmt.Sprintf("type %s hook %s priority %s; policy accept;", bc.typ, bc.hook, nft.PriorityText(fam, bc.hook, nftables.ChainPriority(bc.priority)))}
	}
	for _, j := range nftJumpChains129 {
		p.chain(j.dst)
		text := "jump " + j.dst
		if j.extra != "" {
			text = j.extra + " " + text
		}
		p.rule(j.src, text, "")
	}
	for _, c := range []string{nftServicesChain, nftForwardChain129, nftMasqueradingChain, nftMarkMasqChain} {
		p.chain(c)
	}

	mark := p.masqueradeMark
	p.rule(nftMarkMasqChain, "meta mark set meta mark | "+mark, "")
	p.rule(nftMasqueradingChain, "meta mark & "+mark+" == 0x00000000 return", "")
	p.rule(nftMasqueradingChain, "meta mark set meta mark ^ "+mark, "")
	p.rule(nftMasqueradingChain, "masquerade fully-random", "")

	// The INVALID drop, unless nf_conntrack_tcp_be_liberal is set (read
	// at start-up, as the iptables mode of 1.29 does).
	if !(p.in.env.TCPBeLiberal || p.in.cfg.Conntrack.TCPBeLiberal) {
		p.rule(nftForwardChain129, "ct state invalid drop", "")
	}

	if !p.nodePortAddresses.matchAll {
		p.set(nftNodePortIPsSet, false, "type "+addr, `comment "IPs that accept NodePort traffic"`)
		for _, ip := range p.nodePortAddresses.nodeIPs(p.in.ifaceAddrs) {
			if !ip.IsLoopback() {
				p.element(nftNodePortIPsSet, ip.String(), "", "")
			}
		}
	}

	p.set(nftNoEndpointServicesMap, true, "type "+addr+" . inet_proto . inet_service : verdict", `comment "vmap to drop or reject packets to services with no endpoints"`)
	p.set(nftNoEndpointNodePortsMap, true, "type inet_proto . inet_service : verdict", `comment "vmap to drop or reject packets to service nodeports with no endpoints"`)
	p.chain(nftRejectChain).header = []string{`comment "helper for @no-endpoint-services / @no-endpoint-nodeports"`}
	p.rule(nftRejectChain, "reject", "")
	p.rule(nftEndpointsCheck129, ipX+" daddr . meta l4proto . th dport vmap @"+nftNoEndpointServicesMap, "")
	nodePortMatch := ipX + " daddr @" + nftNodePortIPsSet
	if p.nodePortAddresses.matchAll {
		nodePortMatch = "fib daddr type local " + matchNotLocalhost
	}
	p.rule(nftEndpointsCheck129, nodePortMatch+" meta l4proto . th dport vmap @"+nftNoEndpointNodePortsMap, "")

	p.set(nftFirewallSet129, false, "type "+addr+" . inet_proto . inet_service", `comment "`+nftFirewallSetComment129+`"`)
	p.set(nftFirewallAllowSet129, false, "type "+addr+" . inet_proto . inet_service . "+addr, nftFirewallAllowSetHeader, `comment "`+nftFirewallAllowComment+`"`)
	p.chain(nftFirewallAllowCheck129)
	p.rule(nftFirewallCheckChain, ipX+" daddr . meta l4proto . th dport @"+nftFirewallSet129+" jump "+nftFirewallAllowCheck129, "")
	p.rule(nftFirewallAllowCheck129, ipX+" daddr . meta l4proto . th dport . "+ipX+" saddr @"+nftFirewallAllowSet129+" return", "")
	p.rule(nftFirewallAllowCheck129, "drop", "")

	p.set(nftServiceIPsMap, true, "type "+addr+" . inet_proto . inet_service : verdict", `comment "ClusterIP, ExternalIP and LoadBalancer IP traffic"`)
	p.set(nftServiceNodePortsMap, true, "type inet_proto . inet_service : verdict", `comment "NodePort traffic"`)
	p.rule(nftServicesChain, ipX+" daddr . meta l4proto . th dport vmap @"+nftServiceIPsMap, "")
	p.rule(nftServicesChain, nodePortMatch+" meta l4proto . th dport vmap @"+nftServiceNodePortsMap, "")
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
