package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestNodeVerdictLines: up to four nodes are listed one by one with their
// verdict; more are one line per verdict naming a few of its nodes.
func TestNodeVerdictLines(t *testing.T) {
	for _, tc := range []struct {
		nodes int
		want  []string
		not   string
	}{
		{nodes: 3, want: []string{"n0: ok · n1: 1 warning · n2: ok"}},
		{nodes: 100, want: []string{"99 nodes: ok (n0, n2, n3 and 96 more nodes)", "1 node: 1 warning (n1)"}, not: "n50"},
	} {
		r := &Report{}
		for i := 0; i < tc.nodes; i++ {
			n := NodeReport{Node: fmt.Sprintf("n%d", i)}
			if i == 1 {
				n.Summary.Warning = 1
			}
			r.Nodes = append(r.Nodes, n)
		}
		var b strings.Builder
		contextLines(&b, newTheme(&bytes.Buffer{}, false), r, 200)
		out := b.String()
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%d nodes: no line %q in:\n%s", tc.nodes, w, out)
			}
		}
		if tc.not != "" && strings.Contains(out, tc.not) {
			t.Errorf("%d nodes: %q listed:\n%s", tc.nodes, tc.not, out)
		}
	}
}
