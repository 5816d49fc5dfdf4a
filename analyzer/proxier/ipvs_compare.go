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
	"github.com/proxyscan/proxyscan/parsers/ipaddr"
	"github.com/proxyscan/proxyscan/parsers/ipset"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/ipvs"
)

// Kinds of differences of IPVS mode. Their Table is "ipvs" (Chain the
// virtual server, "10.96.0.1:443/TCP"), "ipset" (Chain the set) or
// "kube-ipvs0"; iptables rules and chains use the kinds of iptables mode.
const (
	MissingVirtualServer DiffKind = "missing-virtual-server"
	ExtraVirtualServer   DiffKind = "extra-virtual-server"
	// VirtualServerDiffers is a virtual server on both sides whose
	// scheduler, persistence or flags differ.
	VirtualServerDiffers DiffKind = "virtual-server-differs"
	MissingRealServer    DiffKind = "missing-real-server"
	ExtraRealServer      DiffKind = "extra-real-server"
	// RealServerDiffers is a real server on both sides whose weight or
	// forwarding method differ.
	RealServerDiffers DiffKind = "real-server-differs"
	// TimeoutsDiffer is an IPVS connection timeout that is not the one
	// the configuration sets.
	TimeoutsDiffer      DiffKind = "timeouts-differ"
	MissingSet          DiffKind = "missing-set"
	SetDiffers          DiffKind = "set-differs"
	MissingSetEntry     DiffKind = "missing-set-entry"
	ExtraSetEntry       DiffKind = "extra-set-entry"
	MissingBoundAddress DiffKind = "missing-bound-address"
	ExtraBoundAddress   DiffKind = "extra-bound-address"
)

// Tables of IPVS-mode differences besides the iptables tables.
const (
	tableIPVS  = "ipvs"
	tableIPSet = "ipset"
	tableBound = "kube-ipvs0"
)

// ipvsExtra is what an IPVS-mode data plane carries besides its dumps:
// the excluded CIDRs (expected side) and the evidence of the kube-ipvs0
// addresses (captured side).
type ipvsExtra struct {
	exclude []netip.Prefix
	bound   map[netip.Addr]model.Evidence
	// timeouts are the IPVS connection timeouts in seconds (tcp, tcpfin,
	// udp): on the expected side those the configuration sets (0 keeps
	// the kernel's), on the captured side those of ipvsadm -Ln --timeout
	// (nil when not captured).
	timeouts   *[3]int
	timeoutsEv model.Evidence
}

// capturedIPVS fills the IPVS part of a captured data plane: the IPVS
// table (the save form when both were captured), the ipsets and the
// kube-ipvs0 addresses (nil when ip addr was not captured).
func capturedIPVS(r *resolve.Resolution, dp *Dataplane) {
	snap := r.Snap
	dp.ipvs = &ipvsExtra{bound: map[netip.Addr]model.Evidence{}}
	for _, d := range snap.IPVS {
		if d.Form == ipvs.FormTimeout {
			if t := d.Timeouts; t != nil {
				dp.ipvs.timeouts = &[3]int{t.TCP, t.TCPFin, t.UDP}
				dp.ipvs.timeoutsEv = model.EvidenceAt(t.Pos, t.Raw)
			}
		}
	}
	dp.IPVS = r.IPVSSaved()
	for _, d := range snap.IPSets {
		if dp.IPSets == nil || dp.IPSets.Form != ipset.FormSave && d.Form == ipset.FormSave {
			dp.IPSets = d
		}
	}
	// A listing that does not show kube-ipvs0 (ip addr show eth0) says
	// nothing of its bindings: they are not compared.
	if a := snap.Addrs; a != nil && a.ShowsAddresses(ipaddr.KubeIPVSInterface, "inet") && a.ShowsAddresses(ipaddr.KubeIPVSInterface, "inet6") {
		dp.Bound = []netip.Addr{}
		for _, a := range snap.Addrs.KubeIPVSAddresses() {
			dp.Bound = append(dp.Bound, a.Local)
			dp.ipvs.bound[a.Local] = model.EvidenceAt(a.Pos, a.Raw)
		}
	}
}

