package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// shapeBundle copies the bundle base of testdata/bundles and adds to its
// dump a shape generated for the test: in iptables-save.txt, rules (and
// chain declarations) at the top of the filter table, the header's backend
// replaced by backend when set; in nft-ruleset.txt (the JSON listing
// removed), a table appended.
func shapeBundle(t *testing.T, base, decls, rules, backend, nftTable string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bundle")
	if err := os.CopyFS(dir, os.DirFS(testdata(t, "bundles", base))); err != nil {
		t.Fatal(err)
	}
	if nftTable != "" {
		if err := os.Remove(filepath.Join(dir, "node", "nft-ruleset.json")); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "node", "nft-ruleset.txt")
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, append(data, nftTable...), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	p := filepath.Join(dir, "node", "iptables-save.txt")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	i := strings.Index(s, "*filter\n")
	j := i + strings.Index(s[i:], "\n-A ") + 1
	s = s[:j] + decls + rules + s[j:]
	if backend != "" {
		s = strings.ReplaceAll(s, "(nf_tables)", "("+backend+")")
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// chainShape returns the declarations and rules of n chained 50% branches
// (op "-g" or "-j") entered from FORWARD and OUTPUT.
func chainShape(n int, op string) (decls, rules string) {
	var d, r strings.Builder
	for i := 0; i <= n; i++ {
		fmt.Fprintf(&d, ":C%d - [0:0]\n", i)
	}
	r.WriteString("-A FORWARD -j C0\n-A OUTPUT -j C0\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&r, "-A C%d -m statistic --mode random --probability 0.50000000000 %s C%d\n-A C%d %s C%d\n", i, op, i+1, i, op, i+1)
	}
	return d.String(), r.String()
}

// nftShape returns a table whose chains pick the next one with a numgen
// verdict map, then jump to it again, n levels deep.
func nftShape(n int) string {
	var b strings.Builder
	b.WriteString("table inet hostile {\n\tchain entry {\n\t\ttype filter hook forward priority filter; policy accept;\n\t\tjump c0\n\t}\n")
	b.WriteString("\tchain out {\n\t\ttype filter hook output priority filter; policy accept;\n\t\tjump c0\n\t}\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "\tchain c%d {\n\t\tnumgen random mod 2 vmap { 0 : jump c%d, 1 : jump c%d }\n\t\tjump c%d\n\t}\n", i, i+1, i+1, i+1)
	}
	fmt.Fprintf(&b, "\tchain c%d {\n\t}\n}\n", n)
	return b.String()
}

// TestHostileShapes runs analyze and trace end to end on rulesets whose
// paths multiply (60 levels) and on rulesets the kernel refuses, and
// checks their exit codes and messages: a finding, or an error naming the
// chain, never a run out of memory or a green verdict for a refused
// ruleset.
func TestHostileShapes(t *testing.T) {
	gd, gr := chainShape(60, "-g")
	jd, jr := chainShape(60, "-j")
	loopDecls := ":CYC-A - [0:0]\n:CYC-B - [0:0]\n"
	loopRules := "-A FORWARD -j CYC-A\n-A CYC-A -j CYC-B\n-A CYC-B -j CYC-A\n"
	bundles := map[string]string{
		"legacy -g":    shapeBundle(t, "iptables-mini", gd, gr, "legacy", ""),
		"legacy -j":    shapeBundle(t, "iptables-mini", jd, jr, "legacy", ""),
		"nf_tables -j": shapeBundle(t, "iptables-mini", jd, jr, "", ""),
		"nft vmap":     shapeBundle(t, "nftables-healthy", "", "", "", nftShape(60)),
		"loop":         shapeBundle(t, "iptables-mini", loopDecls, loopRules, "", ""),
		"missing":      shapeBundle(t, "iptables-mini", "", "-A FORWARD -j NOPE-CHAIN\n", "", ""),
	}
	const evals = "more than 262144 rule evaluations for one packet"
	for _, tc := range []struct {
		bundle string
		args   []string
		code   int
		want   string // in stdout and stderr
	}{
		// Valid for iptables-legacy: the sweep merges the paths and every
		// service port is traced.
		{"legacy -g", []string{"analyze"}, 0, "✓ ok: no findings"},
		{"legacy -g", []string{"trace", "--dst", "10.96.0.1:443"}, 2, evals},
		// Each packet meets 2^60 rules on its way: the paths are cut as
		// loops, and their ends not counted as losses, so the verdict is
		// inconclusive, never ok.
		{"legacy -j", []string{"analyze"}, 0, "note (service-unreachable): 10.96.0.1:443 from pod: a path met rules the tracer does not model"},
		{"legacy -j", []string{"analyze"}, 0, "? inconclusive"},
		{"legacy -j", []string{"analyze", "--fail-on", "inconclusive"}, 1, "reach their endpoints is not checked: a path of theirs met rules the tracer does not model"},
		{"legacy -j", []string{"trace", "--dst", "10.96.0.1:443"}, 2, evals + ": its paths multiply at random or state-dependent rules, the last one met in chain C59 (table filter)"},
		{"nf_tables -j", []string{"analyze"}, 1, "ruleset-invalid  error     jumps nest 61 chains deep from base chain FORWARD"},
		{"nf_tables -j", []string{"trace", "--dst", "10.96.0.1:443"}, 2, evals},
		{"nft vmap", []string{"analyze"}, 1, "jumps nest 61 chains deep from base chain entry"},
		{"nft vmap", []string{"trace", "--dst", "10.96.0.1:443"}, 2, evals},
		{"loop", []string{"analyze"}, 1, "jump loop CYC-A -> CYC-B -> CYC-A, reached from built-in chain FORWARD"},
		{"loop", []string{"trace", "--dst", "10.96.0.1:443"}, 1, "the kernel refuses this ruleset, the paths are not what it would do: node/iptables-save.txt:"},
		{"missing", []string{"analyze"}, 1, "chain FORWARD jumps to chain NOPE-CHAIN, which table filter does not declare"},
		{"missing", []string{"trace", "--dst", "10.96.0.1:443"}, 0, "the kernel refuses this ruleset"},
		{"loop", []string{"diff", testdata(t, "bundles", "iptables-mini")}, 1, "ruleset-invalid"},
	} {
		t.Run(tc.bundle+" "+tc.args[0], func(t *testing.T) {
			f, outputs := testFactory()
			args := append(append([]string{tc.args[0]}, tc.args[1:]...), bundles[tc.bundle], "-o", "table")
			code := Run(f, args)
			stdout, stderr := outputs()
			both := strings.Join(strings.Fields(stdout+stderr), " ")
			if code != tc.code || !strings.Contains(both, strings.Join(strings.Fields(tc.want), " ")) {
				t.Errorf("%v: exit %d, want %d with %q:\n%s\n%s", tc.args, code, tc.code, tc.want, stdout, stderr)
			}
		})
	}
}
