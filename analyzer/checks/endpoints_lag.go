package checks

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/view"
)

// A lagFault is how a programmed endpoint set differs from the
// EndpointSlices of its Service in a way that rules lagging the slices
// explain.
type lagFault int

// The checks whose findings foldLag makes one.
const (
	idEndpointMissing = "endpoint-missing"
	idEndpointStale   = "endpoint-stale"
)

const (
	// lagMissing: a usable endpoint is not programmed.
	lagMissing lagFault = iota
	// lagGone: a programmed endpoint is in no EndpointSlice any more.
	lagGone
	// lagUnusable: a programmed endpoint is listed but not usable (not
	// ready, or terminating while others are ready).
	lagUnusable
	// lagRemote: a programmed endpoint runs on another node while the
	// traffic policy is Local.
	lagRemote
)

// staleFault classifies the backend b of d, which is no usable endpoint
// of sp (see staleMessage).
func staleFault(sp *model.ServicePort, d *view.Dispatch, b *view.Backend) lagFault {
	ep := findEndpoint(sp, b.Endpoint)
	switch {
	case ep == nil:
		return lagGone
	case d.Policy == view.PolicyLocal && !ep.Local:
		return lagRemote
	}
	return lagUnusable
}

// A lagItem is one endpoint of one service port that a check finds out of
// step with the EndpointSlices, with every dispatch it found that in.
type lagItem struct {
	sp       *model.ServicePort
	endpoint string
	fault    lagFault
	// state is what the slices say of the endpoint ("ready, on node
	// node-b"), or why it is not usable.
	state      string
	dispatches []string
	evidence   []model.Evidence
	// alone is the finding of the first dispatch, reported as it is when
	// the item is all the check finds of its Service.
	alone Finding
}

// object names the item in a finding that lists several, with its port
// when they are on several.
func (it *lagItem) object(port bool) string {
	where := "not programmed in "
	if it.fault != lagMissing {
		where = "programmed in "
	}
	of := ""
	if port {
		of = " of port " + portName(it.sp)
	}
	return fmt.Sprintf("%s%s (%s) %s%s", it.endpoint, of, it.state, where, joinNames(it.dispatches))
}

// endpointLag gathers, per Service, the endpoints one check finds out of
// step with the EndpointSlices (not programmed, or programmed but no
// longer usable): all such faults of one Service are one finding, and the
// two sides of one Service (see foldLag) one finding of endpoint-stale.
type endpointLag struct {
	order []string
	by    map[string][]*lagItem
}

// add records that dispatch d (its ID) of sp's view v shows endpoint out of
// step with the slices, alone being the finding of that dispatch alone.
// What rests on an absence from a dump that is partial is left to
// ReportAbsence, which notes it as not checked.
func (l *endpointLag) add(p *Pass, v *view.View, sp *model.ServicePort, dispatch, endpoint string, fault lagFault, state string, alone Finding) {
	if fault == lagMissing && p.withheld(v) && !p.tablesHeld(v, natOnly) {
		p.ReportAbsence(v, alone)
		return
	}
	svc := sp.Name.Service()
	if l.by == nil {
		l.by = map[string][]*lagItem{}
	}
	var it *lagItem
	for _, x := range l.by[svc] {
		if x.sp == sp && x.endpoint == endpoint && x.fault == fault {
			it = x
		}
	}
	if it == nil {
		if l.by[svc] == nil {
			l.order = append(l.order, svc)
		}
		it = &lagItem{sp: sp, endpoint: endpoint, fault: fault, state: state, alone: alone}
		l.by[svc] = append(l.by[svc], it)
	}
	if !contains(it.dispatches, dispatch) {
		it.dispatches = append(it.dispatches, dispatch)
	}
	for _, ev := range alone.Evidence {
		if !hasEvidence(it.evidence, ev) {
			it.evidence = append(it.evidence, ev)
		}
	}
}

// report reports one finding per Service: the finding of the one
// endpoint and dispatch as it is, or one listing every endpoint. It keeps
// what it reported for foldLag.
func (l *endpointLag) report(p *Pass) {
	for _, svc := range l.order {
		items := l.by[svc]
		f := lagReport(svc, items, p.Check.ID)
		p.Report(f)
		for _, it := range items {
			// Other checks (service-unreachable) leave alone the ports a
			// finding explains.
			p.facts.record([]Finding{{Check: p.Check.ID, Service: it.sp.String()}})
		}
		if p.facts.lag == nil {
			p.facts.lag = map[string]map[string]*lagReported{}
		}
		if p.facts.lag[svc] == nil {
			p.facts.lag[svc] = map[string]*lagReported{}
		}
		p.facts.lag[svc][p.Check.ID] = &lagReported{items: items, service: f.Service, message: f.Message}
	}
}

// lagReported is what a check reported of a Service's endpoints out of
// step with the slices: the items and how to find the finding.
type lagReported struct {
	items            []*lagItem
	service, message string
}

