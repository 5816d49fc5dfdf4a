package view

import (
	"testing"

	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// TestReadBalance: one pass over a rule's options reads what the
// dispatch asks Find for: whether it checks the affinity entry, and the
// first --seconds, --probability and --mode.
func TestReadBalance(t *testing.T) {
	const dump = `*nat
:KUBE-SVC-X - [0:0]
-A KUBE-SVC-X -m comment --comment "ns/a:p -> 10.0.0.1:80" -m recent --name KUBE-SEP-A --mask 255.255.255.255 --rsource --rcheck --seconds 10800 --reap -j KUBE-SEP-A
-A KUBE-SVC-X -m comment --comment "ns/a:p -> 10.0.0.1:80" -m statistic --mode random --probability 0.33333333349 -j KUBE-SEP-A
-A KUBE-SVC-X -m statistic --mode nth --every 2 --packet 0 -j KUBE-SEP-B
-A KUBE-SVC-X -m statistic --probability 0.5 --mode random -m statistic --probability 0.25 --mode nth -j KUBE-SEP-C
-A KUBE-SVC-X -m comment --comment "a \"quoted\" --probability 0.9" -j KUBE-SEP-D
-A KUBE-SVC-X -m recent ! --rcheck --seconds 5 -j KUBE-SEP-E
-A KUBE-SVC-X -j KUBE-SEP-F
COMMIT
`
	d, err := iptables.Parse("nat.txt", []byte(dump))
	if err != nil {
		t.Fatal(err)
	}
	want := []balance{
		{rcheck: true, seconds: "10800"},
		{probability: "0.33333333349", mode: "random"},
		{mode: "nth"},
		{probability: "0.5", mode: "random"},
		{},
		{rcheck: true, seconds: "5"},
		{},
	}
	rules := d.Chain("nat", "KUBE-SVC-X").Rules
	if len(rules) != len(want) {
		t.Fatalf("%d rules, want %d", len(rules), len(want))
	}
	for i, r := range rules {
		got := readBalance(r)
		if got != want[i] {
			t.Errorf("%s: %+v, want %+v", r.Raw, got, want[i])
		}
		// The same as asking Find for each.
		byFind := balance{rcheck: r.Has("--rcheck"), seconds: r.Value("--seconds"), probability: r.Value("--probability"), mode: r.Value("--mode")}
		if got != byFind {
			t.Errorf("%s: %+v, Find reads %+v", r.Raw, got, byFind)
		}
		for j := range r.NumArgs() {
			if r.ArgName(j) != r.Arg(j).Name {
				t.Errorf("%s: option %d named %q, Arg says %q", r.Raw, j, r.ArgName(j), r.Arg(j).Name)
			}
		}
	}
}
