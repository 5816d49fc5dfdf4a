package kpconfig

import (
	"fmt"
	"sort"
	"strings"
)

// Stage is the maturity of a feature gate.
type Stage string

// Feature-gate stages (k8s.io/component-base/featuregate).
const (
	Alpha      Stage = "ALPHA"
	Beta       Stage = "BETA"
	GA         Stage = ""
	Deprecated Stage = "DEPRECATED"
)

// GateSpan is the state of a gate from one minor on.
type GateSpan struct {
	From    int // first minor with this state
	Default bool
	Stage   Stage
	Locked  bool // LockToDefault: setting the other value is an error
}

// Gate is the history of one kube-proxy-relevant feature gate in minors
// 1.20–1.37.
type Gate struct {
	Name  string
	Spans []GateSpan // ascending by From
	// Gone is the first minor that no longer knows the gate (0: still known
	// in 1.37). When Uncertain is set, the gate is known up to LastSeen and
	// unknown from Gone, and the minors between are not judged.
	Gone      int
	LastSeen  int
	Uncertain bool
	// Since, when set, is the first minor kube-proxy is known to register
	// the gate in (the logging gates: kube-proxy adds them from 1.27); the
	// minors from the first span to Since are not judged.
	Since int
}

// Gates are the feature gates that change kube-proxy's behaviour, with
// their state per minor, from pkg/features/kube_features.go of v1.20–v1.30
// (ServiceTrafficDistribution and TopologyAwareHints to their GA in 1.33 from
// the feature-gate reference of kubernetes.io)
// and v1.37 (whose versioned specs give the transitions of 1.31–1.36), and
// k8s.io/component-base/logs/api/v1/kube_features.go for the logging gates.
// The gates kube-proxy once had and no release modelled knows are in it
// too (SupportIPVSProxyMode), so that a configuration still setting one is
// refused as kube-proxy refuses it. kube-proxy accepts every gate of the
// whole Kubernetes gate registry; gates not in this table are not judged.
var Gates = []Gate{
	{Name: "ContextualLogging", Spans: []GateSpan{{24, false, Alpha, false}, {30, true, Beta, false}}, Since: 27},
	{Name: "EndpointSlice", Spans: []GateSpan{{17, true, Beta, false}, {21, true, GA, true}}, Gone: 25},
	{Name: "EndpointSliceProxying", Spans: []GateSpan{{19, true, Beta, false}, {22, true, GA, true}}, Gone: 25},
	{Name: "IPTablesOwnershipCleanup", Spans: []GateSpan{{25, false, Alpha, false}, {27, true, Beta, false}, {28, true, GA, true}}, Gone: 30},
	{Name: "IPv6DualStack", Spans: []GateSpan{{16, false, Alpha, false}, {21, true, Beta, false}, {23, true, GA, true}}, Gone: 25},
	{Name: "KubeProxyDrainingTerminatingNodes", Spans: []GateSpan{{28, false, Alpha, false}, {30, true, Beta, false}}, Gone: 37, LastSeen: 30, Uncertain: true},
	{Name: "KubeProxyIPVS", Spans: []GateSpan{{37, true, Deprecated, false}}},
	{Name: "KubeProxyNFTablesLocalhostNodePorts", Spans: []GateSpan{{37, false, Alpha, false}}},
	{Name: "LoadBalancerIPMode", Spans: []GateSpan{{29, false, Alpha, false}, {30, true, Beta, false}}, Gone: 37, LastSeen: 30, Uncertain: true},
	{Name: "LoggingAlphaOptions", Spans: []GateSpan{{24, false, Alpha, false}}, Since: 27},
	{Name: "LoggingBetaOptions", Spans: []GateSpan{{24, true, Beta, false}}, Since: 27},
	{Name: "MinimizeIPTablesRestore", Spans: []GateSpan{{26, false, Alpha, false}, {27, true, Beta, false}, {28, true, GA, true}}, Gone: 30},
	{Name: "NFTablesProxyMode", Spans: []GateSpan{{29, false, Alpha, false}, {31, true, Beta, false}, {33, true, GA, true}}},
	{Name: "PreferSameTrafficDistribution", Spans: []GateSpan{{33, false, Alpha, false}, {34, true, Beta, false}, {35, true, GA, true}}},
	{Name: "ProxyTerminatingEndpoints", Spans: []GateSpan{{22, false, Alpha, false}, {26, true, Beta, false}, {28, true, GA, true}}, Gone: 30},
	{Name: "ServiceInternalTrafficPolicy", Spans: []GateSpan{{21, false, Alpha, false}, {22, true, Beta, false}, {26, true, GA, true}}, Gone: 28},
	{Name: "ServiceTopology", Spans: []GateSpan{{17, false, Alpha, false}}, Gone: 22},
	{Name: "ServiceTrafficDistribution", Spans: []GateSpan{{30, false, Alpha, false}, {31, true, Beta, false}, {33, true, GA, true}}, Gone: 37, LastSeen: 33, Uncertain: true},
	// IPVS mode's gate before IPVS was GA, removed in 1.20 (kubernetes
	// PR 94514): kubeadm configurations of that time still carry it.
	{Name: "SupportIPVSProxyMode", Spans: []GateSpan{{8, false, Alpha, false}, {9, true, Beta, false}, {11, true, GA, false}}, Gone: 20},
	{Name: "TopologyAwareHints", Spans: []GateSpan{{21, false, Alpha, false}, {23, false, Beta, false}, {24, true, Beta, false}, {33, true, GA, true}}, Gone: 37, LastSeen: 33, Uncertain: true},
	{Name: "WinDSR", Spans: []GateSpan{{14, false, Alpha, false}, {33, true, Beta, false}, {34, true, GA, true}}},
	{Name: "WinOverlay", Spans: []GateSpan{{14, false, Alpha, false}, {20, true, Beta, false}, {34, true, GA, true}}},
}

