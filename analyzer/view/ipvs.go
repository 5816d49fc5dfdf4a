package view

import (
	"fmt"
	"math"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/ipaddr"
	"github.com/proxyscan/proxyscan/parsers/ipset"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/ipvs"
)

// setName is kpnames.SetName in a family.
func setName(base string, f model.Family) string { return kpnames.SetName(base, f == model.IPv6) }

// IPVSState is what an IPVS-mode data plane holds besides its virtual
// servers, for the checks that need it: the addresses bound to kube-ipvs0,
// kube-proxy's ipsets of the view's family, and the filter rules that make
// them matter.
type IPVSState struct {
	Family model.Family
	// Table is the ipvsadm output the view was read from.
	Table *ipvs.Dump
	// HasSets, HasAddrs and HasIPTables report which of the ipset, ip addr
	// and iptables-save inputs were captured.
	HasSets, HasAddrs, HasIPTables bool
	// AddrsPartial, when ip addr was captured but does not show what is
	// bound to kube-ipvs0 in the family (a listing of other interfaces,
	// of the other family, or filtered; see
	// [ipaddr.Dump.ShowsAddresses]), says so: HasAddrs is then false.
	AddrsPartial string
	// HasInterface reports that ip addr lists kube-ipvs0; Interface is the
	// evidence of its line (of the ip addr input when it is absent).
	HasInterface bool
	Interface    model.Evidence
	// Bound maps the addresses of the family on kube-ipvs0 to their line.
	Bound map[netip.Addr]model.Evidence
	// FilterReject is the KUBE-IPVS-FILTER rule (1.26+) that rejects new
	// connections to addresses of KUBE-IPVS-IPS that no other set admits;
	// nil when absent.
	FilterReject *model.Evidence
	// NodeIPs are the node addresses virtual servers were read as node
	// ports for.
	NodeIPs []netip.Addr

	sets map[string]*setIndex
}

type setIndex struct {
	set     *ipset.Set
	members map[string]*ipset.Entry
}

// Set returns the set of a base name (kpnames.SetClusterIP, ...) in the view's
// family, or nil.
func (s *IPVSState) Set(base string) *ipset.Set {
	if s == nil {
		return nil
	}
	if i := s.sets[setName(base, s.Family)]; i != nil {
		return i.set
	}
	return nil
}

// SetEvidence returns the evidence of a set's create line (or Name: line);
// when the set is absent, the evidence names it without a line.
func (s *IPVSState) SetEvidence(base string) model.Evidence {
	name := setName(base, s.Family)
	if set := s.Set(base); set != nil {
		return model.EvidenceAt(set.Pos, set.Raw)
	}
	return model.Evidence{Text: "no ipset " + name}
}

// Member looks up a member of a set by its key (MemberKey, PortKey or an
// address) and returns the evidence of its line.
func (s *IPVSState) Member(base, key string) (model.Evidence, bool) {
	if s == nil {
		return model.Evidence{}, false
	}
	i := s.sets[setName(base, s.Family)]
	if i == nil {
		return model.Evidence{}, false
	}
	e, ok := i.members[key]
	if !ok {
		return model.Evidence{}, false
	}
	return model.EvidenceAt(e.Pos, e.Raw), true
}

// IsBound reports whether an address is bound to kube-ipvs0, with the
// evidence of its line.
func (s *IPVSState) IsBound(ip netip.Addr) (model.Evidence, bool) {
	if s == nil {
		return model.Evidence{}, false
	}
	e, ok := s.Bound[ip]
	return e, ok
}

// IPVSInput is what the view of an IPVS-mode data plane is read from.
type IPVSInput struct {
	Family model.Family
	// Table is ipvsadm's listing (-Ln) or save form (-Sn).
	Table *ipvs.Dump
	// Sets are the ipset save or list outputs, Addrs the node's ip addr,
	// IPTables the iptables-save dump of the family; each may be nil.
	Sets     []*ipset.Dump
	Addrs    *ipaddr.Dump
	IPTables *iptables.Dump
	// Ports are the snapshot's service ports: virtual servers carry no
	// names, so they are attributed by address.
	Ports []*model.ServicePort
	// NodeIPs are the node's addresses: a virtual server on one of them is
	// a node port.
	NodeIPs []netip.Addr
}

