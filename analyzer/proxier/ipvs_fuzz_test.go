package proxier

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/ipset"
	"github.com/proxyscan/proxyscan/parsers/ipvs"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
)

// FuzzCompareIPVS checks that comparing an expected IPVS data plane with
// any IPVS table and ipsets the parsers accept never panics, and that a
// capture equal to the expected files compares clean.
func FuzzCompareIPVS(f *testing.F) {
	dir := filepath.Join("..", "..", "testdata", "upstream", "golden", "ipvs", "loadbalancer-sourceranges")
	table, _ := os.ReadFile(filepath.Join(dir, "ipvsadm-save.txt"))
	sets, _ := os.ReadFile(filepath.Join(dir, "ipset-restore.txt"))
	f.Add(table, sets)
	f.Add([]byte("-A -t 10.0.0.1:80 -s wrr -p 60\n-a -t 10.0.0.1:80 -r 10.1.0.1:80 -m -w 0\n"), []byte("create KUBE-CLUSTER-IP hash:ip,port family inet\nadd KUBE-CLUSTER-IP 10.0.0.1,17:80\n"))
	snaps, err := load.Load([]string{filepath.Join("..", "..", "testdata", "upstream", "scenarios", "loadbalancer-sourceranges")}, load.Options{})
	if err != nil || len(snaps) != 1 {
		f.Fatalf("loading the scenario: %v", err)
	}
	exp, err := expectFor(snaps[0], testOptions{Mode: model.ModeIPVS, Version: kpversion.V(37)})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, table, sets []byte) {
		act := &Dataplane{Mode: model.ModeIPVS, IPTables: exp.IPTables, canonical: true, Bound: exp.Bound}
		if d, err := ipvs.Parse("fuzz-ipvs", table); err == nil {
			act.IPVS = d
		}
		if d, err := ipset.Parse("fuzz-ipset", sets); err == nil {
			act.IPSets = d
		}
		_ = Compare(exp, act)
		_ = ipvsExpectedItems(exp, "ns/name")
	})
}
