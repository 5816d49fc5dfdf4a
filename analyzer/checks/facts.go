package checks

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/proxier"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/analyzer/view"
)

// facts are computed once per snapshot and shared by every check's pass.
type facts struct {
	snap *model.Snapshot
	// res is what the node's kube-proxy is and does: mode, dumps,
	// families, addresses, version and endpoint selection.
	res *resolve.Resolution
	// views are the views of the node's mode, one per family present.
	views []*view.View
	// attr names the data planes' hashed chains while the views are
	// built; nil afterwards.
	attr *view.Attribution
	exp  map[expKey]*Expect
	// listing, while the sweep's packets are listed in the background,
	// is closed once they are; listed then holds what the listing
	// expected of the service ports, which expect adds to exp.
	listing chan struct{}
	listed  map[expKey]*Expect
	// tracer holds the traces of packets through the node's data plane
	// (built on first use).
	tracer *traceFacts
	// partial holds the dumps of the node's mode that are partial, by
	// family (see ReportAbsence).
	partial map[model.Family]*partialInput
	// nftPartial holds, in nftables mode, the families whose kube-proxy
	// table the nft listing read may not hold whole (see ReportAbsence).
	nftPartial map[model.Family]*partialInput
	// fired holds the IDs of the checks of the run that reported
	// findings so far, services the service ports they named.
	fired, services map[string]bool
	// bareGroup gathers what is missing from data planes without any
	// Service entry (see ReportMissing).
	bareGroup *bareGroup
	// unbound gathers the IPVS destinations of a node without kube-ipvs0
	// (see reportUnbound).
	unbound *unboundGroup
	// hookBroken holds, per family, the origins whose packets no hook
	// sends to kube-proxy's service rules (hook-jump-missing's findings).
	hookBroken map[model.Family][]model.Origin
	// portsOf holds, per view and whether the check reads endpoints, the
	// service ports the checks of the view read (see PortsOf).
	portsOf map[portsKey]*viewPorts
	// lag holds, per Service and check, the endpoints out of step with
	// the Service's EndpointSlices that endpoint-missing and
	// endpoint-stale reported (see foldLag).
	lag map[string]map[string]*lagReported
	// sync is the finding of sync-failures that shows the node's rule
	// syncs failing, nil when none does (see foldSyncFailure).
	sync *syncLead
	// dangling holds, by the position of the first of their rules, the
	// chains that rules name and their table does not have, that
	// ruleset-invalid reported (see foldDangling).
	dangling map[evidenceKey]*dangling
	// entries holds the entries of the lists of service ports of PortsOf
	// in each view (see entriesOf).
	entries map[entriesKey][][]*view.Entry
	// readers counts the readers of the whole of the node's iptables
	// tables still at work, the views being built and the sweep, when the
	// sweep runs in the background (0 otherwise): the last one to finish
	// drops the tables' typed reading (see doneReading).
	readers atomic.Int32
}

// expKey names what is expected of a service port in one family. The
// family is a number, not its name: the checks look their expectations
// up tens of thousands of times, and comparing names was most of it.
type expKey struct {
	sp  *model.ServicePort
	fam uint8
}

// expKeyOf returns the key of sp in family fam, and false for a family
// other than IPv4 and IPv6, whose expectations are not kept.
func expKeyOf(sp *model.ServicePort, fam model.Family) (expKey, bool) {
	switch fam {
	case model.IPv4:
		return expKey{sp, 4}, true
	case model.IPv6:
		return expKey{sp, 6}, true
	}
	return expKey{}, false
}

func newFacts(s *model.Snapshot, checks []*Check) *facts {
	f := &facts{snap: s, res: resolve.Resolve(s, resolve.Options{}), attr: view.NewAttribution(s.Ports), exp: map[expKey]*Expect{}}
	for _, c := range checks {
		if c.Traces && c.Run != nil && f.missingInputs(c.Needs) == "" {
			(&Pass{Snap: s, Check: c, facts: f}).startTraces()
			break
		}
	}
	f.views = f.buildViews()
	f.attr = nil // read by the views' building only
	if f.readers.Load() > 0 {
		f.doneReading()
	}
	f.partial = partialDumps(f)
	f.nftPartial = partialRuleset(f)
	return f
}

// doneReading is called by each of f.readers once it is done with the
// node's iptables tables. The last one drops the typed reading of the
// tables of the mode's dumps (iptables mode): the views are built and the
// sweep traced every service port, and the traces made after them read
// the few chains they meet apart (trace's single traces do when the
// table's reading was not made). On a 10,000-Service node the nat
// table's reading is about 14 MB of the checks' live heap.
func (f *facts) doneReading() {
	if f.readers.Add(-1) != 0 || f.res.Mode != model.ModeIPTables {
		return
	}
	for _, fam := range []model.Family{model.IPv4, model.IPv6} {
		if d := f.res.IPTables(fam); d != nil {
			for _, t := range d.Tables {
				t.DropMeanings()
			}
		}
	}
}

