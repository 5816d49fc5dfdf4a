package proxier

import (
	"bytes"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/google/nftables"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/internal/fault"
	"github.com/proxyscan/proxyscan/parsers/nft"
)

// Names of kube-proxy's nftables mode (pkg/proxy/nftables/proxier.go,
// v1.37.2): the base chains, and the fixed chains, sets and maps (the
// table's name and the per-service prefixes are kpnames').
const (
	nftFilterPreroutingPreDNAT = "filter-prerouting-pre-dnat"
	nftFilterOutputPreDNAT     = "filter-output-pre-dnat"
	nftFilterInput             = "filter-input"
	nftFilterForward           = "filter-forward"
	nftFilterOutput            = "filter-output"
	nftNATPrerouting           = "nat-prerouting"
	nftNATOutput               = "nat-output"
	nftNATPostrouting          = "nat-postrouting"

	nftServicesChain          = "services"
	nftServiceIPsMap          = "service-ips"
	nftServiceNodePortsMap    = "service-nodeports"
	nftNodePortIPsSet         = "nodeport-ips"
	nftClusterIPsSet          = "cluster-ips"
	nftServiceEndpointsCheck  = "service-endpoints-check"
	nftNodePortEndpointsCheck = "nodeport-endpoints-check"
	nftNoEndpointServicesMap  = "no-endpoint-services"
	nftNoEndpointNodePortsMap = "no-endpoint-nodeports"
	nftRejectChain            = "reject-chain"
	nftClusterIPsCheckChain   = "cluster-ips-check"
	nftFirewallIPsMap         = "firewall-ips"
	nftFirewallCheckChain     = "firewall-check"
	nftMasqueradingChain      = "masquerading"
	nftHairpinSet             = "hairpin-connections"
	nftMarkMasqChain          = "mark-for-masquerade" // up to 1.35

	// Base chains up to 1.33.
	nftFilterPrerouting     = "filter-prerouting"
	nftFilterOutputPostDNAT = "filter-output-post-dnat"

	// nftCommentLengthMax is knftables.CommentLengthMax: longer element
	// comments are truncated (truncateNFTablesComment).
	nftCommentLengthMax = 128

	// nftDynamicSetSize is the size nft gives a dynamic set created
	// without one, and lists.
	nftDynamicSetSize = 65535

	// nftRulesetFile is the name of the generated listing.
	nftRulesetFile = "nft-ruleset.txt"

	// nftUnallocatedComment is the comment of the cluster-ips-check rule
	// that drops traffic to unallocated ClusterIPs of the ServiceCIDRs.
	nftUnallocatedComment = "Drop traffic to unallocated ClusterIPs"
)

// Per-service name prefixes (servicePortPolicyClusterChainNamePrefix and
// friends).
const (
	nftServicePrefix  = "service-"
	nftLocalPrefix    = "local-"
	nftExternalPrefix = "external-"
	nftFirewallPrefix = "firewall-"
	nftEndpointPrefix = "endpoint-"
	nftAffinityPrefix = "affinity-"
)

// nftBaseChain is one nftablesBaseChains entry, with the priority as nft
// lists it for its hook.
type nftBaseChain struct {
	name, typ, hook string
	priority        int32
}

// nftBaseChains mirrors nftablesBaseChains of v1.34-v1.37: the pre-DNAT
// filter chains at dstnat-10 (-110), the filter chains at filter (0), the
// nat chains at dstnat (-100) and srcnat (100).
var nftBaseChains = []nftBaseChain{
	{nftFilterPreroutingPreDNAT, "filter", "prerouting", -110},
	{nftFilterOutputPreDNAT, "filter", "output", -110},
	{nftFilterInput, "filter", "input", 0},
	{nftFilterForward, "filter", "forward", 0},
	{nftFilterOutput, "filter", "output", 0},
	{nftNATPrerouting, "nat", "prerouting", -100},
	{nftNATOutput, "nat", "output", -100},
	{nftNATPostrouting, "nat", "postrouting", 100},
}

// nftBaseChains133 mirrors nftablesBaseChains of v1.30 and v1.33, before
// NFTablesPreDNATFilterChains: every filter chain at dstnat-10 (-110) but
// filter-output-post-dnat at dstnat+10 (-90).
var nftBaseChains133 = []nftBaseChain{
	{nftFilterPrerouting, "filter", "prerouting", -110},
	{nftFilterInput, "filter", "input", -110},
	{nftFilterForward, "filter", "forward", -110},
	{nftFilterOutput, "filter", "output", -110},
	{nftFilterOutputPostDNAT, "filter", "output", -90},
	{nftNATPrerouting, "nat", "prerouting", -100},
	{nftNATOutput, "nat", "output", -100},
	{nftNATPostrouting, "nat", "postrouting", 100},
}

// nftJumpChain is one nftablesJumpChains entry.
type nftJumpChain struct{ dst, src, extra string }

