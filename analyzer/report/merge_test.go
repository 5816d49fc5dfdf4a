package report

import (
	"slices"
	"testing"
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
