package proxier

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/ipset"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/ipvs"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
)

const ipvsGoldens = "../../testdata/upstream/golden/ipvs"

// ipvsGoldenCases lists the scenarios with IPVS goldens.
func ipvsGoldenCases(t *testing.T) []conformanceCase {
	dirs, err := os.ReadDir(ipvsGoldens)
	if err != nil {
		t.Fatalf("reading goldens: %v", err)
	}
	var out []conformanceCase
	for _, d := range dirs {
		if d.IsDir() {
			out = append(out, conformanceCase{d.Name(), filepath.Join("../../testdata/upstream/scenarios", d.Name()), filepath.Join(ipvsGoldens, d.Name())})
		}
	}
	if len(out) < 15 {
		t.Fatalf("found %d IPVS scenarios, want at least 15", len(out))
	}
	return out
}

// readIPVSGolden reads what kube-proxy programmed in IPVS mode for one
// scenario as a captured data plane.
func readIPVSGolden(t *testing.T, dir string) *Dataplane {
	t.Helper()
	dp := readGolden(t, dir)
	dp.Mode = model.ModeIPVS
	read := func(name string) []byte {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	var err error
	if dp.IPVS, err = ipvs.ParseSave(filepath.Join(dir, "ipvsadm-save.txt"), read("ipvsadm-save.txt")); err != nil {
		t.Fatal(err)
	}
	if dp.IPSets, err = ipset.Parse(filepath.Join(dir, "ipset-restore.txt"), read("ipset-restore.txt")); err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(strings.TrimSpace(string(read("kube-ipvs0.txt"))), "\n") {
		if l == "" {
			continue
		}
		p, err := netip.ParsePrefix(l)
		if err != nil {
			t.Fatalf("kube-ipvs0.txt:%d: %v", i+1, err)
		}
		dp.Bound = append(dp.Bound, p.Addr())
	}
	if dp.Bound == nil {
		dp.Bound = []netip.Addr{}
	}
	return dp
}

// ipvsTable renders virtual servers with their settings and real servers,
// keyed by the virtual server: the order of both carries no meaning.
func ipvsTable(d *ipvs.Dump) map[string][]string {
	out := map[string][]string{}
	for _, s := range d.Services {
		var rs []string
		for _, dst := range s.Destinations {
			rs = append(rs, fmt.Sprintf("%s fwd=%d weight=%d", dst, dst.ConnectionFlags&ipvs.FwdMask, dst.Weight))
		}
		sort.Strings(rs)
		out[s.String()] = append([]string{virtualServerSettings(s)}, rs...)
	}
	return out
}

// ipsetMembers renders the sets, each with its type, family and sorted
// members.
func ipsetMembers(d *ipset.Dump) map[string][]string {
	out := map[string][]string{}
	for _, s := range d.Sets {
		var es []string
		for _, e := range s.Entries {
			es = append(es, setMemberKey(s, e))
		}
		sort.Strings(es)
		out[s.Name] = append([]string{s.Type + " " + s.Family}, es...)
	}
	return out
}

// ipvsChainRules returns every chain's rules, sorted within the chains
// whose order carries no meaning in IPVS mode.
func ipvsChainRules(d *iptables.Dump) map[string][]string {
	out := map[string][]string{}
	for _, t := range d.Tables {
		for _, c := range t.Chains {
			rules := []string{}
			for _, r := range c.Rules {
				rules = append(rules, r.Raw)
			}
			if ipvsUnorderedChain(t.Name, c.Name) {
				sort.Strings(rules)
			}
			out[t.Name+" "+c.Name] = rules
		}
	}
	return out
}

// TestIPVSUpstreamConformance checks that the proxier's IPVS data plane
// for kube-proxy 1.37 equals what the real kube-proxy v1.37.2 IPVS
// proxier programmed for every scenario: the virtual and real servers,
// the ipsets and their members, the kube-ipvs0 addresses and the iptables
// rules of each family.
func TestIPVSUpstreamConformance(t *testing.T) {
	for _, tc := range ipvsGoldenCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			snap := loadScenario(t, tc.inputs)
			golden := readIPVSGolden(t, tc.golden)
			exp, err := Expect(snap, Options{Mode: model.ModeIPVS, Version: kpversion.V(37)})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(ipvsTable(golden.IPVS), ipvsTable(exp.IPVS)); diff != "" {
				t.Errorf("virtual servers differ from kube-proxy's (-kube-proxy +proxier):\n%s", diff)
			}
			if diff := cmp.Diff(ipsetMembers(golden.IPSets), ipsetMembers(exp.IPSets)); diff != "" {
				t.Errorf("ipsets differ from kube-proxy's (-kube-proxy +proxier):\n%s", diff)
			}
			if diff := cmp.Diff(addrStrings(golden.Bound), addrStrings(exp.Bound)); diff != "" {
				t.Errorf("kube-ipvs0 addresses differ from kube-proxy's (-kube-proxy +proxier):\n%s", diff)
			}
			if got, want := len(exp.IPTables), len(golden.IPTables); got != want {
				t.Fatalf("generated %d families of iptables rules, kube-proxy %d", got, want)
			}
			for i, d := range exp.IPTables {
				if diff := cmp.Diff(ipvsChainRules(golden.IPTables[i]), ipvsChainRules(d)); diff != "" {
					t.Errorf("%s: iptables rules differ from kube-proxy's (-kube-proxy +proxier):\n%s", d.Family, diff)
				}
			}
			golden.ports = snap.Ports
			for _, d := range Compare(exp, golden) {
				t.Errorf("Compare: %s %s %s %s: %s (%s)", d.Kind, d.Family, d.Table, d.Chain, d.Rule, d.Service)
			}
		})
	}
}

func addrStrings(as []netip.Addr) []string {
	out := []string{}
	for _, a := range as {
		out = append(out, a.String())
	}
	sort.Strings(out)
	return out
}
