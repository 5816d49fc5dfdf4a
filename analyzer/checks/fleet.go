package checks

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/analyzer/view"
)

// SingleNode is the reason a cross-node check is skipped when one node is
// analysed.
const SingleNode = "a single node: this check compares the bundles of several nodes (pass one bundle per node)"

// A FleetPass is one cross-node check's run over every analysed node. The
// nodes are known by their prints (see [AnalyzeNode]): what the per-node
// checks saw of their data planes and settings, reduced to what nodes are
// compared by.
type FleetPass struct {
	Check *Check
	// Nodes are the analysed nodes, in the order they were given.
	Nodes    []*FleetNode
	findings []fleetFinding
	notes    []string
	skipped  string
	drift    *Drift
	// gaps are the notes of the run that say what was not checked of a
	// node, by node: its coverage lists them (see [FleetPass.Gap]).
	gaps []fleetFinding
}

type fleetFinding struct {
	node int
	f    Finding
}

// A FleetNode is one node analysed as part of a fleet: the result of its
// checks and the print of its data plane that cross-node checks compare.
// It keeps no reference to the node's snapshot or views, so that a fleet
// of any size is analysed with the memory of the nodes in flight.
type FleetNode struct {
	// Name names the node in messages: its name, else its bundle, made
	// unique within the fleet (set by [CompareFleet]).
	Name  string
	base  string
	index int
	res   *Result
	print *nodePrint
}

// Result returns the outcome of the node's checks; [CompareFleet] adds the
// findings and statuses of the cross-node checks to it.
func (n *FleetNode) Result() *Result { return n.res }

// Mode returns the node's proxy mode and how it was determined.
func (n *FleetNode) Mode() (mode, source string) { return n.print.mode, n.print.modeSource }

// AnalyzeNode runs the checks on one node's snapshot. With prints, it also
// keeps the print of the node's data plane (per service port: entries,
// Cluster-policy endpoints and what the node's own objects expect; per node:
// mode, version, configuration) in prints, for [CompareFleet]; with nil
// prints (one node), it does not. The returned node holds no reference to
// the snapshot, its views or its dumps. It is safe to call concurrently.
func AnalyzeNode(s *model.Snapshot, checks []*Check, prints *Prints) *FleetNode {
	return AnalyzeNodeThen(s, checks, prints, nil)
}

// AnalyzeNodeThen is [AnalyzeNode], calling checked, when not nil, once
// the node's checks ran, before its print is built (a fleet starts loading
// its next node then).
func AnalyzeNodeThen(s *model.Snapshot, checks []*Check, prints *Prints, checked func()) *FleetNode {
	f := newFacts(s, checks)
	n := &FleetNode{base: baseName(s), res: run(s, f, checks)}
	if checked != nil {
		checked()
	}
	if prints != nil {
		n.print = prints.add(newNodePrint(s, f))
		detach(n.res)
		prints.mu.Lock()
		n.res.Statuses = prints.statuses.intern(n.res.Statuses)
		prints.mu.Unlock()
	}
	return n
}

// detach copies the strings of a result's evidence, which may be parts of
// the node's dumps, so that the result keeps none of them alive.
func detach(res *Result) {
	for i := range res.Findings {
		model.Detach(res.Findings[i].Evidence)
	}
	if m := res.Migration; m != nil {
		for i := range m.Items {
			model.Detach(m.Items[i].Evidence)
		}
	}
}

// FleetResult is the outcome of running checks on several nodes.
type FleetResult struct {
	// Results holds one result per snapshot, in the order given; findings
	// of cross-node checks are in the result of the node they name.
	Results []*Result
	// Drift is node-drift's comparison of the nodes, nil when it did not
	// run.
	Drift *Drift
}

// RunFleet runs the checks on every snapshot, then the cross-node checks
// (those with RunFleet) once over all of them. With fewer than two
// snapshots the cross-node checks are skipped with [SingleNode].
func RunFleet(snaps []*model.Snapshot, checks []*Check) *FleetResult {
	var prints *Prints
	if len(snaps) > 1 {
		prints = NewPrints()
	}
	nodes := make([]*FleetNode, len(snaps))
	for i, s := range snaps {
		nodes[i] = AnalyzeNode(s, checks, prints)
	}
	return CompareFleet(nodes, checks)
}

