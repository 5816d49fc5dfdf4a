// Package checks holds proxyscan's checks and the driver that runs them.
//
// A check is a value ([Check]) in one explicit list ([All]): a stable ID from
// the contract, a severity, a title and its documentation (what the finding
// means, why it matters, how to fix it), the inputs it needs, and a Run
// function that reports [Finding]s through a [Pass]. Checks never print;
// findings are data with evidence pointing at files and lines.
//
// A check whose inputs are absent is reported as skipped with the reason,
// never silently passed.
package checks

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/model"
)

// Severity ranks findings.
type Severity int

// Severities, lowest first.
const (
	Info Severity = iota + 1
	Warning
	Error
)

// String returns "info", "warning" or "error".
func (s Severity) String() string {
	switch s {
	case Info:
		return "info"
	case Warning:
		return "warning"
	case Error:
		return "error"
	}
	return "unknown"
}

// MarshalText implements encoding.TextMarshaler.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *Severity) UnmarshalText(b []byte) error {
	v, err := ParseSeverity(string(b))
	*s = v
	return err
}

// ParseSeverity reads "error", "warning" or "info".
func ParseSeverity(s string) (Severity, error) {
	switch strings.ToLower(s) {
	case "error":
		return Error, nil
	case "warning", "warn":
		return Warning, nil
	case "info":
		return Info, nil
	}
	return 0, fmt.Errorf("unknown severity %q (want error, warning or info)", s)
}

// Need is an input a check requires.
type Need string

// Inputs checks can need.
const (
	NeedServices  Need = "services"  // Services exported
	NeedEndpoints Need = "endpoints" // EndpointSlices or Endpoints exported
	NeedDataplane Need = "dataplane" // a data plane of the node's mode
	NeedIPTables  Need = "iptables"  // an iptables-save dump
	NeedConfig    Need = "config"    // the kube-proxy configuration
	// NeedServiceCIDRs: ServiceCIDR objects exported.
	NeedServiceCIDRs Need = "servicecidrs"
)

// needHints explains how to provide each input.
var needHints = map[Need]string{
	NeedServices:     "no Services in the inputs (add the output of kubectl get services -A -o yaml)",
	NeedEndpoints:    "no EndpointSlices in the inputs (add the output of kubectl get endpointslices -A -o yaml)",
	NeedDataplane:    "no data plane of the node's proxy mode in the inputs (add iptables-save, ipvsadm -Ln or nft list ruleset output)",
	NeedIPTables:     "no iptables-save dump in the inputs",
	NeedConfig:       "no kube-proxy configuration in the inputs (add the kube-proxy ConfigMap or its --config file)",
	NeedServiceCIDRs: "no ServiceCIDR objects in the inputs (add the output of kubectl get servicecidrs -o yaml)",
}

// A Check is one documented analysis.
type Check struct {
	// ID is the stable, kebab-case identifier from the contract.
	ID string
	// Severity of its findings (a finding may lower or raise its own).
	Severity Severity
	// Title is a one-line summary: lower case, no final period, ≤ 60
	// characters.
	Title string
	// What the finding means, Why it matters, and how to Fix it: markdown
	// paragraphs, full sentences.
	What, Why, Fix string
	// Needs lists the inputs without which the check is skipped.
	Needs []Need
	// Modes are the proxy modes the check is about (nil: every mode). On
	// a node whose mode the inputs establish as another one, and whose
	// configuration names none of these, the check does not apply: it is
	// skipped as not applicable ([Status.NotApplicable]).
	Modes []string
	// Run reports findings through the pass; it may also skip.
	Run func(*Pass)
	// Traces says that Run reads the traces of every service port
	// ([Pass.prefetchTraces]): when such a check runs, they are started
	// in the background before the first check.
	Traces bool
	// RunFleet, for a cross-node check (whose Run is nil), runs once over
	// the snapshots of every node analysed (see [RunFleet]).
	RunFleet func(*FleetPass)
}

