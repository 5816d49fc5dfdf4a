package checks

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/analyzer/view"
	"github.com/proxyscan/proxyscan/parsers/ipvs"
)

// ipvsViews builds the views of an IPVS-mode node: IPv4 whenever an IPVS
// table was captured, IPv6 when it or the other inputs show IPv6.
func ipvsViews(r *resolve.Resolution) []*view.View {
	s := r.Snap
	t := r.IPVSTable()
	if t == nil {
		return nil
	}
	fams := map[model.Family]bool{model.IPv4: true}
	for _, svc := range t.Services {
		if svc.AddressFamily == ipvs.FamilyIPv6 {
			fams[model.IPv6] = true
		}
	}
	if d := r.IPTablesOf(model.ModeIPVS, model.IPv6); d != nil && resolve.IsIPVSMode(d) {
		fams[model.IPv6] = true
	}
	if s.Addrs != nil {
		for _, a := range s.Addrs.KubeIPVSAddresses() {
			if model.FamilyOf(a.Local) == model.IPv6 {
				fams[model.IPv6] = true
			}
		}
	}
	var out []*view.View
	for _, fam := range []model.Family{model.IPv4, model.IPv6} {
		if !fams[fam] {
			continue
		}
		out = append(out, view.FromIPVS(view.IPVSInput{
			Family: fam, Table: t, Sets: s.IPSets, Addrs: s.Addrs, IPTables: r.IPTablesOf(model.ModeIPVS, fam),
			Ports: s.Ports, NodeIPs: r.NodeAddrs,
		}))
	}
	return out
}

// ipvsPart is something besides its virtual server that IPVS mode needs
// for a destination, found missing.
type ipvsPart struct {
	what, effect string
	ev           model.Evidence
}

// ipvsMissing returns what kube-proxy's IPVS mode programs for a
// destination of sp other than its virtual server and the view lacks: the
// binding of the address to kube-ipvs0 (unless it is a node address) and
// its member in the set that admits and masquerades it (KUBE-CLUSTER-IP,
// KUBE-EXTERNAL-IP or KUBE-EXTERNAL-IP-LOCAL, KUBE-LOAD-BALANCER,
// KUBE-NODE-PORT-<PROTO>). Inputs that were not captured are not judged.
func ipvsMissing(p *Pass, v *view.View, sp *model.ServicePort, k view.Kind, ip netip.Addr) []ipvsPart {
	st := v.IPVS
	if st == nil {
		return nil
	}
	var out []ipvsPart
	proto, port := sp.ProtoLower(), portOf(k, sp)
	switch {
	case k != view.NodePort && st.AddrsPartial != "":
		p.Note(addrsUnchecked+"%s: whether the service addresses are bound there was not judged", st.AddrsPartial)
	case k != view.NodePort && !st.HasAddrs:
		p.Note("no ip addr in the inputs: service addresses are taken as bound to kube-ipvs0, as kube-proxy binds each one " +
			"it gives a virtual server (assumed; add ip addr from the node to see the bindings)")
	}
	// Without kube-ipvs0 at all, no address is bound: that one cause is
	// one finding (see reportUnbound), not a part of each destination's.
	if k != view.NodePort && st.HasAddrs && st.HasInterface && !p.Resolution().IsNodeAddr(ip) {
		if _, ok := st.IsBound(ip); !ok {
			out = append(out, ipvsPart{what: "not bound on kube-ipvs0", ev: st.Interface,
				effect: "packets to it are not delivered locally, so they never reach the IPVS virtual server"})
		}
	}
	if !st.HasSets {
		return out
	}
	var set string
	switch k {
	case view.ClusterIP:
		set = kpnames.SetClusterIP
	case view.ExternalIP:
		set = kpnames.SetExternalIP
		if sp.ExternalPolicyLocal {
			set = kpnames.SetExternalIPLocal
		}
	case view.LoadBalancerIP:
		set = kpnames.SetLoadBalancer
	case view.NodePort:
		set = kpnames.NodePortSet(proto, false)
	}
	keys := []string{kpnames.MemberKey(ip, proto, port)}
	switch {
	case k == view.NodePort && proto == "sctp":
		keys = nil
		for _, a := range p.Resolution().NodeAddrs {
			if model.FamilyOf(a) == v.Family {
				keys = append(keys, kpnames.MemberKey(a, proto, port))
			}
		}
	case k == view.NodePort:
		keys = []string{kpnames.PortKey(port)}
	}
	for _, key := range keys {
		if _, ok := st.Member(set, key); ok {
			continue
		}
		if setMayHide(p.Snap, st.Set(set)) {
			continue // a listing cut short: the member may be among those not listed (a coverage gap says so)
		}
		name := kpnames.SetName(set, v.Family == model.IPv6)
		part := ipvsPart{what: fmt.Sprintf("not in ipset %s (no member %s)", name, key), ev: st.SetEvidence(set)}
		switch {
		case k == view.NodePort:
			part.effect = "node-port traffic to it is not masqueraded, so replies from endpoints on other nodes do not return through this node"
		case k == view.ExternalIP && sp.ExternalPolicyLocal:
			part.effect = "traffic to it is not admitted as external-IP traffic"
		case ipvsRejects(st, ip, proto, port):
			part.effect = "KUBE-IPVS-FILTER rejects new connections to the address, which KUBE-IPVS-IPS lists"
		default:
			part.effect = "traffic to it from outside the cluster is not masqueraded"
		}
		out = append(out, part)
	}
	return out
}

