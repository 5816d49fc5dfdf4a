package report

import (
	"reflect"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/model"
)

// TestSharedKeys: values are shared only when every field is equal, a
// list's elements told apart from their concatenation and a nil list from
// an empty one.
func TestSharedKeys(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b any
		same bool
	}{
		{"equal lists", []string{"a", "b"}, []string{"a", "b"}, true},
		{"elements apart", []string{"a", "b"}, []string{"ab"}, false},
		{"nil and empty", []string(nil), []string{}, false},
		{"a field differs", checks.Finding{Check: "x"}.Check, checks.Finding{Check: "y"}.Check, false},
		{"evidence line", []model.Evidence{{File: "f", Line: 1}}, []model.Evidence{{File: "f", Line: 2}}, false},
		{"pointed-to values", &checks.Migration{From: "ipvs", Items: []checks.MigrationItem{{}}}, &checks.Migration{From: "ipvs", Items: []checks.MigrationItem{{}}}, true},
		{"pointed-to differ", &checks.Migration{Ready: true}, &checks.Migration{}, false},
		{"maps by content", map[string]int{"a": 1, "b": 2}, map[string]int{"b": 2, "a": 1}, true},
		{"maps differ", map[string]int{"a": 1}, map[string]int{"a": 2}, false},
	} {
		ka := string(appendKey(nil, reflect.ValueOf(tc.a)))
		kb := string(appendKey(nil, reflect.ValueOf(tc.b)))
		if (ka == kb) != tc.same {
			t.Errorf("%s: keys equal %v, want %v", tc.name, ka == kb, tc.same)
		}
	}
}

// TestSharedNodes: nodes alike but for their name and bundle share their
// inputs, checklist and, once the cross-node checks ran, their result,
// each still giving its inputs with its own bundle; appending to a shared
// list leaves the other node's alone.
func TestSharedNodes(t *testing.T) {
	node := func(name string) *Node {
		return &Node{Name: name, Inputs: []model.Input{{Path: "iptables-save.txt", Kind: "iptables-save", Bundle: name}, {Path: "cluster.yaml", Kind: "kube", Bundle: name}},
			Notes: append(make([]string, 0, 4), "a note"), Checklist: []ChecklistItem{{ID: "mode", State: StateOK}},
			Result: &checks.Result{Mode: "iptables", Statuses: []checks.Status{{ID: "x", State: "ran"}}, Coverage: checks.Coverage{Gaps: []string{"g"}}}}
	}
	sh := NewShared()
	a, b := node("node-a"), node("node-b")
	sh.Node(a)
	sh.Node(b)
	if &a.Inputs[0] != &b.Inputs[0] || &a.Checklist[0] != &b.Checklist[0] || &a.Notes[0] != &b.Notes[0] {
		t.Error("inputs, checklist or notes of nodes alike are not kept once")
	}
	if got := b.InputList(); got[0].Bundle != "node-b" || got[1].Bundle != "node-b" || b.BundlePath() != "node-b" {
		t.Errorf("node-b's inputs name %q, %q", got[0].Bundle, got[1].Bundle)
	}
	a.Notes = append(a.Notes, "another")
	if len(b.Notes) != 1 || cap(b.Notes) != 1 {
		t.Errorf("node-b's notes %q changed with node-a's", b.Notes)
	}
	c := node("node-c")
	c.Result.Findings = []checks.Finding{{Check: "x", Node: "node-c", Message: "m", Evidence: []model.Evidence{{File: "f"}}}}
	sh.Node(c)
	sh.Results([]*Node{a, b, c})
	if a.Result != b.Result {
		t.Error("equal results are not kept once")
	}
	if c.Result == a.Result || len(c.Result.Findings) != 1 || c.Result.Findings[0].Node != "node-c" {
		t.Errorf("a result of its own was shared or changed: %+v", c.Result)
	}
}
