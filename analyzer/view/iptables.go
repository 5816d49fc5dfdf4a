package view

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// Attribution is what the view needs from the model to name hashed chains
// and rules without comments: for every service port, the hash of its chain
// names, and its destinations (addresses and node port).
type Attribution struct {
	byHash map[string]*model.ServicePort
	byAddr map[dest][]*model.ServicePort
}

// NewAttribution indexes the service ports of a snapshot.
func NewAttribution(ports []*model.ServicePort) *Attribution {
	a := &Attribution{byHash: make(map[string]*model.ServicePort, len(ports)), byAddr: make(map[dest][]*model.ServicePort, len(ports))}
	for _, sp := range ports {
		a.byHash[kpnames.PortProtoHash(sp.String(), sp.ProtoLower())] = sp
		if old := kpnames.LegacyPortName(sp.String()); old != "" {
			// 1.10-1.18 hashed an unnamed port as "ns/svc:".
			a.byHash[kpnames.PortProtoHash(old, sp.ProtoLower())] = sp
		}
		if sp.Skip != "" {
			continue
		}
		proto := sp.ProtoLower()
		add := func(ip netip.Addr) {
			k := destKey(ip, proto, sp.Port)
			a.byAddr[k] = append(a.byAddr[k], sp)
		}
		for _, ip := range sp.ClusterIPs {
			add(ip)
		}
		for _, ip := range sp.ExternalIPs {
			add(ip)
		}
		for _, ip := range sp.LoadBalancerVIPs {
			add(ip)
		}
		if sp.NodePort != 0 {
			// Node-port entries have no address: the port alone names
			// the Service port (the API server allocates it once per
			// cluster and protocol).
			k := destKey(netip.Addr{}, proto, sp.NodePort)
			a.byAddr[k] = append(a.byAddr[k], sp)
		}
	}
	return a
}

// byChainHash returns the service port whose chains carry hash.
func (a *Attribution) byChainHash(hash string) *model.ServicePort {
	if a == nil {
		return nil
	}
	return a.byHash[hash]
}

func (a *Attribution) byDest(ip netip.Addr, proto string, port int32) []*model.ServicePort {
	if a == nil {
		return nil
	}
	return a.byAddr[destKey(ip, proto, port)]
}

// commentServiceName returns the service port name a rule comment names.
func commentServiceName(c string) string {
	s, _ := kpnames.CommentService(c)
	return s
}

type iptExtractor struct {
	d    *iptables.Dump
	attr *Attribution
	v    *View
	nat  *iptables.Table
	// jumps resolves the nat rules' targets and rd reads their options:
	// once per table, for the tracer (and the ruleset validation) too.
	jumps *iptables.Jumps
	rd    *iptables.Meanings
	// disp and obj are indexed by the nat chain's number (Chain.Index)
	// rather than keyed by it: a large nat table has tens of thousands of
	// chains, and every rule that jumps is looked up several times.
	disp  []*Dispatch
	obj   []*Object
	entry map[entryKey]*Entry
	// objChains holds the chain of each object (parallel to v.Objects).
	objChains []*iptables.Chain
}

// FromIPTables builds the view of an iptables-mode dump. attr, built from
// the snapshot's service ports, names chains whose rules carry no
// comments (large-cluster mode) and classifies rules by destination.
func FromIPTables(d *iptables.Dump, attr *Attribution) *View {
	x := &iptExtractor{
		d: d, attr: attr,
		v:     &View{Mode: model.ModeIPTables, Family: model.Family(d.Family), Source: d.Name},
		nat:   d.Table("nat"),
		entry: map[entryKey]*Entry{},
	}
	x.v.Anchors = map[Kind]model.Evidence{}
	x.v.Where = map[Kind]string{ClusterIP: "nat KUBE-SERVICES", ExternalIP: "nat KUBE-SERVICES", LoadBalancerIP: "nat KUBE-SERVICES", NodePort: "nat KUBE-NODEPORTS"}
	if x.nat != nil {
		for k, name := range map[Kind]string{ClusterIP: kpnames.KubeServices, ExternalIP: kpnames.KubeServices, LoadBalancerIP: kpnames.KubeServices, NodePort: kpnames.KubeNodePorts} {
			if c := x.nat.Chain(name); c != nil {
				x.v.Anchors[k] = model.ChainEvidence(c)
			} else {
				x.v.Anchors[k] = model.EvidenceAt(x.nat.Pos(), "*nat (no "+name+" chain)")
			}
		}
	}
	if x.nat != nil {
		x.jumps, x.rd = x.nat.Jumps(), x.nat.Meanings()
	}
	x.objects()
	if x.nat != nil {
		x.services()
		x.nodePorts()
	}
	if f := d.Table("filter"); f != nil {
		x.filter(f)
	}
	if x.nat != nil {
		x.attributeEndpointChains()
	}
	x.v.SortEntries()
	return x.v
}

