package cmd

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/internal/netnstest"
	"github.com/proxyscan/proxyscan/parsers/ipset"
)

// ipvsScenarios lists the inputs expect --mode ipvs is tested on: the
// upstream scenarios and the IPVS bundles.
func ipvsScenarios(t *testing.T) []string {
	root := testdata(t, "upstream", "scenarios")
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, filepath.Join(root, e.Name()))
		}
	}
	return append(out, testdata(t, "bundles", "ipvs-healthy"), testdata(t, "bundles", "ipvs-healthy-mini"))
}

// TestExpectIPVSOutput checks the files and stdout of expect --mode ipvs.
func TestExpectIPVSOutput(t *testing.T) {
	dir := testdata(t, "upstream", "scenarios", "dualstack")
	out := t.TempDir()
	f, stdio := testFactory()
	if code := Run(f, []string{"expect", dir, "--mode", "ipvs", "--dir", out}); code != 0 {
		_, errOut := stdio()
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, name := range []string{"ipset-save.txt", "ipvsadm-save.txt", "kube-ipvs0.txt", "iptables-save.txt", "ip6tables-save.txt"} {
		data, err := os.ReadFile(filepath.Join(out, name))
		if err != nil || len(data) == 0 {
			t.Errorf("%s: %v (%d bytes)", name, err, len(data))
		}
	}
	f, stdio = testFactory()
	if code := Run(f, []string{"expect", dir, "--mode", "ipvs", "--family", "IPv6"}); code != 0 {
		_, errOut := stdio()
		t.Fatalf("exit %d: %s", code, errOut)
	}
	stdout, _ := stdio()
	for _, want := range []string{
		"# proxyscan expect: ipvsadm-save.txt, kube-proxy 1.37 ipvs mode, IPv6, node east-w2\n-A -t [",
		"add KUBE-6-CLUSTER-IP fd00:112::46:11,tcp:80\n",
		"# proxyscan expect: ip6tables-save.txt, kube-proxy 1.37 ipvs mode, IPv6",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	if strings.Contains(stdout, "iptables-save.txt") || strings.Contains(stdout, "KUBE-CLUSTER-IP") {
		t.Error("--family IPv6 printed IPv4 files or sets")
	}
	f, stdio = testFactory()
	if code := Run(f, []string{"expect", dir, "--mode", "ipvs", "--version", "1.20"}); code != 2 {
		t.Errorf("--version 1.20: exit %d, want 2", code)
	}
	if _, errOut := stdio(); !strings.Contains(errOut, "kube-proxy 1.20 IPVS mode is not modelled (supported: 1.21 to 1.37)") {
		t.Errorf("--version 1.20: stderr %q", errOut)
	}
}

// sortedLines returns the non-empty lines of s, sorted.
func sortedLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

// ipsetContent renders sets as "name type family" and "name member"
// lines, sorted, for comparing what ipset restore loaded.
func ipsetContent(t *testing.T, name string, data []byte) []string {
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
	return out
}

// TestExpectIPVSLoads writes expect --mode ipvs's files for every
// scenario and loads them with the real tools in a scratch network
// namespace per scenario: ipset restore (and ipset save gives the same
// sets back), iptables-restore --test and ip6tables-restore --test (whose
// set matches need those sets), and, where the kernel has IPVS, ipvsadm
// -R (and ipvsadm -Sn gives the same table back).
func TestExpectIPVSLoads(t *testing.T) {
	netnstest.RequireRoot(t)
	netnstest.RequireTools(t, "ipset", "iptables-restore", "ip6tables-restore", "ipvsadm")
	loaded := 0
	for _, dir := range ipvsScenarios(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			out := t.TempDir()
			f, stdio := testFactory()
			if code := Run(f, []string{"expect", dir, "--mode", "ipvs", "--dir", out}); code != 0 {
				_, errOut := stdio()
				t.Fatalf("exit %d: %s", code, errOut)
			}
			read := func(name string) []byte {
				data, err := os.ReadFile(filepath.Join(out, name))
				if err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
				return data
			}
			ns := netnstest.New(t)
			sets := read("ipset-save.txt")
			ns.Run(sets, "ipset", "restore")
			saved := ns.Run(nil, "ipset", "save")
			if got, want := strings.Join(ipsetContent(t, "ipset save", saved), "\n"), strings.Join(ipsetContent(t, "ipset-save.txt", sets), "\n"); got != want {
				t.Errorf("ipset save after ipset restore differs:\n%s", lineDiff(want, got))
			}
			for name, tool := range map[string]string{"iptables-save.txt": "iptables-restore", "ip6tables-save.txt": "ip6tables-restore"} {
				data := read(name)
				if data == nil {
					continue
				}
				if _, err := ns.Try(data, tool, "--test"); err != nil {
					t.Errorf("%s --test rejects %s: %v", tool, name, err)
				}
				loaded++
			}
			t.Run("ipvsadm", func(t *testing.T) {
				if _, err := ns.Try(nil, "ipvsadm", "-Ln"); err != nil {
					t.Skipf("skipping: IPVS is not available in this kernel (load the ip_vs module): %v", err)
				}
				table := read("ipvsadm-save.txt")
				ns.Run(table, "ipvsadm", "-R")
				back := ns.Run(nil, "ipvsadm", "-Sn")
				if got, want := strings.Join(sortedLines(string(back)), "\n"), strings.Join(sortedLines(string(table)), "\n"); got != want {
					t.Errorf("ipvsadm -Sn after ipvsadm -R differs:\n%s", lineDiff(want, got))
				}
			})
		})
	}
	t.Logf("%d iptables files loaded", loaded)
}

// TestAnalyzeServiceIPVS checks analyze --service on an IPVS-mode bundle.
func TestAnalyzeServiceIPVS(t *testing.T) {
	mini := testdata(t, "bundles", "ipvs-healthy-mini")
	f, stdio := testFactory()
	code := Run(f, []string{"analyze", mini, "--service", "default/kubernetes", "-o", "table"})
	out, errOut := stdio()
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if want := "default/kubernetes on node node-a: kube-proxy 1.37 ipvs mode, 5 expected rules; the captured data plane matches"; !strings.Contains(out, want) {
		t.Errorf("stdout lacks %q:\n%s", want, out)
	}
}
