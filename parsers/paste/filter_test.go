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
