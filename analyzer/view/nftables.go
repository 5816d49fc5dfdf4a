package view

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/google/nftables"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/nft"
)

// The fixed chains, sets and maps of kube-proxy's nftables mode
// (pkg/proxy/nftables/proxier.go, v1.29-v1.37).
const (
	nftServiceIPs      = "service-ips"
	nftServiceNodePort = "service-nodeports"
	nftNodePortIPs     = "nodeport-ips"
	nftNoEndpointSvcs  = "no-endpoint-services"
	nftNoEndpointNPs   = "no-endpoint-nodeports"
	nftFirewallIPs     = "firewall-ips"   // 1.30+: verdict map to firewall-<hash> chains
	nftFirewall        = "firewall"       // 1.29: destinations under source ranges
	nftFirewallAllow   = "firewall-allow" // 1.29: destination . source pairs allowed
	nftFirewallAllowCk = "firewall-allow-check"
	nftMarkMasq        = "mark-for-masquerade"
)

var nftChainPrefixes = []string{kpnames.NFTService, kpnames.NFTLocal, kpnames.NFTExternal, kpnames.NFTFirewall, kpnames.NFTEndpoint}

// nftNamePrefixes are the prefixes of the names ParseNFTName splits: the
// chains' and the affinity sets'.
var nftNamePrefixes = append(nftChainPrefixes[:len(nftChainPrefixes):len(nftChainPrefixes)], kpnames.NFTAffinity)

// NFTName is a per-service chain or affinity set name split into its parts:
// "service-2QRHZV4L-default/kubernetes/tcp/https" is prefix "service-",
// hash "2QRHZV4L", service port "default/kubernetes:https", protocol "tcp".
type NFTName struct {
	Prefix, Hash string
	// Base is the name without its prefix ("2QRHZV4L-default/kubernetes/tcp/https").
	Base string
	// Port is the service port name the name spells ("" when the name was
	// truncated before it), Protocol its protocol; Endpoint is the
	// "IP/port" part of endpoint chains and affinity sets.
	Port, Protocol, Endpoint string
}

// ParseNFTName splits a kube-proxy per-service chain or affinity set name
// (servicePortChainNameBase and servicePortEndpointChainNameBase of
// pkg/proxy/nftables: "<prefix><hash8>-ns/name/proto/port[__IP/port]").
func ParseNFTName(name string) (NFTName, bool) {
	var n NFTName
	for _, p := range nftNamePrefixes {
		if strings.HasPrefix(name, p) {
			n.Prefix = p
			break
		}
	}
	if n.Prefix == "" {
		return n, false
	}
	n.Base = name[len(n.Prefix):]
	if len(n.Base) < 10 || n.Base[8] != '-' || !strings.Contains(n.Base, "/") {
		return n, false
	}
	n.Hash = n.Base[:8]
	rest := n.Base[9:]
	svc, ep, isEP := strings.Cut(rest, "__")
	if isEP {
		n.Endpoint = ep
	}
	ns, rest, ok1 := strings.Cut(svc, "/")
	name, rest, ok2 := strings.Cut(rest, "/")
	proto, port, ok3 := strings.Cut(rest, "/")
	if ok1 && ok2 && ok3 && ns != "" && name != "" && !strings.HasSuffix(svc, "...") {
		n.Port = model.ServicePortName{Namespace: ns, Name: name, Port: port}.String()
		n.Protocol = proto
	}
	return n, true
}

// nftNames maps the per-service names of the nftables mode to service
// ports, and destinations to the service ports owning them.
type nftNames struct {
	byBase map[string]*model.ServicePort // "HASH8-ns/name/proto/port"
	byHash map[string]*model.ServicePort // "HASH8", for truncated names
	byPort map[string]*model.ServicePort // "ns/name:port proto"
	byDest map[nftDestKey][]*model.ServicePort
	// ports are the service ports byPort is made of, on first use: only
	// endpoint chains' names are looked up there, and a node whose
	// service chains dnat to maps of addresses has none.
	ports map[string]*model.ServicePort
}

// nftDestKey is a destination: an address, a protocol and a port.
type nftDestKey struct {
	ip    netip.Addr
	proto string
	port  int32
}

func newNFTNames(a *Attribution) *nftNames {
	if a == nil {
		return &nftNames{byBase: map[string]*model.ServicePort{}, byHash: map[string]*model.ServicePort{}, byPort: map[string]*model.ServicePort{},
			byDest: map[nftDestKey][]*model.ServicePort{}}
	}
	// Sized for the service ports: a large node has tens of thousands.
	k := len(a.byHash)
	n := &nftNames{byBase: make(map[string]*model.ServicePort, k), byHash: make(map[string]*model.ServicePort, k),
		byDest: make(map[nftDestKey][]*model.ServicePort, k), ports: a.byHash}
	for _, sp := range a.byHash {
		base := kpnames.NFTServiceChainBase(sp.Name.Namespace, sp.Name.Name, sp.Name.Port, sp.ProtoLower())
		n.byBase[base] = sp
		n.byHash[base[:8]] = sp
		if sp.Skip != "" {
			continue
		}
		for _, list := range [][]netip.Addr{sp.ClusterIPs, sp.ExternalIPs, sp.LoadBalancerVIPs} {
			for _, ip := range list {
				k := nftDestKey{ip, sp.ProtoLower(), sp.Port}
				n.byDest[k] = append(n.byDest[k], sp)
			}
		}
	}
	return n
}

// dest returns the service ports owning a destination (as
// Attribution.byDest does).
func (n *nftNames) dest(ip netip.Addr, proto string, port int32) []*model.ServicePort {
	return n.byDest[nftDestKey{ip, proto, port}]
}

// service returns the service port name a per-service name belongs to:
// the existing service port it is generated for, else the one it spells.
func (n *nftNames) service(name NFTName) (string, *model.ServicePort) {
	var sp *model.ServicePort
	switch {
	case name.Endpoint != "" && name.Port != "":
		if n.byPort == nil {
			n.byPort = make(map[string]*model.ServicePort, len(n.ports))
			for _, sp := range n.ports {
				n.byPort[sp.String()+" "+sp.ProtoLower()] = sp
			}
		}
		sp = n.byPort[name.Port+" "+name.Protocol]
	case name.Endpoint == "":
		sp = n.byBase[name.Base]
		if sp == nil && strings.HasSuffix(name.Base, "...") {
			sp = n.byHash[name.Hash]
		}
	}
	if sp != nil {
		return sp.String(), sp
	}
	return name.Port, nil
}