// nftJumpChains mirrors nftablesJumpChains of v1.34-v1.37, in its order
// (the order of the rules in each base chain).
var nftJumpChains = []nftJumpChain{
	{nftNodePortEndpointsCheck, nftFilterInput, "ct state new"},
	{nftServiceEndpointsCheck, nftFilterInput, "ct state new"},
	{nftServiceEndpointsCheck, nftFilterForward, "ct state new"},
	{nftServiceEndpointsCheck, nftFilterOutput, "ct state new"},
	{nftFirewallCheckChain, nftFilterPreroutingPreDNAT, "ct state new"},
	{nftFirewallCheckChain, nftFilterOutputPreDNAT, "ct state new"},
	{nftServicesChain, nftNATOutput, ""},
	{nftServicesChain, nftNATPrerouting, ""},
	{nftMasqueradingChain, nftNATPostrouting, ""},
	{nftClusterIPsCheckChain, nftFilterForward, "ct state new"},
	{nftClusterIPsCheckChain, nftFilterOutput, "ct state new"},
}

// nftJumpChains133 mirrors nftablesJumpChains of v1.30 and v1.33.
var nftJumpChains133 = []nftJumpChain{
	{nftNodePortEndpointsCheck, nftFilterInput, "ct state new"},
	{nftServiceEndpointsCheck, nftFilterInput, "ct state new"},
	{nftServiceEndpointsCheck, nftFilterForward, "ct state new"},
	{nftServiceEndpointsCheck, nftFilterOutput, "ct state new"},
	{nftFirewallCheckChain, nftFilterPrerouting, "ct state new"},
	{nftFirewallCheckChain, nftFilterOutput, "ct state new"},
	{nftServicesChain, nftNATOutput, ""},
	{nftServicesChain, nftNATPrerouting, ""},
	{nftMasqueradingChain, nftNATPostrouting, ""},
	{nftClusterIPsCheckChain, nftFilterForward, "ct state new"},
	{nftClusterIPsCheckChain, nftFilterOutputPostDNAT, "ct state new"},
}

// nftablesMode generates kube-proxy's nftables mode.
type nftablesMode struct{}

// Name returns "nftables".
func (nftablesMode) Name() string { return model.ModeNFTables }

// generate returns the tables ip and ip6 kube-proxy that one full sync of
// each family's proxier writes, as one ruleset listing (the form of
// `nft list ruleset`; the tables of a dual-stack node follow each other).
// Every release with the mode is modelled, each checked against
// pkg/proxy/nftables/proxier.go of its release (1.31 and 1.32 write the
// rules of 1.33; 1.30 differs from them only by
// NFTablesFirewallElementComment; 1.29 has NFTablesFirstLayout, see
// nftables_129.go).
func (nftablesMode) generate(in *input, families []model.Family) (*Dataplane, error) {
	v := in.res.Version
	switch {
	case in.res.Has(resolve.NFTablesFirstLayout) && !in.res.Has(resolve.NFTablesMode):
		// The first layout is generated only with the mode's gate, as
		// kube-proxy runs it; later ones whatever the gate says.
		return nil, fmt.Errorf("kube-proxy %s runs the nftables mode only with the %s feature gate (alpha), which the configuration does not enable", v.MinorString(), nftNFTablesProxyModeGate)
	case in.res.Has(resolve.NFTablesLocalhostNodePorts):
		return nil, fmt.Errorf("the KubeProxyNFTablesLocalhostNodePorts feature gate (localhost node ports in nftables mode) is not modelled")
	}
	var buf bytes.Buffer
	for _, f := range families {
		newNFTProxier(in, f).sync(&buf)
	}
	rs, err := nft.ParseText("expected/"+nftRulesetFile, buf.Bytes())
	if err != nil {
		return nil, fault.Errorf("generating the nftables ruleset: %w", err)
	}
	file := File{Name: nftRulesetFile, Data: nft.Format(rs)}
	if len(families) == 1 {
		file.Family = families[0]
	}
	return &Dataplane{Mode: model.ModeNFTables, NFT: rs, Files: []File{file}}, nil
}

// nftProxier is the state of one single-family nftables proxier that
// syncProxyRules reads (the fields of pkg/proxy/nftables/proxier.go's
// Proxier, resolved from the configuration as NewProxier resolves them),
// and the table it writes.
type nftProxier struct {
	in     *input
	family model.Family
	// hairpin reports NFTablesHairpin: the hairpin-connections set and one
	// masquerade rule for ClusterIPs instead of mark-for-masquerade jumps,
	// endpoint chains only for session affinity.
	hairpin bool
	// truncateComments reports NFTablesCommentsTruncated.
	truncateComments bool
	// ipX is "ip" or "ip6", addrType "ipv4_addr" or "ipv6_addr".
	ipX, addrType string

	masqueradeAll bool
	// masqRule is "meta mark set meta mark | MARK", as nft lists the
	// "mark set mark or MARK" kube-proxy 1.36+ writes, and "jump
	// mark-for-masquerade" before.
	masqRule            string
	masqueradeMark      string
	ifLocal, ifNotLocal string
	nodeIP              netip.Addr
	nodePortAddresses   *nodePortAddresses
	serviceCIDRs        []netip.Prefix
	ports               []*model.ServicePort

	chains map[string]*nftChainText
	sets   map[string]*nftSetText
}

