package cmd

import "testing"

// TestNoColorEnv checks that NO_COLOR turns colour off when it holds a
// value, whatever the value, and not when it is empty (no-color.org).
func TestNoColorEnv(t *testing.T) {
	for _, tc := range []struct {
		value string
		off   bool
	}{
		{"", false},
		{"1", true},
		{"0", true},
		{"false", true},
		{" ", true},
	} {
		if got := noColorEnv(tc.value); got != tc.off {
			t.Errorf("NO_COLOR=%q: colour off %v, want %v", tc.value, got, tc.off)
		}
	}
}

// TestSystemNoColor checks that System reads NO_COLOR from the
// environment as noColorEnv says.
func TestSystemNoColor(t *testing.T) {
	for _, tc := range []struct {
		value string
		off   bool
	}{{"", false}, {"1", true}} {
		t.Setenv("NO_COLOR", tc.value)
		if got := System().NoColorEnv; got != tc.off {
			t.Errorf("NO_COLOR=%q: NoColorEnv %v, want %v", tc.value, got, tc.off)
		}
	}
}
