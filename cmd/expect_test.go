package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/internal/netnstest"
)

func TestExpectFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want ExpectOptions
	}{
		{[]string{"expect", "a", "b"}, ExpectOptions{Paths: []string{"a", "b"}}},
		{[]string{"expect", "a", "--mode", "iptables", "--version", "1.23", "--family", "IPv6", "--node", "n1", "--dir", "out"},
			ExpectOptions{Paths: []string{"a"}, Mode: "iptables", Version: "1.23", Family: "IPv6", Node: "n1", Dir: "out"}},
	} {
		f, _ := testFactory()
		var got *ExpectOptions
		root := NewRootCmd(f)
		root.RemoveCommand(root.Commands()...)
		root.AddCommand(NewCmdExpect(f, func(o *ExpectOptions) error { got = o; return nil }))
		root.SetArgs(tc.args)
		if err := root.Execute(); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		got.IO = nil
		if got.Mode != tc.want.Mode || got.Version != tc.want.Version || got.Family != tc.want.Family ||
			got.Node != tc.want.Node || got.Dir != tc.want.Dir || strings.Join(got.Paths, " ") != strings.Join(tc.want.Paths, " ") {
			t.Errorf("%v: got %+v, want %+v", tc.args, *got, tc.want)
		}
	}
}

func TestExpectErrors(t *testing.T) {
	mini := testdata(t, "bundles", "iptables-mini")
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"expect"}, "expect needs at least one PATH"},
		{[]string{"expect", mini, "--mode", "userspace"}, `unknown --mode "userspace"`},
		{[]string{"expect", mini, "--version", "1.19"}, `invalid --version "1.19"`},
		{[]string{"expect", mini, "--version", "two"}, `invalid --version "two"`},
		{[]string{"expect", mini, "--family", "IPv5"}, `invalid --family "IPv5"`},
		{[]string{"expect", "/nonexistent/bundle.tgz"}, "/nonexistent/bundle.tgz"},
	} {
		f, stdio := testFactory()
		if code := Run(f, tc.args); code != 2 {
			t.Errorf("%v: exit %d, want 2", tc.args, code)
		}
		if _, errOut := stdio(); !strings.Contains(errOut, tc.stderr) {
			t.Errorf("%v: stderr %q does not contain %q", tc.args, errOut, tc.stderr)
		}
	}
}

// TestExpectMiniBundle checks that expect prints, for the mini bundle's
// inputs, the iptables-save output captured from the real kube-proxy.
func TestExpectMiniBundle(t *testing.T) {
	dir := testdata(t, "bundles", "iptables-mini")
	f, stdio := testFactory()
	if code := Run(f, []string{"expect", dir}); code != 0 {
		_, errOut := stdio()
		t.Fatalf("exit %d: %s", code, errOut)
	}
	out, _ := stdio()
	want, err := os.ReadFile(filepath.Join(dir, "node", "iptables-save.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := stripComments(out), stripComments(string(want)); got != want {
		t.Errorf("expect output differs from the captured iptables-save:\n%s", lineDiff(want, got))
	}
	if !strings.HasPrefix(out, "# proxyscan expect: iptables-save.txt, kube-proxy 1.37 iptables mode, IPv4, node") {
		t.Errorf("missing header comment: %q", strings.SplitN(out, "\n", 2)[0])
	}
}

func stripComments(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "#") && l != "" {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, c string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			c = g[i]
		}
		if a != c {
			b.WriteString("- " + a + "\n+ " + c + "\n")
		}
	}
	return b.String()
}

// expectScenarios lists every input directory expect is tested on: the
// upstream conformance scenarios, the proxier's own, and the bundles.
func expectScenarios(t *testing.T) []string {
	var out []string
	for _, root := range []string{testdata(t, "upstream", "scenarios"), testdata(t, "proxier", "scenarios")} {
		ents, err := os.ReadDir(root)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if e.IsDir() {
				out = append(out, filepath.Join(root, e.Name()))
			}
		}
	}
	return append(out, testdata(t, "bundles", "iptables-mini"), testdata(t, "bundles", "iptables-healthy"))
}

