package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/trace"
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
	for _, tc := range []struct {
		bundle string
		args   []string
		code   int
		want   string // in stdout and stderr
	}{
		// Valid for iptables-legacy: the sweep merges the paths and every
		// service port is traced.
		{"legacy -g", []string{"analyze"}, 0, "✓ ok: no findings"},
		// trace merges the paths that reach the same state: one outcome.
		{"legacy -g", []string{"trace", "--dst", "10.96.0.1:443"}, 0, "paths that reached the same state were merged"},
		// Each packet meets 2^60 rules on its way: the paths are cut as
		// loops, and their ends not counted as losses, so the verdict is
		// inconclusive, never ok.
		{"legacy -j", []string{"analyze"}, 0, "note (service-unreachable): 10.96.0.1:443 from pod: a path met rules the tracer does not model"},
		{"legacy -j", []string{"analyze"}, 0, "? inconclusive"},
		{"legacy -j", []string{"analyze", "--fail-on", "inconclusive"}, 1, "reach their endpoints is not checked: a path of theirs met rules the tracer does not model"},
		{"legacy -j", []string{"trace", "--dst", "10.96.0.1:443"}, 0, "more than 10000 rules on one path: the walk was cut (a loop?)"},
		{"nf_tables -j", []string{"analyze"}, 1, "ruleset-invalid  error     jumps nest 61 chains deep from base chain FORWARD"},
		{"nf_tables -j", []string{"trace", "--dst", "10.96.0.1:443"}, 0, "the kernel refuses this ruleset"},
		{"nft vmap", []string{"analyze"}, 1, "jumps nest 61 chains deep from base chain entry"},
		{"nft vmap", []string{"trace", "--dst", "10.96.0.1:443"}, 1, "more than 16 nested jumps"},
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

// TestTraceShapesLinear runs trace end to end on the shapes whose paths
// multiply, at 20, 40 and 60 levels: the paths that reach the same state
// are merged, so the rules evaluated (trace.LastWork) grow linearly with
// the levels and the outcomes are few and right: through -g chains, the
// Service's two endpoints half each; through -j chains, the paths cut at
// 10,000 rules as loops, the others split alike between the endpoints;
// through verdict maps nested deeper than the kernel's jump stack, the
// DNAT to either endpoint then a DROP there.
func TestTraceShapesLinear(t *testing.T) {
	type want struct {
		code  int
		check func(t *testing.T, paths []trace.Path)
	}
	split := func(t *testing.T, paths []trace.Path, v trace.Verdict, eps []string, total float64) {
		t.Helper()
		got := map[string]float64{}
		for _, p := range paths {
			if p.Verdict == v {
				got[p.Destination] += p.Probability
			}
		}
		for _, ep := range eps {
			if d := got[ep] - total/float64(len(eps)); d > 1e-9*total || d < -1e-9*total || got[ep] == 0 {
				t.Errorf("%s to %s with probability %v, want %v (paths %+v)", v, ep, got[ep], total/float64(len(eps)), got)
			}
		}
	}
	front := []string{"10.244.1.6:8080", "10.244.2.6:8080"}
	shapes := []struct {
		name string
		dir  func(n int) string
		dst  string
		want want
	}{
		{"iptables -g", func(n int) string {
			d, r := chainShape(n, "-g")
			return shapeBundle(t, "iptables-mini", d, r, "legacy", "")
		}, "10.96.10.20:80", want{0, func(t *testing.T, paths []trace.Path) {
			if len(paths) != 2 || !paths[0].Merged {
				t.Errorf("%d paths (merged %v), want the two endpoints' merged", len(paths), len(paths) > 0 && paths[0].Merged)
			}
			split(t, paths, trace.VerdictDNAT, front, 1)
		}}},
		{"iptables -j", func(n int) string {
			d, r := chainShape(n, "-j")
			return shapeBundle(t, "iptables-mini", d, r, "legacy", "")
		}, "10.96.10.20:80", want{0, func(t *testing.T, paths []trace.Path) {
			cut := 0.0
			for _, p := range paths {
				if p.Verdict == trace.VerdictDrop && strings.Contains(strings.Join(p.Warnings, " "), "more than 10000 rules on one path") {
					cut += p.Probability
				}
			}
			if cut < 0.9 || cut >= 1 || len(paths) > 4 {
				t.Errorf("%d paths, %v of them cut as loops, want most", len(paths), cut)
			}
			split(t, paths, trace.VerdictDNAT, front, 1-cut)
		}}},
		{"nft vmap", func(n int) string {
			return shapeBundle(t, "nftables-healthy", "", "", "", nftShape(n))
		}, "10.112.44.7:80", want{1, func(t *testing.T, paths []trace.Path) {
			for _, p := range paths {
				if p.Verdict != trace.VerdictDrop || !strings.Contains(strings.Join(p.Warnings, " "), "more than 16 nested jumps") {
					t.Errorf("path %s %s (warnings %q), want a DROP at the kernel's jump depth", p.Verdict, p.Destination, p.Warnings)
				}
			}
			split(t, paths, trace.VerdictDrop, []string{"10.88.2.14:8080", "10.88.3.14:8080"}, 1)
		}}},
	}
	for _, sh := range shapes {
		work := map[int]int{}
		for _, n := range []int{20, 40, 60} {
			f, outputs := testFactory()
			code := Run(f, []string{"trace", sh.dir(n), "--dst", sh.dst, "-o", "json"})
			work[n] = trace.LastWork()
			stdout, stderr := outputs()
			var res trace.Result
			if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != sh.want.code {
				t.Fatalf("%s %d levels: exit %d, want %d (%v):\n%s", sh.name, n, code, sh.want.code, err, stderr)
			}
			t.Run(fmt.Sprintf("%s %d", sh.name, n), func(t *testing.T) { sh.want.check(t, res.Paths) })
		}
		t.Logf("%s: rules evaluated at 20, 40, 60 levels: %d, %d, %d", sh.name, work[20], work[40], work[60])
		if work[60] > 4*work[20] || work[60] > trace.DefaultMaxWork/8 {
			t.Errorf("%s: %d rules evaluated at 60 levels, %d at 20: not linear", sh.name, work[60], work[20])
		}
	}
}