// objects lists every per-service chain of the nat table.
func (x *iptExtractor) objects() {
	if x.nat == nil {
		return
	}
	// Nearly every chain of a large nat table is a per-service one: size
	// the index and the list once, and allocate the objects together.
	n := 0
	for _, c := range x.nat.Chains {
		if _, _, ok := kpnames.SplitServiceChain(c.Name); ok {
			n++
		}
	}
	x.obj = make([]*Object, x.nat.ChainIndexes())
	x.v.Objects = slices.Grow(x.v.Objects, n)
	x.objChains = make([]*iptables.Chain, 0, n)
	objs := make([]Object, n)
	i := 0
	for _, c := range x.nat.Chains {
		prefix, hash, ok := kpnames.SplitServiceChain(c.Name)
		if !ok {
			continue
		}
		o := &objs[i]
		*o = Object{Kind: ObjChain, Name: c.Name, Hashed: true, chain: c}
		i++
		if prefix != kpnames.ChainSEP {
			if sp := x.attr.byChainHash(hash); sp != nil {
				o.Service = sp.String()
			}
		}
		if o.Service == "" && prefix != kpnames.ChainSEP {
			o.Service = x.chainCommentService(c)
		}
		x.obj[c.Index()] = o
		x.v.Objects = append(x.v.Objects, o)
		x.objChains = append(x.objChains, c)
	}
}

// chainCommentService returns the service named by the first rule comment
// of a nat chain that names one.
func (x *iptExtractor) chainCommentService(c *iptables.Chain) string {
	_, ms := x.rd.Chain(c)
	for i := range ms {
		if s := commentServiceName(ms[i].Comment()); s != "" {
			return s
		}
	}
	return ""
}

// attributeEndpointChains names the KUBE-SEP chains no dispatch reaches
// (orphan candidates; [iptExtractor.dispatch] names the others) after
// their comment.
func (x *iptExtractor) attributeEndpointChains() {
	for i, o := range x.v.Objects {
		if o.Service == "" && strings.HasPrefix(o.Name, kpnames.ChainSEP) {
			o.Service = x.chainCommentService(x.objChains[i])
		}
	}
}

// reference marks the object of a chain (nil: none) as referenced.
func (x *iptExtractor) reference(c *iptables.Chain) {
	if o := x.objectOf(c); o != nil {
		o.Referenced = true
	}
}

// objectOf returns the object of a chain, or nil.
func (x *iptExtractor) objectOf(c *iptables.Chain) *Object {
	if c == nil || c.Table != x.nat || c.Index() >= len(x.obj) {
		return nil
	}
	return x.obj[c.Index()]
}

// chain returns the nat chain called name, or nil.
func (x *iptExtractor) chain(name string) *iptables.Chain { return x.nat.Chain(name) }

// target returns the user chain rule i of nat chain c jumps or goes to,
// nil for none (a built-in chain is none: it is no Service's).
func (x *iptExtractor) target(c *iptables.Chain, i int) *iptables.Chain {
	return x.jumps.TargetChain(c, i)
}

