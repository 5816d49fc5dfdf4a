package nft

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/nftables"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// healthyListing returns the nft listing of bundles/nftables-healthy.
func healthyListing(t testing.TB) string {
	data, err := os.ReadFile(filepath.Join(parsetest.Root(t), "testdata", "bundles", "nftables-healthy", "node", "nft-ruleset.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// firstLines returns the first n lines of s, each with its newline.
func firstLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	return strings.Join(lines[:n], "")
}

// lineWith returns the number of the first line of s that holds sub.
func lineWith(t *testing.T, s, sub string) int {
	for i, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return i + 1
		}
	}
	t.Fatalf("no line holds %q", sub)
	return 0
}

// TestParseTextLenient reads the listing of nftables-healthy cut at
// chosen places: what it keeps, why it is partial, and the lines it does
// not read.
func TestParseTextLenient(t *testing.T) {
	full := healthyListing(t)
	svcIPs := lineWith(t, full, "map service-ips {")
	elems := lineWith(t, full, "10.112.88.5 . tcp . 554 : goto") // the second element of service-ips
	rule := lineWith(t, full, "meta l4proto tcp dnat ip to numgen random mod 2 map { 0 : 10.88.1.90 . 8000")
	hairpin := lineWith(t, full, "set hairpin-connections {")
	elemLine := strings.SplitAfter(full, "\n")[elems-1]
	ruleLine := strings.SplitAfter(full, "\n")[rule-1]
	for _, tc := range []struct {
		name    string
		in      string
		partial string // the partial reason, "" for none
		skipped string // the lines not read, "FROM-TO" each
		check   func(t *testing.T, rs *Ruleset)
	}{
		{name: "whole", in: full},
		{name: "whole without its last newline", in: strings.TrimSuffix(full, "\n")},
		{name: "sixty percent", in: firstLines(full, 288), partial: "cut short at line 288: table ip kube-proxy is not closed",
			check: func(t *testing.T, rs *Ruleset) {
				tb := rs.Table(nftables.TableFamilyIPv4, "kube-proxy")
				if len(rs.Tables) != 1 || tb == nil || !tb.Cut || tb.Chain("service-5CNWR4RN-shop/edge-proxy/tcp/https") == nil || tb.Chain("services") != nil {
					t.Errorf("tables %v", rs.Tables)
				}
			}},
		{name: "between the tables", in: firstLines(full, lineWith(t, full, "table ip6 kube-proxy")-1)},
		{name: "in a chain", in: firstLines(full, rule), partial: fmt.Sprintf("cut short at line %d: table ip kube-proxy is not closed (in chain service-A7UCAWG5-ops/status/tcp/http)", rule),
			check: func(t *testing.T, rs *Ruleset) {
				if c := rs.Tables[0].Chain("service-A7UCAWG5-ops/status/tcp/http"); c == nil || len(c.Rules) != 1 {
					t.Errorf("chain %v", c)
				}
			}},
		{name: "in a rule", in: firstLines(full, rule-1) + ruleLine[:40], skipped: fmt.Sprint(rule),
			partial: fmt.Sprintf("cut short at line %d: table ip kube-proxy is not closed (in chain service-A7UCAWG5-ops/status/tcp/http; its last line (%[1]d) ends in the middle and is not read)", rule),
			check: func(t *testing.T, rs *Ruleset) {
				if c := rs.Tables[0].Chain("service-A7UCAWG5-ops/status/tcp/http"); c == nil || len(c.Rules) != 0 {
					t.Errorf("chain %v", c)
				}
			}},
		{name: "a rule that does not read", in: firstLines(full, rule-1) + ruleLine[:len(ruleLine)-20] + "\n", skipped: fmt.Sprint(rule),
			partial: fmt.Sprintf("cut short at line %d: table ip kube-proxy is not closed (in chain service-A7UCAWG5-ops/status/tcp/http; its last line (%[1]d) does not read (unbalanced braces in rule) and is taken as cut in the middle)", rule)},
		{name: "after an element", in: firstLines(full, elems), partial: fmt.Sprintf("cut short at line %d: table ip kube-proxy is not closed (in the elements of map service-ips)", elems),
			check: func(t *testing.T, rs *Ruleset) {
				if s := rs.Tables[0].Set("service-ips"); s == nil || len(s.Elements) != 2 || int(s.Elements[1].Line) != elems {
					t.Errorf("set %+v", s)
				}
			}},
		{name: "in an element", in: firstLines(full, elems-1) + elemLine[:30], skipped: fmt.Sprint(elems),
			partial: fmt.Sprintf("cut short at line %d: table ip kube-proxy is not closed (in the elements of map service-ips; the element cut there is not read)", elems),
			check: func(t *testing.T, rs *Ruleset) {
				if s := rs.Tables[0].Set("service-ips"); s == nil || len(s.Elements) != 1 {
					t.Errorf("set %+v", s)
				}
			}},
		{name: "after an element, before its comma", in: firstLines(full, elems-1) + strings.TrimSuffix(elemLine, ",\n"), skipped: fmt.Sprint(elems),
			partial: fmt.Sprintf("cut short at line %d: table ip kube-proxy is not closed (in the elements of map service-ips; the element cut there is not read)", elems)},
		{name: "in the first element", in: firstLines(full, svcIPs+2) + "\t\telements = { 10.112.88.30 . sctp", skipped: fmt.Sprint(svcIPs + 3),
			partial: fmt.Sprintf("cut short at line %d: table ip kube-proxy is not closed (in the elements of map service-ips; the element cut there is not read)", svcIPs+3),
			check: func(t *testing.T, rs *Ruleset) {
				if s := rs.Tables[0].Set("service-ips"); s == nil || len(s.Elements) != 0 || s.Comment == "" {
					t.Errorf("set %+v", s)
				}
			}},
		{name: "in a map's declaration", in: firstLines(full, svcIPs+1), partial: fmt.Sprintf("cut short at line %d: table ip kube-proxy is not closed (in map service-ips)", svcIPs+1),
			check: func(t *testing.T, rs *Ruleset) {
				if s := rs.Tables[0].Set("service-ips"); s == nil || !s.IsVerdictMap() || len(s.Elements) != 0 {
					t.Errorf("set %+v", s)
				}
			}},
		{name: "before a set's type", in: firstLines(full, hairpin), skipped: fmt.Sprint(hairpin),
			partial: fmt.Sprintf("cut short at line %d: table ip kube-proxy is not closed (in set hairpin-connections; set hairpin-connections is not read: the cut is before its type)", hairpin),
			check: func(t *testing.T, rs *Ruleset) {
				if s := rs.Tables[0].Set("hairpin-connections"); s != nil {
					t.Errorf("set %+v", s)
				}
			}},
		{name: "in a table header", in: "table ip kube-pr", skipped: "1", partial: "cut short at line 1: its last line (1) ends in the middle and is not read"},
		{name: "in a counter", in: "table ip t {\n\tcounter c {\n\t\tpackets 0 bytes 0\n", skipped: "2-3",
			partial: "cut short at line 3: table ip t is not closed (in counter c; counter c is not read)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, notes, err := ParseTextLenient("paste.txt", []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if rs.Partial != tc.partial {
				t.Errorf("partial:\n got %q\nwant %q", rs.Partial, tc.partial)
			}
			var skipped []string
			for _, r := range parsers.Ranges(notes, true) {
				if r.Reason != ReasonCutShort {
					t.Errorf("note %+v", r)
				}
				if r.From == r.To {
					skipped = append(skipped, fmt.Sprint(r.From))
				} else {
					skipped = append(skipped, fmt.Sprintf("%d-%d", r.From, r.To))
				}
			}
			if got := strings.Join(skipped, ","); got != tc.skipped {
				t.Errorf("skipped %q, want %q", got, tc.skipped)
			}
			if tc.check != nil {
				tc.check(t, rs)
			}
			// A strict read keeps its error whenever the listing is cut in
			// a table.
			if _, err := ParseText("paste.txt", []byte(tc.in)); (err == nil) != (tc.partial == "") {
				t.Errorf("strict read: %v", err)
			}
		})
	}
}