// portIndex finds service ports by the addresses the IPVS data plane uses.
type portIndex struct {
	byName     map[string]*model.ServicePort
	byDest     map[dest][]*model.ServicePort
	kind       map[dest]Kind
	byAddr     map[netip.Addr][]*model.ServicePort
	byNodePort map[portKey][]*model.ServicePort
	byHealth   map[int32][]*model.ServicePort
	byEndpoint map[backendKey][]*model.ServicePort
	endpoints  map[string]map[string]*model.Endpoint // of the Local-policy ports
}

// dest is an address, protocol and port; portKey a protocol and port;
// backendKey a protocol and endpoint.
type (
	dest struct {
		ip    netip.Addr
		proto string
		port  int32
	}
	portKey struct {
		proto string
		port  int32
	}
	backendKey struct {
		proto string
		ep    netip.AddrPort
	}
)

func destKey(ip netip.Addr, proto string, port int32) dest { return dest{ip, proto, port} }

func newPortIndex(ports []*model.ServicePort, fam model.Family) *portIndex {
	x := &portIndex{
		byName: map[string]*model.ServicePort{}, byDest: map[dest][]*model.ServicePort{}, kind: map[dest]Kind{},
		byAddr: map[netip.Addr][]*model.ServicePort{}, byNodePort: map[portKey][]*model.ServicePort{},
		byHealth: map[int32][]*model.ServicePort{}, byEndpoint: map[backendKey][]*model.ServicePort{},
		endpoints: map[string]map[string]*model.Endpoint{},
	}
	for _, sp := range ports {
		if sp.Skip != "" {
			continue
		}
		if _, ok := sp.ClusterIP(fam); !ok {
			continue
		}
		name, proto := sp.String(), sp.ProtoLower()
		x.byName[name] = sp
		add := func(ip netip.Addr, k Kind) {
			if model.FamilyOf(ip) != fam {
				return
			}
			key := destKey(ip, proto, sp.Port)
			x.byDest[key] = append(x.byDest[key], sp)
			if _, ok := x.kind[key]; !ok {
				x.kind[key] = k
			}
			x.byAddr[ip] = append(x.byAddr[ip], sp)
		}
		for _, ip := range sp.ClusterIPs {
			add(ip, ClusterIP)
		}
		for _, ip := range sp.ExternalIPs {
			add(ip, ExternalIP)
		}
		for _, ip := range sp.LoadBalancerVIPs {
			add(ip, LoadBalancerIP)
		}
		if sp.NodePort != 0 {
			k := portKey{proto, sp.NodePort}
			x.byNodePort[k] = append(x.byNodePort[k], sp)
		}
		if sp.HealthCheckNodePort != 0 {
			x.byHealth[sp.HealthCheckNodePort] = append(x.byHealth[sp.HealthCheckNodePort], sp)
		}
		local := sp.InternalPolicyLocal || sp.ExternalPolicyLocal
		var eps map[string]*model.Endpoint
		if local {
			eps = map[string]*model.Endpoint{} // for policies; only Local ports need it
			x.endpoints[name] = eps
		}
		for _, ep := range sp.Endpoints {
			if ep.Family() != fam {
				continue
			}
			if local {
				eps[ep.String()] = ep
			}
			k := backendKey{proto, netip.AddrPortFrom(ep.IP, uint16(ep.Port))}
			x.byEndpoint[k] = append(x.byEndpoint[k], sp)
		}
	}
	return x
}

// one returns the name of the only service port of a list, "" otherwise.
func one(sps []*model.ServicePort) string {
	if len(sps) == 1 {
		return sps[0].String()
	}
	return ""
}

// first returns the name of the first service port of a list in name
// order, "" for none.
func first(sps []*model.ServicePort) string {
	best := ""
	for _, sp := range sps {
		if n := sp.String(); best == "" || n < best {
			best = n
		}
	}
	return best
}

type ipvsExtractor struct {
	in      IPVSInput
	v       *View
	st      *IPVSState
	idx     *portIndex
	nodeIPs map[netip.Addr]bool
	// nodePort holds the node-port entries by "proto port".
	nodePort   map[portKey]*Entry
	nodePortVS map[*Entry][]*Dispatch
	// vsKeys, vsAddrs and vsNodePorts record what has a virtual server
	// ("ip proto port", addresses, "proto port" of node ports).
	vsKeys      map[dest]bool
	vsAddrs     map[netip.Addr]bool
	vsNodePorts map[portKey]bool
	vsBackends  map[backendKey]bool // every real server
}

