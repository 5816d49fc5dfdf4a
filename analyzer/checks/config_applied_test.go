package checks_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// edit replaces old with new in one file of a bundle; an empty old
// removes the file, old "+" writes the file with new.
type edit struct{ file, old, new string }

// editedBundle copies testdata/bundles/base into a temporary directory and
// applies the edits, each of which must change its file.
func editedBundle(t *testing.T, base string, edits []edit) string {
	t.Helper()
	src := filepath.Join(parsetest.Root(t), "testdata", "bundles", base)
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	for _, e := range edits {
		path := filepath.Join(dir, filepath.FromSlash(e.file))
		switch e.old {
		case "":
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			continue
		case "+":
			if err := os.WriteFile(path, []byte(e.new), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		case "-": // drop every line holding e.new
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var kept []string
			for _, ln := range strings.SplitAfter(string(b), "\n") {
				if !strings.Contains(ln, e.new) {
					kept = append(kept, ln)
				}
			}
			if len(kept) == len(strings.SplitAfter(string(b), "\n")) {
				t.Fatalf("no line of %s holds %q", e.file, e.new)
			}
			if err := os.WriteFile(path, []byte(strings.Join(kept, "")), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Replace(string(b), e.old, e.new, 1)
		if text == string(b) {
			t.Fatalf("%s: %q not found", e.file, e.old)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// secondNode is a Node whose pod range lies outside 10.244.0.0/16.
const secondNode = `apiVersion: v1
kind: Node
metadata:
  name: node-z
spec:
  podCIDR: 10.32.7.0/24
  podCIDRs:
  - 10.32.7.0/24
status:
  addresses:
  - address: 192.168.10.99
    type: InternalIP
`

// ipvsIPT is the iptables-save dump of the IPVS bundles, ipvsClusterIPRule
// the KUBE-CLUSTER-IP masquerade rule of ipvs-healthy-mini (detectLocalMode
// ClusterCIDR) and ipvsClusterIPNoDetector the one kube-proxy writes in its
// place without a local-traffic detector.
const (
	ipvsIPT                 = "node/iptables-save.txt"
	ipvsClusterIPRule       = "-A KUBE-SERVICES ! -s 10.244.0.0/16 -m comment --comment \"Kubernetes service cluster ip + port for masquerade purpose\" -m set --match-set KUBE-CLUSTER-IP dst,dst -j KUBE-MARK-MASQ\n"
	ipvsClusterIPNoDetector = "-A KUBE-SERVICES -m comment --comment \"Kubernetes service cluster ip + port for masquerade purpose\" -m set --match-set KUBE-CLUSTER-IP src,dst -j KUBE-MARK-MASQ\n"
)

// TestConfigNotApplied runs config-not-applied and cluster-cidr-uncovered
// on the testdata bundles with their configuration edited: each mode's form
// of the masquerade rules against a configuration saying otherwise. A
// want is "check: substring of the message"; no want, no finding. A
// clusterCIDR that does not cover the pods, in a configuration not
// applied, is part of the config-not-applied finding.
func TestConfigNotApplied(t *testing.T) {
	list := []*checks.Check{checks.ByID("config-not-applied"), checks.ByID("cluster-cidr-uncovered")}
	const cfg = "kube-proxy/config.yaml"
	for _, tc := range []struct {
		name  string
		base  string
		edits []edit
		want  []string
		// note is a substring of a note of config-not-applied.
		note string
		// evidence is a position ("file:line") config-not-applied's
		// finding cites.
		evidence string
	}{
		{name: "iptables clusterCIDR", base: "iptables-mini",
			edits: []edit{{cfg, "clusterCIDR: 10.244.0.0/16", "clusterCIDR: 10.32.0.0/16"}},
			want: []string{
				"config-not-applied: kube-proxy runs with other settings than the configuration given (kube-proxy/config.yaml:1): the rules' local-traffic detector matches 10.244.0.0/16 (`! -s 10.244.0.0/16`, as detectLocalMode ClusterCIDR with clusterCIDR 10.244.0.0/16 writes it) where the configuration says detectLocalMode ClusterCIDR with clusterCIDR 10.32.0.0/16 (IPv4); kube-proxy reads its configuration only at start; and the configuration given is wrong",
				"config-not-applied: ; and the configuration given is wrong: clusterCIDR 10.32.0.0/16 does not cover the pods: 1 pod range 10.244.1.0/24 (Node node-a) outside it",
			}},
		{name: "iptables rules without a detector, the configuration with one", base: "iptables-mini",
			edits: []edit{{"node/iptables-save.txt", "-", "! -s 10.244.0.0/16 -d"}},
			want: []string{"config-not-applied: the rules show no ClusterIP masquerade rule (no local-traffic detector, masqueradeAll false) " +
				"where the configuration says detectLocalMode ClusterCIDR with clusterCIDR 10.244.0.0/16 (IPv4)"}},
		{name: "the command line of the running kube-proxy", base: "iptables-mini",
			edits: []edit{{cfg, "", ""}, {"cluster/kube-proxy-configmap.yaml", "", ""},
				{"kube-proxy/cmdline.txt", "+", "/usr/local/bin/kube-proxy --proxy-mode=iptables --cluster-cidr=10.32.0.0/16 --hostname-override=node-a\n"}},
			want: []string{"config-not-applied: the rules show other settings than the kube-proxy command line given (command line, kube-proxy/cmdline.txt:1): " +
				"the rules' local-traffic detector matches 10.244.0.0/16 (`! -s 10.244.0.0/16`, as detectLocalMode ClusterCIDR with clusterCIDR 10.244.0.0/16 writes it) where the configuration says detectLocalMode ClusterCIDR with clusterCIDR 10.32.0.0/16 (IPv4); " +
				"the flags of a running kube-proxy are what it runs with"}},
		{name: "iptables masqueradeBit", base: "iptables-mini",
			edits: []edit{{cfg, "masqueradeBit: 14", "masqueradeBit: 13"}},
			want:  []string{"config-not-applied: the rules show masqueradeBit 14 (mark 0x4000) where the configuration says 13 (mark 0x2000) (IPv4)"}},
		{name: "kubelet's mark rule beside kube-proxy's", base: "iptables-mini",
			edits: []edit{{"node/iptables-save.txt", "-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000\n",
				"-A KUBE-MARK-MASQ -j MARK --set-xmark 0x8000/0x8000\n-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000\n"}}},
		{name: "iptables masqueradeAll", base: "iptables-mini",
			edits: []edit{{cfg, "masqueradeAll: false", "masqueradeAll: true"}},
			want:  []string{"config-not-applied: the rules' local-traffic detector matches 10.244.0.0/16 (`! -s 10.244.0.0/16`, as detectLocalMode ClusterCIDR with clusterCIDR 10.244.0.0/16 writes it) where the configuration says iptables.masqueradeAll true (IPv4)"}},
		{name: "iptables NodeCIDR", base: "iptables-mini",
			edits: []edit{{cfg, "detectLocalMode: ClusterCIDR", "detectLocalMode: NodeCIDR"}},
			want:  []string{"config-not-applied: where the configuration says detectLocalMode NodeCIDR (the node's podCIDR 10.244.1.0/24) (IPv4)"}},
		{name: "iptables NodeCIDR, the Node's podCIDRs cited", base: "iptables-mini",
			edits:    []edit{{cfg, "detectLocalMode: ClusterCIDR", "detectLocalMode: NodeCIDR"}},
			want:     []string{"config-not-applied: the rules' local-traffic detector matches 10.244.0.0/16 (`! -s 10.244.0.0/16`, as detectLocalMode ClusterCIDR with clusterCIDR 10.244.0.0/16 writes it) where the configuration says detectLocalMode NodeCIDR (the node's podCIDR 10.244.1.0/24) (IPv4)"},
			evidence: "cluster/node.yaml:20"},
		{name: "iptables rules detecting by the node's podCIDR", base: "iptables-mini",
			edits:    slices.Repeat([]edit{{"node/iptables-save.txt", "! -s 10.244.0.0/16", "! -s 10.244.1.0/24"}}, 9), // every rule
			want:     []string{"config-not-applied: the rules' local-traffic detector matches 10.244.1.0/24 (`! -s 10.244.1.0/24`, as detectLocalMode NodeCIDR writes it with the node's podCIDR) where the configuration says detectLocalMode ClusterCIDR with clusterCIDR 10.244.0.0/16 (IPv4)"},
			evidence: "cluster/node.yaml:20"},
		{name: "iptables NodeCIDR, several Nodes and none chosen", base: "iptables-mini",
			edits: []edit{{cfg, "detectLocalMode: ClusterCIDR", "detectLocalMode: NodeCIDR"}, {"node/ip-addr.txt", "", ""},
				{"cluster/node-z.yaml", "+", secondNode}},
			note: "not checked, as no Node exported is known as this node's (pass --node NAME): whether the IPv4 rules detect local traffic by the node's podCIDR (detectLocalMode NodeCIDR); the Nodes exported are node-a, node-z"},
		{name: "iptables NodeCIDR without the Node", base: "iptables-mini",
			edits: []edit{{cfg, "detectLocalMode: ClusterCIDR", "detectLocalMode: NodeCIDR"}, {"cluster/node.yaml", "", ""}},
			note:  "not checked, as no input gives the node's podCIDRs (its Node object): whether the IPv4 rules detect local traffic by it"},
		{name: "iptables interface", base: "iptables-mini",
			edits: []edit{{cfg, "detectLocalMode: ClusterCIDR", "detectLocal:\n  interfaceNamePrefix: veth\ndetectLocalMode: InterfaceNamePrefix"}},
			want:  []string{"config-not-applied: where the configuration says detectLocalMode InterfaceNamePrefix (input interface veth+) (IPv4)"}},
		{name: "iptables 1.20 KUBE-SERVICES form", base: "iptables-v1.20-mini",
			edits: []edit{{cfg, "clusterCIDR: 10.244.0.0/16", "clusterCIDR: 10.32.0.0/16"}},
			want: []string{
				"config-not-applied: the rules' local-traffic detector matches 10.244.0.0/16 (`! -s 10.244.0.0/16`, as detectLocalMode ClusterCIDR with clusterCIDR 10.244.0.0/16 writes it) where the configuration says detectLocalMode ClusterCIDR with clusterCIDR 10.32.0.0/16 (IPv4)",
				"config-not-applied: ; and the configuration given is wrong: clusterCIDR 10.32.0.0/16",
			}},
		{name: "ipvs clusterCIDR and masqueradeBit", base: "ipvs-healthy-mini",
			edits: []edit{{cfg, "clusterCIDR: 10.244.0.0/16", "clusterCIDR: 10.244.0.0/17"}, {cfg, "masqueradeBit: 14", "masqueradeBit: 15"}},
			want: []string{"config-not-applied: the rules' local-traffic detector matches 10.244.0.0/16 (`! -s 10.244.0.0/16`, as detectLocalMode ClusterCIDR with clusterCIDR 10.244.0.0/16 writes it) where the configuration says detectLocalMode ClusterCIDR with clusterCIDR 10.244.0.0/17 (IPv4); " +
				"the rules show masqueradeBit 14 (mark 0x4000) where the configuration says 15 (mark 0x8000) (IPv4)"}},
		{name: "ipvs masqueradeAll", base: "ipvs-healthy-mini",
			edits: []edit{{cfg, "masqueradeAll: false", "masqueradeAll: true"}},
			want:  []string{"config-not-applied: where the configuration says iptables.masqueradeAll true (IPv4)"}},
		// IPVS mode's KUBE-CLUSTER-IP rule in each form kube-proxy writes
		// (proxier's IPVS generator), and none at all in a whole dump,
		// which no configuration gives.
		{name: "ipvs rules without a detector, the configuration with one", base: "ipvs-healthy-mini",
			edits: []edit{{ipvsIPT, ipvsClusterIPRule, ipvsClusterIPNoDetector}},
			want: []string{"config-not-applied: the rules show no local-traffic detector (ClusterIP traffic of every source masqueraded) " +
				"where the configuration says detectLocalMode ClusterCIDR with clusterCIDR 10.244.0.0/16 (IPv4)"}},
		{name: "ipvs rules without a detector, the configuration without one", base: "ipvs-healthy-mini",
			edits: []edit{{ipvsIPT, ipvsClusterIPRule, ipvsClusterIPNoDetector}, {cfg, "clusterCIDR: 10.244.0.0/16\n", ""}}},
		{name: "ipvs interface, the configuration with clusterCIDR", base: "ipvs-healthy-mini",
			edits: []edit{{ipvsIPT, "-A KUBE-SERVICES ! -s 10.244.0.0/16 ", "-A KUBE-SERVICES ! -i veth+ "}},
			want: []string{"config-not-applied: the rules' local-traffic detector matches input interfaces veth+ (`! -i veth+`, as detectLocalMode InterfaceNamePrefix with interfaceNamePrefix veth writes it) " +
				"where the configuration says detectLocalMode ClusterCIDR with clusterCIDR 10.244.0.0/16 (IPv4)"}},
		{name: "ipvs interface, the configuration with it", base: "ipvs-healthy-mini",
			edits: []edit{{ipvsIPT, "-A KUBE-SERVICES ! -s 10.244.0.0/16 ", "-A KUBE-SERVICES ! -i veth+ "},
				{cfg, "detectLocalMode: ClusterCIDR", "detectLocal:\n  interfaceNamePrefix: veth\ndetectLocalMode: InterfaceNamePrefix"}}},
		{name: "ipvs without the KUBE-CLUSTER-IP rule", base: "ipvs-healthy-mini",
			edits: []edit{{ipvsIPT, ipvsClusterIPRule, ""}},
			want: []string{"config-not-applied: the rules show no KUBE-CLUSTER-IP masquerade rule in nat KUBE-SERVICES (IPVS mode writes one at every sync whatever its settings: " +
				"`! -s CIDR` or `! -i IFACE` with a local-traffic detector, `src,dst` without one, `dst,dst` alone with masqueradeAll) " +
				"where the configuration says detectLocalMode ClusterCIDR with clusterCIDR 10.244.0.0/16 (IPv4)"}},
		{name: "ipvs without the KUBE-CLUSTER-IP rule, the configuration without a detector", base: "ipvs-healthy-mini",
			edits: []edit{{ipvsIPT, ipvsClusterIPRule, ""}, {cfg, "clusterCIDR: 10.244.0.0/16\n", ""}},
			want: []string{"config-not-applied: the rules show no KUBE-CLUSTER-IP masquerade rule in nat KUBE-SERVICES " +
				"(IPVS mode writes one at every sync whatever its settings: `! -s CIDR` or `! -i IFACE` with a local-traffic detector, `src,dst` without one, `dst,dst` alone with masqueradeAll) " +
				"where the configuration says detectLocalMode ClusterCIDR without a clusterCIDR: no local-traffic detector (IPv4)"}},
		// The rule may be after the cut of a dump cut short.
		{name: "ipvs without the KUBE-CLUSTER-IP rule, in a dump cut short", base: "ipvs-healthy-mini",
			edits: []edit{{ipvsIPT, ipvsClusterIPRule, ""},
				{ipvsIPT, "-A KUBE-SERVICES -m set --match-set KUBE-LOAD-BALANCER dst,dst -j ACCEPT\nCOMMIT\n", "-A KUBE-SERVICES -m set --match-set KUBE-LOAD-BALANCER dst,dst -j ACCEPT\n"}}},
		{name: "nftables interface, both families", base: "nftables-healthy",
			edits: []edit{{cfg, "  interfaceNamePrefix: \"\"\ndetectLocalMode: ClusterCIDR", "  interfaceNamePrefix: cali\ndetectLocalMode: InterfaceNamePrefix"}},
			want: []string{"config-not-applied: the rules' local-traffic detector matches 10.88.0.0/16 (`ip saddr != 10.88.0.0/16`, as detectLocalMode ClusterCIDR with clusterCIDR 10.88.0.0/16 writes it) where the configuration says detectLocalMode InterfaceNamePrefix (input interface cali+) (IPv4); " +
				"the rules' local-traffic detector matches fd88::/56 (`ip6 saddr != fd88::/56`, as detectLocalMode ClusterCIDR with clusterCIDR fd88::/56 writes it) where the configuration says detectLocalMode InterfaceNamePrefix (input interface cali+) (IPv6)"}},
		{name: "nftables masqueradeBit", base: "nftables-healthy",
			edits: []edit{{cfg, "nftables:\n  masqueradeAll: false\n  masqueradeBit: 14", "nftables:\n  masqueradeAll: false\n  masqueradeBit: 12"}},
			want:  []string{"config-not-applied: the rules show masqueradeBit 14 (mark 0x4000) where the configuration says 12 (mark 0x1000) (IPv4)"}},
		{name: "nftables 1.29 per-service form", base: "nftables-v1.29",
			edits: []edit{{cfg, "clusterCIDR: 10.88.0.0/16,fd88::/56", "clusterCIDR: 10.88.0.0/16,fd89::/56"}},
			want: []string{"config-not-applied: the rules' local-traffic detector matches fd88::/56 (`ip6 saddr != fd88::/56`, as detectLocalMode ClusterCIDR with clusterCIDR fd88::/56 writes it) where the configuration says detectLocalMode ClusterCIDR with clusterCIDR 10.88.0.0/16,fd89::/56 (IPv6)",
				"config-not-applied: ; and the configuration given is wrong: clusterCIDR 10.88.0.0/16, fd89::/56 does not cover the pods"}},
		{name: "a Node's pods outside clusterCIDR", base: "iptables-mini",
			edits: []edit{{"cluster/node-z.yaml", "+", secondNode}},
			want:  []string{"cluster-cidr-uncovered: clusterCIDR 10.244.0.0/16 does not cover the pods: 1 pod range 10.32.7.0/24 (Node node-z) outside it, so kube-proxy treats the traffic of the pods in it as coming from outside the cluster"}},
		{name: "a pod range wider than clusterCIDR", base: "iptables-mini",
			edits: []edit{{cfg, "clusterCIDR: 10.244.0.0/16", "clusterCIDR: 10.244.1.0/25"}},
			want: []string{
				"config-not-applied: where the configuration says detectLocalMode ClusterCIDR with clusterCIDR 10.244.1.0/25 (IPv4)",
				"config-not-applied: ; and the configuration given is wrong: clusterCIDR 10.244.1.0/25 does not cover the pods: 1 pod range 10.244.1.0/24 (Node node-a) outside it",
			}},
		{name: "masqueradeAll covers every pod", base: "iptables-mini",
			edits: []edit{{"cluster/node-z.yaml", "+", secondNode}, {cfg, "masqueradeAll: false", "masqueradeAll: true"}},
			want:  []string{"config-not-applied: where the configuration says iptables.masqueradeAll true (IPv4)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := editedBundle(t, tc.base, tc.edits)
			snaps, err := load.Load([]string{dir}, load.Options{Compact: true})
			if err != nil {
				t.Fatal(err)
			}
			res := checks.Run(snaps[0], list)
			var got []string
			for _, f := range res.Findings {
				got = append(got, f.Check+": "+f.Message)
				if len(f.Evidence) == 0 {
					t.Errorf("%s: no evidence", f.Check)
				}
			}
			// Each check has one finding at most: a want may name a part of
			// one another want names (a folded finding).
			wantChecks := map[string]bool{}
			for _, w := range tc.want {
				check, _, _ := strings.Cut(w, ": ")
				wantChecks[check] = true
			}
			if len(got) != len(wantChecks) {
				t.Errorf("findings:\n%s\nwant %d", strings.Join(got, "\n"), len(wantChecks))
			}
			for _, w := range tc.want {
				check, sub, _ := strings.Cut(w, ": ")
				found := false
				for _, f := range res.Findings {
					found = found || f.Check == check && strings.Contains(f.Message, sub)
				}
				if !found {
					t.Errorf("no %s finding with %q in:\n%s", check, sub, strings.Join(got, "\n"))
				}
			}
			var notes []string
			for _, st := range res.Statuses {
				if st.ID == "config-not-applied" {
					if st.State != "ran" {
						t.Errorf("config-not-applied %s: %s", st.State, st.Reason)
					}
					notes = st.Notes
				}
			}
			if tc.evidence != "" {
				var cited []string
				for _, f := range res.Findings {
					for _, e := range f.Evidence {
						if f.Check == "config-not-applied" {
							cited = append(cited, fmt.Sprintf("%s:%d", e.File, e.Line))
						}
					}
				}
				if !slices.Contains(cited, tc.evidence) {
					t.Errorf("config-not-applied cites %q, want %s among them", cited, tc.evidence)
				}
			}
			if tc.note != "" && !strings.Contains(strings.Join(notes, "\n"), tc.note) {
				t.Errorf("notes %q, want one with %q", notes, tc.note)
			}
			if tc.note != "" && !strings.Contains(strings.Join(res.Coverage.Gaps, "\n"), tc.note) {
				t.Errorf("coverage gaps %q, want one with %q", res.Coverage.Gaps, tc.note)
			}
		})
	}
}

// TestConfigNotAppliedSilent checks that the two checks find nothing on
// every healthy bundle of testdata/bundles, whose rules follow their
// configuration.
func TestConfigNotAppliedSilent(t *testing.T) {
	list := []*checks.Check{checks.ByID("config-not-applied"), checks.ByID("cluster-cidr-uncovered")}
	entries, err := os.ReadDir(filepath.Join(parsetest.Root(t), "testdata", "bundles"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		n++
		t.Run(e.Name(), func(t *testing.T) {
			snaps, err := load.Load([]string{filepath.Join(parsetest.Root(t), "testdata", "bundles", e.Name())}, load.Options{Compact: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, snap := range snaps {
				res := checks.Run(snap, list)
				for _, f := range res.Findings {
					t.Errorf("%s: %s", f.Check, f.Message)
				}
				for _, st := range res.Statuses {
					if st.ID == "config-not-applied" && st.State != "ran" {
						t.Errorf("config-not-applied %s: %s", st.State, st.Reason)
					}
				}
			}
		})
	}
	if n < 5 {
		t.Fatalf("%d bundles", n)
	}
}

// TestSecondConfiguration checks that a second kube-proxy configuration
// given (the ConfigMap besides the --config file the checks read) that
// sets otherwise a setting the checks read makes the run inconclusive,
// naming the checks, both configurations and the settings, while one
// that differs only in settings no check reads leaves it ok.
func TestSecondConfiguration(t *testing.T) {
	const cm = "cluster/kube-proxy-configmap.yaml"
	for _, tc := range []struct {
		name    string
		edit    edit
		verdict string
		gap     string
	}{
		{"masqueradeBit", edit{cm, "masqueradeBit: 14", "masqueradeBit: 13"}, checks.VerdictInconclusive,
			"config-not-applied, masquerade-missing, service-missing: checked against kube-proxy/config.yaml:1 only: " +
				"ConfigMap kube-system/kube-proxy, cluster/kube-proxy-configmap.yaml:4 sets iptables.masqueradeBit otherwise"},
		{"mode", edit{cm, "    mode: iptables", "    mode: ipvs"}, checks.VerdictInconclusive,
			"mode-mismatch, mode-unsupported, nodeport-missing, service-missing: checked against kube-proxy/config.yaml:1 only: " +
				"ConfigMap kube-system/kube-proxy, cluster/kube-proxy-configmap.yaml:4 sets mode otherwise"},
		{"oomScoreAdj", edit{cm, "oomScoreAdj: -999", "oomScoreAdj: -998"}, checks.VerdictOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := editedBundle(t, "iptables-mini", []edit{tc.edit})
			snaps, err := load.Load([]string{dir}, load.Options{Compact: true})
			if err != nil {
				t.Fatal(err)
			}
			res := checks.Run(snaps[0], checks.All)
			if v := res.Verdict(); v != tc.verdict {
				t.Errorf("verdict %s, want %s; gaps %q", v, tc.verdict, res.Coverage.Gaps)
			}
			gaps := strings.Join(res.Coverage.Gaps, "\n")
			if tc.gap == "" && gaps != "" || !strings.Contains(gaps, tc.gap) {
				t.Errorf("gaps %q, want one with %q", res.Coverage.Gaps, tc.gap)
			}
		})
	}
}