type nftExtractor struct {
	t     *nft.Table
	attr  *Attribution
	names *nftNames
	v     *View
	ipx   string // "ip" or "ip6"

	chains map[string]*nft.Chain
	sets   map[string]*nft.Set
	// reach holds the chains a base chain leads to (through rules and
	// verdict map elements); used holds the sets and maps that rules of
	// those chains look up or update.
	reach, used map[string]bool

	disp  map[string]*Dispatch
	obj   map[string]*Object
	entry map[entryKey]*Entry
	back  map[string]*nftBackend
	// slots is the scratch of nftNumgenSlots, reused from one rule to
	// the next.
	slots []nftSlot
	// affinitySet holds the set an endpoint chain updates, by chain.
	affinitySet map[string]string
	// fw holds the firewall of each destination.
	fw map[nftDestKey]*Firewall
	// clusterIPs holds the members of the cluster-ips set (1.30+).
	clusterIPs map[netip.Addr]bool
}

// FromNFT builds the view of kube-proxy's table of one family (table ip
// kube-proxy or ip6 kube-proxy) of an nftables ruleset. attr, built from
// the snapshot's service ports, names the per-service chains and
// classifies destinations. It reads every layout kube-proxy's nftables
// mode has written: 1.29 (endpoints-check, firewall and firewall-allow
// sets), 1.30+ (firewall-ips, per-service firewall chains, endpoint chains
// behind numgen verdict maps) and the later one-rule service chains (dnat
// to a numgen map of addresses).
//
// The elements of service-ips and service-nodeports are forward entries
// (their dispatch per origin read from the service, local and external
// chains), those of no-endpoint-services and no-endpoint-nodeports reject
// and drop entries. The objects are the per-service chains, the affinity
// sets, the elements of the firewall maps and sets, and the elements of
// any of these maps that no rule reached from a base chain looks up (they
// make no entry). Referenced means reached from a base chain, through
// rules and verdict map elements. Evidence is the rule, element, chain or
// set header with the same text for the text and the JSON listing.
func FromNFT(t *nft.Table, attr *Attribution) *View {
	fam, ipx := model.IPv4, "ip"
	if t.Family == nftables.TableFamilyIPv6 {
		fam, ipx = model.IPv6, "ip6"
	}
	x := &nftExtractor{
		t: t, attr: attr, names: newNFTNames(attr), ipx: ipx,
		v:      &View{Mode: model.ModeNFTables, Family: fam, Source: t.Pos.File},
		chains: make(map[string]*nft.Chain, len(t.Chains)),
		sets:   make(map[string]*nft.Set, len(t.Sets)),
		disp:   map[string]*Dispatch{},
		obj:    map[string]*Object{},
		back:   map[string]*nftBackend{},
		fw:     map[nftDestKey]*Firewall{},

		affinitySet: map[string]string{},
	}
	for _, c := range t.Chains {
		x.chains[c.Name] = c
	}
	for _, s := range t.Sets {
		x.sets[s.Name] = s
	}
	// The entries are made to their number, at most an element of each
	// map they come from: grown by doubling, the index of a large node's
	// entries (tens of thousands) and their list were garbage several
	// times over as the views were built.
	n := 0
	for _, name := range [...]string{nftServiceIPs, nftServiceNodePort, nftNoEndpointSvcs, nftNoEndpointNPs} {
		if s := x.sets[name]; s != nil {
			n += len(s.Elements)
		}
	}
	x.entry = make(map[entryKey]*Entry, n)
	x.v.Entries = make([]*Entry, 0, n)
	if s := x.sets["cluster-ips"]; s != nil && !s.IsMap {
		x.clusterIPs = make(map[netip.Addr]bool, len(s.Elements))
		for i := range s.Elements {
			if s.Elements[i].NumKey() == 1 {
				if a, err := netip.ParseAddr(s.Elements[i].Part(0)); err == nil {
					x.clusterIPs[a.Unmap()] = true
				}
			}
		}
	}
	x.walk()
	x.objects()
	x.anchors()
	x.firewalls()
	x.serviceEntries()
	x.nodePortEntries()
	x.blockEntries(nftNoEndpointSvcs, false)
	x.blockEntries(nftNoEndpointNPs, true)
	x.nodePorts()
	x.attributeEndpointChains()
	x.v.SortEntries()
	return x.v
}

// walk computes what the base chains lead to.
func (x *nftExtractor) walk() {
	x.reach, x.used = make(map[string]bool, len(x.chains)), make(map[string]bool, len(x.chains))
	var queue []*nft.Chain
	visit := func(name string) {
		if c := x.chains[name]; c != nil && !x.reach[name] {
			x.reach[name] = true
			queue = append(queue, c)
		}
	}
	use := func(name string) {
		if x.used[name] {
			return
		}
		x.used[name] = true
		if s := x.sets[name]; s != nil && s.IsVerdictMap() {
			for i := range s.Elements {
				if v := s.Elements[i].Verdict; v != nil && v.Target != "" {
					visit(v.Target)
				}
			}
		}
	}
	for _, c := range x.t.Chains {
		if c.IsBase() {
			visit(c.Name)
		}
	}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		for _, r := range c.Rules {
			nftRuleRefs(r, visit, use)
		}
	}
}

// nftRuleRefs calls chain for every chain a rule jumps or goes to and set
// for every named set or map it looks up or updates.
func nftRuleRefs(r *nft.Rule, chain, set func(string)) {
	for _, s := range r.Stmts {
		switch st := s.(type) {
		case *nft.Verdict:
			if st.Target != "" {
				chain(st.Target)
			}
		case *nft.Vmap:
			nftExprRefs(st.Key, chain, set)
			nftExprRefs(st.Data, chain, set)
		case *nft.Match:
			nftExprRefs(st.Left, chain, set)
			nftExprRefs(st.Right, chain, set)
		case *nft.NAT:
			nftExprRefs(st.Addr, chain, set)
			nftExprRefs(st.Port, chain, set)
		case *nft.Mangle:
			nftExprRefs(st.Value, chain, set)
		case *nft.SetUpdate:
			set(st.Set)
		}
	}
}