// FromIPVS builds the view of an IPVS-mode data plane in one family: every
// virtual server of the family is an entry (a cluster IP, external IP or
// load balancer IP by the Service address it serves; a node port when it
// listens on a node address, one entry per node port across the node's
// addresses), its real servers the backends of its dispatch.
//
// IPVS has no names or comments, so entries are attributed to service ports
// by address; and it has no notion of traffic policy, so a dispatch is
// Local when the Service asks for Local for that kind of destination and its
// real servers are endpoints of this node only, which is what kube-proxy
// programs for it (it falls back to the cluster endpoints when the node has
// none). Shares follow the scheduler: equal over the real servers of
// non-zero weight for rr, proportional to the weights for wrr, -1 (not
// determined by the weights) for every other scheduler.
func FromIPVS(in IPVSInput) *View {
	st := &IPVSState{Family: in.Family, Table: in.Table, Bound: map[netip.Addr]model.Evidence{}, sets: map[string]*setIndex{}}
	x := &ipvsExtractor{
		in: in, st: st, idx: newPortIndex(in.Ports, in.Family),
		v:           &View{Mode: model.ModeIPVS, Family: in.Family, IPVS: st, NodePorts: true},
		nodeIPs:     map[netip.Addr]bool{},
		nodePort:    map[portKey]*Entry{},
		nodePortVS:  map[*Entry][]*Dispatch{},
		vsKeys:      map[dest]bool{},
		vsAddrs:     map[netip.Addr]bool{},
		vsNodePorts: map[portKey]bool{},
		vsBackends:  map[backendKey]bool{},
	}
	for _, ip := range in.NodeIPs {
		if model.FamilyOf(ip) == in.Family && !x.nodeIPs[ip] {
			x.nodeIPs[ip] = true
			st.NodeIPs = append(st.NodeIPs, ip)
		}
	}
	x.readAddrs()
	x.readSets()
	x.readFilter()
	x.anchors()
	if in.Table != nil {
		x.readTable()
		x.finishNodePorts()
	}
	x.policies()
	x.firewalls()
	x.healthChecks()
	x.objects()
	x.v.SortEntries()
	return x.v
}

func (x *ipvsExtractor) anchors() {
	x.v.Anchors = map[Kind]model.Evidence{}
	x.v.Where = map[Kind]string{
		ClusterIP: "the IPVS table", ExternalIP: "the IPVS table", LoadBalancerIP: "the IPVS table", NodePort: "the IPVS table",
		HealthCheckPort: "ipset " + setName(kpnames.SetHealthCheckNodePort, x.in.Family),
	}
	var a model.Evidence
	if t := x.in.Table; t != nil {
		switch {
		case t.HeaderPos.IsValid():
			a = model.EvidenceAt(t.HeaderPos, "IP Virtual Server version "+t.Version+" (size="+strconv.Itoa(t.Size)+")")
		case len(t.Services) > 0:
			a = model.Evidence{File: t.Services[0].Pos.File, Text: "ipvsadm table"}
		}
		if len(t.Services) > 0 {
			x.v.Source = t.Services[0].Pos.File
		} else {
			x.v.Source = t.HeaderPos.File
		}
	}
	for _, k := range []Kind{ClusterIP, ExternalIP, LoadBalancerIP, NodePort} {
		x.v.Anchors[k] = a
	}
	x.v.Anchors[HealthCheckPort] = x.st.SetEvidence(kpnames.SetHealthCheckNodePort)
}

