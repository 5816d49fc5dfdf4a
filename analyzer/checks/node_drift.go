package checks

import (
	"fmt"
	"slices"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/view"
)

var nodeDrift = &Check{
	ID:       nodeDriftID,
	Severity: Warning,
	Title:    "nodes program a service, endpoint or setting differently",
	What: "With the bundles of several nodes, the data planes are compared with each other: every node should program the same " +
		"entries (cluster IPs, external and load balancer IPs, node ports) for each Service port, and the same endpoints " +
		"behind the Cluster traffic policy; the kube-proxy version, the proxy mode and the configuration fields should be " +
		"the same. The finding names the node that is out of line and what it lacks or has in excess; nodes " +
		"that differ alike (the same entries or endpoints missing or in excess, the same odd value of a setting) are named " +
		"together in one finding. Each node's own exports decide which side is out of line when they hold the Service: " +
		"the nodes that lack an entry its Service defines or an endpoint its EndpointSlices say to use, and those that " +
		"program one they do not, however many they are (most nodes of a fleet may lag behind the EndpointSlices one " +
		"healthy node follows), and the finding says the exports decide; when no node's exports do, the finding names " +
		"the fewer nodes and states the split without taking a side. " +
		"Differences kube-proxy makes on purpose (Local traffic policies, topology hints) are not compared. " +
		"Nodes of different clusters (their exports' Service default/kubernetes has another uid) are compared only with the " +
		"nodes of their own cluster; with several clusters in the inputs, a node whose exports do not say its cluster is " +
		"compared with none. " +
		"What a node lacks in a family its input holds only in part (a dump cut short or filtered, some tables only) or " +
		"not at all while other nodes' inputs hold it is not compared: a note names the node and the family, and the " +
		"node's coverage lists it as not checked; what such a node does show and differs is still reported. " +
		"A difference the node's own findings already report (service-missing, nodeport-missing or external-missing for " +
		"an entry, endpoint-missing or endpoint-stale for an endpoint of the same Service port) is shown in the drift " +
		"matrix with the check that reports it, and is not reported a second time.",
	Why: "A Service that works from some nodes and not from others is the hardest kind of outage to see: the node whose " +
		"kube-proxy stopped syncing keeps serving an old picture of the cluster (a missing Service, endpoints that are gone), " +
		"and a node left on another version, mode or setting after a partial rollout behaves differently from its peers.",
	Fix: "Look at the kube-proxy of the node named (its logs, `kubeproxy_sync_proxy_rules_last_timestamp_seconds`, whether its pod " +
		"is running) and restart it to force a full resync (`kubectl -n kube-system delete pod -l k8s-app=kube-proxy " +
		"--field-selector spec.nodeName=NODE`). For a version, mode or configuration difference, finish the rollout: one " +
		"ConfigMap and one DaemonSet image for every node, then `kubectl -n kube-system rollout restart daemonset kube-proxy`.",
	RunFleet: runNodeDrift,
}

// Drift is node-drift's comparison of the nodes: per service port, what each
// node programs compared with the others, and the fields (version, mode,
// configuration) whose values differ.
type Drift struct {
	// Nodes names the columns.
	Nodes []string `json:"nodes"`
	// Ports has one row per service port that some node programs
	// differently from the others, sorted by name; Alike counts the service
	// ports every node programs alike (or that no data plane shows), which
	// are not listed: a cluster of a thousand nodes and ten thousand
	// Services would otherwise list ten million cells that agree.
	Ports []DriftPort `json:"ports"`
	Alike int         `json:"alike"`
	// Fields lists the settings that differ between nodes.
	Fields []DriftField `json:"fields,omitempty"`
	// Clusters, when the nodes are of several clusters (told apart by the
	// uid of their Service default/kubernetes), lists them: each node is
	// compared only with the nodes of its cluster, and a row of one
	// cluster has the state unknown for the nodes of the others.
	Clusters []DriftCluster `json:"clusters,omitempty"`
}

// A DriftCluster is one cluster of a fleet whose nodes are of several.
type DriftCluster struct {
	// ID is the uid of the cluster's Service default/kubernetes.
	ID string `json:"id"`
	// Nodes are the nodes of the cluster, in the order of Drift.Nodes.
	Nodes []string `json:"nodes"`
}