func nftExprRefs(e nft.Expr, chain, set func(string)) {
	switch x := e.(type) {
	case *nft.SetRef:
		set(x.Name)
	case *nft.AnonSet:
		for i := range x.Elements {
			if v := x.Elements[i].Verdict; v != nil && v.Target != "" {
				chain(v.Target)
			}
		}
	case *nft.Map:
		nftExprRefs(x.Key, chain, set)
		nftExprRefs(x.Data, chain, set)
	case *nft.Concat:
		for _, p := range x.Parts {
			nftExprRefs(p, chain, set)
		}
	case *nft.Binop:
		nftExprRefs(x.Left, chain, set)
		nftExprRefs(x.Right, chain, set)
	}
}

// objects lists the per-service chains and affinity sets.
func (x *nftExtractor) objects() {
	for _, c := range x.t.Chains {
		n, ok := ParseNFTName(c.Name)
		if !ok || n.Prefix == kpnames.NFTAffinity {
			continue
		}
		o := &Object{Kind: ObjChain, Name: c.Name, Hashed: n.Hash != "", Referenced: x.reach[c.Name], Flushed: len(c.Rules) == 0,
			ev: evidenceOf(NFTChainEvidence(c))}
		o.Service, _ = x.names.service(n)
		x.obj[c.Name] = o
		x.v.Objects = append(x.v.Objects, o)
	}
	for _, s := range x.t.Sets {
		n, ok := ParseNFTName(s.Name)
		if !ok || n.Prefix != kpnames.NFTAffinity {
			continue
		}
		o := &Object{Kind: ObjSet, Name: s.Name, Hashed: n.Hash != "", Referenced: x.used[s.Name], ev: evidenceOf(NFTSetEvidence(s))}
		o.Service, _ = x.names.service(n)
		x.obj["@"+s.Name] = o
		x.v.Objects = append(x.v.Objects, o)
	}
}

// anchors says where entries live: the forward entries in the
// service-ips and service-nodeports maps, the reject and drop entries in
// no-endpoint-services and no-endpoint-nodeports.
func (x *nftExtractor) anchors() {
	x.v.Anchors = map[Kind]model.Evidence{}
	x.v.Where = map[Kind]string{}
	x.v.BlockAnchors = map[Kind]model.Evidence{}
	x.v.BlockWhere = map[Kind]string{}
	ips := []Kind{ClusterIP, ExternalIP, LoadBalancerIP}
	for _, k := range []struct {
		kinds  []Kind
		m      string
		lookup []string // the chains that should look m up
		anchor map[Kind]model.Evidence
		where  map[Kind]string
	}{
		{ips, nftServiceIPs, []string{"services"}, x.v.Anchors, x.v.Where},
		{[]Kind{NodePort}, nftServiceNodePort, []string{"services"}, x.v.Anchors, x.v.Where},
		{ips, nftNoEndpointSvcs, []string{"service-endpoints-check", "endpoints-check"}, x.v.BlockAnchors, x.v.BlockWhere},
		{[]Kind{NodePort}, nftNoEndpointNPs, []string{"nodeport-endpoints-check", "endpoints-check"}, x.v.BlockAnchors, x.v.BlockWhere},
	} {
		ev, where := x.mapAnchor(k.m, k.lookup)
		for _, kind := range k.kinds {
			k.anchor[kind], k.where[kind] = ev, where
		}
	}
}

// mapAnchor returns the evidence and the name of the map name, where
// entries of its kinds live; a map that no rule reached from a base chain
// looks up is pointed at by the first of the lookup chains that the table
// has, where the rule looking it up belongs.
func (x *nftExtractor) mapAnchor(name string, lookup []string) (model.Evidence, string) {
	s := x.sets[name]
	switch {
	case s == nil:
		return model.EvidenceAt(x.t.Pos, x.tableText()+" (no "+name+" map)"), "the " + name + " map (absent)"
	case !x.used[name]:
		for _, l := range lookup {
			if c := x.chains[l]; c != nil {
				return NFTChainEvidence(c), "the " + name + " map (no rule reached from a base chain looks it up)"
			}
		}
		return NFTSetEvidence(s), "the " + name + " map (no rule reached from a base chain looks it up)"
	}
	return NFTSetEvidence(s), "the " + name + " map"
}

func (x *nftExtractor) tableText() string {
	return "table " + nft.FamilyName(x.t.Family) + " " + x.t.Name
}

// firewalls reads the loadBalancerSourceRanges filters: the firewall-ips
// map and firewall-<hash> chains (1.30+), or the firewall and
// firewall-allow sets (1.29).
func (x *nftExtractor) firewalls() {
	if m := x.sets[nftFirewallIPs]; m != nil {
		for i := range m.Elements {
			el := &m.Elements[i]
			x.elementObject(m, el)
			ip, proto, port, ok := nftDest(el.AppendKey(make([]string, 0, 4)))
			if !ok || el.Verdict == nil || el.Verdict.Target == "" {
				continue
			}
			fw := &Firewall{Evidence: []model.Evidence{NFTElementEvidence(m, el)}}
			if c := x.chains[el.Verdict.Target]; c != nil {
				for _, r := range c.Rules {
					ranges, drop := nftSourceFilter(r, x.ipx)
					if !drop {
						continue
					}
					fw.Ranges = append(fw.Ranges, ranges...)
					fw.DefaultDrop = x.used[nftFirewallIPs]
					fw.Evidence = append(fw.Evidence, NFTRuleEvidence(r))
				}
			}
			x.fw[nftDestKey{ip, proto, port}] = fw
		}
	}
	fwSet, allow := x.sets[nftFirewall], x.sets[nftFirewallAllow]
	if fwSet == nil || fwSet.IsMap {
		return
	}
	var drop *nft.Rule
	if c := x.chains[nftFirewallAllowCk]; c != nil && x.reach[c.Name] {
		for _, r := range c.Rules {
			if v := r.Verdict(); v != nil && v.Kind == "drop" && len(nftStmts(r)) == 1 {
				drop = r
			}
		}
	}
	for i := range fwSet.Elements {
		el := &fwSet.Elements[i]
		x.elementObject(fwSet, el)
		ip, proto, port, ok := nftDest(el.AppendKey(make([]string, 0, 4)))
		if !ok {
			continue
		}
		fw := &Firewall{Evidence: []model.Evidence{NFTElementEvidence(fwSet, el)}}
		if drop != nil && x.used[nftFirewall] && x.used[nftFirewallAllow] {
			fw.DefaultDrop = true
			fw.Evidence = append(fw.Evidence, NFTRuleEvidence(drop))
		}
		if allow != nil {
			for j := range allow.Elements {
				a := &allow.Elements[j]
				ak, ek := a.Key(), el.Key()
				if len(ak) != 4 || ak[0] != ek[0] || ak[1] != ek[1] || ak[2] != ek[2] {
					continue
				}
				if p, ok := nftPrefix(ak[3]); ok {
					fw.Ranges = append(fw.Ranges, p)
					fw.Evidence = append(fw.Evidence, NFTElementEvidence(allow, a))
				}
			}
		}
		x.fw[nftDestKey{ip, proto, port}] = fw
	}
	if allow != nil {
		for j := range allow.Elements {
			x.elementObject(allow, &allow.Elements[j])
		}
	}
}