// readAddrs reads the addresses bound to kube-ipvs0.
func (x *ipvsExtractor) readAddrs() {
	d := x.in.Addrs
	if d == nil {
		return
	}
	file := "the ip addr listing"
	if len(d.Interfaces) > 0 && d.Interfaces[0].Pos.File != "" {
		file = d.Interfaces[0].Pos.File
	}
	fam := "inet"
	if x.in.Family == model.IPv6 {
		fam = "inet6"
	}
	if !d.ShowsAddresses(ipaddr.KubeIPVSInterface, fam) {
		x.st.AddrsPartial = fmt.Sprintf("%s is partial (%s), and does not show the %s addresses of %s", file, d.Partial, x.in.Family, ipaddr.KubeIPVSInterface)
		return
	}
	x.st.HasAddrs = true
	i := d.Interface(ipaddr.KubeIPVSInterface)
	if i == nil {
		var p model.Evidence
		if len(d.Interfaces) > 0 {
			p.File = d.Interfaces[0].Pos.File
		}
		p.Text = "no " + ipaddr.KubeIPVSInterface + " interface"
		x.st.Interface = p
		return
	}
	x.st.HasInterface = true
	x.st.Interface = model.EvidenceAt(i.Pos, i.Raw)
	for _, a := range i.Addresses {
		ip := a.Local.Unmap()
		if model.FamilyOf(ip) != x.in.Family {
			continue
		}
		if _, dup := x.st.Bound[ip]; !dup {
			x.st.Bound[ip] = model.EvidenceAt(a.Pos, a.Raw)
		}
	}
}

// readSets indexes kube-proxy's sets of the family.
func (x *ipvsExtractor) readSets() {
	want := map[string]bool{}
	for _, b := range kpnames.IPVSSets {
		want[setName(b, x.in.Family)] = true
	}
	for _, d := range x.in.Sets {
		if d == nil {
			continue
		}
		x.st.HasSets = true
		for _, s := range d.Sets {
			if !want[s.Name] || x.st.sets[s.Name] != nil {
				continue
			}
			i := &setIndex{set: s, members: make(map[string]*ipset.Entry, len(s.Entries))}
			for _, e := range s.Entries {
				if k := memberKey(s.Type, e); k != "" {
					if _, dup := i.members[k]; !dup {
						i.members[k] = e
					}
				}
			}
			x.st.sets[s.Name] = i
		}
	}
}

// memberKey returns the lookup key of a set member, by the set's type.
func memberKey(typ string, e *ipset.Entry) string {
	switch typ {
	case "bitmap:port":
		return kpnames.PortKey(int32(e.Port))
	case "hash:ip":
		return e.IP.Unmap().String()
	case "hash:ip,port":
		return kpnames.MemberKey(e.IP.Unmap(), ipset.ProtoName(e.Proto), int32(e.Port))
	case "hash:ip,port,ip":
		return kpnames.MemberKey(e.IP.Unmap(), ipset.ProtoName(e.Proto), int32(e.Port)) + "," + e.IP2.Unmap().String()
	case "hash:ip,port,net":
		return kpnames.MemberKey(e.IP.Unmap(), ipset.ProtoName(e.Proto), int32(e.Port)) + "," + e.Net.Masked().String()
	}
	return ""
}

// readFilter reads the rules of IPVS mode that the checks rely on.
func (x *ipvsExtractor) readFilter() {
	d := x.in.IPTables
	if d == nil {
		return
	}
	x.st.HasIPTables = true
	c := d.Chain("filter", kpnames.IPVSFilter)
	if c == nil {
		return
	}
	rd, ms := c.Table.Meanings().Chain(c)
	for i, r := range c.Rules {
		if r.Target() == "REJECT" && setOf(rd, &ms[i]) == setName(kpnames.SetIPVSIPs, x.in.Family) {
			e := model.RuleEvidence(r)
			x.st.FilterReject = &e
			return
		}
	}
}

// setOf returns the set name of the first --match-set of m, a rule of
// rd, "" when it has none (or a negated one).
func setOf(rd *iptables.Meanings, m *iptables.Meaning) string {
	x, ok := rd.First(m, iptables.MatchSet)
	if !ok || x.Neg {
		return ""
	}
	return rd.Ext(x).Set.Name
}

