package proxier

import (
	"fmt"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/kpconfig"
)

// TestLegacySelectionUpstreamCases checks the endpoint selection of
// 1.20-1.23, in iptables and IPVS mode, for every setting of the gates
// pkg/proxy/topology.go FilterEndpoints reads, against the cases of
// upstream's own tests of that filter (TestFilterEndpoints,
// Test_filterEndpointsWithHints and TestFilterLocalEndpoint of
// topology_test.go, v1.23): each case gives the endpoints the filter
// keeps when it applies (filtered); the Cluster endpoints are the ready
// ones of those, or every ready one when the filter does not apply.
//
// The filter applies from 1.21, not to a Service with
// externalTrafficPolicy Local, in 1.21 only with EndpointSliceProxying on
// and ServiceTopology off; the local filter of internalTrafficPolicy
// Local with ServiceInternalTrafficPolicy, else the hint filter with
// TopologyAwareHints. 1.21 and 1.22 count the unready endpoints when they
// look for hints (filtered122 where that differs), 1.23 the ready ones
// only.
func TestLegacySelectionUpstreamCases(t *testing.T) {
	n := 0
	for _, c := range upstreamFilterCases {
		t.Run(c.name, func(t *testing.T) {
			sp := c.servicePort(t)
			for minor := 20; minor <= 23; minor++ {
				for _, gates := range legacyGateSettings(minor) {
					on := func(g string) bool { return kpconfig.GateEnabled(gates, g, minor) }
					filter := minor >= 21 && !c.svc.externalLocal && (minor > 21 || on("EndpointSliceProxying") && !on("ServiceTopology"))
					want, topology := c.allReady(), ""
					switch {
					case filter && c.svc.internalLocal && on("ServiceInternalTrafficPolicy"):
						want = c.readyOf(c.localOnes())
					case filter && !c.svc.internalLocal && on("TopologyAwareHints") && c.filtered != nil:
						f := c.filtered
						if minor < 23 && c.filtered122 != nil {
							f = c.filtered122
						}
						want = c.readyOf(f)
						if len(f) < len(c.eps) {
							topology = "PreferSameZone"
						}
					}
					for _, mode := range []string{model.ModeIPTables, model.ModeIPVS} {
						if mode == model.ModeIPVS && minor < modeRanges[model.ModeIPVS].oldest {
							continue
						}
						n++
						in := &input{res: releaseResolution(minor, gates), cat: model.CategorizeOptions{NodeName: legacyNode, Zone: c.zone}}
						sel := in.selection(mode, sp, model.IPv4)
						where := fmt.Sprintf("1.%d %s, gates %v", minor, mode, gates)
						checkEndpoints(t, where+": Cluster", sel.Cluster, want)
						if sel.HasEndpoints != (len(want) > 0) {
							t.Errorf("%s: HasEndpoints = %t, want %t", where, sel.HasEndpoints, len(want) > 0)
						}
						if sel.Topology != topology && (topology != "" || len(c.filtered) < len(c.eps)) {
							t.Errorf("%s: Topology = %q, want %q", where, sel.Topology, topology)
						}
						if (sel.Internal.Verdict == Reject) != (len(want) == 0) {
							t.Errorf("%s: internal verdict %s with %d endpoints", where, sel.Internal.Verdict, len(want))
						}
					}
				}
			}
		})
	}
	t.Logf("%d selections checked", n)
}

// legacyGateSettings returns the settings of the gates FilterEndpoints
// reads that a minor accepts: each unset, on or off, one at a time.
func legacyGateSettings(minor int) []map[string]bool {
	out := []map[string]bool{nil}
	for _, name := range []string{"TopologyAwareHints", "ServiceInternalTrafficPolicy", "EndpointSliceProxying", "ServiceTopology"} {
		g := kpconfig.LookupGate(name)
		if g == nil {
			continue
		}
		if known, _ := g.Known(minor); !known {
			continue
		}
		for _, v := range []bool{true, false} {
			if st := g.At(minor); st.Locked && st.Default != v {
				continue
			}
			out = append(out, map[string]bool{name: v})
		}
	}
	return out
}

// An upstreamFilterCase is a legacyCase whose expectation is what
// FilterEndpoints keeps.
type upstreamFilterCase struct {
	legacyCase
	// filtered are the endpoints the hint filter keeps (nil: the case is
	// not one of the hint filter), filtered122 those of 1.21 and 1.22 when
	// they differ.
	filtered, filtered122 []string
}

func (c *upstreamFilterCase) allReady() []string {
	var out []string
	for _, e := range c.eps {
		if e.ready {
			out = append(out, e.addr)
		}
	}
	return out
}

func (c *upstreamFilterCase) localOnes() []string {
	var out []string
	for _, e := range c.eps {
		if e.local {
			out = append(out, e.addr)
		}
	}
	return out
}

// readyOf returns the ready endpoints among addrs.
func (c *upstreamFilterCase) readyOf(addrs []string) []string {
	var out []string
	for _, e := range c.eps {
		for _, a := range addrs {
			if a == e.addr && e.ready {
				out = append(out, a)
			}
		}
	}
	return out
}

func hinted(ready bool, addr string, zones ...string) legacyEp {
	return legacyEp{addr: addr, zones: zones, ready: ready}
}