// elementObject records an element of a map that holds no entries
// (firewall maps and sets) as a per-service object.
func (x *nftExtractor) elementObject(s *nft.Set, el *nft.Element) *Object {
	o := &Object{Kind: ObjElement, Name: nftElementKey(el) + " in " + s.Name, Referenced: x.used[s.Name],
		ev: evidenceOf(NFTElementEvidence(s, el))}
	o.Service = x.elementService(el)
	x.v.Objects = append(x.v.Objects, o)
	return o
}

// elementService attributes an element: by its comment, its verdict's
// chain, else the Service owning its destination.
func (x *nftExtractor) elementService(el *nft.Element) string {
	if s := commentServiceName(el.Comment()); s != "" {
		return s
	}
	if el.Verdict != nil && el.Verdict.Target != "" {
		if n, ok := ParseNFTName(el.Verdict.Target); ok {
			if s, _ := x.names.service(n); s != "" {
				return s
			}
		}
	}
	if ip, proto, port, ok := nftDest(el.AppendKey(make([]string, 0, 4))); ok {
		if sps := x.names.dest(ip, proto, port); len(sps) == 1 {
			return sps[0].String()
		}
	}
	return ""
}

// serviceEntries reads the service-ips map: cluster IP, external IP and
// load balancer entries.
func (x *nftExtractor) serviceEntries() {
	m := x.sets[nftServiceIPs]
	if m == nil {
		return
	}
	for i := range m.Elements {
		el := &m.Elements[i]
		ip, proto, port, ok := nftDest(el.AppendKey(make([]string, 0, 4)))
		if !ok || !x.used[m.Name] || el.Verdict == nil || el.Verdict.Target == "" {
			x.unusable(m, el, ok)
			continue
		}
		target := el.Verdict.Target
		e := x.entryFor(x.kindOf(ip, proto, port, target), ip, proto, port)
		e.Evidence = append(e.Evidence, NFTElementEvidence(m, el))
		x.attribute(e, el, target)
		if e.Kind == LoadBalancerIP || e.Kind == ExternalIP {
			if fw := x.fw[nftDestKey{ip, proto, port}]; fw != nil {
				e.Firewall = fw
			}
		}
		if !e.Routed {
			e.Action = Forward
			x.route(e, target)
		}
	}
}

// nodePortEntries reads the service-nodeports map.
func (x *nftExtractor) nodePortEntries() {
	m := x.sets[nftServiceNodePort]
	if m == nil {
		return
	}
	for i := range m.Elements {
		el := &m.Elements[i]
		proto, port, ok := nftProtoPort(el.AppendKey(make([]string, 0, 4)))
		if !ok || !x.used[m.Name] || el.Verdict == nil || el.Verdict.Target == "" {
			x.unusable(m, el, ok)
			continue
		}
		e := x.entryFor(NodePort, netip.Addr{}, proto, port)
		e.Evidence = append(e.Evidence, NFTElementEvidence(m, el))
		x.attribute(e, el, el.Verdict.Target)
		if !e.Routed {
			e.Action = Forward
			x.route(e, el.Verdict.Target)
		}
	}
}

// unusable records an element that makes no entry: an element of a map no
// rule looks up becomes an unreferenced object; one the view cannot read
// is unrecognised.
func (x *nftExtractor) unusable(m *nft.Set, el *nft.Element, keyOK bool) {
	if !x.used[m.Name] && keyOK {
		x.elementObject(m, el)
		return
	}
	x.v.Unrecognised = append(x.v.Unrecognised, NFTElementEvidence(m, el))
}

// blockEntries reads the no-endpoint-services and no-endpoint-nodeports
// maps: reject and drop entries.
func (x *nftExtractor) blockEntries(name string, nodePorts bool) {
	m := x.sets[name]
	if m == nil {
		return
	}
	for i := range m.Elements {
		el := &m.Elements[i]
		var ip netip.Addr
		var proto string
		var port int32
		var ok bool
		if nodePorts {
			proto, port, ok = nftProtoPort(el.AppendKey(make([]string, 0, 4)))
		} else {
			ip, proto, port, ok = nftDest(el.AppendKey(make([]string, 0, 4)))
		}
		action := x.blockAction(el.Verdict)
		if !ok || !x.used[name] || action == "" {
			x.unusable(m, el, ok && action != "")
			continue
		}
		e := &Entry{Kind: NodePort, IP: ip, Protocol: proto, Port: port, Action: action,
			Evidence: []model.Evidence{NFTElementEvidence(m, el)}}
		if !nodePorts {
			e.Kind = x.kindOf(ip, proto, port, "")
		}
		x.attribute(e, el, "")
		x.v.Entries = append(x.v.Entries, e)
	}
}

// blockAction returns what a no-endpoint verdict does: drop, or reject
// through a chain whose rule rejects.
func (x *nftExtractor) blockAction(v *nft.Verdict) Action {
	if v == nil {
		return ""
	}
	switch v.Kind {
	case "drop":
		return Drop
	case "goto", "jump":
		if c := x.chains[v.Target]; c != nil {
			for _, r := range c.Rules {
				if st := nftStmts(r); len(st) == 1 {
					if _, ok := st[0].(*nft.Reject); ok {
						return Reject
					}
				}
			}
		}
	}
	return ""
}

