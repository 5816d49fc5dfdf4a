package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostileBundle writes the orphan-rules scenario with control characters
// in its directory's name and in two rule comments (one the evidence of a
// finding, one of a Service that exists) and returns the bundle directory
// and the original one.
func hostileBundle(t *testing.T) (hostile, clean string) {
	t.Helper()
	clean = scenarioDir(t, "orphan-rules.txtar")
	hostile = filepath.Join(t.TempDir(), "bundle\x1b[31m\r")
	if err := os.CopyFS(hostile, os.DirFS(clean)); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(hostile, "node", "iptables-save.txt")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for _, c := range []string{`"shop/old:http cluster IP"`, `"shop/cart:http has no endpoints"`} {
		if !strings.Contains(s, c) {
			t.Fatalf("the scenario has no comment %s", c)
		}
		s = strings.ReplaceAll(s, c, strings.TrimSuffix(c, `"`)+" \x1b[31mred\r\x1b]0;title\a\"")
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return hostile, clean
}

// TestHostileTextOutput runs the commands that print text, reading
// strictly, on a bundle
// whose rule comments hold "\x1b[31m", "\r" and an OSC sequence, and
// checks that what they print cannot drive a terminal: the characters
// are written out.
func TestHostileTextOutput(t *testing.T) {
	hostile, clean := hostileBundle(t)
	for _, tc := range []struct {
		name string
		args []string
		want string // written out in stdout
	}{
		{"analyze table", []string{"analyze", hostile, "-o", "table"}, `\x1b[31mred\x0d\x1b]0;title\x07`},
		{"analyze markdown", []string{"analyze", hostile, "-o", "markdown"}, `\x1b[31mred\x0d\x1b]0;title\x07`},
		{"analyze --service", []string{"analyze", hostile, "--service", "shop/cart", "-o", "table"}, `\x1b[31mred\x0d`},
		{"trace table", []string{"trace", hostile, "--dst", "10.96.10.99:80", "-o", "table", "-v"}, `\x1b[31mred\x0d`},
		{"trace --compare table", []string{"trace", hostile, "--dst", "10.96.10.40:80", "--compare", "-o", "table", "-v"}, `\x1b[31mred\x0d`},
		{"diff table", []string{"diff", clean, hostile, "-o", "table"}, `bundle\x1b[31m\x0d`},
		{"diff markdown", []string{"diff", clean, hostile, "-o", "markdown"}, `bundle\x1b\[31m\x0d`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, outputs := testFactory()
			// Read strictly: the lenient reading of a loose directory
			// removes colour codes and carriage returns before any
			// renderer sees them.
			code := Run(f, append(tc.args, "--strict"))
			stdout, stderr := outputs()
			if code > 1 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			assertInert(t, "stdout", stdout)
			assertInert(t, "stderr", stderr)
			if tc.want != "" && !strings.Contains(stdout, tc.want) {
				t.Errorf("stdout does not hold %s:\n%s", tc.want, stdout)
			}
		})
	}
}

// TestHostileErrorMessage checks that an error naming a file whose name
// holds control characters prints them written out.
func TestHostileErrorMessage(t *testing.T) {
	p := writeTemp(t, "dump\x1b[31m\r.txt", "*nat\n:PREROUTING ACCEPT [0:0]\n-A KUBE-X -j RETURN\nCOMMIT\n")
	f, outputs := testFactory()
	if code := Run(f, []string{"analyze", "--strict", p}); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	_, stderr := outputs()
	assertInert(t, "stderr", stderr)
	if want := `dump\x1b[31m\x0d.txt:3: rule for chain`; !strings.Contains(stderr, want) {
		t.Errorf("stderr does not hold %s:\n%s", want, stderr)
	}
}

// assertInert fails when s holds a control character other than \n and
// \t, a C1 control or a byte that is not UTF-8.
func assertInert(t *testing.T, name, s string) {
	t.Helper()
	for i, r := range s {
		if r == utf8.RuneError || r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f {
			t.Fatalf("%s holds %q at %d:\n%s", name, r, i, s)
		}
	}
}