// TestExpectLoadsWithIPTablesRestore writes expect's files for every
// scenario and checks that the real iptables-restore (ip6tables-restore
// for IPv6) accepts each, in a scratch network namespace.
func TestExpectLoadsWithIPTablesRestore(t *testing.T) {
	netnstest.RequireRoot(t)
	netnstest.RequireTools(t, "iptables-restore", "ip6tables-restore", "nfacct")
	ns := netnstest.New(t)
	for _, c := range []string{"ct_state_invalid_dropped_pkts", "localhost_nps_accepted_pkts"} {
		ns.Run(nil, "nfacct", "add", c)
	}
	files := 0
	for _, dir := range expectScenarios(t) {
		for _, version := range []string{"", "1.20", "1.23", "1.24", "1.27"} {
			out := t.TempDir()
			f, stdio := testFactory()
			args := []string{"expect", dir, "--dir", out}
			if version != "" {
				args = append(args, "--version", version)
			}
			if code := Run(f, args); code != 0 {
				_, errOut := stdio()
				t.Fatalf("%v: exit %d: %s", args, code, errOut)
			}
			for name, tool := range map[string]string{"iptables-save.txt": "iptables-restore", "ip6tables-save.txt": "ip6tables-restore"} {
				data, err := os.ReadFile(filepath.Join(out, name))
				if os.IsNotExist(err) {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if _, err := ns.Try(data, tool, "--test"); err != nil {
					t.Errorf("%s (version %q): %s --test rejects %s: %v", filepath.Base(dir), version, tool, name, err)
				}
				if !bytes.Contains(data, []byte("*nat\n")) {
					t.Errorf("%s: %s has no nat table", filepath.Base(dir), name)
				}
				files++
			}
		}
	}
	t.Logf("%d files loaded", files)
}

// TestAnalyzeService checks analyze --service: a clean comparison, one
// with the differences of a broken scenario, and the usage errors.
func TestAnalyzeService(t *testing.T) {
	mini := testdata(t, "bundles", "iptables-mini")
	for _, tc := range []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string
	}{
		{name: "clean", args: []string{"analyze", mini, "--service", "shop/front", "-o", "table"}, code: 0,
			stdout: "shop/front on node node-a: kube-proxy 1.37 iptables mode, 20 expected rules; the captured data plane matches"},
		{name: "json", args: []string{"analyze", mini, "--service", "shop/front:web", "-o", "json"}, code: 0, stdout: `"differences": []`},
		{name: "stale endpoint", args: []string{"analyze", scenarioDir(t, "endpoint-stale.txtar"), "--service", "shop/web", "-o", "table"}, code: 1,
			stdout: "missing-rule"},
		{name: "stale endpoint, never fail", args: []string{"analyze", scenarioDir(t, "endpoint-stale.txtar"), "--service", "shop/web", "--fail-on", "never"}, code: 0,
			stdout: `"kind": "extra-rule"`},
		{name: "unknown service", args: []string{"analyze", mini, "--service", "shop/nope"}, code: 2, stderr: "no Service port shop/nope in the inputs"},
		{name: "bad name", args: []string{"analyze", mini, "--service", "nope"}, code: 2, stderr: `invalid --service "nope"`},
		{name: "bad format", args: []string{"analyze", mini, "--service", "shop/web", "-o", "sarif"}, code: 2, stderr: "--service prints table or json output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, stdio := testFactory()
			code := Run(f, tc.args)
			out, errOut := stdio()
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr %s", code, tc.code, errOut)
			}
			if !strings.Contains(out, tc.stdout) {
				t.Errorf("stdout does not contain %q:\n%s", tc.stdout, out)
			}
			if !strings.Contains(errOut, tc.stderr) {
				t.Errorf("stderr does not contain %q:\n%s", tc.stderr, errOut)
			}
		})
	}
}

// TestExpectWarnsAssumed checks that expect says on stderr what its rules
// rest on that the inputs do not tell (no Service, the mode or the version
// assumed), and says nothing when the inputs tell all three.
func TestExpectWarnsAssumed(t *testing.T) {
	only := func(parts ...string) string {
		dir := t.TempDir()
		b, err := os.ReadFile(testdata(t, append([]string{"bundles", "iptables-mini"}, parts...)...))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, parts[len(parts)-1]), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	dumpOnly, exportOnly := only("node", "iptables-save.txt"), only("cluster", "cluster.yaml")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"whole bundle", []string{testdata(t, "bundles", "iptables-mini")}, nil},
		{"dump only", []string{dumpOnly}, []string{
			"no Service in the inputs, so the rules printed hold none",
			"kube-proxy 1.37 (assumed: newest supported); add kube-proxy/version.txt or use --version",
		}},
		{"export only", []string{exportOnly}, []string{
			"proxy mode iptables assumed (kube-proxy's default); add the kube-proxy configuration or use --mode",
			"kube-proxy 1.37 (assumed: newest supported); add kube-proxy/version.txt or use --version",
		}},
		{"dump only, mode and version given", []string{dumpOnly, "--mode", "iptables", "--version", "1.30"}, []string{
			"no Service in the inputs, so the rules printed hold none",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, stdio := testFactory()
			if code := Run(f, append([]string{"expect"}, tc.args...)); code != 0 {
				_, errOut := stdio()
				t.Fatalf("exit %d: %s", code, errOut)
			}
			_, errOut := stdio()
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			if errOut == "" {
				lines = nil
			}
			if len(lines) != len(tc.want) {
				t.Fatalf("stderr has %d lines, want %d:\n%s", len(lines), len(tc.want), errOut)
			}
			for i, w := range tc.want {
				if !strings.Contains(lines[i], w) || !strings.HasPrefix(lines[i], "proxyscan: warning: expect: node ") {
					t.Errorf("stderr line %d: %q, want one with %q", i+1, lines[i], w)
				}
			}
		})
	}
}