// ipvsUnorderedChain reports the chains of IPVS mode whose rule order
// carries no meaning: the built-in chains (kube-proxy prepends its jumps
// only when missing) and KUBE-IPVS-OUT-FILTER, filled in map order.
func ipvsUnorderedChain(table, chain string) bool {
	return iptables.IsBuiltinChain(table, chain) || table == "filter" && chain == kpnames.IPVSOutFilter
}

// virtualServerSettings renders what kube-proxy sets on a virtual server
// besides its address: scheduler, persistence and flags.
func virtualServerSettings(s *ipvs.Service) string {
	var b strings.Builder
	b.WriteString("scheduler " + s.SchedName)
	if s.IsPersistent() {
		fmt.Fprintf(&b, ", persistent %d", s.Timeout)
		if (s.AddressFamily == ipvs.FamilyIPv4 && s.Netmask != 0xffffffff) || (s.AddressFamily == ipvs.FamilyIPv6 && s.Netmask != 128) {
			fmt.Fprintf(&b, ", netmask %#x", s.Netmask)
		}
	}
	if f := s.Flags & (ipvs.FlagSchedMask | ipvs.FlagOnePacket); f != 0 {
		fmt.Fprintf(&b, ", flags %#x", f)
	}
	if s.PEName != "" {
		b.WriteString(", pe " + s.PEName)
	}
	return b.String()
}

// setMemberKey returns a member as kube-proxy writes it, whatever the
// spelling of the input (protocol numbers, a /32 net).
func setMemberKey(s *ipset.Set, e *ipset.Entry) string {
	proto := ipset.ProtoName(e.Proto)
	switch s.Type {
	case "bitmap:port":
		return strconv.Itoa(int(e.Port))
	case "hash:ip":
		return e.IP.String()
	case "hash:ip,port":
		return kpnames.MemberKey(e.IP, proto, int32(e.Port))
	case "hash:ip,port,ip":
		return kpnames.MemberKey(e.IP, proto, int32(e.Port)) + "," + e.IP2.String()
	case "hash:ip,port,net":
		return kpnames.MemberKey(e.IP, proto, int32(e.Port)) + "," + e.Net.Masked().String()
	}
	return e.Elem
}

// ipvsAttributor names the service port of IPVS objects by address.
type ipvsAttributor struct {
	*attributor
	byIP map[netip.Addr][]string
}

func newIPVSAttributor(ports []*model.ServicePort) *ipvsAttributor {
	a := &ipvsAttributor{attributor: newAttributor(ports), byIP: map[netip.Addr][]string{}}
	for _, sp := range ports {
		if sp.Skip != "" {
			continue
		}
		for _, ips := range [][]netip.Addr{sp.ClusterIPs, sp.ExternalIPs, sp.LoadBalancerVIPs} {
			for _, ip := range ips {
				a.byIP[ip] = appendOnce(a.byIP[ip], sp.String())
			}
		}
	}
	return a
}

func only(list []string) string {
	if len(list) == 1 {
		return list[0]
	}
	return ""
}

// dest attributes an address, protocol and port: a service IP, else a
// node port.
func (a *ipvsAttributor) dest(ip netip.Addr, proto string, port int) string {
	p := strconv.Itoa(port)
	if s := only(a.byDest[ip.String()+" "+proto+" "+p]); s != "" {
		return s
	}
	return only(a.byNode[proto+" "+p])
}

// entry attributes a member of one of kube-proxy's sets.
func (a *ipvsAttributor) entry(base string, s *ipset.Set, e *ipset.Entry) (service, endpoint string) {
	proto := ipset.ProtoName(e.Proto)
	switch base {
	case kpnames.SetLoopBack:
		ep := model.JoinHostPort(e.IP, int32(e.Port))
		return only(a.byEP[ep]), ep
	case kpnames.SetIPVSIPs:
		return only(a.byIP[e.IP]), ""
	case kpnames.SetHealthCheckNodePort:
		return only(a.byNode["tcp "+strconv.Itoa(int(e.Port))]), ""
	case kpnames.SetNodePortTCP, kpnames.SetNodePortLocalTCP:
		return only(a.byNode["tcp "+strconv.Itoa(int(e.Port))]), ""
	case kpnames.SetNodePortUDP, kpnames.SetNodePortLocalUDP:
		return only(a.byNode["udp "+strconv.Itoa(int(e.Port))]), ""
	}
	if s.Type == "bitmap:port" {
		return "", ""
	}
	return a.dest(e.IP, proto, int(e.Port)), ""
}