// CompareFleet names the nodes, runs the cross-node checks over them and
// returns their results, in order. With fewer than two nodes the
// cross-node checks stay skipped with [SingleNode]; with more, every node
// must have been analysed with prints.
func CompareFleet(nodes []*FleetNode, checks []*Check) *FleetResult {
	out := &FleetResult{Results: make([]*Result, len(nodes))}
	names := fleetNames(nodes)
	for i, n := range nodes {
		n.Name, n.index = names[i], i
		out.Results[i] = n.res
	}
	if len(nodes) < 2 {
		return out
	}
	// A node whose inputs say no name reports its findings under the name
	// the fleet gives it, as node-drift does.
	for i, n := range nodes {
		for j := range n.res.Findings {
			if n.res.Findings[j].Node == "" {
				n.res.Findings[j].Node = names[i]
			}
		}
	}
	groups, apart := clusterGroups(nodes)
	var passes []fleetRan
	for _, c := range checks {
		if c.RunFleet == nil {
			continue
		}
		drifts := make([]*Drift, len(groups))
		for gi, g := range groups {
			p := &FleetPass{Check: c, Nodes: g.nodes}
			if len(groups) > 1 {
				p.Note("%s", clustersNote(groups))
			}
			if len(g.nodes) < 2 {
				p.Skip(fmt.Sprintf("%s is the only node of its cluster (%s) in the inputs: there is no node to compare it with", g.nodes[0].Name, g.label()))
			} else {
				c.RunFleet(p)
			}
			ran := newFleetRan(p, len(nodes))
			for _, ff := range p.findings {
				out.Results[ff.node].Findings = append(out.Results[ff.node].Findings, ff.f)
				ran.counts[ff.node]++
			}
			for _, g := range p.gaps {
				addGap(out.Results[g.node], c.ID+": "+g.f.Message)
			}
			passes = append(passes, ran)
			drifts[gi] = p.drift
		}
		if len(apart) > 0 {
			p := &FleetPass{Check: c, Nodes: apart}
			p.Note("%s", clustersNote(groups))
			p.Skip(fmt.Sprintf("the inputs hold nodes of %d clusters and this node's exports do not say which it is of (no Service default/kubernetes with a uid): it was compared with none", len(groups)))
			passes = append(passes, newFleetRan(p, len(nodes)))
		}
		if d := joinDrifts(nodes, groups, drifts); d != nil {
			out.Drift = d
		}
	}
	var lists statusLists
	for i, res := range out.Results {
		res.Statuses = slices.Clone(res.Statuses)
		for j := range res.Statuses {
			st := &res.Statuses[j]
			for _, ran := range passes {
				p := ran.pass
				if st.ID != p.Check.ID || !ran.member[i] {
					continue
				}
				st.State, st.Reason, st.Findings, st.Notes, st.NotApplicable = "ran", "", ran.counts[i], p.notes, false
				if p.skipped != "" && len(p.findings) == 0 {
					st.State, st.Reason = "skipped", p.skipped
				}
			}
		}
		res.Statuses = lists.intern(res.Statuses)
		SortFindings(res.Findings)
	}
	return out
}

// addGap adds a gap to a result's coverage, which is then not complete.
// The list of gaps is copied, as results may share it.
func addGap(res *Result, gap string) {
	if slices.Contains(res.Coverage.Gaps, gap) {
		return
	}
	res.Coverage.Gaps = append(slices.Clip(res.Coverage.Gaps), gap)
	res.Coverage.Complete = false
}

// fleetRan is a cross-node check that ran: its pass and how many findings
// it reported on each node.
type fleetRan struct {
	pass   *FleetPass
	counts []int
	// member marks, by node index, the nodes the pass compared (or
	// skipped).
	member []bool
}

func newFleetRan(p *FleetPass, n int) fleetRan {
	ran := fleetRan{pass: p, counts: make([]int, n), member: make([]bool, n)}
	for _, node := range p.Nodes {
		ran.member[node.index] = true
	}
	return ran
}

// Report records a finding about a node; Check and Severity default to the
// check's, Node to the node's name.
func (p *FleetPass) Report(n *FleetNode, f Finding) {
	f.Check = p.Check.ID
	if f.Severity == 0 {
		f.Severity = p.Check.Severity
	}
	if f.Node == "" {
		f.Node = n.Name
	}
	p.findings = append(p.findings, fleetFinding{n.index, f})
}

// Note records a limit of this run, once.
func (p *FleetPass) Note(format string, args ...any) {
	n := fmt.Sprintf(format, args...)
	for _, x := range p.notes {
		if x == n {
			return
		}
	}
	p.notes = append(p.notes, n)
}

// Gap records a note of the run (see [FleetPass.Note]) that says what
// was not checked of node n: the node's coverage lists it as a gap.
func (p *FleetPass) Gap(n *FleetNode, format string, args ...any) {
	note := fmt.Sprintf(format, args...)
	p.Note("%s", note)
	p.gaps = append(p.gaps, fleetFinding{node: n.index, f: Finding{Message: note}})
}

// Skip marks the check as skipped with a reason (when it reports nothing).
func (p *FleetPass) Skip(reason string) {
	if p.skipped == "" {
		p.skipped = reason
	}
}

// SetDrift records the cross-node comparison the check made, for reports.
func (p *FleetPass) SetDrift(d *Drift) { p.drift = d }

