package checks

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/model"
)

// TestExplanationIDs: every declared explanation names two checks that
// exist, and each relation with a fold has a note.
func TestExplanationIDs(t *testing.T) {
	for _, x := range explanations {
		for _, id := range []string{x.cause, x.consequence} {
			if ByID(id) == nil {
				t.Errorf("explanation %s → %s: no check %q", x.cause, x.consequence, id)
			}
		}
		if x.explains == nil || x.fold != nil && x.note == nil {
			t.Errorf("explanation %s → %s: explains or note missing", x.cause, x.consequence)
		}
	}
}

// TestExplain runs the pass on findings of made-up checks: a consequence
// about the same thing as a cause is folded into the first such cause, the
// others are kept as they are.
func TestExplain(t *testing.T) {
	sameService := func(_ *facts, c, d *Finding) bool { return c.Service == d.Service }
	list := []*explanation{{
		cause: "b-cause", consequence: "a-effect", explains: sameService,
		fold: func(_ *facts, c *Finding, ds []Finding) {
			for _, d := range ds {
				c.Message += "; " + d.Message
				c.Evidence = appendEvidence(c.Evidence, d.Evidence...)
			}
		},
		note: func(leads []Finding) string {
			var s []string
			for _, c := range leads {
				s = append(s, c.Service)
			}
			return "in " + strings.Join(s, ", ")
		},
	}}
	tests := []struct {
		name  string
		in    []Finding
		want  []Finding
		notes []string
	}{
		{
			name: "folded",
			in: []Finding{
				{Check: "a-effect", Service: "ns/a", Message: "effect 1"},
				{Check: "b-cause", Service: "ns/a", Message: "cause"},
				{Check: "b-cause", Service: "ns/a", Message: "second cause"},
				{Check: "a-effect", Service: "ns/b", Message: "unexplained"},
				{Check: "a-effect", Service: "ns/a", Message: "effect 2"},
			},
			want: []Finding{
				{Check: "b-cause", Service: "ns/a", Message: "cause; effect 1; effect 2", Checks: []string{"a-effect", "b-cause"}},
				{Check: "b-cause", Service: "ns/a", Message: "second cause"},
				{Check: "a-effect", Service: "ns/b", Message: "unexplained"},
			},
			notes: []string{"in ns/a"},
		},
		{
			name: "nothing to explain",
			in: []Finding{
				{Check: "a-effect", Service: "ns/b", Message: "effect"},
				{Check: "b-cause", Service: "ns/a", Message: "cause"},
			},
			want: []Finding{
				{Check: "a-effect", Service: "ns/b", Message: "effect"},
				{Check: "b-cause", Service: "ns/a", Message: "cause"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := &Result{Findings: tt.in, Statuses: []Status{{ID: "a-effect"}, {ID: "b-cause"}}}
			(&facts{}).explain(res, list)
			if !reflect.DeepEqual(res.Findings, tt.want) {
				t.Errorf("findings:\n got %+v\nwant %+v", res.Findings, tt.want)
			}
			if !reflect.DeepEqual(res.Statuses[0].Notes, tt.notes) || res.Statuses[1].Notes != nil {
				t.Errorf("notes: got %q and %q, want %q on a-effect only", res.Statuses[0].Notes, res.Statuses[1].Notes, tt.notes)
			}
		})
	}
}

// TestExplainKeyed: with a key, thousands of causes and consequences are
// paired through an index: each consequence is offered one cause, and the
// result is that of offering it every cause.
func TestExplainKeyed(t *testing.T) {
	const n = 3000
	calls := 0
	same := func(_ *facts, c, d *Finding) bool { calls++; return c.Service == d.Service }
	fold := func(_ *facts, c *Finding, ds []Finding) {
		for _, d := range ds {
			c.Message += "; " + d.Message
		}
	}
	note := func([]Finding) string { return "folded" }
	findings := func() []Finding {
		var fs []Finding
		for i := 0; i < n; i++ {
			svc := "ns/s" + strconv.Itoa(i)
			fs = append(fs, Finding{Check: "b-cause", Service: svc, Message: "cause"},
				Finding{Check: "a-effect", Service: svc, Message: "effect"})
		}
		return append(fs, Finding{Check: "a-effect", Service: "ns/other", Message: "unexplained"})
	}
	plain := &Result{Findings: findings(), Statuses: []Status{{ID: "a-effect"}}}
	(&facts{}).explain(plain, []*explanation{{cause: "b-cause", consequence: "a-effect", explains: same, fold: fold, note: note}})
	if calls < n*n/4 {
		t.Fatalf("without a key: %d calls, want every cause offered", calls)
	}
	calls = 0
	keyed := &Result{Findings: findings(), Statuses: []Status{{ID: "a-effect"}}}
	key := func(_ *facts, x *Finding) string { return x.Service }
	(&facts{}).explain(keyed, []*explanation{{cause: "b-cause", consequence: "a-effect", explains: same, key: key, fold: fold, note: note}})
	if calls != n {
		t.Errorf("with a key: %d calls of explains for %d consequences, want one each", calls, n)
	}
	if !reflect.DeepEqual(keyed.Findings, plain.Findings) || len(keyed.Findings) != n+1 {
		t.Errorf("keyed and plain pairing differ (%d and %d findings)", len(keyed.Findings), len(plain.Findings))
	}
}

// TestExplainDanglingAndMisdirectedIndexed: the findings that dangling
// references and misdirected rules explain are paired with them through
// an index: on a node with thousands of dangling chains each consequence
// is offered the few causes it shares a key with, not every one.
func TestExplainDanglingAndMisdirectedIndexed(t *testing.T) {
	const n = 2000
	f := &facts{dangling: map[evidenceKey]*dangling{}}
	var fs []Finding
	for i := 0; i < n; i++ {
		rule := evidenceKey{file: "node/iptables-save.txt", line: 10 + i}
		target := "KUBE-SEP-" + strconv.Itoa(i)
		f.dangling[rule] = &dangling{target: target, rules: map[evidenceKey]bool{rule: true}}
		ev := model.Evidence{File: rule.file, Line: rule.line, Text: "-A KUBE-SVC-X -j " + target}
		fs = append(fs, Finding{Check: idRulesetInvalid, Message: "dangling " + strconv.Itoa(i), Evidence: []model.Evidence{ev}},
			Finding{Check: idEndpointStale, Message: "stale " + strconv.Itoa(i), Evidence: []model.Evidence{ev}})
	}
	for i := 0; i < n; i++ {
		svc := "ns/s" + strconv.Itoa(i) + ":http"
		fs = append(fs, Finding{Check: idLoadBalanceSkew, Service: svc, Message: "skew"},
			Finding{Check: idEndpointMissing, Service: svc, Protocol: "TCP", Endpoint: "10.0.0.1:80", Message: "missing"})
	}
	res := &Result{Findings: fs, Statuses: []Status{{ID: idEndpointStale}, {ID: idEndpointMissing}}}
	calls := 0
	var list []*explanation
	for _, x := range explanations {
		if x.consequence == idEndpointStale && x.cause == idRulesetInvalid || x.cause == idLoadBalanceSkew && x.fold != nil {
			y := *x
			y.explains = func(f *facts, c, d *Finding) bool { calls++; return x.explains(f, c, d) }
			list = append(list, &y)
		}
	}
	if len(list) != 2 {
		t.Fatalf("found %d of the two explanations", len(list))
	}
	f.explain(res, list)
	if calls > 2*n {
		t.Errorf("%d calls of explains for %d consequences, want at most one each", calls, 2*n)
	}
	stale := 0
	for _, x := range res.Findings {
		if x.Check == idEndpointStale {
			stale++
		}
		if x.Check == idRulesetInvalid && !strings.Contains(x.Message, "stale") {
			t.Fatalf("%s: the endpoint-stale finding quoting its rule is not folded", x.Message)
		}
	}
	if stale != 0 {
		t.Errorf("%d endpoint-stale findings left, want all folded", stale)
	}
}