// setBases maps the names of kube-proxy's sets in the families to their
// IPv4 names.
func setBases(fams []model.Family) map[string]string {
	out := map[string]string{}
	for _, f := range fams {
		for _, s := range ipvsSetInfo {
			out[kpnames.SetName(s.name, f == model.IPv6)] = s.name
		}
	}
	return out
}

func setFamily(s *ipset.Set) model.Family {
	if s.Family == "inet6" || strings.HasPrefix(s.Name, "KUBE-6-") {
		return model.IPv6
	}
	return model.IPv4
}

func vsFamily(s *ipvs.Service) model.Family {
	if s.AddressFamily == ipvs.FamilyIPv6 {
		return model.IPv6
	}
	return model.IPv4
}

func addrOf(ip []byte) netip.Addr {
	a, _ := netip.AddrFromSlice(ip)
	return a.Unmap()
}

// compareIPVS compares IPVS-mode data planes: virtual servers with their
// settings and real servers, ipset members, kube-ipvs0 addresses (when
// the capture has ip addr) and the iptables rules of each family.
func compareIPVS(exp, act *Dataplane) []Difference {
	ports := exp.ports
	if ports == nil {
		ports = act.ports
	}
	at := newIPVSAttributor(ports)
	var fams []model.Family
	inFam := map[model.Family]bool{}
	for _, d := range exp.IPTables {
		fams = append(fams, model.Family(d.Family))
		inFam[model.Family(d.Family)] = true
	}
	var out []Difference
	out = append(out, compareVirtualServers(exp, act, inFam, at)...)
	out = append(out, compareIPSets(exp.IPSets, act.IPSets, fams, at)...)
	if act.Bound != nil {
		out = append(out, compareBound(exp, act, inFam, at)...)
	}
	out = append(out, compareTimeouts(exp, act)...)
	for _, f := range fams {
		out = append(out, compareIPVSIPTables(f, exp.IPTablesFor(f), act.IPTablesFor(f), exp.canonical, act.canonical, at)...)
	}
	rank := map[string]int{tableIPVS: 0, tableIPSet: 1, tableBound: 2}
	for i, t := range tableOrder {
		rank[t] = 3 + i
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Family != b.Family {
			return a.Family < b.Family
		}
		if a.Table != b.Table {
			return rank[a.Table] < rank[b.Table]
		}
		return a.Chain < b.Chain
	})
	return out
}

func compareVirtualServers(exp, act *Dataplane, inFam map[model.Family]bool, at *ipvsAttributor) []Difference {
	var excl []netip.Prefix
	if exp.ipvs != nil {
		excl = exp.ipvs.exclude
	}
	excluded := func(ip netip.Addr) bool {
		for _, c := range excl {
			if c.Contains(ip) {
				return true
			}
		}
		return false
	}
	actual := map[string]*ipvs.Service{}
	if act.IPVS != nil {
		for _, s := range act.IPVS.Services {
			if s.FWMark == 0 && inFam[vsFamily(s)] {
				actual[s.String()] = s
			}
		}
	}
	var out []Difference
	diff := func(kind DiffKind, s *ipvs.Service, d *ipvs.Destination, note string) Difference {
		r := Difference{Kind: kind, Family: vsFamily(s), Table: tableIPVS, Chain: s.String(), Note: note,
			Service: at.dest(addrOf(s.Address), strings.ToLower(ipvs.ProtocolName(s.Protocol)), int(s.Port)), How: "address"}
		if r.Service == "" {
			r.How = ""
		}
		if d == nil {
			r.Rule, r.Evidence = s.Raw, model.EvidenceAt(s.Pos, s.Raw)
		} else {
			r.Rule, r.Evidence, r.Endpoint = d.Raw, model.EvidenceAt(d.Pos, d.Raw), d.String()
		}
		return r
	}
	seen := map[string]bool{}
	if exp.IPVS != nil {
		for _, e := range exp.IPVS.Services {
			key := e.String()
			seen[key] = true
			a := actual[key]
			if a == nil {
				out = append(out, diff(MissingVirtualServer, e, nil, ""))
				for _, d := range e.Destinations {
					out = append(out, diff(MissingRealServer, e, d, "its virtual server is missing"))
				}
				continue
			}
			// A listing that prints no scheduler or weights (ipvsadm -Ln
			// --stats) says nothing of them: they are not compared.
			if es, as := virtualServerSettings(e), virtualServerSettings(a); a.SchedulerKnown() && es != as {
				out = append(out, diff(VirtualServerDiffers, a, nil, as+"; expected "+es))
			}
			out = append(out, compareRealServers(e, a, diff)...)
		}
	}
	if act.IPVS != nil {
		for _, a := range act.IPVS.Services {
			if a.FWMark != 0 || !inFam[vsFamily(a)] || seen[a.String()] || excluded(addrOf(a.Address)) {
				continue
			}
			out = append(out, diff(ExtraVirtualServer, a, nil, ""))
		}
	}
	return out
}

