package model

import (
	"testing"

	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// TestChainEvidence: a chain's evidence is the line the input has for it,
// as written: its declaration with its counters, or, undeclared (a grep of
// iptables-save), its first rule.
func TestChainEvidence(t *testing.T) {
	full, err := iptables.Parse("save.txt", []byte("*nat\n:PREROUTING ACCEPT [3:180]\n:KUBE-SERVICES - [0:0]\n-A PREROUTING -j KUBE-SERVICES\n-A KUBE-SERVICES -d 10.96.0.1/32 -j ACCEPT\nCOMMIT\n"))
	if err != nil {
		t.Fatal(err)
	}
	frag, _, err := iptables.ParseLenient("paste.txt", []byte("-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -j KUBE-SVC-A\n-A KUBE-SVC-A -j KUBE-SEP-B\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		c    *iptables.Chain
		file string
		line int
		text string
	}{
		{"declared", full.Chain("nat", "KUBE-SERVICES"), "save.txt", 3, ":KUBE-SERVICES - [0:0]"},
		{"built-in, declared with counters", full.Chain("nat", "PREROUTING"), "save.txt", 2, ":PREROUTING ACCEPT [3:180]"},
		{"undeclared, with rules", frag.Chain("nat", "KUBE-SERVICES"), "paste.txt", 1, "-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -j KUBE-SVC-A"},
	} {
		if tc.c == nil {
			t.Fatalf("%s: no chain", tc.name)
		}
		e := ChainEvidence(tc.c)
		if e.File != tc.file || e.Line != tc.line || e.Text != tc.text {
			t.Errorf("%s: %s:%d %q, want %s:%d %q", tc.name, e.File, e.Line, e.Text, tc.file, tc.line, tc.text)
		}
	}
}
