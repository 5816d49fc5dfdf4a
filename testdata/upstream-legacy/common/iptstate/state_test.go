package iptstate

import (
	"strings"
	"testing"
)

func TestEnsureRuleOrderAndIdempotence(t *testing.T) {
	s := New()
	for _, c := range []string{"KUBE-FIREWALL", "KUBE-SERVICES"} {
		if _, err := s.EnsureChain("filter", c); err != nil {
			t.Fatal(err)
		}
	}
	// kubelet prepends KUBE-FIREWALL first, kube-proxy its jump later:
	// the later prepend ends up first.
	mustEnsure(t, s, true, "INPUT", "-j KUBE-FIREWALL", false)
	mustEnsure(t, s, true, "INPUT", `-m comment --comment "kubernetes service portals" -j KUBE-SERVICES`, false)
	mustEnsure(t, s, true, "INPUT", "-j KUBE-FIREWALL", true)
	if _, err := s.EnsureRule(false, "filter", "INPUT", "-j KUBE-MISSING"); err == nil {
		t.Error("EnsureRule accepted a jump to a missing chain")
	}
	got := s.Render(nil)
	want := "-A INPUT -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n-A INPUT -j KUBE-FIREWALL\n"
	if !strings.Contains(got, want) {
		t.Errorf("Render:\n%s\nwant it to contain:\n%s", got, want)
	}
}

func mustEnsure(t *testing.T, s *State, prepend bool, chain, rule string, wantExisted bool) {
	t.Helper()
	existed, err := s.EnsureRule(prepend, "filter", chain, rule)
	if err != nil {
		t.Fatal(err)
	}
	if existed != wantExisted {
		t.Errorf("EnsureRule(%q) existed = %v, want %v", rule, existed, wantExisted)
	}
}

func TestRestoreNoflush(t *testing.T) {
	s := New()
	for _, c := range []string{"KUBE-MARK-DROP", "KUBE-POSTROUTING"} {
		if _, err := s.EnsureChain("nat", c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.EnsureRule(false, "nat", "KUBE-MARK-DROP", "-j MARK --or-mark 0x00008000"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EnsureRule(false, "nat", "KUBE-POSTROUTING", "-j OLD"); err != nil {
		t.Fatal(err)
	}
	payload := "*nat\n:KUBE-POSTROUTING - [0:0]\n:KUBE-SVC-X - [0:0]\n-A KUBE-POSTROUTING -j RETURN\n-A KUBE-SVC-X -j KUBE-MARK-DROP\nCOMMIT\n"
	if err := s.Restore([]byte(payload), true); err != nil {
		t.Fatal(err)
	}
	got, err := s.SaveTable("nat")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"-A KUBE-MARK-DROP -j MARK --or-mark 0x00008000\n", // not in the payload: kept
		"-A KUBE-POSTROUTING -j RETURN\n",                  // declared: flushed, rewritten
		":KUBE-SVC-X - [0:0]\n",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("after restore, missing %q in\n%s", want, got)
		}
	}
	if strings.Contains(string(got), "-j OLD") {
		t.Errorf("declared chain was not flushed:\n%s", got)
	}
	// A failing table is not applied.
	bad := "*nat\n:KUBE-SVC-Y - [0:0]\n-A KUBE-SVC-Y -j KUBE-NOPE\nCOMMIT\n"
	if err := s.Restore([]byte(bad), true); err == nil {
		t.Error("Restore accepted a jump to a missing chain")
	}
	if s.ChainExists("nat", "KUBE-SVC-Y") {
		t.Error("a failed restore left its chain behind")
	}
	if err := s.DeleteChain("nat", "KUBE-MARK-DROP"); err == nil {
		t.Error("DeleteChain removed a referenced, non-empty chain")
	}
}

func TestSortByService(t *testing.T) {
	in := []string{
		`-m comment --comment "shop/web:http cluster IP" -j KUBE-SVC-B`,
		`-m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -j KUBE-NODEPORTS`,
		`-m comment --comment "default/kubernetes:https cluster IP" ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ`,
		`-m comment --comment "default/kubernetes:https cluster IP" -j KUBE-SVC-A`,
	}
	got := SortByService(in)
	want := []string{in[2], in[3], in[0], in[1]}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("SortByService:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
