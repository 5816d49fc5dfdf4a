package report

import (
	"bytes"
	"reflect"
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

// streamProbe has what the streamer must write as encoding/json does: a
// field with its own encoding, bytes, a string option, an embedded struct,
// nil and filled pointers, and long lists at several depths.
type streamProbe struct {
	Name    string          `json:"name"`
	Sev     checks.Severity `json:"sev"`
	Raw     []byte          `json:"raw,omitempty"`
	Count   int             `json:"count,string"`
	Inner   *streamInner    `json:"inner,omitempty"`
	Nil     *streamInner    `json:"nil"`
	Items   []streamInner   `json:"items"`
	Strings []string        `json:"strings,omitempty"`
	hidden  []int
}

type streamInner struct {
	model.Evidence
	Tags []string         `json:"tags"`
	Ev   []model.Evidence `json:"ev,omitempty"`
	Deep []streamLeaf     `json:"deep"`
}

type streamLeaf struct {
	Lines []int  `json:"lines"`
	Note  string `json:"note,omitempty"`
	Empty struct{}
}

// TestStreamJSONLongLists: lists longer than streamMin below the top level,
// and the structs that hold them, are written by parts byte for byte as
// encoding/json writes them whole, whatever the types of their fields.
func TestStreamJSONLongLists(t *testing.T) {
	long := func(n int) []model.Evidence {
		out := make([]model.Evidence, n)
		for i := range out {
			out[i] = model.Evidence{File: "f<&>", Line: i, Text: "-A KUBE-SVC-X"}
		}
		return out
	}
	ints := make([]int, streamMin+3)
	for i := range ints {
		ints[i] = i
	}
	leaf := streamLeaf{Lines: ints, Note: "n"}
	probe := &streamProbe{Name: "p", Sev: checks.Warning, Raw: []byte("bytes"), Count: 7,
		Inner:   &streamInner{Evidence: model.Evidence{File: "e"}, Ev: long(streamMin + 1), Deep: []streamLeaf{leaf, {}}},
		Items:   []streamInner{{Tags: []string{"a"}}, {Ev: long(2 * streamMin), Tags: make([]string, streamMin+1)}},
		Strings: make([]string, streamMin+1), hidden: ints}
	withFinding := &Report{Findings: []checks.Finding{{Check: "sync-failures", Severity: checks.Error, Message: "m",
		Evidence: long(3 * streamMin), Objects: make([]string, streamMin+1), Checks: []string{"a", "b"}}}}
	for name, v := range map[string]any{"probe": probe, "finding": withFinding} {
		var got, want bytes.Buffer
		if err := streamJSON(&got, v); err != nil {
			t.Fatal(err)
		}
		if err := jsonValue(&want, v, Options{}); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%s: streamed form differs from encoding/json's (%d and %d bytes)", name, got.Len(), want.Len())
		}
	}
	if !holdsLongList(reflect.ValueOf(withFinding.Findings[0])) || streamable(reflect.TypeFor[streamInner]()) || streamable(reflect.TypeFor[streamProbe]()) {
		t.Error("the long finding is not streamed by parts, or a struct with an embedded field or a string option is")
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[Report](), reflect.TypeFor[NodeReport](), reflect.TypeFor[checks.Finding]()} {
		if !streamable(typ) {
			t.Errorf("%s is written whole: a fleet's report or a long finding would be held in its JSON form", typ)
		}
	}
}
