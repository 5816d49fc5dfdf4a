// Package report builds the report of an analysis — the stable value of
// the contract's JSON report — and renders it. Every format is a pure
// function of the [Report] value: renderers never run checks or look at
// the model.
package report

import (
	"fmt"
	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/model"
)

// SchemaVersion is the version of the JSON report's shape.
const SchemaVersion = 1

// Tool names the program that wrote a report.
type Tool struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Summary counts findings by severity.
type Summary struct {
	Error   int `json:"error"`
	Warning int `json:"warning"`
	Info    int `json:"info"`
}

// Add counts a finding.
func (s *Summary) Add(sev checks.Severity) {
	switch sev {
	case checks.Error:
		s.Error++
	case checks.Warning:
		s.Warning++
	case checks.Info:
		s.Info++
	}
}

// Report is the result of analysing one or more nodes. Its JSON form is
// the contract's `analyze -o json` output; fields after Summary extend it.
type Report struct {
	SchemaVersion int              `json:"schemaVersion"`
	Tool          Tool             `json:"tool"`
	Inputs        []model.Input    `json:"inputs"`
	Node          string           `json:"node,omitempty"`
	Mode          string           `json:"mode,omitempty"`
	Findings      []checks.Finding `json:"findings"`
	Summary       Summary          `json:"summary"`

	// KubeProxyVersion is the version the analysis assumed, and its source.
	KubeProxyVersion string `json:"kubeProxyVersion,omitempty"`
	VersionSource    string `json:"versionSource,omitempty"`
	// ModeSource says how the mode was determined, ModeOrigin the same as
	// one word: given, configured, inferred or assumed.
	ModeSource string `json:"modeSource,omitempty"`
	ModeOrigin string `json:"modeOrigin,omitempty"`
	// Verdict is ok (no finding, and what matters for the node's mode was
	// checked on complete inputs), findings, or inconclusive (no finding,
	// but Coverage lists what was not checked and the inputs that would
	// close each gap). With several nodes it is the worst of theirs.
	Verdict string `json:"verdict,omitempty"`
	// Coverage says what was checked (one node; per node in Nodes
	// otherwise).
	Coverage *checks.Coverage `json:"coverage,omitempty"`
	// Checks lists every check with its state (ran or skipped, and why).
	Checks []checks.Status `json:"checks,omitempty"`
	// Notes are remarks of the loader (which node, which version...).
	Notes []string `json:"notes,omitempty"`
	// Nodes holds one entry per node when several were analysed.
	Nodes []NodeReport `json:"nodes,omitempty"`
	// Unknown lists the input files whose kind was not recognised.
	Unknown []string `json:"unknownInputs,omitempty"`
	// Migration is, for an IPVS-mode node, what a move to nftables mode
	// would change (single-node reports; see NodeReport otherwise).
	Migration *checks.Migration `json:"migration,omitempty"`
	// Drift is the comparison of the nodes (node-drift), when several were
	// analysed.
	Drift *checks.Drift `json:"drift,omitempty"`
	// Checklist is the operational checklist filled with the inputs'
	// values (one node; per node in Nodes otherwise).
	Checklist []ChecklistItem `json:"checklist,omitempty"`
}

// Label names the node in a report for people: its name, or, when no
// input says it, the bundle it was read from, or else its place among the
// nodes ("node 3", as node-drift names it); a label that several nodes
// would share gets "#2", "#3", ... after the first, as in node-drift.
func (n *NodeReport) Label() string {
	if n.label != "" {
		return n.label
	}
	if n.Node == "" {
		return n.Bundle
	}
	return n.Node
}

// labelNodes sets the label of each of a report's nodes (see
// [NodeReport.Label]).
func labelNodes(nodes []NodeReport) {
	seen := make(map[string]int, len(nodes))
	for i := range nodes {
		n := &nodes[i]
		n.label = ""
		l := n.Label()
		if l == "" {
			l = fmt.Sprintf("node %d", i+1)
		}
		seen[l]++
		if seen[l] > 1 {
			l = fmt.Sprintf("%s#%d", l, seen[l])
		}
		n.label = l
	}
}

