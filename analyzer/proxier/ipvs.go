package proxier

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/internal/fault"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/ipset"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/ipvs"
)

// IPVS mode's layout is modelled from 1.21 on (see modeRanges):
// pkg/proxy/ipvs/proxier.go syncProxyRules and writeIptablesRules keep the
// rules of 1.30 through 1.37; the changes of 1.22 to 1.30 are listed in
// ipvs_legacy.go.

// Constants of kube-proxy's IPVS mode (pkg/proxy/ipvs/proxier.go); its
// chain and ipset names are kpnames'.
const (
	ipvsDefaultScheduler  = "rr"
	ipvsFileIPVSAdm       = "ipvsadm-save.txt"
	ipvsFileIPSet         = "ipset-save.txt"
	ipvsFileBound         = "kube-ipvs0.txt"
	ipvsSetHashOptions    = "hashsize 1024 maxelem 65536"
	ipvsSetBitmapRange    = "range 0-65535"
	ipvsSchedulerMaglev   = "mh"
	ipvsExpectedIPVSFile  = "expected/" + ipvsFileIPVSAdm
	ipvsExpectedIPSetFile = "expected/" + ipvsFileIPSet
)

// ipvsSetInfo is pkg/proxy/ipvs/ipset.go's set list: the IPv4 name, the
// type and the comment the rules that match the set carry.
var ipvsSetInfo = []struct {
	name, typ, comment string
}{
	{kpnames.SetLoopBack, "hash:ip,port,ip", "Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose"},
	{kpnames.SetClusterIP, "hash:ip,port", "Kubernetes service cluster ip + port for masquerade purpose"},
	{kpnames.SetExternalIP, "hash:ip,port", "Kubernetes service external ip + port for masquerade and filter purpose"},
	{kpnames.SetExternalIPLocal, "hash:ip,port", "Kubernetes service external ip + port with externalTrafficPolicy=local"},
	{kpnames.SetLoadBalancer, "hash:ip,port", "Kubernetes service lb portal"},
	{kpnames.SetLoadBalancerFW, "hash:ip,port", "Kubernetes service load balancer ip + port for load balancer with sourceRange"},
	{kpnames.SetLoadBalancerLocal, "hash:ip,port", "Kubernetes service load balancer ip + port with externalTrafficPolicy=local"},
	{kpnames.SetLoadBalancerSrcIP, "hash:ip,port,ip", "Kubernetes service load balancer ip + port + source IP for packet filter purpose"},
	{kpnames.SetLoadBalancerSrcCIDR, "hash:ip,port,net", "Kubernetes service load balancer ip + port + source cidr for packet filter purpose"},
	{kpnames.SetNodePortTCP, "bitmap:port", "Kubernetes nodeport TCP port for masquerade purpose"},
	{kpnames.SetNodePortLocalTCP, "bitmap:port", "Kubernetes nodeport TCP port with externalTrafficPolicy=local"},
	{kpnames.SetNodePortUDP, "bitmap:port", "Kubernetes nodeport UDP port for masquerade purpose"},
	{kpnames.SetNodePortLocalUDP, "bitmap:port", "Kubernetes nodeport UDP port with externalTrafficPolicy=local"},
	{kpnames.SetNodePortSCTP, "hash:ip,port", "Kubernetes nodeport SCTP port for masquerade purpose with type 'hash ip:port'"},
	{kpnames.SetNodePortLocalSCTP, "hash:ip,port", "Kubernetes nodeport SCTP port with externalTrafficPolicy=local with type 'hash ip:port'"},
	{kpnames.SetHealthCheckNodePort, "bitmap:port", "Kubernetes health check node port"},
	{kpnames.SetIPVSIPs, "hash:ip", "Addresses on the ipvs interface"},
}

// ipvsSetComment returns the comment of a set by its IPv4 name.
func ipvsSetComment(base string) string {
	for _, s := range ipvsSetInfo {
		if s.name == base {
			return s.comment
		}
	}
	return ""
}

