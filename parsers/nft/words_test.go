package nft

import (
	"reflect"
	"strings"
	"testing"
)

// TestWords splits rules as nft lists them into the words of each.
func TestWords(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  bool
	}{
		{in: `meta l4proto tcp tcp dport { 80, 443-445 } counter packets 1 bytes 2 accept`,
			want: []string{"meta", "l4proto", "tcp", "tcp", "dport", "{ 80, 443-445 }", "counter", "packets", "1", "bytes", "2", "accept"}},
		{in: `tcp flags != syn / syn,rst  ct state new,established iifname "cali*"`,
			want: []string{"tcp", "flags", "!=", "syn", "/", "syn,rst", "ct", "state", "new,established", "iifname", `"cali*"`}},
		{in: `counter packets 0 bytes 0 jump X comment "a b # c"`,
			want: []string{"counter", "packets", "0", "bytes", "0", "jump", "X", "comment", `"a b # c"`}},
		{in: `iifname "eth0" # xt_nfacct counter packets 0 bytes 0 goto X`,
			want: []string{"iifname", `"eth0"`, "#", "xt_nfacct", "counter", "packets", "0", "bytes", "0", "goto", "X"}},
		{in: `ip daddr { 10.0.0.1, { 10.0.0.2 } } drop`, want: []string{"ip", "daddr", "{ 10.0.0.1, { 10.0.0.2 } }", "drop"}},
		{in: `log prefix "unterminated`, err: true},
		{in: "", want: nil},
	} {
		got, err := Words(tc.in)
		if (err != nil) != tc.err || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Words(%q) = %q, %v; want %q (error %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// TestRuleWords reads the words of rules of both forms: a text rule's
// line, and a JSON rule's statements, an xt statement nft's JSON names
// giving nft's text for it.
func TestRuleWords(t *testing.T) {
	js := `{"nftables": [{"table": {"family": "ip", "name": "nat", "handle": 1}},
{"chain": {"family": "ip", "table": "nat", "name": "X", "handle": 2}},
{"rule": {"family": "ip", "table": "nat", "chain": "X", "handle": 3, "comment": "c d", "expr": [{"match": {"op": "==", "left": {"payload": {"protocol": "tcp", "field": "dport"}}, "right": {"set": [80, 443]}}}, {"xt": {"type": "match", "name": "comment"}}, {"counter": {"packets": 0, "bytes": 0}}, {"xt": {"type": "target", "name": "DNAT"}}, {"flow": {"op": "add", "flowtable": "@f"}}]}}]}`
	rs, err := ParseJSON("r.json", []byte(js))
	if err != nil {
		t.Fatal(err)
	}
	got, err := RuleWords(rs.Tables[0].Chains[0].Rules[0])
	want := []string{"tcp", "dport", "{ 80, 443 }", "xt", "match", "comment", "counter", "packets", "0", "bytes", "0", "xt", "target", "DNAT",
		"unsupported-json", `{"flow": {"op": "add", "flowtable": "@f"}}`, "comment", `"c d"`}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("JSON rule: %q, %v\nwant %q", got, err, want)
	}
	text := "table ip nat {\n\tchain X {\n\t\ttcp dport { 80, 443 } counter packets 0 bytes 0 accept comment \"c d\"\n\t}\n}\n"
	rs, err = ParseText("r.nft", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	got, err = RuleWords(rs.Tables[0].Chains[0].Rules[0])
	want = []string{"tcp", "dport", "{ 80, 443 }", "counter", "packets", "0", "bytes", "0", "accept", "comment", `"c d"`}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("text rule: %q, %v\nwant %q", got, err, want)
	}
}

// FuzzWords checks that Words never panics and that the words it returns,
// joined by blanks, split into the same words.
func FuzzWords(f *testing.F) {
	f.Add(`meta l4proto tcp tcp dport { 80, 443-445 } counter packets 1 bytes 2 accept comment "a b"`)
	f.Add(`tcp flags != syn / syn,rst iifname "eth0" # xt_nfacct goto X`)
	f.Add(`ip daddr { 10.0.0.1, { 10.0.0.2 } } } ( ; drop`)
	f.Fuzz(func(t *testing.T, s string) {
		w, err := Words(s)
		if err != nil {
			return
		}
		again, err := Words(strings.Join(w, " "))
		if err != nil || !reflect.DeepEqual(w, again) {
			t.Fatalf("Words(%q) = %q, rejoined: %q, %v", s, w, again, err)
		}
	})
}
