package checks

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/proxier"
	"github.com/proxyscan/proxyscan/analyzer/view"
	"github.com/proxyscan/proxyscan/internal/intern"
)

// serviceNeeds are the inputs of the service checks.
var serviceNeeds = []Need{NeedServices, NeedDataplane}

// endpointNeeds are the inputs of the endpoint checks.
var endpointNeeds = []Need{NeedServices, NeedEndpoints, NeedDataplane}

// anchor returns the evidence of where entries of a kind live in a view.
func anchor(v *view.View, k view.Kind) model.Evidence {
	if e, ok := v.Anchors[k]; ok {
		return e
	}
	return model.Evidence{File: v.Source}
}

// where names where entries of a kind live, for messages.
func where(v *view.View, k view.Kind) string {
	if w, ok := v.Where[k]; ok {
		return w
	}
	return "the " + v.Mode + " data plane"
}

// forward returns the forward entry of a destination (any external kind
// for external IPs and load balancer IPs, whose rules may be classified
// either way when they carry no comment).
func forward(v *view.View, k view.Kind, ip netip.Addr, proto string, port int32) *view.Entry {
	kinds := []view.Kind{k}
	if k == view.ExternalIP || k == view.LoadBalancerIP {
		kinds = []view.Kind{view.ExternalIP, view.LoadBalancerIP}
	}
	for _, kind := range kinds {
		for _, e := range v.Lookup(kind, ip, proto, port) {
			if e.Action == view.Forward && e.Routed {
				return e
			}
		}
	}
	return nil
}

// entryOf returns the entry of an external destination (kind k) that
// programs what kube-proxy does with its traffic: the forward entry, or,
// when the port has usable endpoints but its external route rejects (in
// IPVS mode of 1.21-1.23, externalTrafficPolicy Local without a local
// endpoint: a virtual server without real servers), the reject entry
// kube-proxy writes in its place. A route that drops still has its
// forward entry (the KUBE-EXT or KUBE-XLB chain, the external chain of
// nftables mode, which send the node's own traffic on). Whether the
// verdict is right is no-endpoints-unrejected's to judge.
func entryOf(v *view.View, e *Expect, k view.Kind, ip netip.Addr, proto string, port int32) *view.Entry {
	if ent := forward(v, k, ip, proto, port); ent != nil || e.External.Verdict != proxier.Reject {
		return ent
	}
	if b := blocked(v, k, ip, proto, port); b != nil && b.Action == view.Reject {
		return b
	}
	return nil
}

// endpointsUnknown reports whether the exports do not tell the endpoints
// of sp: they hold no EndpointSlices or Endpoints at all, or none of its
// namespace while they hold other namespaces' (EndpointsUnknown). Its
// Expect then takes it to have none.
func endpointsUnknown(s *model.Snapshot, sp *model.ServicePort) bool {
	return sp.EndpointsUnknown || s.Objects.EndpointObjects() == 0
}

// endpointsNotHeld begins the note of the service ports whose endpoints
// the exports do not hold and that the data plane rejects or drops:
// whether it should forward them is not known. Coverage turns it into a
// gap.
const endpointsNotHeld = "not checked, as the exports hold no EndpointSlices of their Services (add the output of kubectl get endpointslices -A -o yaml): "

