package proxier

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/internal/fault"
	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// Constants of kube-proxy's iptables mode (pkg/proxy/iptables/proxier.go);
// its chain names are kpnames'.
const (
	// largeClusterEndpointsThreshold is the number of endpoints above
	// which kube-proxy drops the per-endpoint comments
	// (largeClusterEndpointsThreshold 1.25+, endpointChainsNumberThreshold
	// before).
	largeClusterEndpointsThreshold = 1000

	// nfacct counters (pkg/proxy/metrics, 1.31+).
	nfacctCTStateInvalidDropped = "ct_state_invalid_dropped_pkts"
	nfacctLocalhostNodePorts    = "localhost_nps_accepted_pkts"
)

// iptablesMode generates kube-proxy's iptables mode.
type iptablesMode struct{}

// Name returns "iptables".
func (iptablesMode) Name() string { return model.ModeIPTables }

// generate returns the iptables dumps kube-proxy programs, one per family
// (a single-stack proxier each, as pkg/proxy/metaproxier runs them for a
// dual-stack node).
func (iptablesMode) generate(in *input, families []model.Family) (*Dataplane, error) {
	dp := &Dataplane{Mode: model.ModeIPTables}
	for _, f := range families {
		p := newIPTablesProxier(in, f)
		d, text, err := p.sync()
		if err != nil {
			return nil, fault.Errorf("generating the %s iptables rules: %w", f, err)
		}
		if d != nil {
			dp.IPTables = append(dp.IPTables, d)
		}
		dp.Files = append(dp.Files, File{Name: iptablesFileName(f), Family: f, Data: text})
	}
	return dp, nil
}

func iptablesFileName(f model.Family) string {
	if f == model.IPv6 {
		return "ip6tables-save.txt"
	}
	return "iptables-save.txt"
}

// iptablesProxier is the state of one single-family iptables proxier that
// syncProxyRules reads (the fields of pkg/proxy/iptables/proxier.go's
// Proxier, resolved from the configuration the way NewProxier resolves
// them).
type iptablesProxier struct {
	in     *input
	family model.Family
	isIPv6 bool

	masqueradeAll       bool
	masqueradeMark      string
	localDetector       localDetector
	nodeIP              netip.Addr
	localhostNodePorts  bool
	nodePortAddresses   *nodePortAddresses
	conntrackTCPLiberal bool
	nfacct              bool
	randomFully         bool
	largeClusterMode    bool

	ports    []*model.ServicePort
	sepNames map[*model.Endpoint]string

	mangle, filter, nat *ruleTable
}

func newIPTablesProxier(in *input, f model.Family) *iptablesProxier {
	fam := iptables.Family(f)
	p := &iptablesProxier{
		in: in, family: f, isIPv6: f == model.IPv6,
		masqueradeAll: in.cfg.IPTables.MasqueradeAll,
		nodeIP:        in.nodeIPs[f],
		ports:         in.portsOf(f),
		sepNames:      map[*model.Endpoint]string{},
		mangle:        newRuleTable("mangle", fam),
		filter:        newRuleTable("filter", fam),
		nat:           newRuleTable("nat", fam),
	}
	bit := int32(14)
	if b := in.cfg.IPTables.MasqueradeBit; b != nil {
		bit = *b
	}
	// fmt.Sprintf("%#08x", 1<<bit): "0x00004000".
	p.masqueradeMark = fmt.Sprintf("%#08x", 1<<uint(bit))
	p.localDetector = newLocalDetector(in, f)
	p.nodePortAddresses = newNodePortAddresses(f, in.nodePortAddresses())

	// localhostNodePorts: IPv4 only, as configured, and only when
	// nodePortAddresses include 127.0.0.1; always on IPv4 before the
	// option.
	switch {
	case p.isIPv6:
		p.localhostNodePorts = false
	case !in.res.Has(resolve.LocalhostNodePortsOption):
		p.localhostNodePorts = true
	default:
		p.localhostNodePorts = in.cfg.IPTables.LocalhostNodePorts == nil || *in.cfg.IPTables.LocalhostNodePorts
		if in.res.Has(resolve.LocalhostNodePortsFollowAddresses) && !p.nodePortAddresses.containsIPv4Loopback {
			p.localhostNodePorts = false
		}
	}
	p.conntrackTCPLiberal = in.res.Has(resolve.ConntrackTCPBeLiberal) && (in.env.TCPBeLiberal || in.cfg.Conntrack.TCPBeLiberal)
	p.nfacct = in.res.Has(resolve.NFAcctCounters) && !in.env.NoNFAcct
	p.randomFully = in.res.Has(resolve.RandomFullyAlways) || !in.env.NoRandomFully

	total := 0
	for _, sp := range p.ports {
		total += p.endpointsMapLen(sp)
	}
	p.largeClusterMode = total > largeClusterEndpointsThreshold
	return p
}

