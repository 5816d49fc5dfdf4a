package cmd

import (
	"strings"
	"testing"
)

func TestSuggest(t *testing.T) {
	ids := []string{"service-missing", "endpoint-stale", "endpoint-missing", "node-drift"}
	for _, tc := range []struct {
		name string
		want string
	}{
		{"servce-missing", "service-missing"},
		{"endpoint-stal", "endpoint-stale"},
		{"endpoint", "endpoint-stale endpoint-missing"},
		{"node", "node-drift"},
		{"conntrack-stale", ""},
		{"x", ""},
	} {
		if got := strings.Join(suggest(tc.name, ids), " "); got != tc.want {
			t.Errorf("suggest(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}