// A DriftPort is one service port's row of the matrix.
type DriftPort struct {
	Service  string `json:"service"`
	Protocol string `json:"protocol,omitempty"`
	// Cluster is the cluster whose nodes the row compares, when there
	// are several (see Drift.Clusters).
	Cluster string `json:"cluster,omitempty"`
	// Cells has one cell per node, in the order of Drift.Nodes.
	Cells []DriftCell `json:"cells"`
}

// Drifted reports whether a node of the row is not in line with the others.
func (p DriftPort) Drifted() bool {
	for _, c := range p.Cells {
		if c.State != CellOK && c.State != CellNone && c.State != CellUnknown {
			return true
		}
	}
	return false
}

// Cell states of the drift matrix.
const (
	CellOK      = "ok"      // programmed like on the other nodes
	CellNone    = "none"    // not programmed, like on most nodes
	CellMissing = "missing" // not programmed while the other nodes program it
	CellDiffers = "differs" // programmed, but with entries or endpoints missing or in excess
	CellExtra   = "extra"   // programmed only here
	CellUnknown = "unknown" // no data plane of the node's mode in the inputs
)

// A DriftCell is what one node programs for one service port.
type DriftCell struct {
	State string `json:"state"`
	// Entries and Backends count what the node programs (entries, and
	// endpoints behind the Cluster policy).
	Entries  int `json:"entries,omitempty"`
	Backends int `json:"backends,omitempty"`
	// Missing lists what the other nodes program and this one does not;
	// Extra what only this one programs.
	Missing []string `json:"missing,omitempty"`
	Extra   []string `json:"extra,omitempty"`
	// ExplainedBy lists the checks whose own findings on the node (the
	// rules of a Service that lag its EndpointSlices, a Service not
	// programmed) already report what the node lacks or has in excess
	// here: node-drift reports no finding of its own for those.
	ExplainedBy []string `json:"explainedBy,omitempty"`
}

// A DriftField is a setting whose value differs between nodes.
type DriftField struct {
	// Field is "kube-proxy version", "mode", or a configuration path.
	Field string `json:"field"`
	// Values has one value per node, in the order of Drift.Nodes ("" when
	// the node's inputs do not say, or the node is of another cluster).
	Values []string `json:"values"`
	// Cluster is the cluster whose nodes the row compares, when there
	// are several (see Drift.Clusters).
	Cluster string `json:"cluster,omitempty"`
}

// driftRow gathers what every node programs for one service port.
type driftRow struct {
	service, protocol string
	// per node, the elements it programs, sorted by key, their evidence
	// without lines (see reportRow); viewed marks the nodes with a view.
	nodes  [][]printElem
	viewed []bool
	// noBackends is set when endpoints are not comparable (topology).
	noBackends bool
	// gaps holds, by node, the families whose data plane the node's
	// inputs may not hold whole, and what was left out of each.
	gaps *driftGaps
}

// driftGaps holds, by node, the families of which the node's inputs may
// not hold all kube-proxy programs (lacks: its dump or listing of the
// family is partial, or holds none of a family other nodes' inputs hold),
// and how many elements of each it lacks were for that not compared
// (left): what may only be outside its inputs is not a difference.
type driftGaps struct {
	lacks []map[model.Family]string
	left  []map[model.Family]int
}

// newDriftGaps reads the families of which the nodes' inputs may not hold
// all kube-proxy programs; nil when the inputs of every node hold whole
// data planes of the same families.
func newDriftGaps(nodes []*FleetNode) *driftGaps {
	var fams []model.Family
	for _, n := range nodes {
		for _, v := range n.print.views {
			if !slices.Contains(fams, v.family) {
				fams = append(fams, v.family)
			}
		}
	}
	g := &driftGaps{lacks: make([]map[model.Family]string, len(nodes)), left: make([]map[model.Family]int, len(nodes))}
	found := false
	for i, n := range nodes {
		if len(n.print.views) == 0 {
			continue
		}
		set := func(fam model.Family, why string) {
			if g.lacks[i] == nil {
				g.lacks[i], g.left[i] = map[model.Family]string{}, map[model.Family]int{}
			}
			g.lacks[i][fam] = why
			found = true
		}
		for fam, why := range n.print.partial {
			set(fam, why)
		}
		for _, fam := range fams {
			if g.lacks[i][fam] == "" && !slices.ContainsFunc(n.print.views, func(v viewPrint) bool { return v.family == fam }) {
				set(fam, "its inputs hold no "+string(fam)+" data plane, which other nodes' inputs hold")
			}
		}
	}
	if !found {
		return nil
	}
	return g
}