// NodeReport summarises one node of a multi-node report.
type NodeReport struct {
	Node             string           `json:"node"`
	Bundle           string           `json:"bundle,omitempty"`
	Mode             string           `json:"mode,omitempty"`
	KubeProxyVersion string           `json:"kubeProxyVersion,omitempty"`
	Summary          Summary          `json:"summary"`
	Verdict          string           `json:"verdict,omitempty"`
	Coverage         *checks.Coverage `json:"coverage,omitempty"`
	Checks           []checks.Status  `json:"checks,omitempty"`
	Notes            []string         `json:"notes,omitempty"`
	Checklist        []ChecklistItem  `json:"checklist,omitempty"`
	// Migration is the node's IPVS-to-nftables migration section.
	Migration *checks.Migration `json:"migration,omitempty"`
	// label names the node for people (see Label).
	label string
}

// NodeResult is the analysis of one node, the input of [Build].
type NodeResult struct {
	Snap   *model.Snapshot
	Result *checks.Result
}

// A Node is what a report keeps of an analysed node: its inputs, name,
// version, notes and checklist, and the result of its checks. It holds no
// reference to the node's snapshot, so that the snapshot of each node of a
// fleet is released once the node is analysed.
type Node struct {
	Name   string
	Inputs []model.Input
	// Bundle, when not empty, is the bundle of every input, which Inputs
	// then leave out (see [Node.InputList]).
	Bundle        string
	Version       string
	VersionSource string
	Notes         []string
	Checklist     []ChecklistItem
	// Result is the outcome of the node's checks (with those of the
	// cross-node checks once they ran).
	Result *checks.Result
}

// Summarize keeps of an analysed node what its report shows. The
// checklist is filled now: it reads none of the cross-node checks.
func Summarize(s *model.Snapshot, res *checks.Result) *Node {
	n := &Node{Name: s.Node.Name, Inputs: s.Inputs, Version: s.Version.String(), VersionSource: s.Version.Source, Notes: s.Notes,
		Checklist: BuildChecklist(s, res), Result: res}
	for i := range n.Checklist {
		model.Detach(n.Checklist[i].Evidence)
	}
	return n
}

// BuildFleet assembles the report of a [checks.RunFleet] run: Build's
// report with the fleet's drift matrix.
func BuildFleet(tool Tool, snaps []*model.Snapshot, fr *checks.FleetResult) *Report {
	nodes := make([]*Node, len(snaps))
	for i, s := range snaps {
		nodes[i] = Summarize(s, fr.Results[i])
	}
	return BuildNodes(tool, nodes, fr.Drift)
}

// Build assembles the report of one or more analysed nodes.
func Build(tool Tool, nodes []NodeResult) *Report {
	sums := make([]*Node, len(nodes))
	for i, n := range nodes {
		sums[i] = Summarize(n.Snap, n.Result)
	}
	return BuildNodes(tool, sums, nil)
}

// BuildNodes assembles the report of analysed nodes, with the fleet's drift
// matrix when the cross-node checks compared them. A finding that several
// nodes report alike from the cluster objects and configuration they share
// is listed once, naming them (see [checks.Finding.Nodes]); Summary counts
// the findings listed, each node's summary in Nodes its own.
func BuildNodes(tool Tool, nodes []*Node, drift *checks.Drift) *Report {
	r := &Report{SchemaVersion: SchemaVersion, Tool: tool, Findings: []checks.Finding{}, Drift: drift}
	// A loose file of no known kind (a README beside the bundles), which
	// every node of a fleet reads, is listed once.
	type looseUnknown struct {
		path, note string
		bytes      int64
	}
	listed := map[looseUnknown]bool{}
	for _, n := range nodes {
		for _, in := range n.InputList() {
			if in.Kind == "unknown" && in.Bundle == "" {
				k := looseUnknown{in.Path, in.Note, in.Bytes}
				if listed[k] {
					continue
				}
				listed[k] = true
			}
			r.Inputs = append(r.Inputs, in)
			if in.Kind == "unknown" {
				r.Unknown = append(r.Unknown, in.Path)
			}
		}
		var sum Summary
		for _, f := range n.Result.Findings {
			sum.Add(f.Severity)
		}
		verdict := n.Result.Verdict()
		r.Verdict = worseVerdict(r.Verdict, verdict)
		if len(nodes) > 1 {
			cov := n.Result.Coverage
			nr := NodeReport{Node: n.Name, Mode: n.Result.Mode, KubeProxyVersion: n.Version, Summary: sum, Verdict: verdict, Coverage: &cov,
				Checks: n.Result.Statuses, Notes: n.Notes, Migration: n.Result.Migration, Checklist: n.Checklist}
			nr.Bundle = n.BundlePath()
			r.Nodes = append(r.Nodes, nr)
		}
	}
	labelNodes(r.Nodes)
	r.Findings = append(r.Findings, mergeClusterScope(nodes)...)
	for _, f := range r.Findings {
		r.Summary.Add(f.Severity)
	}
	if len(nodes) == 1 {
		n := nodes[0]
		r.Node = n.Name
		r.Mode = n.Result.Mode
		r.ModeSource = n.Result.ModeSource
		r.ModeOrigin = n.Result.ModeOrigin
		cov := n.Result.Coverage
		r.Coverage = &cov
		r.KubeProxyVersion = n.Version
		r.VersionSource = n.VersionSource
		r.Checks = n.Result.Statuses
		r.Notes = n.Notes
		r.Migration = n.Result.Migration
		r.Checklist = n.Checklist
	}
	checks.SortFindings(r.Findings)
	return r
}

