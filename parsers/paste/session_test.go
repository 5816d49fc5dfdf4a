package paste

import (
	"fmt"
	"strings"
	"testing"
)

func TestSessions(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string // "from-to command"
	}{
		{
			name: "two commands under a greeting",
			in:   "Hi, here is what we see:\n\n$ sudo ipvsadm -Ln\nIP Virtual Server version 1.2.1 (size=4096)\nTCP  10.96.0.1:443 rr\n\n[root@worker-7 ~]# kubectl -n kube-system get cm kube-proxy -o yaml\napiVersion: v1\nkind: ConfigMap\n",
			want: []string{"1-6 sudo ipvsadm -Ln", "7-9 kubectl -n kube-system get cm kube-proxy -o yaml"},
		},
		{
			name: "prompts of several forms and a command alone",
			in:   "user@host:~$ iptables-save\n*nat\nCOMMIT\ncontrolplane $ nft list ruleset\ntable ip kube-proxy {\n}\nPS C:\\Users\\me> kubectl get svc -A -o yaml\nitems: []\nipvsadm -Ln\nTCP  10.96.0.1:443 rr",
			want: []string{"1-3 iptables-save", "4-6 nft list ruleset", "7-8 kubectl get svc -A -o yaml", "9-10 ipvsadm -Ln"},
		},
		{
			name: "one command",
			in:   "[root@node ~]# iptables-save\n*nat\nCOMMIT\n",
		},
		{
			name: "a root prompt's form is a comment too",
			in:   "$ cat config.yaml\n# iptables settings\niptables:\n  syncPeriod: 30s\n# ipvsadm is not used\n",
		},
		{
			name: "prompts without commands",
			in:   "[root@node ~]#\n$\n*nat\nCOMMIT\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, s := range Sessions([]byte(tc.in)) {
				got = append(got, fmt.Sprintf("%d-%d %s", s.From, s.To, s.Command))
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("sessions %q, want %q", got, tc.want)
			}
		})
	}
}

func FuzzSessions(f *testing.F) {
	f.Add([]byte("$ ipvsadm -Ln\nTCP  10.96.0.1:443 rr\n$ iptables-save\n*nat\nCOMMIT\n"))
	f.Add([]byte("[root@a ~]# x\n\r\n$ \n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ss := Sessions(data)
		if ss == nil {
			return
		}
		lines := strings.Count(string(data), "\n") + 1
		if strings.HasSuffix(string(data), "\n") {
			lines--
		}
		next := 1
		for _, s := range ss {
			if s.From != next || s.To < s.From || s.Command == "" {
				t.Fatalf("sessions %+v of a %d-line input", ss, lines)
			}
			next = s.To + 1
		}
		if next-1 != lines {
			t.Fatalf("sessions %+v end before line %d", ss, lines)
		}
	})
}
