package resolve

import (
	"github.com/proxyscan/proxyscan/parsers/kpconfig"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
)

// A Behaviour is something kube-proxy does from one release on, possibly
// behind a feature gate until it became the rule. What differs between
// releases is asked of [Resolution.Has] (or [Enabled]) by name, never by
// comparing minor versions, so that a new release is one row here.
type Behaviour int

// Behaviours that differ between the releases proxyscan models.
const (
	// ClusterTerminatingFallback: a service port with no ready endpoint
	// uses its serving, terminating ones for the Cluster traffic policy
	// (KEP-1669, ProxyTerminatingEndpoints: every policy from 1.24, off by
	// default before 1.26, unconditional from 1.28).
	ClusterTerminatingFallback Behaviour = iota
	// LocalTerminatingFallback: the same for the Local policy when no
	// local endpoint is ready (1.22 alpha for externalTrafficPolicy Local
	// only, every Local policy from 1.24, unconditional from 1.28).
	LocalTerminatingFallback
	// NodeTopologyHints: PreferSameNode hints (hints.forNodes) are honoured
	// (PreferSameTrafficDistribution: 1.33 alpha, 1.34 beta).
	NodeTopologyHints
	// ZoneTopologyHints: zone hints of EndpointSlices are read at all
	// (TopologyAwareHints: 1.21 alpha, 1.24 on by default, 1.33 GA).
	ZoneTopologyHints
	// TopologyAnnotationAnyValue: the topology annotation enables hints with
	// any value but "disabled", and topology-mode stands in for
	// topology-aware-hints (1.27+; before, only "Auto" or "auto" did).
	TopologyAnnotationAnyValue
	// TopologyHintsWithoutAnnotation: hints are used whatever the Service's
	// annotation says (ServiceTrafficDistribution: 1.30 alpha, 1.31 beta,
	// 1.33 GA).
	TopologyHintsWithoutAnnotation
	// LoadBalancerIPMode: load balancer ingress IPs with ipMode Proxy are
	// not programmed (LoadBalancerIPMode: 1.29 alpha, 1.30 beta).
	LoadBalancerIPMode
	// NFTablesMode: the nftables proxy mode exists (NFTablesProxyMode: 1.29
	// alpha, 1.31 beta, 1.33 GA).
	NFTablesMode
	// CategorizeEndpoints: endpoints are selected by pkg/proxy/topology.go
	// CategorizeEndpoints (1.24+) rather than filtered by the proxier (the
	// KUBE-XLB layout of 1.20-1.23).
	CategorizeEndpoints
	numBehaviours
)

// A behaviourSpan says from which minor a behaviour exists, under which
// gate, and from which minor it is on whatever the gates say.
type behaviourSpan struct {
	name string
	// since is the first minor with the behaviour (0: every modelled one);
	// until the first minor without it (0: still in the newest).
	since, until int
	// gate, when set, turns the behaviour on or off from since on (its
	// default per minor is kpconfig's gate table), until always.
	gate   string
	always int
}

var behaviours = [numBehaviours]behaviourSpan{
	ClusterTerminatingFallback:     {name: "ClusterTerminatingFallback", since: 24, gate: "ProxyTerminatingEndpoints", always: 28},
	LocalTerminatingFallback:       {name: "LocalTerminatingFallback", since: 22, gate: "ProxyTerminatingEndpoints", always: 28},
	NodeTopologyHints:              {name: "NodeTopologyHints", since: 33, gate: "PreferSameTrafficDistribution"},
	ZoneTopologyHints:              {name: "ZoneTopologyHints", since: 21, gate: "TopologyAwareHints", always: 33},
	TopologyAnnotationAnyValue:     {name: "TopologyAnnotationAnyValue", since: 27},
	TopologyHintsWithoutAnnotation: {name: "TopologyHintsWithoutAnnotation", since: 30, gate: "ServiceTrafficDistribution", always: 33},
	LoadBalancerIPMode:             {name: "LoadBalancerIPMode", since: 29, gate: "LoadBalancerIPMode", always: 30},
	CategorizeEndpoints:            {name: "CategorizeEndpoints", since: 24},
	NFTablesMode:                   {name: "NFTablesMode", since: 29, gate: "NFTablesProxyMode", always: 33},
}

// String returns the behaviour's name.
func (b Behaviour) String() string {
	if b < 0 || b >= numBehaviours {
		return "unknown"
	}
	return behaviours[b].name
}

// Enabled reports whether kube-proxy of version v, with the configured
// feature gates, has behaviour b.
func Enabled(b Behaviour, v kpversion.Version, gates map[string]bool) bool {
	s := behaviours[b]
	m := v.Minor
	switch {
	case v.Major != 1, m < s.since, s.until != 0 && m >= s.until:
		return false
	case s.gate == "", s.always != 0 && m >= s.always:
		return true
	}
	return kpconfig.GateEnabled(gates, s.gate, m)
}
