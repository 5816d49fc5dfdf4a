package checks_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/checktest"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/internal/netnstest"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/nft"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

var capture = flag.Bool("capture", false, "re-capture the nft listings of testdata/upstream/listed (needs root and nft)")

// The upstream nftables goldens (testdata/upstream/golden/nftables/NAME/
// nft-dump.v4, .v6) are what kube-proxy v1.37.2's nftables proxier
// programmed, in knftables' transaction form (`add table`, `add chain`,
// `add rule`, `add element`, ...). A node never shows that form: nft lists
// what the kernel holds. So the goldens are loaded with the real `nft -f`
// into a scratch network namespace and listed with `nft list ruleset` and
// `nft -j list ruleset`; the listings are kept in
// testdata/upstream/listed/nftables/NAME/ and analysed like a node's.

func upstreamRoot(t *testing.T) string {
	return filepath.Join(parsetest.Root(t), "testdata", "upstream")
}

// nftGoldenScenarios returns the scenarios that have nftables goldens.
func nftGoldenScenarios(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(upstreamRoot(t), "golden", "nftables", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no nftables goldens: %v", err)
	}
	var out []string
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "nft-dump.v4")); err == nil {
			out = append(out, filepath.Base(d))
		}
	}
	return out
}

// TestUpstreamNFTListings loads every nftables golden with nft -f into a
// scratch network namespace, lists it, and compares the listings with the
// committed ones (rewritten with -capture).
func TestUpstreamNFTListings(t *testing.T) {
	netnstest.RequireRoot(t)
	netnstest.RequireTools(t, "ip", "nft")
	root := upstreamRoot(t)
	for _, name := range nftGoldenScenarios(t) {
		t.Run(name, func(t *testing.T) {
			ns := netnstest.New(t)
			for _, v := range []string{"nft-dump.v4", "nft-dump.v6"} {
				data, err := os.ReadFile(filepath.Join(root, "golden", "nftables", name, v))
				if os.IsNotExist(err) {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				ns.Run(data, "nft", "-f", "-")
			}
			got := map[string][]byte{
				"nft-ruleset.txt":  ns.Run(nil, "nft", "list", "ruleset"),
				"nft-ruleset.json": ns.Run(nil, "nft", "-j", "list", "ruleset"),
			}
			dir := filepath.Join(root, "listed", "nftables", name)
			for file, data := range got {
				p := filepath.Join(dir, file)
				if *capture {
					if err := os.MkdirAll(dir, 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(p, data, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(p)
				if err != nil {
					t.Fatalf("%v (capture the listings with go test ./analyzer/checks -run TestUpstreamNFTListings -capture)", err)
				}
				if !bytes.Equal(want, data) {
					t.Errorf("%s differs from what nft lists for the golden; re-capture with -capture", p)
				}
			}
		})
	}
}

var reModeLine = regexp.MustCompile(`(?m)^mode: .*$`)

// TestUpstreamNFTGoldensAreClean analyses what the real kube-proxy v1.37.2
// nftables proxier programmed for each conformance scenario (as nft lists
// it, in text and in JSON) together with the scenario's Services,
// EndpointSlices, Node and configuration (its mode set to nftables, as the
// harness ran the proxier): every finding is a false positive.
func TestUpstreamNFTGoldensAreClean(t *testing.T) {
	root := upstreamRoot(t)
	for _, name := range nftGoldenScenarios(t) {
		for _, form := range []string{"nft-ruleset.txt", "nft-ruleset.json"} {
			t.Run(name+"/"+form, func(t *testing.T) {
				listing, err := os.ReadFile(filepath.Join(root, "listed", "nftables", name, form))
				if err != nil {
					t.Fatal(err)
				}
				dir := t.TempDir()
				parsetest.CopyTree(t, filepath.Join(root, "scenarios", name, "cluster"), filepath.Join(dir, "cluster"), nil)
				cfg, err := os.ReadFile(filepath.Join(root, "scenarios", name, "kube-proxy", "config.yaml"))
				if err != nil {
					t.Fatal(err)
				}
				cfg = reModeLine.ReplaceAll(cfg, []byte("mode: nftables"))
				write(t, filepath.Join(dir, "kube-proxy", "config.yaml"), cfg)
				write(t, filepath.Join(dir, "node", form), listing)
				snaps, err := load.Load([]string{dir}, load.Options{})
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range snaps {
					if len(s.NFT) != 1 || len(s.ActivePorts()) == 0 {
						t.Fatalf("%d nft rulesets, %d service ports: nothing to analyse", len(s.NFT), len(s.ActivePorts()))
					}
					res := checks.Run(s, checks.All)
					if res.Mode != "nftables" {
						t.Fatalf("mode %s (%s)", res.Mode, res.ModeSource)
					}
					for _, f := range res.Findings {
						t.Errorf("%s: %s: %s (%v)", f.Check, f.Service, f.Message, f.Evidence)
					}
					for _, st := range res.Statuses {
						// The checks of the rules must run (those of iptables
						// rules, iptables-backend-mixed and foreign-rules, need
						// iptables-save, which an nftables node need not have);
						// those of node state skip for want of inputs.
						c := checks.ByID(st.ID)
						if st.State == "skipped" && c != nil && c.RunFleet == nil && readsRules(c) && !slices.Contains(c.Needs, checks.NeedIPTables) {
							t.Errorf("%s skipped: %s", st.ID, st.Reason)
						}
					}
				}
			})
		}
	}
}

func write(t *testing.T, p string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// layoutListings maps the hand-written nft -f inputs of testdata/layouts
// to the bundle directory holding their listings.
var layoutListings = map[string]string{
	"nftables-v1.29.nft": "bundles/nftables-v1.29/node",
}

// TestLayoutListings loads the hand-written layouts of testdata/layouts
// with nft -f into a scratch network namespace and compares what nft lists
// with the listings of their bundles (rewritten with -capture).
func TestLayoutListings(t *testing.T) {
	netnstest.RequireRoot(t)
	netnstest.RequireTools(t, "ip", "nft")
	td := filepath.Join(parsetest.Root(t), "testdata")
	for src, out := range layoutListings {
		t.Run(src, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(td, "layouts", src))
			if err != nil {
				t.Fatal(err)
			}
			ns := netnstest.New(t)
			ns.Run(data, "nft", "-f", "-")
			got := map[string][]byte{
				"nft-ruleset.txt":  ns.Run(nil, "nft", "list", "ruleset"),
				"nft-ruleset.json": ns.Run(nil, "nft", "-j", "list", "ruleset"),
			}
			for file, data := range got {
				p := filepath.Join(td, filepath.FromSlash(out), file)
				if *capture {
					write(t, p, data)
					continue
				}
				want, err := os.ReadFile(p)
				if err != nil {
					t.Fatalf("%v (capture with -capture)", err)
				}
				if !bytes.Equal(want, data) {
					t.Errorf("%s differs from what nft lists for %s; re-capture with -capture", p, src)
				}
			}
		})
	}
}

// TestNFTScenarioListingsAreReal loads the nft listing of every nftables
// scenario (without its want lines) with nft -f into a scratch network
// namespace and checks that nft lists it unchanged: the scenarios show what
// a node can hold, in nft's own spelling and order. A JSON listing is
// loaded through its text form and compared with nft -j's listing.
func TestNFTScenarioListingsAreReal(t *testing.T) {
	netnstest.RequireRoot(t)
	netnstest.RequireTools(t, "ip", "nft")
	for _, file := range checktest.Files(t, "scenarios/nftables/*.txtar") {
		a, err := txtar.ParseFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range a.Files {
			kind := parsers.Detect(f.Data)
			if kind != parsers.KindNFTText && kind != parsers.KindNFTJSON {
				continue
			}
			t.Run(filepath.Base(file)+"/"+f.Name, func(t *testing.T) {
				ns := netnstest.New(t)
				if kind == parsers.KindNFTText {
					var b bytes.Buffer
					for _, line := range strings.SplitAfter(string(f.Data), "\n") {
						if !strings.HasPrefix(strings.TrimSpace(line), "# want") {
							b.WriteString(line)
						}
					}
					if recipe, ok := mixedListings[filepath.Base(file)]; ok {
						netnstest.RequireTools(t, "iptables-nft-restore", "ip6tables-nft-restore", "ipset", "nfacct")
						bundles := filepath.Join(parsetest.Root(t), "testdata", "bundles")
						for _, step := range recipe {
							ns.Run(nil, "sh", "-c", strings.ReplaceAll(step, "$B", bundles))
						}
					} else {
						ns.Run(b.Bytes(), "nft", "-f", "-")
					}
					if got := ns.Run(nil, "nft", "list", "ruleset"); !bytes.Equal(got, b.Bytes()) {
						t.Errorf("nft lists the ruleset differently:\n%s", got)
					}
					return
				}
				rs, err := nft.ParseJSON(f.Name, f.Data)
				if err != nil {
					t.Fatal(err)
				}
				ns.Run(nft.Format(rs), "nft", "-f", "-")
				if got := ns.Run(nil, "nft", "-j", "list", "ruleset"); !bytes.Equal(got, f.Data) {
					t.Errorf("nft -j lists the ruleset differently:\n%s", got)
				}
			})
		}
	}
}

// mixedListings holds how the listings of the mode-mismatch scenarios were
// made: they hold iptables-nft tables, which nft -f cannot load back, so
// the test rebuilds them from the example bundles ($B) as their comments
// say and compares what nft lists.
var mixedListings = map[string][]string{
	"mode-mismatch-nftables-with-iptables.txtar": iptablesAndNFT,
	"mode-mismatch-iptables-with-nftables.txtar": iptablesAndNFT,
	"mode-mismatch-nftables-with-ipvs.txtar":     ipvsAndNFT,
	"mode-mismatch-ipvs-with-nftables.txtar":     ipvsAndNFT,
}

var iptablesAndNFT = []string{
	"nfacct add ct_state_invalid_dropped_pkts && nfacct add localhost_nps_accepted_pkts",
	"iptables-nft-restore < $B/iptables-healthy/node/iptables-save.txt",
	"ip6tables-nft-restore < $B/iptables-healthy/node/ip6tables-save.txt",
	"nft -f $B/nftables-healthy/node/nft-ruleset.txt",
}

var ipvsAndNFT = []string{
	"ipset restore < $B/ipvs-healthy/node/ipset-save.txt",
	"iptables-nft-restore < $B/ipvs-healthy/node/iptables-save.txt",
	"ip6tables-nft-restore < $B/ipvs-healthy/node/ip6tables-save.txt",
	"nft -f $B/nftables-healthy/node/nft-ruleset.txt",
}