// ipvsSetWithIPTablesChain is ipsetWithIptablesChain: the rules written
// for each non-empty set, in this order (the Local node-port sets before
// the others).
var ipvsSetWithIPTablesChain = []struct {
	set, table, from, to, match, proto string
}{
	{kpnames.SetLoopBack, "nat", kpnames.KubePostrouting, "MASQUERADE", "dst,dst,src", ""},
	{kpnames.SetLoadBalancer, "nat", kpnames.KubeServices, kpnames.IPVSLoadBalancer, "dst,dst", ""},
	{kpnames.SetLoadBalancerLocal, "nat", kpnames.IPVSLoadBalancer, "RETURN", "dst,dst", ""},
	{kpnames.SetNodePortLocalTCP, "nat", kpnames.IPVSNodePort, "RETURN", "dst", "tcp"},
	{kpnames.SetNodePortTCP, "nat", kpnames.IPVSNodePort, kpnames.KubeMarkMasq, "dst", "tcp"},
	{kpnames.SetNodePortLocalUDP, "nat", kpnames.IPVSNodePort, "RETURN", "dst", "udp"},
	{kpnames.SetNodePortUDP, "nat", kpnames.IPVSNodePort, kpnames.KubeMarkMasq, "dst", "udp"},
	{kpnames.SetNodePortLocalSCTP, "nat", kpnames.IPVSNodePort, "RETURN", "dst,dst", "sctp"},
	{kpnames.SetNodePortSCTP, "nat", kpnames.IPVSNodePort, kpnames.KubeMarkMasq, "dst,dst", "sctp"},
	{kpnames.SetLoadBalancerFW, "filter", kpnames.KubeProxyFirewall, kpnames.IPVSSourceRangesFirewall, "dst,dst", ""},
	{kpnames.SetLoadBalancerSrcCIDR, "filter", kpnames.IPVSSourceRangesFirewall, "RETURN", "dst,dst,src", ""},
	{kpnames.SetLoadBalancerSrcIP, "filter", kpnames.IPVSSourceRangesFirewall, "RETURN", "dst,dst,src", ""},
}

// ipvsChains is iptablesChains of IPVS mode: the chains it creates.
var ipvsChains = []struct{ table, chain string }{
	{"nat", kpnames.KubeServices}, {"nat", kpnames.KubePostrouting}, {"nat", kpnames.IPVSNodePort},
	{"nat", kpnames.IPVSLoadBalancer}, {"nat", kpnames.KubeMarkMasq},
	{"filter", kpnames.KubeForward}, {"filter", kpnames.IPVSNodePort}, {"filter", kpnames.KubeProxyFirewall},
	{"filter", kpnames.IPVSSourceRangesFirewall}, {"filter", kpnames.IPVSFilter}, {"filter", kpnames.IPVSOutFilter},
}

// ipvsJumpChains is iptablesJumpChain of IPVS mode, in its order; each is
// prepended (EnsureRule(Prepend)), so a built-in chain holds them in the
// reverse order.
var ipvsJumpChains = []struct{ table, from, to, comment string }{
	{"nat", "OUTPUT", kpnames.KubeServices, "kubernetes service portals"},
	{"nat", "PREROUTING", kpnames.KubeServices, "kubernetes service portals"},
	{"nat", "POSTROUTING", kpnames.KubePostrouting, "kubernetes postrouting rules"},
	{"filter", "FORWARD", kpnames.KubeForward, "kubernetes forwarding rules"},
	{"filter", "INPUT", kpnames.IPVSNodePort, "kubernetes health check rules"},
	{"filter", "INPUT", kpnames.KubeProxyFirewall, "kube-proxy firewall rules"},
	{"filter", "FORWARD", kpnames.KubeProxyFirewall, "kube-proxy firewall rules"},
	{"filter", "INPUT", kpnames.IPVSFilter, "kubernetes ipvs access filter"},
	{"filter", "OUTPUT", kpnames.IPVSOutFilter, "kubernetes ipvs access filter"},
}

