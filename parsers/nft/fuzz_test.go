package nft

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

func FuzzParseText(f *testing.F) {
	parsetest.Seeds(f, "parsers/nft/*.txtar")
	for _, tc := range stmtCases {
		f.Add([]byte("table " + tc.family + " t {\n\tchain c {\n\t\t" + tc.text + "\n\t}\n}\n"))
	}
	f.Add([]byte("table ip t {\n\tchain c {\n\t\tip saddr . tcp dport { 10.0.0.1 . 80, 10.0.0.2 . 443 } tcp flags syn / syn,ack accept\n\t}\n}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := ParseText("fuzz", data)
		if err != nil {
			if rs != nil {
				t.Fatal("result returned with an error")
			}
			var pe *parsers.Error
			if !errors.As(err, &pe) || pe.Pos.Line == 0 {
				t.Fatalf("error without a line: %v", err)
			}
			return
		}
		// With handles first: the model must come back whole (but for
		// positions and raw text); then without, where handles go.
		for _, o := range []FormatOptions{{Handles: true}, {}} {
			out := FormatWith(rs, o)
			again, err := ParseText("formatted", out)
			if err != nil {
				t.Fatalf("Format output does not parse: %v\n%s", err, out)
			}
			if out2 := FormatWith(again, o); !bytes.Equal(out, out2) {
				t.Fatalf("Format is not stable:\n%s", parsetest.Diff(out, out2))
			}
			strip(rs, !o.Handles)
			strip(again, !o.Handles)
			if !reflect.DeepEqual(rs, again) {
				t.Fatalf("Parse(Format(x)) != x (-x +reparsed):\n%s\nformatted:\n%s", cmp.Diff(rs, again, cmp.AllowUnexported(Element{})), out)
			}
		}
	})
}

// strip clears in place what a round trip through text does not keep:
// positions, raw rule text and (with handles set) handles.
func strip(rs *Ruleset, handles bool) {
	for _, t := range rs.Tables {
		t.Pos = parsers.Pos{}
		if handles {
			t.Handle = 0
		}
		for _, o := range t.Objects {
			o.Pos = parsers.Pos{}
			if handles {
				o.Handle = 0
			}
		}
		for _, s := range t.Sets {
			s.Pos = parsers.Pos{}
			if handles {
				s.Handle = 0
			}
			for i := range s.Elements {
				s.Elements[i].Where, s.Elements[i].Line = nil, 0
			}
		}
		for _, c := range t.Chains {
			c.Where, c.Line = nil, 0
			if handles {
				c.Handle = 0
			}
			for _, r := range c.Rules {
				r.Where, r.Line, r.Raw = nil, 0, ""
				if handles {
					r.Handle = 0
				}
			}
		}
	}
}