func (f *facts) buildViews() []*view.View {
	var out []*view.View
	switch f.res.Mode {
	case model.ModeIPTables:
		for _, fam := range []model.Family{model.IPv4, model.IPv6} {
			if d := f.res.IPTables(fam); d != nil {
				v := view.FromIPTables(d, f.attr)
				if !f.res.Has(resolve.CategorizeEndpoints) {
					// KUBE-SVC holds the local endpoints only where
					// kube-proxy honours internalTrafficPolicy Local.
					itpLocal := map[string]bool{}
					for _, sp := range f.snap.ActivePorts() {
						if sp.InternalPolicyLocal {
							itpLocal[sp.String()] = f.expect(sp, fam).Internal.Policy == proxier.PolicyLocal
						}
					}
					view.MarkLegacyInternalLocal(v, func(s string) bool { return itpLocal[s] })
				}
				out = append(out, v)
			}
		}
	case model.ModeIPVS:
		out = ipvsViews(f.res)
	case model.ModeNFTables:
		out = nftViews(f.res, f.attr)
	}
	return out
}

func (f *facts) missing(needs []Need) string {
	for _, n := range needs {
		ok := true
		switch n {
		case NeedServices:
			ok = len(f.snap.Objects.Services) > 0
		case NeedEndpoints:
			ok = f.snap.Objects.EndpointObjects() > 0
		case NeedDataplane:
			ok = len(f.views) > 0
			if !ok {
				return fmt.Sprintf("no %s data plane in the inputs (mode %s)", f.res.Mode, f.res.ModeSource)
			}
		case NeedIPTables:
			ok = len(f.snap.IPTables) > 0
		case NeedConfig:
			ok = f.snap.Config != nil
		case NeedServiceCIDRs:
			if len(f.snap.Objects.ServiceCIDRs) == 0 && len(apiserverContainers(f.snap.Objects)) == 0 {
				return noServiceCIDRs(f.snap)
			}
		}
		if !ok {
			return needHints[n]
		}
	}
	return ""
}

// otherMode returns why a check of other proxy modes ([Check.Modes]) does
// not apply to the node: its mode is established (given, configured or
// inferred, not assumed) and another one, and its configuration, if any,
// names another mode too. It returns "" when the check applies.
func (f *facts) otherMode(c *Check) string {
	if len(c.Modes) == 0 || f.res.ModeOrigin == resolve.Assumed || slices.Contains(c.Modes, f.res.Mode) {
		return ""
	}
	if cfg := f.snap.Config; cfg != nil && slices.Contains(c.Modes, cfg.EffectiveMode()) {
		return ""
	}
	return fmt.Sprintf("%s mode only; the node runs %s mode (%s)", strings.Join(c.Modes, " or "), f.res.Mode, f.res.ModeSource)
}

// Mode returns the node's proxy mode and how it was determined.
func (p *Pass) Mode() (mode, source string) { return p.facts.res.Mode, p.facts.res.ModeSource }

// Resolution returns what the node's kube-proxy is and does.
func (p *Pass) Resolution() *resolve.Resolution { return p.facts.res }

// Views returns the views of the node's data plane, one per family. A
// family whose service ports have no view (no dump of it) is noted.
func (p *Pass) Views() []*view.View {
	for _, fam := range []model.Family{model.IPv4, model.IPv6} {
		covered := false
		for _, v := range p.facts.views {
			covered = covered || v.Family == fam
		}
		if covered || len(p.facts.views) == 0 {
			continue
		}
		n := 0
		for _, sp := range p.Snap.ActivePorts() {
			if _, ok := sp.ClusterIP(fam); ok {
				n++
			}
		}
		if n > 0 {
			p.Note("no %s data plane in the inputs: %d %s service ports not checked", fam, n, fam)
		}
	}
	return p.facts.views
}

// Expect returns what kube-proxy programs for a service port in a family.
func (p *Pass) Expect(sp *model.ServicePort, fam model.Family) *Expect {
	return p.facts.expect(sp, fam)
}

func (f *facts) expect(sp *model.ServicePort, fam model.Family) *Expect {
	if f.listing != nil {
		<-f.listing
		for k, e := range f.listed {
			if f.exp[k] == nil {
				f.exp[k] = e
			}
		}
		f.listing, f.listed = nil, nil
	}
	k, ok := expKeyOf(sp, fam)
	if !ok {
		return newExpect(f.res, sp, fam)
	}
	if e := f.exp[k]; e != nil {
		return e
	}
	e := newExpect(f.res, sp, fam)
	f.exp[k] = e
	return e
}

// endpointsCut begins the note of the service ports a check that reads
// endpoints leaves out because an export cut short may hold more of their
// endpoint objects after the cut (model.ExportCut): coverage turns it
// into a gap.
const endpointsCut = "not checked, as their EndpointSlices may lie after the cut of an export cut short"