// A Finding is one problem found, with its evidence.
type Finding struct {
	Check    string           `json:"check"`
	Severity Severity         `json:"severity"`
	Node     string           `json:"node,omitempty"`
	Service  string           `json:"service,omitempty"`
	Protocol string           `json:"protocol,omitempty"`
	Endpoint string           `json:"endpoint,omitempty"`
	Message  string           `json:"message"`
	Evidence []model.Evidence `json:"evidence,omitempty"`
	Advice   string           `json:"advice,omitempty"`
	// Objects lists, for a finding that one cause explains for several
	// objects (the rules and chains a deleted Service left), each object,
	// in the order of Evidence.
	Objects []string `json:"objects,omitempty"`
	// Checks lists, for a finding that stands for the faults of several
	// checks (the one finding of a Service whose rules lag its
	// EndpointSlices: endpoint-missing and endpoint-stale), the ID of
	// each, Check among them.
	Checks []string `json:"checks,omitempty"`
	// Nodes names, in a report of several nodes, every node the finding
	// applies to when it is judged from the cluster's objects and
	// kube-proxy's configuration alone and those nodes share them: the
	// finding is listed once, Node being the first of them.
	Nodes []string `json:"nodes,omitempty"`
}

// NodeNames returns the nodes a finding applies to: Nodes, else Node
// alone (none when it names no node).
func (f *Finding) NodeNames() []string {
	if len(f.Nodes) > 0 {
		return f.Nodes
	}
	if f.Node == "" {
		return nil
	}
	return []string{f.Node}
}

// AppliesTo reports whether a finding applies to the named node.
func (f *Finding) AppliesTo(node string) bool {
	return f.Node == node || slices.Contains(f.Nodes, node)
}

// Status says what happened to a check in a run.
type Status struct {
	ID string `json:"id"`
	// State is "ran" or "skipped".
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	// Findings is how many findings the check reported.
	Findings int `json:"findings"`
	// Notes say what part of the inputs the check could not cover.
	Notes []string `json:"notes,omitempty"`
	// NotApplicable marks a skipped check that cannot apply to the node,
	// whatever inputs are added: another proxy mode's check, a cross-node
	// check with one node.
	NotApplicable bool `json:"notApplicable,omitempty"`
}

// Result is the outcome of running checks on one snapshot.
type Result struct {
	Findings []Finding
	Statuses []Status
	// Mode is the proxy mode the checks assumed, ModeSource how it was
	// determined, Programmed the modes the data plane shows rules of.
	Mode, ModeSource string
	Programmed       []string
	// Migration says what a move to nftables mode would change, for an
	// IPVS-mode node; nil otherwise.
	Migration *Migration
	// ModeOrigin says how the mode was established (given, configured,
	// inferred or assumed).
	ModeOrigin string
	// Coverage says whether what matters for the node's mode was checked
	// on complete inputs.
	Coverage Coverage
}

// Options select checks.
type Options struct {
	// Only, when not empty, runs just these IDs; Skip never runs these.
	Only, Skip []string
}

// UnknownCheckError names a check ID that no check has.
type UnknownCheckError struct{ ID string }

func (e *UnknownCheckError) Error() string {
	return fmt.Sprintf("unknown check %q (see proxyscan checks)", e.ID)
}

// IDs returns the IDs of checks, in their order.
func IDs(checks []*Check) []string {
	out := make([]string, len(checks))
	for i, c := range checks {
		out[i] = c.ID
	}
	return out
}

// Select returns the checks of all that opts selects, or an
// [*UnknownCheckError].
func Select(all []*Check, opts Options) ([]*Check, error) {
	known := map[string]bool{}
	for _, c := range all {
		known[c.ID] = true
	}
	for _, id := range append(append([]string{}, opts.Only...), opts.Skip...) {
		if !known[id] {
			return nil, &UnknownCheckError{ID: id}
		}
	}
	in := func(list []string, id string) bool {
		for _, x := range list {
			if x == id {
				return true
			}
		}
		return false
	}
	var out []*Check
	for _, c := range all {
		if len(opts.Only) > 0 && !in(opts.Only, c.ID) || in(opts.Skip, c.ID) {
			continue
		}
		out = append(out, c)
	}
	return out, nil
}

// Run runs the checks on a snapshot and returns the sorted findings and
// every check's status. Cross-node checks are skipped ([SingleNode]); use
// [RunFleet] for several nodes.
func Run(snap *model.Snapshot, checks []*Check) *Result {
	return Prepare(snap, checks).Run()
}