// ipvsMode generates kube-proxy's IPVS mode.
type ipvsMode struct{}

// Name returns "ipvs".
func (ipvsMode) Name() string { return model.ModeIPVS }

// generate returns what the IPVS proxiers of the families program after
// one full sync: the virtual and real servers and the ipsets (one kernel
// table shared by both families, as on a node), the addresses bound to
// kube-ipvs0, and per family the iptables rules.
func (ipvsMode) generate(in *input, families []model.Family) (*Dataplane, error) {
	dp := &Dataplane{Mode: model.ModeIPVS, ipvs: &ipvsExtra{}}
	if c := in.cfg.IPVS; c.TCPTimeout.Duration > 0 || c.TCPFinTimeout.Duration > 0 || c.UDPTimeout.Duration > 0 {
		dp.ipvs.timeouts = &[3]int{int(c.TCPTimeout.Seconds()), int(c.TCPFinTimeout.Seconds()), int(c.UDPTimeout.Seconds())}
	}
	table := &ipvs.Dump{Form: ipvs.FormSave, Services: []*ipvs.Service{}}
	var sets []*ipvsSet
	var files []File
	for _, f := range families {
		p := newIPVSProxier(in, f)
		p.syncProxyRules()
		d, text, err := canonicalDump("expected/"+iptablesFileName(f), iptables.Family(f), "", in.textOnly, p.filter, p.nat)
		if err != nil {
			return nil, fault.Errorf("generating the %s iptables rules of IPVS mode: %w", f, err)
		}
		if d != nil {
			dp.IPTables = append(dp.IPTables, d)
		}
		files = append(files, File{Name: iptablesFileName(f), Family: f, Data: text})
		table.Services = append(table.Services, p.services...)
		dp.Bound = append(dp.Bound, p.boundAddrs()...)
		sets = append(sets, p.setList()...)
		dp.ipvs.exclude = append(dp.ipvs.exclude, p.exclude...)
	}
	ipvs.Sort(table)
	ipvsText := formatIPVSSave(table)
	dp.IPVS = table
	sort.Slice(sets, func(i, j int) bool { return sets[i].name < sets[j].name })
	setText := formatIPSets(sets)
	sd, err := ipset.Parse(ipvsExpectedIPSetFile, setText)
	if err != nil {
		return nil, fault.Errorf("parsing the generated ipsets: %w", err)
	}
	dp.IPSets = sd
	sort.Slice(dp.Bound, func(i, j int) bool { return dp.Bound[i].Less(dp.Bound[j]) })
	var bound bytes.Buffer
	for _, a := range dp.Bound {
		bound.WriteString(netip.PrefixFrom(a, a.BitLen()).String() + "\n")
	}
	shared := []File{
		{Name: ipvsFileIPSet, Data: setText},
		{Name: ipvsFileIPVSAdm, Data: ipvsText},
		{Name: ipvsFileBound, Data: bound.Bytes()},
	}
	if len(families) == 1 {
		for i := range shared {
			shared[i].Family = families[0]
		}
	}
	dp.Files = append(shared, files...)
	return dp, nil
}

// formatIPVSSave prints the table in ipvsadm -Sn form and points every
// service and destination at its line.
func formatIPVSSave(d *ipvs.Dump) []byte {
	text := ipvs.FormatSave(d)
	line := 0
	rest := text
	next := func() string {
		line++
		i := bytes.IndexByte(rest, '\n')
		l := string(rest[:i])
		rest = rest[i+1:]
		return l
	}
	for _, s := range d.Services {
		s.Raw = next()
		s.Pos = parsers.Pos{File: ipvsExpectedIPVSFile, Line: line}
		for _, dst := range s.Destinations {
			dst.Raw = next()
			dst.Pos = parsers.Pos{File: ipvsExpectedIPVSFile, Line: line}
		}
	}
	return text
}

// ipvsSet is one ipset being filled: its name in the family, type, and
// members (entry strings as ipset prints them).
type ipvsSet struct {
	base, name, typ string
	family          model.Family
	entries         map[string]bool
}