func compareRealServers(e, a *ipvs.Service, diff func(DiffKind, *ipvs.Service, *ipvs.Destination, string) Difference) []Difference {
	var out []Difference
	actual := map[string]*ipvs.Destination{}
	for _, d := range a.Destinations {
		actual[d.String()] = d
	}
	seen := map[string]bool{}
	for _, d := range e.Destinations {
		key := d.String()
		seen[key] = true
		ad := actual[key]
		if ad == nil {
			out = append(out, diff(MissingRealServer, e, d, ""))
			continue
		}
		var notes []string
		if a.WeightsKnown() && ad.Weight != d.Weight {
			n := fmt.Sprintf("weight %d, expected %d", ad.Weight, d.Weight)
			if ad.Weight == 0 {
				n += " (weight 0: being removed gracefully while connections drain)"
			}
			notes = append(notes, n)
		}
		if ad.ConnectionFlags&ipvs.FwdMask != d.ConnectionFlags&ipvs.FwdMask {
			notes = append(notes, fmt.Sprintf("forwarding %d, expected %d (Masq)", ad.ConnectionFlags&ipvs.FwdMask, d.ConnectionFlags&ipvs.FwdMask))
		}
		if len(notes) > 0 {
			out = append(out, diff(RealServerDiffers, a, ad, strings.Join(notes, "; ")))
		}
	}
	for _, d := range a.Destinations {
		if seen[d.String()] {
			continue
		}
		note := ""
		if d.Weight == 0 && a.WeightsKnown() {
			note = "weight 0: a removed endpoint draining its connections (graceful termination)"
		}
		out = append(out, diff(ExtraRealServer, a, d, note))
	}
	return out
}

func compareIPSets(exp, act *ipset.Dump, fams []model.Family, at *ipvsAttributor) []Difference {
	if exp == nil {
		return nil
	}
	bases := setBases(fams)
	actual := map[string]*ipset.Set{}
	if act != nil {
		for _, s := range act.Sets {
			actual[s.Name] = s
		}
	}
	var out []Difference
	diff := func(kind DiffKind, s *ipset.Set, e *ipset.Entry, note string) Difference {
		d := Difference{Kind: kind, Family: setFamily(s), Table: tableIPSet, Chain: s.Name, Note: note}
		if e == nil {
			d.Rule, d.Evidence = s.Raw, model.EvidenceAt(s.Pos, s.Raw)
			return d
		}
		d.Rule, d.Evidence = "add "+s.Name+" "+e.Elem, model.EvidenceAt(e.Pos, e.Raw)
		d.Service, d.Endpoint = at.entry(bases[s.Name], s, e)
		if d.Service != "" {
			d.How = "address"
		}
		return d
	}
	// add appends the differences of a member: one per service port for
	// an address of KUBE-IPVS-IPS several ports share.
	add := func(kind DiffKind, s *ipset.Set, e *ipset.Entry, note string) {
		d := diff(kind, s, e, note)
		if list := at.byIP[e.IP]; bases[s.Name] == kpnames.SetIPVSIPs && len(list) > 1 {
			for _, sp := range list {
				d.Service, d.How = sp, "address"
				out = append(out, d)
			}
			return
		}
		out = append(out, d)
	}
	for _, e := range exp.Sets {
		if _, ok := bases[e.Name]; !ok {
			continue
		}
		a := actual[e.Name]
		if a == nil {
			if act == nil {
				continue // no ipsets captured
			}
			out = append(out, diff(MissingSet, e, nil, ""))
			for _, m := range e.Entries {
				add(MissingSetEntry, e, m, "its set is missing")
			}
			continue
		}
		if a.Type != e.Type || a.Family != e.Family {
			out = append(out, diff(SetDiffers, a, nil, fmt.Sprintf("type %s %s, expected %s %s", a.Type, a.Family, e.Type, e.Family)))
			continue
		}
		have := map[string]bool{}
		for _, m := range a.Entries {
			have[setMemberKey(a, m)] = true
		}
		want := map[string]bool{}
		for _, m := range e.Entries {
			k := setMemberKey(e, m)
			want[k] = true
			if !have[k] {
				add(MissingSetEntry, e, m, "")
			}
		}
		for _, m := range a.Entries {
			if !want[setMemberKey(a, m)] {
				add(ExtraSetEntry, a, m, "")
			}
		}
	}
	return out
}