// verdictRank orders verdicts from best to worst.
var verdictRank = map[string]int{"": 0, checks.VerdictOK: 1, checks.VerdictInconclusive: 2, checks.VerdictFindings: 3}

func worseVerdict(a, b string) string {
	if verdictRank[b] > verdictRank[a] {
		return b
	}
	return a
}

// Inconclusive reports a verdict of inconclusive: no finding, but not
// everything that matters was checked.
func (r *Report) Inconclusive() bool {
	if r.Verdict == checks.VerdictInconclusive {
		return true
	}
	for _, n := range r.Nodes {
		if n.Verdict == checks.VerdictInconclusive {
			return true
		}
	}
	return false
}

// inconclusiveText says what an inconclusive verdict means.
const inconclusiveText = "inconclusive: no findings, but not everything that matters was checked"

// gaps returns what was not checked (each prefixed with its node when
// several were analysed) and the inputs that would settle it, each once.
func (r *Report) gaps() ([]string, []checks.InputNeed) {
	entries, needs := r.gapEntries()
	gaps := make([]string, len(entries))
	for i, e := range entries {
		gaps[i] = e.String()
	}
	return gaps, needs
}

// A gapEntry is a gap of the report's coverage and the nodes whose gap it
// is (none: the report's own).
type gapEntry struct {
	nodes []string
	text  string
}

// String is the gap as a report line: "TEXT", "NODE: TEXT", or, for a gap
// several nodes have alike, "A, B, C and 97 more nodes: TEXT".
func (e gapEntry) String() string {
	if len(e.nodes) == 0 {
		return e.text
	}
	return listNames(e.nodes, "node") + ": " + e.text
}

// gapEntries returns the gaps of the report and its nodes, a gap several
// nodes have alike once with all of them, in the order first met, and
// the inputs that would settle them.
func (r *Report) gapEntries() ([]gapEntry, []checks.InputNeed) {
	var out []gapEntry
	var needs []checks.InputNeed
	if r.Coverage != nil {
		for _, g := range r.Coverage.Gaps {
			out = append(out, gapEntry{text: g})
		}
		for _, n := range r.Coverage.Needs {
			needs = checks.AddNeed(needs, n)
		}
	}
	at := map[string]int{} // a nodes' gap text -> its entry
	for _, n := range r.Nodes {
		if n.Coverage == nil {
			continue
		}
		for _, g := range n.Coverage.Gaps {
			if i, ok := at[g]; ok {
				out[i].nodes = append(out[i].nodes, n.Label())
				continue
			}
			at[g] = len(out)
			out = append(out, gapEntry{nodes: []string{n.Label()}, text: g})
		}
		for _, x := range n.Coverage.Needs {
			needs = checks.AddNeed(needs, x)
		}
	}
	return out, needs
}

// Count returns how many findings are at or above a severity.
func (r *Report) Count(min checks.Severity) int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity >= min {
			n++
		}
	}
	return n
}