func (s *ipvsSet) add(e string) { s.entries[e] = true }

func (s *ipvsSet) empty() bool { return len(s.entries) == 0 }

// formatIPSets prints sets in ipset save form, loadable by ipset restore:
// each create line (without the initval the kernel picks) and its add
// lines, sorted.
func formatIPSets(sets []*ipvsSet) []byte {
	var b bytes.Buffer
	for _, s := range sets {
		b.WriteString("create " + s.name + " " + s.typ)
		if strings.HasPrefix(s.typ, "bitmap:") {
			b.WriteString(" " + ipvsSetBitmapRange)
		} else {
			fam := "inet"
			if s.family == model.IPv6 {
				fam = "inet6"
			}
			b.WriteString(" family " + fam + " " + ipvsSetHashOptions)
		}
		b.WriteByte('\n')
		entries := make([]string, 0, len(s.entries))
		for e := range s.entries {
			entries = append(entries, e)
		}
		sort.Strings(entries)
		for _, e := range entries {
			b.WriteString("add " + s.name + " " + e + "\n")
		}
	}
	return b.Bytes()
}

// ipvsProxier is the state of one single-family IPVS proxier that
// syncProxyRules reads and writes (pkg/proxy/ipvs/proxier.go's Proxier,
// resolved from the configuration as NewProxier resolves it).
type ipvsProxier struct {
	in     *input
	family model.Family
	isIPv6 bool

	scheduler     string
	masqueradeAll bool
	mark          string
	localDetector localDetector
	nodeIP        netip.Addr
	randomFully   bool
	exclude       []netip.Prefix
	// nodeAddrs are the node's addresses of the family except those on
	// kube-ipvs0 (GetAllLocalAddressesExcept); nodePortIPs the addresses
	// NodePort virtual servers are created on.
	nodeAddrs   map[netip.Addr]bool
	nodePortIPs []netip.Addr

	ports    []*model.ServicePort
	sets     map[string]*ipvsSet
	services []*ipvs.Service
	bound    map[netip.Addr]bool
	// noNodeAccess are the load balancer IP, protocol and port entries
	// whose source ranges leave the node out.
	noNodeAccess []lbEntry

	filter, nat *ruleTable
}

type lbEntry struct {
	ip    netip.Addr
	proto string
	port  int32
}

func newIPVSProxier(in *input, f model.Family) *ipvsProxier {
	fam := iptables.Family(f)
	p := &ipvsProxier{
		in: in, family: f, isIPv6: f == model.IPv6,
		scheduler:     in.cfg.IPVS.Scheduler,
		masqueradeAll: in.cfg.IPTables.MasqueradeAll,
		nodeIP:        in.nodeIPs[f],
		randomFully:   in.res.Has(resolve.RandomFullyAlways) || !in.env.NoRandomFully,
		ports:         in.portsOf(f),
		sets:          map[string]*ipvsSet{},
		bound:         map[netip.Addr]bool{},
		nodeAddrs:     map[netip.Addr]bool{},
		filter:        newRuleTable("filter", fam),
		nat:           newRuleTable("nat", fam),
	}
	if p.scheduler == "" {
		p.scheduler = ipvsDefaultScheduler
	}
	bit := int32(14)
	if b := in.cfg.IPTables.MasqueradeBit; b != nil {
		bit = *b
	}
	p.mark = fmt.Sprintf("%#08x", 1<<uint(bit))
	p.localDetector = newLocalDetector(in, f)
	for _, s := range in.cfg.IPVS.ExcludeCIDRs {
		if c, err := netip.ParsePrefix(strings.TrimSpace(s)); err == nil && model.FamilyOf(c.Addr()) == f {
			p.exclude = append(p.exclude, c.Masked())
		}
	}
	for _, s := range ipvsSetInfo {
		p.sets[s.name] = &ipvsSet{base: s.name, name: kpnames.SetName(s.name, f == model.IPv6), typ: s.typ, family: f, entries: map[string]bool{}}
	}
	skip := map[netip.Addr]bool{}
	if a := in.snap.Addrs; a != nil {
		for _, x := range a.KubeIPVSAddresses() {
			skip[x.Local] = true
		}
		for _, i := range a.Interfaces {
			if i.IsLoopback() {
				for _, x := range i.Addresses {
					skip[x.Local] = true
				}
			}
		}
	}
	for _, ip := range in.ifaceAddrs {
		if model.FamilyOf(ip) != f || ip.IsLoopback() || ip.IsLinkLocalUnicast() || skip[ip] {
			continue
		}
		p.nodeAddrs[ip] = true
	}
	npa := newNodePortAddresses(f, in.nodePortAddresses())
	keepLoopback := !in.res.Has(resolve.IPVSNodePortsSkipLoopback)
	if npa.matchAll {
		for ip := range p.nodeAddrs {
			p.nodePortIPs = append(p.nodePortIPs, ip)
		}
		if keepLoopback {
			p.nodePortIPs = append(p.nodePortIPs, loopbackAddrs(in, f)...)
		}
		sort.Slice(p.nodePortIPs, func(i, j int) bool { return p.nodePortIPs[i].Less(p.nodePortIPs[j]) })
	} else {
		for _, ip := range npa.nodeIPs(in.ifaceAddrs) {
			if (!ip.IsLoopback() || keepLoopback) && !skip[ip] {
				p.nodePortIPs = append(p.nodePortIPs, ip)
			}
		}
	}
	return p
}

