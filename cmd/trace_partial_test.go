package cmd

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestTracePartialNoVerdict: a trace of the captured rules through a
// partial dump (iptables-save | grep under its prompt) whose walk reaches
// no endpoint gives no verdict: the fragment holds the Service's rules,
// but not the jump from PREROUTING that leads to them, so the packet is
// shown untouched "as far as the inputs show", the JSON's undetermined
// names the chains the walk never entered, and the exit status is 2 (not
// 1, which says that no path reaches an endpoint), with --compare too.
// Whole inputs keep their verdicts.
func TestTracePartialNoVerdict(t *testing.T) {
	bundle := testdata(t, "bundles", "iptables-healthy")
	var lines []string
	for _, l := range strings.SplitAfter(bundleFile(t, "iptables-healthy", "node/iptables-save.txt"), "\n") {
		if strings.Contains(l, "10.112.90.4") {
			lines = append(lines, l)
		}
	}
	grep := writeTemp(t, "grep.txt", "[root@east-w2 ~]# iptables-save | grep 10.112.90.4\n"+strings.Join(lines, ""))
	cluster := filepath.Join(bundle, "cluster")
	for _, tc := range []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string
	}{
		{"grep fragment", []string{grep, cluster, "--dst", "10.112.90.4:80"}, 2,
			`"undetermined": "no path reached an endpoint through the rules the inputs show, and ` + grep + ` is partial: the walk could not enter the chains it lacks`,
			"give the whole dump (as a file rather than pasted) for a verdict"},
		{"grep fragment, --compare", []string{grep, cluster, "--dst", "10.112.90.4:80", "--compare"}, 2,
			`"undetermined": "no path reached an endpoint`, "for a verdict"},
		{"whole dump, reached", []string{bundle, "--dst", "10.112.90.4:80"}, 0, `"verdict": "DNAT"`, ""},
		{"whole dump, no Service", []string{bundle, "--dst", "10.112.99.99:80"}, 1, `"verdict": "ACCEPT"`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, outputs := testFactory()
			code := Run(f, append([]string{"trace", "-o", "json"}, tc.args...))
			stdout, stderr := outputs()
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstderr: %s", code, tc.code, stderr)
			}
			if !strings.Contains(stdout, tc.stdout) {
				t.Errorf("stdout does not contain %q:\n%s", tc.stdout, stdout)
			}
			if tc.code == 2 && !strings.Contains(stdout, "nat KUBE-SERVICES") {
				t.Errorf("the chains the walk never entered are not named:\n%s", stdout)
			}
			if tc.code != 2 && strings.Contains(stdout, "undetermined") {
				t.Errorf("whole inputs undetermined:\n%s", stdout)
			}
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr does not contain %q:\n%s", tc.stderr, stderr)
			}
		})
	}
}