// held returns the nodes of out whose inputs hold the family of e whole,
// and counts e as left out for the others.
func (g *driftGaps) held(e *printElem, out []int) []int {
	if g == nil {
		return out
	}
	var kept []int
	for _, i := range out {
		if g.lacks[i][e.family] != "" {
			g.left[i][e.family]++
			continue
		}
		kept = append(kept, i)
	}
	return kept
}

// note says, for each node and family its inputs may not hold whole,
// that what it lacks there was not compared, and how much of what other
// nodes program: a gap of the node's coverage.
func (g *driftGaps) note(p *FleetPass) {
	if g == nil {
		return
	}
	for i, n := range p.Nodes {
		for _, fam := range []model.Family{model.IPv4, model.IPv6} {
			why := g.lacks[i][fam]
			if why == "" {
				continue
			}
			what := "entries and endpoints"
			if g.left[i][fam] == 1 {
				what = "entry or endpoint"
			}
			p.Gap(n, "not checked for node %s (%s): %s; what other nodes program and it does not show there was not compared (%d %s left out)",
				n.Name, fam, why, g.left[i][fam], what)
		}
	}
}

func runNodeDrift(p *FleetPass) {
	names := make([]string, len(p.Nodes))
	for i, n := range p.Nodes {
		names[i] = n.Name
	}
	d := &Drift{Nodes: names, Ports: []DriftPort{}}
	rows := map[string][]*portPrint{}
	compared := 0
	gaps := newDriftGaps(p.Nodes)
	for i, n := range p.Nodes {
		if len(n.print.views) == 0 {
			mode, _ := n.Mode()
			p.Note("%s: no %s data plane in the inputs: its service ports were not compared", n.Name, mode)
			continue
		}
		compared++
		for _, pp := range n.print.ports {
			if !pp.programmed {
				continue
			}
			r := rows[pp.service]
			if r == nil {
				r = make([]*portPrint, len(p.Nodes))
				rows[pp.service] = r
			}
			r[i] = pp
		}
	}
	for _, k := range sortedKeys(rows) {
		r := newDriftRow(p, k, rows[k])
		r.gaps = gaps
		if alike(p, rows[k], r.noBackends) {
			if r.noBackends {
				p.Note("%s: endpoints are chosen by topology hints per node: only its entries were compared", r.service)
			}
			d.Alike++
			continue
		}
		r.fill(p, k, rows[k])
		if row := compareRow(p, r); row.Drifted() {
			d.Ports = append(d.Ports, row)
		} else {
			d.Alike++
		}
	}
	fieldDrift(p, d)
	if compared >= 2 {
		gaps.note(p)
	}
	if compared < 2 {
		p.Note("fewer than two nodes have a data plane of their mode in the inputs: service ports were not compared")
	}
	p.SetDrift(d)
}

// newDriftRow starts the row of a service port from the nodes' prints of
// it (nil where a node does not program it): its protocol is that of the
// first node programming it.
func newDriftRow(p *FleetPass, service string, pps []*portPrint) *driftRow {
	r := &driftRow{service: service}
	for _, pp := range pps {
		if pp == nil {
			continue
		}
		if r.protocol == "" {
			r.protocol = pp.protocol
		}
		r.noBackends = r.noBackends || pp.topology
	}
	return r
}

// fill sets, per node, what it programs for the row's service port: no
// element for a node with a view but no entry of the port. The lines of
// the evidence are not read here: only those of the nodes reported are
// (reportRow), so that the lines of a node read from its report are
// loaded only when a finding names it.
func (r *driftRow) fill(p *FleetPass, service string, pps []*portPrint) {
	r.nodes = make([][]printElem, len(p.Nodes))
	r.viewed = make([]bool, len(p.Nodes))
	for i, n := range p.Nodes {
		r.viewed[i] = len(n.print.views) > 0
		if pp := pps[i]; pp != nil && r.viewed[i] {
			r.nodes[i] = pp.elems
		}
	}
}

// elem returns the element of that key node i programs, or nil.
func (r *driftRow) elem(i int, key string) *printElem { return findElem(r.nodes[i], key) }

// alike reports whether every node with a view programs the service port
// with the same entries (and endpoints, unless they are chosen by
// topology): a row whose cells would all be ok, and that reports nothing.
func alike(p *FleetPass, pps []*portPrint, noBackends bool) bool {
	var first *portPrint
	for i, n := range p.Nodes {
		if len(n.print.views) == 0 {
			continue
		}
		pp := pps[i]
		if pp == nil {
			return false
		}
		if first == nil || first == pp {
			first = pp
			continue
		}
		if !sameElems(first, pp, noBackends) {
			return false
		}
	}
	return true
}

