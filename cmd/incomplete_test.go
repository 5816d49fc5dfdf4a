package cmd

import (
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
