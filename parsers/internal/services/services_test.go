package services

import "testing"

// TestPort maps the names ipvsadm and iptables print for the ports of
// common Services, and nothing else.
func TestPort(t *testing.T) {
	for _, tc := range []struct {
		name string
		port uint16
		ok   bool
	}{
		{"http", 80, true}, {"https", 443, true}, {"domain", 53, true}, {"postgresql", 5432, true},
		{"http-alt", 8080, true}, {"sun-sr-https", 6443, true}, {"mysql", 3306, true},
		{"kube-dns", 0, false}, {"", 0, false}, {"80", 0, false},
	} {
		p, ok := Port(tc.name)
		if p != tc.port || ok != tc.ok {
			t.Errorf("Port(%q) = %d, %v; want %d, %v", tc.name, p, ok, tc.port, tc.ok)
		}
	}
}