// checkProgrammed verifies, for a port whose endpoints the exports do not
// tell (endpointsUnknown), that its destination of kind k has an entry at
// all: kube-proxy programs every service port, forwarding it to its
// endpoints or rejecting it for want of them (dropping it for want of
// local ones), so that a destination without any entry is missing
// whatever the endpoints. A forward entry is judged as any (its IPVS
// addresses and sets); a reject or drop entry may be right or not, and
// its port is added to unjudged (see noteUnjudged).
func checkProgrammed(p *Pass, v *view.View, sp *model.ServicePort, k view.Kind, ip netip.Addr, port int32, unjudged *[]string) {
	proto := sp.ProtoLower()
	if ent := forward(v, k, ip, proto, port); ent != nil {
		if v.Mode == model.ModeIPVS && k != view.NodePort {
			reportIPVSMissing(p, v, sp, k, ip, ent)
		}
		return
	}
	if blocked(v, k, ip, proto, port) != nil {
		if !slices.Contains(*unjudged, sp.String()) {
			*unjudged = append(*unjudged, sp.String())
		}
		return
	}
	dest := destText(k, ip, sp)
	p.ReportMissing(v, sp.String()+" "+dest, Finding{
		Service: sp.String(), Protocol: string(sp.Protocol),
		Message: fmt.Sprintf("no entry for %s in %s (%s), neither forwarding nor rejecting it: kube-proxy programs every service port, "+
			"whatever its endpoints (which the exports do not hold)", dest, where(v, k), v.Family),
		Evidence: []model.Evidence{ServiceEvidence(sp), missingAnchor(p, v, k, ip, proto, port)},
		Advice:   syncAdvice(v),
	})
}

// noteUnjudged notes, once for a check, the service ports whose endpoints
// the exports do not hold and that the data plane rejects or drops.
func noteUnjudged(p *Pass, unjudged []string) {
	if len(unjudged) == 0 {
		return
	}
	sort.Strings(unjudged)
	p.Note("%swhether %s, rejected or dropped by the data plane, should rather be forwarded (they may have usable endpoints)",
		endpointsNotHeld, listObjects(unjudged))
}

// blocked returns the reject or drop entry of a destination.
func blocked(v *view.View, k view.Kind, ip netip.Addr, proto string, port int32) *view.Entry {
	kinds := []view.Kind{k}
	if k == view.ExternalIP || k == view.LoadBalancerIP {
		kinds = []view.Kind{view.ExternalIP, view.LoadBalancerIP}
	}
	for _, kind := range kinds {
		for _, e := range v.Lookup(kind, ip, proto, port) {
			if e.Action == view.Reject || e.Action == view.Drop {
				return e
			}
		}
	}
	return nil
}

// reportRejected reports a destination of sp of kind k that the data
// plane rejects or drops (b, its entry) as kube-proxy does a port without
// endpoints, while the port has usable ones. In IPVS mode it is a virtual
// server listed without real servers ([view.Entry.NoRealServers]) or with
// every one at weight 0, whatever the kind of destination: the virtual
// server is there, and what lacks is its endpoints. The finding then rests
// on the absence of lines of real servers, which a listing cut or filtered
// (ipvsadm -Ln | grep IP shows no real server) may only not show.
func reportRejected(p *Pass, v *view.View, sp *model.ServicePort, k view.Kind, ip netip.Addr, b *view.Entry, usable int) {
	f := Finding{
		Service: sp.String(), Protocol: string(sp.Protocol),
		Message: fmt.Sprintf("%s is %s as if the Service had no endpoints, but it has %d usable", destText(k, ip, sp), b.Action.Past(),
			usable),
		Evidence: append(append([]model.Evidence{}, b.Evidence...), ServiceEvidence(sp)),
		Advice:   syncAdvice(v),
	}
	if v.Mode != model.ModeIPVS {
		p.Report(f)
		return
	}
	vs := "its virtual server is"
	if len(b.Evidence) > 1 {
		vs = "its virtual servers are"
	}
	empty := !b.Routed // some virtual server of a node port's addresses has no real server
	for _, d := range b.Also {
		empty = empty || len(d.Backends) == 0
	}
	switch {
	case b.NoRealServers:
		f.Message += ": " + vs + " listed without real servers"
	case empty:
		f.Message += ": " + vs + " listed without real servers or with every one at weight 0"
	default:
		f.Message += ": " + vs + " listed with every real server at weight 0"
	}
	p.ReportAbsence(v, f)
}

