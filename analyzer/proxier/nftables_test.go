package proxier

import (
	"bufio"
	"bytes"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
	"github.com/proxyscan/proxyscan/parsers/nft"
)

const (
	nftGoldenRoot = "../../testdata/upstream/golden/nftables"
	nftListedRoot = "../../testdata/upstream/listed/nftables"
	nftInputsRoot = "../../testdata/upstream/scenarios"
)

var reModeLine = regexp.MustCompile(`(?m)^mode: .*$`)

// nftScenarios lists the scenarios with nftables goldens.
func nftScenarios(t testing.TB) []string {
	dirs, err := os.ReadDir(nftGoldenRoot)
	if err != nil {
		t.Fatalf("reading goldens: %v", err)
	}
	var out []string
	for _, d := range dirs {
		if d.IsDir() {
			out = append(out, d.Name())
		}
	}
	if len(out) < 15 {
		t.Fatalf("found %d nftables scenarios, want at least 15", len(out))
	}
	return out
}

// loadNFTScenario loads a scenario's inputs with its configuration's mode
// set to nftables, as the harness ran the proxier (so that the start-up
// defaults of the mode apply), and returns the ServiceCIDRs it fed.
func loadNFTScenario(t testing.TB, name string) (*model.Snapshot, Env) {
	t.Helper()
	src := filepath.Join(nftInputsRoot, name)
	dir := t.TempDir()
	copyDir(t, filepath.Join(src, "cluster"), filepath.Join(dir, "cluster"))
	cfg, err := os.ReadFile(filepath.Join(src, "kube-proxy", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "kube-proxy", "config.yaml"), reModeLine.ReplaceAll(cfg, []byte("mode: nftables")))
	env := Env{ServiceCIDRs: []netip.Prefix{}}
	if data, err := os.ReadFile(filepath.Join(src, "service-cidrs.txt")); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			if l := strings.TrimSpace(sc.Text()); l != "" {
				env.ServiceCIDRs = append(env.ServiceCIDRs, netip.MustParsePrefix(l))
			}
		}
	}
	return loadScenario(t.(*testing.T), dir), env
}

func copyDir(t testing.TB, from, to string) {
	t.Helper()
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(to, e.Name()), data)
	}
}

func writeFile(t testing.TB, p string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// readNFTListing parses what nft lists for a scenario's golden.
func readNFTListing(t testing.TB, name string) *nft.Ruleset {
	t.Helper()
	p := filepath.Join(nftListedRoot, name, "nft-ruleset.txt")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := nft.ParseText(p, data)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// TestNFTUpstreamConformance checks that the proxier's nftables data plane
// for kube-proxy 1.37 equals what the real kube-proxy v1.37.2 programmed
// for every scenario, as nft lists it: the same tables, chains (with
// their hooks, priorities, policies and comments) and rules in order, and
// the same sets and maps (types, flags, timeouts, sizes, comments) with
// the same elements, in any order.
func TestNFTUpstreamConformance(t *testing.T) {
	for _, name := range nftScenarios(t) {
		t.Run(name, func(t *testing.T) {
			snap, env := loadNFTScenario(t, name)
			golden := readNFTListing(t, name)
			exp, err := Expect(snap, Options{Mode: model.ModeNFTables, Version: kpversion.V(37), Env: env})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(nftSummary(golden), nftSummary(exp.NFT)); diff != "" {
				t.Errorf("ruleset differs from kube-proxy's (-kube-proxy +proxier):\n%s", diff)
			}
			act := &Dataplane{Mode: model.ModeNFTables, NFT: golden, ports: snap.Ports}
			for _, d := range Compare(exp, act) {
				t.Errorf("Compare: %s %s %s: %s %s (%s)", d.Kind, d.Family, d.Chain, d.Rule, d.Evidence.Text, d.Service)
			}
		})
	}
}

// TestNFTBundleConformance checks that for the nftables bundle captured
// from kube-proxy v1.37.2 the proxier reproduces the captured tables:
// Compare finds nothing, in either family.
func TestNFTBundleConformance(t *testing.T) {
	snap := loadScenario(t, "../../testdata/bundles/nftables-healthy")
	exp, err := Expect(snap, Options{})
	if err != nil {
		t.Fatal(err)
	}
	act, err := Captured(snap, "")
	if err != nil {
		t.Fatal(err)
	}
	if exp.Mode != model.ModeNFTables || act.NFT == nil || len(act.NFT.Tables) != len(exp.NFT.Tables) {
		t.Fatalf("mode %s: captured %v, expected %d tables", exp.Mode, act.NFT != nil, len(exp.NFT.Tables))
	}
	for _, d := range Compare(exp, act) {
		t.Errorf("%s %s %s: %s %s (%s) %s", d.Kind, d.Family, d.Chain, d.Rule, d.Evidence.Text, d.Service, d.Note)
	}
}
