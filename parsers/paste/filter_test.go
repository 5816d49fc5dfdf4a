package paste

import "testing"

func TestLineFilter(t *testing.T) {
	tests := []struct {
		line, want string
	}{
		{`user@node-7:~$ sudo iptables-save | grep -E "KUBE|\*|COMMIT"`, `grep -E "KUBE|\*|COMMIT"`},
		{`[root@node-a ~]# iptables-save -t nat | grep -i svc`, `grep -i svc`},
		{`# iptables-save | head -200`, `head -200`},
		{`$ sudo iptables-save | sudo tee /tmp/x | tail -n 50`, `tail -n 50`},
		{`controlplane $ kubectl exec -n kube-system kube-proxy-x -- iptables-save | grep KUBE-SVC`, `grep KUBE-SVC`},
		{`[root@node-a ~]# iptables-save`, ``},
		{`$ iptables-save | tee dump.txt`, ``},
		{`-A KUBE-SERVICES -m comment --comment "a | grep b" -j KUBE-X`, ``},
		{`iptables-save | grep KUBE`, `grep KUBE`},
		{`grep KUBE iptables.txt`, ``},
	}
	for _, tt := range tests {
		if got := LineFilter(tt.line); got != tt.want {
			t.Errorf("LineFilter(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
}

// TestFilterKeeps: a grep of one fixed pattern keeps the lines that hold
// it; other filters keep lines no one can tell.
func TestFilterKeeps(t *testing.T) {
	const failures = "kubeproxy_sync_proxy_rules_iptables_restore_failures_total"
	for _, tc := range []struct {
		filter, word string
		want         bool
	}{
		{"grep kubeproxy", failures, true},
		{"grep -i SYNC_PROXY_RULES", failures, true},
		{"grep sync_proxy_rules_last", failures, false},
		{"grep 'net.ipv4'", "net.ipv4.vs.conntrack", true},
		{"grep ip_forward", "net.ipv4.vs.conntrack", false},
		{"grep -v kubeproxy", failures, false},
		{"grep -E 'sync|restore'", failures, false},
		{"grep -w kubeproxy", failures, false},
		{"head -20", failures, false},
		{"grep kubeproxy metrics.txt", failures, false},
	} {
		if got := FilterKeeps(tc.filter, tc.word); got != tc.want {
			t.Errorf("FilterKeeps(%q, %q) = %t, want %t", tc.filter, tc.word, got, tc.want)
		}
	}
}
