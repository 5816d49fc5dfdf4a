package checks_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/internal/benchgen"
)

// nodeYAML is the Node object of a generated node, with its pod CIDR
// (the tracer makes a pod's source address up without it, and warns).
func nodeYAML(name string) string {
	return `apiVersion: v1
kind: Node
metadata:
  name: ` + name + `
spec:
  podCIDR: 10.128.0.0/24
  podCIDRs: [10.128.0.0/24]
status:
  addresses:
  - type: InternalIP
    address: 192.168.0.10
`
}

// TestLoadBalanceSkewTraced: a foreign DNAT ahead of kube-proxy's chains
// sends half of a Service's new connections from pods to its first
// endpoint; load-balance-skew reports the traced shares whether the
// Service has a few endpoints or many (those of a long list are
// indexed), and nothing on the same node without the rule.
func TestLoadBalanceSkewTraced(t *testing.T) {
	for _, tc := range []struct {
		perService int
		first      string // the first endpoint's traced share
	}{
		{4, "62.5%"},
		{40, "51.2%"},
	} {
		spec := benchgen.Spec{Services: 3, Endpoints: 3 * tc.perService, Node: "n1"}
		var dump bytes.Buffer
		if err := spec.IPTablesSave(&dump); err != nil {
			t.Fatal(err)
		}
		healthy := dump.String()
		svc := regexp.MustCompile(`-A KUBE-SERVICES -d ([0-9.]+)/32 -p tcp -m comment --comment "ns-000/svc-00000:http cluster IP"`).FindStringSubmatch(healthy)
		if svc == nil {
			t.Fatalf("%d endpoints: no cluster IP or endpoint of ns-000/svc-00000 in the dump", tc.perService)
		}
		// The endpoint chains are listed by hash: the first endpoint of
		// the dispatch is the one its first balancing rule names.
		first := regexp.MustCompile(`ns-000/svc-00000:http -> ([0-9.]+:8080)`).FindStringSubmatch(healthy)
		foreign := "-A PREROUTING -d " + svc[1] + "/32 -p tcp -m tcp --dport 80 -m statistic --mode random --probability 0.50000000000 -j DNAT --to-destination " + first[1] + "\n"
		const anchor = "-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n"
		if !strings.Contains(healthy, anchor) {
			t.Fatal("no jump to KUBE-SERVICES in nat PREROUTING")
		}
		for _, skew := range []bool{false, true} {
			text := healthy
			if skew {
				text = strings.Replace(healthy, anchor, foreign+anchor, 1)
			}
			dir := t.TempDir()
			var cluster bytes.Buffer
			if err := spec.WriteCompactJSON(&cluster); err != nil {
				t.Fatal(err)
			}
			files := map[string][]byte{"iptables-save.txt": []byte(text), "cluster.json": cluster.Bytes(), "config.yaml": spec.Config(), "node.yaml": []byte(nodeYAML(spec.Node))}
			var paths []string
			for name, data := range files {
				p := filepath.Join(dir, name)
				if err := os.WriteFile(p, data, 0o644); err != nil {
					t.Fatal(err)
				}
				paths = append(paths, p)
			}
			snaps, err := load.Load(paths, load.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []checks.Finding
			for _, f := range checks.Run(snaps[0], checks.All).Findings {
				if f.Check == "load-balance-skew" {
					got = append(got, f)
				}
			}
			switch {
			case !skew && len(got) > 0:
				t.Errorf("%d endpoints, no foreign rule: %d findings, first %s", tc.perService, len(got), got[0].Message)
			case skew && len(got) != 1:
				t.Errorf("%d endpoints, foreign DNAT: %d findings, want 1: %v", tc.perService, len(got), got)
			case skew:
				want := "reach the endpoints unevenly: " + first[1] + " " + tc.first
				if !strings.Contains(got[0].Message, want) || got[0].Service != "ns-000/svc-00000:http" {
					t.Errorf("%d endpoints: finding %s: %s, want one containing %q", tc.perService, got[0].Service, got[0].Message, want)
				}
			}
		}
	}
}