// services reads nat KUBE-SERVICES: cluster IP, external IP and load
// balancer entries, and the node-port tail rule.
func (x *iptExtractor) services() {
	c := x.nat.Chain(kpnames.KubeServices)
	if c == nil {
		return
	}
	rd, ms := x.rd.Chain(c)
	for i, r := range c.Rules {
		m := &ms[i]
		tgt := r.Target()
		switch {
		case tgt == kpnames.KubeNodePorts:
			x.v.NodePorts = true
			x.v.NodePortsEvidence = append(x.v.NodePortsEvidence, model.RuleEvidence(r))
			continue
		case tgt == kpnames.KubeMarkMasq || tgt == "RETURN" || tgt == "ACCEPT":
			continue // 1.20-1.21 masquerade rules; IPVS-mode rules
		}
		ip, proto, port, ok := ruleDest(rd, m)
		if !ok {
			x.v.Unrecognised = append(x.v.Unrecognised, model.RuleEvidence(r))
			continue
		}
		comment := m.Comment()
		kind := Kind("")
		switch {
		case strings.HasSuffix(comment, " cluster IP"):
			kind = ClusterIP
		case strings.HasSuffix(comment, " external IP"):
			kind = ExternalIP
		case strings.HasSuffix(comment, " loadbalancer IP"):
			kind = LoadBalancerIP
		default:
			kind = x.kindByAddress(ip, proto, port, tgt)
		}
		e := x.entryFor(kind, ip, proto, port)
		e.Evidence = append(e.Evidence, model.RuleEvidence(r))
		x.attribute(e, comment, tgt, ip)
		if e.Action == "" || !e.Routed {
			e.Action = Forward
			x.route(e, x.target(c, i))
		}
	}
}

// kindByAddress classifies a KUBE-SERVICES rule without a telling comment
// by the Service address it matches, else by its target.
func (x *iptExtractor) kindByAddress(ip netip.Addr, proto string, port int32, tgt string) Kind {
	if sps := x.attr.byDest(ip, proto, port); len(sps) > 0 {
		// The first Service port with that destination tells.
		if slices.Contains(sps[0].ClusterIPs, ip) {
			return ClusterIP
		}
		if slices.Contains(sps[0].LoadBalancerVIPs, ip) {
			return LoadBalancerIP
		}
		return ExternalIP
	}
	if strings.HasPrefix(tgt, kpnames.ChainFW) {
		return LoadBalancerIP
	}
	if strings.HasPrefix(tgt, kpnames.ChainEXT) || strings.HasPrefix(tgt, kpnames.ChainXLB) {
		return ExternalIP
	}
	return ClusterIP
}

func (x *iptExtractor) entryFor(kind Kind, ip netip.Addr, proto string, port int32) *Entry {
	k := entryKey{kind, ip, proto, port}
	if old := x.entry[k]; old != nil {
		return old
	}
	e := &Entry{Kind: kind, IP: ip, Protocol: proto, Port: port}
	x.entry[k] = e
	x.v.Entries = append(x.v.Entries, e)
	return e
}

// attribute names the service of an entry: from the rule comment, else the
// target chain's hash, else the Service owning the address.
func (x *iptExtractor) attribute(e *Entry, comment, tgt string, ip netip.Addr) {
	if e.Service != "" {
		return
	}
	if s := commentServiceName(comment); s != "" {
		e.Service, e.How = s, "comment"
		return
	}
	if _, hash, ok := kpnames.SplitServiceChain(tgt); ok {
		if sp := x.attr.byChainHash(hash); sp != nil {
			e.Service, e.How = sp.String(), "hash"
			return
		}
	}
	if sps := x.attr.byDest(ip, e.Protocol, e.Port); len(sps) == 1 {
		e.Service, e.How = sps[0].String(), "address"
	}
}

// ruleDest reads "-d IP -p proto --dport N" of m, a rule of rd.
func ruleDest(rd *iptables.Meanings, m *iptables.Meaning) (netip.Addr, string, int32, bool) {
	d, ok := rd.First(m, iptables.MatchDestination)
	if !ok || d.Neg {
		return netip.Addr{}, "", 0, false
	}
	ip, ok := d.SingleIP()
	if !ok {
		return netip.Addr{}, "", 0, false
	}
	proto, port, ok := protoPort(rd, m)
	return ip.Unmap(), proto, port, ok
}