// endpointsMapLen returns how many endpoints of sp's family kube-proxy's
// endpoints map holds: all of them, or only the ready ones before
// NotReadyEndpointsTracked.
func (p *iptablesProxier) endpointsMapLen(sp *model.ServicePort) int {
	all := p.in.res.Has(resolve.NotReadyEndpointsTracked)
	n := 0
	for _, e := range sp.Endpoints {
		if e.Family() == p.family && (all || e.Ready) {
			n++
		}
	}
	return n
}

// sync writes the whole data plane and returns it parsed, with its text.
func (p *iptablesProxier) sync() (*iptables.Dump, []byte, error) {
	p.ensureChains()
	if p.in.res.Has(resolve.PolicyChains) {
		p.syncProxyRules()
	} else {
		p.syncProxyRulesXLB()
	}
	name := "expected/" + iptablesFileName(p.family)
	return canonicalDump(name, iptables.Family(p.family), "", p.in.textOnly, p.mangle, p.filter, p.nat)
}

// jumpChain is one iptablesJumpChains entry: a rule in a built-in chain
// that jumps to one of kube-proxy's chains.
type jumpChain struct {
	table, dst, src, comment string
	extra                    []string
}

var ctNew = []string{"-m", "conntrack", "--ctstate", "NEW"}

// jumpChains returns iptablesJumpChains and iptablesKubeletJumpChains of
// the version (pkg/proxy/iptables/proxier.go v1.20-v1.37), each jump with
// the behaviours it needs: the filter KUBE-NODEPORTS for the health check
// node ports, KUBE-PROXY-FIREWALL, and kube-proxy's KUBE-FIREWALL (jumped
// to without comment).
func (p *iptablesProxier) jumpChains() []jumpChain {
	var out []jumpChain
	add := func(table, dst, src, comment string, extra []string, needs ...resolve.Behaviour) {
		for _, b := range needs {
			if !p.in.res.Has(b) {
				return
			}
		}
		out = append(out, jumpChain{table, dst, src, comment, extra})
	}
	add("filter", kpnames.KubeExternalServices, "INPUT", "kubernetes externally-visible service portals", ctNew)
	add("filter", kpnames.KubeExternalServices, "FORWARD", "kubernetes externally-visible service portals", ctNew)
	add("filter", kpnames.KubeNodePorts, "INPUT", "kubernetes health check service ports", nil, resolve.HealthCheckNodePortsAccepted)
	add("filter", kpnames.KubeServices, "FORWARD", "kubernetes service portals", ctNew)
	add("filter", kpnames.KubeServices, "OUTPUT", "kubernetes service portals", ctNew)
	add("filter", kpnames.KubeForward, "FORWARD", "kubernetes forwarding rules", nil)
	add("filter", kpnames.KubeProxyFirewall, "INPUT", "kubernetes load balancer firewall", ctNew, resolve.FilterTableFirewall)
	add("filter", kpnames.KubeProxyFirewall, "OUTPUT", "kubernetes load balancer firewall", ctNew, resolve.FilterTableFirewall)
	add("filter", kpnames.KubeProxyFirewall, "FORWARD", "kubernetes load balancer firewall", ctNew, resolve.FilterTableFirewall)
	add("nat", kpnames.KubeServices, "OUTPUT", "kubernetes service portals", nil)
	add("nat", kpnames.KubeServices, "PREROUTING", "kubernetes service portals", nil)
	add("nat", kpnames.KubePostrouting, "POSTROUTING", "kubernetes postrouting rules", nil)
	add("filter", kpnames.KubeletFirewall, "INPUT", "", nil, resolve.KubeletFirewallCopy)
	add("filter", kpnames.KubeletFirewall, "OUTPUT", "", nil, resolve.KubeletFirewallCopy)
	return out
}

func (p *iptablesProxier) table(name string) *ruleTable {
	switch name {
	case "filter":
		return p.filter
	case "nat":
		return p.nat
	}
	return p.mangle
}