// readTable turns the virtual servers of the family into entries.
func (x *ipvsExtractor) readTable() {
	connsKnown := x.in.Table.Form == ipvs.FormList && x.in.Table.Columns != ipvs.ColumnsStats && x.in.Table.Columns != ipvs.ColumnsRate
	for _, s := range x.in.Table.Services {
		if s.FWMark != 0 {
			continue // kube-proxy uses no firewall-mark services
		}
		ip, ok := netip.AddrFromSlice(s.Address)
		if !ok {
			continue
		}
		ip = ip.Unmap()
		if model.FamilyOf(ip) != x.in.Family {
			continue
		}
		proto := strings.ToLower(ipvs.ProtocolName(s.Protocol))
		port := int32(s.Port)
		d := x.dispatch(s, proto, connsKnown)
		x.vsKeys[destKey(ip, proto, port)] = true
		x.vsAddrs[ip] = true
		kind := x.classify(ip, proto, port)
		if kind == NodePort {
			x.addNodePort(ip, proto, port, s, d)
			continue
		}
		e := &Entry{Kind: kind, IP: ip, Protocol: proto, Port: port, Evidence: []model.Evidence{vsEvidence(s)}}
		if name := one(x.idx.byDest[destKey(ip, proto, port)]); name != "" {
			e.Service, e.How = name, "address"
		}
		x.setAction(e, d)
		x.v.Entries = append(x.v.Entries, e)
	}
}

func vsEvidence(s *ipvs.Service) model.Evidence { return model.EvidenceAt(s.Pos, s.Raw) }

// dispatch reads one virtual server and its real servers.
func (x *ipvsExtractor) dispatch(s *ipvs.Service, proto string, connsKnown bool) *Dispatch {
	d := &Dispatch{ID: "virtual server " + s.String(), Policy: PolicyCluster, Scheduler: s.SchedName, Evidence: []model.Evidence{vsEvidence(s)}}
	if hidden := s.Listed.Hidden(); hidden != "" {
		d.Hidden = "ipvsadm -Ln " + s.Listed.Option() + " prints " + hidden
	}
	switch {
	case !s.SchedulerKnown():
		d.Scheduler, d.AffinityUnknown = "", true
	case s.IsPersistent():
		d.Affinity = &Affinity{Timeout: int(s.Timeout), Complete: true, Evidence: []model.Evidence{vsEvidence(s)}}
	}
	weights := s.WeightsKnown()
	total, live := 0, 0
	for _, rs := range s.Destinations {
		ip, ok := netip.AddrFromSlice(rs.Address)
		if !ok {
			continue
		}
		ip = ip.Unmap()
		b := &Backend{IP: ip, Port: int32(rs.Port), Weight: clamp32(rs.Weight), Graceful: rs.Weight == 0, Connections: -1}
		b.setEvidence(oneEvidence(model.EvidenceAt(rs.Pos, rs.Raw)))
		if !weights {
			b.Weight, b.Graceful = WeightUnknown, false
		}
		b.Endpoint = model.JoinHostPort(ip, b.Port)
		if connsKnown {
			b.Connections = clamp32(rs.ActiveConnections + rs.InactiveConnections)
		}
		if rs.Weight > 0 {
			total += rs.Weight
			live++
		}
		x.vsBackends[backendKey{proto, netip.AddrPortFrom(ip, rs.Port)}] = true
		d.Backends = append(d.Backends, b)
	}
	for _, b := range d.Backends {
		switch {
		case b.Weight == WeightUnknown:
			b.Share = -1 // a real server at weight 0 would get no share
		case b.Weight <= 0:
			b.Share = 0
		case s.SchedName == "rr" || s.SchedName == "":
			b.Share = 1 / float64(live)
		case s.SchedName == "wrr":
			b.Share = float64(b.Weight) / float64(total)
		default:
			b.Share = -1
		}
	}
	return d
}

// setAction makes an entry forward to a dispatch, or reject when no real
// server can be chosen (IPVS answers ICMP port unreachable then).
func (x *ipvsExtractor) setAction(e *Entry, d *Dispatch) {
	if !canForward(d) {
		e.Action = Reject
		if len(d.Backends) > 0 {
			e.Routed, e.Dispatch = true, PerOrigin[*Dispatch]{d, d, d}
		} else {
			e.NoRealServers = true
		}
		return
	}
	e.Action = Forward
	e.Routed, e.Dispatch = true, PerOrigin[*Dispatch]{d, d, d}
}

func canForward(d *Dispatch) bool {
	for _, b := range d.Backends {
		if b.Weight > 0 || b.Weight == WeightUnknown {
			return true
		}
	}
	return false
}

