package proxier

import (
	"bufio"
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/nftables"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/internal/netnstest"
	"github.com/proxyscan/proxyscan/parsers/kpconfig"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
	"github.com/proxyscan/proxyscan/parsers/nft"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
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
	return loadNFTVariant(t, name, nil)
}

// loadNFTVariant is loadNFTScenario with the configuration changed by
// edit.
func loadNFTVariant(t testing.TB, name string, edit func(string) string) (*model.Snapshot, Env) {
	t.Helper()
	src := filepath.Join(nftInputsRoot, name)
	dir := t.TempDir()
	copyDir(t, filepath.Join(src, "cluster"), filepath.Join(dir, "cluster"))
	cfg, err := os.ReadFile(filepath.Join(src, "kube-proxy", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg = reModeLine.ReplaceAll(cfg, []byte("mode: nftables"))
	if edit != nil {
		changed := edit(string(cfg))
		if changed == string(cfg) {
			t.Fatal("the edit changed nothing")
		}
		cfg = []byte(changed)
	}
	writeFile(t, filepath.Join(dir, "kube-proxy", "config.yaml"), cfg)
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
			exp, err := expectFor(snap, testOptions{Mode: model.ModeNFTables, Version: kpversion.V(37), Env: env})
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
	exp, err := expectFor(snap, testOptions{})
	if err != nil {
		t.Fatal(err)
	}
	act, err := Captured(resolved(snap))
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

// TestNFTFilesRoundTrip checks that the generated listing is the model in
// nft's text form: it parses back to the same tables, and formatting the
// model gives it byte for byte.
func TestNFTFilesRoundTrip(t *testing.T) {
	for _, name := range []string{"dualstack", "session-affinity", "loadbalancer-sourceranges"} {
		t.Run(name, func(t *testing.T) {
			snap, env := loadNFTScenario(t, name)
			exp, err := expectFor(snap, testOptions{Mode: model.ModeNFTables, Env: env})
			if err != nil {
				t.Fatal(err)
			}
			if len(exp.Files) != 1 || exp.Files[0].Name != "nft-ruleset.txt" {
				t.Fatalf("files %v, want one nft-ruleset.txt", exp.Files)
			}
			data := exp.Files[0].Data
			if !bytes.Equal(data, nft.Format(exp.NFT)) {
				t.Error("the file is not the formatted model")
			}
			back, err := nft.ParseText("back", data)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(nftSummary(exp.NFT), nftSummary(back)); diff != "" {
				t.Errorf("the file parses to another ruleset:\n%s", diff)
			}
		})
	}
}

// TestNFTVersions checks that versions without the nftables mode, or with
// a layout the proxier does not model, give an error naming the version.
func TestNFTVersions(t *testing.T) {
	snap, env := loadNFTScenario(t, "clusterip-basic")
	for _, tc := range []struct {
		minor int
		want  string
	}{
		{28, "kube-proxy 1.28 has no nftables mode"},
		{29, "kube-proxy 1.29 runs the nftables mode only with the NFTablesProxyMode feature gate"},
	} {
		_, err := expectFor(snap, testOptions{Mode: model.ModeNFTables, Version: kpversion.V(tc.minor), Env: env})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("1.%d: error %v, want %q", tc.minor, err, tc.want)
		}
	}
}

// copyNFTBundle copies the nftables bundle into a temporary directory, with
// its text listing changed by edit (nil: the bundle as it is) and without
// the listing forms drop names.
func copyNFTBundle(t *testing.T, edit func(string) string, drop ...string) string {
	t.Helper()
	src := "../../testdata/bundles/nftables-healthy"
	dir := t.TempDir()
	for _, sub := range []string{"cluster", "kube-proxy", "node"} {
		copyDir(t, filepath.Join(src, sub), filepath.Join(dir, sub))
	}
	for _, d := range drop {
		if err := os.Remove(filepath.Join(dir, "node", d)); err != nil {
			t.Fatal(err)
		}
	}
	if edit != nil {
		p := filepath.Join(dir, "node", "nft-ruleset.txt")
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		changed := edit(string(data))
		if changed == string(data) {
			t.Fatal("the edit changed nothing")
		}
		writeFile(t, p, []byte(changed))
	}
	return dir
}

// TestNFTCompareJSONListing checks that a bundle holding only the JSON
// listing (which lacks chain comments and the set flag "dynamic")
// compares clean.
func TestNFTCompareJSONListing(t *testing.T) {
	snap := loadScenario(t, copyNFTBundle(t, nil, "nft-ruleset.txt"))
	exp, err := expectFor(snap, testOptions{})
	if err != nil {
		t.Fatal(err)
	}
	act, err := Captured(resolved(snap))
	if err != nil {
		t.Fatal(err)
	}
	if act.NFT == nil || !nftJSONForm(act.NFT) {
		t.Fatal("no JSON listing captured")
	}
	for _, d := range Compare(exp, act) {
		t.Errorf("%s %s %s: %s (%s) %s", d.Kind, d.Family, d.Chain, d.Rule, d.Service, d.Note)
	}
}

// TestNFTServiceDiff changes the captured listing of the nftables bundle
// and checks that `analyze --service` names each change with its service
// port, and finds nothing for the other Services.
func TestNFTServiceDiff(t *testing.T) {
	const (
		cartElem  = "10.112.60.61 . tcp . 80 : goto service-242WI43H-shop/cart/tcp/http"
		cartRule  = "ip saddr @affinity-BUHRB2YX-shop/cart/tcp/http__10.88.2.31/3000 goto endpoint-BUHRB2YX-shop/cart/tcp/http__10.88.2.31/3000"
		staleName = "service-AAAAAAAA-shop/gone/tcp/http"
	)
	edit := func(s string) string {
		s = strings.Replace(s, "\t\t\t     "+cartElem+",\n", "", 1)
		s = strings.Replace(s, "\t\t"+cartRule+"\n", "", 1)
		return strings.Replace(s, "\tchain services {", "\tchain "+staleName+" {\n\t\tmeta l4proto tcp dnat to 10.88.9.9:80\n\t}\n\n\tchain services {", 1)
	}
	snap := loadScenario(t, copyNFTBundle(t, edit, "nft-ruleset.json"))
	rep, err := ServiceDiff(resolved(snap), "shop/cart", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Mode != model.ModeNFTables || !rep.Captured || rep.ExpectedRules == 0 {
		t.Fatalf("report %+v", rep)
	}
	var got []string
	for _, d := range rep.Differences {
		got = append(got, string(d.Kind)+" "+string(d.Family)+" "+d.Chain+": "+d.Rule+" ("+d.Service+" by "+d.How+")")
	}
	want := []string{
		"missing-rule IPv4 service-242WI43H-shop/cart/tcp/http: " + cartRule + " (shop/cart:http by chain)",
		"missing-element IPv4 service-ips: " + cartElem + " (shop/cart:http by target)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("differences (-want +got):\n%s", diff)
	}
	var orphans []string
	act, err := Captured(resolved(snap))
	if err != nil {
		t.Fatal(err)
	}
	exp, err := expectFor(snap, testOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range Compare(exp, act) {
		if d.Service == "" {
			orphans = append(orphans, string(d.Kind)+" "+d.Chain)
		}
	}
	if diff := cmp.Diff([]string{"extra-chain " + staleName}, orphans); diff != "" {
		t.Errorf("orphans (-want +got):\n%s", diff)
	}
	other, err := ServiceDiff(resolved(snap), "shop/checkout", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(other.Differences) != 0 {
		t.Errorf("shop/checkout: %d differences, want none", len(other.Differences))
	}
}

// TestNFTLoadsWithNFT checks the generated listing with the real nft in a
// scratch network namespace, for every conformance scenario and the
// bundle: `nft -c -f` accepts it, `nft -f` loads it, and what nft lists
// back is the generated ruleset.
func TestNFTLoadsWithNFT(t *testing.T) {
	netnstest.RequireRoot(t)
	netnstest.RequireTools(t, "ip", "nft")
	type gen struct {
		name string
		dp   func(t *testing.T) *Dataplane
	}
	var cases []gen
	for _, name := range nftScenarios(t) {
		cases = append(cases, gen{name, func(t *testing.T) *Dataplane {
			snap, env := loadNFTScenario(t, name)
			dp, err := expectFor(snap, testOptions{Mode: model.ModeNFTables, Env: env})
			if err != nil {
				t.Fatal(err)
			}
			return dp
		}})
	}
	for name, edit := range nftVariants {
		cases = append(cases, gen{name, func(t *testing.T) *Dataplane {
			snap, env := loadNFTVariant(t, "nodeport-etp-local", edit)
			dp, err := expectFor(snap, testOptions{Mode: model.ModeNFTables, Env: env})
			if err != nil {
				t.Fatal(err)
			}
			return dp
		}})
	}
	for minor := 30; minor <= 37; minor++ {
		cases = append(cases, gen{fmt.Sprintf("mini-v1.%d", minor), func(t *testing.T) *Dataplane {
			snap := loadScenario(t, "../../testdata/bundles/iptables-mini")
			if minor == 29 {
				setGates(t, snap, "NFTablesProxyMode=true")
			}
			dp, err := expectFor(snap, testOptions{Mode: model.ModeNFTables, Version: kpversion.V(minor)})
			if err != nil {
				t.Fatal(err)
			}
			return dp
		}})
	}
	for _, file := range parsetest.Files(t, "proxier/nftables-versions/*.txtar") {
		cases = append(cases, gen{"versions/" + strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) *Dataplane {
			a, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			return expectArchive(t, a, model.ModeNFTables)
		}})
	}
	cases = append(cases, gen{"bundle-nftables-healthy", func(t *testing.T) *Dataplane {
		dp, err := expectFor(loadScenario(t, "../../testdata/bundles/nftables-healthy"), testOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return dp
	}})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dp := tc.dp(t)
			data := dp.Files[0].Data
			ns := netnstest.New(t)
			if out, err := ns.Try(data, "nft", "-c", "-f", "-"); err != nil {
				t.Fatalf("nft -c rejects the listing: %v\n%s", err, out)
			}
			ns.Run(data, "nft", "-f", "-")
			listed := ns.Run(nil, "nft", "list", "ruleset")
			back, err := nft.ParseText("listed", listed)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(nftSummary(dp.NFT), nftSummary(back)); diff != "" {
				t.Errorf("nft lists another ruleset (-generated +listed):\n%s", diff)
			}
		})
	}
}

// nftVariants change the configuration of the nodeport-etp-local scenario
// for what no golden covers: node ports on every address (the fib rule),
// another masquerade bit, no local traffic detector.
var nftVariants = map[string]func(string) string{
	"nodeport-addresses-all": func(s string) string {
		return strings.Replace(s, "nodePortAddresses: null", "nodePortAddresses:\n- 0.0.0.0/0\n- ::/0", 1)
	},
	"masquerade-bit-15": func(s string) string {
		return strings.Replace(s, "nftables:\n  masqueradeAll: false\n  masqueradeBit: 14", "nftables:\n  masqueradeAll: false\n  masqueradeBit: 15", 1)
	},
	"no-cluster-cidr": func(s string) string {
		return strings.Replace(s, "clusterCIDR: 10.88.0.0/16", `clusterCIDR: ""`, 1)
	},
}

// TestNFTVariants checks the rules the variants change.
func TestNFTVariants(t *testing.T) {
	for _, tc := range []struct {
		variant, chain string
		want           []string
		absent         string
	}{
		{"nodeport-addresses-all", "services", []string{
			"ip daddr @cluster-ips ip saddr != 10.88.0.0/16 meta mark set meta mark | 0x00004000 comment \"masquerade clusterIP traffic from outside cluster\"",
			"ip daddr . meta l4proto . th dport vmap @service-ips",
			"fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @service-nodeports",
		}, "nodeport-ips"},
		{"nodeport-addresses-all", "nodeport-endpoints-check", []string{
			"ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @no-endpoint-nodeports",
		}, ""},
		{"masquerade-bit-15", "masquerading", []string{
			"meta mark & 0x00008000 != 0x00000000 meta mark set meta mark ^ 0x00008000 masquerade fully-random",
			"ct status dnat ip saddr . ip daddr . meta l4proto . th dport @hairpin-connections masquerade fully-random",
		}, ""},
		{"no-cluster-cidr", "services", []string{
			"ip daddr . meta l4proto . th dport vmap @service-ips",
			"ip daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports",
		}, ""},
		{"no-cluster-cidr", "external-TOVE3TUL-app/np-local/tcp/http", []string{
			"fib saddr type local meta mark set meta mark | 0x00004000 comment \"masquerade local traffic\"",
			"fib saddr type local goto service-TOVE3TUL-app/np-local/tcp/http comment \"short-circuit local traffic\"",
			"goto local-TOVE3TUL-app/np-local/tcp/http",
		}, ""},
	} {
		t.Run(tc.variant+"/"+tc.chain, func(t *testing.T) {
			snap, env := loadNFTVariant(t, "nodeport-etp-local", nftVariants[tc.variant])
			dp, err := expectFor(snap, testOptions{Mode: model.ModeNFTables, Env: env})
			if err != nil {
				t.Fatal(err)
			}
			tb := dp.NFT.Table(nftables.TableFamilyIPv4, "kube-proxy")
			c := tb.Chain(tc.chain)
			if c == nil {
				t.Fatalf("no chain %s", tc.chain)
			}
			var got []string
			for _, r := range c.Rules {
				got = append(got, r.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
			if tc.absent != "" && tb.Set(tc.absent) != nil {
				t.Errorf("set %s exists", tc.absent)
			}
		})
	}
}

// TestNFTVersionGoldens generates the nftables data plane of the releases
// before 1.37 for the inputs named by each archive of
// testdata/proxier/nftables-versions (with the feature gates of its
// optional feature-gates section, NAME=true|false a line, enabled) and
// compares it with the archive's listing, which was checked by hand
// against syncProxyRules and setupNFTables in
// pkg/proxy/nftables/proxier.go of the release it names (rewrite them with
// -update, then check the diff by hand again).
func TestNFTVersionGoldens(t *testing.T) {
	parsetest.Golden(t, "proxier/nftables-versions/*.txtar", func(t *testing.T, name string, a *txtar.Archive) map[string][]byte {
		dp := expectArchive(t, a, model.ModeNFTables)
		return map[string][]byte{dp.Files[0].Name: dp.Files[0].Data}
	})
}

// setGates sets feature gates, each NAME=true or NAME=false, in the
// configuration of snap (the effective one, and the one read).
func setGates(t *testing.T, snap *model.Snapshot, gates ...string) {
	t.Helper()
	if len(gates) == 0 {
		return
	}
	if snap.Config == nil || snap.Config.Effective == nil && snap.Config.Read == nil {
		t.Fatal("the inputs have no kube-proxy configuration to set feature gates in")
	}
	for _, g := range gates {
		name, val, ok := strings.Cut(g, "=")
		if !ok || val != "true" && val != "false" {
			t.Fatalf("feature gate %q: want NAME=true or NAME=false", g)
		}
		for _, c := range []*kpconfig.Config{snap.Config.Effective, snap.Config.Read} {
			if c == nil {
				continue
			}
			if c.Config.FeatureGates == nil {
				c.Config.FeatureGates = map[string]bool{}
			}
			c.Config.FeatureGates[name] = val == "true"
		}
	}
}

// TestNFTCapturedFamilies checks that the families of the captured
// kube-proxy tables decide the proxiers run, as for iptables dumps: the
// bundle with its node's IPv6 address removed still gets both tables.
func TestNFTCapturedFamilies(t *testing.T) {
	snap := loadScenario(t, "../../testdata/bundles/nftables-healthy")
	var v4 []netip.Addr
	for _, a := range snap.Node.Addresses {
		if a.Is4() {
			v4 = append(v4, a)
		}
	}
	snap.Node.Addresses = v4
	snap.Node.Object = nil
	snap.Addrs = nil
	if got := resolved(snap).Families; len(got) != 2 {
		t.Fatalf("families %v, want IPv4 and IPv6", got)
	}
}

// TestNFTElementReplace checks how a second element of the same key is
// written, as nftElementStorage.ensureElem treats it: kept out when its
// verdict is the same (the first comment stays), replacing the first
// otherwise.
func TestNFTElementReplace(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		second, secondComment string
		want                  nftPendingElement
	}{
		{"same verdict", "goto reject-chain", "ns/b:http", nftPendingElement{` comment "ns/a:http"`, "goto reject-chain"}},
		{"other verdict", "drop", "ns/b:http", nftPendingElement{` comment "ns/b:http"`, "drop"}},
	} {
		p := &nftProxier{sets: map[string]*nftSetText{}}
		p.set(nftNoEndpointServicesMap, true)
		p.element(nftNoEndpointServicesMap, "10.0.0.1 . tcp . 80", "ns/a:http", "goto reject-chain")
		p.element(nftNoEndpointServicesMap, "10.0.0.1 . tcp . 80", tc.secondComment, tc.second)
		els := p.sets[nftNoEndpointServicesMap].elements
		if len(els) != 1 || els["10.0.0.1 . tcp . 80"] != tc.want {
			t.Errorf("%s: elements %v, want %v", tc.name, els, tc.want)
		}
	}
}

// TestNFTServiceCIDRObjects: the ServiceCIDR objects of the exports give
// the ranges of the "Drop traffic to unallocated ClusterIPs" rule, before
// those the captured ruleset shows.
func TestNFTServiceCIDRObjects(t *testing.T) {
	dir := t.TempDir()
	src := "../../testdata/bundles/nftables-healthy"
	for _, f := range []string{"cluster/cluster.yaml", "cluster/node.yaml", "kube-proxy/config.yaml", "kube-proxy/version.txt"} {
		data, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rule := func(snap *model.Snapshot) string {
		exp, err := expectFor(snap, testOptions{Mode: model.ModeNFTables})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(exp.Files[0].Data), "\n") {
			if strings.Contains(l, nftUnallocatedComment) && strings.Contains(l, "ip daddr") {
				return strings.TrimSpace(l)
			}
		}
		return ""
	}
	if r := rule(loadScenario(t, dir)); strings.Contains(r, "10.99.0.0/16") {
		t.Fatalf("without ServiceCIDR objects: %q", r)
	}
	cidrs := `apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata:
  name: kubernetes
spec:
  cidrs:
  - 10.96.0.0/12
  - 10.99.0.0/16
`
	if err := os.WriteFile(filepath.Join(dir, "cluster/servicecidrs.yaml"), []byte(cidrs), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := rule(loadScenario(t, dir)); !strings.Contains(r, "10.96.0.0/12") || !strings.Contains(r, "10.99.0.0/16") {
		t.Errorf("with ServiceCIDR objects: %q", r)
	}
}