// syncProxyRules mirrors the IPVS proxier's syncProxyRules of a first
// sync on a clean node: createAndLinkKubeChain, then per service port the
// cluster IP, external IPs, load balancer IPs and node ports with their
// set entries, virtual servers, bound addresses and real servers, then
// writeIptablesRules.
func (p *ipvsProxier) syncProxyRules() {
	p.createAndLinkKubeChain()
	for _, sp := range p.ports {
		p.syncServicePort(sp)
	}
	ips := p.sets[kpnames.SetIPVSIPs]
	for ip := range p.bound {
		ips.add(ip.String())
	}
	p.writeIPTablesRules()
}

// createAndLinkKubeChain declares the chains and prepends the jumps.
func (p *ipvsProxier) createAndLinkKubeChain() {
	if !p.in.res.Has(resolve.FilterTableFirewall) {
		// iptablesEnsureChains: kubelet's KUBE-MARK-DROP, no rules.
		p.nat.declare(kpnames.KubeMarkDrop)
	}
	for _, c := range ipvsChainsOf(p.in.res) {
		p.table(c.table).declare(c.chain)
	}
	type jump struct{ to, comment string }
	bySrc := map[string][]jump{}
	var keys []string
	for _, j := range ipvsJumpChainsOf(p.in.res) {
		k := j.table + " " + j.from
		if _, ok := bySrc[k]; !ok {
			keys = append(keys, k)
		}
		bySrc[k] = append([]jump{{j.to, j.comment}}, bySrc[k]...)
	}
	for _, k := range keys {
		table, from, _ := strings.Cut(k, " ")
		for _, j := range bySrc[k] {
			p.table(table).Write("-A", from, "-m", "comment", "--comment", j.comment, "-j", j.to)
		}
	}
}

func (p *ipvsProxier) table(name string) *ruleTable {
	if name == "nat" {
		return p.nat
	}
	return p.filter
}

// setEntry formats a hash:ip,port member ("10.96.0.1,tcp:443").
func setEntry(ip netip.Addr, proto string, port int32) string {
	return kpnames.MemberKey(ip, proto, port)
}