// TestParseTextLenientCuts cuts the listings of testdata at every line,
// after it and in its middle: each is read, partial but when the cut is
// between two tables, and holds nothing the whole listing does not: its
// rules and elements are the whole one's, at the same lines. nft's text
// of the result reads back strictly.
func TestParseTextLenientCuts(t *testing.T) {
	root := parsetest.Root(t)
	files := []string{"bundles/nftables-healthy/node/nft-ruleset.txt", "bundles/nftables-v1.29/node/nft-ruleset.txt",
		"upstream/listed/nftables/dualstack/nft-ruleset.txt", "paste/forms/nft-ruleset-iptables-nft.txt"}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(root, "testdata", filepath.FromSlash(f)))
			if err != nil {
				t.Fatal(err)
			}
			full := string(data)
			if i := strings.Index(full, "\ntable "); i >= 0 && !strings.HasPrefix(full, "table ") {
				full = full[i+1:] // past a prompt
			}
			whole, err := ParseText("whole", []byte(full))
			if err != nil {
				t.Fatal(err)
			}
			rules, elems := map[string]bool{}, map[string]bool{}
			walk(whole, func(s string) { rules[s] = true }, func(s string) { elems[s] = true })
			lines := strings.SplitAfter(full, "\n")
			step := 1
			if testing.Short() {
				step = 3
			}
			off := 0
			for i, l := range lines {
				for _, cut := range []int{off + len(l), off + len(l)/2} {
					if cut <= 0 || cut >= len(full) || i%step != 0 {
						continue
					}
					in := full[:cut]
					rs, _, err := ParseTextLenient("cut", []byte(in))
					if err != nil {
						t.Fatalf("cut at line %d, byte %d: %v", i+1, cut, err)
					}
					// Cut after a table's closing brace: whole tables.
					between := strings.HasSuffix("\n"+strings.TrimRight(in, "\n"), "\n}")
					if rs.Partial == "" && !between {
						t.Errorf("cut at line %d, byte %d: not partial", i+1, cut)
					}
					walk(rs, func(s string) {
						if !rules[s] {
							t.Errorf("cut at line %d, byte %d: rule %s not in the whole listing", i+1, cut, s)
						}
					}, func(s string) {
						if !elems[s] {
							t.Errorf("cut at line %d, byte %d: element %s not in the whole listing", i+1, cut, s)
						}
					})
					out := Format(rs)
					if _, err := ParseText("formatted", out); err != nil {
						t.Errorf("cut at line %d, byte %d: the text of what was read does not read: %v", i+1, cut, err)
					}
				}
				off += len(l)
			}
		})
	}
}

