package klog

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// FuzzParse checks that Parse never panics, returns only input errors, and
// that entries cover the input lines in order with their raw text.
func FuzzParse(f *testing.F) {
	parsetest.Seeds(f, "parsers/klog/*.txtar")
	// The journal's and systemctl status's forms, and nft's own errors.
	f.Add([]byte("Feb 17 11:12:14 node-a kube-proxy[9234]: E0217 11:12:14.123456    9234 proxier.go:1520] \"Failed\" err=<\nFeb 17 11:12:14 node-a kube-proxy[9234]: \tunknown option \"--xor-mark\"\nFeb 17 11:12:14 node-a kube-proxy[9234]:  > ipFamily=\"IPv4\"\nFeb 17 11:12:15 node-a kube-proxy[9234]: I0217 11:12:15.0    9234 a.go:1] \"x\" y=z…\n"))
	f.Add([]byte("/dev/stdin:12:1-8: Error: Could not process rule: Operation not supported\nadd rule ip kube-proxy x\n^^^^^^^^\nnetlink: Error: x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := Parse("log", data)
		if err != nil {
			if !parsers.IsInputError(err) {
				t.Fatalf("not an input error: %v", err)
			}
			return
		}
		prev := 0
		for _, e := range l.Entries {
			if e.Pos.Line <= prev || e.EndLine < e.Pos.Line || e.EndLine > l.Lines {
				t.Fatalf("entry lines %d-%d after %d (of %d)", e.Pos.Line, e.EndLine, prev, l.Lines)
			}
			if strings.Count(e.Raw, "\n") != e.EndLine-e.Pos.Line {
				t.Fatalf("raw text of %d-%d has %d lines", e.Pos.Line, e.EndLine, strings.Count(e.Raw, "\n")+1)
			}
			prev = e.EndLine
			Match(e)
		}
	})
}

// FuzzParseKept checks that ParseKept never panics, fails where Parse
// fails, keeps entries that Parse reads alike (position, lines and text)
// in order, and that what it keeps outlives the input's bytes.
func FuzzParseKept(f *testing.F) {
	parsetest.Seeds(f, "parsers/klog/*.txtar")
	f.Add([]byte("Feb 17 11:12:14 node-a kube-proxy[9234]: E0217 11:12:14.123456    9234 proxier.go:1520] \"Failed to execute iptables-restore\" err=<\nFeb 17 11:12:14 node-a kube-proxy[9234]: \tunknown option \"--xor-mark\"\nFeb 17 11:12:14 node-a kube-proxy[9234]:  > ipFamily=\"IPv4\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		all, errAll := Parse("log", data)
		own := append([]byte(nil), data...)
		kept, err := ParseKept("log", own)
		if (err == nil) != (errAll == nil) {
			t.Fatalf("ParseKept error %v, Parse error %v", err, errAll)
		}
		if err != nil {
			if !parsers.IsInputError(err) {
				t.Fatalf("not an input error: %v", err)
			}
			return
		}
		for i := range own {
			own[i] = 'x' // the kept entries hold copies
		}
		if kept.Lines != all.Lines {
			t.Fatalf("%d lines kept, %d read", kept.Lines, all.Lines)
		}
		j := 0
		for _, e := range kept.Entries {
			for j < len(all.Entries) && all.Entries[j].Pos.Line < e.Pos.Line {
				j++
			}
			if j == len(all.Entries) {
				t.Fatalf("kept entry at line %d that Parse does not read", e.Pos.Line)
			}
			a := all.Entries[j]
			if a.Pos.Line != e.Pos.Line || a.EndLine != e.EndLine || a.Raw != e.Raw || a.Message != e.Message {
				t.Fatalf("kept entry at line %d differs from Parse's: %q, %q", e.Pos.Line, e.Raw, a.Raw)
			}
		}
	})
}

// FuzzParseKeptReader checks that ParseKeptReader, reading through a
// small buffer in reads of any size, parses as ParseKept does and fails
// as it fails.
func FuzzParseKeptReader(f *testing.F) {
	parsetest.Seeds(f, "parsers/klog/*.txtar")
	f.Add([]byte("\xef\xbb\xbf2026-03-02T08:15:31.002091000Z stderr P E0302 08:15:31.002091       1 proxier.go:1388] \"Failed\" err=<\n2026-03-02T08:15:31.002091000Z stderr F \tx\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		want, wantErr := ParseKept("log", append([]byte(nil), data...))
		// A buffer of a few bytes, read in halves: lines cross reads.
		size := 1 + len(data)%17
		got, err := parseKeptReader("log", iotest.HalfReader(bytes.NewReader(data)), size)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Fatalf("ParseKeptReader error %v, ParseKept error %v", err, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("ParseKeptReader's log differs from ParseKept's")
		}
	})
}
