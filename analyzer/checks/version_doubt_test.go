package checks_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/checktest"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestVersionDoubtGap: a Node's version the rules' layout contradicts is
// not taken, and what only that release writes is not checked: the run is
// inconclusive with that gap, asking for kube-proxy's version, not ok.
func TestVersionDoubtGap(t *testing.T) {
	s := checktest.Load(t, filepath.Join(parsetest.Root(t), "testdata", "scenarios", "iptables", "healthy-v1.20-node-says-1.21.txtar"))
	snaps, err := load.Load([]string{s.Dir}, s.Options)
	if err != nil {
		t.Fatal(err)
	}
	res := checks.Run(snaps[0], checks.All)
	if v := res.Verdict(); v != checks.VerdictInconclusive {
		t.Errorf("verdict %s, want %s", v, checks.VerdictInconclusive)
	}
	found := false
	for _, g := range res.Coverage.Gaps {
		found = found || strings.HasPrefix(g, "the kube-proxy version is uncertain: status.nodeInfo.kubeProxyVersion of Node node-a says v1.21.14")
	}
	if !found {
		t.Errorf("gaps %q hold no uncertain version", res.Coverage.Gaps)
	}
	needs := false
	for _, n := range res.Coverage.Needs {
		needs = needs || strings.Contains(n.Command, "kube-proxy --version")
	}
	if !needs {
		t.Errorf("needs %+v do not ask for kube-proxy's version", res.Coverage.Needs)
	}
}