// upstreamFilterCases are the cases of upstream's tests of
// FilterEndpoints (v1.23 pkg/proxy/topology_test.go), in this package's
// terms: the node's zone label, the Service's annotation and policies,
// the endpoints, and what the filter keeps.
var upstreamFilterCases = []upstreamFilterCase{
	// TestFilterEndpoints.
	{legacyCase: legacyCase{name: "hints enabled, hints annotation == auto", zone: "zone-a",
		svc: legacySvc{hintsAnnotation: "auto"}, eps: legacyHinted}, filtered: legacyHintedZoneA},
	{legacyCase: legacyCase{name: "hints, hints annotation == disabled, hints ignored", zone: "zone-a",
		svc: legacySvc{hintsAnnotation: "disabled"}, eps: legacyHinted}, filtered: legacyHintedAll},
	{legacyCase: legacyCase{name: "hints, hints annotation == aUto (wrong capitalization), hints ignored", zone: "zone-a",
		svc: legacySvc{hintsAnnotation: "aUto"}, eps: legacyHinted}, filtered: legacyHintedAll},
	{legacyCase: legacyCase{name: "hints, hints annotation empty, hints ignored", zone: "zone-a",
		eps: legacyHinted}, filtered: legacyHintedAll},
	{legacyCase: legacyCase{name: "node local endpoints, hints are ignored", zone: "zone-a",
		svc: legacySvc{hintsAnnotation: "auto", externalLocal: true}, eps: legacyHinted}, filtered: legacyHintedAll},
	// Test_filterEndpointsWithHints.
	{legacyCase: legacyCase{name: "empty node labels", svc: legacySvc{hintsAnnotation: "auto"},
		eps: []legacyEp{hinted(true, "10.1.2.3:80", "zone-a")}}, filtered: []string{"10.1.2.3:80"}},
	{legacyCase: legacyCase{name: "node in different zone, no endpoint filtering", zone: "zone-b", svc: legacySvc{hintsAnnotation: "auto"},
		eps: []legacyEp{hinted(true, "10.1.2.3:80", "zone-a")}}, filtered: []string{"10.1.2.3:80"}},
	{legacyCase: legacyCase{name: "normal endpoint filtering, auto annotation", zone: "zone-a",
		svc: legacySvc{hintsAnnotation: "auto"}, eps: legacyHinted}, filtered: legacyHintedZoneA},
	{legacyCase: legacyCase{name: "unready endpoint", zone: "zone-a", svc: legacySvc{hintsAnnotation: "auto"},
		eps: []legacyEp{
			hinted(true, "10.1.2.3:80", "zone-a"), hinted(true, "10.1.2.4:80", "zone-b"),
			hinted(true, "10.1.2.5:80", "zone-c"), hinted(false, "10.1.2.6:80", "zone-a"),
		}},
		filtered: []string{"10.1.2.3:80"}, filtered122: []string{"10.1.2.3:80", "10.1.2.6:80"}},
	{legacyCase: legacyCase{name: "only unready endpoints in same zone (should not filter)", zone: "zone-a", svc: legacySvc{hintsAnnotation: "auto"},
		eps: []legacyEp{
			hinted(false, "10.1.2.3:80", "zone-a"), hinted(true, "10.1.2.4:80", "zone-b"),
			hinted(true, "10.1.2.5:80", "zone-c"), hinted(false, "10.1.2.6:80", "zone-a"),
		}},
		// 1.21 and 1.22 keep the unready zone-a endpoints, and then have
		// no ready endpoint at all (kubernetes#106507).
		filtered: []string{"10.1.2.3:80", "10.1.2.4:80", "10.1.2.5:80", "10.1.2.6:80"}, filtered122: []string{"10.1.2.3:80", "10.1.2.6:80"}},
	{legacyCase: legacyCase{name: "normal endpoint filtering, Auto annotation", zone: "zone-a",
		svc: legacySvc{hintsAnnotation: "Auto"}, eps: legacyHinted}, filtered: legacyHintedZoneA},
	{legacyCase: legacyCase{name: "missing hints, no filtering applied", zone: "zone-a", svc: legacySvc{hintsAnnotation: "auto"},
		eps: []legacyEp{
			hinted(true, "10.1.2.3:80", "zone-a"), hinted(true, "10.1.2.4:80", "zone-b"),
			hinted(true, "10.1.2.5:80"), hinted(true, "10.1.2.6:80", "zone-a"),
		}},
		filtered: legacyHintedAll},
	{legacyCase: legacyCase{name: "multiple hints per endpoint, filtering includes any endpoint with zone included", zone: "zone-c", svc: legacySvc{hintsAnnotation: "auto"},
		eps: []legacyEp{
			hinted(true, "10.1.2.3:80", "zone-a", "zone-b", "zone-c"), hinted(true, "10.1.2.4:80", "zone-b", "zone-c"),
			hinted(true, "10.1.2.5:80", "zone-b", "zone-d"), hinted(true, "10.1.2.6:80", "zone-c"),
		}},
		filtered: []string{"10.1.2.3:80", "10.1.2.4:80", "10.1.2.6:80"}},
	// TestFilterLocalEndpoint, with internalTrafficPolicy Local.
	{legacyCase: legacyCase{name: "internalTrafficPolicy Local, with empty endpoints", svc: legacySvc{internalLocal: true}}},
	{legacyCase: legacyCase{name: "internalTrafficPolicy Local, all endpoints not local", svc: legacySvc{internalLocal: true},
		eps: []legacyEp{{addr: "10.0.0.0:80", ready: true}, {addr: "10.0.0.1:80", ready: true}}}},
	{legacyCase: legacyCase{name: "internalTrafficPolicy Local, all endpoints are local", svc: legacySvc{internalLocal: true},
		eps: []legacyEp{{addr: "10.0.0.0:80", ready: true, local: true}, {addr: "10.0.0.1:80", ready: true, local: true}}}},
	{legacyCase: legacyCase{name: "internalTrafficPolicy Local, some endpoints are local", svc: legacySvc{internalLocal: true},
		eps: []legacyEp{{addr: "10.0.0.0:80", ready: true, local: true}, {addr: "10.0.0.1:80", ready: true}}}},
}
