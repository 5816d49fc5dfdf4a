package iptables

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/proxyscan/proxyscan/internal/pastetest"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
	"github.com/proxyscan/proxyscan/parsers/paste"
)

// bundleDumps returns the iptables dumps of the testdata bundles.
func bundleDumps(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(parsetest.Root(t), "testdata", "bundles", "*", "node", "*tables*save*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no bundle dumps: %v", err)
	}
	return files
}

// readPasted reads damaged text as the loader reads a loose file: paste
// damage removed, then leniently.
func readPasted(t *testing.T, name string, data []byte) (*Dump, []parsers.LineNote, *paste.Result) {
	t.Helper()
	if k := paste.Detect(data); k != parsers.KindIPTablesSave {
		t.Fatalf("%s: detected as %q", name, k)
	}
	c := paste.Clean(data, paste.All)
	d, notes, err := ParseLenient(name, c.Data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return d, notes, c
}

// TestLenientDamage applies each kind of paste damage to every dump of the
// testdata bundles and checks that the lenient read gives the model of the
// clean dump, every rule at its line in the damaged file, and notes of the
// damage's reasons only.
func TestLenientDamage(t *testing.T) {
	for _, file := range bundleDumps(t) {
		clean, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Parse("dump", append([]byte(nil), clean...))
		if err != nil {
			t.Fatal(err)
		}
		wantJSON := toJSON(want)
		stripLines(&wantJSON)
		for _, dmg := range pastetest.Damages {
			name := filepath.Base(filepath.Dir(filepath.Dir(file))) + "/" + filepath.Base(file) + "/" + dmg.Name
			t.Run(name, func(t *testing.T) {
				damaged := []byte(dmg.Apply(string(clean)))
				d, notes, c := readPasted(t, "dump", damaged)
				if len(notes) > 0 || d.Partial {
					t.Errorf("lines skipped: %v; partial: %q", parsers.Ranges(notes, true), d.PartialReason)
				}
				got := toJSON(d)
				stripLines(&got)
				if a, b := parsetest.JSON(t, wantJSON), parsetest.JSON(t, got); !bytes.Equal(a, b) {
					t.Errorf("the model differs from the clean dump's:\n%s", parsetest.Diff(a, b))
				}
				lines := strings.Split(string(c.Data), "\n")
				for _, tb := range d.Tables {
					for _, ch := range tb.Chains {
						if ch.Line > 0 && strings.TrimSpace(lines[ch.Line-1]) != ch.Header {
							t.Errorf("chain %s at line %d, which is %q", ch.Name, ch.Line, lines[ch.Line-1])
						}
						for _, r := range ch.Rules {
							if !strings.HasSuffix(strings.TrimSpace(lines[r.Line-1]), r.Raw) {
								t.Errorf("rule at line %d, which is %q, not %q", r.Line, lines[r.Line-1], r.Raw)
							}
						}
					}
				}
				reasons := map[string]bool{}
				for _, n := range c.Notes {
					reasons[n.Reason] = true
				}
				for _, r := range append(append([]string{}, dmg.Skipped...), dmg.Changed...) {
					if !reasons[r] {
						t.Errorf("no line noted %q", r)
					}
					delete(reasons, r)
				}
				for r := range reasons {
					t.Errorf("lines noted %q, which the damage does not do", r)
				}
			})
		}
	}
}

// TestLenientCuts reads the pastes of part of a dump: each is partial and
// says why, and what it holds is read into the right tables.
func TestLenientCuts(t *testing.T) {
	clean, err := os.ReadFile(filepath.Join(parsetest.Root(t), "testdata", "bundles", "iptables-mini", "node", "iptables-save.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cut     string
		partial string   // in PartialReason
		chains  []string // "table chain" that must be read, with rules
		skipped []string // reasons of lines the parser skipped
	}{
		{cut: "cut-short", partial: "cut short: table nat (line 45) has no COMMIT, its last line (142) ends in the middle of a rule",
			chains: []string{"filter KUBE-SERVICES", "nat KUBE-SERVICES"}, skipped: []string{ReasonCutShort}},
		{cut: "grep-svc", partial: "lines without a table header",
			chains: []string{"nat KUBE-SERVICES", "nat KUBE-SVC-67NZLRHBNDSAWJRO", "nat KUBE-EXT-3B5O6DIIKSXDYUHS"}},
		{cut: "no-headers", partial: "lines without a table header",
			chains:  []string{"nat KUBE-SERVICES", "filter KUBE-SERVICES", "nat KUBE-NODEPORTS", "filter KUBE-NODEPORTS", "filter KUBE-FORWARD", "nat OUTPUT", "filter OUTPUT"},
			skipped: []string{ReasonTableNotKnown}},
		// The lines of one table: its built-in chains' -P and the chains
		// no rule uses (KUBE-PROXY-CANARY) are that table's.
		{cut: "iptables-S-nat", partial: "lines without a table header",
			chains: []string{"nat KUBE-SERVICES", "nat PREROUTING", "nat KUBE-NODEPORTS"}},
		{cut: "restore-failed", partial: "rules quoted by a kube-proxy log line",
			chains: []string{"nat KUBE-SEP-WQRDD6LQ3T5ATZZL"}},
	} {
		t.Run(tc.cut, func(t *testing.T) {
			var cut pastetest.Cut
			for _, c := range pastetest.Cuts {
				if c.Name == tc.cut {
					cut = c
				}
			}
			d, notes, _ := readPasted(t, "paste.txt", []byte(cut.Apply(string(clean))))
			if !d.Partial || !strings.Contains(d.PartialReason, tc.partial) {
				t.Errorf("partial %v %q, want a reason with %q", d.Partial, d.PartialReason, tc.partial)
			}
			for _, tc := range tc.chains {
				table, chain, _ := strings.Cut(tc, " ")
				if c := d.Chain(table, chain); c == nil || len(c.Rules) == 0 {
					t.Errorf("no rule of %s read", tc)
				}
			}
			var reasons []string
			for _, n := range notes {
				if len(reasons) == 0 || reasons[len(reasons)-1] != n.Reason {
					reasons = append(reasons, n.Reason)
				}
			}
			sort.Strings(reasons)
			reasons = uniq(reasons)
			if strings.Join(reasons, ",") != strings.Join(tc.skipped, ",") {
				t.Errorf("skipped for %q, want %q: %v", reasons, tc.skipped, parsers.Ranges(notes, true))
			}
		})
	}
}

func uniq(s []string) []string {
	var out []string
	for i, x := range s {
		if i == 0 || s[i-1] != x {
			out = append(out, x)
		}
	}
	return out
}

// TestLenientGolden reads the cases of testdata/parsers/iptables/lenient
// as the loader reads a loose file (paste damage removed, then
// leniently): the dump (want.json, with whether it is partial and why)
// and the lines skipped and changed (want.skipped).
func TestLenientGolden(t *testing.T) {
	parsetest.Golden(t, "parsers/iptables/lenient/*.txtar", func(t *testing.T, name string, a *txtar.Archive) map[string][]byte {
		in := parsetest.Section(a, "input")
		c := paste.Clean(in, paste.All)
		d, notes, err := ParseLenient("paste.txt", c.Data)
		if err != nil {
			return map[string][]byte{"want.err": []byte(err.Error() + "\n")}
		}
		notes = append(c.Notes, notes...)
		var skipped bytes.Buffer
		for _, r := range parsers.Ranges(notes, true) {
			skipped.WriteString(rangeText(r) + "\n")
		}
		for _, r := range parsers.Ranges(notes, false) {
			skipped.WriteString("changed " + rangeText(r) + "\n")
		}
		type lenientDump struct {
			jsonDump
			Partial       bool
			PartialReason string `json:",omitempty"`
		}
		checkRoundTrip(t, name, d)
		return map[string][]byte{
			"want.json":    parsetest.JSON(t, lenientDump{toJSON(d), d.Partial, d.PartialReason}),
			"want.skipped": skipped.Bytes(),
		}
	})
}

func rangeText(r parsers.LineRange) string {
	s := strconv.Itoa(r.From) + "-" + strconv.Itoa(r.To) + " " + r.Reason
	if r.Detail != "" {
		s += ": " + r.Detail
	}
	return s
}

// TestLenientReadsWhatParseReads checks that every golden input Parse
// accepts reads the same leniently, with nothing skipped.
func TestLenientReadsWhatParseReads(t *testing.T) {
	for _, file := range parsetest.Files(t, "parsers/iptables/*.txtar") {
		a, err := txtar.ParseFile(file)
		if err != nil {
			t.Fatal(err)
		}
		in := parsetest.Section(a, "input")
		strict, err := Parse("x", append([]byte(nil), in...))
		if err != nil {
			continue
		}
		lax, notes, err := ParseLenient("x", append([]byte(nil), in...))
		if err != nil || len(notes) > 0 || lax.Partial {
			t.Errorf("%s: %v, %v, partial %q", file, err, notes, lax.PartialReason)
			continue
		}
		if a, b := parsetest.JSON(t, toJSON(strict)), parsetest.JSON(t, toJSON(lax)); !bytes.Equal(a, b) {
			t.Errorf("%s: lenient read differs:\n%s", file, parsetest.Diff(a, b))
		}
	}
}

func TestTableOf(t *testing.T) {
	for _, tc := range []struct {
		chain, target string
		ctstate       bool
		want          string // "" when not known
	}{
		{"KUBE-SVC-ABC", "KUBE-SEP-X", false, "nat"},
		{"KUBE-SEP-ABC", "DNAT", false, "nat"},
		{"KUBE-SVL-ABC", "", false, "nat"},
		{"KUBE-EXT-ABC", "", false, "nat"},
		{"KUBE-FW-ABC", "", false, "nat"},
		{"KUBE-XLB-ABC", "", false, "nat"},
		{"KUBE-MARK-MASQ", "MARK", false, "nat"},
		{"KUBE-POSTROUTING", "MASQUERADE", false, "nat"},
		{"KUBE-FORWARD", "ACCEPT", false, "filter"},
		{"KUBE-FIREWALL", "DROP", false, "filter"},
		{"KUBE-PROXY-FIREWALL", "DROP", false, "filter"},
		{"KUBE-EXTERNAL-SERVICES", "REJECT", false, "filter"},
		{"KUBE-SERVICES", "KUBE-SVC-ABC", false, "nat"},
		{"KUBE-SERVICES", "KUBE-EXT-ABC", false, "nat"},
		{"KUBE-SERVICES", "KUBE-NODEPORTS", false, "nat"},
		{"KUBE-SERVICES", "REJECT", false, "filter"},
		{"KUBE-SERVICES", "DROP", false, "filter"},
		{"KUBE-SERVICES", "", false, ""},
		{"KUBE-NODEPORTS", "ACCEPT", false, "filter"},
		{"KUBE-NODEPORTS", "KUBE-EXT-ABC", false, "nat"},
		{"OUTPUT", "KUBE-SERVICES", true, "filter"},
		{"OUTPUT", "KUBE-SERVICES", false, "nat"},
		{"OUTPUT", "KUBE-FIREWALL", false, "filter"},
		{"PREROUTING", "KUBE-SERVICES", false, "nat"},
		{"KUBE-PROXY-CANARY", "", false, ""},
		{"CNI-HOSTPORT-DNAT", "RETURN", false, ""},
	} {
		got, ok := TableOf(tc.chain, tc.target, tc.ctstate)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("TableOf(%s, %s, %v) = %q, %v; want %q", tc.chain, tc.target, tc.ctstate, got, ok, tc.want)
		}
	}
}

// TestLenientText: words pasted around a dump (a greeting above it, a
// thank-you below) are skipped as text, not rules: the dump is whole.
// Words inside a table, or a rule's part a terminal wrapped onto a line
// of its own, may have held a rule: they are not understood, and the
// dump is partial.
func TestLenientText(t *testing.T) {
	clean, err := os.ReadFile(filepath.Join(parsetest.Root(t), "testdata", "bundles", "iptables-mini", "node", "iptables-save.txt"))
	if err != nil {
		t.Fatal(err)
	}
	dump := string(clean)
	lines := strings.Count(dump, "\n")
	for _, tc := range []struct {
		name    string
		text    string
		partial bool
		skipped []string // "line reason"
	}{
		{"a greeting and thanks", "Hi team, here is the output you asked for:\n\n" + dump + "\nThanks, let me know if you need more!\n", false,
			[]string{"1 " + ReasonText, strconv.Itoa(lines+4) + " " + ReasonText}},
		{"words inside a table", strings.Replace(dump, "*nat\n", "*nat\nsee the rules below\n", 1), true,
			[]string{"? " + ReasonNotUnderstood}},
		{"a rule's end wrapped", "-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m tcp --dport 443 -j KUBE-SVC-NPX46M4PTMTKRN6Y\n" +
			"-A KUBE-SERVICES -d 10.96.0.10/32 -p tcp -m comment --comment \"kube-system/kube-dns:dns-tcp\n" +
			"cluster IP\" -m tcp --dport 53 -j KUBE-SVC-ERIFXISQEP7F7OF4\n", true,
			[]string{"2 " + ReasonTableNotKnown, "3 " + ReasonCutShort}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, notes, err := ParseLenient("paste.txt", []byte(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			if d.Partial != tc.partial {
				t.Errorf("partial %v (%q), want %v", d.Partial, d.PartialReason, tc.partial)
			}
			var got []string
			for _, n := range notes {
				l := strconv.Itoa(n.Line)
				if tc.skipped[0][0] == '?' {
					l = "?"
				}
				got = append(got, l+" "+n.Reason)
			}
			if strings.Join(got, "; ") != strings.Join(tc.skipped, "; ") {
				t.Errorf("skipped %q, want %q", got, tc.skipped)
			}
		})
	}
}

// TestIsText tells words from rules and their parts.
func TestIsText(t *testing.T) {
	for _, tc := range []struct {
		line string
		want bool
	}{
		{"Hi team, here is the output you asked for:", true},
		{"thanks, let me know if you need more", true},
		{"Output of node-a (after the upgrade)", true},
		{"-A KUBE-SERVICES -j KUBE-NODEPORTS", false},
		{"cluster IP\" -m tcp --dport 53 -j KUBE-SVC-ERIFXISQEP7F7OF4", false},
		{"KUBE-SVC-ERIFXISQEP7F7OF4", false},
		{"10.96.0.10/32 tcp dpt:53", false},
		{"fd00::10 tcp", false},
		{"mark match 0x4000/0x4000", false},
	} {
		if got := isText(tc.line); got != tc.want {
			t.Errorf("isText(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
}
