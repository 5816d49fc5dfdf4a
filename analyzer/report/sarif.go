package report

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/url"
	"path"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/model"
)

// SARIFSchema is the schema URI written in SARIF logs.
const SARIFSchema = "https://json.schemastore.org/sarif-2.1.0.json"

// The SARIF 2.1.0 objects proxyscan writes (a subset of the format, in the
// field order of the specification).
type (
	sarifLog struct {
		Schema  string     `json:"$schema"`
		Version string     `json:"version"`
		Runs    []sarifRun `json:"runs"`
	}
	sarifRun struct {
		Tool        sarifTool         `json:"tool"`
		Invocations []sarifInvocation `json:"invocations"`
		Results     []sarifResult     `json:"results"`
		Properties  map[string]any    `json:"properties,omitempty"`
	}
	sarifTool struct {
		Driver sarifDriver `json:"driver"`
	}
	sarifDriver struct {
		Name           string `json:"name"`
		Version        string `json:"version,omitempty"`
		InformationURI string `json:"informationUri,omitempty"`
		// Notifications describe the notifications the run reports that
		// are not about a check (coverage gaps).
		Notifications []sarifRule `json:"notifications,omitempty"`
		Rules         []sarifRule `json:"rules"`
	}
	sarifRule struct {
		ID                   string         `json:"id"`
		Name                 string         `json:"name"`
		ShortDescription     sarifText      `json:"shortDescription"`
		FullDescription      sarifText      `json:"fullDescription"`
		Help                 *sarifText     `json:"help,omitempty"`
		DefaultConfiguration sarifConfig    `json:"defaultConfiguration"`
		Properties           map[string]any `json:"properties,omitempty"`
	}
	sarifConfig struct {
		Level string `json:"level"`
	}
	sarifText struct {
		Text     string `json:"text"`
		Markdown string `json:"markdown,omitempty"`
	}
	sarifInvocation struct {
		ExecutionSuccessful        bool                `json:"executionSuccessful"`
		ToolExecutionNotifications []sarifNotification `json:"toolExecutionNotifications,omitempty"`
	}
	sarifNotification struct {
		Descriptor sarifDescriptor `json:"descriptor"`
		Message    sarifText       `json:"message"`
		Level      string          `json:"level"`
	}
	sarifDescriptor struct {
		ID    string `json:"id"`
		Index *int   `json:"index,omitempty"`
	}
	sarifResult struct {
		RuleID              string            `json:"ruleId"`
		RuleIndex           int               `json:"ruleIndex"`
		Level               string            `json:"level"`
		Message             sarifText         `json:"message"`
		Locations           []sarifLocation   `json:"locations,omitempty"`
		RelatedLocations    []sarifLocation   `json:"relatedLocations,omitempty"`
		PartialFingerprints map[string]string `json:"partialFingerprints,omitempty"`
		Properties          map[string]any    `json:"properties,omitempty"`
	}
	sarifLocation struct {
		ID               *int                   `json:"id,omitempty"`
		PhysicalLocation *sarifPhysical         `json:"physicalLocation,omitempty"`
		LogicalLocations []sarifLogicalLocation `json:"logicalLocations,omitempty"`
		Message          *sarifText             `json:"message,omitempty"`
	}
	sarifPhysical struct {
		ArtifactLocation sarifArtifact `json:"artifactLocation"`
		Region           *sarifRegion  `json:"region,omitempty"`
	}
	sarifArtifact struct {
		URI string `json:"uri"`
	}
	sarifRegion struct {
		StartLine int        `json:"startLine"`
		Snippet   *sarifText `json:"snippet,omitempty"`
	}
	sarifLogicalLocation struct {
		FullyQualifiedName string `json:"fullyQualifiedName"`
		Kind               string `json:"kind,omitempty"`
	}
)

// sarifLevel maps a severity to a SARIF level.
func sarifLevel(s checks.Severity) string {
	switch s {
	case checks.Error:
		return "error"
	case checks.Warning:
		return "warning"
	}
	return "note"
}