// endpointsUnexported begins the note of the service ports a check that
// reads endpoints leaves out because the export of the endpoints was of
// other namespaces: coverage turns it into a gap.
const endpointsUnexported = "not checked, as the exports hold the EndpointSlices of other namespaces only (not those of default/kubernetes, which every cluster has): "

// PortsOf returns the active service ports that have an address of the
// view's family, noting (once) when node-local information is missing.
// The slice is shared by the checks of the run (when every active port
// qualifies it is [model.Snapshot.ActivePorts]'s): it must not be changed.
// A check that reads endpoints does not get the ports whose endpoints the
// exports do not tell (ServicePort.EndpointsUnknown), and notes them.
func (p *Pass) PortsOf(v *view.View) []*model.ServicePort {
	key := portsKey{v, slices.Contains(p.Check.Needs, NeedEndpoints)}
	vp := p.facts.portsOf[key]
	if vp == nil {
		vp = listPorts(p.Snap, v, key.endpoints)
		if p.facts.portsOf == nil {
			p.facts.portsOf = map[portsKey]*viewPorts{}
		}
		p.facts.portsOf[key] = vp
	}
	if len(vp.local) > 0 {
		if n := p.Snap.Node; n.Unmatched {
			p.Note(nodeUnknown+": %s names no node of the exports, so which endpoints are local is not known: Local traffic policy of %s not checked", n.Name, listObjects(vp.local))
		} else {
			p.Note(nodeUnknown+": Local traffic policy of %s not checked", listObjects(vp.local))
		}
	}
	if len(vp.unknown) > 0 {
		p.Note("%s%s", endpointsUnexported, listObjects(vp.unknown))
	}
	for _, c := range vp.cut {
		p.Note("%s (%s): %s", endpointsCut, c.file, listObjects(c.ports))
	}
	return vp.ports
}

// portsKey names what PortsOf lists: the ports of a view, for checks that
// read endpoints or not.
type portsKey struct {
	v         *view.View
	endpoints bool
}

// viewPorts is what PortsOf finds of a view, once for every check that
// reads it: the service ports to check, those left out for want of the
// node's name, and those whose endpoints the exports do not tell.
type viewPorts struct {
	ports          []*model.ServicePort
	local, unknown []string
	// cut are those whose endpoint objects may lie after the cut of an
	// export cut short, by export.
	cut []cutPorts
}

// cutPorts are the service ports whose endpoint objects may lie after the
// cut of the export file.
type cutPorts struct {
	file  string
	ports []string
}

// listPorts lists the active service ports of s with an address of v's
// family, but those a check cannot judge (see PortsOf).
func listPorts(s *model.Snapshot, v *view.View, endpoints bool) *viewPorts {
	active := s.ActivePorts()
	cut := func(sp *model.ServicePort) *model.ExportCut {
		if !endpoints || len(s.ExportCuts) == 0 {
			return nil
		}
		return s.EndpointsCut(sp.Name.Namespace, sp.Name.Name)
	}
	keep := func(sp *model.ServicePort) bool {
		_, ok := sp.ClusterIP(v.Family)
		return ok && (s.Node.Known() || !sp.InternalPolicyLocal && !sp.ExternalPolicyLocal) &&
			!(endpoints && sp.EndpointsUnknown) && cut(sp) == nil
	}
	n := 0
	for _, sp := range active {
		if keep(sp) {
			n++
		}
	}
	if n == len(active) {
		return &viewPorts{ports: active}
	}
	vp := &viewPorts{ports: make([]*model.ServicePort, 0, n)}
	for _, sp := range active {
		switch _, ok := sp.ClusterIP(v.Family); {
		case !ok:
		case endpoints && sp.EndpointsUnknown:
			vp.unknown = append(vp.unknown, sp.Name.String())
		case cut(sp) != nil:
			c := cut(sp)
			i := slices.IndexFunc(vp.cut, func(x cutPorts) bool { return x.file == c.File })
			if i < 0 {
				i = len(vp.cut)
				vp.cut = append(vp.cut, cutPorts{file: c.File})
			}
			vp.cut[i].ports = append(vp.cut[i].ports, sp.Name.String())
		case !keep(sp):
			vp.local = append(vp.local, sp.Name.String())
		default:
			vp.ports = append(vp.ports, sp)
		}
	}
	return vp
}

// missingInputs is [facts.missing] before the views are built: the data
// plane is taken as present when the snapshot holds any dump of one.
func (f *facts) missingInputs(needs []Need) string {
	rest := make([]Need, 0, len(needs))
	for _, n := range needs {
		if n == NeedDataplane {
			if len(f.snap.IPTables) == 0 && len(f.snap.IPVS) == 0 && len(f.snap.NFT) == 0 {
				return "no data plane"
			}
			continue
		}
		rest = append(rest, n)
	}
	return f.missing(rest)
}
