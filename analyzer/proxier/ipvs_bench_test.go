package proxier

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/load"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/ipset"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/ipvs"
)

// benchIPAddr is the benchmark node's ip addr: the address NodePort
// virtual servers are created on.
const benchIPAddr = `1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN group default qlen 1000
    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00
    inet 127.0.0.1/8 scope host lo
       valid_lft forever preferred_lft forever
2: eth0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc fq_codel state UP group default qlen 1000
    link/ether 52:54:00:12:34:56 brd ff:ff:ff:ff:ff:ff
    inet 10.0.0.5/24 brd 10.0.0.255 scope global eth0
       valid_lft forever preferred_lft forever
`

// ipvsBenchSnapshot loads the benchmark cluster with the node's ip addr.
func ipvsBenchSnapshot(b *testing.B) *model.Snapshot {
	b.Helper()
	dir := b.TempDir()
	files := map[string]func(*os.File) error{
		"cluster.json": func(f *os.File) error { return benchSpec.WriteJSON(f) },
		"config.yaml":  func(f *os.File) error { _, err := f.Write(benchSpec.Config()); return err },
		"ip-addr.txt":  func(f *os.File) error { _, err := f.WriteString(benchIPAddr); return err },
	}
	var paths []string
	for name, fn := range files {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		if err := fn(f); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, p)
	}
	snaps, err := load.Load(paths, load.Options{Node: benchSpec.Node})
	if err != nil {
		b.Fatal(err)
	}
	return snaps[0]
}

// BenchmarkExpectIPVS generates the IPVS data plane (IPv4) of the
// benchmark cluster: virtual and real servers, ipsets (formatted and
// parsed back), kube-ipvs0 addresses and the iptables rules.
func BenchmarkExpectIPVS(b *testing.B) {
	s := ipvsBenchSnapshot(b)
	opts := testOptions{Mode: model.ModeIPVS, Families: []model.Family{model.IPv4}}
	b.ReportAllocs()
	var vs, rs int
	for b.Loop() {
		dp, err := expectFor(s, opts)
		if err != nil {
			b.Fatal(err)
		}
		vs, rs = len(dp.IPVS.Services), 0
		for _, v := range dp.IPVS.Services {
			rs += len(v.Destinations)
		}
	}
	if want := benchSpec.Services + benchSpec.Services/benchSpec.NodePortEvery; vs < want {
		b.Fatalf("%d virtual servers, want at least %d (cluster IPs and node ports)", vs, want)
	}
	b.ReportMetric(float64(vs), "virtual-servers")
	b.ReportMetric(float64(rs), "real-servers")
}

// BenchmarkCompareIPVS compares the expected IPVS data plane of the
// benchmark cluster with a capture equal to it, parsed from the expected
// files as a healthy node's dumps would be.
func BenchmarkCompareIPVS(b *testing.B) {
	s := ipvsBenchSnapshot(b)
	exp, err := expectFor(s, testOptions{Mode: model.ModeIPVS, Families: []model.Family{model.IPv4}})
	if err != nil {
		b.Fatal(err)
	}
	act := &Dataplane{Mode: model.ModeIPVS, Bound: exp.Bound}
	for _, f := range exp.Files {
		switch f.Name {
		case "ipvsadm-save.txt":
			act.IPVS, err = ipvs.ParseSave("node/"+f.Name, f.Data)
		case "ipset-save.txt":
			act.IPSets, err = ipset.Parse("node/"+f.Name, f.Data)
		case "iptables-save.txt":
			var d *iptables.Dump
			d, err = iptables.Parse("node/"+f.Name, f.Data)
			if err == nil {
				d.Family = iptables.IPv4
				act.IPTables = []*iptables.Dump{d}
			}
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if diffs := Compare(exp, act); len(diffs) != 0 {
			b.Fatalf("%d differences, first %+v", len(diffs), diffs[0])
		}
	}
}