// virtualServer returns the virtual server of an address and port of sp:
// the configured scheduler, persistence for ClientIP affinity, mh-port
// for the mh scheduler (IPVSMaglevPortFlag).
func (p *ipvsProxier) virtualServer(sp *model.ServicePort, ip netip.Addr, port int32) *ipvs.Service {
	s := &ipvs.Service{Destinations: []*ipvs.Destination{}}
	s.Address = net.IP(ip.AsSlice())
	s.Port = uint16(port)
	s.Protocol = ipvsProto(sp.Protocol)
	s.SchedName = p.scheduler
	s.Flags = ipvs.FlagHashed
	if p.isIPv6 {
		s.AddressFamily, s.Netmask = ipvs.FamilyIPv6, 128
	} else {
		s.AddressFamily, s.Netmask = ipvs.FamilyIPv4, 0xffffffff
	}
	if sp.AffinityClientIP {
		s.Flags |= ipvs.FlagPersistent
		s.Timeout = uint32(sp.AffinityTimeout)
	}
	if p.scheduler == ipvsSchedulerMaglev && p.in.res.Has(resolve.IPVSMaglevPortFlag) {
		s.Flags |= ipvs.FlagSched2
	}
	return s
}

func ipvsProto(p corev1.Protocol) uint16 {
	switch p {
	case corev1.ProtocolUDP:
		return ipvs.ProtoUDP
	case corev1.ProtocolSCTP:
		return ipvs.ProtoSCTP
	}
	return ipvs.ProtoTCP
}

// addVirtualServer adds a virtual server with the real servers syncEndpoint
// gives it, binding its address to kube-ipvs0 when bind is set.
func (p *ipvsProxier) addVirtualServer(s *ipvs.Service, eps []*model.Endpoint, bind bool, ip netip.Addr) {
	for _, e := range eps {
		d := &ipvs.Destination{}
		d.Address = net.IP(e.IP.AsSlice())
		d.AddressFamily = s.AddressFamily
		d.Port = uint16(e.Port)
		d.Weight = 1
		d.ConnectionFlags = ipvs.FwdMasq
		s.Destinations = append(s.Destinations, d)
	}
	p.services = append(p.services, s)
	if bind {
		p.bound[ip] = true
	}
}

// syncServicePort writes what one service port gets in syncProxyRules.
func (p *ipvsProxier) syncServicePort(sp *model.ServicePort) {
	proto := sp.ProtoLower()
	sel := p.in.selection(model.ModeIPVS, sp, p.family)
	for _, e := range sp.Endpoints {
		if e.Local && e.Family() == p.family {
			p.sets[kpnames.SetLoopBack].add(setEntry(e.IP, proto, e.Port) + "," + e.IP.String())
		}
	}
	cip, _ := sp.ClusterIP(p.family)
	p.sets[kpnames.SetClusterIP].add(setEntry(cip, proto, sp.Port))
	p.addVirtualServer(p.virtualServer(sp, cip, sp.Port), sel.Internal.Endpoints, true, cip)

	for _, ip := range sp.ExternalIPsOf(p.family) {
		if sp.ExternalPolicyLocal {
			p.sets[kpnames.SetExternalIPLocal].add(setEntry(ip, proto, sp.Port))
		} else {
			p.sets[kpnames.SetExternalIP].add(setEntry(ip, proto, sp.Port))
		}
		p.addVirtualServer(p.virtualServer(sp, ip, sp.Port), sel.External.Endpoints, p.shouldBind(ip), ip)
	}

	for _, ip := range sp.LoadBalancerVIPsOf(p.family) {
		e := setEntry(ip, proto, sp.Port)
		p.sets[kpnames.SetLoadBalancer].add(e)
		if sp.ExternalPolicyLocal {
			p.sets[kpnames.SetLoadBalancerLocal].add(e)
		}
		if ranges := sp.SourceRangesOf(p.family); len(ranges) > 0 {
			p.sets[kpnames.SetLoadBalancerFW].add(e)
			allowFromNode := false
			for _, c := range ranges {
				p.sets[kpnames.SetLoadBalancerSrcCIDR].add(e + "," + c.Masked().String())
				if p.nodeIP.IsValid() && c.Contains(p.nodeIP) {
					allowFromNode = true
				}
			}
			if allowFromNode {
				p.sets[kpnames.SetLoadBalancerSrcIP].add(e + "," + ip.String())
			} else {
				p.noNodeAccess = append(p.noNodeAccess, lbEntry{ip, proto, sp.Port})
			}
		}
		p.addVirtualServer(p.virtualServer(sp, ip, sp.Port), sel.External.Endpoints, p.shouldBind(ip), ip)
	}

	if sp.NodePort != 0 {
		if len(p.nodePortIPs) == 0 {
			// kube-proxy skips the node ports, and the health check
			// port, when no node address is selected.
			return
		}
		var entries []string
		set, local := "", ""
		switch proto {
		case "tcp", "udp":
			set, local = kpnames.NodePortSet(proto, false), kpnames.NodePortSet(proto, true)
			entries = []string{kpnames.PortKey(sp.NodePort)}
		case "sctp":
			set, local = kpnames.SetNodePortSCTP, kpnames.SetNodePortLocalSCTP
			for _, ip := range p.nodePortIPs {
				entries = append(entries, setEntry(ip, proto, sp.NodePort))
			}
		}
		for _, e := range entries {
			p.sets[set].add(e)
			if sp.ExternalPolicyLocal {
				p.sets[local].add(e)
			}
		}
		for _, ip := range p.nodePortIPs {
			p.addVirtualServer(p.virtualServer(sp, ip, sp.NodePort), sel.External.Endpoints, false, ip)
		}
	}
	if sp.HealthCheckNodePort != 0 {
		p.sets[kpnames.SetHealthCheckNodePort].add(kpnames.PortKey(sp.HealthCheckNodePort))
	}
}