// compareTimeouts compares the IPVS connection timeouts the
// configuration sets (ipvs.tcpTimeout, tcpFinTimeout, udpTimeout; kube-proxy
// runs the equivalent of ipvsadm --set when any is set) with ipvsadm -Ln
// --timeout, when captured.
func compareTimeouts(exp, act *Dataplane) []Difference {
	if exp.ipvs == nil || exp.ipvs.timeouts == nil || act.ipvs == nil || act.ipvs.timeouts == nil {
		return nil
	}
	var notes []string
	for i, name := range []string{"tcp", "tcpfin", "udp"} {
		if want, got := exp.ipvs.timeouts[i], act.ipvs.timeouts[i]; want > 0 && want != got {
			notes = append(notes, fmt.Sprintf("%s %ds, configured %ds", name, got, want))
		}
	}
	if len(notes) == 0 {
		return nil
	}
	ev := act.ipvs.timeoutsEv
	return []Difference{{Kind: TimeoutsDiffer, Family: model.IPv4, Table: tableIPVS, Chain: "timeouts", Rule: ev.Text,
		Note: strings.Join(notes, "; "), Evidence: ev}}
}

func compareBound(exp, act *Dataplane, inFam map[model.Family]bool, at *ipvsAttributor) []Difference {
	var out []Difference
	have := map[netip.Addr]bool{}
	for _, a := range act.Bound {
		have[a] = true
	}
	want := map[netip.Addr]bool{}
	// An address shared by several service ports gives a difference for
	// each: every one of them needs it.
	diff := func(kind DiffKind, a netip.Addr, ev model.Evidence) {
		d := Difference{Kind: kind, Family: model.FamilyOf(a), Table: tableBound,
			Rule: netip.PrefixFrom(a, a.BitLen()).String(), Evidence: ev}
		if len(at.byIP[a]) == 0 {
			out = append(out, d)
		}
		for _, s := range at.byIP[a] {
			d.Service, d.How = s, "address"
			out = append(out, d)
		}
	}
	for _, a := range exp.Bound {
		want[a] = true
		if !have[a] {
			diff(MissingBoundAddress, a, model.Evidence{File: "expected/kube-ipvs0", Text: netip.PrefixFrom(a, a.BitLen()).String()})
		}
	}
	for _, a := range act.Bound {
		if want[a] || !inFam[model.FamilyOf(a)] {
			continue
		}
		var ev model.Evidence
		if act.ipvs != nil {
			ev = act.ipvs.bound[a]
		}
		diff(ExtraBoundAddress, a, ev)
	}
	return out
}

// ipvsChainNames are the chains of IPVS mode, compared even when the
// expected data plane lacks them.
var ipvsChainNames = func() map[string]bool {
	m := map[string]bool{}
	for _, c := range ipvsChains {
		m[c.table+" "+c.chain] = true
	}
	return m
}()

// compareIPVSIPTables compares the iptables rules of IPVS mode in one
// family: kube-proxy's chains and, in built-in chains, the rules jumping
// to them; in order except where order carries no meaning.
func compareIPVSIPTables(f model.Family, exp, act *iptables.Dump, expCanonical, actCanonical bool, at *ipvsAttributor) []Difference {
	if exp == nil {
		return nil
	}
	fam := iptables.Family(f)
	var out []Difference
	for _, tname := range tableOrder {
		et := exp.Table(tname)
		if et == nil {
			continue
		}
		var atab *iptables.Table
		if act != nil {
			atab = act.Table(tname)
		}
		names, owned := comparedChains(et, atab, func(name string) bool { return ipvsChainNames[tname+" "+name] })
		for _, name := range names {
			ec := et.Chain(name)
			var ac *iptables.Chain
			if atab != nil {
				ac = atab.Chain(name)
			}
			out = append(out, compareIPVSChain(f, fam, tname, name, ec, ac, expCanonical, actCanonical, owned, at)...)
		}
	}
	return out
}