// nftChainText is a chain being written: its declaration lines and rules.
type nftChainText struct {
	header []string
	rules  []string
}

// nftSetText is a set or map being written: its declaration lines and its
// elements by key. As nftElementStorage.ensureElem does, an element whose
// key is already there replaces it only when its verdict differs (the
// comment is not compared).
type nftSetText struct {
	isMap    bool
	header   []string
	elements map[string]nftPendingElement
}

// nftPendingElement is an element being written: its comment (quoted, with
// the word "comment") and its verdict.
type nftPendingElement struct{ comment, verdict string }

func newNFTProxier(in *input, f model.Family) *nftProxier {
	p := &nftProxier{
		in: in, family: f, ipX: "ip", addrType: "ipv4_addr",
		hairpin:          in.res.Has(resolve.NFTablesHairpin),
		truncateComments: in.res.Has(resolve.NFTablesCommentsTruncated),
		masqueradeAll:    in.cfg.NFTables.MasqueradeAll,
		nodeIP:           in.nodeIPs[f],
		ports:            in.portsOf(f),
		chains:           map[string]*nftChainText{},
		sets:             map[string]*nftSetText{},
	}
	if f == model.IPv6 {
		p.ipX, p.addrType = "ip6", "ipv6_addr"
	}
	bit := int32(14)
	if b := in.cfg.NFTables.MasqueradeBit; b != nil {
		bit = *b
	}
	p.masqueradeMark = fmt.Sprintf("0x%08x", uint32(1)<<uint(bit))
	p.masqRule = "meta mark set meta mark | " + p.masqueradeMark
	if !p.hairpin {
		p.masqRule = "jump " + nftMarkMasqChain
	}
	p.ifLocal, p.ifNotLocal = nftLocalDetector(in, f)
	p.nodePortAddresses = newNodePortAddresses(f, nftNodePortAddresses(in))
	p.serviceCIDRs = in.nftServiceCIDRs(f)
	return p
}

// nftLocalDetector returns the IfLocalNFT and IfNotLocalNFT words of the
// family's local traffic detector (pkg/proxy/util/localdetector.go), as
// nft lists them; both empty for the no-op detector.
func nftLocalDetector(in *input, f model.Family) (ifLocal, ifNotLocal string) {
	d := newLocalDetector(in, f)
	if !d.implemented() {
		return "", ""
	}
	ipX := "ip"
	if f == model.IPv6 {
		ipX = "ip6"
	}
	switch d.ifLocal[0] {
	case "-s":
		return ipX + " saddr " + d.ifLocal[1], ipX + " saddr != " + d.ifLocal[1]
	default: // "-i NAME", or "-i PREFIX+" which nftables spells PREFIX*
		name := d.ifLocal[1]
		if pre, ok := strings.CutSuffix(name, "+"); ok {
			name = pre + "*"
		}
		return "iifname " + strconv.Quote(name), "iifname != " + strconv.Quote(name)
	}
}

// nftNodePortAddresses returns the nodePortAddresses of the configuration
// with the keywords expanded; an empty list is ["primary"], as kube-proxy's
// start-up defaults it in nftables mode (NodePortAddressesPrimary) whatever
// mode the configuration names.
func nftNodePortAddresses(in *input) []string {
	if len(in.cfg.NodePortAddresses) > 0 || !in.res.Has(resolve.NodePortAddressesPrimary) {
		return in.nodePortAddresses()
	}
	var out []string
	if ip, ok := in.nodeIPs[model.IPv4]; ok && !ip.IsLoopback() {
		out = append(out, ip.String()+"/32")
	}
	if ip, ok := in.nodeIPs[model.IPv6]; ok && !ip.IsLoopback() {
		out = append(out, ip.String()+"/128")
	}
	return out
}