// protoPort reads "-p proto --dport N" of m, a rule of rd.
func protoPort(rd *iptables.Meanings, m *iptables.Meaning) (string, int32, bool) {
	p, ok := rd.First(m, iptables.MatchProtocol)
	if !ok || p.Neg {
		return "", 0, false
	}
	dp, ok := rd.First(m, iptables.MatchDestPort)
	if !ok || dp.Neg || dp.Either || dp.Port().Lo != dp.Port().Hi || rd.Ext(dp) != nil {
		return "", 0, false
	}
	return iptables.ProtocolName(p.Proto), int32(dp.Port().Lo), true
}

// nodePorts reads nat KUBE-NODEPORTS.
func (x *iptExtractor) nodePorts() {
	c := x.nat.Chain(kpnames.KubeNodePorts)
	if c == nil {
		return
	}
	rd, ms := x.rd.Chain(c)
	for i, r := range c.Rules {
		m := &ms[i]
		tgt := r.Target()
		if tgt == kpnames.KubeMarkMasq {
			continue // 1.20-1.23 masquerade rules
		}
		proto, port, ok := protoPort(rd, m)
		if !ok {
			x.v.Unrecognised = append(x.v.Unrecognised, model.RuleEvidence(r))
			continue
		}
		e := x.entryFor(NodePort, netip.Addr{}, proto, port)
		e.Evidence = append(e.Evidence, model.RuleEvidence(r))
		if d, ok := rd.First(m, iptables.MatchDestination); ok && !d.Neg {
			if a := d.Prefix().Addr(); a.Is4() && a.As4()[0] == 127 {
				e.Localhost = true
			}
		}
		x.attribute(e, m.Comment(), tgt, netip.Addr{})
		if !e.Routed {
			e.Action = Forward
			x.route(e, x.target(c, i))
		}
	}
}

// route fills the per-origin dispatch of a forward entry whose rule jumps
// to chain c (nil: none).
func (x *iptExtractor) route(e *Entry, c *iptables.Chain) {
	x.reference(c)
	e.Routed = true
	for _, o := range model.Origins {
		e.Dispatch[o] = x.follow(e, c, o, 0)
	}
}

// follow returns the dispatch that traffic from origin reaches from chain
// c (nil: no such chain).
func (x *iptExtractor) follow(e *Entry, c *iptables.Chain, origin model.Origin, depth int) *Dispatch {
	if depth > 8 || c == nil {
		return nil
	}
	prefix, _, ok := kpnames.SplitServiceChain(c.Name)
	if !ok {
		return nil
	}
	switch prefix {
	case kpnames.ChainSVC, kpnames.ChainSVL:
		return x.dispatch(c)
	case kpnames.ChainEXT, kpnames.ChainXLB:
		return x.external(e, c, origin, depth)
	case kpnames.ChainFW:
		return x.firewall(e, c, origin, depth)
	}
	return nil
}

// external follows an EXT (1.24+) or XLB (1.20-1.23) chain: pod and node
// traffic may be short-circuited to the cluster chain; the rest goes to the
// local (or cluster) chain, or in XLB straight to endpoints.
func (x *iptExtractor) external(e *Entry, c *iptables.Chain, origin model.Origin, depth int) *Dispatch {
	rd, ms := x.rd.Chain(c)
	for i, r := range c.Rules {
		tgt := r.Target()
		if tgt == kpnames.KubeMarkMasq || tgt == "" {
			continue
		}
		if _, _, ok := kpnames.SplitServiceChain(tgt); !ok || strings.HasPrefix(tgt, kpnames.ChainSEP) {
			continue
		}
		next := x.target(c, i)
		x.reference(next)
		taken := false
		src, hasSrc := rd.First(&ms[i], iptables.MatchSource)
		in, hasIn := rd.First(&ms[i], iptables.MatchInInterface)
		switch {
		case isLocalSourceMatch(rd, &ms[i]):
			taken = origin == model.FromNode
		case hasSrc && !src.Neg || hasIn && !in.Neg:
			// the local-traffic detectors kube-proxy uses: "-s CIDR",
			// "-i bridge", "-i prefix+"
			taken = origin == model.FromPod
		case hasSrc || hasIn:
			// some other source condition: not modelled, keep looking
		default:
			taken = true
		}
		if taken {
			e.addVia(origin, model.RuleEvidence(r))
			return x.follow(e, next, origin, depth+1)
		}
	}
	if strings.HasPrefix(c.Name, kpnames.ChainXLB) {
		d := x.dispatch(c)
		d.Policy = PolicyLocal
		return d
	}
	return nil
}