// ipvsRejects reports whether KUBE-IPVS-FILTER rejects new connections to
// a destination: its address is in KUBE-IPVS-IPS and no set of admitted
// destinations lists it.
func ipvsRejects(st *view.IPVSState, ip netip.Addr, proto string, port int32) bool {
	if st.FilterReject == nil {
		return false
	}
	if _, ok := st.Member(kpnames.SetIPVSIPs, ip.String()); !ok {
		return false
	}
	key := kpnames.MemberKey(ip, proto, port)
	for _, s := range []string{kpnames.SetLoadBalancer, kpnames.SetClusterIP, kpnames.SetExternalIP, kpnames.SetExternalIPLocal} {
		if _, ok := st.Member(s, key); ok {
			return false
		}
	}
	return true
}

// reportIPVSMissing reports the parts ipvsMissing found for a destination
// whose virtual server exists.
func reportIPVSMissing(p *Pass, v *view.View, sp *model.ServicePort, k view.Kind, ip netip.Addr, ent *view.Entry) {
	if st := v.IPVS; st != nil && k != view.NodePort && st.HasAddrs && !st.HasInterface && !p.Resolution().IsNodeAddr(ip) {
		p.reportUnbound(v, sp, k, ip, ent)
	}
	for _, part := range ipvsMissing(p, v, sp, k, ip) {
		ev := []model.Evidence{ServiceEvidence(sp)}
		if len(ent.Evidence) > 0 {
			ev = append(ev, ent.Evidence[0])
		}
		if part.ev.File != "" {
			ev = append(ev, part.ev)
		}
		p.Report(Finding{
			Service: sp.String(), Protocol: string(sp.Protocol),
			Message:  fmt.Sprintf("%s has a virtual server but is %s: %s", destText(k, ip, sp), part.what, part.effect),
			Evidence: ev,
			Advice:   syncAdvice(v),
		})
	}
}

// ipvsAlso returns, for a destination without a virtual server, what else
// is missing ("; it is also not bound on kube-ipvs0"), or "".
func ipvsAlso(p *Pass, v *view.View, sp *model.ServicePort, k view.Kind, ip netip.Addr) (string, []model.Evidence) {
	parts := ipvsMissing(p, v, sp, k, ip)
	if len(parts) == 0 {
		return "", nil
	}
	var whats []string
	var ev []model.Evidence
	for _, part := range parts {
		whats = append(whats, part.what)
		if part.ev.File != "" {
			ev = append(ev, part.ev)
		}
	}
	return "; it is also " + strings.Join(whats, " and "), ev
}

