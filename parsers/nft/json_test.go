package nft_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/proxyscan/proxyscan/internal/nftjson"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/nft"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// These tests write JSON with internal/nftjson, the test-only printer of
// `nft -j list ruleset`, which imports this package.

// ignorePos ignores positions.
var ignorePos = cmp.Options{
	cmpopts.IgnoreFields(nft.Ruleset{}, "ItemLines"),
	cmpopts.IgnoreFields(nft.Table{}, "Pos"),
	cmpopts.IgnoreFields(nft.Chain{}, "Where", "Line"),
	cmpopts.IgnoreFields(nft.Set{}, "Pos"),
	cmpopts.IgnoreFields(nft.Element{}, "Where", "Line"),
	nft.CmpElements,
	cmpopts.IgnoreFields(nft.Rule{}, "Where", "Line"),
	cmpopts.IgnoreFields(nft.Object{}, "Pos"),
}

// ctFamily ignores the family of ct address keys, which nft's JSON leaves
// out and the reader restores from ip and ip6 tables only.
var ctFamily = cmpopts.IgnoreFields(nft.Ct{}, "Family")

func FuzzParseJSON(f *testing.F) {
	parsetest.Seeds(f, "parsers/nft/*.txtar")
	for _, tc := range nft.StmtCases() {
		f.Add([]byte(`{"nftables":[{"metainfo":{"json_schema_version":1}},{"table":{"family":"` + tc.Family + `","name":"t","handle":1}},` +
			`{"set":{"family":"` + tc.Family + `","name":"s","table":"t","type":["ipv4_addr","inet_service"],"handle":2,"flags":["interval"],"elem":[{"concat":[{"prefix":{"addr":"10.0.0.0","len":8}},{"range":[80,90]}]}]}},` +
			`{"chain":{"family":"` + tc.Family + `","table":"t","name":"c","handle":1,"type":"filter","hook":"input","prio":-10,"policy":"drop"}},` +
			`{"rule":{"family":"` + tc.Family + `","table":"t","chain":"c","handle":2,"comment":"x","expr":[` + tc.JSON + `]}}]}`))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := nft.ParseJSON("fuzz", data)
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
		lines := bytes.Count(data, []byte("\n")) + 1
		for _, tb := range rs.Tables {
			for _, c := range tb.Chains {
				for _, r := range c.Rules {
					if n := rs.Line(r.Pos()); n < 1 || n > lines {
						t.Fatalf("%s: line %d of a %d-line input", r.Pos(), n, lines)
					}
				}
			}
		}
		again, err := nft.ParseJSON("formatted", nftjson.Format(rs))
		if err != nil {
			t.Fatalf("nftjson.Format output does not parse: %v", err)
		}
		if !cmp.Equal(rs, again, ignorePos, ctFamily) {
			t.Fatalf("ParseJSON(nftjson.Format(x)) != x (-x +reparsed):\n%s", cmp.Diff(rs, again, ignorePos, ctFamily))
		}
	})
}

// TestStmtJSON checks that the JSON printed for the model of each
// statement case's text holds the statements nft -j prints for it.
func TestStmtJSON(t *testing.T) {
	for _, tc := range nft.StmtCases() {
		rs, err := nft.ParseText("rule", []byte("table "+tc.Family+" t {\n\tchain c {\n\t\t"+tc.Text+"\n\t}\n}\n"))
		if err != nil {
			t.Fatalf("%q: %v", tc.Text, err)
		}
		var doc struct {
			Nftables []map[string]struct {
				Expr []any `json:"expr"`
			} `json:"nftables"`
		}
		if err := json.Unmarshal(nftjson.Format(rs), &doc); err != nil {
			t.Fatal(err)
		}
		var want []any
		if err := json.Unmarshal([]byte("["+tc.JSON+"]"), &want); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, doc.Nftables[3]["rule"].Expr); d != "" {
			t.Errorf("%q: JSON statements (-nft +got):\n%s", tc.Text, d)
		}
	}
}

// TestJSONItemLines checks that Ruleset.Line gives the line on which the
// items of a JSON listing start: 1 for all of nft -j's one-line output, their
// own lines in a listing printed one item a line (jq, a pretty printer)
// or after a blanked prompt line.
func TestJSONItemLines(t *testing.T) {
	items := []string{
		`{"table": {"family": "ip", "name": "nat", "handle": 1}}`,
		`{"chain": {"family": "ip", "table": "nat", "name": "KUBE-MARK-MASQ", "handle": 2}}`,
		`{"rule": {"family": "ip", "table": "nat", "chain": "KUBE-MARK-MASQ", "handle": 3, "expr": [{"counter": {"packets": 0, "bytes": 0}}]}}`,
	}
	for _, tc := range []struct {
		name, sep, head string
		want            [3]int
	}{
		{"one line", ", ", "", [3]int{1, 1, 1}},
		{"one item a line", ",\n", "", [3]int{2, 3, 4}},
		{"after a blank line", ", ", "\n", [3]int{2, 2, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.head + `{"nftables": [` + strings.TrimPrefix(tc.sep, ",") + strings.Join(items, tc.sep) + "]}\n"
			rs, err := nft.ParseJSON("in.json", []byte(in))
			if err != nil {
				t.Fatal(err)
			}
			tb := rs.Tables[0]
			c := tb.Chains[0]
			got := [3]int{rs.Line(tb.Pos), rs.Line(c.Pos()), rs.Line(c.Rules[0].Pos())}
			if got != tc.want {
				t.Errorf("lines of table, chain, rule = %v, want %v\n%s", got, tc.want, in)
			}
			if s := c.Rules[0].Pos().String(); s != "in.json:$.nftables[2]" {
				t.Errorf("rule position %s", s)
			}
			if n := rs.Line(parsers.Pos{File: "in.json", Path: "$.nftables[3].rule"}); n != 0 {
				t.Errorf("line of an item not listed: %d", n)
			}
		})
	}
}