// classify tells the kind of destination a virtual server serves.
func (x *ipvsExtractor) classify(ip netip.Addr, proto string, port int32) Kind {
	if k, ok := x.idx.kind[destKey(ip, proto, port)]; ok {
		return k
	}
	if x.nodeIPs[ip] {
		return NodePort
	}
	key := kpnames.MemberKey(ip, proto, port)
	if _, ok := x.st.Member(kpnames.SetLoadBalancer, key); ok {
		return LoadBalancerIP
	}
	for _, s := range []string{kpnames.SetExternalIP, kpnames.SetExternalIPLocal} {
		if _, ok := x.st.Member(s, key); ok {
			return ExternalIP
		}
	}
	_, bound := x.st.Bound[ip]
	if _, inSet := x.st.Member(kpnames.SetClusterIP, key); bound || inSet {
		return ClusterIP
	}
	if len(x.idx.byNodePort[portKey{proto, port}]) > 0 {
		return NodePort
	}
	for _, sp := range x.idx.byAddr[ip] {
		for _, a := range sp.ExternalIPs {
			if a == ip {
				return ExternalIP
			}
		}
		for _, a := range sp.LoadBalancerVIPs {
			if a == ip {
				return LoadBalancerIP
			}
		}
	}
	return ClusterIP
}

// addNodePort records the virtual server of one node address for the
// entry of its node port.
func (x *ipvsExtractor) addNodePort(ip netip.Addr, proto string, port int32, s *ipvs.Service, d *Dispatch) {
	k := portKey{proto, port}
	x.vsNodePorts[k] = true
	e := x.nodePort[k]
	if e == nil {
		e = &Entry{Kind: NodePort, Protocol: proto, Port: port}
		if name := one(x.idx.byNodePort[k]); name != "" {
			e.Service, e.How = name, "address"
		}
		x.nodePort[k] = e
		x.nodePortVS[e] = nil
		x.v.Entries = append(x.v.Entries, e)
	}
	e.NodeIPs = append(e.NodeIPs, ip)
	e.Evidence = append(e.Evidence, vsEvidence(s))
	x.nodePortVS[e] = append(x.nodePortVS[e], d)
}

// finishNodePorts gives every node-port entry its dispatch: the first
// virtual server that forwards (the first one when none does), the others
// in Also.
func (x *ipvsExtractor) finishNodePorts() {
	for e, ds := range x.nodePortVS {
		main := 0
		for i, d := range ds {
			if canForward(d) {
				main = i
				break
			}
		}
		x.setAction(e, ds[main])
		for i, d := range ds {
			if i != main {
				e.Also = append(e.Also, d)
			}
			if len(d.Backends) > 0 {
				e.NoRealServers = false // another node address's virtual server has real servers
			}
		}
	}
}

// policies sets the policy of every dispatch (see FromIPVS) and names the
// dispatches after their entry's service.
func (x *ipvsExtractor) policies() {
	for _, e := range x.v.Entries {
		ds := entryDispatches(e)
		sp := x.idx.byName[e.Service]
		for _, d := range ds {
			d.Service = e.Service
			if sp == nil {
				continue
			}
			local := sp.ExternalPolicyLocal
			if e.Kind == ClusterIP {
				local = sp.InternalPolicyLocal
			}
			if local && x.onlyLocal(sp, d) {
				d.Policy = PolicyLocal
			}
		}
	}
}

// entryDispatches returns the dispatches of an entry: its own and Also.
func entryDispatches(e *Entry) []*Dispatch {
	var ds []*Dispatch
	if e.Routed {
		ds = append(ds, e.Dispatch[model.FromExternal])
	}
	return append(ds, e.Also...)
}

// onlyLocal reports whether the live real servers of a dispatch include a
// local endpoint of sp and no endpoint of another node (real servers that
// are no endpoint at all are left to the endpoint checks).
func (x *ipvsExtractor) onlyLocal(sp *model.ServicePort, d *Dispatch) bool {
	eps := x.idx.endpoints[sp.String()]
	local := false
	for _, b := range d.Backends {
		if b.Weight == 0 {
			continue
		}
		ep := eps[b.Endpoint]
		if ep == nil {
			continue
		}
		if !ep.Local {
			return false
		}
		local = true
	}
	return local
}