// kindOf classifies a destination: by the Service owning the address,
// else by the cluster-ips set, the firewall and the chain it leads to.
func (x *nftExtractor) kindOf(ip netip.Addr, proto string, port int32, target string) Kind {
	if sps := x.names.dest(ip, proto, port); len(sps) > 0 {
		// The first Service port with that destination tells.
		if slices.Contains(sps[0].ClusterIPs, ip) {
			return ClusterIP
		}
		if slices.Contains(sps[0].LoadBalancerVIPs, ip) {
			return LoadBalancerIP
		}
		return ExternalIP
	}
	if x.clusterIPs[ip] {
		return ClusterIP
	}
	if x.fw[nftDestKey{ip, proto, port}] != nil {
		return LoadBalancerIP
	}
	if strings.HasPrefix(target, kpnames.NFTExternal) {
		return ExternalIP
	}
	return ClusterIP
}

func (x *nftExtractor) entryFor(kind Kind, ip netip.Addr, proto string, port int32) *Entry {
	k := entryKey{kind, ip, proto, port}
	if old := x.entry[k]; old != nil {
		return old
	}
	e := &Entry{Kind: kind, IP: ip, Protocol: proto, Port: port}
	x.entry[k] = e
	x.v.Entries = append(x.v.Entries, e)
	return e
}

// attribute names the service of an entry: the element comment, the chain
// its verdict leads to, else the Service owning the address.
func (x *nftExtractor) attribute(e *Entry, el *nft.Element, target string) {
	if e.Service != "" {
		return
	}
	if s := commentServiceName(el.Comment()); s != "" {
		e.Service, e.How = s, "comment"
		return
	}
	if n, ok := ParseNFTName(target); ok {
		if s, _ := x.names.service(n); s != "" {
			e.Service, e.How = s, "element"
			return
		}
	}
	if e.Kind == NodePort {
		return
	}
	if sps := x.names.dest(e.IP, e.Protocol, e.Port); len(sps) == 1 {
		e.Service, e.How = sps[0].String(), "address"
	}
}

// route fills the per-origin dispatch of a forward entry whose element
// goes to chain.
func (x *nftExtractor) route(e *Entry, chain string) {
	e.Routed = true
	for _, o := range model.Origins {
		e.Dispatch[o] = x.follow(e, chain, o, 0)
	}
}

// follow returns the dispatch that traffic from origin reaches from chain.
func (x *nftExtractor) follow(e *Entry, chain string, origin model.Origin, depth int) *Dispatch {
	c := x.chains[chain]
	if c == nil || depth > 8 {
		return nil
	}
	switch {
	case strings.HasPrefix(chain, kpnames.NFTService), strings.HasPrefix(chain, kpnames.NFTLocal):
		return x.dispatch(c)
	case strings.HasPrefix(chain, kpnames.NFTExternal):
		return x.external(e, c, origin, depth)
	}
	return nil
}

// Source conditions of a rule in an external chain.
type nftCond int

const (
	condAll   nftCond = iota // no condition
	condPod                  // the local-traffic detector: ip saddr CIDR, iifname
	condNode                 // fib saddr type local
	condOther                // something the view does not model
)

// nftClassify reads the conditions, masquerade marking and verdict of a
// rule of a per-service chain.
func nftClassify(r *nft.Rule) (cond nftCond, masq bool, v *nft.Verdict) {
	for _, s := range r.Stmts {
		switch st := s.(type) {
		case *nft.Match:
			c := nftMatchCond(st)
			switch {
			case c == condAll:
			case cond == condAll:
				cond = c
			case cond != c:
				cond = condOther
			}
		case *nft.Mangle:
			if m, ok := st.Key.(*nft.Meta); ok && m.Key == "mark" {
				masq = true
			} else {
				cond = condOther
			}
		case *nft.Verdict:
			if st.Target == nftMarkMasq && st.Kind == "jump" {
				masq = true
				continue
			}
			v = st
		case *nft.Counter, *nft.NAT, *nft.Vmap, *nft.SetUpdate:
			// actions, not conditions
		default:
			cond = condOther
		}
	}
	return cond, masq, v
}

// nftMatchCond classifies one match: a protocol match is no condition for
// the per-service chains (it restates the entry's protocol).
func nftMatchCond(m *nft.Match) nftCond {
	switch l := m.Left.(type) {
	case *nft.Meta:
		switch l.Key {
		case "l4proto":
			return condAll
		case "iifname", "iif":
			if m.Op == nft.OpEq {
				return condPod
			}
		}
	case *nft.Payload:
		if (l.Proto == "ip" || l.Proto == "ip6") && l.Field == "saddr" && m.Op == nft.OpEq {
			return condPod
		}
	case *nft.Fib:
		if len(l.Flags) == 1 && l.Flags[0] == "saddr" && l.Result == "type" && m.Op == nft.OpEq {
			if v, ok := m.Right.(*nft.Value); ok && v.Text == "local" {
				return condNode
			}
		}
	}
	return condOther
}

// external follows an external chain: pod traffic (the local-traffic
// detector) and node traffic (fib saddr type local) may be short-circuited
// to the service chain; the rest goes to the local or service chain.
func (x *nftExtractor) external(e *Entry, c *nft.Chain, origin model.Origin, depth int) *Dispatch {
	for _, r := range c.Rules {
		cond, masq, v := nftClassify(r)
		applies := cond == condAll || cond == condPod && origin == model.FromPod || cond == condNode && origin == model.FromNode
		if !applies {
			continue
		}
		if masq {
			e.addVia(origin, NFTRuleEvidence(r))
		}
		if v == nil {
			continue
		}
		switch v.Kind {
		case "goto", "jump":
			if !strings.HasPrefix(v.Target, kpnames.NFTService) && !strings.HasPrefix(v.Target, kpnames.NFTLocal) && !strings.HasPrefix(v.Target, kpnames.NFTExternal) {
				continue
			}
			if !masq {
				e.addVia(origin, NFTRuleEvidence(r))
			}
			return x.follow(e, v.Target, origin, depth+1)
		case "continue":
			continue
		}
		return nil // drop, reject, accept, return: not forwarded
	}
	return nil
}

type nftBackend struct {
	Backend
}

