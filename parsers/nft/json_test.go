package nft_test

import (
	"encoding/json"
	"errors"
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
	cmpopts.IgnoreFields(nft.Table{}, "Pos"),
	cmpopts.IgnoreFields(nft.Chain{}, "Pos"),
	cmpopts.IgnoreFields(nft.Set{}, "Pos"),
	cmpopts.IgnoreFields(nft.Element{}, "Pos"),
	cmpopts.IgnoreFields(nft.Rule{}, "Pos"),
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
