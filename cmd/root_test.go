package cmd

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proxyscan/proxyscan/analyzer/checktest"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// scenarioDir writes an iptables scenario's bundle into a directory.
func scenarioDir(t *testing.T, name string) string {
	return checktest.Load(t, testdata(t, "scenarios", "iptables", name)).Dir
}

func writeTemp(t *testing.T, name, content string) string {
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func hostileArchive(t *testing.T) string {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: "../../etc/cron.d/x", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
	tw.Write([]byte("x"))
	tw.Close()
	zw.Close()
	return writeTemp(t, "bundle.tgz", buf.String())
}

func testFactory() (*Factory, func() (string, string)) {
	io, out, errOut := Test()
	f := &Factory{IO: io, Now: func() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }, Version: "v0.0.0-test", Commit: "test"}
	return f, func() (string, string) { return out.String(), errOut.String() }
}

func testdata(t *testing.T, parts ...string) string {
	return filepath.Join(append([]string{parsetest.Root(t), "testdata"}, parts...)...)
}

// checkCLI runs the CLI with args and checks its exit code, and that its
// stdout and stderr hold the texts given ("" for any); it returns them.
func checkCLI(t *testing.T, args []string, code int, stdout, stderr string) (string, string) {
	t.Helper()
	f, outputs := testFactory()
	got := Run(f, args)
	out, errOut := outputs()
	if got != code {
		t.Errorf("exit code %d, want %d\nstdout: %s\nstderr: %s", got, code, out, errOut)
	}
	if stdout != "" && !strings.Contains(out, stdout) {
		t.Errorf("stdout does not contain %q:\n%s", stdout, out)
	}
	if stderr != "" && !strings.Contains(errOut, stderr) {
		t.Errorf("stderr does not contain %q:\n%s", stderr, errOut)
	}
	return out, errOut
}