// dispatch reads a service or local chain: session affinity rules, then a
// load-balancing rule (dnat to a numgen map of addresses, a numgen verdict
// map of endpoint chains, or a single dnat or goto).
func (x *nftExtractor) dispatch(c *nft.Chain) *Dispatch {
	if d := x.disp[c.Name]; d != nil {
		return d
	}
	d := &Dispatch{ID: c.Name, Policy: PolicyCluster, Scheduler: "random"}
	if strings.HasPrefix(c.Name, kpnames.NFTLocal) {
		d.Policy = PolicyLocal
	}
	if o := x.obj[c.Name]; o != nil && o.ev != nil {
		// The chain's object has its evidence: the dispatch shares it (a
		// large node has a chain per service port).
		d.Service, d.Evidence = o.Service, o.ev[:]
	} else {
		if o != nil {
			d.Service = o.Service
		}
		d.Evidence = []model.Evidence{NFTChainEvidence(c)}
	}
	x.disp[c.Name] = d
	remaining := 1.0
	var affinity map[string]string // endpoint chain -> affinity set checked, made at the first
	var sets []*nft.Set
	// add appends a backend balanced by rule r (whose evidence, ruleEv, the
	// backends of one rule share); fresh backends (dnat map slots) are used
	// as they are, those of endpoint chains (shared) copied.
	add := func(b *nftBackend, fresh bool, share float64, ruleEv *[]model.Evidence) {
		nb := b
		if fresh {
			nb.setEvidence(ruleEv)
		} else {
			nb = new(nftBackend)
			*nb = *b
			nb.setEvidence(joinEvidence(*ruleEv, b.Evidence()))
		}
		nb.Share = share
		if share == 0 {
			nb.Unreachable = true
		}
		d.Backends = append(d.Backends, &nb.Backend)
	}
	for _, r := range c.Rules {
		cond, masq, v := nftClassify(r)
		if masq && v == nil {
			continue // masquerade rule
		}
		if set, ep, ok := nftAffinityRule(r, x.ipx); ok {
			if affinity == nil {
				affinity = map[string]string{}
			}
			affinity[ep] = set
			if s := x.sets[set]; s != nil {
				sets = append(sets, s)
			}
			if d.Affinity == nil {
				d.Affinity = &Affinity{}
			}
			d.Affinity.Evidence = append(d.Affinity.Evidence, NFTRuleEvidence(r))
			continue
		}
		if slots, ng, ok := nftNumgenSlots(r, x.slots[:0]); ok {
			x.slots = slots
			d.Backends = slices.Grow(d.Backends, len(slots))
			valid := 0
			ruleEv := oneEvidence(NFTRuleEvidence(r))
			for _, s := range slots {
				b, fresh := s.b, s.b != nil
				if !fresh {
					b = x.backend(s.chain)
				}
				share := 0.0
				if s.index >= ng.Offset && s.index-ng.Offset < ng.Mod {
					share = remaining / float64(ng.Mod)
					valid++
				}
				add(b, fresh, share, ruleEv)
			}
			if ng.Mod > 0 {
				remaining *= float64(int(ng.Mod)-valid) / float64(ng.Mod)
			}
			continue
		}
		if b := nftDNAT(r); b != nil && cond != condOther {
			add(b, true, remaining, oneEvidence(NFTRuleEvidence(r)))
			remaining = 0
			continue
		}
		if v != nil && (v.Kind == "goto" || v.Kind == "jump") && strings.HasPrefix(v.Target, kpnames.NFTEndpoint) && cond == condAll {
			add(x.backend(v.Target), false, remaining, oneEvidence(NFTRuleEvidence(r)))
			remaining = 0
			continue
		}
		x.v.Unrecognised = append(x.v.Unrecognised, NFTRuleEvidence(r))
	}
	if d.Affinity != nil {
		complete := len(d.Backends) > 0
		for _, b := range d.Backends {
			set, ok := affinity[b.ID]
			complete = complete && ok && b.ID != "" && x.affinitySet[b.ID] == set
		}
		d.Affinity.Complete = complete
		if len(sets) > 0 {
			d.Affinity.Timeout = int(sets[0].Timeout / time.Second)
			d.Affinity.Evidence = append(d.Affinity.Evidence, NFTSetEvidence(sets[0]))
		}
	}
	return d
}

// nftStmts returns the statements of a rule without its counters.
func nftStmts(r *nft.Rule) []nft.Stmt {
	for _, s := range r.Stmts {
		if _, ok := s.(*nft.Counter); ok {
			out := make([]nft.Stmt, 0, len(r.Stmts))
			for _, s := range r.Stmts {
				if _, ok := s.(*nft.Counter); !ok {
					out = append(out, s)
				}
			}
			return out
		}
	}
	return r.Stmts
}

// nftAffinityRule matches `ip saddr @affinity-X goto endpoint-X`.
func nftAffinityRule(r *nft.Rule, ipx string) (set, endpoint string, ok bool) {
	st := nftStmts(r)
	if len(st) != 2 {
		return "", "", false
	}
	m, ok1 := st[0].(*nft.Match)
	v, ok2 := st[1].(*nft.Verdict)
	if !ok1 || !ok2 || m.Op != nft.OpEq || (v.Kind != "goto" && v.Kind != "jump") {
		return "", "", false
	}
	p, ok1 := m.Left.(*nft.Payload)
	ref, ok2 := m.Right.(*nft.SetRef)
	if !ok1 || !ok2 || p.Proto != ipx || p.Field != "saddr" || !strings.HasPrefix(ref.Name, kpnames.NFTAffinity) {
		return "", "", false
	}
	return ref.Name, v.Target, true
}

type nftSlot struct {
	index uint32
	chain string      // a verdict map slot's endpoint chain
	b     *nftBackend // a dnat map slot's address
}