// walk calls rule with every rule of rs, and elem with every element,
// each with its table, chain or set and line.
func walk(rs *Ruleset, rule, elem func(string)) {
	for _, t := range rs.Tables {
		for _, c := range t.Chains {
			for _, r := range c.Rules {
				rule(fmt.Sprintf("%s %s %s line %d: %s", FamilyName(t.Family), t.Name, c.Name, r.Pos().Line, r.Raw))
			}
		}
		for _, s := range t.Sets {
			for _, e := range s.Elements {
				elem(fmt.Sprintf("%s %s %s line %d: %s %v %v %s", FamilyName(t.Family), t.Name, s.Name, e.Line, e.Key(), e.Data(), e.Verdict, e.Comment()))
			}
		}
	}
}

// FuzzParseTextLenient checks that ParseTextLenient never panics, fails
// only with an error at a line, reads what ParseText reads the same and
// whole, notes lines of the input only (cut short, or words around the
// listing), and returns a ruleset whose text
// reads back strictly to the same model.
func FuzzParseTextLenient(f *testing.F) {
	parsetest.Seeds(f, "parsers/nft/*.txtar")
	full := healthyListing(f)
	for _, n := range []int{1, 30, 90, 288, 346} {
		f.Add([]byte(firstLines(full, n)))
	}
	f.Add([]byte(full[:len(full)/3]))
	f.Add([]byte("table ip t {\n\tset s {\n\t\ttype ipv4_addr\n\t\telements = { 10.0.0.1, 10.0.0.2,\n\t\t\t     10.0.0."))
	f.Add([]byte("table ip t {\n\tmap m {\n\t\ttype ipv4_addr : verdict\n\t\telements = { 10.0.0.1 comment \"a, b"))
	f.Add([]byte("table ip t {\n\tchain c {\n\t\tip daddr { 10.0.0.1, 10.0.0.2 } accept\n\t}\n}\ntable ip6 u {\n\tcounter c {\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		strict, serr := ParseText("fuzz", data)
		rs, notes, err := ParseTextLenient("fuzz", data)
		if err != nil {
			var pe *parsers.Error
			if !errors.As(err, &pe) || pe.Pos.Line == 0 {
				t.Fatalf("error without a line: %v", err)
			}
			if serr == nil {
				t.Fatalf("ParseText reads the input, ParseTextLenient fails: %v", err)
			}
			return
		}
		lines := bytes.Count(data, []byte("\n")) + 1
		for _, n := range notes {
			if n.Line < 1 || n.Line > lines || !n.Skipped || n.Reason != ReasonCutShort && n.Reason != parsers.ReasonText && n.Reason != reasonNotUnderstood {
				t.Fatalf("note %+v of a %d-line input", n, lines)
			}
		}
		if serr == nil {
			if rs.Partial != "" || len(notes) > 0 {
				t.Fatalf("ParseText reads the input, ParseTextLenient cuts it: %q %v", rs.Partial, notes)
			}
			if !reflect.DeepEqual(strict, rs) {
				t.Fatalf("lenient read differs:\n%s", cmp.Diff(strict, rs, cmp.AllowUnexported(Element{})))
			}
		}
		out := Format(rs)
		again, err := ParseText("formatted", out)
		if err != nil {
			t.Fatalf("Format output does not parse: %v\n%s", err, out)
		}
		if out2 := Format(again); !bytes.Equal(out2, out) {
			t.Fatalf("Format is not stable:\n%s", parsetest.Diff(out, out2))
		}
		strip(rs, true)
		strip(again, true)
		rs.Partial = ""
		for _, tb := range rs.Tables {
			tb.Cut = false
		}
		if !reflect.DeepEqual(rs, again) {
			t.Fatalf("Parse(Format(x)) != x (-x +reparsed):\n%s\nformatted:\n%s", cmp.Diff(rs, again, cmp.AllowUnexported(Element{})), out)
		}
	})
}

