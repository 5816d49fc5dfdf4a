package proxier

import (
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/internal/netnstest"
	"github.com/proxyscan/proxyscan/parsers/ipset"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestIPVSVersionGoldens generates the IPVS data plane of the releases
// before 1.30 for the inputs named by each archive of
// testdata/proxier/ipvs-versions and compares it with the archive's files
// (ipset-save.txt, ipvsadm-save.txt, kube-ipvs0.txt and the iptables-save
// files), which were checked by hand against syncProxyRules and
// writeIptablesRules in pkg/proxy/ipvs/proxier.go of the release the
// archive names (rewrite them with -update, then check the diff by hand
// again).
func TestIPVSVersionGoldens(t *testing.T) {
	parsetest.Golden(t, "proxier/ipvs-versions/*.txtar", func(t *testing.T, name string, a *txtar.Archive) map[string][]byte {
		out := map[string][]byte{}
		for _, f := range expectArchive(t, a, model.ModeIPVS).Files {
			out[f.Name] = f.Data
		}
		return out
	})
}

// TestIPVSVersionsLoad loads the files of every archive of
// testdata/proxier/ipvs-versions with the real tools in a scratch network
// namespace each: ipset restore (ipset save gives the same sets back),
// iptables-restore --test and ip6tables-restore --test (their set matches
// need those sets), and, where the kernel has IPVS, ipvsadm -R (ipvsadm
// -Sn gives the same table back).
func TestIPVSVersionsLoad(t *testing.T) {
	netnstest.RequireRoot(t)
	netnstest.RequireTools(t, "ipset", "iptables-restore", "ip6tables-restore", "ipvsadm")
	for _, file := range parsetest.Files(t, "proxier/ipvs-versions/*.txtar") {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			a, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			files := map[string][]byte{}
			for _, f := range expectArchive(t, a, model.ModeIPVS).Files {
				files[f.Name] = f.Data
			}
			ns := netnstest.New(t)
			sets := files[ipvsFileIPSet]
			ns.Run(sets, "ipset", "restore")
			if got, want := ipsetLines(t, "ipset save", ns.Run(nil, "ipset", "save")), ipsetLines(t, ipvsFileIPSet, sets); got != want {
				t.Errorf("ipset save after ipset restore:\n%s\nwant:\n%s", got, want)
			}
			for name, tool := range map[string]string{"iptables-save.txt": "iptables-restore", "ip6tables-save.txt": "ip6tables-restore"} {
				data, ok := files[name]
				if !ok {
					continue
				}
				if out, err := ns.Try(data, tool, "--test"); err != nil {
					t.Errorf("%s --test rejects %s: %v\n%s", tool, name, err, out)
				}
			}
			t.Run("ipvsadm", func(t *testing.T) {
				if _, err := ns.Try(nil, "ipvsadm", "-Ln"); err != nil {
					t.Skipf("skipping: IPVS is not available in this kernel (load the ip_vs module): %v", err)
				}
				table := files[ipvsFileIPVSAdm]
				ns.Run(table, "ipvsadm", "-R")
				if got, want := sortedText(ns.Run(nil, "ipvsadm", "-Sn")), sortedText(table); got != want {
					t.Errorf("ipvsadm -Sn after ipvsadm -R:\n%s\nwant:\n%s", got, want)
				}
			})
		})
	}
}

// ipsetLines renders the sets of an ipset save listing as sorted "name
// type family" and "name member" lines.
func ipsetLines(t *testing.T, name string, data []byte) string {
	t.Helper()
	d, err := ipset.Parse(name, data)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range d.Sets {
		out = append(out, s.Name+" "+s.Type+" "+s.Family)
		for _, e := range s.Entries {
			out = append(out, s.Name+" "+e.Elem)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// sortedText returns the non-empty lines of data, trimmed and sorted.
func sortedText(data []byte) string {
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// TestIPVSSetRulesSCTPOrder checks the order of the SCTP node port rules
// of KUBE-NODE-PORT: the Local RETURN first from 1.23, after the
// KUBE-MARK-MASQ jump before (ipsetWithIptablesChain of each release).
func TestIPVSSetRulesSCTPOrder(t *testing.T) {
	for _, tc := range []struct {
		minor int
		want  []string
	}{
		{21, []string{"KUBE-NODE-PORT-SCTP-HASH", "KUBE-NODE-PORT-LOCAL-SCTP-HASH"}},
		{22, []string{"KUBE-NODE-PORT-SCTP-HASH", "KUBE-NODE-PORT-LOCAL-SCTP-HASH"}},
		{23, []string{"KUBE-NODE-PORT-LOCAL-SCTP-HASH", "KUBE-NODE-PORT-SCTP-HASH"}},
		{37, []string{"KUBE-NODE-PORT-LOCAL-SCTP-HASH", "KUBE-NODE-PORT-SCTP-HASH"}},
	} {
		var got []string
		res := &resolve.Resolution{Snap: &model.Snapshot{}, Version: model.Version{Version: kpversion.V(tc.minor)}}
		for _, r := range ipvsSetRules(res) {
			if r.proto == "sctp" {
				got = append(got, r.set)
			}
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("1.%d: SCTP node port rules for %v, want %v", tc.minor, got, tc.want)
		}
	}
}