// nftNumgenSlots reads `numgen random mod N vmap { i : goto endpoint-… }`
// and `dnat ip to numgen random mod N map { i : IP . port }`, appending
// the slots to out (a scratch the caller reuses: a large node has a map
// per service port).
func nftNumgenSlots(r *nft.Rule, out []nftSlot) ([]nftSlot, *nft.Numgen, bool) {
	var kbuf, dbuf [4]string // an element's key and data, read in place
	for _, s := range r.Stmts {
		switch st := s.(type) {
		case *nft.Vmap:
			ng, ok1 := st.Key.(*nft.Numgen)
			set, ok2 := st.Data.(*nft.AnonSet)
			if !ok1 || !ok2 {
				return nil, nil, false
			}
			out = slices.Grow(out, len(set.Elements))
			for i := range set.Elements {
				el := &set.Elements[i]
				n, ok := nftIndex(el.AppendKey(kbuf[:0]))
				if !ok || el.Verdict == nil || el.Verdict.Target == "" {
					return nil, nil, false
				}
				out = append(out, nftSlot{index: n, chain: el.Verdict.Target})
			}
			return out, ng, true
		case *nft.NAT:
			if st.Kind != "dnat" {
				return nil, nil, false
			}
			mp, ok := st.Addr.(*nft.Map)
			if !ok {
				return nil, nil, false
			}
			ng, ok1 := mp.Key.(*nft.Numgen)
			set, ok2 := mp.Data.(*nft.AnonSet)
			if !ok1 || !ok2 {
				return nil, nil, false
			}
			// The backends of the map are made in one allocation, and
			// their endpoints are parts of one string: a large node has a
			// map per service port.
			out = slices.Grow(out, len(set.Elements))
			size := 0
			for i := range set.Elements {
				if d := set.Elements[i].AppendData(dbuf[:0]); len(d) == 2 {
					size += len(d[0]) + 1 + len(d[1])
				}
			}
			bs := make([]nftBackend, len(set.Elements))
			eps := make([]byte, 0, size)
			for i := range set.Elements {
				el := &set.Elements[i]
				n, ok := nftIndex(el.AppendKey(kbuf[:0]))
				d := el.AppendData(dbuf[:0])
				if !ok || len(d) != 2 {
					return nil, nil, false
				}
				eps = setAddrBackend(&bs[i], d[0], d[1], eps)
				out = append(out, nftSlot{index: n, b: &bs[i]})
			}
			// eps, made to its size and not written again, is the
			// endpoints' string itself rather than copied into one.
			all := unsafe.String(unsafe.SliceData(eps), len(eps))
			for i := range bs {
				if bs[i].Endpoint == "" {
					d := set.Elements[i].AppendData(dbuf[:0])
					n := len(d[0]) + 1 + len(d[1])
					bs[i].Endpoint, all = all[:n], all[n:]
				}
			}
			return out, ng, true
		}
	}
	return nil, nil, false
}

func nftIndex(key []string) (uint32, bool) {
	if len(key) != 1 {
		return 0, false
	}
	n, err := strconv.ParseUint(key[0], 10, 32)
	return uint32(n), err == nil
}

// nftDNAT reads `meta l4proto tcp dnat to IP:port`.
func nftDNAT(r *nft.Rule) *nftBackend {
	for _, s := range r.Stmts {
		n, ok := s.(*nft.NAT)
		if !ok || n.Kind != "dnat" {
			continue
		}
		a, ok1 := n.Addr.(*nft.Value)
		p, ok2 := n.Port.(*nft.Value)
		if !ok1 || !ok2 {
			return nil
		}
		return nftAddrBackend(a.Text, p.Text)
	}
	return nil
}

func nftAddrBackend(addr, port string) *nftBackend {
	b := new(nftBackend)
	if ep := setAddrBackend(b, addr, port, nil); ep != nil {
		b.Endpoint = string(ep)
	}
	return b
}

// setAddrBackend makes b the backend of a dnat to addr and port. When
// its endpoint is "addr:port", as nft prints both canonically, it is
// appended to eps for the caller to set (b.Endpoint stays ""); else it is
// set.
func setAddrBackend(b *nftBackend, addr, port string, eps []byte) []byte {
	*b = nftBackend{Backend: Backend{Weight: 1}}
	ip, err1 := netip.ParseAddr(addr)
	n, err2 := strconv.ParseUint(port, 10, 16)
	if err1 != nil || err2 != nil {
		b.Endpoint = "(dnat to " + addr + " port " + port + ")"
		return eps
	}
	b.IP, b.Port = ip.Unmap(), int32(n)
	if ip.Is4() && len(port) > 0 && port[0] != '0' {
		return append(append(append(eps, addr...), ':'), port...)
	}
	b.Endpoint = model.JoinHostPort(b.IP, b.Port)
	return eps
}

// backend reads an endpoint chain: its affinity set update and its dnat.
func (x *nftExtractor) backend(name string) *nftBackend {
	if b := x.back[name]; b != nil {
		return b
	}
	c := x.chains[name]
	var b *nftBackend
	if c == nil {
		b = &nftBackend{Backend: Backend{Weight: 1, Endpoint: "(missing chain " + name + ")"}}
	} else {
		var set string
		for _, r := range c.Rules {
			for _, s := range r.Stmts {
				if u, ok := s.(*nft.SetUpdate); ok && (u.Op == "update" || u.Op == "add") {
					set = u.Set
				}
			}
			if nb := nftDNAT(r); nb != nil && b == nil {
				b = nb
				b.setEvidence(oneEvidence(NFTRuleEvidence(r)))
			}
		}
		if b == nil {
			b = &nftBackend{Backend: Backend{Weight: 1, Endpoint: "(no dnat in " + name + ")"}}
			b.setEvidence(oneEvidence(NFTChainEvidence(c)))
		}
		if set != "" {
			x.affinitySet[name] = set
		}
	}
	b.ID = name
	x.back[name] = b
	return b
}

// attributeEndpointChains names endpoint chains and affinity sets whose
// names were truncated after the dispatch that reaches them.
func (x *nftExtractor) attributeEndpointChains() {
	for _, d := range x.disp {
		for _, b := range d.Backends {
			if o := x.obj[b.ID]; o != nil && o.Service == "" {
				o.Service = d.Service
			}
			if set := x.affinitySet[b.ID]; set != "" {
				if o := x.obj["@"+set]; o != nil && o.Service == "" {
					o.Service = d.Service
				}
			}
		}
	}
}

