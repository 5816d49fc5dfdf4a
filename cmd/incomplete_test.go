package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIncompleteInputs checks that trace and expect flag an input that was
// to be read and was not: a warning on stderr naming the file and why, the
// trace's JSON saying its result is based on incomplete inputs, and exit 2
// when the unread file is the one the result needs (the only rule dump
// for a trace of the captured rules, the only Service export for the
// expected rules); complete inputs give none of it.
func TestIncompleteInputs(t *testing.T) {
	mini := testdata(t, "bundles", "iptables-mini")
	binaryDump := changedBundle(t, "iptables-mini", map[string]string{"node/iptables-save.txt": "x\x00y"})
	binaryExport := changedBundle(t, "iptables-mini", map[string]string{"cluster/cluster.yaml": "x\x00y"})
	loose := writeTemp(t, "dump.bin", "*nat\x00\x01\x02")
	trace := []string{"trace", "--dst", "10.96.0.10:53", "--proto", "udp", "-o", "json"}
	const warned = "the result is based on incomplete inputs"
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string // "" : none; "-" : no incompleteInputs
		stderr string // "" : no warning
	}{
		{name: "trace, complete inputs", args: append(trace, mini), stdout: "-"},
		{name: "trace, an unread file besides the dump", args: append(trace, mini, loose),
			stdout: `"incompleteInputs": [`, stderr: "proxyscan: warning: trace: " + loose + " was not read: binary: a NUL byte at offset 4; " + warned},
		{name: "trace, the only rule dump unread", args: append(trace, binaryDump), code: 2,
			stderr: "node/iptables-save.txt: not read (binary: a NUL byte at offset 1 (the bundle layout holds iptables-save here)), and the result of trace rests on it: no other rule dump of node node-a was read"},
		{name: "trace --expected, the rule dump unread", args: append(trace, "--expected", binaryDump),
			stdout: `"based on incomplete inputs: ` + binaryDump + `: node/iptables-save.txt was not read: binary`, stderr: "node/iptables-save.txt was not read: binary: a NUL byte at offset 1"},
		{name: "trace --expected, the only Service export unread", args: append(trace, "--expected", binaryExport), code: 2,
			stderr: "cluster/cluster.yaml: not read (binary: a NUL byte at offset 1 (the bundle layout holds kube-objects here)), and the result of trace rests on it: no other Service export"},
		{name: "trace --compare, the only rule dump unread", args: append(trace, "--compare", binaryDump), code: 2, stderr: "and the result of trace rests on it: no other rule dump"},
		{name: "trace --compare, complete inputs", args: append(trace, "--compare", mini), stdout: "-"},
		{name: "expect, complete inputs", args: []string{"expect", mini}},
		{name: "expect, the rule dump unread", args: []string{"expect", binaryDump},
			stderr: "proxyscan: warning: expect: " + binaryDump + ": node/iptables-save.txt was not read: binary"},
		{name: "expect, the only Service export unread", args: []string{"expect", binaryExport}, code: 2,
			stderr: "cluster/cluster.yaml: not read (binary: a NUL byte at offset 1 (the bundle layout holds kube-objects here)), and the result of expect rests on it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, outputs := testFactory()
			code := Run(f, tc.args)
			stdout, stderr := outputs()
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstderr: %s", code, tc.code, stderr)
			}
			switch tc.stdout {
			case "":
			case "-":
				if strings.Contains(stdout, "incompleteInputs") || strings.Contains(stdout, "incomplete inputs") {
					t.Errorf("complete inputs said incomplete:\n%s", stdout)
				}
			default:
				if !strings.Contains(stdout, tc.stdout) {
					t.Errorf("stdout does not contain %q:\n%s", tc.stdout, stdout)
				}
			}
			if tc.stderr == "" && stderr != "" {
				t.Errorf("stderr of complete inputs: %s", stderr)
			}
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr does not contain %q:\n%s", tc.stderr, stderr)
			}
		})
	}
}

// TestCutExport checks that a kubectl export cut short inside its last
// object (a List that prints kind: first, so that its end is not told by
// a missing kind: line) is reported partial with the line of the cut and
// why, that the run is never green, and that trace says so.
func TestCutExport(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testdata(t, "bundles", "iptables-mini"), "cluster", "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.Replace(string(data), "apiVersion: v1\nitems:\n", "apiVersion: v1\nkind: List\nitems:\n", 1), "\n")
	if !strings.Contains(lines[75], "clusterIP: 10.96.10.40") {
		t.Fatalf("line 76 of the export is %q, not the cart Service's cluster IP", lines[75])
	}
	// The export ends with a newline: the last of lines is "".
	whole := strings.Join(lines[:len(lines)-4], "") // without the List's kind: and metadata:
	cut := strings.Join(lines[:76], "")
	const reason = "cut short after line 76: the last Service (from line 65) lacks status, which every other Service of the export has"
	for _, tc := range []struct {
		name, export string
		args         []string
		want         []string
		code         int
	}{
		{"analyze, whole", whole, []string{"analyze", "-o", "json", "--fail-on", "inconclusive"}, []string{`"verdict": "ok"`}, 0},
		// The Services after the cut may exist: whether their rules are
		// left over is not judged (no warning, a gap), and the coverage
		// says why.
		{"analyze, cut", cut, []string{"analyze", "-o", "json", "--fail-on", "warning"},
			[]string{`"partial": "` + reason + `"`, `"cluster/cluster.yaml is partial: ` + reason + `; the objects after the cut were not checked"`, `"complete": false`,
				`"orphan-rules: not checked whether the rules of Services the exports do not hold are left over, as they may lie after the cut of an export cut short (cluster/cluster.yaml): `,
				`"verdict": "inconclusive"`}, 0},
		// Cut after the last EndpointSlice's ports: key.
		{"analyze, cut on a key", strings.Join(lines[:len(lines)-7], ""), []string{"analyze", "-o", "json", "--fail-on", "inconclusive"},
			[]string{`"partial": "cut short after line 734: the export ends with a key without a value`, `"complete": false`}, 1},
		// SARIF and JUnit say so too: the verdict, and the gaps as
		// notifications of level error or a case failing the run.
		{"analyze -o sarif, cut", cut, []string{"analyze", "-o", "sarif"},
			[]string{`"verdict": "inconclusive"`, `"level": "error"`, `"text": "coverage gap: cluster/cluster.yaml is partial: ` + reason}, 0},
		{"analyze -o junit --fail-on inconclusive, cut", cut, []string{"analyze", "-o", "junit", "--fail-on", "inconclusive"},
			[]string{`<property name="verdict" value="inconclusive">`, `<testcase name="coverage" classname="node-a">`, `type="inconclusive">`, `failures="1"`}, 1},
		{"trace, cut", cut, []string{"trace", "--dst", "10.96.0.10:53", "--proto", "udp", "-o", "json"},
			[]string{`"incompleteInputs": [`, `cluster/cluster.yaml is partial: ` + reason}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := changedBundle(t, "iptables-mini", map[string]string{"cluster/cluster.yaml": tc.export})
			f, outputs := testFactory()
			code := Run(f, append(tc.args, dir))
			stdout, stderr := outputs()
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstderr: %s", code, tc.code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout does not contain %q:\n%s", w, stdout)
				}
			}
		})
	}
}
