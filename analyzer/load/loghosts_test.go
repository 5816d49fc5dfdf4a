package load

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLogHosts: a kube-proxy log whose journal prefixes name several hosts
// is read for the node's own host when the node's name is one of them (or
// that host's with a domain), its other hosts' entries set aside, and
// whole otherwise; a note says which.
func TestLogHosts(t *testing.T) {
	line := func(host string, n int) string {
		return "Dec 03 10:01:1" + string(rune('0'+n)) + " " + host + " kube-proxy[1234]: I1203 10:01:12.123456    1234 proxier.go:812] \"Sync failed\" retryingTime=\"30s\"\n"
	}
	twoHosts := line("east-w1", 1) + line("east-w2", 2) + line("east-w1", 3) + line("east-w2", 4) + line("east-w2", 5)
	for _, tc := range []struct {
		name, log, node string
		// hosts of the entries read, in order
		want string
		note string
	}{
		{"the node's host", twoHosts, "east-w2", "east-w2 east-w2 east-w2",
			"journal.txt holds kube-proxy's log of 2 hosts (east-w1 from line 1, east-w2 from line 2): only the lines of east-w2, this node's, are read; the 2 entries of the others are set aside"},
		{"the node's host with a domain", twoHosts, "east-w1.corp.example", "east-w1 east-w1",
			"only the lines of east-w1, this node's, are read; the 3 entries of the others are set aside"},
		{"the node's host with a domain, the node without", line("east-w2.corp.example", 1) + line("east-w9", 2) + line("east-w2.corp.example", 3), "east-w2",
			"east-w2.corp.example east-w2.corp.example", "only the lines of east-w2.corp.example, this node's, are read; the 1 entry of the others are set aside"},
		{"the node's name not known", twoHosts, "", "east-w1 east-w2 east-w1 east-w2 east-w2",
			"journal.txt holds kube-proxy's log of 2 hosts (east-w1 from line 1, east-w2 from line 2) and the node's name is not known: its lines are all read as this node's"},
		{"another node", twoHosts, "east-w3", "east-w1 east-w2 east-w1 east-w2 east-w2",
			"and none of them is this node (east-w3): its lines are all read as this node's"},
		{"one host", line("east-w1", 1) + line("east-w1", 2), "east-w2", "east-w1 east-w1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "journal.txt")
			if err := os.WriteFile(p, []byte(tc.log), 0o644); err != nil {
				t.Fatal(err)
			}
			snaps, err := Load([]string{p}, Options{Node: tc.node})
			if err != nil {
				t.Fatal(err)
			}
			s := snaps[0]
			if len(s.Logs) != 1 {
				t.Fatalf("%d logs", len(s.Logs))
			}
			var hosts []string
			for _, e := range s.Logs[0].Entries {
				hosts = append(hosts, e.Host)
			}
			if got := strings.Join(hosts, " "); got != tc.want {
				t.Errorf("entries of %q, want %q", got, tc.want)
			}
			var noted []string
			for _, n := range s.Notes {
				if strings.Contains(n, "hosts (") {
					noted = append(noted, n)
				}
			}
			switch {
			case tc.note == "" && len(noted) > 0:
				t.Errorf("notes %q, want none of the log's hosts", noted)
			case tc.note != "" && (len(noted) != 1 || !strings.Contains(noted[0], tc.note)):
				t.Errorf("notes %q, want one with %q", noted, tc.note)
			}
		})
	}
}