// firewalls reads the loadBalancerSourceRanges filter of load balancer
// entries: membership in KUBE-LOAD-BALANCER-FW, the admitted ranges of
// KUBE-LOAD-BALANCER-SOURCE-CIDR, and the rule that drops the rest.
func (x *ipvsExtractor) firewalls() {
	drop := x.sourceRangeDrop()
	cidrs := map[string][]*ipset.Entry{}
	if i := x.st.sets[setName(kpnames.SetLoadBalancerSrcCIDR, x.in.Family)]; i != nil {
		for _, m := range i.set.Entries {
			k := kpnames.MemberKey(m.IP.Unmap(), ipset.ProtoName(m.Proto), int32(m.Port))
			cidrs[k] = append(cidrs[k], m)
		}
	}
	for _, e := range x.v.Entries {
		if e.Kind != LoadBalancerIP {
			continue
		}
		key := kpnames.MemberKey(e.IP, e.Protocol, e.Port)
		ev, ok := x.st.Member(kpnames.SetLoadBalancerFW, key)
		if !ok {
			continue
		}
		fw := &Firewall{Evidence: []model.Evidence{ev}}
		for _, m := range cidrs[key] {
			fw.Ranges = append(fw.Ranges, m.Net.Masked())
			fw.Evidence = append(fw.Evidence, model.EvidenceAt(m.Pos, m.Raw))
		}
		switch {
		case drop != nil:
			fw.DefaultDrop = true
			fw.Evidence = append(fw.Evidence, *drop)
		case !x.st.HasIPTables:
			fw.DefaultDrop = true // the rules were not captured: the set is all there is to see
		}
		e.Firewall = fw
	}
}

// sourceRangeDrop returns the rule that drops load balancer traffic from
// outside the source ranges: filter KUBE-SOURCE-RANGES-FIREWALL (1.25+,
// reached from KUBE-PROXY-FIREWALL) or nat KUBE-FIREWALL (before 1.25).
func (x *ipvsExtractor) sourceRangeDrop() *model.Evidence {
	d := x.in.IPTables
	if d == nil {
		return nil
	}
	fwSet := setName(kpnames.SetLoadBalancerFW, x.in.Family)
	for _, t := range []struct{ table, from, chain, target string }{
		{"filter", kpnames.KubeProxyFirewall, kpnames.IPVSSourceRangesFirewall, "DROP"},
		{"nat", kpnames.IPVSLoadBalancer, "KUBE-FIREWALL", kpnames.KubeMarkDrop},
	} {
		from := d.Chain(t.table, t.from)
		if from == nil {
			continue
		}
		jumps := false
		rd, ms := from.Table.Meanings().Chain(from)
		for i, r := range from.Rules {
			if r.Target() == t.chain && setOf(rd, &ms[i]) == fwSet {
				jumps = true
			}
		}
		c := d.Chain(t.table, t.chain)
		if !jumps || c == nil {
			continue
		}
		rd, ms = c.Table.Meanings().Chain(c)
		for i, r := range c.Rules {
			if r.Target() == t.target && setOf(rd, &ms[i]) == "" {
				e := model.RuleEvidence(r)
				return &e
			}
		}
	}
	return nil
}

// healthChecks reads the health-check node ports kube-proxy admits
// (KUBE-HEALTH-CHECK-NODE-PORT, 1.21+).
func (x *ipvsExtractor) healthChecks() {
	i := x.st.sets[setName(kpnames.SetHealthCheckNodePort, x.in.Family)]
	if i == nil {
		return
	}
	for _, m := range i.set.Entries {
		port := int32(m.Port)
		x.v.HealthChecks = append(x.v.HealthChecks, &HealthCheck{Port: port, Service: first(x.idx.byHealth[port]),
			Evidence: []model.Evidence{model.EvidenceAt(m.Pos, m.Raw)}})
	}
}