// sameElems reports whether two prints hold the same element keys
// (entries only, with noBackends).
func sameElems(a, b *portPrint, noBackends bool) bool {
	keys := func(pp *portPrint) []string {
		var out []string
		for _, e := range pp.elems {
			if !noBackends || !e.backend {
				out = append(out, e.key)
			}
		}
		return out
	}
	return slices.Equal(keys(a), keys(b))
}

// compareRow compares one service port across the nodes, reports the nodes
// that differ from the others and returns the row of the matrix.
func compareRow(p *FleetPass, r *driftRow) DriftPort {
	row := DriftPort{Service: r.service, Protocol: r.protocol, Cells: make([]DriftCell, len(p.Nodes))}
	var have []int // nodes with a view
	for i := range r.nodes {
		if !r.viewed[i] {
			row.Cells[i].State = CellUnknown
			continue
		}
		have = append(have, i)
		for _, e := range r.nodes[i] {
			switch {
			case r.noBackends && e.backend:
			case e.backend:
				row.Cells[i].Backends++
			default:
				row.Cells[i].Entries++
			}
		}
	}
	if r.noBackends {
		p.Note("%s: endpoints are chosen by topology hints per node: only its entries were compared", r.service)
	}
	missing := make([][]string, len(p.Nodes))
	extra := make([][]string, len(p.Nodes))
	// union holds the elements that differ, as the first node programs
	// them.
	union := map[string]*printElem{}
	// decided holds the keys of the elements the exports decide on.
	decided := map[string]bool{}
	comparePort(r.nodes, have, r.noBackends, func(e *printElem, in, out []int) {
		// What a node whose inputs may not hold the family whole lacks
		// is not a difference.
		if out = r.gaps.held(e, out); len(out) == 0 {
			return
		}
		union[e.key] = e
		lacking, excess, byExports := oddNodes(p, r, e, in, out)
		decided[e.key] = byExports
		for _, i := range lacking {
			missing[i] = append(missing[i], e.key)
		}
		for _, i := range excess {
			extra[i] = append(extra[i], e.key)
		}
	})
	var drafts []driftDraft
	for _, i := range have {
		c := &row.Cells[i]
		for _, k := range missing[i] {
			c.Missing = append(c.Missing, union[k].label)
		}
		for _, k := range extra[i] {
			c.Extra = append(c.Extra, r.elem(i, k).label)
		}
		switch {
		case c.Entries == 0 && len(c.Missing) > 0:
			c.State = CellMissing
		case c.Entries == 0:
			c.State = CellNone
		case len(c.Missing) > 0:
			c.State = CellDiffers
		case len(c.Extra) > 0 && c.Entries == countEntries(extra[i]):
			c.State = CellExtra
		case len(c.Extra) > 0:
			c.State = CellDiffers
		default:
			c.State = CellOK
		}
		c.ExplainedBy, drafts = reportRow(p, r, i, union, decided, missing[i], extra[i], have, drafts)
	}
	reportDrafts(p, drafts)
	return row
}

// A driftDraft is a finding of node-drift on one node before its message
// is written: the nodes of a row that lack (or have in excess) the same
// elements are named together in each one's finding, which the report
// then lists once (one cause, one finding).
type driftDraft struct {
	node int
	// key is the kind of difference and the elements it is about.
	key string
	f   Finding
	// text writes the message, subject naming the nodes of the key.
	text func(subject string, several bool) string
}

// reportDrafts reports the drafts of a row, each naming the nodes with the
// same difference.
func reportDrafts(p *FleetPass, drafts []driftDraft) {
	alike := map[string][]string{}
	for _, d := range drafts {
		alike[d.key] = append(alike[d.key], p.Nodes[d.node].Name)
	}
	for _, d := range drafts {
		names := alike[d.key]
		d.f.Message = d.text(nodeNames(names), len(names) > 1)
		p.Report(p.Nodes[d.node], d.f)
	}
}

// pick returns one when a subject is one node, several otherwise.
func pick(several bool, one, many string) string {
	if several {
		return many
	}
	return one
}

func countEntries(keys []string) int {
	n := 0
	for _, k := range keys {
		if strings.HasPrefix(k, "entry ") {
			n++
		}
	}
	return n
}

