package checks_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/checktest"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestIPVSMissingEvidence: the evidence of a virtual server missing from
// the ipvsadm listing cites the listing at the line of the virtual server
// it would be listed before, and says which one is absent, as the
// evidence of a missing iptables rule cites the chain it would be in.
func TestIPVSMissingEvidence(t *testing.T) {
	for _, tc := range []struct {
		scenario, check, message string
		file, at, text           string
	}{
		{"service-missing", "service-missing", "no entry for cluster IP 10.96.10.10:80/tcp",
			"node/ipvsadm.txt", "TCP  10.96.10.20:80 rr", "TCP  10.96.10.20:80 rr (no virtual server 10.96.10.10:80/TCP: it would be listed before this one)"},
		{"nodeport-missing", "nodeport-missing", "no entry for node port 31080/tcp",
			"node/ipvsadm.txt", "TCP  192.168.10.100:443 rr", "TCP  192.168.10.100:443 rr (no virtual server 192.168.10.11:31080/TCP: it would be listed before this one)"},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			file := filepath.Join(parsetest.Root(t), "testdata", "scenarios", "ipvs", tc.scenario+".txtar")
			var list []*checks.Check
			for _, c := range checks.All {
				if c.ID == tc.check {
					list = append(list, c)
				}
			}
			data, err := os.ReadFile(filepath.Join(checktest.Load(t, file).Dir, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			line := 0
			for i, l := range strings.Split(string(data), "\n") {
				if strings.TrimRight(l, " ") == tc.at {
					line = i + 1
					break
				}
			}
			if line == 0 {
				t.Fatalf("%s holds no line %q", tc.file, tc.at)
			}
			found := false
			for _, f := range checktest.Run(t, file, list) {
				if !strings.HasPrefix(f.Message, tc.message) {
					continue
				}
				found = true
				if len(f.Evidence) < 2 {
					t.Fatalf("evidence %+v, want the Service and the listing", f.Evidence)
				}
				ev := f.Evidence[1]
				if ev.File != tc.file || ev.Line != line || ev.Text != tc.text {
					t.Errorf("evidence %s:%d %q, want %s:%d %q", ev.File, ev.Line, ev.Text, tc.file, line, tc.text)
				}
			}
			if !found {
				t.Fatalf("no finding %q", tc.message)
			}
		})
	}
}
