package checks_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestDataPlaneAlone runs the checks on the data plane of each healthy
// bundle given alone, as pasted into a ticket: the checks that read the
// data plane alone run, report nothing above info, and the only findings
// are the inventory of services-without-endpoints.
func TestDataPlaneAlone(t *testing.T) {
	for _, tc := range []struct {
		files []string
		// inventory is how many service ports the data plane marks
		// without (local) endpoints.
		inventory int
	}{
		{[]string{"iptables-healthy/node/iptables-save.txt", "iptables-healthy/node/ip6tables-save.txt"}, 3},
		{[]string{"iptables-mini/node/iptables-save.txt"}, 2},
		{[]string{"iptables-v1.18-mini/node/iptables-save.txt"}, 2},
		{[]string{"iptables-v1.24-mini/node/iptables-save.txt"}, 2},
		{[]string{"nftables-healthy/node/nft-ruleset.txt"}, 3},
		{[]string{"ipvs-healthy-mini/node/iptables-save.txt", "ipvs-healthy-mini/node/ipvsadm-save.txt", "ipvs-healthy-mini/node/ipset-save.txt"}, 1},
	} {
		t.Run(tc.files[0], func(t *testing.T) {
			var paths []string
			for _, f := range tc.files {
				paths = append(paths, filepath.Join(parsetest.Root(t), "testdata", "bundles", f))
			}
			snaps, err := load.Load(paths, load.Options{})
			if err != nil {
				t.Fatal(err)
			}
			res := checks.Run(snaps[0], checks.All)
			n := 0
			for _, f := range res.Findings {
				if f.Check != "services-without-endpoints" || f.Severity != checks.Info {
					t.Errorf("%s (%s): %s", f.Check, f.Severity, f.Message)
					continue
				}
				n++
			}
			if n != tc.inventory {
				t.Errorf("%d service ports in the inventory, want %d", n, tc.inventory)
			}
			ran := map[string]bool{}
			for _, st := range res.Statuses {
				ran[st.ID] = st.State == "ran"
			}
			for _, id := range []string{"services-unprogrammed", "services-without-endpoints", "foreign-rules", "iptables-backend-mixed"} {
				if !ran[id] && !(res.Mode == "nftables" && (id == "foreign-rules" || id == "iptables-backend-mixed")) {
					t.Errorf("%s did not run on the data plane alone", id)
				}
			}
			if res.Verdict() != checks.VerdictInconclusive {
				t.Errorf("verdict %s, want inconclusive", res.Verdict())
			}
		})
	}
}

// TestServicesUnprogrammedIPVS: an IPVS table without a virtual server on
// a node whose iptables rules are kube-proxy's IPVS-mode ones.
func TestServicesUnprogrammedIPVS(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(parsetest.Root(t), "testdata", "bundles", "ipvs-healthy-mini", "node")
	parsetest.CopyTree(t, root, dir, func(rel string, _ []byte) bool { return rel == "iptables-save.txt" })
	header := "IP Virtual Server version 1.2.1 (size=4096)\nProt LocalAddress:Port Scheduler Flags\n  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n"
	if err := os.WriteFile(filepath.Join(dir, "ipvsadm.txt"), []byte(header), 0o644); err != nil {
		t.Fatal(err)
	}
	snaps, err := load.Load([]string{dir}, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res := checks.Run(snaps[0], checks.All)
	var got []string
	for _, f := range res.Findings {
		got = append(got, f.Check+": "+f.Message)
	}
	if res.Mode != "ipvs" || len(got) != 1 || !strings.HasPrefix(got[0], "services-unprogrammed: the IPVS table exists but programs no Service") {
		t.Errorf("mode %s, findings %q, want one of services-unprogrammed", res.Mode, got)
	}
}
