package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProfile captures each kind of profile of an analysis and checks
// that the file written is a gzipped pprof profile; an unknown name is a
// usage error.
func TestProfile(t *testing.T) {
	healthy := testdata(t, "bundles", "iptables-mini")
	findings := scenarioDir(t, "service-missing.txtar")
	for _, tc := range []struct {
		name, bundle string
		code         int
	}{
		{"cpu", healthy, 0}, {"heap", healthy, 0}, {"allocs", healthy, 0}, {"goroutine", healthy, 0},
		{"block", healthy, 0}, {"mutex", healthy, 0},
		// A run with findings ends in an error for cobra: the profile is
		// written all the same.
		{"cpu", findings, 1}, {"heap", findings, 1},
	} {
		name := tc.name
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), name+".pprof")
			f, _ := testFactory()
			if code := Run(f, []string{"analyze", tc.bundle, "-o", "json", "--profile", name, "--profile-output", out}); code != tc.code {
				t.Fatalf("exit %d, want %d", code, tc.code)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
				t.Fatalf("%s: not a gzipped pprof profile (%d bytes)", out, len(b))
			}
		})
	}
	t.Run("none writes nothing", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "none.pprof")
		f, _ := testFactory()
		if code := Run(f, []string{"version", "--profile-output", out}); code != 0 {
			t.Fatalf("exit %d", code)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("%s written without --profile (%v)", out, err)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		f, output := testFactory()
		code := Run(f, []string{"version", "--profile", "disk"})
		_, stderr := output()
		if code != 2 || !strings.Contains(stderr, `invalid --profile "disk"`) {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
	})
}
