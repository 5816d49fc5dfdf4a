package checks_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/checktest"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// copyBundle copies a testdata bundle, leaving out the files drop selects
// (by slash path relative to the bundle) and adding extra ones.
func copyBundle(t *testing.T, name string, drop func(rel string) bool, extra map[string]string) string {
	t.Helper()
	out := t.TempDir()
	parsetest.CopyTree(t, filepath.Join(parsetest.Root(t), "testdata", "bundles", name), out,
		func(rel string, _ []byte) bool { return drop == nil || !drop(rel) })
	for rel, content := range extra {
		if err := os.WriteFile(filepath.Join(out, rel), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestVerdict checks when no finding is a clean bill of health: only when
// the core checks ran on a data plane, an export and a mode the inputs
// establish; otherwise the run is inconclusive and says what to add.
func TestVerdict(t *testing.T) {
	failedSave := `{"schema": 1, "collected_at": "2026-03-02T09:15:00Z", "sources": [
	 {"name": "iptables-nft-save", "method": "exec", "command": ["iptables-nft-save"], "status": "failed", "error": "exit status 4: Permission denied (you must be root)"}]}`
	for _, tc := range []struct {
		name    string
		path    func(t *testing.T) string
		verdict string
		gap     string // in one of the gaps
		command string // in one of the needs' commands
	}{
		{name: "healthy bundle", verdict: checks.VerdictOK,
			path: func(t *testing.T) string { return copyBundle(t, "iptables-healthy", nil, nil) }},
		// nft list table ip kube-proxy and nft list table ip6 kube-proxy,
		// two files: each family's table is read from its own.
		{name: "nft tables in two listings", verdict: checks.VerdictOK,
			path: func(t *testing.T) string {
				data, err := os.ReadFile(filepath.Join(parsetest.Root(t), "testdata", "bundles", "nftables-healthy", "node", "nft-ruleset.txt"))
				if err != nil {
					t.Fatal(err)
				}
				v4, v6, ok := strings.Cut(string(data), "table ip6 kube-proxy {")
				if !ok || !strings.Contains(v4, "table ip kube-proxy {") {
					t.Fatal("nftables-healthy: no table ip kube-proxy then table ip6 kube-proxy")
				}
				return copyBundle(t, "nftables-healthy", func(rel string) bool { return strings.HasPrefix(rel, "node/nft-") },
					map[string]string{"node/nft-ip.txt": v4, "node/nft-ip6.txt": "table ip6 kube-proxy {" + v6})
			}},
		// Legacy Endpoints objects list no terminating endpoint: the
		// endpoints kube-proxy forwards to when none is ready are not
		// judged, and the EndpointSlices are asked for.
		{name: "legacy Endpoints", verdict: checks.VerdictInconclusive,
			gap: "endpoint-stale: not checked against a legacy Endpoints object: ops/drain:http is programmed with 10.88.1.80:8080, 10.88.2.80:8080", command: "kubectl get endpointslices -A",
			path: func(t *testing.T) string {
				return checktest.Load(t, filepath.Join(parsetest.Root(t), "testdata", "scenarios", "iptables", "legacy-endpoints-terminating.txtar")).Dir
			}},
		// The data plane alone: the inventory of services-without-endpoints
		// (info) is found, and the run stays inconclusive.
		{name: "data plane alone", verdict: checks.VerdictInconclusive, gap: "no Services in the inputs", command: "kubectl get services,endpointslices",
			path: func(t *testing.T) string {
				return filepath.Join(parsetest.Root(t), "testdata", "bundles", "nftables-healthy", "node", "nft-ruleset.txt")
			}},
		{name: "no data plane", verdict: checks.VerdictInconclusive, gap: "no nftables data plane", command: "nft list ruleset",
			path: func(t *testing.T) string {
				return copyBundle(t, "nftables-healthy", func(rel string) bool { return strings.HasPrefix(rel, "node/nft-") }, nil)
			}},
		{name: "mode assumed", verdict: checks.VerdictInconclusive, gap: "the proxy mode is assumed", command: "configmap kube-proxy",
			path: func(t *testing.T) string {
				return copyBundle(t, "nftables-healthy", func(rel string) bool {
					return strings.HasPrefix(rel, "node/nft-") || rel == "kube-proxy/config.yaml" || rel == "cluster/kube-proxy-configmap.yaml"
				}, nil)
			}},
		{name: "dump failed when collected", verdict: checks.VerdictInconclusive, gap: "iptables-nft-save source failed", command: "iptables-save",
			path: func(t *testing.T) string {
				return copyBundle(t, "iptables-healthy", nil, map[string]string{"manifest.json": failedSave})
			}},
		{name: "pasted dump", verdict: checks.VerdictOK,
			path: func(t *testing.T) string {
				return copyBundle(t, "iptables-mini", nil, map[string]string{"node/iptables-save.txt": "[root@node-a ~]# iptables-save\n```\n" + miniDump(t) + "```\n"})
			}},
		{name: "pasted dump cut short", verdict: checks.VerdictInconclusive, gap: "is partial: cut short: table nat (line 45) has no COMMIT", command: "iptables-save > iptables-save.txt",
			path: func(t *testing.T) string {
				d := miniDump(t)
				return copyBundle(t, "iptables-mini", nil, map[string]string{"node/iptables-save.txt": d[:len(d)*2/3]})
			}},
		{name: "grep output", verdict: checks.VerdictInconclusive, gap: "lines without a table header", command: "iptables-save > iptables-save.txt",
			path: func(t *testing.T) string {
				var grep []string
				for _, l := range strings.Split(miniDump(t), "\n") {
					if strings.Contains(l, "SVC") {
						grep = append(grep, l)
					}
				}
				return copyBundle(t, "iptables-mini", nil, map[string]string{"node/iptables-save.txt": strings.Join(grep, "\n")})
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snaps, err := load.Load([]string{tc.path(t)}, load.Options{})
			if err != nil {
				t.Fatal(err)
			}
			res := checks.Run(snaps[0], checks.All)
			if got := res.Verdict(); got != tc.verdict {
				t.Fatalf("verdict %s, want %s; coverage %+v; findings %v", got, tc.verdict, res.Coverage, res.Findings)
			}
			if tc.verdict == checks.VerdictOK {
				if !res.Coverage.Complete || len(res.Coverage.Gaps)+len(res.Coverage.Needs) != 0 {
					t.Errorf("a complete run lists gaps: %+v", res.Coverage)
				}
				return
			}
			if !strings.Contains(strings.Join(res.Coverage.Gaps, "\n"), tc.gap) {
				t.Errorf("no gap with %q in %q", tc.gap, res.Coverage.Gaps)
			}
			seen := map[string]bool{}
			for _, g := range res.Coverage.Gaps {
				if seen[g] {
					t.Errorf("gap listed twice: %q", g)
				}
				seen[g] = true
			}
			var cmds []string
			for _, n := range res.Coverage.Needs {
				cmds = append(cmds, n.Command)
			}
			if !strings.Contains(strings.Join(cmds, "\n"), tc.command) {
				t.Errorf("no need with %q in %q", tc.command, cmds)
			}
		})
	}
}

func miniDump(t *testing.T) string {
	data, err := os.ReadFile(filepath.Join(parsetest.Root(t), "testdata", "bundles", "iptables-mini", "node", "iptables-save.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestPartialDumpFindings: on a partial dump, what a check finds missing
// may only be outside the paste, and is noted as not checked; what the
// paste shows wrong is still reported.
func TestPartialDumpFindings(t *testing.T) {
	dir := checktest.Load(t, filepath.Join(parsetest.Root(t), "testdata", "scenarios", "iptables", "endpoint-stale.txtar")).Dir
	dump, err := os.ReadFile(filepath.Join(dir, "node", "iptables-save.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// The lines of shop/web alone: iptables-save | grep shop/web.
	var grep []string
	for _, l := range strings.Split(string(dump), "\n") {
		if strings.Contains(l, "shop/web:http") {
			grep = append(grep, l)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "node", "iptables-save.txt"), []byte(strings.Join(grep, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	snaps, err := load.Load([]string{dir}, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res := checks.Run(snaps[0], checks.All)
	var got []string
	for _, f := range res.Findings {
		got = append(got, f.Check+" "+f.Service+" "+f.Endpoint)
	}
	if want := "endpoint-stale shop/web:http 10.244.3.5:8080"; strings.Join(got, "\n") != want {
		t.Errorf("findings %q, want %q", got, want)
	}
	notes := map[string]string{}
	for _, st := range res.Statuses {
		notes[st.ID] = strings.Join(st.Notes, "\n")
	}
	for id, want := range map[string]string{
		"service-missing":  "not checked for 8 service ports (default/kubernetes:https, kube-system/dns:dns, kube-system/dns:dns-tcp, shop/ext:https, shop/front:web and 3 more)",
		"nodeport-missing": "rules of no Service",
	} {
		if !strings.Contains(notes[id], want) || !strings.Contains(notes[id], "node/iptables-save.txt is partial") {
			t.Errorf("%s notes %q, want %q", id, notes[id], want)
		}
	}
}

// TestVerdictSelectedChecks: a run of other checks than the core ones is
// judged on what it ran.
func TestVerdictSelectedChecks(t *testing.T) {
	path := filepath.Join(parsetest.Root(t), "testdata", "bundles", "nftables-healthy", "node", "nft-ruleset.txt")
	snaps, err := load.Load([]string{path}, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sel, err := checks.Select(checks.All, checks.Options{Only: []string{"ruleset-scale"}})
	if err != nil {
		t.Fatal(err)
	}
	if res := checks.Run(snaps[0], sel); res.Verdict() != checks.VerdictOK {
		t.Errorf("verdict %s of a run of ruleset-scale alone: %+v", res.Verdict(), res.Coverage)
	}
}

// TestRulesetScaleSeverity: a large rule set is a warning when syncs are
// slow, information when they are fast (a size alone is not a fault).
func TestRulesetScaleSeverity(t *testing.T) {
	for name, want := range map[string]checks.Severity{"ruleset-scale.txtar": checks.Warning, "ruleset-scale-fast-syncs.txtar": checks.Info} {
		dir := checktest.Load(t, filepath.Join(parsetest.Root(t), "testdata", "scenarios", "node", name)).Dir
		snaps, err := load.Load([]string{dir}, load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		sel, _ := checks.Select(checks.All, checks.Options{Only: []string{"ruleset-scale"}})
		res := checks.Run(snaps[0], sel)
		if len(res.Findings) != 1 || res.Findings[0].Severity != want {
			t.Errorf("%s: findings %+v, want one of severity %s", name, res.Findings, want)
		}
	}
}

// TestConntrackEmptyIsNotAbsent: a bundle whose conntrack listing ran and
// was empty has no stale flow; one without a listing is skipped.
func TestConntrackEmptyIsNotAbsent(t *testing.T) {
	empty := `{"schema": 1, "collected_at": "2026-03-02T09:15:00Z", "sources": [
	 {"name": "conntrack-dnat", "method": "exec", "command": ["conntrack", "-L"], "status": "ok", "exit_status": 0, "duration_ms": 3, "bytes": 0}]}`
	for name, want := range map[string]string{"": "skipped", empty: "ran"} {
		var extra map[string]string
		if name != "" {
			extra = map[string]string{"manifest.json": name}
		}
		snaps, err := load.Load([]string{copyBundle(t, "iptables-mini", nil, extra)}, load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		sel, _ := checks.Select(checks.All, checks.Options{Only: []string{"conntrack-stale"}})
		res := checks.Run(snaps[0], sel)
		if st := res.Statuses[0]; st.State != want || len(res.Findings) != 0 {
			t.Errorf("manifest %t: conntrack-stale %s (%s), %d findings; want %s", name != "", st.State, st.Reason, len(res.Findings), want)
		}
	}
}

// TestNotApplicable: a skip no input would lift (another mode's check, a
// cross-node check with one node) is marked as such; a skip for an input
// not given is not, nor an IPVS check where the mode is only assumed or
// the configuration says ipvs.
func TestNotApplicable(t *testing.T) {
	ipvsChecks := []string{"ipvs-scheduler-invalid", "ipvs-scheduler-mismatch", "ipvs-module-missing"}
	for _, tc := range []struct {
		name   string
		path   func(t *testing.T) string
		notApp []string // skipped as not applicable
		other  []string // skipped for an input not given
	}{
		{name: "iptables mode configured", path: func(t *testing.T) string { return copyBundle(t, "iptables-healthy", nil, nil) },
			notApp: append([]string{"node-drift"}, ipvsChecks...), other: []string{"sync-slow", "log-errors"}},
		{name: "nftables mode inferred", notApp: append([]string{"node-drift"}, ipvsChecks...), other: []string{"config-invalid", "service-missing"},
			path: func(t *testing.T) string {
				return filepath.Join(parsetest.Root(t), "testdata", "bundles", "nftables-healthy", "node", "nft-ruleset.txt")
			}},
		{name: "mode assumed", notApp: []string{"node-drift"}, other: ipvsChecks,
			path: func(t *testing.T) string {
				return copyBundle(t, "nftables-healthy", func(rel string) bool {
					return strings.HasPrefix(rel, "node/nft-") || rel == "kube-proxy/config.yaml" || rel == "cluster/kube-proxy-configmap.yaml"
				}, nil)
			}},
		{name: "ipvs mode", notApp: []string{"node-drift"}, other: []string{"ipvs-module-missing"},
			path: func(t *testing.T) string { return copyBundle(t, "ipvs-healthy", nil, nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snaps, err := load.Load([]string{tc.path(t)}, load.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]checks.Status{}
			for _, st := range checks.Run(snaps[0], checks.All).Statuses {
				got[st.ID] = st
			}
			for _, id := range tc.notApp {
				if st := got[id]; st.State != "skipped" || !st.NotApplicable {
					t.Errorf("%s: %+v, want skipped as not applicable", id, st)
				}
			}
			for _, id := range tc.other {
				if st := got[id]; st.State != "skipped" || st.NotApplicable {
					t.Errorf("%s: %+v, want skipped for an input not given", id, st)
				}
			}
			for id, st := range got {
				if st.NotApplicable && st.State != "skipped" {
					t.Errorf("%s ran but is marked not applicable", id)
				}
			}
		})
	}
}
