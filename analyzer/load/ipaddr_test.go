package load

import "testing"

// TestIPAddrCommand reads the ip addr commands of prompt lines: what they
// select, and the family they keep.
func TestIPAddrCommand(t *testing.T) {
	for _, tc := range []struct {
		line, cmd, sel, family string
		ok                     bool
	}{
		{"root@worker-1:~# ip addr show eth0", "ip addr show eth0", "interface eth0", "", true},
		{"$ sudo ip a s dev kube-ipvs0", "ip a s dev kube-ipvs0", "interface kube-ipvs0", "", true},
		{"# ip addr", "ip addr", "", "", true},
		{"# ip address list", "ip address list", "", "", true},
		{"# ip -4 a", "ip -4 a", "", "inet", true},
		{"# ip -f inet6 addr show", "ip -f inet6 addr show", "", "inet6", true},
		{"# /sbin/ip addr show up scope global", "/sbin/ip addr show up scope global", "what `up scope global` selects", "", true},
		{"# ip addr | grep inet", "ip addr", "", "", true},
		{"# ip addr show eth0 > out.txt", "ip addr show eth0", "interface eth0", "", true},
		{"# ip addr add 10.0.0.1/24 dev eth0", "", "", "", false},
		{"# ip route", "", "", "", false},
		{"# iptables-save", "", "", "", false},
	} {
		cmd, sel, fam, ok := ipAddrCommand(tc.line)
		if cmd != tc.cmd || sel != tc.sel || fam != tc.family || ok != tc.ok {
			t.Errorf("%q: %q %q %q %v, want %q %q %q %v", tc.line, cmd, sel, fam, ok, tc.cmd, tc.sel, tc.family, tc.ok)
		}
	}
}