// firewall follows a FW chain (loadBalancerSourceRanges): records the
// ranges and follows the first allowed range for external traffic.
func (x *iptExtractor) firewall(e *Entry, c *iptables.Chain, origin model.Origin, depth int) *Dispatch {
	if e.Firewall == nil {
		e.Firewall = &Firewall{Evidence: []model.Evidence{model.ChainEvidence(c)}}
	}
	var allowed, pass string
	rd, ms := x.rd.Chain(c)
	for i, r := range c.Rules {
		tgt := r.Target()
		switch {
		case tgt == kpnames.KubeMarkMasq:
			continue
		case tgt == "" || tgt == kpnames.KubeMarkDrop || tgt == "DROP":
			if origin == model.FromExternal {
				e.Firewall.DefaultDrop = true
				e.Firewall.Evidence = append(e.Firewall.Evidence, model.RuleEvidence(r))
			}
			continue
		}
		s, ok := rd.First(&ms[i], iptables.MatchSource)
		if !ok {
			if pass == "" {
				pass = tgt
			}
			continue
		}
		if origin == model.FromExternal {
			e.Firewall.Ranges = append(e.Firewall.Ranges, s.Prefix())
		}
		if allowed == "" {
			allowed = tgt
		}
	}
	next := allowed
	if next == "" {
		next = pass
	}
	if next == "" {
		return nil
	}
	c = x.chain(next)
	x.reference(c)
	return x.follow(e, c, origin, depth+1)
}

// isLocalSourceMatch matches "-m addrtype --src-type LOCAL".
func isLocalSourceMatch(rd *iptables.Meanings, m *iptables.Meaning) bool {
	a, ok := rd.First(m, iptables.MatchSrcType)
	return ok && !a.Neg && a.Value() == iptables.AddrLocal
}

// dispatch reads a chain that balances over KUBE-SEP chains (SVC, SVL,
// XLB).
func (x *iptExtractor) dispatch(c *iptables.Chain) *Dispatch {
	cached := c.Table == x.nat
	if cached {
		if x.disp == nil {
			x.disp = make([]*Dispatch, x.nat.ChainIndexes())
		}
		if d := x.disp[c.Index()]; d != nil {
			return d
		}
	}
	d := &Dispatch{ID: c.Name, Policy: PolicyCluster, Scheduler: "random", Evidence: []model.Evidence{model.ChainEvidence(c)}}
	if strings.HasPrefix(c.Name, kpnames.ChainSVL) || strings.HasPrefix(c.Name, kpnames.ChainXLB) {
		d.Policy = PolicyLocal
	}
	if o := x.objectOf(c); o != nil {
		d.Service = o.Service
	}
	if cached {
		x.disp[c.Index()] = d
	}
	// The backends are allocated together: a large node has one per
	// endpoint of every Service (and the affinity rules, which jump to
	// endpoint chains too, are counted: a few more than needed).
	n := 0
	for _, r := range c.Rules {
		if strings.HasPrefix(r.Target(), kpnames.ChainSEP) {
			n++
		}
	}
	bs := make([]Backend, n)
	d.Backends = make([]*Backend, 0, n)
	remaining := 1.0
	var affinityRules, setRules int
	rd, ms := x.rd.Chain(c)
	for i, r := range c.Rules {
		m := &ms[i]
		tgt := r.Target()
		switch {
		case tgt == kpnames.KubeMarkDrop:
			d.Drops = true
			d.Evidence = append(d.Evidence, model.RuleEvidence(r))
			continue
		case !strings.HasPrefix(tgt, kpnames.ChainSEP):
			continue // masquerade rule, XLB short-circuits
		}
		sep := x.target(c, i)
		x.reference(sep)
		if rc, ok := rd.FirstFork(m, iptables.MatchRecent); ok && rc.Mask() == iptables.RecentRcheck {
			if d.Affinity == nil {
				d.Affinity = &Affinity{Timeout: int(int32(rc.Value()))}
			}
			d.Affinity.Evidence = append(d.Affinity.Evidence, model.RuleEvidence(r))
			affinityRules++
			continue
		}
		b := &bs[len(d.Backends)]
		b.setJump(r)
		if x.backend(b, tgt, sep) {
			setRules++
		}
		if st, ok := rd.FirstFork(m, iptables.MatchStatistic); ok && st.Value() == iptables.StatisticRandom {
			// The probability the kernel applies, which the tracer's
			// branches take too.
			f := st.Prob()
			b.Share = remaining * f
			remaining *= 1 - f
		} else {
			if remaining == 0 {
				b.Unreachable = true
			}
			b.Share = remaining
			remaining = 0
		}
		// An endpoint chain a dispatch reaches belongs to its Service.
		if o := x.objectOf(sep); o != nil && o.Service == "" {
			o.Service = d.Service
		}
		d.Backends = append(d.Backends, b)
	}
	if d.Affinity != nil {
		d.Affinity.Complete = affinityRules == len(d.Backends) && setRules == len(d.Backends)
	}
	return d
}

