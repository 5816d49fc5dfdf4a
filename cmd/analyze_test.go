package cmd

import (
	"strings"
	"testing"
)

// TestDefaultOutputNote: without -o, a stdout that is not a terminal gets
// JSON, and a terminal stderr a note saying so; a pipeline (stderr not a
// terminal either) or an explicit -o stays quiet.
func TestDefaultOutputNote(t *testing.T) {
	const note = "writing JSON: stdout is not a terminal; -o table for the table"
	bundle := testdata(t, "bundles", "iptables-mini")
	for _, tc := range []struct {
		name           string
		outTTY, errTTY bool
		args           []string
		json, noted    bool
	}{
		{name: "stderr a terminal", errTTY: true, json: true, noted: true},
		{name: "pipeline", json: true},
		{name: "-o json", errTTY: true, args: []string{"-o", "json"}, json: true},
		{name: "-o table", errTTY: true, args: []string{"-o", "table"}},
		{name: "terminal", outTTY: true, errTTY: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, output := testFactory()
			f.IO.OutTTY, f.IO.ErrTTY = tc.outTTY, tc.errTTY
			if code := Run(f, append([]string{"analyze", bundle}, tc.args...)); code != 0 {
				t.Fatalf("exit %d", code)
			}
			stdout, stderr := output()
			if got := strings.HasPrefix(stdout, "{"); got != tc.json {
				t.Errorf("JSON written: %v, want %v:\n%.200s", got, tc.json, stdout)
			}
			if got := strings.Contains(stderr, note); got != tc.noted {
				t.Errorf("note on stderr: %v, want %v: %q", got, tc.noted, stderr)
			}
			if tc.noted && strings.Count(stderr, "\n") != 1 {
				t.Errorf("the note is not one line: %q", stderr)
			}
		})
	}
}

// TestAnalyzeVerbose: the table names the checks that need inputs not
// given in one line; --verbose lists every skipped check with its reason,
// those that cannot apply to the node included.
func TestAnalyzeVerbose(t *testing.T) {
	bundle := testdata(t, "bundles", "iptables-mini")
	run := func(args ...string) string {
		f, output := testFactory()
		f.IO.Width = 100
		if code := Run(f, append([]string{"analyze", bundle, "-o", "table"}, args...)); code != 0 {
			t.Fatalf("exit %d", code)
		}
		stdout, _ := output()
		return stdout
	}
	plain := run()
	if strings.Contains(plain, "ipvs-scheduler-invalid") || strings.Contains(plain, "node-drift") {
		t.Errorf("checks that cannot apply are listed without --verbose:\n%s", plain)
	}
	if !strings.Contains(plain, "need inputs not given") || strings.Contains(plain, "skipped ") {
		t.Errorf("no one-line summary of the skipped checks:\n%s", plain)
	}
	verbose := run("--verbose")
	for _, want := range []string{"skipped sync-slow, sync-stale: no kube-proxy /metrics page", "not applicable ipvs-scheduler-invalid", "not applicable node-drift"} {
		if !strings.Contains(strings.Join(strings.Fields(verbose), " "), want) {
			t.Errorf("--verbose lacks %q:\n%s", want, verbose)
		}
	}
	for _, line := range strings.Split(verbose, "\n") {
		if len([]rune(line)) > 100 {
			t.Errorf("line wider than 100 columns: %q", line)
		}
	}
}

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
