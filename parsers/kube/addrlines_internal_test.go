package kube

import (
	"slices"
	"testing"
)

// TestAddressLines checks the line found for each endpoint's address, in
// kubectl's layout (the list items at the key's indent), an indented one,
// inline addresses and an endpoint without addresses.
func TestAddressLines(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want []int32
	}{
		{"apiVersion: discovery.k8s.io/v1\nendpoints:\n- addresses:\n  - 10.0.0.1\n  conditions:\n    ready: true\n- addresses:\n  - 10.0.0.2\n  nodeName: a\nkind: EndpointSlice\n", []int32{13, 17}},
		{"endpoints:\n  - conditions: {}\n    addresses:\n      - 10.0.0.1\n  - addresses: [10.0.0.2]\n  - nodeName: x\nports: []\n", []int32{13, 14, 0}},
	} {
		if got := addressLines([]byte(tc.doc), 10); !slices.Equal(got, tc.want) {
			t.Errorf("addressLines(%q) = %v, want %v", tc.doc, got, tc.want)
		}
	}
}