// oddNodes decides which nodes are out of line for an element some nodes
// program (in) and others do not (out). Each node's own objects (its
// exports, read for its version and mode) decide for it when they hold
// the service port (see [portPrint.expects]): the nodes that lack the
// element while their objects say to program it, and those that program
// it while they say not to, however many they are (most nodes of a fleet
// may lag behind the EndpointSlices one healthy node follows); decided is
// then set. When no node's objects find one out of line, the minority
// (on a tie, the nodes that lack it) is named, the finding stating the
// split without taking a side.
func oddNodes(p *FleetPass, r *driftRow, e *printElem, in, out []int) (lacking, excess []int, decided bool) {
	for _, i := range out {
		if p.Nodes[i].print.port(r.service).expects(e) {
			lacking = append(lacking, i)
		}
	}
	for _, i := range in {
		if pp := p.Nodes[i].print.port(r.service); pp != nil && pp.known && !pp.expects(e) {
			excess = append(excess, i)
		}
	}
	if len(lacking) > 0 || len(excess) > 0 {
		return lacking, excess, true
	}
	if len(in) < len(out) {
		return nil, in, false
	}
	return out, nil, false
}

// reportRow drafts what node i lacks and has in excess for a service
// port, but what the node's own findings already report (one cause, one
// finding), and returns the checks of those findings and drafts with the
// node's drafts added.
// decided holds the elements the exports decide on; the message of
// another states the split without taking a side (see [oddNodes]).
func reportRow(p *FleetPass, r *driftRow, i int, union map[string]*printElem, decided map[string]bool, missing, extra []string, have []int, drafts []driftDraft) ([]string, []driftDraft) {
	if len(missing) == 0 && len(extra) == 0 {
		return nil, drafts
	}
	n := p.Nodes[i]
	var by []string
	missing, by = unexplained(n, r.service, missing, func(k string) *printElem { return union[k] }, by)
	extra, by = unexplained(n, r.service, extra, func(k string) *printElem { return r.elem(i, k) }, by)
	if len(missing) == 0 && len(extra) == 0 {
		return by, drafts
	}
	draft := func(key string, f Finding, text func(subject string, several bool) string) {
		drafts = append(drafts, driftDraft{node: i, key: key, f: f, text: text})
	}
	// The node's print of the port with the lines of its evidence (nil
	// when it does not program the port).
	pp := n.print.full(r.service)
	// others names the other nodes that program the element of key (with)
	// or do not, and whether they are several.
	others := func(keys []string, with bool) (string, bool) {
		var names []string
		for _, j := range have {
			if j == i {
				continue
			}
			if (r.elem(j, keys[0]) != nil) == with {
				names = append(names, p.Nodes[j].Name)
			}
		}
		return nodeNames(names), len(names) > 1
	}
	var missEntries, extraEntries []string
	hasEntries := false
	for _, e := range r.nodes[i] {
		hasEntries = hasEntries || !e.backend
	}
	for _, k := range missing {
		e := union[k]
		if !e.backend {
			missEntries = append(missEntries, k)
			continue
		}
		if !hasEntries {
			continue // the whole service port is missing: one finding below
		}
		var ev []model.Evidence
		if pp != nil {
			ev = append(ev, pp.dispatch...)
		}
		if epEv, ok := pp.endpoint(e.label); ok {
			ev = append(ev, epEv)
		}
		if len(ev) == 0 {
			ev = nodeAnchor(n, e)
		}
		with, withSeveral := others([]string{k}, true)
		advice := "The node's kube-proxy has not programmed an endpoint its peers use: check its logs for EndpointSlice watch errors and restart it."
		if !decided[k] {
			advice = undecidedAdvice
		}
		draft("missing "+k, Finding{
			Service: r.service, Protocol: r.protocol, Endpoint: e.label,
			Evidence: ev,
			Advice:   advice,
		}, func(subject string, several bool) string {
			return fmt.Sprintf("%s %s to %s, %s %s%s", with, pick(withSeveral, "forwards", "forward"), e.label, subject, pick(several, "does not", "do not"),
				driftWhy(decided[k], true, true))
		})
	}
	for _, k := range extra {
		e := r.elem(i, k)
		if !e.backend {
			extraEntries = append(extraEntries, k)
			continue
		}
		without, withoutSeveral := others([]string{k}, false)
		advice := "The node's kube-proxy still forwards to an endpoint its peers dropped: it missed EndpointSlice updates; restart it."
		if !decided[k] {
			advice = undecidedAdvice
		}
		draft("extra "+k, Finding{
			Service: r.service, Protocol: r.protocol, Endpoint: e.label,
			Evidence: pp.elem(k).evidence,
			Advice:   advice,
		}, func(subject string, several bool) string {
			return fmt.Sprintf("%s %s to %s, %s %s%s", subject, pick(several, "forwards", "forward"), e.label, without, pick(withoutSeveral, "does not", "do not"),
				driftWhy(decided[k], true, false))
		})
	}
	if len(missEntries) > 0 {
		var labels []string
		var ev []model.Evidence
		for _, k := range missEntries {
			labels = append(labels, union[k].label)
			ev = appendEvidence(ev, nodeAnchor(n, union[k])...)
		}
		if pp != nil && pp.known {
			ev = append(ev, pp.serviceEv)
		}
		with, _ := others(missEntries[:1], true)
		advice := "The node's kube-proxy has not programmed a Service its peers serve: check that it runs and syncs (its logs, its sync metrics) and restart it."
		if !decided[missEntries[0]] {
			advice = undecidedAdvice
		}
		draft("missing entries "+strings.Join(missEntries, "\n"), Finding{
			Service: r.service, Protocol: r.protocol,
			Evidence: ev,
			Advice:   advice,
		}, func(subject string, _ bool) string {
			return fmt.Sprintf("programmed on %s but not on %s: no entry for %s%s", with, subject, listLabels(labels),
				driftWhy(decided[missEntries[0]], false, true))
		})
	}
	if len(extraEntries) > 0 {
		var labels []string
		var ev []model.Evidence
		for _, k := range extraEntries {
			labels = append(labels, r.elem(i, k).label)
			ev = appendEvidence(ev, pp.elem(k).evidence...)
		}
		without, withoutSeveral := others(extraEntries[:1], false)
		advice := "The node's kube-proxy keeps rules its peers removed: it missed Service updates; restart it."
		if !decided[extraEntries[0]] {
			advice = undecidedAdvice
		}
		draft("extra entries "+strings.Join(extraEntries, "\n"), Finding{
			Service: r.service, Protocol: r.protocol,
			Evidence: ev,
			Advice:   advice,
		}, func(subject string, several bool) string {
			return fmt.Sprintf("%s %s %s, which %s %s%s", subject, pick(several, "programs", "program"), listLabels(labels), without, pick(withoutSeveral, "does not", "do not"),
				driftWhy(decided[extraEntries[0]], false, false))
		})
	}
	return by, drafts
}

