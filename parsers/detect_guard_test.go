package parsers

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// guardedDetectors are the regexps of detection tried only on heads that
// hold one of their literals.
var guardedDetectors = map[string]*guarded{
	"iptables table": reIPTablesTable, "ipvs list": reIPVSList, "ipvs save": reIPVSSave,
	"ipset save": reIPSetSave, "ipset list": reIPSetList, "nft table": reNFTTable,
	"yaml kind": reKubeYAMLKind, "yaml apiVersion": reKubeYAMLAPI, "yaml items": reKubeYAMLList,
	"describe head": reDescribeHead, "describe data": reDescribeData, "nft error": reNFTError,
	"json log": reJSONLog, "sysctl": reSysctl, "proc modules": reProcModules, "lsmod": reLsmod,
	"builtin": reBuiltin, "ip addr": reIPAddr, "ip route": reIPRoute, "ip addr oneline": reIPAddrOneline,
	"conntrack": reConntrack, "conntrack stats": reConntrackStat, "conntrack end": reConntrackEnd,
}

// TestGuardsKeepMatches checks that the literals of every guarded regexp
// rule out only heads the regexp does not match: on the head of every
// file of testdata (bundles, scenarios, pastes, parser inputs, ticket
// forms) and on each of its lines, the guarded regexp and the bare one
// agree.
func TestGuardsKeepMatches(t *testing.T) {
	n := 0
	err := filepath.WalkDir(filepath.Join("..", "testdata"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if len(data) > DetectSize {
			data = data[:DetectSize]
		}
		n++
		texts := append([]string{string(data)}, strings.Split(string(data), "\n")...)
		for name, g := range guardedDetectors {
			for _, x := range texts {
				if g.Match([]byte(x)) != g.re.Match([]byte(x)) {
					t.Errorf("%s: %s: guarded %v, regexp %v on %.80q", p, name, g.Match([]byte(x)), g.re.Match([]byte(x)), x)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 500 {
		t.Fatalf("%d files read under testdata, want hundreds", n)
	}
}

// BenchmarkDetect detects the kind of heads that go through most
// detectors before theirs: an iptables dump, a YAML export and a
// sysctl listing, 64 KiB each.
func BenchmarkDetect(b *testing.B) {
	var heads [][]byte
	for _, p := range []string{"bundles/iptables-healthy/node/iptables-save.txt", "bundles/iptables-healthy/cluster/cluster.yaml", "bundles/ipvs-healthy/node/ipvsadm.txt"} {
		data, err := os.ReadFile(filepath.Join("..", "testdata", p))
		if err != nil {
			b.Fatal(err)
		}
		for len(data) < DetectSize {
			data = append(data, data...)
		}
		heads = append(heads, data[:DetectSize])
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, h := range heads {
			Detect(h)
		}
	}
}
