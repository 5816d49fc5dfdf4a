package parsers

import (
	"reflect"
	"testing"
)

func TestRanges(t *testing.T) {
	notes := []LineNote{
		{Line: 1, Reason: "shell prompt", Skipped: true},
		{Line: 2, Reason: "kubectl table", Skipped: true},
		{Line: 3, Reason: "kubectl table", Skipped: true},
		{Line: 4, Reason: "carriage return"},
		{Line: 5, Reason: "carriage return"},
		{Line: 5, Reason: "colour codes"},
		{Line: 45, Reason: "carriage return"},
		{Line: 45, Reason: "cut short", Skipped: true, Detail: "unterminated quote"},
	}
	skipped := []LineRange{{1, 1, "shell prompt", ""}, {2, 3, "kubectl table", ""}, {45, 45, "cut short", "unterminated quote"}}
	if got := Ranges(notes, true); !reflect.DeepEqual(got, skipped) {
		t.Errorf("skipped = %v, want %v", got, skipped)
	}
	// Line 45 was skipped: its change is not reported.
	changed := []LineRange{{4, 5, "carriage return", ""}, {5, 5, "colour codes", ""}}
	if got := Ranges(notes, false); !reflect.DeepEqual(got, changed) {
		t.Errorf("changed = %v, want %v", got, changed)
	}
	if n := CountLines(skipped); n != 4 {
		t.Errorf("CountLines(skipped) = %d, want 4", n)
	}
	if n := CountLines(changed); n != 2 {
		t.Errorf("CountLines(changed) = %d, want 2", n)
	}
}

// TestIsIPTablesListing recognises iptables -L's chain and column
// headers, and nothing else.
func TestIsIPTablesListing(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"Chain INPUT (policy ACCEPT)\ntarget     prot opt source               destination\n", true},
		{"Chain KUBE-SERVICES (2 references)\nnum  target     prot opt source               destination\n", true},
		{"Chain INPUT (policy DROP 12 packets, 720 bytes)\n pkts bytes target     prot opt in     out     source               destination\n", true},
		{"*nat\n:KUBE-SERVICES - [0:0]\nCOMMIT\n", false},
		{"Chain INPUT (policy ACCEPT)\nsomething else\n", false},
	} {
		if got := IsIPTablesListing([]byte(tc.in)); got != tc.want {
			t.Errorf("IsIPTablesListing(%q) = %v", tc.in, got)
		}
	}
}