// ensureChains creates what kube-proxy creates outside the restore input:
// the canary chains of ipt.Monitor in mangle, nat and filter, the jump
// chains with their EnsureRule(Prepend, ...) rules (each prepended, so a
// built-in chain holds them in the reverse of the list order), and, before
// FilterTableFirewall, the nat KUBE-MARK-DROP chain (iptablesEnsureChains,
// no rules).
func (p *iptablesProxier) ensureChains() {
	for _, t := range []*ruleTable{p.mangle, p.nat, p.filter} {
		t.declare(kpnames.KubeProxyCanary)
	}
	jumps := p.jumpChains()
	bySrc := map[string][]jumpChain{}
	for _, j := range jumps {
		p.table(j.table).declare(j.dst)
		key := j.table + " " + j.src
		bySrc[key] = append([]jumpChain{j}, bySrc[key]...)
	}
	keys := make([]string, 0, len(bySrc))
	for k := range bySrc {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, j := range bySrc[k] {
			args := append([]string(nil), j.extra...)
			if j.comment != "" {
				args = append(args, "-m", "comment", "--comment", j.comment)
			}
			p.table(j.table).Write("-A", j.src, args, "-j", j.dst)
		}
	}
	if !p.in.res.Has(resolve.FilterTableFirewall) {
		p.nat.declare(kpnames.KubeMarkDrop)
	}
}

// localDetector mirrors pkg/proxy/util/localdetector.go (v1.24+
// IfLocal/IfNotLocal; JumpIfLocal/JumpIfNotLocal before, the same words).
type localDetector struct {
	ifLocal, ifNotLocal []string
}

func (d localDetector) implemented() bool { return len(d.ifLocal) > 0 }

// newLocalDetector returns the detector of family f for detectLocalMode
// (cmd/kube-proxy/app getLocalDetectors): ClusterCIDR (the default) uses
// the first cluster CIDR of the family, NodeCIDR the node's pod CIDR of
// the family, BridgeInterface "-i NAME" and InterfaceNamePrefix "-i
// PREFIX+" (DetectLocalByInterface); anything missing gives the no-op
// detector.
func newLocalDetector(in *input, f model.Family) localDetector {
	byCIDR := func(cidrs []netip.Prefix) localDetector {
		for _, c := range cidrs {
			if model.FamilyOf(c.Addr()) == f {
				s := c.Masked().String()
				return localDetector{ifLocal: []string{"-s", s}, ifNotLocal: []string{"!", "-s", s}}
			}
		}
		return localDetector{}
	}
	mode := string(in.cfg.DetectLocalMode)
	switch {
	case mode == "" || mode == "ClusterCIDR":
		return byCIDR(in.clusterCIDRs(f))
	case mode == "NodeCIDR":
		return byCIDR(in.podCIDRs)
	case mode == "BridgeInterface" && in.res.Has(resolve.DetectLocalByInterface):
		if b := strings.TrimSpace(in.cfg.DetectLocal.BridgeInterface); b != "" {
			return localDetector{ifLocal: []string{"-i", b}, ifNotLocal: []string{"!", "-i", b}}
		}
	case mode == "InterfaceNamePrefix" && in.res.Has(resolve.DetectLocalByInterface):
		if pre := strings.TrimSpace(in.cfg.DetectLocal.InterfaceNamePrefix); pre != "" {
			return localDetector{ifLocal: []string{"-i", pre + "+"}, ifNotLocal: []string{"!", "-i", pre + "+"}}
		}
	}
	return localDetector{}
}

// nodePortAddresses mirrors pkg/proxy/util/nodeport_addresses.go (v1.28+;
// the string-set GetNodeAddresses of earlier releases selects the same
// addresses).
type nodePortAddresses struct {
	cidrs                []netip.Prefix
	matchAll             bool
	containsIPv4Loopback bool
}

func newNodePortAddresses(f model.Family, strs []string) *nodePortAddresses {
	npa := &nodePortAddresses{}
	var cidrs []netip.Prefix
	for _, s := range strs {
		if pfx, err := netip.ParsePrefix(strings.TrimSpace(s)); err == nil && model.FamilyOf(pfx.Addr()) == f {
			cidrs = append(cidrs, pfx.Masked())
		}
	}
	if len(cidrs) == 0 {
		if f == model.IPv4 {
			cidrs = []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}
		} else {
			cidrs = []netip.Prefix{netip.MustParsePrefix("::/0")}
		}
	}
	loopback := netip.MustParseAddr("127.0.0.0")
	for _, c := range cidrs {
		if c.Addr().Is4() && (c.Addr().IsLoopback() || c.Contains(loopback)) {
			npa.containsIPv4Loopback = true
		}
		if c.Bits() == 0 {
			npa.cidrs, npa.matchAll = []netip.Prefix{c}, true
			break
		}
		npa.cidrs = append(npa.cidrs, c)
	}
	return npa
}