// destText formats a destination for messages.
func destText(k view.Kind, ip netip.Addr, sp *model.ServicePort) string {
	switch k {
	case view.NodePort:
		return fmt.Sprintf("node port %d/%s", sp.NodePort, sp.ProtoLower())
	case view.ClusterIP:
		return "cluster IP " + model.JoinHostPort(ip, sp.Port) + "/" + sp.ProtoLower()
	case view.ExternalIP:
		return "external IP " + model.JoinHostPort(ip, sp.Port) + "/" + sp.ProtoLower()
	}
	return "load balancer IP " + model.JoinHostPort(ip, sp.Port) + "/" + sp.ProtoLower()
}

// portOf returns the port an entry of kind k uses for sp.
func portOf(k view.Kind, sp *model.ServicePort) int32 {
	if k == view.NodePort {
		return sp.NodePort
	}
	return sp.Port
}

// dispatchesAt returns the distinct dispatches reachable from the forward
// entries of service port ports[i] in view v, with the entry that leads to
// each, ports being what PortsOf returned for v: the view's entries of
// those ports are looked up once for every check that reads them.
func (p *Pass) dispatchesAt(v *view.View, ports []*model.ServicePort, i int) []dispatchUse {
	return dispatchesOf(p.facts.entriesOf(v, ports)[i], ports[i])
}

// entriesKey names the entries of a list of service ports in a view: the
// list by its first element's place, which PortsOf's lists do not share.
type entriesKey struct {
	v     *view.View
	first **model.ServicePort
	n     int
}

// entriesOf returns the entries of each of ports in v, in their order,
// found once for each list (PortsOf returns the same list to every check
// of a kind): a view finds entries by the port's name, and several checks
// reading tens of thousands of ports spent most of their time there.
func (f *facts) entriesOf(v *view.View, ports []*model.ServicePort) [][]*view.Entry {
	if len(ports) == 0 {
		return nil
	}
	k := entriesKey{v, &ports[0], len(ports)}
	if e, ok := f.entries[k]; ok {
		return e
	}
	e := make([][]*view.Entry, len(ports))
	for i, sp := range ports {
		e[i] = v.ServiceEntries(sp.String())
	}
	if f.entries == nil {
		f.entries = map[entriesKey][][]*view.Entry{}
	}
	f.entries[k] = e
	return e
}

// dispatchesOf returns the distinct dispatches reachable from the forward
// entries of service port sp, with the entry that leads to each.
func dispatchesOf(entries []*view.Entry, sp *model.ServicePort) []dispatchUse {
	var out []dispatchUse
	for _, e := range entries {
		if e.Action != view.Forward || e.Protocol != sp.ProtoLower() {
			continue
		}
	origins:
		for _, o := range model.Origins {
			d := e.Dispatch[o]
			if d == nil {
				continue
			}
			for _, u := range out {
				if u.d == d {
					continue origins
				}
			}
			out = append(out, dispatchUse{entry: e, d: d})
		}
		for _, d := range e.Also { // IPVS: the virtual servers of the other node addresses
			out = append(out, dispatchUse{entry: e, d: d})
		}
	}
	return out
}

type dispatchUse struct {
	entry *view.Entry
	d     *view.Dispatch
}

// servicePortByName indexes active service ports by name.
func servicePortByName(s *model.Snapshot) map[string]*model.ServicePort {
	active := s.ActivePorts()
	out := make(map[string]*model.ServicePort, len(active))
	for _, sp := range active {
		out[sp.String()] = sp
	}
	return out
}

// modeAdvice returns advice for rules kube-proxy should have written.
func syncAdvice(v *view.View) string {
	switch v.Mode {
	case model.ModeIPVS:
		return "Check that kube-proxy runs on this node and that its syncs succeed (kube-proxy logs, kubeproxy_sync_proxy_rules_last_timestamp_seconds); IPVS mode rewrites every virtual server at each sync, so a restart of the kube-proxy pod restores missing ones."
	case model.ModeNFTables:
		return "Check that kube-proxy runs on this node and that its syncs succeed (kube-proxy logs, kubeproxy_sync_proxy_rules_last_timestamp_seconds); restarting the kube-proxy pod forces a full resync of the kube-proxy table."
	}
	return "Check that kube-proxy runs on this node and that its syncs succeed (kube-proxy logs: iptables-restore errors; metric kubeproxy_sync_proxy_rules_last_timestamp_seconds); restarting the kube-proxy pod forces a full resync."
}