// undecidedAdvice is the advice of a difference no node's exports decide.
const undecidedAdvice = "No node's exports tell which nodes are right (they do not hold the Service, or each node follows its own): compare with the cluster " +
	"(`kubectl get service,endpointslices -n NAMESPACE`), then restart the kube-proxy of the nodes that differ from it."

// driftWhy writes what decides which nodes a difference names: the
// exports, whose EndpointSlices (for an endpoint) or Service (for an
// entry) the nodes named fail to follow (lacking what they list, or
// having what they do not), or, when nothing decides, that the split is
// stated as it is.
func driftWhy(decided, endpoint, lacking bool) string {
	switch {
	case !decided:
		return "; no node's exports say which side is right"
	case endpoint && lacking:
		return "; the exports' EndpointSlices say to forward to it"
	case endpoint:
		return "; the exports' EndpointSlices do not say to forward to it"
	case lacking:
		return "; the exports' Service defines it"
	}
	return "; the exports' Service does not define it"
}

// The checks whose findings on a node explain a difference node-drift
// finds there (see explanations).
const (
	nodeDriftID       = "node-drift"
	idServiceMissing  = "service-missing"
	idNodePortMissing = "nodeport-missing"
	idExternalMissing = "external-missing"
)

// unexplained returns the keys of a service port's differences on a node
// that none of the node's own findings reports, and adds to by the checks
// of those that do: a finding of an endpoint check about the same Service
// port that names the endpoint (as its endpoint or at the head of one of
// its objects), or a finding of an entry check about the same Service
// that says there is no entry for the address and port.
func unexplained(n *FleetNode, service string, keys []string, elem func(string) *printElem, by []string) ([]string, []string) {
	var out []string
	for _, k := range keys {
		id := explaining(n, service, elem(k))
		if id == "" {
			out = append(out, k)
			continue
		}
		if !slices.Contains(by, id) {
			by = append(by, id)
		}
	}
	return out, by
}

