package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPathGivenTwice: a bundle named twice, as the same path or another
// (./path, a link to it), is one input, read once, and a note says so;
// trace warns on stderr.
func TestPathGivenTwice(t *testing.T) {
	b := copyBundle(t, "iptables-mini")
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(b, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		stdout string
		stderr string
	}{
		{name: "the same path twice", args: []string{"analyze", "-o", "json", b, b}, stdout: b + " is given 2 times: the same directory, read once"},
		{name: "another path to it", args: []string{"analyze", "-o", "json", b, b + "/."}, stdout: b + " is given again as " + b + "/.: the same directory, read once"},
		{name: "a link to it", args: []string{"analyze", "-o", "json", b, link}, stdout: b + " is given again as " + link + ": the same directory, read once"},
		{name: "trace", args: []string{"trace", "-o", "json", b, b, "--dst", "10.96.0.10:53", "--proto", "udp"},
			stderr: "proxyscan: warning: trace: " + b + " is given 2 times: the same directory, read once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, outputs := testFactory()
			code := Run(f, tc.args)
			stdout, stderr := outputs()
			if code != 0 {
				t.Errorf("exit code %d, want 0\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			if tc.args[0] == "analyze" && (strings.Contains(stdout, `"nodes"`) || strings.Contains(stdout, "is the node of 2 bundles")) {
				t.Errorf("read as two nodes:\n%s", stdout)
			}
			if tc.stdout != "" && !strings.Contains(stdout, tc.stdout) {
				t.Errorf("stdout does not contain %q:\n%s", tc.stdout, stdout)
			}
			if tc.stderr != "" && !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr does not contain %q:\n%s", tc.stderr, stderr)
			}
		})
	}
}
