package proxier

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	kpv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/internal/netnstest"
	"github.com/proxyscan/proxyscan/parsers/ipset"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/ipvs"
	"github.com/proxyscan/proxyscan/parsers/kpconfig"
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
			exp, err := expectFor(snap, testOptions{Mode: model.ModeIPVS, Version: kpversion.V(37)})
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

// TestIPVSBundleConformance checks that for every IPVS-mode bundle of
// testdata/bundles (captured from kube-proxy 1.37) the proxier reproduces
// the captured virtual servers, ipsets, kube-ipvs0 addresses and iptables
// rules: Compare finds nothing.
func TestIPVSBundleConformance(t *testing.T) {
	root := "../../testdata/bundles"
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		dir := filepath.Join(root, e.Name())
		if _, err := os.Stat(filepath.Join(dir, "node", "ipvsadm-save.txt")); err != nil || !e.IsDir() {
			continue
		}
		snap := loadScenario(t, dir)
		if snap.Config.EffectiveMode() != model.ModeIPVS {
			continue
		}
		n++
		t.Run(e.Name(), func(t *testing.T) {
			exp, err := expectFor(snap, testOptions{})
			if err != nil {
				t.Fatal(err)
			}
			act, err := Captured(resolved(snap))
			if err != nil {
				t.Fatal(err)
			}
			if act.IPVS == nil || act.IPSets == nil || act.Bound == nil || len(act.IPTables) != len(exp.IPTables) {
				t.Fatalf("capture incomplete: ipvs %v, ipsets %v, kube-ipvs0 %v, %d iptables families (expected %d)",
					act.IPVS != nil, act.IPSets != nil, act.Bound != nil, len(act.IPTables), len(exp.IPTables))
			}
			if len(exp.IPVS.Services) == 0 || len(exp.Bound) == 0 {
				t.Fatal("nothing generated")
			}
			for _, d := range Compare(exp, act) {
				t.Errorf("%s %s %s %s: %s (%s) %s", d.Kind, d.Family, d.Table, d.Chain, d.Rule, d.Service, d.Note)
			}
		})
	}
	if n < 2 {
		t.Fatalf("%d IPVS bundles found, want at least 2", n)
	}
}

