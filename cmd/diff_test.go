package cmd

import (
	"strings"
	"testing"
)

// TestDiffExitCodes: 0 without difference, 1 with differences, 2 for usage
// and input errors.
func TestDiffExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"same", []string{"diff", testdata(t, "bundles", "iptables-mini"), testdata(t, "bundles", "iptables-mini"), "-o", "json"}, 0, `"changes": []`, ""},
		{"mode switch", []string{"diff", testdata(t, "bundles", "iptables-healthy"), testdata(t, "diff", "after"), "-o", "json"}, 1, `"kind": "service-removed"`, ""},
		{"markdown", []string{"diff", testdata(t, "bundles", "iptables-healthy"), testdata(t, "diff", "after"), "-o", "markdown"}, 1, "proxy mode iptables → nftables", ""},
		{"one path", []string{"diff", testdata(t, "bundles", "iptables-mini")}, 2, "", "diff needs two paths"},
		{"bad format", []string{"diff", "-o", "sarif", testdata(t, "bundles", "iptables-mini"), testdata(t, "bundles", "iptables-mini")}, 2, "", "unknown output format"},
		{"missing", []string{"diff", "/nonexistent/a", testdata(t, "bundles", "iptables-mini")}, 2, "", "/nonexistent/a"},
		// The sides load at once: when both fail, the old side's error is the one told.
		{"both missing", []string{"diff", "/nonexistent/a", "/nonexistent/b"}, 2, "", "reading /nonexistent/a"},
		{"unreadable side", []string{"diff", testdata(t, "bundles", "iptables-mini"), changedBundle(t, "iptables-mini", map[string]string{"node/iptables-save.txt": "\x00\x01"})}, 2, "",
			"not everything was read, so no comparison is made: node/iptables-save.txt: binary: a NUL byte at offset 0"},
		{"unreadable file", []string{"diff", testdata(t, "bundles", "iptables-mini"), writeTemp(t, "x.bin", "\x00")}, 2, "", "x.bin is of no kind proxyscan reads"},
		{"side without rules", []string{"diff", testdata(t, "bundles", "iptables-mini"), changedBundle(t, "iptables-mini", map[string]string{"node/iptables-save.txt": "\n"}), "-o", "json"}, 1, `"kind": "entry-removed"`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, outputs := testFactory()
			code := Run(f, tc.args)
			stdout, stderr := outputs()
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstderr: %s", code, tc.code, stderr)
			}
			if !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stdout %q / stderr %q lack %q / %q", stdout, stderr, tc.stdout, tc.stderr)
			}
		})
	}
}

// TestAnalyzeFormats runs analyze in each new format on the fleet fixture.
// node-c's own findings explain its drift: node-drift lists it in the
// matrix and reports no finding of its own.
func TestAnalyzeFormats(t *testing.T) {
	nodes := []string{testdata(t, "fleet", "nodes", "node-a"), testdata(t, "fleet", "nodes", "node-b"), testdata(t, "fleet", "nodes", "node-c")}
	for format, want := range map[string]string{
		"sarif":    `"ruleId": "endpoint-stale"`,
		"junit":    `<testcase name="node-drift" classname="node-c">`,
		"markdown": "## Drift between nodes",
		"html":     "<h2>Operational checklist</h2>",
		"table":    "(see the node's endpoint-stale finding)",
	} {
		f, outputs := testFactory()
		code := Run(f, append([]string{"analyze", "-o", format, "--fail-on", "never"}, nodes...))
		stdout, stderr := outputs()
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("-o %s: exit %d, output lacks %q\n%s", format, code, want, stderr)
		}
	}
}