// nodeIPs returns the node addresses the CIDRs select, sorted (kube-proxy
// iterates a map; the order of the rules they give carries no meaning).
func (npa *nodePortAddresses) nodeIPs(addrs []netip.Addr) []netip.Addr {
	seen := map[netip.Addr]bool{}
	var out []netip.Addr
	for _, c := range npa.cidrs {
		for _, a := range addrs {
			if c.Contains(a) && !seen[a] {
				seen[a] = true
				out = append(out, a)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return out
}

// probability mirrors computeProbability: fmt.Sprintf("%0.10f", 1/n).
func probability(n int) string { return strconv.FormatFloat(1.0/float64(n), 'f', 10, 64) }

// appendServiceComment mirrors appendServiceCommentLocked: no comment in
// large-cluster mode.
func (p *iptablesProxier) appendServiceComment(args []string, comment string) []string {
	if p.largeClusterMode {
		return args
	}
	return append(args, "-m", "comment", "--comment", comment)
}

// Chain names of one service port (pkg/proxy/iptables/proxier.go
// servicePortPolicyClusterChain and friends).
func svcChain(sp *model.ServicePort) string {
	return kpnames.ChainSVC + kpnames.PortProtoHash(sp.String(), sp.ProtoLower())
}
func svlChain(sp *model.ServicePort) string {
	return kpnames.ChainSVL + kpnames.PortProtoHash(sp.String(), sp.ProtoLower())
}
func extChain(sp *model.ServicePort) string {
	return kpnames.ChainEXT + kpnames.PortProtoHash(sp.String(), sp.ProtoLower())
}
func fwChain(sp *model.ServicePort) string {
	return kpnames.ChainFW + kpnames.PortProtoHash(sp.String(), sp.ProtoLower())
}
func xlbChain(sp *model.ServicePort) string {
	return kpnames.ChainXLB + kpnames.PortProtoHash(sp.String(), sp.ProtoLower())
}
func sepChain(sp *model.ServicePort, ep *model.Endpoint) string {
	return kpnames.ChainSEP + kpnames.EndpointChainHash(sp.String(), sp.ProtoLower(), ep.String())
}

// sepChain returns the endpoint chain name of ep, computed once per
// endpoint.
func (p *iptablesProxier) sepChain(sp *model.ServicePort, ep *model.Endpoint) string {
	if n, ok := p.sepNames[ep]; ok {
		return n
	}
	n := sepChain(sp, ep)
	p.sepNames[ep] = n
	return n
}

// writeStaticRules writes KUBE-POSTROUTING and KUBE-MARK-MASQ, the same
// in every version but for --random-fully (probed before 1.37).
func (p *iptablesProxier) writeStaticRules() {
	for _, c := range []string{kpnames.KubeServices, kpnames.KubeNodePorts, kpnames.KubePostrouting, kpnames.KubeMarkMasq} {
		p.nat.declare(c)
	}
	writeMasqueradeRules(p.nat, p.masqueradeMark, p.randomFully)
}

// writeMasqueradeRules writes KUBE-POSTROUTING, which masquerades the
// marked packets (with --random-fully when randomFully), and
// KUBE-MARK-MASQ, which marks them: the same in iptables and IPVS mode.
func writeMasqueradeRules(nat *ruleTable, mark string, randomFully bool) {
	nat.Write("-A", kpnames.KubePostrouting, "-m", "mark", "!", "--mark", mark+"/"+mark, "-j", "RETURN")
	nat.Write("-A", kpnames.KubePostrouting, "-j", "MARK", "--xor-mark", mark)
	masq := []string{"-A", kpnames.KubePostrouting, "-m", "comment", "--comment", `"kubernetes service traffic requiring SNAT"`, "-j", "MASQUERADE"}
	if randomFully {
		masq = append(masq, "--random-fully")
	}
	nat.Write(masq)
	nat.Write("-A", kpnames.KubeMarkMasq, "-j", "MARK", "--or-mark", mark)
}

// writeForwardRules writes KUBE-FORWARD: the INVALID drop (omitted with a
// liberal conntrack, ConntrackTCPBeLiberal; counted with NFAcctCounters),
// the accept of marked packets, and the conntrack accept rules (one with
// ForwardConntrackOneRule, two before).
func (p *iptablesProxier) writeForwardRules() {
	if !p.conntrackTCPLiberal {
		rule := []string{"-A", kpnames.KubeForward, "-m", "conntrack", "--ctstate", "INVALID"}
		if p.nfacct {
			rule = append(rule, "-m", "nfacct", "--nfacct-name", nfacctCTStateInvalidDropped)
		}
		p.filter.Write(rule, "-j", "DROP")
	}
	writeForwardAccepts(p.in.res, p.filter, p.masqueradeMark)
}

// writeForwardAccepts writes the accept rules of KUBE-FORWARD that iptables
// and IPVS mode share: marked packets, and RELATED,ESTABLISHED traffic
// with one rule (ForwardConntrackOneRule) or, before, two identical rules
// for pod sources and destinations by their comments.
func writeForwardAccepts(r *resolve.Resolution, filter *ruleTable, mark string) {
	filter.Write("-A", kpnames.KubeForward, "-m", "comment", "--comment", `"kubernetes forwarding rules"`,
		"-m", "mark", "--mark", mark+"/"+mark, "-j", "ACCEPT")
	comments := []string{`"kubernetes forwarding conntrack pod source rule"`, `"kubernetes forwarding conntrack pod destination rule"`}
	if r.Has(resolve.ForwardConntrackOneRule) {
		comments = []string{`"kubernetes forwarding conntrack rule"`}
	}
	for _, c := range comments {
		filter.Write("-A", kpnames.KubeForward, "-m", "comment", "--comment", c,
			"-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j", "ACCEPT")
	}
}

// writeKubeletFirewall writes kube-proxy's copy of kubelet's martian
// packet rule (KubeletFirewallCopy, IPv4 with localhost node ports).
func (p *iptablesProxier) writeKubeletFirewall() {
	if !p.in.res.Has(resolve.KubeletFirewallCopy) || p.isIPv6 || !p.localhostNodePorts {
		return
	}
	p.filter.declare(kpnames.KubeletFirewall)
	p.filter.Write("-A", kpnames.KubeletFirewall,
		"-m", "comment", "--comment", `"block incoming localnet connections"`,
		"-d", "127.0.0.0/8", "!", "-s", "127.0.0.0/8",
		"-m", "conntrack", "!", "--ctstate", "RELATED,ESTABLISHED,DNAT", "-j", "DROP")
}

// writeNodePortsTail writes the last rules of nat KUBE-SERVICES, which send
// node-local destinations to KUBE-NODEPORTS: one addrtype rule when
// nodePortAddresses match everything, else one per selected node IP (with
// LocalhostNodePortsOption, loopback left out on IPv6 and without localhost
// node ports).
func (p *iptablesProxier) writeNodePortsTail() {
	const comment = `"kubernetes service nodeports; NOTE: this must be the last rule in this chain"`
	option := p.in.res.Has(resolve.LocalhostNodePortsOption)
	if p.nodePortAddresses.matchAll {
		dest := []string{"-m", "addrtype", "--dst-type", "LOCAL"}
		if option {
			if p.isIPv6 {
				dest = append(dest, "!", "-d", "::1/128")
			} else if !p.localhostNodePorts {
				dest = append(dest, "!", "-d", "127.0.0.0/8")
			}
		}
		p.nat.Write("-A", kpnames.KubeServices, "-m", "comment", "--comment", comment, dest, "-j", kpnames.KubeNodePorts)
		return
	}
	for _, ip := range p.nodePortAddresses.nodeIPs(p.in.ifaceAddrs) {
		if ip.IsLoopback() && option && (p.isIPv6 || !p.localhostNodePorts) {
			continue
		}
		p.nat.Write("-A", kpnames.KubeServices, "-m", "comment", "--comment", comment, "-d", ip.String(), "-j", kpnames.KubeNodePorts)
	}
}

// nodePortsEnabled reports whether NodePort rules are written at all:
// before NodePortsWithoutNodeAddress kube-proxy skipped them when
// nodePortAddresses selected no address of the node.
func (p *iptablesProxier) nodePortsEnabled() bool {
	return p.in.res.Has(resolve.NodePortsWithoutNodeAddress) || p.nodePortAddresses.matchAll || len(p.nodePortAddresses.nodeIPs(p.in.ifaceAddrs)) > 0
}

// ipOf formats an address as kube-proxy writes it (the canonical form is
// the same for every version).
func ipOf(a netip.Addr) string { return a.String() }

func port(n int32) string { return strconv.Itoa(int(n)) }