// TestParseTextLenientWords: words pasted around a listing (a greeting
// above it, thanks below) are skipped as text, not a rule, and the
// listing is whole; a rule or declaration outside any table is still an
// error, as a line ParseText refuses.
func TestParseTextLenientWords(t *testing.T) {
	full := healthyListing(t)
	lines := strings.Count(full, "\n")
	want, err := ParseText("nft.txt", []byte(full))
	if err != nil {
		t.Fatal(err)
	}
	in := "Hi, here is the nft output from the node:\n\n" + full + "\nThanks!\n"
	got, notes, err := ParseTextLenient("nft.txt", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if got.Partial != "" {
		t.Errorf("partial: %s", got.Partial)
	}
	if len(got.Tables) != len(want.Tables) {
		t.Errorf("%d tables, want %d", len(got.Tables), len(want.Tables))
	}
	var skipped []string
	for _, n := range notes {
		skipped = append(skipped, fmt.Sprintf("%d %s", n.Line, n.Reason))
	}
	if w := []string{"1 " + parsers.ReasonText, fmt.Sprintf("%d %s", lines+4, parsers.ReasonText)}; !reflect.DeepEqual(skipped, w) {
		t.Errorf("skipped %q, want %q", skipped, w)
	}
	// A sentence naming an address is not taken for words, but it is no
	// part of nft's syntax either: skipped as not understood, the listing
	// partial for it, rather than the whole paste refused.
	in = "Hi, the VIP 10.96.0.10:53 is down since 10:30:\n\n" + full
	got, notes, err = ParseTextLenient("nft.txt", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || notes[0].Line != 1 || notes[0].Reason != reasonNotUnderstood || got.Partial != "1 line outside any table not understood and skipped" || len(got.Tables) != len(want.Tables) {
		t.Errorf("a sentence with an address above the listing: notes %v, partial %q, %d tables", notes, got.Partial, len(got.Tables))
	}
	for _, bad := range []string{
		"ip daddr 10.96.0.1 tcp dport 443 jump services\n" + full,
		"add rule ip kube-proxy services counter\n" + full,
	} {
		if _, _, err := ParseTextLenient("nft.txt", []byte(bad)); err == nil {
			t.Errorf("%q above the listing: no error", strings.SplitN(bad, "\n", 2)[0])
		}
	}
}

// TestIsText tells words from nft's rules and declarations.
func TestIsText(t *testing.T) {
	for _, tc := range []struct {
		line string
		want bool
	}{
		{"Hi, here is the nft output from the node:", true},
		{"Thanks, let me know if you need more.", true},
		{"ip daddr 10.96.0.1 tcp dport 443 jump services", false},
		{"table ip kube-proxy {", false},
		{"10.96.0.10 . udp . 53 : goto service-X", false},
		{"fd00::10", false},
		{"}", false},
		{"counter packets 0 bytes 0", false},
	} {
		if got := isText(tc.line); got != tc.want {
			t.Errorf("isText(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
}