// ipvsNodePortIPs returns the node addresses kube-proxy's IPVS mode
// creates node-port virtual servers on (pkg/proxy/ipvs syncProxyRules):
// every node address when nodePortAddresses is unset, else the local
// addresses in its CIDRs (or the node's primary address for "primary").
// ok is false when ip addr was not captured or a keyword is not modelled.
func ipvsNodePortIPs(s *model.Snapshot, fam model.Family) (ips []netip.Addr, ok bool) {
	if s.Addrs == nil {
		return nil, false
	}
	var npa []string
	if s.Config != nil {
		npa = s.Config.NodePortAddresses
	}
	if len(npa) == 0 {
		for _, a := range s.Addrs.NodeAddresses() {
			if model.FamilyOf(a) == fam {
				ips = append(ips, a.Unmap())
			}
		}
		return ips, true
	}
	seen := map[netip.Addr]bool{}
	add := func(a netip.Addr) {
		if a = a.Unmap(); model.FamilyOf(a) == fam && !a.IsLoopback() && !seen[a] {
			seen[a] = true
			ips = append(ips, a)
		}
	}
	for _, e := range npa {
		switch e {
		case "primary":
			for _, a := range s.Node.Addresses {
				if model.FamilyOf(a) == fam {
					add(a)
					break
				}
			}
			continue
		case "all":
			for _, a := range s.Addrs.NodeAddresses() {
				add(a)
			}
			continue
		case "localhost":
			continue // loopback addresses get no virtual server
		}
		pfx, err := netip.ParsePrefix(strings.TrimSpace(e))
		if err != nil {
			return nil, false
		}
		for _, a := range s.Addrs.LocalAddresses() {
			if pfx.Contains(a.Unmap()) {
				add(a)
			}
		}
	}
	return ips, true
}

// checkIPVSLocalSets verifies the sets by which IPVS mode keeps the client
// source of externalTrafficPolicy Local traffic: its node ports, external
// IPs and load balancer IPs are listed in the -LOCAL sets (which return
// before the masquerade rules), and those of Cluster-policy Services are
// not.
func checkIPVSLocalSets(p *Pass, v *view.View, sp *model.ServicePort) {
	st := v.IPVS
	if st == nil || !st.HasSets {
		return
	}
	local := sp.ExternalPolicyLocal
	proto := sp.ProtoLower()
	e := p.Expect(sp, v.Family)
	for _, d := range e.ExternalDests() {
		ent := forward(v, d.Kind, d.entryIP, proto, portOf(d.Kind, sp))
		if ent == nil {
			continue
		}
		var set string
		var keys []string
		wantIn := local
		switch d.Kind {
		case view.NodePort:
			set = kpnames.NodePortSet(proto, true)
			keys = []string{kpnames.PortKey(sp.NodePort)}
			if proto == "sctp" {
				keys = nil
				for _, a := range ent.NodeIPs {
					keys = append(keys, kpnames.MemberKey(a, proto, sp.NodePort))
				}
			}
		case view.LoadBalancerIP:
			set = kpnames.SetLoadBalancerLocal
			keys = []string{kpnames.MemberKey(d.entryIP, proto, sp.Port)}
		case view.ExternalIP:
			// The member of the right set is checked by ipvsMissing; here
			// only the set of the other policy.
			set, wantIn = kpnames.SetExternalIPLocal, false
			if local {
				set = kpnames.SetExternalIP
			}
			keys = []string{kpnames.MemberKey(d.entryIP, proto, sp.Port)}
		}
		dest := destText(d.Kind, d.entryIP, sp)
		name := kpnames.SetName(set, v.Family == model.IPv6)
		for _, key := range keys {
			mev, in := st.Member(set, key)
			if !in && setMayHide(p.Snap, st.Set(set)) {
				continue
			}
			ev := []model.Evidence{ServiceEvidence(sp)}
			if len(ent.Evidence) > 0 {
				ev = append(ev, ent.Evidence[0])
			}
			var msg string
			switch {
			case wantIn && !in:
				msg = fmt.Sprintf("%s is not in ipset %s although the Service's externalTrafficPolicy is Local: its traffic is masqueraded and the client source IP is lost", dest, name)
				if sev := st.SetEvidence(set); sev.File != "" {
					ev = append(ev, sev)
				}
			case !wantIn && in && d.Kind == view.ExternalIP && local:
				msg = fmt.Sprintf("%s is in ipset %s, which masquerades its traffic, although the Service's externalTrafficPolicy is Local", dest, name)
				ev = append(ev, mev)
			case !wantIn && in:
				msg = fmt.Sprintf("%s is in ipset %s (externalTrafficPolicy Local) but the Service's externalTrafficPolicy is Cluster: its traffic is not masqueraded, so replies from endpoints on other nodes bypass this node", dest, name)
				ev = append(ev, mev)
			default:
				continue
			}
			p.Report(Finding{
				Service: sp.String(), Protocol: string(sp.Protocol), Message: msg, Evidence: ev,
				Advice: "Restart kube-proxy on the node so that it rewrites its ipsets for the Service's current traffic policy.",
			})
		}
	}
}