// backend reads into b the KUBE-SEP chain c called name (nil: missing):
// its DNAT destination, whose rule (or else the chain) is b's evidence
// after its jump. It reports
// whether that rule sets the affinity entry (-m recent --set).
func (x *iptExtractor) backend(b *Backend, name string, c *iptables.Chain) (setsAffinity bool) {
	b.ID, b.Weight = name, 1
	if c == nil {
		b.Endpoint = "(missing chain " + name + ")"
		return false
	}
	rd, ms := x.rd.Chain(c)
	for i := range ms {
		m := &ms[i]
		if m.Target != iptables.TargetDNAT {
			continue
		}
		b.Endpoint, _ = m.TargetArg("--to-destination")
		b.dnat = c.Rules[i]
		if ap, ok := rd.NATDestination(m); ok {
			b.IP, b.Port = ap.Addr(), int32(ap.Port())
			if strings.HasPrefix(b.Endpoint, "[") {
				b.Endpoint = model.JoinHostPort(b.IP, b.Port) // canonical IPv6 spelling
			}
		}
		return m.RecentSet()
	}
	b.Endpoint = "(no DNAT in " + name + ")"
	return false
}

// dnatRule returns the first DNAT rule of an endpoint chain, or nil.
func dnatRule(c *iptables.Chain) *iptables.Rule {
	for _, r := range c.Rules {
		if r.Target() == "DNAT" {
			return r
		}
	}
	return nil
}

