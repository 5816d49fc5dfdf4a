package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	utilipvs "k8s.io/kubernetes/pkg/proxy/ipvs/util"
)

func TestMain(m *testing.M) {
	setupLogging(0)
	os.Exit(m.Run())
}

// TestGoldens reruns every scenario in every mode and compares the result
// with golden/MODE/NAME. It fails when the harness or the kube-proxy code
// it runs changes behaviour without the goldens being regenerated.
func TestGoldens(t *testing.T) {
	dirs, err := filepath.Glob("../../scenarios/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no scenarios found: %v", err)
	}
	for _, mode := range []string{"iptables", "nftables", "ipvs"} {
		for _, dir := range dirs {
			name := filepath.Base(dir)
			t.Run(mode+"/"+name, func(t *testing.T) {
				if mode == "nftables" && os.Geteuid() != 0 {
					t.Skip("the nftables proxier's constructor checks the nft binary, which needs root")
				}
				if testing.Short() && name == "large-cluster" {
					t.Skip("large scenario skipped in -short mode")
				}
				out := t.TempDir()
				if err := run(mode, dir, out, "", "", options{sort: true, nftPrimaryDefault: true}); err != nil {
					t.Fatal(err)
				}
				golden := filepath.Join("../../golden", mode, name)
				want, _ := filepath.Glob(filepath.Join(golden, "*"))
				got, _ := filepath.Glob(filepath.Join(out, "*"))
				if len(want) == 0 || len(got) != len(want) {
					t.Fatalf("got files %v, want %v", base(got), base(want))
				}
				for _, w := range want {
					wb, _ := os.ReadFile(w)
					gb, err := os.ReadFile(filepath.Join(out, filepath.Base(w)))
					if err != nil {
						t.Fatal(err)
					}
					if string(wb) != string(gb) {
						t.Errorf("%s differs from %s; run regen.sh goldens", filepath.Base(w), golden)
					}
				}
			})
		}
	}
}

func base(paths []string) []string {
	var out []string
	for _, p := range paths {
		out = append(out, filepath.Base(p))
	}
	return out
}

func TestSortServiceRules(t *testing.T) {
	in := []string{
		`-A KUBE-SERVICES -m comment --comment "web/b:http cluster IP" -j X1`,
		`-A KUBE-SERVICES -m comment --comment "web/a:http cluster IP" -j X2`,
		`-A KUBE-SERVICES -m comment --comment "web/b:http external IP" -j X3`,
		`-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -j KUBE-NODEPORTS`,
		`-A KUBE-SERVICES -m comment --comment "web/a6:http cluster IP" -j X4`,
		`-A KUBE-SERVICES -m comment --comment web/0 -j X5`,
	}
	got := sortServiceRules(in)
	// Plain byte order of the service port name: "web/a6:" < "web/a:".
	wantOrder := []string{"X5", "X4", "X2", "X1", "X3", "KUBE-NODEPORTS"}
	for i, w := range wantOrder {
		if !strings.HasSuffix(got[i], w) {
			t.Fatalf("rule %d = %q, want target %s; all: %q", i, got[i], w, got)
		}
	}
}

func TestIPVSOrder(t *testing.T) {
	vs := func(ip, proto string, port uint16) vsEntry {
		return vsEntry{vs: &utilipvs.VirtualServer{Address: net.ParseIP(ip), Protocol: proto, Port: port}}
	}
	in := []vsEntry{
		vs("fd00::1", "TCP", 80), vs("10.0.0.1", "UDP", 53), vs("10.0.0.1", "TCP", 443),
		vs("192.0.2.1", "TCP", 80), vs("10.0.0.1", "TCP", 80), vs("10.0.0.1", "SCTP", 9),
	}
	glibcMsort(in, func(a, b vsEntry) int { return cmpServices(a.vs, b.vs) })
	var got []string
	for _, e := range in {
		got = append(got, e.vs.Protocol+" "+hostPort(e.vs.Address, e.vs.Port))
	}
	// libipvs: IPv4 first, then by protocol number, then by address with
	// a signed difference (192.0.2.1 - 10.0.0.1 overflows to negative).
	want := "TCP 192.0.2.1:80,TCP 10.0.0.1:80,TCP 10.0.0.1:443,UDP 10.0.0.1:53,SCTP 10.0.0.1:9,TCP [fd00::1]:80"
	if strings.Join(got, ",") != want {
		t.Errorf("order %s, want %s", strings.Join(got, ","), want)
	}
}

func TestLoadableIPVSRestore(t *testing.T) {
	in := "*filter\n:KUBE-IPVS-OUT-FILTER - [0:0]\n" +
		"-A KUBE-IPVS-OUT-FILTER -s 203.0.113.41 -m ipvs --vaddr 203.0.113.41 --vproto tcp --vport 80 -j DROP\n" +
		"-A KUBE-IPVS-OUT-FILTER -s fd00::9 -m ipvs --vaddr fd00::9 --vproto sctp --vport 9 -j DROP\nCOMMIT\n"
	loadable, sed := loadableIPVSRestore(in)
	if strings.Contains(loadable, "-m ipvs") {
		t.Errorf("loadable still has -m ipvs:\n%s", loadable)
	}
	for _, want := range []string{
		"-A KUBE-IPVS-OUT-FILTER -s 203.0.113.41 -m comment --comment kpgen-ipvs-1 -j DROP\n",
		"-A KUBE-IPVS-OUT-FILTER -s fd00::9 -m comment --comment kpgen-ipvs-2 -j DROP\n",
	} {
		if !strings.Contains(loadable, want) {
			t.Errorf("loadable lacks %q:\n%s", want, loadable)
		}
	}
	wantSed := "s#-m comment --comment \"?kpgen-ipvs-1\"?( |$)#-m ipvs --vproto 6 --vaddr 203.0.113.41 --vport 80\\1#\n" +
		"s#-m comment --comment \"?kpgen-ipvs-2\"?( |$)#-m ipvs --vproto 132 --vaddr fd00::9 --vport 9\\1#\n"
	if sed != wantSed {
		t.Errorf("sed script\n%s\nwant\n%s", sed, wantSed)
	}
}

func TestIPSetInitval(t *testing.T) {
	// FNV-1a, 32 bit, of the set name.
	if got := ipsetInitval("KUBE-CLUSTER-IP"); got != 0xbd6fca37 {
		t.Errorf("initval = %#x", got)
	}
}