func compareIPVSChain(f model.Family, fam iptables.Family, table, name string, ec, ac *iptables.Chain, expCanonical, actCanonical bool, owned map[string]bool, at *ipvsAttributor) []Difference {
	builtin := iptables.IsBuiltinChain(table, name)
	var out []Difference
	switch {
	case ec == nil && ac == nil:
		return nil
	case ac == nil && !builtin:
		out = append(out, Difference{Kind: MissingChain, Family: f, Table: table, Chain: name, Evidence: model.EvidenceAt(ec.Pos(), chainHeader(ec))})
	case ec == nil && !builtin:
		out = append(out, Difference{Kind: ExtraChain, Family: f, Table: table, Chain: name, Evidence: model.EvidenceAt(ac.Pos(), chainHeader(ac))})
	}
	keep := func(r *iptables.Rule) bool { return !builtin || owned[r.Target()] }
	unordered := ipvsUnorderedChain(table, name)
	collect := func(c *iptables.Chain, canonical bool) []crule {
		if c == nil {
			return nil
		}
		var rs []crule
		var canon canonicalizer
		for _, r := range c.Rules {
			if !keep(r) {
				continue
			}
			cr := crule{text: r.Raw, rule: r}
			if !canonical {
				cr.text = string(canon.appendRule(nil, fam, name, r.Args()))
			}
			rs = append(rs, cr)
		}
		if unordered {
			sort.SliceStable(rs, func(i, j int) bool { return rs[i].text < rs[j].text })
		}
		return rs
	}
	es, as := collect(ec, expCanonical), collect(ac, actCanonical)
	diff := func(kind DiffKind, r crule, note string) Difference {
		d := Difference{Kind: kind, Family: f, Table: table, Chain: name, Rule: r.text, Note: note, Evidence: model.RuleEvidence(r.rule)}
		if vaddr := r.rule.Value("--vaddr"); vaddr != "" {
			ip, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimSuffix(vaddr, "/32"), "/128"))
			port, _ := strconv.Atoi(r.rule.Value("--vport"))
			if err == nil {
				if d.Service = at.dest(ip, protoName(r.rule.Value("--vproto")), port); d.Service != "" {
					d.How = "address"
				}
			}
		}
		return d
	}
	missing, extra, moved := matchRules(es, as)
	for _, i := range missing {
		out = append(out, diff(MissingRule, es[i], ""))
	}
	for _, j := range extra {
		out = append(out, diff(ExtraRule, as[j], ""))
	}
	for _, m := range moved {
		out = append(out, diff(MissingRule, es[m[0]], "present in the capture at another position"))
		out = append(out, diff(ExtraRule, as[m[1]], "out of order"))
	}
	return out
}

// ipvsExpectedItems counts the virtual and real servers, set members and
// bound addresses of the expected data plane that belong to a service
// ("ns/name") or service port ("ns/name:port").
func ipvsExpectedItems(exp *Dataplane, name string) int {
	at := newIPVSAttributor(exp.ports)
	match := func(s string) bool {
		return s == name || !strings.Contains(name, ":") && strings.HasPrefix(s, name+":")
	}
	n := 0
	if exp.IPVS != nil {
		for _, s := range exp.IPVS.Services {
			if match(at.dest(addrOf(s.Address), strings.ToLower(ipvs.ProtocolName(s.Protocol)), int(s.Port))) {
				n += 1 + len(s.Destinations)
			}
		}
	}
	var fams []model.Family
	for _, d := range exp.IPTables {
		fams = append(fams, model.Family(d.Family))
	}
	bases := setBases(fams)
	if exp.IPSets != nil {
		for _, s := range exp.IPSets.Sets {
			for _, e := range s.Entries {
				if svc, _ := at.entry(bases[s.Name], s, e); match(svc) {
					n++
				}
			}
		}
	}
	for _, a := range exp.Bound {
		for _, s := range at.byIP[a] {
			if match(s) {
				n++
				break
			}
		}
	}
	return n
}
