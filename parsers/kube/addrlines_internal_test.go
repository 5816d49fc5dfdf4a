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

// TestPodCIDRLine checks the line found for a Node's podCIDRs: the
// spec.podCIDRs key before spec.podCIDR in YAML (not a key of another
// section so named), the first key in indented JSON, the object's line in
// compact JSON, and none without either key.
func TestPodCIDRLine(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		json bool
		want int
	}{
		{"apiVersion: v1\nkind: Node\nmetadata:\n  name: a\nspec:\n  podCIDR: 10.0.1.0/24\n  podCIDRs:\n  - 10.0.1.0/24\n", false, 16},
		{"kind: Node\nspec:\n  podCIDR: 10.0.1.0/24\n", false, 12},
		{"kind: Node\nstatus:\n  podCIDRs: x\nspec:\n  taints: []\n", false, 0},
		{"{\n  \"kind\": \"Node\",\n  \"metadata\": {\"annotations\": {\"a\": \"{\\\"podCIDRs\\\": 1}\"}},\n  \"spec\": {\n    \"podCIDR\": \"10.0.1.0/24\",\n    \"podCIDRs\": [\"10.0.1.0/24\"]\n  }\n}", true, 15},
		{`{"kind":"Node","spec":{"podCIDRs":["10.0.1.0/24"]}}`, true, 10},
		{`{"kind":"Node","spec":{}}`, true, 0},
	} {
		if got := podCIDRLine([]byte(tc.doc), 10, tc.json); got != tc.want {
			t.Errorf("podCIDRLine(%q) = %d, want %d", tc.doc, got, tc.want)
		}
	}
}

// TestJSONAddressLines checks the line found for each endpoint's address
// in an indented JSON EndpointSlice (kubectl's -o json), with strings
// holding brackets, colons and escaped quotes, an endpoint without
// addresses and a key named addresses elsewhere, and none in compact JSON.
func TestJSONAddressLines(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want []int32
	}{
		{`{
    "apiVersion": "discovery.k8s.io/v1",
    "metadata": {"annotations": {"x": "[{\"addresses\": [\"1.2.3.4\"]}]:"}, "addresses": ["9.9.9.9"]},
    "endpoints": [
        {
            "conditions": {"ready": true},
            "addresses": [
                "10.0.0.1"
            ],
            "nodeName": "a"
        },
        {"addresses": ["10.0.0.2"]},
        {"nodeName": "b", "addresses": []}
    ],
    "kind": "EndpointSlice"
}`, []int32{17, 21, 0}},
		{`{"apiVersion":"discovery.k8s.io/v1","endpoints":[{"addresses":["10.0.0.1"]}],"kind":"EndpointSlice"}`, nil},
	} {
		if got := jsonAddressLines([]byte(tc.doc), 10); !slices.Equal(got, tc.want) {
			t.Errorf("jsonAddressLines(%q) = %v, want %v", tc.doc, got, tc.want)
		}
	}
}
