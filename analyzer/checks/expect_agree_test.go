package checks

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/proxier"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/analyzer/view"
	"github.com/proxyscan/proxyscan/parsers/kpconfig"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestExpectAgreesWithProxier checks that what the checks expect of a
// service port (which endpoints each traffic policy uses, whether traffic
// is forwarded at all) is what the reference proxier programs, for every
// release with CategorizeEndpoints (1.24-1.37) and every setting of the
// gates that change endpoint selection, in iptables and nftables mode: the
// view of the generated rules must hold, for every cluster IP entry, the
// endpoints of the expectation, and reject or drop where it expects no
// endpoint.
func TestExpectAgreesWithProxier(t *testing.T) {
	if testing.Short() {
		t.Skip("every release and gate setting of every scenario: runs without -short")
	}
	root := parsetest.Root(t)
	dirs, _ := filepath.Glob(filepath.Join(root, "testdata", "upstream", "scenarios", "*"))
	dirs = append(dirs, filepath.Join(root, "testdata", "bundles", "iptables-healthy"), filepath.Join(root, "testdata", "bundles", "nftables-healthy"))
	gateSettings := []map[string]bool{nil,
		{"ProxyTerminatingEndpoints": false}, {"ProxyTerminatingEndpoints": true},
		{"TopologyAwareHints": false}, {"ServiceTrafficDistribution": true}, {"PreferSameTrafficDistribution": true},
	}
	compared := 0
	defer func() { t.Logf("%d service ports compared", compared) }()
	for _, dir := range dirs {
		snaps, err := load.Load([]string{dir}, load.Options{})
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		snap := snaps[0]
		for minor := 24; minor <= kpversion.NewestMinor; minor++ {
			for _, mode := range []string{model.ModeIPTables, model.ModeNFTables} {
				for _, gates := range gateSettings {
					if !settable(gates, minor) {
						continue
					}
					s := withGates(snap, gates)
					r := resolve.Resolve(s, resolve.Options{Mode: mode, Version: kpversion.V(minor)})
					dp, err := proxier.Expect(r, proxier.Options{})
					if err != nil {
						continue // a mode the release does not have
					}
					where := fmt.Sprintf("%s, 1.%d %s, gates %v", filepath.Base(dir), minor, mode, gates)
					compared += compareExpectations(t, where, r, generatedViews(s, dp))
				}
			}
		}
	}
	if compared < 1000 {
		t.Errorf("only %d service ports compared", compared)
	}
}

// settable reports whether every gate of gates can be set in the minor.
func settable(gates map[string]bool, minor int) bool {
	for name, v := range gates {
		g := kpconfig.LookupGate(name)
		if g == nil {
			return false
		}
		if known, sure := g.Known(minor); !known || !sure {
			return false
		}
		if st := g.At(minor); st.Locked && st.Default != v {
			return false
		}
	}
	return true
}

// withGates returns a copy of s whose configuration sets gates.
func withGates(s *model.Snapshot, gates map[string]bool) *model.Snapshot {
	if gates == nil {
		return s
	}
	c := *s
	cfg := *s.Config
	kpc := *cfg.KubeProxyConfiguration
	kpc.FeatureGates = map[string]bool{}
	for k, v := range s.Config.FeatureGates {
		kpc.FeatureGates[k] = v
	}
	for k, v := range gates {
		kpc.FeatureGates[k] = v
	}
	cfg.KubeProxyConfiguration = &kpc
	c.Config = &cfg
	return &c
}

func generatedViews(s *model.Snapshot, dp *proxier.Dataplane) []*view.View {
	attr := view.NewAttribution(s.Ports)
	var out []*view.View
	for _, d := range dp.IPTables {
		out = append(out, view.FromIPTables(d, attr))
	}
	if dp.NFT != nil {
		for _, t := range dp.NFT.Tables {
			out = append(out, view.FromNFT(t, attr))
		}
	}
	return out
}

// compareExpectations compares the cluster IP entries of the views with
// the checks' expectations and returns how many it compared.
func compareExpectations(t *testing.T, where string, r *resolve.Resolution, views []*view.View) int {
	t.Helper()
	ports := map[string]*model.ServicePort{}
	for _, sp := range r.Snap.ActivePorts() {
		ports[sp.String()] = sp
	}
	n := 0
	for _, v := range views {
		for _, e := range v.Entries {
			sp := ports[e.Service]
			if sp == nil || e.Kind != view.ClusterIP {
				continue
			}
			n++
			ex := newExpect(r, sp, v.Family)
			d := e.Dispatch[model.FromPod]
			if !ex.HasInternal {
				// Dropped (a dispatch that marks for drop: the layout of
				// 1.24) or rejected.
				if e.Action == view.Forward && !(d != nil && d.Drops && len(d.Backends) == 0) {
					t.Errorf("%s: %s %s: expected no endpoint for its cluster IP, the generated rules forward it", where, sp, v.Family)
				}
				continue
			}
			if d == nil {
				t.Errorf("%s: %s %s: expected endpoints %v, the generated rules dispatch nothing (%s)", where, sp, v.Family, names(ex.Endpoints(ex.InternalPolicy)), e.Action)
				continue
			}
			var got []string
			for _, b := range d.Backends {
				got = append(got, b.Endpoint)
			}
			sort.Strings(got)
			if want := names(ex.Endpoints(ex.InternalPolicy)); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("%s: %s %s: the checks expect %v behind its cluster IP (%s policy), the proxier programs %v", where, sp, v.Family, want, ex.InternalPolicy, got)
			}
		}
	}
	return n
}

func names(eps []*model.Endpoint) []string {
	var out []string
	for _, e := range eps {
		out = append(out, e.String())
	}
	sort.Strings(out)
	return out
}