// nftServiceCIDRs returns the ServiceCIDRs of family f: those of the
// environment, else those of the ServiceCIDR objects of the exports, else
// those the captured ruleset's kube-proxy table drops traffic to (its
// "Drop traffic to unallocated ClusterIPs" rule).
func (in *input) nftServiceCIDRs(f model.Family) []netip.Prefix {
	var out []netip.Prefix
	cidrs := in.env.ServiceCIDRs
	if cidrs == nil && in.snap.Objects != nil && len(in.snap.Objects.ServiceCIDRs) > 0 {
		cidrs = []netip.Prefix{}
		for _, o := range in.snap.Objects.ServiceCIDRs {
			for _, s := range o.Spec.CIDRs {
				if p, err := netip.ParsePrefix(s); err == nil {
					cidrs = append(cidrs, p.Masked())
				}
			}
		}
	}
	if cidrs != nil {
		for _, c := range cidrs {
			if model.FamilyOf(c.Addr()) == f {
				out = append(out, c)
			}
		}
		return out
	}
	fam := nftables.TableFamilyIPv4
	if f == model.IPv6 {
		fam = nftables.TableFamilyIPv6
	}
	for _, rs := range in.snap.NFT {
		t := rs.Table(fam, kpnames.NFTTable)
		if t == nil {
			continue
		}
		c := t.Chain(nftClusterIPsCheckChain)
		if c == nil {
			continue
		}
		for _, r := range c.Rules {
			if r.Comment != nftUnallocatedComment || len(r.Stmts) == 0 {
				continue
			}
			m, ok := r.Stmts[0].(*nft.Match)
			if !ok {
				continue
			}
			var vals []string
			switch x := m.Right.(type) {
			case *nft.Value:
				vals = []string{x.Text}
			case *nft.AnonSet:
				for _, e := range x.Elements {
					vals = e.AppendKey(vals)
				}
			}
			for _, v := range vals {
				if pfx, err := netip.ParsePrefix(v); err == nil {
					out = append(out, pfx)
				} else if a, err := netip.ParseAddr(v); err == nil {
					out = append(out, netip.PrefixFrom(a, a.BitLen()))
				}
			}
		}
		return out
	}
	return out
}

// chain returns the chain of the given name, creating it.
func (p *nftProxier) chain(name string) *nftChainText {
	c := p.chains[name]
	if c == nil {
		c = &nftChainText{}
		p.chains[name] = c
	}
	return c
}

// rule appends a rule to a chain; comment, if any, is appended quoted.
func (p *nftProxier) rule(chain, text, comment string) {
	c := p.chain(chain)
	if comment != "" {
		text += " comment " + strconv.Quote(comment)
	}
	c.rules = append(c.rules, text)
}

// set declares a set or map with its declaration lines.
func (p *nftProxier) set(name string, isMap bool, header ...string) {
	p.sets[name] = &nftSetText{isMap: isMap, header: header, elements: map[string]nftPendingElement{}}
}

// element adds an element: key (with its comment, if any) and, for maps,
// the verdict.
func (p *nftProxier) element(set, key, comment, verdict string) {
	s := p.sets[set]
	if s == nil {
		return
	}
	if comment != "" {
		if len(comment) > nftCommentLengthMax && p.truncateComments {
			comment = comment[:nftCommentLengthMax] // truncateNFTablesComment
		}
		comment = " comment " + strconv.Quote(comment)
	}
	if old, ok := s.elements[key]; ok && old.verdict == verdict {
		return
	}
	s.elements[key] = nftPendingElement{comment, verdict}
}

// sync writes the family's table: setupNFTables, then the loop of
// syncProxyRules over the service ports, as one full sync leaves them.
func (p *nftProxier) sync(buf *bytes.Buffer) {
	p.setup()
	for _, sp := range p.ports {
		p.syncServicePort(sp)
	}
	p.write(buf)
}

