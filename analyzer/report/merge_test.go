package report

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
)

func TestMergeByText(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{
			name: "same text of several checks is one line at the first's place",
			in: []string{
				"service-missing: no IPv6 data plane in the inputs",
				"dump.txt is partial: what it does not hold was not checked",
				"endpoint-missing: no IPv6 data plane in the inputs",
				"endpoint-missing: not checked for 4 service ports",
			},
			want: []string{
				"service-missing, endpoint-missing: no IPv6 data plane in the inputs",
				"dump.txt is partial: what it does not hold was not checked",
				"endpoint-missing: not checked for 4 service ports",
			},
		},
		{
			name: "nodes of a fleet are kept apart",
			in: []string{
				"node-a: service-missing: no IPv6 data plane in the inputs",
				"node-b: service-missing: no IPv6 data plane in the inputs",
				"node-a: orphan-rules: no IPv6 data plane in the inputs",
			},
			want: []string{
				"node-a: service-missing, orphan-rules: no IPv6 data plane in the inputs",
				"node-b: service-missing: no IPv6 data plane in the inputs",
			},
		},
		{
			name: "a prefix that is no check ID is text",
			in:   []string{"not-a-check: x", "not-a-check: x"},
			want: []string{"not-a-check: x", "not-a-check: x"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mergeByText(tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("mergeByText:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestFleetNotesOnce checks that the same note of many nodes is one line
// of the table naming a few of them, and that notes of one node keep its
// name.
func TestFleetNotesOnce(t *testing.T) {
	r := &Report{}
	for i := 1; i <= 6; i++ {
		r.Nodes = append(r.Nodes, NodeReport{Node: fmt.Sprintf("node-%d", i), Notes: []string{"no kube-proxy version in the inputs"}})
	}
	r.Nodes[5].Notes = append(r.Nodes[5].Notes, "its own note")
	var b strings.Builder
	if err := RenderTable(&b, r, Options{Width: 200}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"note: node-1, node-2, node-3 and 3 more nodes: no kube-proxy version in the inputs\n",
		"note: node-6: its own note\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "no kube-proxy version"); n != 1 {
		t.Errorf("the shared note is printed %d times:\n%s", n, out)
	}
}

// TestGapNeedsOnce: the inputs that would settle the gaps are listed once
// per command, across nodes, under the label that says more.
func TestGapNeedsOnce(t *testing.T) {
	save := "iptables-save > iptables-save.txt"
	r := &Report{
		Coverage: &checks.Coverage{Gaps: []string{"a"}, Needs: []checks.InputNeed{{Input: "iptables-save of the node", Command: save}}},
		Nodes: []NodeReport{{Node: "n1", Coverage: &checks.Coverage{Gaps: []string{"b"}, Needs: []checks.InputNeed{
			{Input: "a whole iptables-save of the node, as a file rather than pasted", Command: save},
			{Input: "the node's name", Command: "kubectl get node"},
		}}}},
	}
	gaps, needs := r.gaps()
	want := []checks.InputNeed{
		{Input: "a whole iptables-save of the node, as a file rather than pasted", Command: save},
		{Input: "the node's name", Command: "kubectl get node"},
	}
	if !slices.Equal(gaps, []string{"a", "n1: b"}) || !slices.Equal(needs, want) {
		t.Errorf("gaps %q, needs %+v; want needs %+v", gaps, needs, want)
	}
}
