package nft

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

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
		for _, o := range []FormatOptions{{}, {Handles: true}} {
			out := FormatWith(rs, o)
			again, err := ParseText("formatted", out)
			if err != nil {
				t.Fatalf("Format output does not parse: %v\n%s", err, out)
			}
			opts := cmp.Options{ignorePos, ignoreRaw}
			if !o.Handles {
				opts = cmp.Options{ignorePosHandle, ignoreRaw}
			}
			if d := cmp.Diff(rs, again, opts); d != "" {
				t.Fatalf("Parse(Format(x)) != x (-x +reparsed):\n%s\nformatted:\n%s", d, out)
			}
			if out2 := FormatWith(again, o); !bytes.Equal(out, out2) {
				t.Fatalf("Format is not stable:\n%s", parsetest.Diff(out, out2))
			}
		}
	})
}

func FuzzParseJSON(f *testing.F) {
	parsetest.Seeds(f, "parsers/nft/*.txtar")
	for _, tc := range stmtCases {
		f.Add([]byte(`{"nftables":[{"metainfo":{"json_schema_version":1}},{"table":{"family":"` + tc.family + `","name":"t","handle":1}},` +
			`{"set":{"family":"` + tc.family + `","name":"s","table":"t","type":["ipv4_addr","inet_service"],"handle":2,"flags":["interval"],"elem":[{"concat":[{"prefix":{"addr":"10.0.0.0","len":8}},{"range":[80,90]}]}]}},` +
			`{"chain":{"family":"` + tc.family + `","table":"t","name":"c","handle":1,"type":"filter","hook":"input","prio":-10,"policy":"drop"}},` +
			`{"rule":{"family":"` + tc.family + `","table":"t","chain":"c","handle":2,"comment":"x","expr":[` + tc.json + `]}}]}`))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := ParseJSON("fuzz", data)
		if err != nil {
			if rs != nil {
				t.Fatal("result returned with an error")
			}
			var pe *parsers.Error
			if !errors.As(err, &pe) || pe.Pos.Path == "" {
				t.Fatalf("error without a JSON path: %v", err)
			}
			return
		}
		again, err := ParseJSON("formatted", FormatJSON(rs))
		if err != nil {
			t.Fatalf("FormatJSON output does not parse: %v", err)
		}
		if d := cmp.Diff(rs, again, ignorePos, ctFamily); d != "" {
			t.Fatalf("ParseJSON(FormatJSON(x)) != x (-x +reparsed):\n%s", d)
		}
		// Whatever JSON gives must print and read back as text, unless
		// it holds parts known only as JSON or strings nft could not
		// print either.
		out := Format(rs)
		if jsonOnly(rs) {
			return
		}
		again, err = ParseText("formatted", out)
		if err != nil {
			return // e.g. a JSON name with blanks or quotes
		}
		if out2 := Format(again); !bytes.Equal(out, out2) && !hasOddText(out) {
			t.Fatalf("Format(ParseText(Format(json))) differs:\n%s", parsetest.Diff(out, out2))
		}
	})
}

// hasOddText reports text that JSON can carry but nft's text form cannot
// represent faithfully (control characters, quotes in strings).
func hasOddText(b []byte) bool {
	for _, c := range b {
		if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
			return true
		}
	}
	return bytes.Contains(b, []byte(`""`)) || bytes.Count(b, []byte(`"`))%2 != 0
}

// ctFamily ignores the family of ct address keys, which nft's JSON leaves
// out and the reader restores from ip and ip6 tables only.
var ctFamily = cmpopts.IgnoreFields(Ct{}, "Family")
