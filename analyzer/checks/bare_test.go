package checks_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/checktest"
	"github.com/proxyscan/proxyscan/analyzer/load"
)

// TestBareDataPlane checks that a data plane without a single Service
// entry, on a node whose mode is known or inferred from kube-proxy's
// chains, is one finding listing every destination not programmed, as it
// is when the dumps of every mode hold nothing of kube-proxy's; that
// nothing is found when a mode's dump is missing and no input says the
// mode; and that nothing is grouped on a healthy data plane.
func TestBareDataPlane(t *testing.T) {
	for _, tc := range []struct {
		name    string
		base    string
		changes map[string]string // "" removes the file
		// grouped is how many objects the one grouped finding lists (0:
		// no grouped finding); missing is how many findings of the
		// absence checks there are besides it.
		grouped, missing int
	}{
		{"empty iptables-save, mode configured", "iptables-mini", map[string]string{"node/iptables-save.txt": "\n"}, 16, 0},
		{"empty nft list ruleset, mode configured", "nftables-healthy", map[string]string{"node/nft-ruleset.txt": "\n", "node/nft-ruleset.json": ""}, 35, 0},
		{"empty ipvsadm, mode configured", "ipvs-healthy-mini", map[string]string{"node/ipvsadm.txt": "\n", "node/ipvsadm-save.txt": "\n"}, 14, 0},
		// No mode is known, and the dumps of every mode hold nothing of
		// kube-proxy's: whatever the mode, no Service is programmed.
		{"empty dumps of every mode, mode assumed", "iptables-mini", map[string]string{"node/iptables-save.txt": "\n",
			"node/ipvsadm.txt": "\n", "node/nft-ruleset.txt": "\n",
			"kube-proxy/config.yaml": "", "cluster/kube-proxy-configmap.yaml": ""}, 16, 0},
		// Before 1.29 there is no nftables mode to cover.
		{"empty iptables-save and ipvsadm of 1.28, mode assumed", "iptables-mini", map[string]string{"node/iptables-save.txt": "\n",
			"node/ipvsadm.txt": "\n", "kube-proxy/version.txt": "Kubernetes v1.28.4\n",
			"kube-proxy/config.yaml": "", "cluster/kube-proxy-configmap.yaml": ""}, 16, 0},
		// Only iptables-save, empty: the node may run a mode whose dump is
		// not given (the run is inconclusive, naming it), nothing is found.
		{"empty iptables-save, mode assumed", "iptables-mini", map[string]string{"node/iptables-save.txt": "\n",
			"kube-proxy/config.yaml": "", "cluster/kube-proxy-configmap.yaml": ""}, 0, 0},
		{"empty iptables-save and ipvsadm of 1.37, mode assumed", "iptables-mini", map[string]string{"node/iptables-save.txt": "\n",
			"node/ipvsadm.txt": "\n", "kube-proxy/config.yaml": "", "cluster/kube-proxy-configmap.yaml": ""}, 0, 0},
		// kube-proxy's empty nat KUBE-SERVICES shows the iptables mode.
		{"empty KUBE-SERVICES, mode inferred", "iptables-mini", map[string]string{
			"node/iptables-save.txt": "*nat\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n-A PREROUTING -j KUBE-SERVICES\nCOMMIT\n",
			"kube-proxy/config.yaml": "", "cluster/kube-proxy-configmap.yaml": ""}, 16, 0},
		// A foreign nat table alone shows no mode.
		{"foreign nat table, mode assumed", "iptables-mini", map[string]string{
			"node/iptables-save.txt": "*nat\n:PREROUTING ACCEPT [0:0]\n:DOCKER - [0:0]\n-A PREROUTING -j DOCKER\nCOMMIT\n",
			"kube-proxy/config.yaml": "", "cluster/kube-proxy-configmap.yaml": ""}, 0, 0},
		{"healthy iptables", "iptables-mini", nil, 0, 0},
		{"healthy nftables", "nftables-healthy", nil, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The case as a scenario: its base bundle, changed.
			ar := "base: bundles/" + tc.base + "\n"
			var files string
			for rel, content := range tc.changes {
				if content == "" {
					ar += "remove: " + rel + "\n"
				} else {
					files += "-- " + rel + " --\n" + content
				}
			}
			file := filepath.Join(t.TempDir(), "case.txtar")
			if err := os.WriteFile(file, []byte(ar+files), 0o644); err != nil {
				t.Fatal(err)
			}
			dir := checktest.Load(t, file).Dir
			snaps, err := load.Load([]string{dir}, load.Options{})
			if err != nil {
				t.Fatal(err)
			}
			res := checks.Run(snaps[0], checks.All)
			grouped, missing := 0, 0
			for _, f := range res.Findings {
				switch f.Check {
				case "service-missing", "nodeport-missing", "external-missing", "no-endpoints-unrejected", "traffic-policy-mismatch":
				default:
					continue
				}
				if len(f.Objects) > 0 {
					if grouped > 0 {
						t.Errorf("a second grouped finding: %s", f.Message)
					}
					grouped = len(f.Objects)
					if f.Check != "service-missing" || f.Severity != checks.Error {
						t.Errorf("grouped finding of %s at %v, want service-missing at error", f.Check, f.Severity)
					}
					if len(f.Evidence) < len(f.Objects) {
						t.Errorf("grouped finding has %d evidence for %d objects", len(f.Evidence), len(f.Objects))
					}
					continue
				}
				missing++
			}
			if grouped != tc.grouped || missing != tc.missing {
				t.Errorf("grouped %d objects and %d other findings, want %d and %d", grouped, missing, tc.grouped, tc.missing)
			}
			for _, st := range res.Statuses {
				if st.ID == "service-missing" && st.Findings == 0 && tc.grouped > 0 {
					t.Errorf("service-missing status counts no finding")
				}
			}
		})
	}
}