// addrsUnchecked begins the note of the IPVS destinations whose binding
// on kube-ipvs0 an ip addr listing of part of the interfaces does not
// show; coverage makes it a gap.
const addrsUnchecked = "bindings on kube-ipvs0 not checked: "

// wholeAddrsNeed is how to get every interface's addresses when the ip
// addr listing given shows some only.
var wholeAddrsNeed = InputNeed{"the addresses of every interface of the node (ip addr without a device, family or filter)",
	"ip addr > ip-addr.txt (on the node)"}

// unboundGroup gathers the IPVS destinations with a virtual server on a
// node whose whole ip addr listing has no kube-ipvs0 interface: one cause,
// reported as one finding of the first check that met one, listing them.
type unboundGroup struct {
	check    string
	iface    model.Evidence
	objects  []string
	evidence []model.Evidence
	services map[string]bool
	protocol string
}

// reportUnbound adds a destination with a virtual server to the one
// finding of a node without kube-ipvs0 (see unboundFinding).
func (p *Pass) reportUnbound(v *view.View, sp *model.ServicePort, k view.Kind, ip netip.Addr, ent *view.Entry) {
	g := p.facts.unbound
	if g == nil {
		g = &unboundGroup{check: p.Check.ID, iface: v.IPVS.Interface, services: map[string]bool{}}
		p.facts.unbound = g
	}
	if g.check != p.Check.ID {
		p.Note("the node has no kube-ipvs0 interface: the destinations this check finds unbound are listed in one finding of %s", g.check)
	}
	obj := sp.String() + " " + destText(k, ip, sp)
	if slices.Contains(g.objects, obj) {
		return
	}
	g.objects = append(g.objects, obj)
	g.evidence = append(g.evidence, ServiceEvidence(sp))
	if len(ent.Evidence) > 0 {
		g.evidence = append(g.evidence, ent.Evidence[0])
	}
	g.services[sp.String()] = true
	// The one finding explains the port: service-unreachable, which runs
	// before it is reported, does not trace it again.
	if p.facts.services == nil {
		p.facts.fired, p.facts.services = map[string]bool{}, map[string]bool{}
	}
	p.facts.services[sp.String()] = true
	switch {
	case g.protocol == "":
		g.protocol = string(sp.Protocol)
	case g.protocol != string(sp.Protocol):
		g.protocol = "mixed"
	}
}

// unboundFinding returns the one finding of the destinations with a
// virtual server on a node without kube-ipvs0, or false when there is
// none.
func (f *facts) unboundFinding() (Finding, bool) {
	g := f.unbound
	if g == nil || len(g.objects) == 0 {
		return Finding{}, false
	}
	file := g.iface.File
	if file == "" {
		file = "ip addr"
	}
	out := Finding{
		Check: g.check,
		Message: fmt.Sprintf("the node has no %s interface (%s lists every interface, and not it): none of the addresses of the IPVS virtual "+
			"servers is bound, so packets to them are not delivered locally and never reach IPVS: %s of %s have a virtual server but no binding: %s",
			"kube-ipvs0", file, plural(len(g.objects), "destination"), plural(len(g.services), "service port"), listObjects(g.objects)),
		Evidence: append([]model.Evidence{g.iface}, g.evidence...),
		Objects:  g.objects,
		Advice: "kube-proxy's IPVS mode creates the dummy interface kube-ipvs0 and binds every service address to it at each sync: " +
			"check that kube-proxy runs and syncs on the node (its log), that nothing deletes the interface (a network manager, " +
			"a cleanup script), and restart kube-proxy so that it creates it again.",
	}
	if g.protocol != "mixed" {
		out.Protocol = g.protocol
	}
	return out, true
}
