package klog

import (
	"strings"
	"testing"
)

// TestJournal reads kube-proxy's log as journalctl and systemctl status
// print it: the journal's prefix on every line, multi-line values over
// several journal lines, and lines systemctl status cut with "…".
func TestJournal(t *testing.T) {
	in := strings.Join([]string{
		"Feb 17 11:12:14 node-a kube-proxy[9234]: I0217 11:12:14.100000    9234 server.go:650] \"Using iptables Proxier\"",
		"Feb 17 11:12:14 node-a kube-proxy[9234]: E0217 11:12:14.123456    9234 proxier.go:1520] \"Failed to execute iptables-restore\" err=<",
		"Feb 17 11:12:14 node-a kube-proxy[9234]: \texit status 2: iptables-restore v1.8.4 (legacy): unknown option \"--xor-mark\"",
		"Feb 17 11:12:14 node-a kube-proxy[9234]: \tError occurred at line: 71",
		"Feb 17 11:12:14 node-a kube-proxy[9234]:  > ipFamily=\"IPv4\"",
		"2026-02-17T11:12:15+0000 node-a kube-proxy[9234]: I0217 11:12:15.000000    9234 proxier.go:800] \"Syncing iptables rules\"",
		"Feb 17 11:12:16 node-a kube-proxy[9234]: E0217 11:12:16.000000    9234 proxier.go:1520] \"Failed to execute iptables-restore\" err=\"exit status 1: iptables-restore: line 71 fai…",
	}, "\n") + "\n"
	l, err := Parse("j.txt", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Entries) != 4 || l.Unrecognized != 0 {
		t.Fatalf("%d entries (%d unrecognized), want 4", len(l.Entries), l.Unrecognized)
	}
	e := l.Entries[1]
	if e.Wrapper != WrapperJournal || e.Pos.Line != 2 || e.EndLine != 5 || e.Truncated {
		t.Errorf("entry %+v", e)
	}
	if v, _ := e.Get("err"); !strings.Contains(v, "--xor-mark") || !strings.HasSuffix(v, "line: 71") {
		t.Errorf("err=%q", v)
	}
	if v, _ := e.Get("ipFamily"); v != "IPv4" {
		t.Errorf("ipFamily=%q", v)
	}
	if p := Match(e); p == nil || p.ID != "iptables-option-unknown" {
		t.Errorf("pattern %v, want iptables-option-unknown", p)
	}
	if !l.Entries[3].Truncated || l.Entries[0].Truncated {
		t.Errorf("truncated: %v %v", l.Entries[3].Truncated, l.Entries[0].Truncated)
	}
	if l.Entries[2].Wrapper != WrapperJournal || l.Entries[2].Message != "Syncing iptables rules" {
		t.Errorf("short-iso entry %+v", l.Entries[2])
	}
}
