package report

import (
	"bytes"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/model"
)

// TestRenderJSONStreamed: the report written a field and an element at a
// time is byte for byte what encoding/json writes of it whole, for empty,
// nil and filled fields and text with HTML characters.
func TestRenderJSONStreamed(t *testing.T) {
	for name, r := range map[string]*Report{
		"zero":  {},
		"empty": {Findings: []checks.Finding{}, Nodes: []NodeReport{}},
		"filled": {SchemaVersion: SchemaVersion, Tool: Tool{Name: "proxyscan", Version: "v1"},
			Inputs:   []model.Input{{Path: "a<b>.txt", Kind: "iptables-save", Bundle: "x&y"}},
			Findings: []checks.Finding{{Check: "service-missing", Severity: checks.Error, Message: "<no> & rules", Evidence: []model.Evidence{{File: "f", Line: 3, Text: "-A X"}}}},
			Summary:  Summary{Error: 1}, Verdict: checks.VerdictFindings, Coverage: &checks.Coverage{Complete: true},
			Checks: []checks.Status{{ID: "a", State: "ran", Notes: []string{"n"}}}, Notes: []string{"one", "two"},
			Nodes:   []NodeReport{{Node: "n1", Checks: []checks.Status{{ID: "b", State: "skipped", Reason: "r"}}}, {Node: "n2"}},
			Unknown: []string{"u"}, Drift: &checks.Drift{}},
	} {
		var got, want bytes.Buffer
		if err := RenderJSON(&got, r, Options{}); err != nil {
			t.Fatal(err)
		}
		if err := jsonValue(&want, r, Options{}); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%s: got\n%s\nwant\n%s", name, got.String(), want.String())
		}
	}
}