// RenderSARIF writes the report as a SARIF 2.1.0 log: one run whose rules
// are the check catalogue and whose results are the findings, located at
// their first evidence (a dump or export file and line, relative to the
// directory proxyscan was run from when the bundle was given as a relative
// directory), the other evidence as related locations. Skipped checks are
// tool notifications of level note, each coverage gap (what was not
// checked) one of level error, and the run's properties hold the verdict
// with the gaps and the inputs that would close them.
func RenderSARIF(w io.Writer, r *Report, _ Options) error {
	rules := make([]sarifRule, len(checks.All))
	index := map[string]int{}
	for i, c := range checks.All {
		index[c.ID] = i
		rules[i] = sarifRule{
			ID:                   c.ID,
			Name:                 ruleName(c.ID),
			ShortDescription:     sarifText{Text: c.Title},
			FullDescription:      sarifText{Text: c.What, Markdown: c.What},
			Help:                 &sarifText{Text: "Why: " + c.Why + "\n\nFix: " + c.Fix, Markdown: "**Why.** " + c.Why + "\n\n**Fix.** " + c.Fix},
			DefaultConfiguration: sarifConfig{Level: sarifLevel(c.Severity)},
		}
		if len(c.Needs) > 0 {
			var needs []string
			for _, n := range c.Needs {
				needs = append(needs, string(n))
			}
			rules[i].Properties = map[string]any{"needs": needs}
		}
	}
	bundles := nodeBundles(r)
	run := sarifRun{
		Tool:        sarifTool{Driver: sarifDriver{Name: r.Tool.Name, Version: r.Tool.Version, Rules: rules}},
		Invocations: []sarifInvocation{{ExecutionSuccessful: true}},
		Results:     []sarifResult{},
	}
	if run.Tool.Driver.Name == "" {
		run.Tool.Driver.Name = "proxyscan"
	}
	for st := range allStatuses(r) {
		if st.status.State != "skipped" {
			continue
		}
		msg := st.status.Reason
		if st.node != "" {
			msg = "node " + st.node + ": " + msg
		}
		run.Invocations[0].ToolExecutionNotifications = append(run.Invocations[0].ToolExecutionNotifications,
			sarifNotification{Descriptor: sarifDescriptor{ID: st.status.ID}, Message: sarifText{Text: "skipped: " + msg}, Level: "note"})
	}
	// What was not checked: the run's results cannot be taken as complete
	// (SARIF 2.1.0, appendix I: a tool execution notification of level
	// error says so), and its properties carry the verdict.
	gaps, needs := r.gaps()
	if len(gaps) > 0 {
		run.Tool.Driver.Notifications = []sarifRule{coverageGapDescriptor}
		zero := 0
		for _, g := range gaps {
			run.Invocations[0].ToolExecutionNotifications = append(run.Invocations[0].ToolExecutionNotifications,
				sarifNotification{Descriptor: sarifDescriptor{ID: coverageGapDescriptor.ID, Index: &zero}, Message: sarifText{Text: "coverage gap: " + g}, Level: "error"})
		}
	}
	props := map[string]any{}
	if r.Verdict != "" {
		props["verdict"] = r.Verdict
	}
	if len(gaps) > 0 {
		props["gaps"] = gaps
	}
	if len(needs) > 0 {
		props["needs"] = needs
	}
	if r.Node != "" {
		props["node"] = r.Node
	}
	if r.Mode != "" {
		props["mode"] = r.Mode
	}
	if r.KubeProxyVersion != "" {
		props["kubeProxyVersion"] = r.KubeProxyVersion
	}
	if len(props) > 0 {
		run.Properties = props
	}
	for _, f := range r.Findings {
		idx, ok := index[f.Check]
		if !ok {
			// A check of another proxyscan version: add a bare rule.
			idx = len(run.Tool.Driver.Rules)
			index[f.Check] = idx
			run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, sarifRule{ID: f.Check, Name: ruleName(f.Check),
				ShortDescription: sarifText{Text: f.Check}, FullDescription: sarifText{Text: f.Check},
				Help: &sarifText{Text: "proxyscan checks " + f.Check}, DefaultConfiguration: sarifConfig{Level: sarifLevel(f.Severity)}})
		}
		res := sarifResult{RuleID: f.Check, RuleIndex: idx, Level: sarifLevel(f.Severity), Message: sarifText{Text: findingText(f)}}
		bundle := bundles[f.Node]
		for i, e := range f.Evidence {
			loc := sarifLoc(bundle, e)
			if i == 0 {
				res.Locations = []sarifLocation{loc}
				continue
			}
			id := i
			loc.ID = &id
			res.RelatedLocations = append(res.RelatedLocations, loc)
		}
		p := map[string]any{}
		for k, v := range map[string]string{"node": f.Node, "service": f.Service, "protocol": f.Protocol, "endpoint": f.Endpoint} {
			if v != "" {
				p[k] = v
			}
		}
		if len(f.Nodes) > 1 {
			p["nodes"] = f.Nodes
		}
		if len(p) > 0 {
			res.Properties = p
		}
		sum := sha256.Sum256([]byte(strings.Join([]string{f.Check, f.Node, f.Service, f.Protocol, f.Endpoint, f.Message}, "\x00")))
		res.PartialFingerprints = map[string]string{"proxyscanFinding/v1": hex.EncodeToString(sum[:16])}
		run.Results = append(run.Results, res)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(sarifLog{Schema: SARIFSchema, Version: "2.1.0", Runs: []sarifRun{run}})
}