// baseName is what names a node before names are made unique: its name,
// else the base name of its bundle.
func baseName(s *model.Snapshot) string {
	return strings.Clone(BaseName(s.Node.Name, s.Inputs))
}

// baseOfPath is the base name of a bundle's path.
func baseOfPath(p string) string { return path.Base(strings.TrimRight(p, "/")) }

// fleetNames names each node for messages: the node name, else the base
// name of its bundle, else "node N"; repeated names get "#2", "#3".
func fleetNames(nodes []*FleetNode) []string {
	out := make([]string, len(nodes))
	seen := map[string]int{}
	for i, n := range nodes {
		name := n.base
		if name == "" {
			name = fmt.Sprintf("node %d", i+1)
		}
		seen[name]++
		if seen[name] > 1 {
			name = fmt.Sprintf("%s#%d", name, seen[name])
		}
		out[i] = name
	}
	return out
}

// ViewsOf returns the proxy mode of a snapshot (and how it was determined),
// and the views of its data plane in that mode, one per family present: what
// the checks compare with the model. It is empty when the inputs hold no
// data plane of the mode, or proxyscan cannot read that mode's yet.
func ViewsOf(s *model.Snapshot) (mode, source string, views []*view.View) {
	return Prepare(s, nil).Views()
}

// A Prepared is a snapshot resolved and read into views for a list of
// checks, as [Run] prepares it: a caller that reads the views and then runs
// the checks (diff) builds them once.
type Prepared struct {
	snap   *model.Snapshot
	f      *facts
	checks []*Check
}

// Prepare resolves s and builds its views for checks, starting in the
// background the traces those of them that trace read.
func Prepare(s *model.Snapshot, checks []*Check) *Prepared {
	return &Prepared{snap: s, f: newFacts(s, checks), checks: checks}
}

// Views returns what [ViewsOf] returns for the snapshot. The checks read
// the same views: a caller must not change them.
func (p *Prepared) Views() (mode, source string, views []*view.View) {
	return p.f.res.Mode, p.f.res.ModeSource, p.f.views
}

// PartialFamilies returns, by family, why the data plane read for the
// node's mode may not hold all that kube-proxy programs in that family
// ("FILE is partial: REASON"): the dump or listing read for it was cut
// short, filtered, or holds some of kube-proxy's tables only, so that
// what it lacks may only be outside it. These are the families whose
// findings of absence the checks withhold (see [Pass.ReportAbsence]).
func (p *Prepared) PartialFamilies() map[model.Family]string {
	return partialFamilies(p.f)
}

// PartialFamilies is [Prepared.PartialFamilies] of a resolved snapshot,
// without its views.
func PartialFamilies(r *resolve.Resolution) map[model.Family]string {
	f := &facts{snap: r.Snap, res: r}
	f.partial, f.nftPartial = partialDumps(f), partialRuleset(f)
	return partialFamilies(f)
}

// partialFamilies is PartialFamilies of f's partial inputs.
func partialFamilies(f *facts) map[model.Family]string {
	from := f.partial
	if f.res.Mode == model.ModeNFTables {
		from = f.nftPartial
	}
	if len(from) == 0 {
		return nil
	}
	out := make(map[model.Family]string, len(from))
	for fam, in := range from {
		out[fam] = in.Name + " is partial: " + in.Reason
	}
	return out
}

// Run runs the checks (once) and returns their findings, as [Run] does.
func (p *Prepared) Run() *Result { return run(p.snap, p.f, p.checks) }

// ConfigValues flattens the kube-proxy configuration a node runs with into
// its fields, keyed by the YAML paths kpconfig records ("mode",
// "iptables.syncPeriod", "featureGates.X"): scalars as written by the JSON
// form ("30s", "14", "true"), lists as "[a, b]". Unset fields are absent;
// apiVersion and kind are left out.
func ConfigValues(c *model.Config) map[string]string {
	out := map[string]string{}
	if c == nil || c.KubeProxyConfiguration == nil {
		return out
	}
	data, err := json.Marshal(c.KubeProxyConfiguration)
	if err != nil {
		return out
	}
	var top map[string]any
	if err := json.Unmarshal(data, &top); err != nil {
		return out
	}
	delete(top, "apiVersion")
	delete(top, "kind")
	flattenConfig("", top, out)
	return out
}

func flattenConfig(prefix string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			flattenConfig(p, e, out)
		}
	case []any:
		if len(x) == 0 {
			return
		}
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = scalarText(e)
		}
		out[prefix] = "[" + strings.Join(parts, ", ") + "]"
	case nil:
	case string:
		if x != "" {
			out[prefix] = x
		}
	default:
		out[prefix] = scalarText(x)
	}
}

func scalarText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return "null"
	case map[string]any, []any:
		b, _ := json.Marshal(x)
		return string(b)
	}
	return fmt.Sprint(v)
}

// sortedKeys returns the keys of a map, sorted.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
