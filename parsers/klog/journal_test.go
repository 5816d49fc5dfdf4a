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

// TestIdentifiers reads the programs the journal's prefixes name, once
// each, and counts the entries without a prefix.
func TestIdentifiers(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string
		ids  []string
		bare int
	}{
		{"kubelet", []string{
			"Apr 14 09:29:01 node-a kubelet[812]: I0414 09:29:01.101200     812 kubelet.go:2461] \"SyncLoop (PLEG): event for pod\"",
			"2026-04-14T09:29:21+0000 node-a kubelet[812]: E0414 09:29:21.120458     812 pod_workers.go:1298] \"Error syncing pod, skipping\"",
		}, []string{"kubelet"}, 0},
		{"two programs", []string{
			"Apr 14 09:29:01 node-a kube-proxy[9234]: I0414 09:29:01.101200    9234 server.go:650] \"Using iptables Proxier\"",
			"Apr 14 09:29:02 node-a kubelet[812]: I0414 09:29:02.101200     812 kubelet.go:2461] \"SyncLoop (PLEG): event for pod\"",
			"Apr 14 09:29:03 node-a kube-proxy[9234]: I0414 09:29:03.101200    9234 proxier.go:800] \"Syncing iptables rules\"",
		}, []string{"kube-proxy", "kubelet"}, 0},
		{"no journal", []string{
			"I0414 09:29:01.101200       1 server.go:650] \"Using iptables Proxier\"",
		}, nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Parse("j.txt", []byte(strings.Join(tc.in, "\n")+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			ids, bare := l.Identifiers()
			if strings.Join(ids, ",") != strings.Join(tc.ids, ",") || bare != tc.bare {
				t.Errorf("identifiers %q, %d bare; want %q, %d", ids, bare, tc.ids, tc.bare)
			}
		})
	}
}