// explaining returns the check of the node's own finding that reports e,
// "" when none does: e is put as the finding node-drift would report of it
// alone (its endpoint, or the entry as its one object).
func explaining(n *FleetNode, service string, e *printElem) string {
	d := Finding{Check: nodeDriftID, Service: service}
	if e.backend {
		d.Endpoint = e.label
	} else {
		d.Objects = []string{e.label}
	}
	return explainedBy(n.res.Findings, &d)
}

// sameService reports whether a node's finding c is about the service
// port of d, a difference node-drift finds, or about its whole Service.
func sameService(c, d *Finding) bool {
	name, port, _ := strings.Cut(d.Service, ":")
	return c.Service == d.Service || c.Service == name && port != ""
}

// driftEndpoint reports whether c, a finding of an endpoint check, names
// the endpoint that d, a difference node-drift finds, is about.
func driftEndpoint(_ *facts, c, d *Finding) bool {
	_, port, _ := strings.Cut(d.Service, ":")
	return d.Endpoint != "" && sameService(c, d) && namesEndpoint(c, d.Service, port, d.Endpoint)
}

// driftEntry reports whether c, a finding of an entry check, says there is
// no entry for the entry that d, a difference node-drift finds, is about.
func driftEntry(_ *facts, c, d *Finding) bool {
	return d.Endpoint == "" && len(d.Objects) == 1 && sameService(c, d) && saysNoEntry(c, d.Objects[0])
}

// namesEndpoint reports whether an endpoint finding names an endpoint of
// the service port: as its endpoint, or at the head of one of its objects
// ("10.244.3.5:8080 (ready...)"; "10.244.3.5:8080 of port http (...)"
// when the finding is about the Service's ports together).
func namesEndpoint(f *Finding, service, port, endpoint string) bool {
	if f.Service == service && f.Endpoint == endpoint {
		return true
	}
	head := endpoint + " "
	if f.Service != service {
		head = endpoint + " of port " + port + " "
	}
	for _, o := range f.Objects {
		if strings.HasPrefix(o, head) {
			return true
		}
	}
	return false
}

// saysNoEntry reports whether a finding of an entry check says there is no
// entry for an entry of the drift matrix ("ClusterIP 10.96.10.30 tcp/8443",
// "NodePort tcp/30080"): "no entry for cluster IP 10.96.10.30:8443/tcp".
func saysNoEntry(f *Finding, label string) bool {
	fields := strings.Fields(label)
	if len(fields) < 2 {
		return false
	}
	proto, port, ok := strings.Cut(fields[len(fields)-1], "/")
	if !ok {
		return false
	}
	want := "node port " + port + "/" + proto
	if len(fields) == 3 {
		ip := fields[1]
		if strings.Contains(ip, ":") {
			ip = "[" + ip + "]"
		}
		want = ip + ":" + port + "/" + proto
	}
	for _, text := range append([]string{f.Message}, f.Objects...) {
		if strings.Contains(text, "no entry for ") && strings.Contains(text, want) {
			return true
		}
	}
	return false
}

// nodeAnchor returns where a node's data plane would hold an element.
func nodeAnchor(n *FleetNode, e *printElem) []model.Evidence {
	for _, v := range n.print.views {
		if v.family == e.family || e.kind == view.NodePort {
			k := e.kind
			if e.backend {
				k = view.ClusterIP
			}
			if ev, ok := v.anchors[k]; ok {
				return []model.Evidence{ev}
			}
			return []model.Evidence{{File: v.source}}
		}
	}
	if vs := n.print.views; len(vs) > 0 {
		return []model.Evidence{{File: vs[0].source}}
	}
	return nil
}

func appendEvidence(list []model.Evidence, evs ...model.Evidence) []model.Evidence {
next:
	for _, e := range evs {
		for _, x := range list {
			if x == e {
				continue next
			}
		}
		list = append(list, e)
	}
	return list
}

func listLabels(labels []string) string {
	if len(labels) > 4 {
		return strings.Join(labels[:4], ", ") + fmt.Sprintf(" and %d more", len(labels)-4)
	}
	return strings.Join(labels, ", ")
}

// nodeNames writes a list of nodes as joinNames does, but for more than
// five, "a, b, c and 97 more nodes": a message names a few of its peers,
// so that the findings of a fleet grow with the nodes, not with their
// square.
func nodeNames(names []string) string {
	if len(names) > 5 {
		return strings.Join(names[:3], ", ") + fmt.Sprintf(" and %d more nodes", len(names)-3)
	}
	return joinNames(names)
}

