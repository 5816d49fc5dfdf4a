package iptables

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/parsers/parsetest"
	"github.com/proxyscan/proxyscan/parsers/paste"
)

// FuzzParse checks that Parse never panics, that every error names the
// file, and that a parsed dump survives Format and Parse unchanged.
func FuzzParse(f *testing.F) {
	parsetest.Seeds(f, "parsers/iptables/*.txtar")
	f.Add([]byte("*nat\n:A - [0:0]\n-A A ! -s 1.2.3.4 -m comment --comment \"x\\\"y\" -j A\nCOMMIT\n"))
	f.Add([]byte("*filter\n-I INPUT 1 -j DROP\n-N X\n-X X\n-F\nCOMMIT\n"))
	// Long options known by the module, protocol or target before them, and not.
	f.Add([]byte("*nat\n:X - [0:0]\n-A X ! -p 6 --dport 80 -m udp --syn -j DNAT --to-destination 10.0.0.1:80 -m comment --comment x\n" +
		"-A X -p tcp --comment x -j RETURN\n-A X --dpor=80 -j MARK --set-mark 1 --timeout 5\nCOMMIT\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse("fuzz.txt", append([]byte(nil), data...))
		if err != nil {
			if !bytes.HasPrefix([]byte(err.Error()), []byte("fuzz.txt")) {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		for _, tb := range d.Tables {
			for _, c := range tb.Chains {
				for _, r := range c.Rules {
					checkTarget(t, r)
				}
			}
			checkMeanings(t, tb)
		}
		checkRoundTrip(t, "fuzz", d)
	})
}

// checkMeanings checks that the typed reading of a table holds every
// rule of its chains, in order, and can be read back.
func checkMeanings(t *testing.T, tb *Table) {
	t.Helper()
	rd := tb.Meanings()
	for _, c := range tb.Chains {
		crd, ms := rd.Chain(c)
		if len(ms) != len(c.Rules) {
			t.Fatalf("%s: %d meanings of %d rules", c.Name, len(ms), len(c.Rules))
		}
		for i := range ms {
			if ms[i].Rule != c.Rules[i] {
				t.Fatalf("line %d: the meaning of line %d", c.Rules[i].Line, ms[i].Rule.Line)
			}
			describe(crd, &ms[i])
		}
	}
}

// checkTarget checks that the target Parse recorded for r is the last
// "-j"/"-g" option of r, as a scan of its options finds it.
func checkTarget(t *testing.T, r *Rule) {
	t.Helper()
	args := r.Args()
	want, goto_, after := "", false, []Arg(nil)
	for i := len(args) - 1; i >= 0; i-- {
		if isTarget(args[i].Name) {
			want, goto_, after = args[i].Value, args[i].Name == "-g" || args[i].Name == "--goto", args[i+1:]
			break
		}
	}
	if r.Target() != want || r.IsGoto() != goto_ || len(r.TargetArgs()) != len(after) {
		t.Fatalf("line %d: target %q goto %v, %d options after it; a scan finds %q %v %d", r.Line, r.Target(), r.IsGoto(), len(r.TargetArgs()), want, goto_, len(after))
	}
}

// TestCarriageReturns: line ends of "\r\n" or more carriage returns are
// line ends, so a dump edited on another system round-trips.
func TestCarriageReturns(t *testing.T) {
	for _, in := range []string{
		"*nat\r\n:A - [0:0]\r\n-A A -j RETURN\r\nCOMMIT\r\n",
		"*nat\n:A - [0:0]\n-A A -j RETURN\r\r\nCOMMIT\n",
		"*nat\n:A - [0:0]\n-A A -j RETURN \r\nCOMMIT\r\r",
	} {
		d, err := Parse("cr.txt", []byte(in))
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		r := d.Tables[0].Chains[0].Rules[0]
		checkTarget(t, r)
		if got := r.Target(); got != "RETURN" {
			t.Errorf("%q: target %q, want RETURN", in, got)
		}
		checkRoundTrip(t, "cr", d)
	}
}

// FuzzParseLenient checks that ParseLenient, after the paste pre-pass as
// the loader runs it, never panics, fails only naming the file, notes
// lines of the input only, reads what Parse reads the same and with
// nothing skipped, and returns dumps that Format writes as a whole dump
// Parse reads back unchanged.
func FuzzParseLenient(f *testing.F) {
	parsetest.Seeds(f, "parsers/iptables/*.txtar")
	parsetest.Seeds(f, "parsers/iptables/lenient/*.txtar")
	f.Add([]byte("$ iptables-save | grep SVC\n:KUBE-SVC-X - [0:0]\n-A KUBE-SERVICES -j KUBE-SVC-X\n-P OUTPUT DROP\n-A OUTPUT -j KUBE-SERVICES\n"))
	f.Add([]byte("*nat\n-A X -j Y\n*filter\n-A KUBE-FORWARD -j ACCEPT\nCOMMIT\n*nat\nCOMMIT\n-A KUBE-SEP-Y -m comment --comment \"a"))
	f.Add([]byte("-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp --comment x --dport 443 -j KUBE-SVC-X\n-A KUBE-SVC-X --probability 0.5 -j KUBE-SEP-Y\n-A KUBE-SEP-Y -p tcp -j DNAT --to-dest"))
	f.Add([]byte(`E0217 11:12:14.000 1 proxier.go:1 "Failed to execute iptables-restore" err="exit status 2" rules=[{"Line":3,"Data":"-A KUBE-SEP-X -m comment --comment \"a\nb\" -j DNAT --to-destination 10.0.0.1:80"}]` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		strict, serr := Parse("fuzz.txt", append([]byte(nil), data...))
		c := paste.Clean(data, paste.All)
		d, notes, err := ParseLenient("fuzz.txt", c.Data)
		if err != nil {
			if !bytes.HasPrefix([]byte(err.Error()), []byte("fuzz.txt")) {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		lines := bytes.Count(data, []byte("\n")) + 1
		for _, n := range notes {
			if n.Line < 1 || n.Line > lines || !n.Skipped {
				t.Fatalf("note %+v of a %d-line input", n, lines)
			}
		}
		if serr == nil && len(c.Notes) == 0 {
			if len(notes) > 0 || d.Partial {
				t.Fatalf("Parse reads the input, ParseLenient skips %v (partial %q)", notes, d.PartialReason)
			}
			if a, b := parsetest.JSON(t, toJSON(strict)), parsetest.JSON(t, toJSON(d)); !bytes.Equal(a, b) {
				t.Fatalf("lenient read differs:\n%s", parsetest.Diff(a, b))
			}
		}
		for _, tb := range d.Tables {
			for _, ch := range tb.Chains {
				for _, r := range ch.Rules {
					checkTarget(t, r)
				}
			}
			checkMeanings(t, tb)
		}
		checkRoundTrip(t, "fuzz", d)
	})
}

// FuzzParseLenientLazy checks that ParseLenientLazy and ParseLazy never
// panic (see checkStrictLazy for the latter), and that ParseLenientLazy fails
// as ParseLenient does, and reads what it reads (the notes, the rules'
// lines, targets and comments before any lazy chain is parsed, then
// their options), unless parsing the lazy chains found a rule the scan
// took otherwise or would note (Dump.LazyFailed), when a caller parses
// the whole dump again.
func FuzzParseLenientLazy(f *testing.F) {
	parsetest.Seeds(f, "parsers/iptables/*.txtar")
	parsetest.Seeds(f, "parsers/iptables/lenient/*.txtar")
	f.Add(lazyDump(true))
	f.Add(lazyDump(true, withRule(7, `-A KUBE-SEP-BBBBBBBBBBBBBBBB -p tcp -m comment --comment "ns/svc:http" -m tcp -j DNAT --to-destination 10.128.0.5:99999`)...))
	f.Add(lazyDump(true, withRule(4, `-A KUBE-SVC-AAAAAAAAAAAAAAAA -m comment --comment "a \"quoted\" one" -j KUBE-SEP-BBBBBBBBBBBBBBBB`)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkStrictLazy(t, data)
		full, fullNotes, fullErr := ParseLenient("fuzz.txt", data)
		lazy, lazyNotes, lazyErr := ParseLenientLazy("fuzz.txt", data, serviceChain)
		if fmt.Sprint(fullErr) != fmt.Sprint(lazyErr) {
			t.Fatalf("error %v, lazily %v", fullErr, lazyErr)
		}
		if fullErr != nil {
			return
		}
		// What the passes over every rule read, before any lazy chain is
		// parsed, then the options, which parse them all.
		light := dumpView(lazy, lightView)
		options := dumpView(lazy, fullView)
		if lazy.LazyFailed() {
			return // the caller parses the whole dump again
		}
		if !reflect.DeepEqual(fullNotes, lazyNotes) {
			t.Fatalf("notes %v, lazily %v, and the lazy chains did not fail", fullNotes, lazyNotes)
		}
		if a := dumpView(full, lightView); !reflect.DeepEqual(a, light) {
			t.Fatalf("the lazy dump reads otherwise, and does not say so:\n%s\nlazily:\n%s", strings.Join(a, "\n"), strings.Join(light, "\n"))
		}
		if a := dumpView(full, fullView); !reflect.DeepEqual(a, options) {
			t.Fatalf("the options of the lazy dump read otherwise, and it does not say so:\n%s\nlazily:\n%s", strings.Join(a, "\n"), strings.Join(options, "\n"))
		}
	})
}

// checkStrictLazy checks that ParseLazy fails as Parse does, or reads
// what it reads (the rules' lines, targets and comments before any lazy
// chain is parsed, then their options), unless parsing the lazy chains
// found a rule Parse refuses or reads otherwise than the scan
// (Dump.LazyFailed).
func checkStrictLazy(t *testing.T, data []byte) {
	t.Helper()
	whole, err := Parse("fuzz.txt", data)
	lazy, lazyErr := ParseLazy("fuzz.txt", data, serviceChain)
	if lazyErr != nil {
		if fmt.Sprint(err) != fmt.Sprint(lazyErr) {
			t.Fatalf("strict: error %v, lazily %v", err, lazyErr)
		}
		return
	}
	light := dumpView(lazy, lightView)
	options := dumpView(lazy, fullView)
	if lazy.LazyFailed() {
		return // the caller parses the whole dump again
	}
	if err != nil {
		t.Fatalf("strict: Parse refuses the dump (%v), the lazy parse reads it and its chains did not fail", err)
	}
	if a := dumpView(whole, lightView); !reflect.DeepEqual(a, light) {
		t.Fatalf("strict: the lazy dump reads otherwise, and does not say so:\n%s\nlazily:\n%s", strings.Join(a, "\n"), strings.Join(light, "\n"))
	}
	if a := dumpView(whole, fullView); !reflect.DeepEqual(a, options) {
		t.Fatalf("strict: the options of the lazy dump read otherwise, and it does not say so:\n%s\nlazily:\n%s", strings.Join(a, "\n"), strings.Join(options, "\n"))
	}
}
