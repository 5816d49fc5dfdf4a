package cmd

import (
	"strings"
	"testing"
)

// TestProfileFlagsHidden: --profile and --profile-output work (see
// TestProfile) but stay out of the everyday help.
func TestProfileFlagsHidden(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"analyze", "--help"}} {
		f, output := testFactory()
		if code := Run(f, args); code != 0 {
			t.Fatalf("%v: exit %d", args, code)
		}
		if stdout, _ := output(); strings.Contains(stdout, "--profile") {
			t.Errorf("%v shows --profile:\n%s", args, stdout)
		}
	}
}