func run(snap *model.Snapshot, f *facts, checks []*Check) *Result {
	res := &Result{Mode: f.res.Mode, ModeSource: f.res.ModeSource, ModeOrigin: f.res.ModeOrigin, Programmed: f.res.Programmed, Migration: migration(f)}
	defer func() {
		if f.tracer != nil && f.tracer.pending != nil {
			f.tracer.pending() // a check that started them was skipped
		}
	}()
	for _, c := range checks {
		st := Status{ID: c.ID, State: "ran"}
		if c.Run == nil {
			// A cross-node check: RunFleet runs it when there are several nodes.
			st.State, st.Reason, st.NotApplicable = "skipped", SingleNode, true
			res.Statuses = append(res.Statuses, st)
			continue
		}
		if reason := f.otherMode(c); reason != "" {
			st.State, st.Reason, st.NotApplicable = "skipped", reason, true
			res.Statuses = append(res.Statuses, st)
			continue
		}
		if reason := f.missing(c.Needs); reason != "" {
			st.State, st.Reason = "skipped", reason
			res.Statuses = append(res.Statuses, st)
			continue
		}
		p := &Pass{Snap: snap, Check: c, facts: f}
		c.Run(p)
		p.noteUncovered()
		if p.skipped != "" && len(p.findings) == 0 {
			st.State, st.Reason = "skipped", p.skipped
		}
		st.Findings = len(p.findings)
		st.Notes = p.notes
		f.record(p.findings)
		res.Findings = append(res.Findings, p.findings...)
		res.Statuses = append(res.Statuses, st)
	}
	// The findings of one cause that several checks' notes explain, in
	// this order: an unbound kube-ipvs0, a data plane without Services.
	for _, cause := range []func() (Finding, bool){f.unboundFinding, f.bareFinding} {
		fnd, ok := cause()
		if !ok {
			continue
		}
		for i, c := range checks {
			if c.ID == fnd.Check {
				fnd.Severity = c.Severity
				res.Statuses[i].Findings++
			}
		}
		fnd.Node = snap.Node.Name
		f.record([]Finding{fnd})
		res.Findings = append(res.Findings, fnd)
	}
	f.explain(res, explanations)
	SortFindings(res.Findings)
	res.Coverage = coverage(f, res, checks)
	return res
}

// SortFindings orders findings deterministically: severity (highest
// first), check, service, endpoint, message, first evidence.
func SortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.Severity != b.Severity {
			return a.Severity > b.Severity
		}
		if a.Node != b.Node {
			return a.Node < b.Node
		}
		if a.Check != b.Check {
			return a.Check < b.Check
		}
		if a.Service != b.Service {
			return a.Service < b.Service
		}
		if a.Endpoint != b.Endpoint {
			return a.Endpoint < b.Endpoint
		}
		if a.Message != b.Message {
			return a.Message < b.Message
		}
		return evKey(a) < evKey(b)
	})
}

func evKey(f Finding) string {
	if len(f.Evidence) == 0 {
		return ""
	}
	e := f.Evidence[0]
	return fmt.Sprintf("%s:%09d:%s", e.File, e.Line, e.Path)
}

// A Pass is one check's run on one snapshot.
type Pass struct {
	Snap     *model.Snapshot
	Check    *Check
	facts    *facts
	findings []Finding
	skipped  string
	notes    []string
	// uncovered holds, per reason (a partial dump, an assumed mode),
	// what ReportAbsence did not report.
	uncovered map[string]map[string]bool
}

// Note records a limit of this run (something the check could not cover),
// once.
func (p *Pass) Note(format string, args ...any) {
	n := fmt.Sprintf(format, args...)
	for _, x := range p.notes {
		if x == n {
			return
		}
	}
	p.notes = append(p.notes, n)
}

// Report records a finding; Check, Severity and Node default to the
// check's and the snapshot's.
func (p *Pass) Report(f Finding) {
	f.Check = p.Check.ID
	if f.Severity == 0 {
		f.Severity = p.Check.Severity
	}
	if f.Node == "" {
		f.Node = p.Snap.Node.Name
	}
	p.findings = append(p.findings, f)
}

// Skip marks the check as skipped with a reason (when it reports nothing).
func (p *Pass) Skip(reason string) {
	if p.skipped == "" {
		p.skipped = reason
	}
}