// objects lists the per-service objects of the data plane with their
// service: virtual servers, kube-ipvs0 addresses and the members of
// kube-proxy's sets. An object that no Service explains is Referenced when
// a virtual server still uses it (the virtual server's entry is what is
// reported then).
func (x *ipvsExtractor) objects() {
	for _, e := range x.v.Entries {
		for i, ev := range e.Evidence {
			name := ev.Text
			if e.Kind == NodePort && i < len(e.NodeIPs) {
				name = model.JoinHostPort(e.NodeIPs[i], e.Port) + "/" + strings.ToUpper(e.Protocol)
			} else if e.IP.IsValid() {
				name = model.JoinHostPort(e.IP, e.Port) + "/" + strings.ToUpper(e.Protocol)
			}
			x.v.Objects = append(x.v.Objects, &Object{Kind: ObjVirtualServer, Name: name, Service: e.Service, Referenced: true, ev: evidenceOf(ev)})
		}
	}
	var bound []netip.Addr
	for ip := range x.st.Bound {
		bound = append(bound, ip)
	}
	sort.Slice(bound, func(i, j int) bool { return bound[i].Less(bound[j]) })
	for _, ip := range bound {
		svc := first(x.idx.byAddr[ip])
		x.v.Objects = append(x.v.Objects, &Object{Kind: ObjBoundAddress, Name: ip.String(), Service: svc,
			Referenced: svc != "" || x.vsAddrs[ip], ev: evidenceOf(x.st.Bound[ip])})
	}
	for _, base := range kpnames.IPVSSets {
		i := x.st.sets[setName(base, x.in.Family)]
		if i == nil {
			continue
		}
		for _, m := range i.set.Entries {
			svc, used := x.member(base, i.set, m)
			x.v.Objects = append(x.v.Objects, &Object{Kind: ObjSetEntry, Name: i.set.Name + " " + m.Elem, Service: svc,
				Referenced: svc != "" || used, ev: evidenceOf(model.EvidenceAt(m.Pos, m.Raw))})
		}
	}
}

// member attributes a set member to a service port, and says whether a
// virtual server uses it.
func (x *ipvsExtractor) member(base string, s *ipset.Set, m *ipset.Entry) (svc string, used bool) {
	ip, proto, port := m.IP.Unmap(), ipset.ProtoName(m.Proto), int32(m.Port)
	byKind := func(k Kind) string {
		var out []*model.ServicePort
		key := destKey(ip, proto, port)
		for _, sp := range x.idx.byDest[key] {
			if k == ClusterIP && hasAddr(sp.ClusterIPs, ip) || k == ExternalIP && hasAddr(sp.ExternalIPs, ip) ||
				k == LoadBalancerIP && hasAddr(sp.LoadBalancerVIPs, ip) {
				out = append(out, sp)
			}
		}
		return first(out)
	}
	switch base {
	case kpnames.SetClusterIP:
		return byKind(ClusterIP), x.vsKeys[destKey(ip, proto, port)]
	case kpnames.SetExternalIP, kpnames.SetExternalIPLocal:
		return byKind(ExternalIP), x.vsKeys[destKey(ip, proto, port)]
	case kpnames.SetLoadBalancer, kpnames.SetLoadBalancerLocal, kpnames.SetLoadBalancerFW, kpnames.SetLoadBalancerSrcIP, kpnames.SetLoadBalancerSrcCIDR:
		return byKind(LoadBalancerIP), x.vsKeys[destKey(ip, proto, port)]
	case kpnames.SetNodePortTCP, kpnames.SetNodePortLocalTCP, kpnames.SetNodePortUDP, kpnames.SetNodePortLocalUDP:
		proto = "tcp"
		if strings.HasSuffix(base, "-UDP") {
			proto = "udp"
		}
		k := portKey{proto, port}
		return first(x.idx.byNodePort[k]), x.vsNodePorts[k]
	case kpnames.SetNodePortSCTP, kpnames.SetNodePortLocalSCTP:
		k := portKey{proto, port}
		return first(x.idx.byNodePort[k]), x.vsNodePorts[k]
	case kpnames.SetHealthCheckNodePort:
		return first(x.idx.byHealth[port]), false
	case kpnames.SetLoopBack:
		k := backendKey{proto, netip.AddrPortFrom(ip, uint16(port))}
		return first(x.idx.byEndpoint[k]), x.vsBackends[k]
	case kpnames.SetIPVSIPs:
		_, bound := x.st.Bound[ip]
		return first(x.idx.byAddr[ip]), x.vsAddrs[ip] || bound
	}
	return "", false
}

func hasAddr(list []netip.Addr, ip netip.Addr) bool {
	for _, a := range list {
		if a == ip {
			return true
		}
	}
	return false
}

// clamp32 returns n as an int32, the nearest one when n is out of range.
func clamp32(n int) int32 {
	return int32(max(math.MinInt32, min(n, math.MaxInt32)))
}
