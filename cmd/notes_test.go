package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestNoteNotRepeatingGap: what the "not checked" lines state (here, no
// node name for the Local traffic policies) is not repeated as notes of
// the other checks that lacked the same input; --verbose keeps them.
func TestNoteNotRepeatingGap(t *testing.T) {
	root := parsetest.Root(t)
	dir := t.TempDir()
	for _, f := range []string{"node/iptables-save.txt", "cluster/cluster.yaml"} {
		data, err := os.ReadFile(filepath.Join(root, "testdata", "bundles", "iptables-v1.18-mini", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const gap = "Local traffic policy of shop/front:web, shop/ledger:grpc not checked"
	for _, tc := range []struct {
		verbose bool
		want    int // lines naming the gap
	}{{false, 1}, {true, 2}} {
		args := []string{"analyze", "-o", "table", dir}
		if tc.verbose {
			args = append(args, "--verbose")
		}
		out := strings.Join(strings.Fields(runText(t, args...)), " ") // lines unwrapped
		if n := strings.Count(out, gap); n < tc.want || !tc.verbose && n != tc.want {
			t.Errorf("verbose %v: %q stated %d times, want %d:\n%s", tc.verbose, gap, n, tc.want, out)
		}
	}
}