// coverageGapDescriptor describes the notifications of what a run did not
// check (its coverage gaps).
var coverageGapDescriptor = sarifRule{
	ID:               "coverage-gap",
	Name:             "CoverageGap",
	ShortDescription: sarifText{Text: "not everything that matters was checked"},
	FullDescription: sarifText{Text: "The inputs do not hold everything the checks need: what the message names was not checked, " +
		"so the absence of results there says nothing. The run's properties list the inputs that would close the gap (needs)."},
	DefaultConfiguration: sarifConfig{Level: "error"},
}

// ruleName turns "service-missing" into "ServiceMissing" (SARIF's rule
// names are identifiers).
func ruleName(id string) string {
	var b strings.Builder
	for _, part := range strings.Split(id, "-") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// findingText is a finding's message with its advice.
func findingText(f checks.Finding) string {
	msg := f.Message
	if f.Service != "" && !strings.Contains(msg, f.Service) {
		msg = f.Service + ": " + msg
	}
	if f.Node != "" {
		msg += " (" + nodesLabel(f) + ")"
	}
	if f.Advice != "" {
		msg += ". " + f.Advice
	}
	return msg
}

// sarifLoc locates evidence: its file (joined to the bundle), its line and
// text, or its JSON path as a logical location.
func sarifLoc(bundle string, e model.Evidence) sarifLocation {
	loc := sarifLocation{PhysicalLocation: &sarifPhysical{ArtifactLocation: sarifArtifact{URI: artifactURI(bundle, e.File)}}}
	if e.Line > 0 {
		loc.PhysicalLocation.Region = &sarifRegion{StartLine: e.Line}
		if e.Text != "" {
			loc.PhysicalLocation.Region.Snippet = &sarifText{Text: e.Text}
		}
	} else if e.Text != "" {
		loc.Message = &sarifText{Text: e.Text}
	}
	if e.Path != "" {
		loc.LogicalLocations = []sarifLogicalLocation{{FullyQualifiedName: e.Path, Kind: "element"}}
	}
	return loc
}

// artifactURI returns the URI of an evidence file: the path relative to the
// working directory when its bundle was given as a relative directory, the
// path inside the bundle for an archive, a file URI for absolute paths.
func artifactURI(bundle, file string) string {
	p := file
	if bundle != "" && !isArchive(bundle) && !path.IsAbs(file) {
		p = path.Join(bundle, file)
	}
	if path.IsAbs(p) {
		return (&url.URL{Scheme: "file", Path: p}).String()
	}
	return (&url.URL{Path: p}).String()
}

func isArchive(name string) bool {
	n := strings.ToLower(name)
	for _, ext := range []string{".tgz", ".tar.gz", ".tar"} {
		if strings.HasSuffix(n, ext) {
			return true
		}
	}
	return false
}

// nodeBundles maps node names to the bundle they were read from.
func nodeBundles(r *Report) map[string]string {
	out := map[string]string{}
	for _, n := range r.Nodes {
		if _, ok := out[n.Node]; !ok {
			out[n.Node] = n.Bundle
		}
	}
	if len(r.Nodes) == 0 && len(r.Inputs) > 0 {
		out[r.Node] = r.Inputs[0].Bundle
	}
	return out
}

// nodeStatus is a check's status on a node ("" for a one-node report).
type nodeStatus struct {
	node   string
	status checks.Status
}

// allStatuses yields every check status of the report, per node, without
// listing them: a fleet's are as many as its nodes times its checks.
func allStatuses(r *Report) iter.Seq[nodeStatus] {
	return func(yield func(nodeStatus) bool) {
		for _, s := range r.Checks {
			if !yield(nodeStatus{r.Node, s}) {
				return
			}
		}
		for _, n := range r.Nodes {
			for _, s := range n.Checks {
				if !yield(nodeStatus{n.Label(), s}) {
					return
				}
			}
		}
	}
}

// evidenceLoc formats evidence's position: "file:line path".
func evidenceLoc(e model.Evidence) string {
	loc := e.File
	if e.Line > 0 {
		loc += fmt.Sprintf(":%d", e.Line)
	}
	if e.Path != "" {
		loc += " " + e.Path
	}
	return loc
}
