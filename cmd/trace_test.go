package cmd

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTraceCommand runs `proxyscan trace` end to end on the example
// bundles and checks the output and the exit codes.
func TestTraceCommand(t *testing.T) {
	ipt := testdata(t, "bundles", "iptables-healthy")
	ipvs := testdata(t, "bundles", "ipvs-healthy")
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr string
	}{
		{"cluster IP", []string{"trace", ipt, "--dst", "10.112.31.40:80", "-o", "table"}, 0,
			[]string{"mode iptables", "1/3 (33.3%)", "DNAT", "10.88.2.10:8080", "node/iptables-save.txt:268"}, ""},
		{"no endpoints", []string{"trace", ipt, "--dst", "10.112.100.20:6379", "-o", "table"}, 1, []string{"REJECT"}, ""},
		{"node port from outside", []string{"trace", ipt, "--dst", "172.20.8.12:30180", "--from", "external", "-o", "table"}, 0,
			[]string{"from external", "in eth0", "· masquerade"}, ""},
		{"ipvs", []string{"trace", ipvs, "--dst", "10.112.0.10:53", "--proto", "udp", "-o", "table"}, 0,
			[]string{"mode ipvs", "ipvsadm.txt", "10.88.1.4:53"}, ""},
		{"expected", []string{"trace", ipt, "--dst", "10.112.0.10:53", "--proto", "udp", "--expected", "-o", "table"}, 0,
			[]string{"(expected rules)", "10.88.2.3:53"}, ""},
		{"compare agrees", []string{"trace", ipt, "--dst", "10.112.31.40:443", "--compare", "-o", "table"}, 0,
			[]string{"✓ the captured rules take the packet where the expected rules do"}, ""},
		{"compare summary", []string{"trace", ipt, "--dst", "10.112.31.40:443", "--compare", "-o", "table"}, 0,
			[]string{"(-v shows both walks)"}, ""},
		{"compare verbose", []string{"trace", ipt, "--dst", "10.112.31.40:443", "--compare", "-v", "-o", "table"}, 0,
			[]string{"── captured rules", "── expected rules", "▸ PREROUTING  arrives from a pod of the node on vethpod0"}, ""},
		{"wrong port", []string{"trace", ipt, "--dst", "10.112.0.10:80", "-o", "table"}, 1,
			[]string{"which has no port 80/TCP: its ports are 53/TCP", "ACCEPT untouched → 10.112.0.10:80: the Service has no such port"}, ""},
		{"walk", []string{"trace", ipt, "--dst", "10.112.0.10:53", "--proto", "udp", "-o", "table"}, 0,
			[]string{"├─ 1/2 (50.0%)  DNAT → 10.88.1.4:53", "└─ 1/2 (50.0%)  DNAT → 10.88.2.3:53", "ready, on this node", "▸ FORWARD  routing decision"}, ""},
		{"compare ipvs", []string{"trace", ipvs, "--dst", "10.112.60.61:80", "--compare", "-o", "table"}, 0,
			[]string{"mode ipvs", "✓ the captured rules take the packet where the expected rules do"}, ""},
		{"mode forced", []string{"trace", ipt, "--dst", "10.112.31.40:80", "--mode", "nftables"}, 2, nil, "nftables"},
		{"missing dst", []string{"trace", ipt}, 2, nil, "trace needs --dst IP:PORT"},
		{"bad dst", []string{"trace", ipt, "--dst", "10.0.0.1"}, 2, nil, `invalid --dst "10.0.0.1"`},
		{"bad proto", []string{"trace", ipt, "--dst", "10.0.0.1:80", "--proto", "icmp"}, 2, nil, `invalid --proto "icmp"`},
		{"bad from", []string{"trace", ipt, "--dst", "10.0.0.1:80", "--from", "mars"}, 2, nil, `unknown packet origin "mars"`},
		{"family mismatch", []string{"trace", ipt, "--dst", "10.0.0.1:80", "--src", "fd00::1"}, 2, nil, "different IP families"},
		{"bad output", []string{"trace", ipt, "--dst", "10.0.0.1:80", "-o", "sarif"}, 2, nil, `unknown output format "sarif"`},
		{"not a service", []string{"trace", ipt, "--dst", "10.0.0.1:80", "-o", "table"}, 1, []string{"ACCEPT", "10.0.0.1:80"}, ""},
		{"both sides", []string{"trace", ipt, "--dst", "10.0.0.1:80", "--expected", "--compare"}, 2, nil, "exclude each other"},
		{"no path", []string{"trace"}, 2, nil, "trace needs at least one PATH"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, outputs := testFactory()
			code := Run(f, tc.args)
			stdout, stderr := outputs()
			if code != tc.code {
				t.Errorf("exit code %d, want %d; stderr: %s", code, tc.code, stderr)
			}
			for _, s := range tc.stdout {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
			if tc.stderr != "" && !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr %q lacks %q", stderr, tc.stderr)
			}
		})
	}
}

// TestTraceJSON checks that -o json (the default off a terminal) is the
// contract's Trace JSON with the chosen source filled in.
func TestTraceJSON(t *testing.T) {
	f, outputs := testFactory()
	if code := Run(f, []string{"trace", testdata(t, "bundles", "iptables-healthy"), "--dst", "10.112.0.10:53", "--proto", "udp"}); code != 0 {
		_, stderr := outputs()
		t.Fatalf("exit %d: %s", code, stderr)
	}
	stdout, _ := outputs()
	var res struct {
		Packet     struct{ Src, Dst, Proto, From string }
		TargetKind string
		Paths      []struct {
			Probability float64
			Verdict     string
			Steps       []struct{ Table, Chain, Rule, File string }
			Hops        []struct {
				Step      int
				Hook, Why string
			}
			Endpoint *struct {
				Service string
				Notes   []string
			}
		}
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if res.Packet.Src != "10.88.2.1" || res.Packet.From != "pod" || len(res.Paths) != 2 || res.Paths[0].Probability != 0.5 {
		t.Errorf("unexpected trace: %+v", res)
	}
	p := res.Paths[0]
	if res.TargetKind != "service" || len(p.Hops) == 0 || p.Hops[0].Hook != "PREROUTING" || p.Endpoint == nil ||
		p.Endpoint.Service != "kube-system/kube-dns:dns" || len(p.Endpoint.Notes) == 0 {
		t.Errorf("targetKind, hops or endpoint missing: %+v", res)
	}
}