// nodePorts reads whether node port traffic reaches the service-nodeports
// map: a rule of a reachable chain looks it up for the nodeport-ips set
// (not empty) or for every local address (fib daddr type local).
func (x *nftExtractor) nodePorts() {
	var lookups []*nft.Rule
	for _, c := range x.t.Chains {
		if !x.reach[c.Name] {
			continue
		}
		for _, r := range c.Rules {
			for _, s := range r.Stmts {
				if vm, ok := s.(*nft.Vmap); ok {
					if ref, ok := vm.Data.(*nft.SetRef); ok && ref.Name == nftServiceNodePort {
						lookups = append(lookups, r)
					}
				}
			}
		}
	}
	if len(lookups) == 0 {
		x.v.NodePortsWhy = "no rule reached from a base chain looks up the " + nftServiceNodePort + " map"
		return
	}
	for _, r := range lookups {
		x.v.NodePortsEvidence = append(x.v.NodePortsEvidence, NFTRuleEvidence(r))
		usesSet := false
		for _, s := range r.Stmts {
			if m, ok := s.(*nft.Match); ok {
				if ref, ok := m.Right.(*nft.SetRef); ok && ref.Name == nftNodePortIPs {
					usesSet = true
				}
			}
		}
		if !usesSet {
			x.v.NodePorts = true
			continue
		}
		if s := x.sets[nftNodePortIPs]; s != nil {
			x.v.NodePortsEvidence = append(x.v.NodePortsEvidence, NFTSetEvidence(s))
			if len(s.Elements) > 0 {
				x.v.NodePorts = true
			}
		}
	}
	if !x.v.NodePorts {
		x.v.NodePortsWhy = "the " + nftNodePortIPs + " set holds no address"
	}
}

// nftSourceFilter reads `ip saddr != { ranges } drop`: the admitted
// ranges, and whether the rule drops the rest.
func nftSourceFilter(r *nft.Rule, ipx string) ([]netip.Prefix, bool) {
	st := nftStmts(r)
	if len(st) != 2 {
		return nil, false
	}
	m, ok1 := st[0].(*nft.Match)
	v, ok2 := st[1].(*nft.Verdict)
	if !ok1 || !ok2 || v.Kind != "drop" || m.Op != nft.OpNeq {
		return nil, false
	}
	if p, ok := m.Left.(*nft.Payload); !ok || p.Proto != ipx || p.Field != "saddr" {
		return nil, false
	}
	var out []netip.Prefix
	switch rv := m.Right.(type) {
	case *nft.Value:
		if p, ok := nftPrefix(rv.Text); ok {
			out = append(out, p)
		}
	case *nft.AnonSet:
		for i := range rv.Elements {
			if rv.Elements[i].NumKey() == 1 {
				if p, ok := nftPrefix(rv.Elements[i].Part(0)); ok {
					out = append(out, p)
				}
			}
		}
	default:
		return nil, false
	}
	return out, true
}

// nftPrefix reads "10.0.0.0/8" or "10.0.0.1".
func nftPrefix(s string) (netip.Prefix, bool) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), true
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()), true
	}
	return netip.Prefix{}, false
}

// nftDest reads an element key "IP . proto . port".
func nftDest(key []string) (netip.Addr, string, int32, bool) {
	if len(key) != 3 {
		return netip.Addr{}, "", 0, false
	}
	ip, err := netip.ParseAddr(key[0])
	if err != nil {
		return netip.Addr{}, "", 0, false
	}
	proto, port, ok := nftProtoPort(key[1:])
	return ip.Unmap(), proto, port, ok
}

// nftProtoPort reads an element key "proto . port".
func nftProtoPort(key []string) (string, int32, bool) {
	if len(key) != 2 {
		return "", 0, false
	}
	n, err := strconv.ParseUint(key[1], 10, 16)
	if err != nil {
		return "", 0, false
	}
	switch key[0] {
	case "tcp", "udp", "sctp":
		return key[0], int32(n), true
	}
	return "", 0, false
}

// nftElementKey formats an element's key as nft prints it.
func nftElementKey(el *nft.Element) string { return strings.Join(el.Key(), " . ") }

// NFTElementEvidence returns the evidence of a set or map element: its key,
// comment and data as nft prints them (the same for the text and the JSON
// listing).
func NFTElementEvidence(s *nft.Set, el *nft.Element) model.Evidence {
	// Written on the stack, then copied once into a string of its
	// length: a large node has an element per service port.
	var buf [128]byte
	var pbuf [4]string
	b := appendParts(buf[:0], el.AppendKey(pbuf[:0]))
	if el.Comment() != "" {
		b = append(append(append(b, ` comment "`...), el.Comment()...), '"')
	}
	switch {
	case el.Verdict != nil:
		b = append(append(b, " : "...), el.Verdict.Kind...)
		if el.Verdict.Target != "" {
			b = append(append(b, ' '), el.Verdict.Target...)
		}
	case el.HasData():
		b = appendParts(append(b, " : "...), el.AppendData(pbuf[:0]))
	}
	return model.EvidenceAt(el.Pos(), string(b))
}

// appendParts appends parts joined by " . " to b.
func appendParts(b []byte, parts []string) []byte {
	for i, p := range parts {
		if i > 0 {
			b = append(b, " . "...)
		}
		b = append(b, p...)
	}
	return b
}

// NFTRuleEvidence returns the evidence of a rule.
func NFTRuleEvidence(r *nft.Rule) model.Evidence { return model.EvidenceAt(r.Pos(), r.Raw) }

// NFTChainEvidence returns the evidence of a chain: its header, with the
// hook and priority of a base chain.
func NFTChainEvidence(c *nft.Chain) model.Evidence {
	text := "chain " + c.Name + " {"
	if c.IsBase() {
		text += " type " + string(c.Type) + " hook " + c.Hook
		if c.Priority != nil {
			text += " priority " + c.Priority.Text
		}
		text += "; }"
	}
	return model.EvidenceAt(c.Pos(), text)
}

// NFTSetEvidence returns the evidence of a set or map: its header with its
// type and default timeout.
func NFTSetEvidence(s *nft.Set) model.Evidence {
	kind := "set "
	if s.IsMap {
		kind = "map "
	}
	text := kind + s.Name + " { type " + strings.Join(s.KeyType, " . ")
	if s.IsMap {
		text += " : " + strings.Join(s.DataType, " . ")
	}
	text += ";"
	if s.Timeout > 0 {
		text += " timeout " + nftDuration(s.Timeout) + ";"
	}
	return model.EvidenceAt(s.Pos, text+" }")
}

// nftDuration prints a duration as nft does (1d2h3m4s).
func nftDuration(d time.Duration) string {
	var b []byte
	for _, u := range []struct {
		d time.Duration
		s string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}} {
		if n := d / u.d; n > 0 {
			b = strconv.AppendInt(b, int64(n), 10)
			b = append(b, u.s...)
			d -= n * u.d
		}
	}
	return string(b)
}
