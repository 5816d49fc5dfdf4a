package cmd

import (
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/proxyscan/proxyscan/analyzer/checks"
)

// complete runs cobra's completion request for args and returns the
// candidates (without descriptions) and the directive.
func complete(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	f, output := testFactory()
	if code := Run(f, append([]string{cobra.ShellCompRequestCmd}, args...)); code != 0 {
		_, stderr := output()
		t.Fatalf("%v: exit %d: %s", args, code, stderr)
	}
	stdout, _ := output()
	lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	var out []string
	for _, l := range lines[:len(lines)-1] {
		v, _, _ := strings.Cut(l, "\t")
		out = append(out, v)
	}
	return out, lines[len(lines)-1]
}

// TestCompletion: check IDs, output formats and every enumerated flag
// value are offered; free-text flags offer no file names, directory flags
// directories.
func TestCompletion(t *testing.T) {
	noFiles := ":" + strconv.Itoa(int(cobra.ShellCompDirectiveNoFileComp))
	dirs := ":" + strconv.Itoa(int(cobra.ShellCompDirectiveFilterDirs))
	ids := checks.IDs(checks.All)
	for _, tc := range []struct {
		args      []string
		want      []string // exactly these, in this order, when wantAll
		wantAll   bool
		directive string
	}{
		{[]string{"checks", ""}, ids, true, noFiles},
		{[]string{"checks", "endpoint-"}, []string{"endpoint-stale", "endpoint-missing"}, true, noFiles},
		{[]string{"checks", "service-missing", ""}, nil, true, noFiles},
		{[]string{"analyze", "--only", ""}, ids, true, noFiles},
		{[]string{"analyze", "--skip", "endpoint-"}, []string{"endpoint-stale", "endpoint-missing"}, true, noFiles},
		{[]string{"analyze", "--only", "service-missing,endpoint-"}, []string{"service-missing,endpoint-stale", "service-missing,endpoint-missing"}, true, noFiles},
		{[]string{"analyze", "-o", ""}, []string{"html", "json", "junit", "markdown", "sarif", "table"}, true, noFiles},
		{[]string{"analyze", "--fail-on", ""}, []string{"error", "warning", "info", "inconclusive", "never"}, true, noFiles},
		{[]string{"analyze", "--version", ""}, []string{"1.37", "1.20"}, false, noFiles},
		{[]string{"analyze", "--node", ""}, nil, true, noFiles},
		{[]string{"checks", "-o", ""}, []string{"text", "markdown"}, true, noFiles},
		{[]string{"diff", "-o", ""}, []string{"json", "markdown", "table"}, true, noFiles},
		{[]string{"trace", "-o", ""}, []string{"json", "table"}, true, noFiles},
		{[]string{"trace", "--proto", ""}, []string{"tcp", "udp", "sctp"}, true, noFiles},
		{[]string{"trace", "--from", ""}, []string{"pod", "node", "external"}, true, noFiles},
		{[]string{"trace", "--mode", ""}, []string{"iptables", "ipvs", "nftables"}, true, noFiles},
		{[]string{"trace", "--dst", ""}, nil, true, noFiles},
		{[]string{"expect", "--mode", ""}, []string{"iptables", "ipvs", "nftables"}, false, noFiles},
		{[]string{"expect", "--family", ""}, []string{"IPv4", "IPv6"}, true, noFiles},
		{[]string{"expect", "--dir", ""}, nil, true, dirs},
		{[]string{"collect", "--dir", ""}, nil, true, dirs},
		{[]string{"analyze", "--profile", ""}, profileNames, true, noFiles},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			got, directive := complete(t, tc.args...)
			if directive != tc.directive {
				t.Errorf("directive %s, want %s", directive, tc.directive)
			}
			if tc.wantAll {
				if strings.Join(got, " ") != strings.Join(tc.want, " ") {
					t.Errorf("got %q, want %q", got, tc.want)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(" "+strings.Join(got, " ")+" ", " "+w+" ") {
					t.Errorf("%q lacks %q", got, w)
				}
			}
		})
	}
}