// joinNames writes "a", "a and b", "a, b and c".
func joinNames(names []string) string {
	switch len(names) {
	case 0:
		return "no other node"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// fieldDrift compares the kube-proxy version, the mode and the
// configuration of the nodes.
func fieldDrift(p *FleetPass, d *Drift) {
	nodes := p.Nodes
	compare := func(field string, values []string, evidence func(i int) []model.Evidence) {
		odd := oddValues(values)
		if len(odd) == 0 {
			return
		}
		d.Fields = append(d.Fields, DriftField{Field: field, Values: values})
		// The odd nodes of one value are named together, and the others
		// written once per value.
		subjects, rest := map[string][]string{}, map[string]string{}
		for _, i := range odd {
			v := values[i]
			subjects[v] = append(subjects[v], nodes[i].Name)
			if _, ok := rest[v]; ok {
				continue
			}
			var others [][2]string
			for j := range nodes {
				if values[j] != "" && values[j] != v {
					others = append(others, [2]string{values[j], nodes[j].Name})
				}
			}
			rest[v] = groupValues(others)
		}
		for _, i := range odd {
			v := values[i]
			p.Report(nodes[i], Finding{
				Message:  fmt.Sprintf("%s is %s on %s but %s", field, v, nodeNames(subjects[v]), rest[v]),
				Evidence: evidence(i),
				Advice:   "Roll the same kube-proxy version, mode and configuration out to every node (one DaemonSet, one ConfigMap), then restart the DaemonSet.",
			})
		}
	}

	versions := make([]string, len(nodes))
	for i, n := range nodes {
		versions[i] = n.print.version
	}
	compare("kube-proxy version", versions, func(i int) []model.Evidence {
		return []model.Evidence{nodes[i].print.versionEv}
	})

	modes := make([]string, len(nodes))
	for i, n := range nodes {
		modes[i] = n.print.modeValue
	}
	compare("mode", modes, func(i int) []model.Evidence {
		return append([]model.Evidence(nil), nodes[i].print.modeEv...)
	})

	fields := map[string]bool{}
	withConfig := 0
	for _, n := range nodes {
		if !n.print.config {
			continue
		}
		withConfig++
		for k := range n.print.configValues {
			fields[k] = true
		}
	}
	if withConfig < len(nodes) && withConfig > 0 {
		p.Note("the configuration of some nodes is not in the inputs: it was compared between the others only")
	}
	for _, field := range sortedKeys(fields) {
		if field == "mode" || field == "hostnameOverride" {
			continue // the mode is compared above; the host name is per node
		}
		values := make([]string, len(nodes))
		for i, n := range nodes {
			if !n.print.config {
				continue
			}
			values[i] = n.print.configValue(field)
			if values[i] == "" {
				values[i] = "unset"
			}
		}
		compare(field, values, func(i int) []model.Evidence {
			return []model.Evidence{model.EvidenceAt(nodes[i].print.fieldPos(field), field+": "+values[i])}
		})
	}
}

func lineIfFile(s *model.Snapshot, name string) int {
	for _, in := range s.Inputs {
		if in.Path == name {
			return 1
		}
	}
	return 0
}

// oddValues returns the nodes whose value differs from the most common one
// (every node with a value when no value is the most common); nodes with
// no value ("") are left out.
func oddValues(values []string) []int {
	count := map[string]int{}
	for _, v := range values {
		if v != "" {
			count[v]++
		}
	}
	if len(count) < 2 {
		return nil
	}
	best, tie := "", false
	for _, v := range sortedKeys(count) {
		switch {
		case count[v] > count[best]:
			best, tie = v, false
		case count[v] == count[best]:
			tie = true
		}
	}
	var out []int
	for i, v := range values {
		if v != "" && (tie || v != best) {
			out = append(out, i)
		}
	}
	return out
}

// groupValues writes "30s on node-a and node-b" from (value, node) pairs.
func groupValues(parts [][2]string) string {
	var order []string
	by := map[string][]string{}
	for _, p := range parts {
		v, node := p[0], p[1]
		if by[v] == nil {
			order = append(order, v)
		}
		by[v] = append(by[v], node)
	}
	var out []string
	for _, v := range order {
		out = append(out, v+" on "+nodeNames(by[v]))
	}
	return strings.Join(out, ", ")
}
