package resolve_test

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

func bundle(t *testing.T, name string) string {
	return filepath.Join(parsetest.Root(t), "testdata", "bundles", name)
}

// copyWithout copies a bundle directory leaving out the files drop
// selects (by path relative to the bundle).
func copyWithout(t *testing.T, dir string, drop func(rel, content string) bool) string {
	t.Helper()
	out := t.TempDir()
	parsetest.CopyTree(t, dir, out, func(rel string, data []byte) bool { return !drop(rel, string(data)) })
	return out
}

// withLog copies dir with a kube-proxy log whose start-up line (line 2)
// says msg.
func withLog(t *testing.T, dir, msg string) string {
	t.Helper()
	out := copyWithout(t, dir, func(string, string) bool { return false })
	log := "I1204 09:12:00.000001       1 server.go:100] \"Starting kube-proxy\"\n" +
		"I1204 09:12:01.123456       1 server_linux.go:185] \"" + msg + "\" ipFamily=\"IPv4\"\n"
	if err := os.MkdirAll(filepath.Join(out, "kube-proxy"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "kube-proxy", "kube-proxy.log"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

func noConfig(rel, content string) bool {
	return rel == "kube-proxy/config.yaml" || rel == "kube-proxy/cmdline.txt" ||
		strings.Contains(content, "kind: ConfigMap") && strings.Contains(content, "name: kube-proxy")
}

func only(keep ...string) func(rel, content string) bool {
	return func(rel, _ string) bool {
		for _, k := range keep {
			if strings.HasPrefix(rel, k) {
				return false
			}
		}
		return true
	}
}

func loadOne(t *testing.T, path string) *model.Snapshot {
	t.Helper()
	snaps, err := load.Load([]string{path}, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 1 {
		t.Fatalf("%d snapshots, want 1", len(snaps))
	}
	return snaps[0]
}

// TestMode checks how the mode is decided: a flag, else the configuration,
// else the one mode the data plane shows, else the proxier kube-proxy
// logged, else IPVS when an ipset listing holds IPVS mode's sets, else
// iptables.
func TestMode(t *testing.T) {
	for _, tc := range []struct {
		name       string
		path       func(t *testing.T) string
		opts       resolve.Options
		mode       string
		origin     string
		source     string
		programmed []string
		families   []model.Family
	}{
		{name: "configured nftables", path: func(t *testing.T) string { return bundle(t, "nftables-healthy") },
			mode: model.ModeNFTables, origin: resolve.Configured, source: "configured in kube-proxy/config.yaml",
			programmed: []string{model.ModeNFTables}, families: []model.Family{model.IPv4, model.IPv6}},
		{name: "nftables without configuration", path: func(t *testing.T) string { return copyWithout(t, bundle(t, "nftables-healthy"), noConfig) },
			mode: model.ModeNFTables, origin: resolve.Inferred, source: "inferred from the data plane",
			programmed: []string{model.ModeNFTables}, families: []model.Family{model.IPv4, model.IPv6}},
		{name: "ipvs without configuration", path: func(t *testing.T) string { return copyWithout(t, bundle(t, "ipvs-healthy"), noConfig) },
			mode: model.ModeIPVS, origin: resolve.Inferred, programmed: []string{model.ModeIPVS}},
		{name: "iptables without configuration", path: func(t *testing.T) string { return copyWithout(t, bundle(t, "iptables-mini"), noConfig) },
			mode: model.ModeIPTables, origin: resolve.Inferred, programmed: []string{model.ModeIPTables}, families: []model.Family{model.IPv4}},
		{name: "a flag wins", path: func(t *testing.T) string { return bundle(t, "nftables-healthy") }, opts: resolve.Options{Mode: model.ModeIPVS},
			mode: model.ModeIPVS, origin: resolve.Given, source: "--mode flag", programmed: []string{model.ModeNFTables}},
		{name: "no data plane and no configuration", path: func(t *testing.T) string {
			return copyWithout(t, bundle(t, "nftables-healthy"), only("cluster/cluster.yaml"))
		},
			mode: model.ModeIPTables, origin: resolve.Assumed, source: "assumed (kube-proxy's default)"},
		{name: "no data plane and no configuration, kube-proxy's log", path: func(t *testing.T) string {
			return withLog(t, copyWithout(t, bundle(t, "nftables-healthy"), only("cluster/cluster.yaml")), "Using ipvs Proxier")
		},
			mode: model.ModeIPVS, origin: resolve.Inferred, source: `logged by kube-proxy ("Using ipvs Proxier" at kube-proxy/kube-proxy.log:2)`},
		{name: "an ipset listing alone", path: func(t *testing.T) string {
			return copyWithout(t, bundle(t, "ipvs-healthy"), only("cluster/cluster.yaml", "node/ipset"))
		},
			mode: model.ModeIPVS, origin: resolve.Inferred, source: "inferred from the ipset listing: kube-proxy's IPVS-mode set KUBE-6-CLUSTER-IP"},
		{name: "the log wins over an ipset listing", path: func(t *testing.T) string {
			return withLog(t, copyWithout(t, bundle(t, "ipvs-healthy"), only("cluster/cluster.yaml", "node/ipset")), "Using iptables Proxier")
		},
			mode: model.ModeIPTables, origin: resolve.Inferred, source: `logged by kube-proxy ("Using iptables Proxier" at kube-proxy/kube-proxy.log:2)`},
		{name: "the log of a mode the resolver does not know", path: func(t *testing.T) string {
			return withLog(t, copyWithout(t, bundle(t, "nftables-healthy"), only("cluster/cluster.yaml")), "Using userspace Proxier")
		},
			mode: model.ModeIPTables, origin: resolve.Assumed, source: "assumed (kube-proxy's default)"},
		{name: "the data plane wins over the log", path: func(t *testing.T) string {
			return withLog(t, copyWithout(t, bundle(t, "nftables-healthy"), noConfig), "Using iptables Proxier")
		},
			mode: model.ModeNFTables, origin: resolve.Inferred, source: "inferred from the data plane",
			programmed: []string{model.ModeNFTables}, families: []model.Family{model.IPv4, model.IPv6}},
		{name: "the configuration wins over the log", path: func(t *testing.T) string {
			return withLog(t, bundle(t, "nftables-healthy"), "Using iptables Proxier")
		},
			mode: model.ModeNFTables, origin: resolve.Configured, source: "configured in kube-proxy/config.yaml",
			programmed: []string{model.ModeNFTables}, families: []model.Family{model.IPv4, model.IPv6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := resolve.Resolve(loadOne(t, tc.path(t)), tc.opts)
			if r.Mode != tc.mode || r.ModeOrigin != tc.origin || tc.source != "" && r.ModeSource != tc.source {
				t.Errorf("mode %s (%s: %s), want %s (%s: %s)", r.Mode, r.ModeOrigin, r.ModeSource, tc.mode, tc.origin, tc.source)
			}
			if strings.Join(r.Programmed, ",") != strings.Join(tc.programmed, ",") {
				t.Errorf("programmed %v, want %v", r.Programmed, tc.programmed)
			}
			if tc.families != nil && !sameFamilies(r.Families, tc.families) {
				t.Errorf("families %v, want %v", r.Families, tc.families)
			}
			if r.ModeAssumed() != (tc.origin == resolve.Assumed) {
				t.Errorf("ModeAssumed() = %v", r.ModeAssumed())
			}
		})
	}
}

func sameFamilies(a, b []model.Family) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestDumps checks which dumps are kube-proxy's.
func TestDumps(t *testing.T) {
	r := resolve.Resolve(loadOne(t, bundle(t, "iptables-healthy")), resolve.Options{})
	for _, f := range []model.Family{model.IPv4, model.IPv6} {
		d := r.IPTables(f)
		if d == nil || model.Family(d.Family) != f || !resolve.IsIPTablesMode(d) {
			t.Errorf("%s: dump %v is not an iptables-mode dump of the family", f, d)
		}
		if !r.Captured(f) {
			t.Errorf("%s: not captured", f)
		}
	}
	if r.IPVSTable() != nil || r.NFT() != nil || r.IPTablesOf(model.ModeNFTables, model.IPv4) != nil {
		t.Error("an iptables node has no IPVS table, nft ruleset or nftables-mode iptables dump")
	}
	r = resolve.Resolve(loadOne(t, bundle(t, "nftables-healthy")), resolve.Options{})
	if rs := r.NFT(); rs == nil || strings.HasPrefix(rs.Tables[0].Pos.Path, "$") {
		t.Errorf("nft ruleset %v: want the text listing before the JSON one", rs)
	}
	if r.NFTTable(model.IPv4) == nil || r.NFTTable(model.IPv6) == nil {
		t.Error("both kube-proxy tables expected")
	}
	r = resolve.Resolve(loadOne(t, bundle(t, "ipvs-healthy")), resolve.Options{})
	if r.IPVSTable() == nil || r.IPVSSaved() == nil || r.IPTables(model.IPv4) == nil || !resolve.IsIPVSMode(r.IPTables(model.IPv4)) {
		t.Error("an IPVS node's table and its iptables rules expected")
	}
}

// TestAssumedLocal checks that the virtual server addresses of an IPVS node
// are taken as local, and said to be assumed, only when ip addr was not
// captured.
func TestAssumedLocal(t *testing.T) {
	withAddr := loadOne(t, bundle(t, "ipvs-healthy"))
	if withAddr.Addrs == nil {
		t.Fatal("the ipvs-healthy bundle has ip addr")
	}
	r := resolve.Resolve(withAddr, resolve.Options{})
	if len(r.AssumedLocal) != 0 || r.AssumedWhy != "" {
		t.Errorf("with ip addr, assumed %v (%s)", r.AssumedLocal, r.AssumedWhy)
	}
	noAddr := loadOne(t, copyWithout(t, bundle(t, "ipvs-healthy"), func(rel, _ string) bool { return rel == "node/ip-addr.txt" }))
	r = resolve.Resolve(noAddr, resolve.Options{})
	if len(r.AssumedLocal) == 0 || !strings.Contains(r.AssumedWhy, "no ip addr") {
		t.Fatalf("without ip addr, assumed %v (%s)", r.AssumedLocal, r.AssumedWhy)
	}
	for _, svc := range r.IPVSTable().Services {
		if svc.FWMark != 0 {
			continue
		}
		a, _ := netip.AddrFromSlice(svc.Address)
		if !r.IsLocal(a) {
			t.Errorf("virtual server address %s is not local", a)
		}
	}
	for _, a := range r.AssumedLocal {
		if !r.IsAssumedLocal(a) {
			t.Errorf("%s: assumed but not reported as such", a)
		}
	}
	// Other modes assume nothing.
	r = resolve.Resolve(noAddr, resolve.Options{Mode: model.ModeIPTables})
	if len(r.AssumedLocal) != 0 {
		t.Errorf("iptables mode assumed %v", r.AssumedLocal)
	}
}

// TestImpliedGate checks that nftables rules of kube-proxy 1.29 without a
// configuration imply the NFTablesProxyMode gate.
func TestImpliedGate(t *testing.T) {
	r := resolve.Resolve(loadOne(t, copyWithout(t, bundle(t, "nftables-v1.29"), noConfig)), resolve.Options{})
	if r.Version.Minor != 29 || r.ImpliedGates["NFTablesProxyMode"] == "" || !r.Gates()["NFTablesProxyMode"] {
		t.Errorf("version %s, implied %v, gates %v", r.Version, r.ImpliedGates, r.Gates())
	}
	r = resolve.Resolve(loadOne(t, bundle(t, "nftables-v1.29")), resolve.Options{})
	if len(r.ImpliedGates) != 0 {
		t.Errorf("configured: implied %v", r.ImpliedGates)
	}
}

// TestVersion checks the version override and the assumption.
func TestVersion(t *testing.T) {
	s := loadOne(t, bundle(t, "iptables-mini"))
	r := resolve.Resolve(s, resolve.Options{Version: kpversion.V(28)})
	if r.Version.Minor != 28 || r.Version.Source != "--version flag" {
		t.Errorf("version %s (%s)", r.Version, r.Version.Source)
	}
	c := *s
	c.Version = model.Version{}
	r = resolve.Resolve(&c, resolve.Options{})
	if r.Version.Version != kpversion.Newest || !strings.HasPrefix(r.Version.Source, "assumed") {
		t.Errorf("unknown version resolved to %s (%s)", r.Version, r.Version.Source)
	}
}

// TestBehaviours checks the release table against what upstream does, per
// minor and gate setting.
func TestBehaviours(t *testing.T) {
	on, off := map[string]bool{"ProxyTerminatingEndpoints": true}, map[string]bool{"ProxyTerminatingEndpoints": false}
	for _, tc := range []struct {
		b     resolve.Behaviour
		minor int
		gates map[string]bool
		want  bool
	}{
		{resolve.ClusterTerminatingFallback, 23, on, false},
		{resolve.ClusterTerminatingFallback, 24, nil, false},
		{resolve.ClusterTerminatingFallback, 24, on, true},
		{resolve.ClusterTerminatingFallback, 25, on, true},
		{resolve.ClusterTerminatingFallback, 25, nil, false},
		{resolve.ClusterTerminatingFallback, 26, off, false},
		{resolve.ClusterTerminatingFallback, 26, nil, true},
		{resolve.ClusterTerminatingFallback, 27, off, false},
		{resolve.ClusterTerminatingFallback, 28, off, true},
		{resolve.ClusterTerminatingFallback, 37, nil, true},
		{resolve.LocalTerminatingFallback, 21, on, false},
		{resolve.LocalTerminatingFallback, 22, on, true},
		{resolve.LocalTerminatingFallback, 22, nil, false},
		{resolve.LocalTerminatingFallback, 26, off, false},
		{resolve.LocalTerminatingFallback, 30, nil, true},
		{resolve.NodeTopologyHints, 32, nil, false},
		{resolve.NodeTopologyHints, 33, nil, false},
		{resolve.NodeTopologyHints, 33, map[string]bool{"PreferSameTrafficDistribution": true}, true},
		{resolve.NodeTopologyHints, 34, nil, true},
		{resolve.ZoneTopologyHints, 23, nil, false},
		{resolve.ZoneTopologyHints, 23, map[string]bool{"TopologyAwareHints": true}, true},
		{resolve.ZoneTopologyHints, 24, nil, true},
		{resolve.ZoneTopologyHints, 32, map[string]bool{"TopologyAwareHints": false}, false},
		{resolve.ZoneTopologyHints, 33, map[string]bool{"TopologyAwareHints": false}, true},
		{resolve.TopologyAnnotationAnyValue, 26, nil, false},
		{resolve.TopologyAnnotationAnyValue, 27, nil, true},
		{resolve.TopologyHintsWithoutAnnotation, 30, nil, false},
		{resolve.TopologyHintsWithoutAnnotation, 30, map[string]bool{"ServiceTrafficDistribution": true}, true},
		{resolve.TopologyHintsWithoutAnnotation, 31, nil, true},
		{resolve.TopologyHintsWithoutAnnotation, 32, map[string]bool{"ServiceTrafficDistribution": false}, false},
		{resolve.TopologyHintsWithoutAnnotation, 33, nil, true},
		{resolve.LoadBalancerIPMode, 28, nil, false},
		{resolve.LoadBalancerIPMode, 29, nil, false},
		{resolve.LoadBalancerIPMode, 29, map[string]bool{"LoadBalancerIPMode": true}, true},
		{resolve.LoadBalancerIPMode, 30, nil, true},
		{resolve.NFTablesMode, 28, map[string]bool{"NFTablesProxyMode": true}, false},
		{resolve.NFTablesMode, 29, nil, false},
		{resolve.NFTablesMode, 30, map[string]bool{"NFTablesProxyMode": true}, true},
		{resolve.NFTablesMode, 31, nil, true},
		{resolve.CategorizeEndpoints, 23, nil, false},
		{resolve.CategorizeEndpoints, 24, nil, true},
	} {
		if got := resolve.Enabled(tc.b, kpversion.V(tc.minor), tc.gates); got != tc.want {
			t.Errorf("%s in 1.%d with %v: %v, want %v", tc.b, tc.minor, tc.gates, got, tc.want)
		}
	}
}