// copyBundle copies a bundle directory into a temporary one, applying
// edit to the text of the named files.
func copyBundle(t *testing.T, src string, edit map[string]func(string) string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if f := edit[filepath.ToSlash(rel)]; f != nil {
			data = []byte(f(string(data)))
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func dropLine(t *testing.T, line string) func(string) string {
	return func(s string) string {
		out := strings.Replace(s, line+"\n", "", 1)
		if out == s {
			t.Fatalf("line %q not in the file", line)
		}
		return out
	}
}

func replaceLine(t *testing.T, old, repl string) func(string) string {
	return func(s string) string {
		out := strings.Replace(s, old+"\n", repl+"\n", 1)
		if out == s {
			t.Fatalf("line %q not in the file", old)
		}
		return out
	}
}

// TestIPVSCompareDifferences breaks a healthy IPVS bundle in every part
// of the data plane and checks that Compare names each break, attributed
// to its service port, and that ServiceDiff reports the missing real
// server of the Service.
func TestIPVSCompareDifferences(t *testing.T) {
	edits := map[string]func(string) string{
		"node/ipvsadm-save.txt": func(s string) string {
			s = dropLine(t, "-a -t 172.20.8.12:30180 -r 10.88.2.10:8080 -m -w 1")(s)
			return replaceLine(t, "-a -t 172.20.8.12:30443 -r 10.88.2.10:8443 -m -w 1", "-a -t 172.20.8.12:30443 -r 10.88.2.10:8443 -m -w 0")(s)
		},
		"node/ipset-save.txt": dropLine(t, "add KUBE-6-LOOP-BACK fd88:0:0:2::60,tcp:8080,fd88:0:0:2::60"),
		"node/ip-addr.txt": func(s string) string {
			return strings.Replace(s, "    inet 10.112.0.10/32 scope global kube-ipvs0\n       valid_lft forever preferred_lft forever\n", "", 1)
		},
		"node/iptables-save.txt": dropLine(t, "-A KUBE-SOURCE-RANGES-FIREWALL -j DROP"),
	}
	dir := copyBundle(t, "../../testdata/bundles/ipvs-healthy", edits)
	// The listing form would also be read; the save form is preferred.
	snap := loadScenario(t, dir)
	exp, err := expectFor(snap, testOptions{})
	if err != nil {
		t.Fatal(err)
	}
	act, err := Captured(resolved(snap))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range Compare(exp, act) {
		got = append(got, fmt.Sprintf("%s %s %s %s | %s | %s %s | %s", d.Kind, d.Family, d.Table, d.Chain, d.Rule, d.Service, d.Endpoint, d.Note))
	}
	np := func(port int32) string {
		for _, p := range snap.Ports {
			if p.NodePort == port {
				return p.String()
			}
		}
		return "?"
	}
	ep := func(addr string) string {
		for _, p := range snap.Ports {
			for _, e := range p.Endpoints {
				if e.String() == addr && e.Local {
					return p.String()
				}
			}
		}
		return "?"
	}
	want := []string{
		"missing-real-server IPv4 ipvs 172.20.8.12:30180/TCP | -a -t 172.20.8.12:30180 -r 10.88.2.10:8080 -m -w 1 | " + np(30180) + " 10.88.2.10:8080 | ",
		"real-server-differs IPv4 ipvs 172.20.8.12:30443/TCP | -a -t 172.20.8.12:30443 -r 10.88.2.10:8443 -m -w 0 | " + np(30443) + " 10.88.2.10:8443 | weight 0, expected 1 (weight 0: being removed gracefully while connections drain)",
		"missing-bound-address IPv4 kube-ipvs0  | 10.112.0.10/32 | kube-system/kube-dns:dns  | ",
		"missing-bound-address IPv4 kube-ipvs0  | 10.112.0.10/32 | kube-system/kube-dns:dns-tcp  | ",
		"missing-bound-address IPv4 kube-ipvs0  | 10.112.0.10/32 | kube-system/kube-dns:metrics  | ",
		"missing-rule IPv4 filter KUBE-SOURCE-RANGES-FIREWALL | -A KUBE-SOURCE-RANGES-FIREWALL -j DROP |   | ",
		"missing-set-entry IPv6 ipset KUBE-6-LOOP-BACK | add KUBE-6-LOOP-BACK fd88:0:0:2::60,tcp:8080,fd88:0:0:2::60 | " + ep("[fd88:0:0:2::60]:8080") + " [fd88:0:0:2::60]:8080 | ",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("differences (-want +got):\n%s", diff)
	}
	rep, err := ServiceDiff(resolved(snap), np(30180), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Captured || rep.ExpectedRules == 0 || len(rep.Differences) == 0 || rep.Differences[0].Kind != MissingRealServer ||
		rep.Differences[0].Endpoint != "10.88.2.10:8080" {
		t.Errorf("ServiceDiff %s: %+v", np(30180), rep)
	}
}

// TestIPVSCanonicalMatchesIPTablesSave loads the iptables rules of every
// IPVS golden into the real iptables-restore, after ipset restore of the
// golden's sets, in a scratch network namespace per scenario, and checks
// that iptables-save prints what Canonicalize predicts. Rules with the
// ipvs match are left out when the kernel lacks xt_ipvs (TestCanonicalRule
// pins their form).
func TestIPVSCanonicalMatchesIPTablesSave(t *testing.T) {
	netnstest.RequireRoot(t)
	netnstest.RequireTools(t, "ipset", "iptables-restore", "iptables-save", "ip6tables-restore", "ip6tables-save")
	for _, tc := range ipvsGoldenCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			ns := netnstest.New(t)
			sets, err := os.ReadFile(filepath.Join(tc.golden, "ipset-restore.txt"))
			if err != nil {
				t.Fatal(err)
			}
			ns.Run(sets, "ipset", "restore")
			for _, fam := range []iptables.Family{iptables.IPv4, iptables.IPv6} {
				file, restore, save := "iptables-restore.v4", "iptables-restore", "iptables-save"
				if fam == iptables.IPv6 {
					file, restore, save = "iptables-restore.v6", "ip6tables-restore", "ip6tables-save"
				}
				data, err := os.ReadFile(filepath.Join(tc.golden, file))
				if os.IsNotExist(err) {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				var kept []string
				for _, l := range strings.Split(string(data), "\n") {
					if !strings.Contains(l, " -m ipvs ") {
						kept = append(kept, l)
					}
				}
				text := []byte(strings.Join(kept, "\n"))
				ns.Run(text, restore)
				back, err := iptables.Parse(save, ns.Run(nil, save))
				if err != nil {
					t.Fatal(err)
				}
				in, err := iptables.Parse(file, text)
				if err != nil {
					t.Fatal(err)
				}
				in.Family = fam
				c, err := Canonicalize(in)
				if err != nil {
					t.Fatal(err)
				}
				got, want := map[string][]string{}, map[string][]string{}
				for _, tb := range c.Tables {
					for _, ch := range tb.Chains {
						for _, r := range ch.Rules {
							want[tb.Name+" "+ch.Name] = append(want[tb.Name+" "+ch.Name], r.Raw)
						}
						if bc := back.Chain(tb.Name, ch.Name); bc != nil {
							for _, r := range bc.Rules {
								got[tb.Name+" "+ch.Name] = append(got[tb.Name+" "+ch.Name], r.Raw)
							}
						}
					}
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s: iptables-save differs from Canonicalize (-canonical +iptables-save):\n%s", file, diff)
				}
			}
		})
	}
}

// captureOf parses the expected files back as a captured data plane,
// what a node that matches gives.
func captureOf(t *testing.T, exp *Dataplane) *Dataplane {
	t.Helper()
	act := &Dataplane{Mode: model.ModeIPVS, Bound: append([]netip.Addr{}, exp.Bound...), ports: exp.ports, ipvs: &ipvsExtra{}}
	for _, f := range exp.Files {
		var err error
		switch f.Name {
		case "ipvsadm-save.txt":
			act.IPVS, err = ipvs.ParseSave("node/"+f.Name, f.Data)
		case "ipset-save.txt":
			act.IPSets, err = ipset.Parse("node/"+f.Name, f.Data)
		case "iptables-save.txt", "ip6tables-save.txt":
			var d *iptables.Dump
			if d, err = iptables.Parse("node/"+f.Name, f.Data); err == nil {
				if f.Name == "ip6tables-save.txt" {
					d.Family = iptables.IPv6
				} else {
					d.Family = iptables.IPv4
				}
				act.IPTables = append(act.IPTables, d)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return act
}

// TestIPVSConfig checks the settings the upstream scenarios leave at their
// defaults: the mh scheduler (mh-port flag), ipvs.excludeCIDRs (virtual
// servers in them are not kube-proxy's to compare), the connection
// timeouts, and the versions modelled.
func TestIPVSConfig(t *testing.T) {
	load := func(t *testing.T, edit func(c *kpv1alpha1.KubeProxyConfiguration)) *model.Snapshot {
		snap := loadScenario(t, "../../testdata/upstream/scenarios/session-affinity")
		for _, c := range []*kpconfig.Config{snap.Config.Effective, snap.Config.Read} {
			if c != nil {
				edit(&c.Config)
			}
		}
		return snap
	}
	t.Run("mh", func(t *testing.T) {
		snap := load(t, func(c *kpv1alpha1.KubeProxyConfiguration) { c.IPVS.Scheduler = "mh" })
		exp, err := expectFor(snap, testOptions{Mode: model.ModeIPVS})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range exp.IPVS.Services {
			if s.SchedName != "mh" || s.Flags&ipvs.FlagSchedMask != ipvs.FlagSched2 {
				t.Errorf("%s: scheduler %s flags %#x, want mh with mh-port", s, s.SchedName, s.Flags)
			}
		}
		if text := string(exp.Files[1].Data); !strings.Contains(text, "-A -t 10.112.50.10:80 -s mh -p 10800 -b mh-port\n") {
			t.Errorf("ipvsadm-save.txt lacks the mh-port service line:\n%s", text)
		}
		act := captureOf(t, exp)
		act.IPVS.Services[0].SchedName = "rr"
		act.IPVS.Services[0].Flags &^= ipvs.FlagSchedMask
		diffs := Compare(exp, act)
		if len(diffs) != 1 || diffs[0].Kind != VirtualServerDiffers || !strings.Contains(diffs[0].Note, "scheduler rr") {
			t.Errorf("differences %+v, want the scheduler of %s", diffs, act.IPVS.Services[0])
		}
	})
	t.Run("mh-versions", func(t *testing.T) {
		// FlagSourceHash (mh-port) is set from 1.27 on.
		snap := load(t, func(c *kpv1alpha1.KubeProxyConfiguration) { c.IPVS.Scheduler = "mh" })
		for _, tc := range []struct {
			minor int
			flag  uint32
			line  string
		}{
			{26, 0, "-A -t 10.112.50.10:80 -s mh -p 10800\n"},
			{27, ipvs.FlagSched2, "-A -t 10.112.50.10:80 -s mh -p 10800 -b mh-port\n"},
		} {
			exp, err := expectFor(snap, testOptions{Mode: model.ModeIPVS, Version: kpversion.V(tc.minor)})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range exp.IPVS.Services {
				if s.SchedName != "mh" || s.Flags&ipvs.FlagSchedMask != tc.flag {
					t.Errorf("1.%d: %s: scheduler %s flags %#x, want mh with scheduler flags %#x", tc.minor, s, s.SchedName, s.Flags, tc.flag)
				}
			}
			if text := string(exp.Files[1].Data); !strings.Contains(text, tc.line) {
				t.Errorf("1.%d: ipvsadm-save.txt lacks %q:\n%s", tc.minor, tc.line, text)
			}
		}
	})
	t.Run("excludeCIDRs", func(t *testing.T) {
		snap := load(t, func(c *kpv1alpha1.KubeProxyConfiguration) { c.IPVS.ExcludeCIDRs = []string{"192.0.2.0/24"} })
		exp, err := expectFor(snap, testOptions{Mode: model.ModeIPVS})
		if err != nil {
			t.Fatal(err)
		}
		act := captureOf(t, exp)
		extra, err := ipvs.ParseSave("node/extra", []byte("-A -t 192.0.2.10:80 -s rr\n-A -t 198.51.100.10:80 -s rr\n"))
		if err != nil {
			t.Fatal(err)
		}
		act.IPVS.Services = append(act.IPVS.Services, extra.Services...)
		diffs := Compare(exp, act)
		if len(diffs) != 1 || diffs[0].Kind != ExtraVirtualServer || diffs[0].Chain != "198.51.100.10:80/TCP" {
			t.Errorf("differences %+v, want only the virtual server outside the excluded CIDR", diffs)
		}
	})
	t.Run("timeouts", func(t *testing.T) {
		snap := load(t, func(c *kpv1alpha1.KubeProxyConfiguration) { c.IPVS.TCPTimeout.Duration = 900 * time.Second })
		exp, err := expectFor(snap, testOptions{Mode: model.ModeIPVS})
		if err != nil {
			t.Fatal(err)
		}
		act := captureOf(t, exp)
		act.ipvs.timeouts = &[3]int{7200, 120, 300}
		diffs := Compare(exp, act)
		if len(diffs) != 1 || diffs[0].Kind != TimeoutsDiffer || diffs[0].Note != "tcp 7200s, configured 900s" {
			t.Errorf("differences %+v, want the tcp timeout", diffs)
		}
		act.ipvs.timeouts = &[3]int{900, 30, 30}
		if diffs := Compare(exp, act); len(diffs) != 0 {
			t.Errorf("unset timeouts compared: %+v", diffs)
		}
	})
	t.Run("versions", func(t *testing.T) {
		snap := loadScenario(t, "../../testdata/upstream/scenarios/clusterip-basic")
		for minor := kpversion.OldestMinor; minor <= kpversion.NewestMinor; minor++ {
			_, err := expectFor(snap, testOptions{Mode: model.ModeIPVS, Version: kpversion.V(minor)})
			switch {
			case minor < modeRanges[model.ModeIPVS].oldest && (err == nil || !strings.Contains(err.Error(), "IPVS mode is not modelled (supported: 1.21 to 1.37)")):
				t.Errorf("1.%d: error %v, want not modelled", minor, err)
			case minor >= modeRanges[model.ModeIPVS].oldest && err != nil:
				t.Errorf("1.%d: %v", minor, err)
			}
		}
	})
}