// TestExitCodes runs the CLI end to end and checks the contract's exit
// codes.
func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string // substring expected in stdout
		stderr string // substring expected in stderr
	}{
		{name: "healthy bundle", args: []string{"analyze", testdata(t, "bundles", "iptables-mini"), "-o", "json"}, code: 0, stdout: `"findings": []`},
		{name: "findings", args: []string{"analyze", scenarioDir(t, "service-missing.txtar"), "-o", "json"}, code: 1, stdout: `"check": "service-missing"`},
		{name: "findings as table", args: []string{"analyze", scenarioDir(t, "service-missing.txtar"), "-o", "table"}, code: 1, stdout: "no entry for cluster IP 10.96.10.10:80/tcp"},
		{name: "only other checks", args: []string{"analyze", scenarioDir(t, "service-missing.txtar"), "--only", "orphan-rules"}, code: 0},
		{name: "skip the check", args: []string{"analyze", scenarioDir(t, "service-missing.txtar"), "--skip", "service-missing"}, code: 0},
		{name: "no path", args: []string{"analyze"}, code: 2, stderr: "analyze needs at least one PATH"},
		{name: "unknown flag", args: []string{"analyze", "--bogus", "x"}, code: 2, stderr: "unknown flag: --bogus"},
		{name: "bad fail-on", args: []string{"analyze", "--fail-on", "sometimes", testdata(t, "bundles", "iptables-mini")}, code: 2, stderr: "invalid --fail-on"},
		{name: "bad format", args: []string{"analyze", "-o", "yaml", testdata(t, "bundles", "iptables-mini")}, code: 2, stderr: "unknown output format"},
		{name: "unknown check", args: []string{"analyze", "--only", "nope", testdata(t, "bundles", "iptables-mini")}, code: 2, stderr: `unknown check "nope"`},
		{name: "missing file", args: []string{"analyze", "/nonexistent/bundle.tgz"}, code: 2, stderr: "/nonexistent/bundle.tgz"},
		{name: "malformed dump", args: []string{"analyze", "--strict", writeTemp(t, "dump.txt", "*nat\n:PREROUTING ACCEPT [0:0]\n-A KUBE-X -j RETURN\nCOMMIT\n")}, code: 2, stderr: "dump.txt:3: rule for chain"},
		{name: "malformed dump read leniently", args: []string{"analyze", "-o", "json", writeTemp(t, "dump.txt", "*nat\n:PREROUTING ACCEPT [0:0]\n-A KUBE-X -j RETURN\nCOMMIT\n")}, code: 0, stdout: `"partial": "1 chain with rules but no declaration (nat KUBE-X)"`},
		{name: "pasted dump", args: []string{"analyze", "-o", "json", writeTemp(t, "paste.txt", "[root@node-1 ~]# iptables-save -t nat\n*nat\n:PREROUTING ACCEPT [0:0]\nCOMMIT\n")}, code: 0, stdout: `"reason": "shell prompt"`},
		{name: "pasted dump read strictly", args: []string{"analyze", "--strict", writeTemp(t, "paste.txt", "[root@node-1 ~]# iptables-save -t nat\n*nat\n:PREROUTING ACCEPT [0:0]\nCOMMIT\n")}, code: 2, stderr: "paste.txt:1: rule outside a table"},
		{name: "hostile archive", args: []string{"analyze", hostileArchive(t)}, code: 2, stderr: "path escapes the bundle"},
		{name: "nothing known", args: []string{"analyze", writeTemp(t, "notes.md", "# what I saw\nthe service is down\n")}, code: 2, stderr: "nothing in these inputs is kube-proxy data: "},
		{name: "inconclusive passes by default", args: []string{"analyze", testdata(t, "bundles", "nftables-healthy", "node", "nft-ruleset.txt"), "-o", "json"}, code: 0, stdout: `"verdict": "inconclusive"`},
		{name: "fail on inconclusive", args: []string{"analyze", testdata(t, "bundles", "nftables-healthy", "node", "nft-ruleset.txt"), "--fail-on", "inconclusive", "-o", "json"}, code: 1, stdout: `"verdict": "inconclusive"`},
		{name: "fail on inconclusive, conclusive", args: []string{"analyze", testdata(t, "bundles", "iptables-mini"), "--fail-on", "inconclusive", "-o", "json"}, code: 0, stdout: `"verdict": "ok"`},
		{name: "mistyped command", args: []string{"analyz", "x"}, code: 2, stderr: "analyze"},
		{name: "mistyped flag", args: []string{"analyze", "--onl", "x", "y"}, code: 2, stderr: "unknown flag: --onl (did you mean --only?)\nRun 'proxyscan analyze --help' for usage."},
		{name: "mistyped check", args: []string{"analyze", "--only", "servce-missing", testdata(t, "bundles", "iptables-mini")}, code: 2, stderr: "did you mean service-missing?"},
		{name: "collect to a format", args: []string{"collect", "-o", "json"}, code: 2, stderr: "is an output format of analyze"},
		{name: "checks", args: []string{"checks"}, code: 0, stdout: "service-missing"},
		{name: "explain", args: []string{"checks", "endpoint-stale"}, code: 0, stdout: "Fix"},
		{name: "explain unknown", args: []string{"checks", "nope"}, code: 2, stderr: "unknown check"},
		{name: "version", args: []string{"version"}, code: 0, stdout: "proxyscan v0.0.0-test"},
	} {
		t.Run(tc.name, func(t *testing.T) { checkCLI(t, tc.args, tc.code, tc.stdout, tc.stderr) })
	}
}

// TestFailOn checks --fail-on against a bundle with findings of each
// severity.
func TestFailOn(t *testing.T) {
	dir := scenarioDir(t, "no-local-endpoints-rejected.txtar") // one warning
	for _, tc := range []struct {
		failOn string
		code   int
	}{{"error", 0}, {"warning", 1}, {"info", 1}, {"never", 0}} {
		f, outputs := testFactory()
		code := Run(f, []string{"analyze", dir, "-o", "json", "--fail-on", tc.failOn})
		stdout, stderr := outputs()
		if code != tc.code {
			t.Errorf("--fail-on %s: exit %d, want %d (%s)", tc.failOn, code, tc.code, stderr)
		}
		var rep struct {
			Summary map[string]int `json:"summary"`
		}
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("report is not JSON: %v\n%s", err, stdout)
		}
		if rep.Summary["warning"] != 1 || rep.Summary["error"] != 0 {
			t.Errorf("summary %v, want one warning", rep.Summary)
		}
	}
}

// TestCompletionShells checks that the completion command writes the
// script of each shell it knows and refuses one it does not with a usage
// error (cobra alone printed the help and exited 0).
func TestCompletionShells(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"completion", "bash"}, 0, "# bash completion", ""},
		{[]string{"completion", "zsh"}, 0, "#compdef proxyscan", ""},
		{[]string{"completion"}, 0, "Generate the autocompletion script", ""},
		{[]string{"completion", "tcsh"}, 2, "", `unknown command "tcsh" for "proxyscan completion"`},
	} {
		f, outputs := testFactory()
		code := Run(f, tc.args)
		stdout, stderr := outputs()
		if code != tc.code || !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("%v: exit %d, stdout %.80q, stderr %q; want exit %d, stdout with %q, stderr with %q",
				tc.args, code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
		}
	}
}