// setup mirrors setupNFTables: the base chains and their jumps, the
// masquerading chains (with NFTablesHairpin: and the hairpin set), the
// ClusterIP checks, the node port addresses, the no-endpoint maps and
// their checks, the firewall map and the service dispatch. The first
// layout (NFTablesFirstLayout, 1.29) has other base chains, drops INVALID
// packets in its forward chain, has no ClusterIP checks, checks services
// and node ports in one endpoints-check chain and source ranges with the
// firewall sets.
func (p *nftProxier) setup() {
	ipX, addr := p.ipX, p.addrType
	first := p.in.res.Has(resolve.NFTablesFirstLayout)
	matchNotLocalhost := "ip daddr != 127.0.0.0/8"
	fam := nftables.TableFamilyIPv4
	if p.family == model.IPv6 {
		matchNotLocalhost = "ip6 daddr != ::1"
		fam = nftables.TableFamilyIPv6
	}
	bases, jumps := nftBaseChains, nftJumpChains
	switch {
	case first:
		bases, jumps = nftBaseChains129, nftJumpChains129
	case !p.in.res.Has(resolve.NFTablesPreDNATFilterChains):
		bases, jumps = nftBaseChains133, nftJumpChains133
	}
	for _, bc := range bases {
		p.chain(bc.name).header = []string{fmt.Sprintf("type %s hook %s priority %s; policy accept;", bc.typ, bc.hook, nft.PriorityText(fam, bc.hook, nftables.ChainPriority(bc.priority)))}
	}
	for _, j := range jumps {
		p.chain(j.dst)
		text := "jump " + j.dst
		if j.extra != "" {
			text = j.extra + " " + text
		}
		p.rule(j.src, text, "")
	}
	p.chain(nftServicesChain)
	p.chain(nftMasqueradingChain)

	mark := p.masqueradeMark
	if p.hairpin {
		p.set(nftHairpinSet, false, "type "+addr+" . "+addr+" . inet_proto . inet_service", `comment "service hairpin connections"`)
		p.rule(nftMasqueradingChain, "meta mark & "+mark+" != 0x00000000 meta mark set meta mark ^ "+mark+" masquerade fully-random", "")
		p.rule(nftMasqueradingChain, "ct status dnat "+ipX+" saddr . "+ipX+" daddr . meta l4proto . th dport @"+nftHairpinSet+" masquerade fully-random", "")
	} else {
		p.rule(nftMarkMasqChain, "meta mark set meta mark | "+mark, "")
		p.rule(nftMasqueradingChain, "meta mark & "+mark+" == 0x00000000 return", "")
		p.rule(nftMasqueradingChain, "meta mark set meta mark ^ "+mark, "")
		p.rule(nftMasqueradingChain, "masquerade fully-random", "")
	}

	if first {
		// The INVALID drop, unless nf_conntrack_tcp_be_liberal is set (read
		// at start-up, as the iptables mode of 1.29 does).
		if !(p.in.env.TCPBeLiberal || p.in.cfg.Conntrack.TCPBeLiberal) {
			p.rule(nftForwardChain129, "ct state invalid drop", "")
		}
	} else {
		p.set(nftClusterIPsSet, false, "type "+addr, `comment "Active ClusterIPs"`)
		p.rule(nftClusterIPsCheckChain, ipX+" daddr @"+nftClusterIPsSet+" reject", "Reject traffic to invalid ports of ClusterIPs")
		if len(p.serviceCIDRs) > 0 {
			p.rule(nftClusterIPsCheckChain, ipX+" daddr "+nftAnonSet(p.serviceCIDRs)+" drop", nftUnallocatedComment)
		}
	}

	nodePortMatch := ipX + " daddr @" + nftNodePortIPsSet
	if p.nodePortAddresses.matchAll {
		nodePortMatch = "fib daddr type local " + matchNotLocalhost
	} else {
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
	if first {
		p.rule(nftEndpointsCheck129, ipX+" daddr . meta l4proto . th dport vmap @"+nftNoEndpointServicesMap, "")
		p.rule(nftEndpointsCheck129, nodePortMatch+" meta l4proto . th dport vmap @"+nftNoEndpointNodePortsMap, "")
		p.setupFirewall129()
	} else {
		p.rule(nftServiceEndpointsCheck, ipX+" daddr . meta l4proto . th dport vmap @"+nftNoEndpointServicesMap, "")
		// The node's own addresses are checked in the input hook.
		nodePortCheck := nodePortMatch
		if p.nodePortAddresses.matchAll {
			nodePortCheck = matchNotLocalhost
		}
		p.rule(nftNodePortEndpointsCheck, nodePortCheck+" meta l4proto . th dport vmap @"+nftNoEndpointNodePortsMap, "")

		p.set(nftFirewallIPsMap, true, "type "+addr+" . inet_proto . inet_service : verdict", `comment "destinations that are subject to LoadBalancerSourceRanges"`)
		p.rule(nftFirewallCheckChain, ipX+" daddr . meta l4proto . th dport vmap @"+nftFirewallIPsMap, "")
	}

	p.set(nftServiceIPsMap, true, "type "+addr+" . inet_proto . inet_service : verdict", `comment "ClusterIP, ExternalIP and LoadBalancer IP traffic"`)
	p.set(nftServiceNodePortsMap, true, "type inet_proto . inet_service : verdict", `comment "NodePort traffic"`)
	switch {
	case !p.hairpin: // the masquerade rules are per service port
	case p.masqueradeAll:
		p.rule(nftServicesChain, ipX+" daddr @"+nftClusterIPsSet+" "+p.masqRule, "masquerade all clusterIP traffic")
	case p.ifNotLocal != "":
		p.rule(nftServicesChain, ipX+" daddr @"+nftClusterIPsSet+" "+p.ifNotLocal+" "+p.masqRule, "masquerade clusterIP traffic from outside cluster")
	}
	p.rule(nftServicesChain, ipX+" daddr . meta l4proto . th dport vmap @"+nftServiceIPsMap, "")
	p.rule(nftServicesChain, nodePortMatch+" meta l4proto . th dport vmap @"+nftServiceNodePortsMap, "")
}

// nftAnonSet writes prefixes as nft lists an anonymous interval set: the
// value alone when there is one, else "{ a, b }" in ascending order; host
// prefixes as plain addresses.
func nftAnonSet(pfxs []netip.Prefix) string {
	sorted := append([]netip.Prefix(nil), pfxs...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if c := sorted[i].Addr().Compare(sorted[j].Addr()); c != 0 {
			return c < 0
		}
		return sorted[i].Bits() < sorted[j].Bits()
	})
	parts := make([]string, 0, len(sorted))
	for _, pf := range sorted {
		parts = append(parts, nftPrefix(pf))
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}

// nftPrefix writes a prefix as nft lists it: a host prefix as its address.
func nftPrefix(pf netip.Prefix) string {
	pf = pf.Masked()
	if pf.IsSingleIP() {
		return pf.Addr().String()
	}
	return pf.String()
}

// Chain and set names of one service port (newServiceInfo,
// newEndpointInfo).
func nftChainBase(sp *model.ServicePort) string {
	return kpnames.NFTServiceChainBase(sp.Name.Namespace, sp.Name.Name, sp.Name.Port, sp.ProtoLower())
}

func nftEndpointBase(sp *model.ServicePort, ep *model.Endpoint) string {
	return kpnames.NFTEndpointChainBase(sp.Name.Namespace, sp.Name.Name, sp.Name.Port, sp.ProtoLower(), ep.IP.String(), ep.Port)
}

// syncServicePort writes one service port: the body of syncProxyRules'
// loop over svcPortMap (v1.29-v1.37; the first layout has no cluster-ips
// set and checks source ranges with the firewall and firewall-allow sets).
func (p *nftProxier) syncServicePort(sp *model.ServicePort) {
	first := p.in.res.Has(resolve.NFTablesFirstLayout)
	f, ipX := p.family, p.ipX
	protocol := sp.ProtoLower()
	svcPort := strconv.Itoa(int(sp.Port))
	comment := sp.String()
	clusterIP, _ := sp.ClusterIP(f)
	externalIPs := sp.ExternalIPsOf(f)
	lbIPs := sp.LoadBalancerVIPsOf(f)
	sourceRanges := sp.SourceRangesOf(f)

	sel := p.in.selection(model.ModeNFTables, sp, f)
	clusterEndpoints, localEndpoints, allReachable, hasEndpoints := sel.Cluster, sel.Local, sel.InUse, sel.HasEndpoints
	affinity := sp.AffinityClientIP

	base := nftChainBase(sp)
	// Endpoint chains (affinity sets) exist with affinity, and for every
	// endpoint before 1.36.
	epChains := affinity || !p.hairpin
	var epBase map[*model.Endpoint]string
	if epChains {
		epBase = make(map[*model.Endpoint]string, len(allReachable))
	}
	for _, ep := range allReachable {
		if epChains {
			epBase[ep] = nftEndpointBase(sp, ep)
			p.chain(nftEndpointPrefix + epBase[ep])
		}
		if ep.Local && p.hairpin {
			ip := ep.IP.String()
			p.element(nftHairpinSet, ip+" . "+ip+" . "+protocol+" . "+strconv.Itoa(int(ep.Port)), "", "")
		}
	}

	clusterPolicyChain := nftServicePrefix + base
	usesClusterPolicyChain := len(clusterEndpoints) > 0 && sel.UsesCluster
	if usesClusterPolicyChain {
		p.chain(clusterPolicyChain)
	}
	localPolicyChain := nftLocalPrefix + base
	usesLocalPolicyChain := len(localEndpoints) > 0 && sel.UsesLocal
	if usesLocalPolicyChain {
		p.chain(localPolicyChain)
	}

	policyChain := func(pol Policy) string {
		if pol == PolicyLocal {
			return localPolicyChain
		}
		return clusterPolicyChain
	}
	internalTrafficChain := policyChain(sel.Internal.Policy)
	hasInternalEndpoints := sel.Internal.Verdict == Forward
	externalPolicyChain := policyChain(sel.External.Policy)
	hasExternalEndpoints := sel.External.Verdict == Forward
	externalTrafficChain := nftExternalPrefix + base
	usesExternalTrafficChain := hasEndpoints && sp.ExternallyAccessible(f)
	if usesExternalTrafficChain {
		p.chain(externalTrafficChain)
	}

	internalVerdict, externalVerdict := nftVerdict(sel.Internal.Verdict), nftVerdict(sel.External.Verdict)

	dest := func(ip netip.Addr) string { return ip.String() + " . " + protocol + " . " + svcPort }

	// Capture the clusterIP (the cluster-ips set after the first layout).
	if !first {
		p.element(nftClusterIPsSet, clusterIP.String(), "", "")
	}
	if hasInternalEndpoints {
		p.element(nftServiceIPsMap, dest(clusterIP), "", "goto "+internalTrafficChain)
	} else {
		p.element(nftNoEndpointServicesMap, dest(clusterIP), comment, internalVerdict)
	}

	// Capture externalIPs.
	for _, eip := range externalIPs {
		if hasEndpoints {
			p.element(nftServiceIPsMap, dest(eip), "", "goto "+externalTrafficChain)
		}
		if !hasExternalEndpoints {
			p.element(nftNoEndpointServicesMap, dest(eip), comment, externalVerdict)
		}
	}

	// Capture load-balancer ingress.
	usesFWChain := len(lbIPs) > 0 && len(sourceRanges) > 0 && !first
	fwChain := nftFirewallPrefix + base
	if usesFWChain {
		p.chain(fwChain)
	}
	for _, lbip := range lbIPs {
		if hasEndpoints {
			p.element(nftServiceIPsMap, dest(lbip), "", "goto "+externalTrafficChain)
		}
		if first && len(sourceRanges) > 0 {
			p.firewall129(dest(lbip), comment, lbip, sourceRanges)
		}
		if usesFWChain {
			fwComment := ""
			if p.in.res.Has(resolve.NFTablesFirewallElementComment) {
				fwComment = comment
			}
			p.element(nftFirewallIPsMap, dest(lbip), fwComment, "goto "+fwChain)
		}
	}
	if !hasExternalEndpoints {
		for _, lbip := range lbIPs {
			p.element(nftNoEndpointServicesMap, dest(lbip), comment, externalVerdict)
		}
	}

	// Capture nodeports.
	if sp.NodePort != 0 {
		np := protocol + " . " + strconv.Itoa(int(sp.NodePort))
		if hasEndpoints {
			p.element(nftServiceNodePortsMap, np, "", "goto "+externalTrafficChain)
		}
		if !hasExternalEndpoints {
			p.element(nftNoEndpointNodePortsMap, np, comment, externalVerdict)
		}
	}

	// Internal traffic handling (before NFTablesHairpin): masquerade the
	// ClusterIP traffic of all sources, or of those outside the cluster
	// (before NFTablesClusterIPMasqueradeAnyPort for the service port
	// only).
	if hasInternalEndpoints && !p.hairpin {
		match := ipX + " daddr " + clusterIP.String()
		if !p.in.res.Has(resolve.NFTablesClusterIPMasqueradeAnyPort) {
			match += " " + protocol + " dport " + svcPort
		}
		switch {
		case p.masqueradeAll:
			p.rule(internalTrafficChain, match+" "+p.masqRule, "")
		case p.ifNotLocal != "":
			p.rule(internalTrafficChain, match+" "+p.ifNotLocal+" "+p.masqRule, "")
		}
	}

	// External traffic handling.
	if usesExternalTrafficChain {
		if !sp.ExternalPolicyLocal {
			masqComment := "masquerade"
			if !p.hairpin {
				masqComment = ""
			}
			p.rule(externalTrafficChain, p.masqRule, masqComment)
		} else {
			if p.ifLocal != "" {
				p.rule(externalTrafficChain, p.ifLocal+" goto "+clusterPolicyChain, "short-circuit pod traffic")
			}
			p.rule(externalTrafficChain, "fib saddr type local "+p.masqRule, "masquerade local traffic")
			p.rule(externalTrafficChain, "fib saddr type local goto "+clusterPolicyChain, "short-circuit local traffic")
		}
		if hasExternalEndpoints {
			p.rule(externalTrafficChain, "goto "+externalPolicyChain, "")
		}
	}

	// The firewall chain.
	if usesFWChain {
		sources := append([]netip.Prefix(nil), sourceRanges...)
		allowFromNode := false
		for _, cidr := range sourceRanges {
			if p.nodeIP.IsValid() && cidr.Contains(p.nodeIP) {
				allowFromNode = true
			}
		}
		if allowFromNode {
			for _, lbip := range lbIPs {
				sources = append(sources, netip.PrefixFrom(lbip, lbip.BitLen()))
			}
		}
		p.rule(fwChain, ipX+" saddr != "+nftAnonSet(sources)+" drop", "")
	}

	// Affinity sets.
	if affinity {
		for _, ep := range allReachable {
			p.set(nftAffinityPrefix+epBase[ep], false, "type "+p.addrType, fmt.Sprintf("size %d", nftDynamicSetSize),
				"flags dynamic,timeout", fmt.Sprintf("timeout %ds", sp.AffinityTimeout))
		}
	}

	// The endpoint rules and chains.
	if !p.hairpin {
		if usesClusterPolicyChain {
			p.writeJumps(clusterPolicyChain, clusterEndpoints, epBase, affinity)
		}
		if usesLocalPolicyChain {
			p.writeJumps(localPolicyChain, localEndpoints, epBase, affinity)
		}
		for _, ep := range allReachable {
			chain := nftEndpointPrefix + epBase[ep]
			p.rule(chain, ipX+" saddr "+ep.IP.String()+" "+p.masqRule, "")
			if affinity {
				p.rule(chain, "update @"+nftAffinityPrefix+epBase[ep]+" { "+ipX+" saddr }", "")
			}
			p.rule(chain, "meta l4proto "+protocol+" dnat to "+ep.String(), "")
		}
		return
	}
	if !affinity {
		if usesClusterPolicyChain {
			p.writeDNATs(sp, clusterPolicyChain, clusterEndpoints)
		}
		if usesLocalPolicyChain {
			p.writeDNATs(sp, localPolicyChain, localEndpoints)
		}
		return
	}
	if usesClusterPolicyChain {
		p.writeJumps(clusterPolicyChain, clusterEndpoints, epBase, true)
	}
	if usesLocalPolicyChain {
		p.writeJumps(localPolicyChain, localEndpoints, epBase, true)
	}
	for _, ep := range allReachable {
		chain := nftEndpointPrefix + epBase[ep]
		p.rule(chain, "update @"+nftAffinityPrefix+epBase[ep]+" { "+ipX+" saddr }", "")
		p.rule(chain, "meta l4proto "+protocol+" dnat to "+ep.String(), "")
	}
}

// writeDNATs mirrors writeServiceToEndpointDNATs (NFTablesHairpin): one
// DNAT to the only endpoint (NFTablesSingleEndpointDNAT), else a DNAT
// through a numgen map of address . port.
func (p *nftProxier) writeDNATs(sp *model.ServicePort, chain string, endpoints []*model.Endpoint) {
	protocol := sp.ProtoLower()
	if len(endpoints) == 1 && p.in.res.Has(resolve.NFTablesSingleEndpointDNAT) {
		p.rule(chain, "meta l4proto "+protocol+" dnat to "+endpoints[0].String(), "")
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "meta l4proto %s dnat %s to numgen random mod %d map { ", protocol, p.ipX, len(endpoints))
	for i, ep := range endpoints {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d : %s . %d", i, ep.IP, ep.Port)
	}
	b.WriteString(" }")
	p.rule(chain, b.String(), "")
}

// writeJumps mirrors writeServiceToEndpointJumps (NFTablesHairpin) and
// writeServiceToEndpointRules (before): with affinity, a rule per endpoint
// for the clients it remembers, then a numgen verdict map over the
// endpoint chains.
func (p *nftProxier) writeJumps(chain string, endpoints []*model.Endpoint, epBase map[*model.Endpoint]string, affinity bool) {
	if affinity {
		for _, ep := range endpoints {
			p.rule(chain, p.ipX+" saddr @"+nftAffinityPrefix+epBase[ep]+" goto "+nftEndpointPrefix+epBase[ep], "")
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "numgen random mod %d vmap { ", len(endpoints))
	for i, ep := range endpoints {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d : goto %s%s", i, nftEndpointPrefix, epBase[ep])
	}
	b.WriteString(" }")
	p.rule(chain, b.String(), "")
}

// write prints the table in `nft list ruleset` form: the sets, then the
// maps, then the chains, each sorted by name (kube-proxy creates them in
// Go map order; the order carries no meaning), the elements of each sorted.
func (p *nftProxier) write(buf *bytes.Buffer) {
	buf.WriteString("table " + p.ipX + " " + kpnames.NFTTable + " {\n\tcomment \"rules for kube-proxy\"\n")
	names := make([]string, 0, len(p.sets))
	for n := range p.sets {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := p.sets[names[i]], p.sets[names[j]]
		if a.isMap != b.isMap {
			return !a.isMap
		}
		return names[i] < names[j]
	})
	for _, n := range names {
		s := p.sets[n]
		kind := "set"
		if s.isMap {
			kind = "map"
		}
		buf.WriteString("\t" + kind + " " + n + " {\n")
		for _, h := range s.header {
			buf.WriteString("\t\t" + h + "\n")
		}
		if len(s.elements) > 0 {
			keys := make([]string, 0, len(s.elements))
			for k := range s.elements {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			buf.WriteString("\t\telements = { ")
			for i, k := range keys {
				if i > 0 {
					buf.WriteString(",\n\t\t\t     ")
				}
				e := s.elements[k]
				buf.WriteString(k + e.comment)
				if s.isMap {
					buf.WriteString(" : " + e.verdict)
				}
			}
			buf.WriteString(" }\n")
		}
		buf.WriteString("\t}\n\n")
	}
	names = names[:0]
	for n := range p.chains {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		c := p.chains[n]
		if i > 0 {
			buf.WriteString("\n")
		}
		buf.WriteString("\tchain " + n + " {\n")
		for _, h := range c.header {
			buf.WriteString("\t\t" + h + "\n")
		}
		for _, r := range c.rules {
			buf.WriteString("\t\t" + r + "\n")
		}
		buf.WriteString("\t}\n")
	}
	buf.WriteString("}\n")
}

// nftVerdict returns the verdict of the no-endpoint-services map for the
// traffic of a route with verdict v.
func nftVerdict(v Verdict) string {
	switch v {
	case Reject:
		return "goto " + nftRejectChain
	case Drop:
		return "drop"
	}
	return ""
}