// filter reads the filter table: reject and drop entries, health checks,
// and the load balancer firewall drops.
func (x *iptExtractor) filter(f *iptables.Table) {
	frd := f.Meanings()
	// Rejects and drops of cluster IPs live in filter KUBE-SERVICES,
	// those of external IPs, load balancer IPs and node ports in filter
	// KUBE-EXTERNAL-SERVICES.
	x.v.BlockAnchors, x.v.BlockWhere = map[Kind]model.Evidence{}, map[Kind]string{}
	for k, name := range map[Kind]string{ClusterIP: kpnames.KubeServices, ExternalIP: kpnames.KubeExternalServices,
		LoadBalancerIP: kpnames.KubeExternalServices, NodePort: kpnames.KubeExternalServices} {
		x.v.BlockWhere[k] = "filter " + name
		if c := f.Chain(name); c != nil {
			x.v.BlockAnchors[k] = model.ChainEvidence(c)
		} else {
			x.v.BlockAnchors[k] = model.EvidenceAt(f.Pos(), "*filter (no "+name+" chain)")
		}
	}
	if c := f.Chain(kpnames.KubeServices); c != nil {
		rd, ms := frd.Chain(c)
		for i := range ms {
			x.filterEntry(rd, &ms[i], false)
		}
	}
	if c := f.Chain(kpnames.KubeExternalServices); c != nil {
		rd, ms := frd.Chain(c)
		for i := range ms {
			x.filterEntry(rd, &ms[i], true)
		}
	}
	x.v.Anchors[HealthCheckPort] = model.EvidenceAt(f.Pos(), "*filter (no KUBE-NODEPORTS chain)")
	x.v.Where[HealthCheckPort] = "filter KUBE-NODEPORTS"
	if c := f.Chain(kpnames.KubeNodePorts); c != nil {
		x.v.Anchors[HealthCheckPort] = model.ChainEvidence(c)
		rd, ms := frd.Chain(c)
		for i := range ms {
			m := &ms[i]
			if m.Target != iptables.TargetAccept {
				continue
			}
			_, port, ok := protoPort(rd, m)
			if !ok {
				continue
			}
			x.v.HealthChecks = append(x.v.HealthChecks, &HealthCheck{Port: port, Service: commentServiceName(m.Comment()), Evidence: []model.Evidence{model.RuleEvidence(m.Rule)}})
		}
	}
	if c := f.Chain(kpnames.KubeProxyFirewall); c != nil {
		rd, ms := frd.Chain(c)
		for i, r := range c.Rules {
			ip, proto, port, ok := ruleDest(rd, &ms[i])
			if !ok || ms[i].Target != iptables.TargetDrop {
				continue
			}
			e := x.entryFor(LoadBalancerIP, ip, proto, port)
			// The filter rule drops the traffic to the load balancer IP
			// that the nat rules did not DNAT: the sources a firewall
			// chain did not let through. An entry whose outside traffic
			// is DNATed without passing such a chain admits every source,
			// and the rule drops none of it.
			reached := e.Firewall != nil
			if e.Firewall == nil {
				e.Firewall = &Firewall{}
			}
			if reached || e.Dispatch[model.FromExternal] == nil {
				e.Firewall.DefaultDrop = true
			}
			e.Firewall.Evidence = append(e.Firewall.Evidence, model.RuleEvidence(r))
			x.attribute(e, ms[i].Comment(), "", ip)
			if e.Action == "" {
				e.Action = Forward // a firewall drop without a nat entry: dispatch stays empty
			}
		}
	}
}

func (x *iptExtractor) filterEntry(rd *iptables.Meanings, m *iptables.Meaning, external bool) {
	var action Action
	switch m.Target {
	case iptables.TargetReject:
		action = Reject
	case iptables.TargetDrop:
		action = Drop
	default:
		return
	}
	r := m.Rule
	var e *Entry
	if ip, proto, port, ok := ruleDest(rd, m); ok {
		kind := ClusterIP
		if external {
			kind = x.kindByAddress(ip, proto, port, "")
			if kind == ClusterIP {
				kind = ExternalIP
			}
		}
		e = &Entry{Kind: kind, IP: ip, Protocol: proto, Port: port}
	} else if proto, port, ok := protoPort(rd, m); ok && external {
		e = &Entry{Kind: NodePort, Protocol: proto, Port: port}
	} else {
		x.v.Unrecognised = append(x.v.Unrecognised, model.RuleEvidence(r))
		return
	}
	e.Action = action
	e.Evidence = []model.Evidence{model.RuleEvidence(r)}
	x.attribute(e, m.Comment(), "", e.IP)
	x.v.Entries = append(x.v.Entries, e)
}

// MarkLegacyInternalLocal marks as Local policy the KUBE-SVC dispatches of
// the service ports for which local reports internalTrafficPolicy Local:
// kube-proxy 1.22 and 1.23 honour that policy by listing only the local
// endpoints in KUBE-SVC itself (KUBE-SVL came in 1.24).
func MarkLegacyInternalLocal(v *View, local func(service string) bool) {
	for _, e := range v.Entries {
		for _, d := range e.Dispatch {
			if d != nil && strings.HasPrefix(d.ID, kpnames.ChainSVC) && local(d.Service) {
				d.Policy = PolicyLocal
			}
		}
	}
}