// lagFinding writes the one finding of a Service's endpoints out of step
// with its slices: those of one check (endpoint-missing, endpoint-stale),
// or both (the rules lag the slices). The message leads with the cause and
// names the endpoints by fault, by address when they are on several ports;
// Objects lists each endpoint of each port with the dispatches it is (or
// is not) programmed in, and Evidence the evidence of each.
func lagFinding(svc string, items []*lagItem, check string) Finding {
	var objects, ports []string
	var ev []model.Evidence
	f := Finding{Service: items[0].sp.String(), Protocol: string(items[0].sp.Protocol), Endpoint: items[0].endpoint}
	for _, it := range items {
		if l := portName(it.sp); !contains(ports, l) {
			ports = append(ports, l)
		}
	}
	// The endpoints of each fault, by address when they are on several
	// ports.
	var names [lagRemote + 1][]string
	for _, it := range items {
		objects = append(objects, it.object(len(ports) > 1))
		name := it.endpoint
		if ap, err := netip.ParseAddrPort(name); err == nil && len(ports) > 1 {
			name = ap.Addr().String()
		}
		if !contains(names[it.fault], name) {
			names[it.fault] = append(names[it.fault], name)
		}
		for _, e := range it.evidence {
			if !hasEvidence(ev, e) {
				ev = append(ev, e)
			}
		}
		if it.sp.String() != f.Service {
			f.Service = svc
		}
		if string(it.sp.Protocol) != f.Protocol {
			f.Protocol = ""
		}
		if it.endpoint != f.Endpoint {
			f.Endpoint = ""
		}
	}
	on := "on port " + ports[0]
	if len(ports) > 1 {
		on = "on ports " + joinNames(ports)
	}
	src := endpointsSource(items[0].sp)
	faults := []struct {
		fault     lagFault
		one, many string
	}{
		{lagMissing, "usable endpoint not programmed", "usable endpoints not programmed"},
		{lagGone, "endpoint programmed but gone from " + src, "endpoints programmed but gone from " + src},
		{lagUnusable, "endpoint programmed but not ready in " + src + ", or terminating while others are ready",
			"endpoints programmed but not ready in " + src + ", or terminating while others are ready"},
		{lagRemote, "endpoint programmed but on another node while the traffic policy is Local",
			"endpoints programmed but on other nodes while the traffic policy is Local"},
	}
	var parts []string
	for _, x := range faults {
		n := len(names[x.fault])
		switch {
		case n == 1:
			parts = append(parts, fmt.Sprintf("1 %s (%s)", x.one, names[x.fault][0]))
		case n > 1:
			parts = append(parts, fmt.Sprintf("%d %s (%s)", n, x.many, listObjects(names[x.fault])))
		}
	}
	missing := len(names[lagMissing])
	switch {
	case missing > 0 && len(parts) > 1:
		subject := "EndpointSlices"
		if len(names[lagRemote]) > 0 {
			subject = "EndpointSlices and traffic policy"
		}
		f.Message = fmt.Sprintf("the rules of %s lag its %s: %s, %s", svc, subject, strings.Join(parts, ", "), on)
		f.Checks = []string{idEndpointMissing, idEndpointStale}
		ns, name, _ := strings.Cut(svc, "/")
		f.Advice = fmt.Sprintf("kube-proxy on this node missed updates of the Service's EndpointSlices: compare them with the rules "+
			"(kubectl -n %s get endpointslices -l kubernetes.io/service-name=%s -o wide), read its log for watch errors (Failed to "+
			"list *v1.EndpointSlice, connection refused) and failed syncs, and its metrics kubeproxy_sync_proxy_rules_last_timestamp_seconds "+
			"and kubeproxy_sync_proxy_rules_endpoint_changes_pending; then restart kube-proxy on the node: its first sync writes "+
			"every endpoint again.", ns, name)
	case missing > 0:
		f.Message = fmt.Sprintf("%s of %s %s (%s), %s", plural(missing, "usable endpoint"), svc,
			isAre(missing, "not programmed"), listObjects(names[lagMissing]), on)
		f.Advice = items[0].alone.Advice
		if missing > 1 {
			f.Advice = strings.Replace(f.Advice, "this endpoint", "these endpoints", 1)
		}
	default:
		f.Message = fmt.Sprintf("the rules of %s forward to endpoints that are not usable: %s, %s", svc, strings.Join(parts, ", "), on)
		f.Advice = items[0].alone.Advice
	}
	f.Check, f.Objects, f.Evidence = check, objects, ev
	return f
}

// lagService returns the Service of a finding of endpoint-missing or
// endpoint-stale that reports its endpoints out of step with the
// Service's EndpointSlices, "" for another finding.
func (f *facts) lagService(x *Finding) string {
	svc, _, _ := strings.Cut(x.Service, ":")
	if r := f.lag[svc][x.Check]; r != nil && r.service == x.Service && r.message == x.Message {
		return svc
	}
	return ""
}