// writeIPTablesRules mirrors writeIptablesRules.
func (p *ipvsProxier) writeIPTablesRules() {
	lo := "127.0.0.0/8"
	if p.isIPv6 {
		lo = "::1/128"
	}
	ipvsFilter := p.in.res.Has(resolve.IPVSFilterChain)
	if ipvsFilter {
		p.nat.Write("-A", kpnames.KubeServices, "-s", lo, "-j", "RETURN")
	}
	for _, s := range ipvsSetRules(p.in.res) {
		set := p.sets[s.set]
		if set.empty() {
			continue
		}
		args := []string{"-A", s.from}
		if s.proto != "" {
			args = append(args, "-p", s.proto)
		}
		args = append(args, "-m", "comment", "--comment", ipvsSetComment(s.set), "-m", "set", "--match-set", set.name, s.match)
		p.table(s.table).Write(args, "-j", s.to)
	}
	if set := p.sets[kpnames.SetClusterIP]; !set.empty() {
		args := []string{"-A", kpnames.KubeServices, "-m", "comment", "--comment", ipvsSetComment(kpnames.SetClusterIP), "-m", "set", "--match-set", set.name}
		switch {
		case p.masqueradeAll:
			p.nat.Write(args, "dst,dst", "-j", kpnames.KubeMarkMasq)
		case p.localDetector.implemented():
			p.nat.Write(args, "dst,dst", p.localDetector.ifNotLocal, "-j", kpnames.KubeMarkMasq)
		default:
			p.nat.Write(args, "src,dst", "-j", kpnames.KubeMarkMasq)
		}
	}
	externalIPRules := func(args []string) {
		p.nat.Write(args, "-m", "physdev", "!", "--physdev-is-in", "-m", "addrtype", "!", "--src-type", "LOCAL", "-j", "ACCEPT")
		p.nat.Write(args, "-m", "addrtype", "--dst-type", "LOCAL", "-j", "ACCEPT")
	}
	if set := p.sets[kpnames.SetExternalIP]; !set.empty() {
		args := []string{"-A", kpnames.KubeServices, "-m", "comment", "--comment", ipvsSetComment(kpnames.SetExternalIP), "-m", "set", "--match-set", set.name, "dst,dst"}
		p.nat.Write(args, "-j", kpnames.KubeMarkMasq)
		externalIPRules(args)
	}
	if set := p.sets[kpnames.SetExternalIPLocal]; !set.empty() {
		externalIPRules([]string{"-A", kpnames.KubeServices, "-m", "comment", "--comment", ipvsSetComment(kpnames.SetExternalIPLocal), "-m", "set", "--match-set", set.name, "dst,dst"})
	}
	p.nat.Write("-A", kpnames.KubeServices, "-m", "addrtype", "--dst-type", "LOCAL", "-j", kpnames.IPVSNodePort)
	p.nat.Write("-A", kpnames.IPVSLoadBalancer, "-j", kpnames.KubeMarkMasq)
	if p.in.res.Has(resolve.FilterTableFirewall) {
		p.filter.Write("-A", kpnames.IPVSSourceRangesFirewall, "-j", "DROP")
	} else {
		p.nat.Write("-A", ipvsNATFirewallChain124, "-j", kpnames.KubeMarkDrop)
	}
	if p.in.res.Has(resolve.IPVSOutFilterChain) {
		for _, e := range p.noNodeAccess {
			p.filter.Write("-A", kpnames.IPVSOutFilter, "-s", e.ip.String(), "-m", "ipvs", "--vaddr", e.ip.String(),
				"--vproto", e.proto, "--vport", strconv.Itoa(int(e.port)), "-j", "DROP")
		}
	}
	for _, s := range []string{kpnames.SetClusterIP, kpnames.SetLoadBalancer} {
		if set := p.sets[s]; !set.empty() {
			p.nat.Write("-A", kpnames.KubeServices, "-m", "set", "--match-set", set.name, "dst,dst", "-j", "ACCEPT")
		}
	}
	mark := p.mark
	writeForwardAccepts(p.in.res, p.filter, mark)
	hc := p.sets[kpnames.SetHealthCheckNodePort].name
	p.filter.Write("-A", kpnames.IPVSNodePort, "-m", "comment", "--comment", ipvsSetComment(kpnames.SetHealthCheckNodePort),
		"-m", "set", "--match-set", hc, "dst", "-j", "ACCEPT")
	if ipvsFilter {
		for _, s := range ipvsFilterReturnSets(p.in.res) {
			p.filter.Write("-A", kpnames.IPVSFilter, "-m", "set", "--match-set", p.sets[s].name, "dst,dst", "-j", "RETURN")
		}
		if p.in.res.Has(resolve.IPVSNodeAddressesUnbound) {
			p.filter.Write("-A", kpnames.IPVSFilter, "-m", "set", "--match-set", hc, "dst", "-j", "RETURN")
		}
		p.filter.Write("-A", kpnames.IPVSFilter, "-m", "conntrack", "--ctstate", "NEW",
			"-m", "set", "--match-set", p.sets[kpnames.SetIPVSIPs].name, "dst", "-j", "REJECT")
	}
	writeMasqueradeRules(p.nat, mark, p.randomFully)
}

// shouldBind reports whether an external or load balancer IP is bound to
// kube-ipvs0: unless it is an address of the node (IPVSNodeAddressesUnbound),
// always before.
func (p *ipvsProxier) shouldBind(ip netip.Addr) bool {
	return !p.in.res.Has(resolve.IPVSNodeAddressesUnbound) || !p.nodeAddrs[ip]
}

// boundAddrs returns the addresses bound to kube-ipvs0, sorted.
func (p *ipvsProxier) boundAddrs() []netip.Addr {
	out := make([]netip.Addr, 0, len(p.bound))
	for ip := range p.bound {
		out = append(out, ip)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return out
}

// setList returns the family's sets (KUBE-IPVS-IPS with IPVSFilterChain).
func (p *ipvsProxier) setList() []*ipvsSet {
	out := make([]*ipvsSet, 0, len(p.sets))
	ipvsFilter := p.in.res.Has(resolve.IPVSFilterChain)
	for _, s := range ipvsSetInfo {
		if s.name == kpnames.SetIPVSIPs && !ipvsFilter {
			continue
		}
		out = append(out, p.sets[s.name])
	}
	return out
}