// epState describes why an endpoint is or is not usable.
func epState(ep *model.Endpoint) string {
	var parts []string
	switch {
	case ep.Ready:
		parts = append(parts, "ready")
	case ep.Serving && ep.Terminating:
		parts = append(parts, "serving but terminating")
	case ep.Terminating:
		parts = append(parts, "terminating")
	default:
		parts = append(parts, "not ready")
	}
	if ep.NodeName != "" {
		parts = append(parts, "on node "+ep.NodeName)
	}
	return strings.Join(parts, ", ")
}

// netipZero is the address of node port entries.
var netipZero netip.Addr

// ServiceEvidence returns the evidence of a service port's Service object.
func ServiceEvidence(sp *model.ServicePort) model.Evidence {
	return serviceEvidenceIn(sp, nil, nil)
}

// serviceEvidenceIn is [ServiceEvidence], its text built in *buf and
// copied into texts when texts is not nil (a fleet's prints make one per
// service port of every node).
func serviceEvidenceIn(sp *model.ServicePort, texts *intern.Arena, buf *[]byte) model.Evidence {
	if sp.Service != nil {
		if l, ok := sp.Service.PortLine(sp.Name.Port, sp.Port); ok {
			return model.Evidence{File: sp.Service.Pos.File, Line: l.Line, Text: l.Text}
		}
	}
	// "Service NS/NAME: port [PORTNAME ]PORT/PROTOCOL".
	n := sp.Name
	if texts == nil {
		port, proto := strconv.Itoa(int(sp.Port)), string(sp.Protocol)
		if n.Port != "" {
			return model.EvidenceAt(sp.Pos(), "Service "+n.Namespace+"/"+n.Name+": port "+n.Port+" "+port+"/"+proto)
		}
		return model.EvidenceAt(sp.Pos(), "Service "+n.Namespace+"/"+n.Name+": port "+port+"/"+proto)
	}
	b := append(append(append(append((*buf)[:0], "Service "...), n.Namespace...), '/'), n.Name...)
	b = append(b, ": port "...)
	if n.Port != "" {
		b = append(append(b, n.Port...), ' ')
	}
	b = append(append(strconv.AppendInt(b, int64(sp.Port), 10), '/'), sp.Protocol...)
	*buf = b
	return model.EvidenceAt(sp.Pos(), texts.Bytes(b))
}

// EndpointEvidence returns the evidence of an endpoint's EndpointSlice.
func EndpointEvidence(sp *model.ServicePort, ep *model.Endpoint) model.Evidence {
	return model.EvidenceAt(ep.Pos(), endpointText(sp, ep))
}

// AddressEvidence is the evidence of an endpoint at the line of its
// address in the EndpointSlice (see [model.Endpoint.AddressPos]), with the
// text of [EndpointEvidence].
func AddressEvidence(sp *model.ServicePort, ep *model.Endpoint) model.Evidence {
	return model.EvidenceAt(ep.AddressPos(), endpointText(sp, ep))
}

// endpointText describes an endpoint of sp with its state and node.
func endpointText(sp *model.ServicePort, ep *model.Endpoint) string {
	state := []string{}
	if ep.Ready {
		state = append(state, "ready")
	}
	if ep.Serving && !ep.Ready {
		state = append(state, "serving")
	}
	if ep.Terminating {
		state = append(state, "terminating")
	}
	if len(state) == 0 {
		state = append(state, "not ready")
	}
	where := ""
	if ep.NodeName != "" {
		where = " on node " + ep.NodeName
	}
	return fmt.Sprintf("EndpointSlice of %s: %s (%s)%s", sp.Name.Service(), ep.String(), strings.Join(state, ", "), where)
}

// Dest is an external destination of a service port.
type Dest struct {
	Kind    view.Kind
	IP      string
	entryIP netip.Addr
}
