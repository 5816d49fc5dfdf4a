package checks_test

import (
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
)

// TestModulesPartial: a module listing filtered on its way into the
// ticket (lsmod | grep ip_vs, which drops lsmod's header too) proves
// nothing by the modules it leaves out: ipvs-module-missing notes them
// and the run is inconclusive, asking for the whole listing; a whole
// listing that lacks one is a finding; a filtered one that shows every
// module needed is complete.
func TestModulesPartial(t *testing.T) {
	const lsmodHeader = "Module                  Size  Used by\n"
	const ipvs = "ip_vs_rr               16384  8\nip_vs                 176128  14 ip_vs_rr\n"
	const conntrack = "nf_conntrack          172032  6 ip_vs\n"
	for _, tc := range []struct {
		name, modules string
		finding       bool
		gap           string
	}{
		{name: "whole lsmod without nf_conntrack", modules: lsmodHeader + ipvs, finding: true},
		{name: "lsmod | grep ip_vs", modules: "[root@node-a ~]# lsmod | grep ip_vs\n" + ipvs,
			gap: "ipvs-module-missing: kernel modules not checked: nf_conntrack (connection tracking of IPVS connections): node/modules.txt is partial (lsmod lines without lsmod's header; filtered by `grep ip_vs` on the command line above it)"},
		{name: "grep keeping the header", modules: "$ lsmod | grep -E 'Module|ip_vs'\n" + lsmodHeader + ipvs,
			gap: "node/modules.txt is partial (filtered by `grep -E 'Module|ip_vs'` on the command line above it)"},
		{name: "headerless, nothing missing", modules: ipvs + conntrack},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyBundle(t, "ipvs-healthy-mini", nil, map[string]string{"node/modules.txt": tc.modules})
			snaps, err := load.Load([]string{dir}, load.Options{})
			if err != nil {
				t.Fatal(err)
			}
			res := checks.Run(snaps[0], checks.All)
			found := false
			for _, f := range res.Findings {
				found = found || f.Check == "ipvs-module-missing"
			}
			if found != tc.finding {
				t.Errorf("ipvs-module-missing finding: %t, want %t (findings %v)", found, tc.finding, res.Findings)
			}
			gaps := strings.Join(res.Coverage.Gaps, "\n")
			if tc.gap == "" && strings.Contains(gaps, "kernel modules") || tc.gap != "" && !strings.Contains(gaps, tc.gap) {
				t.Errorf("gaps %q, want %q", res.Coverage.Gaps, tc.gap)
			}
			needs := false
			for _, n := range res.Coverage.Needs {
				needs = needs || strings.Contains(n.Command, "/proc/modules")
			}
			if needs != (tc.gap != "") {
				t.Errorf("needs %v: asking for the whole listing %t, want %t", res.Coverage.Needs, needs, tc.gap != "")
			}
		})
	}
}