// LookupGate returns the gate named name, or nil ([Gates] is sorted by
// name).
func LookupGate(name string) *Gate {
	i := sort.Search(len(Gates), func(i int) bool { return Gates[i].Name >= name })
	if i < len(Gates) && Gates[i].Name == name {
		return &Gates[i]
	}
	return nil
}

// Known reports whether minor knows the gate; sure is false for the minors
// the table cannot judge.
func (g *Gate) Known(minor int) (known, sure bool) {
	switch {
	case minor < g.Spans[0].From:
		return false, true
	case g.Since > 0 && minor < g.Since:
		return false, false
	case g.Gone != 0 && minor >= g.Gone:
		return false, true
	case g.Uncertain && minor > g.LastSeen:
		return false, false
	}
	return true, true
}

// At returns the state of the gate in minor (meaningful when Known).
func (g *Gate) At(minor int) GateSpan {
	s := g.Spans[0]
	for _, sp := range g.Spans {
		if sp.From <= minor {
			s = sp
		}
	}
	return s
}

// GateEnabled reports whether the named gate is on in minor given the
// configured gates: the configured value if any, else the default. An
// unknown gate is off.
func GateEnabled(gates map[string]bool, name string, minor int) bool {
	g := LookupGate(name)
	if g == nil {
		return gates[name]
	}
	if known, sure := g.Known(minor); !known && sure {
		return false
	}
	if v, ok := gates[name]; ok {
		return v
	}
	return g.At(minor).Default
}

// gateError is what featuregate SetFromMap (k8s.io/component-base
// featuregate) returns for one configured gate, or "".
func gateError(name string, val bool, minor int) string {
	g := LookupGate(name)
	if g == nil {
		return ""
	}
	known, sure := g.Known(minor)
	if !sure {
		return ""
	}
	if !known {
		return unrecognizedGate + name
	}
	if s := g.At(minor); s.Locked && val != s.Default {
		return fmt.Sprintf("cannot set feature gate %v to %v, feature is locked to %v", name, val, s.Default)
	}
	return ""
}

// UnrecognizedGate reports whether a validation error is featuregate's
// refusal of a gate the release does not know.
func UnrecognizedGate(fe FieldError) bool {
	return strings.HasPrefix(fe.Field, "featureGates.") && strings.HasPrefix(fe.Message, unrecognizedGate)
}

const unrecognizedGate = "unrecognized feature gate: "