// lagKey is the Service whose rules lag that x is about ("" for none).
func lagKey(f *facts, x *Finding) string { return f.lagService(x) }

// sameLag reports whether findings of endpoint-stale and endpoint-missing
// are about the endpoints of one Service out of step with its
// EndpointSlices: its rules lag them.
func sameLag(f *facts, c, d *Finding) bool {
	svc := f.lagService(c)
	return svc != "" && svc == f.lagService(d)
}

// foldLag makes the finding of endpoint-stale about a Service, and that of
// endpoint-missing, one finding of endpoint-stale: the Service's rules lag
// its EndpointSlices.
func foldLag(f *facts, c *Finding, _ []Finding) {
	svc := f.lagService(c)
	miss, stale := f.lag[svc][idEndpointMissing], f.lag[svc][idEndpointStale]
	one := lagFinding(svc, append(append([]*lagItem{}, miss.items...), stale.items...), idEndpointStale)
	one.Severity, one.Node = c.Severity, c.Node
	*c = one
}

// noteLag tells, in the status of endpoint-missing, which of its findings
// are in endpoint-stale's finding of a Service whose rules lag its slices.
func noteLag(leads []Finding) string {
	var merged []string
	for _, c := range leads {
		svc, _, _ := strings.Cut(c.Service, ":")
		merged = append(merged, svc)
	}
	sort.Strings(merged)
	each := "the endpoint-stale finding of the Service, whose rules lag its EndpointSlices"
	if len(merged) > 1 {
		each = "the endpoint-stale finding of each Service, whose rules lag its EndpointSlices"
	}
	return fmt.Sprintf("%s: reported in %s", listObjects(merged), each)
}

// portName names a service port among its Service's ports: "http", or
// "80/TCP" for an unnamed one.
func portName(sp *model.ServicePort) string {
	if sp.Name.Port != "" {
		return sp.Name.Port
	}
	return fmt.Sprintf("%d/%s", sp.Port, sp.Protocol)
}

func isAre(n int, what string) string {
	if n == 1 {
		return "is " + what
	}
	return "are " + what
}

// staleState says, for a finding listing several endpoints, why the
// backend b of d is no usable endpoint of sp (see staleMessage).
func staleState(sp *model.ServicePort, d *view.Dispatch, b *view.Backend) string {
	ep := findEndpoint(sp, b.Endpoint)
	switch staleFault(sp, d, b) {
	case lagGone:
		if sp.FromLegacyEndpoints() {
			return "not in the Endpoints object"
		}
		return "in no EndpointSlice"
	case lagRemote:
		return fmt.Sprintf("on node %q, the traffic policy being Local", ep.NodeName)
	}
	if ep.Ready || ep.Serving && ep.Terminating {
		return epState(ep) + ", other endpoints being ready"
	}
	return epState(ep)
}

// lagPart is one endpoint taken out of the finding of a Service's
// endpoints out of step with its slices: its own finding, and the cause
// finding (its index) that explains it.
type lagPart struct {
	d     Finding
	cause int
}

// splitExplained takes out of d, a finding that lists several endpoints
// of a Service out of step with its EndpointSlices, those that explainer
// (the index of the cause finding that explains a finding, -1 for none)
// finds a cause for, each as the finding it would be alone. d is rewritten
// for the endpoints left (message, objects, evidence), and what facts
// record of it with it; gone reports that none is left. took is nil when
// d is no such finding or no cause explains any of its endpoints alone.
func (f *facts) splitExplained(d *Finding, explainer func(*Finding) int) (took []lagPart, gone bool) {
	svc := f.lagService(d)
	if svc == "" {
		return nil, false
	}
	r := f.lag[svc][d.Check]
	if len(r.items) < 2 {
		return nil, false
	}
	var rest []*lagItem
	for _, it := range r.items {
		one := lagReport(svc, []*lagItem{it}, d.Check)
		one.Check, one.Node = d.Check, d.Node
		if one.Severity == 0 {
			one.Severity = d.Severity
		}
		if i := explainer(&one); i >= 0 {
			took = append(took, lagPart{d: one, cause: i})
			continue
		}
		rest = append(rest, it)
	}
	if len(took) == 0 {
		return nil, false
	}
	if len(rest) == 0 {
		delete(f.lag[svc], d.Check)
		return took, true
	}
	left := lagReport(svc, rest, d.Check)
	left.Check, left.Node, left.Severity = d.Check, d.Node, d.Severity
	*d = left
	f.lag[svc][d.Check] = &lagReported{items: rest, service: left.Service, message: left.Message}
	return took, false
}

// lagReport is the finding of a Service's endpoints out of step with its
// slices that check reports: the finding of the one endpoint and dispatch
// as it is, or one listing every endpoint.
func lagReport(svc string, items []*lagItem, check string) Finding {
	if len(items) > 1 || len(items[0].dispatches) > 1 {
		return lagFinding(svc, items, check)
	}
	return items[0].alone
}
