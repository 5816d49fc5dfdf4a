package checks

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
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