// TestLogPods: a log kubectl logs --prefix wrote is read with its prefixes
// removed; of several containers, those of kube-proxy's alone when some
// are named kube-proxy, all otherwise, and a log of several kube-proxy
// pods whole: a note says which.
func TestLogPods(t *testing.T) {
	line := func(pod, ctr string, n int) string {
		return "[pod/" + pod + "/" + ctr + "] I1205 10:00:0" + string(rune('0'+n)) + ".000000       1 proxier.go:805] \"Syncing iptables rules\"\n"
	}
	restore := "[pod/kube-proxy-7xk2p/kube-proxy] E1205 10:00:01.000000       1 proxier.go:1520] \"Failed to execute iptables-restore\" err=<\n" +
		"[pod/kube-proxy-7xk2p/kube-proxy] \texit status 2: Warning: Extension MASQUERADE revision 0 not supported, missing kernel module?\n" +
		"[pod/kube-proxy-7xk2p/kube-proxy]  > ipFamily=\"IPv4\"\n"
	for _, tc := range []struct {
		name, log string
		// pod/container of the entries read, in order
		want  string
		notes []string
	}{
		{"one pod", line("kube-proxy-7xk2p", "kube-proxy", 1) + restore + line("kube-proxy-7xk2p", "kube-proxy", 2) + "trailing garbage\n",
			"kube-proxy-7xk2p/kube-proxy kube-proxy-7xk2p/kube-proxy kube-proxy-7xk2p/kube-proxy /", nil},
		{"a sidecar", line("kube-proxy-7xk2p", "kube-proxy", 1) + line("kube-proxy-7xk2p", "sidecar", 2) + restore + line("kube-proxy-7xk2p", "sidecar", 3),
			"kube-proxy-7xk2p/kube-proxy kube-proxy-7xk2p/kube-proxy",
			[]string{"log.txt holds the log of 2 containers (kube-proxy-7xk2p/kube-proxy from line 1, kube-proxy-7xk2p/sidecar from line 2): only the lines of kube-proxy's (kube-proxy-7xk2p/kube-proxy from line 1) are read; those of the others are set aside"}},
		{"two pods", line("kube-proxy-7xk2p", "kube-proxy", 1) + line("kube-proxy-q9z4c", "kube-proxy", 2) + restore,
			"kube-proxy-7xk2p/kube-proxy kube-proxy-q9z4c/kube-proxy kube-proxy-7xk2p/kube-proxy",
			[]string{"log.txt holds kube-proxy's log of 2 pods (kube-proxy-7xk2p/kube-proxy from line 1, kube-proxy-q9z4c/kube-proxy from line 2): their lines are all read as this node's, which they may not all be"}},
		{"two pods and a sidecar", line("kube-proxy-7xk2p", "kube-proxy", 1) + line("kube-proxy-q9z4c", "kube-proxy", 2) + line("kube-proxy-q9z4c", "sidecar", 3) + restore,
			"kube-proxy-7xk2p/kube-proxy kube-proxy-q9z4c/kube-proxy kube-proxy-7xk2p/kube-proxy",
			[]string{"only the lines of kube-proxy's (kube-proxy-7xk2p/kube-proxy from line 1, kube-proxy-q9z4c/kube-proxy from line 2) are read", "holds kube-proxy's log of 2 pods"}},
		{"two pods, this node's exported", line("kube-proxy-7xk2p", "kube-proxy", 1) + line("kube-proxy-q9z4c", "kube-proxy", 2) + restore,
			"kube-proxy-q9z4c/kube-proxy",
			[]string{"log.txt holds kube-proxy's log of 2 pods (kube-proxy-7xk2p/kube-proxy from line 1, kube-proxy-q9z4c/kube-proxy from line 2): only the lines of kube-proxy-q9z4c, the pod the exports place on this node ("}},
		{"no kube-proxy container", line("proxy-1", "proxy", 1) + line("proxy-2", "proxy", 2),
			"proxy-1/proxy proxy-2/proxy",
			[]string{"log.txt holds the log of 2 containers (proxy-1/proxy from line 1, proxy-2/proxy from line 2), none of them named kube-proxy"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "log.txt")
			if err := os.WriteFile(p, []byte(tc.log), 0o644); err != nil {
				t.Fatal(err)
			}
			paths, opts := []string{p}, Options{}
			if strings.Contains(tc.name, "exported") {
				// The kube-proxy Pods of two nodes, and the node's name.
				pods := ""
				for _, pn := range [][2]string{{"kube-proxy-7xk2p", "node-a"}, {"kube-proxy-q9z4c", "node-b"}} {
					pods += "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: " + pn[0] + "\n  namespace: kube-system\nspec:\n  nodeName: " + pn[1] + "\n  containers:\n  - name: kube-proxy\n    image: registry.k8s.io/kube-proxy:v1.31.2\n"
				}
				pp := filepath.Join(dir, "pods.yaml")
				if err := os.WriteFile(pp, []byte(pods), 0o644); err != nil {
					t.Fatal(err)
				}
				paths, opts = append(paths, pp), Options{Node: "node-b"}
			}
			snaps, err := Load(paths, opts)
			if err != nil {
				t.Fatal(err)
			}
			s := snaps[0]
			if len(s.Logs) != 1 {
				t.Fatalf("%d logs", len(s.Logs))
			}
			var pods []string
			for _, e := range s.Logs[0].Entries {
				pods = append(pods, e.Pod+"/"+e.Container)
			}
			if got := strings.Join(pods, " "); got != tc.want {
				t.Errorf("entries of %q, want %q", got, tc.want)
			}
			var noted []string
			for _, n := range s.Notes {
				if strings.Contains(n, "containers (") || strings.Contains(n, "pods (") {
					noted = append(noted, n)
				}
			}
			if len(noted) != len(tc.notes) {
				t.Fatalf("notes %q, want %d", noted, len(tc.notes))
			}
			for i, want := range tc.notes {
				if !strings.Contains(noted[i], want) {
					t.Errorf("note %q, want one with %q", noted[i], want)
				}
			}
		})
	}
}
