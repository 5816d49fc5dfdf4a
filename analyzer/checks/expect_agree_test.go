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
	"github.com/proxyscan/proxyscan/parsers/ipset"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/kpconfig"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// agreeGates are the settings of the gates that change endpoint
// selection in some release; each is tried in every minor that accepts
// it (see settable).
var agreeGates = []map[string]bool{nil,
	{"ProxyTerminatingEndpoints": false}, {"ProxyTerminatingEndpoints": true},
	{"TopologyAwareHints": false}, {"TopologyAwareHints": true},
	{"ServiceTrafficDistribution": true}, {"PreferSameTrafficDistribution": true},
	{"ServiceInternalTrafficPolicy": false}, {"ServiceInternalTrafficPolicy": true},
	{"EndpointSliceProxying": false}, {"ServiceTopology": true},
}

// agreeShort are the scenarios of the traffic policies and endpoint
// conditions, which the test runs with -short; without it, every upstream
// scenario and the healthy bundles.
var agreeShort = []string{"itp-local", "nodeport-etp-local", "terminating-endpoints", "externalips", "no-endpoints"}

// TestExpectAgreesWithProxier checks that what the checks expect of a
// service port (which endpoints each route uses under which policy, and
// whether its traffic is forwarded, rejected or dropped) is what the
// reference proxier programs, for every release 1.20-1.37 and every
// setting of the gates that change endpoint selection, in iptables, IPVS
// (1.21+) and nftables (1.29+) mode: in the view of the generated data
// plane, every entry of a service port (cluster IP, node port, external
// and load balancer IP) must forward to the endpoints of the
// expectation's route, under its policy, or block its traffic with the
// expected verdict.
func TestExpectAgreesWithProxier(t *testing.T) {
	root := parsetest.Root(t)
	var dirs []string
	if testing.Short() {
		for _, s := range agreeShort {
			dirs = append(dirs, filepath.Join(root, "testdata", "upstream", "scenarios", s))
		}
	} else {
		dirs, _ = filepath.Glob(filepath.Join(root, "testdata", "upstream", "scenarios", "*"))
		dirs = append(dirs, filepath.Join(root, "testdata", "bundles", "iptables-healthy"), filepath.Join(root, "testdata", "bundles", "nftables-healthy"),
			filepath.Join(root, "testdata", "bundles", "ipvs-healthy"))
	}
	compared := map[string]int{}
	releases := map[string]bool{}
	for _, dir := range dirs {
		snaps, err := load.Load([]string{dir}, load.Options{})
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		snap := snaps[0]
		for minor := kpversion.OldestMinor; minor <= kpversion.NewestMinor; minor++ {
			for _, mode := range []string{model.ModeIPTables, model.ModeIPVS, model.ModeNFTables} {
				for _, gates := range agreeGates {
					if !settable(gates, minor) {
						continue
					}
					if mode == model.ModeNFTables && !resolve.Enabled(resolve.NFTablesMode, kpversion.V(minor), nil) {
						gates = withGate(gates, "NFTablesProxyMode")
					}
					s := withGates(snap, gates)
					r := resolve.Resolve(s, resolve.Options{Mode: mode, Version: kpversion.V(minor)})
					dp, err := proxier.Expect(r, proxier.Options{})
					if err != nil {
						continue // a mode the release does not have, or not modelled
					}
					releases[fmt.Sprintf("%s 1.%d", mode, minor)] = true
					where := fmt.Sprintf("%s, 1.%d %s, gates %v", filepath.Base(dir), minor, mode, gates)
					compared[mode] += compareExpectations(t, where, r, generatedViews(r, dp))
				}
			}
		}
	}
	t.Logf("service port entries compared: %v, in %d mode releases", compared, len(releases))
	// Every release of every mode: iptables 1.20-1.37, IPVS 1.21-1.37,
	// nftables 1.29-1.37.
	if want := (kpversion.NewestMinor - kpversion.OldestMinor + 1) + (kpversion.NewestMinor - 21 + 1) + (kpversion.NewestMinor - 29 + 1); len(releases) != want {
		t.Errorf("%d mode releases compared, want %d", len(releases), want)
	}
	for _, mode := range []string{model.ModeIPTables, model.ModeIPVS, model.ModeNFTables} {
		if compared[mode] < 500 {
			t.Errorf("only %d %s service port entries compared", compared[mode], mode)
		}
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

// withGate returns gates with gate on too.
func withGate(gates map[string]bool, gate string) map[string]bool {
	out := map[string]bool{gate: true}
	for k, v := range gates {
		out[k] = v
	}
	return out
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

// generatedViews returns the views of a generated data plane, as the
// checks build those of a captured one.
func generatedViews(r *resolve.Resolution, dp *proxier.Dataplane) []*view.View {
	s := r.Snap
	attr := view.NewAttribution(s.Ports)
	var out []*view.View
	if dp.IPVS != nil {
		for _, d := range dp.IPTables {
			fam := model.IPv4
			if d.Family == iptables.IPv6 {
				fam = model.IPv6
			}
			out = append(out, view.FromIPVS(view.IPVSInput{Family: fam, Table: dp.IPVS, Sets: setsOf(dp), Addrs: s.Addrs,
				IPTables: d, Ports: s.Ports, NodeIPs: r.NodeAddrs}))
		}
		return out
	}
	for _, d := range dp.IPTables {
		out = append(out, view.FromIPTables(d, attr))
	}
	if dp.NFT != nil {
		for _, t := range dp.NFT.Tables {
			out = append(out, view.FromNFT(t, attr))
		}
	}
	if !r.Has(resolve.CategorizeEndpoints) {
		// As the checks mark the KUBE-SVC chains of 1.20-1.23.
		for _, v := range out {
			view.MarkLegacyInternalLocal(v, func(name string) bool {
				for _, sp := range s.ActivePorts() {
					if sp.String() == name && sp.InternalPolicyLocal {
						return newExpect(r, sp, v.Family).Internal.Policy == proxier.PolicyLocal
					}
				}
				return false
			})
		}
	}
	return out
}

func setsOf(dp *proxier.Dataplane) []*ipset.Dump {
	if dp.IPSets == nil {
		return nil
	}
	return []*ipset.Dump{dp.IPSets}
}

// compareExpectations compares the entries of the views with the checks'
// expectations and returns how many destinations it compared. A
// destination may have several entries (a capture in nat and a filter
// rule that blocks what nat leaves alone).
func compareExpectations(t *testing.T, where string, r *resolve.Resolution, views []*view.View) int {
	t.Helper()
	ports := map[string]*model.ServicePort{}
	for _, sp := range r.Snap.ActivePorts() {
		ports[sp.String()] = sp
	}
	n := 0
	for _, v := range views {
		ipvsMode := v.Mode == model.ModeIPVS
		byDest := map[string][]*view.Entry{}
		var dests []string
		for _, e := range v.Entries {
			if ports[e.Service] == nil {
				continue
			}
			k := e.Service + " " + e.Dest()
			if byDest[k] == nil {
				dests = append(dests, k)
			}
			byDest[k] = append(byDest[k], e)
		}
		for _, k := range dests {
			entries := byDest[k]
			sp, kind := ports[entries[0].Service], entries[0].Kind
			n++
			ex := newExpect(r, sp, v.Family)
			has, policy, origin := ex.HasExternal(), ex.ExternalPolicy(), model.FromExternal
			if kind == view.ClusterIP {
				has, policy, origin = ex.HasInternal(), ex.InternalPolicy(), model.FromPod
			}
			what := fmt.Sprintf("%s: %s %s %s", where, sp, v.Family, entries[0].Dest())
			var fwd *view.Dispatch
			blocked := map[view.Action]bool{}
			for _, e := range entries {
				d := e.Dispatch[origin]
				switch {
				case e.Action == view.Reject, ipvsMode && e.Action == view.Forward && (d == nil || len(d.Backends) == 0):
					blocked[view.Reject] = true
				case e.Action == view.Drop, e.Action == view.Forward && d != nil && d.Drops && len(d.Backends) == 0:
					blocked[view.Drop] = true
				case e.Action == view.Forward && d != nil:
					fwd = d
				}
			}
			if !has {
				want := ex.BlockAction(kind)
				if fwd != nil && len(fwd.Backends) > 0 {
					t.Errorf("%s: expected to %s, the generated rules forward it to %s", what, want, fwd.ID)
				} else if !blocked[want] {
					t.Errorf("%s: expected to %s, the generated rules do not (%v)", what, want, blocked)
				}
				continue
			}
			eps := ex.Endpoints(policy)
			if fwd == nil {
				t.Errorf("%s: expected endpoints %v, the generated rules dispatch nothing", what, names(eps))
				continue
			}
			var got []string
			for _, b := range fwd.Backends {
				got = append(got, b.Endpoint)
			}
			sort.Strings(got)
			if want := names(eps); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("%s: the checks expect %v (%s policy), the proxier programs %v", what, want, policy, got)
			}
			// IPVS has no policy of its own: the view takes a dispatch to
			// local endpoints only for Local when the Service asks for it.
			if !ipvsMode && fwd.Policy != policy {
				t.Errorf("%s: the checks expect the %s policy, the proxier programs %s (%s)", what, policy, fwd.ID, fwd.Policy)
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
