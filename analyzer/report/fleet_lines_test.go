package report

import (
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers"
)

// TestFleetLines: what several nodes of a report say alike — a gap, a file
// read with the same lines skipped — is one line naming them, a node of no
// known name by its bundle; what one node says names it alone.
func TestFleetLines(t *testing.T) {
	cov := func(gaps ...string) *checks.Coverage { return &checks.Coverage{Gaps: gaps} }
	r := &Report{
		Coverage: cov("of the run"),
		Nodes: []NodeReport{
			{Node: "a", Coverage: cov("shared", "a's own")},
			{Bundle: "bundles/b.tgz", Coverage: cov("shared")},
			{Node: "c", Coverage: cov("shared")},
			{Node: "d", Coverage: cov("shared")},
			{Node: "e", Coverage: cov("shared")},
		},
	}
	skipped := []parsers.LineRange{{From: 1, To: 1, Reason: "shell prompt"}}
	for _, b := range []string{"a", "bundles/b.tgz", "c"} {
		r.Inputs = append(r.Inputs, model.Input{Path: "node/iptables-save.txt", Bundle: b, Skipped: skipped})
	}
	r.Inputs = append(r.Inputs, model.Input{Path: "node/iptables-save.txt", Bundle: "d", Skipped: []parsers.LineRange{{From: 2, To: 2, Reason: "shell prompt"}}})
	for _, tc := range []struct {
		name      string
		got, want []string
	}{
		{"gaps", func() []string { g, _ := r.gaps(); return g }(), []string{
			"of the run",
			"a, bundles/b.tgz, c and 2 more nodes: shared",
			"a: a's own",
		}},
		{"reading", readingLines(r), []string{
			"node/iptables-save.txt: 1 line skipped: shell prompt (line 1) (in a, bundles/b.tgz, c)",
			"node/iptables-save.txt: 1 line skipped: shell prompt (line 2) (in d)",
		}},
	} {
		if strings.Join(tc.got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s:\n%s\nwant:\n%s", tc.name, strings.Join(tc.got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
}
