package proxier

import (
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
)

// Policy is the traffic policy a route of a service port follows.
type Policy uint8

// Traffic policies.
const (
	// PolicyCluster: the endpoints of every node.
	PolicyCluster Policy = iota
	// PolicyLocal: the endpoints of the node only.
	PolicyLocal
)

// String returns the policy as Services spell it ("Cluster", "Local").
func (p Policy) String() string {
	if p == PolicyLocal {
		return "Local"
	}
	return "Cluster"
}

// Verdict is what kube-proxy does with the traffic of a route.
type Verdict uint8

// Verdicts of a route.
const (
	// Forward: the traffic is sent to the route's endpoints.
	Forward Verdict = iota
	// Reject: the traffic is rejected (ICMP port unreachable, TCP reset),
	// as for a service port without any usable endpoint, and in IPVS mode
	// by a virtual server without real servers.
	Reject
	// Drop: the traffic is dropped, as for a Local policy whose endpoints
	// are all on other nodes.
	Drop
)

// String returns the verdict in words ("forward", "reject", "drop").
func (v Verdict) String() string {
	switch v {
	case Reject:
		return "reject"
	case Drop:
		return "drop"
	}
	return "forward"
}

// A Route is what kube-proxy does with one kind of traffic to a service
// port: the traffic to its cluster IP (internal), or that to its node
// port, external and load balancer IPs (external).
//
// Its fields are ordered so that it takes 32 bytes, and a [Selection],
// made for every service port of the node, less.
type Route struct {
	// Endpoints are the endpoints the traffic is sent to, in endpoint
	// order.
	Endpoints []*model.Endpoint
	// Policy is the traffic policy the route follows.
	Policy Policy
	// Verdict is Forward when the traffic is captured and sent on, else
	// what is done with it.
	Verdict Verdict
}

// A Selection is what kube-proxy does with the endpoints of one service
// port in one family: the one model of it, which the generators of every
// mode program and the checks compare captured data planes with.
type Selection struct {
	SP     *model.ServicePort
	Family model.Family
	// Mode is the proxy mode the selection is for.
	Mode string
	// Internal is the route of the traffic to the cluster IP, External
	// that of the traffic to the node port, external and load balancer
	// IPs.
	Internal, External Route
	// Cluster holds the endpoints of the Cluster policy (nil when the port
	// never uses it), Local those of the Local policy (nil likewise); in
	// 1.20-1.23 iptables mode Cluster are those of the KUBE-SVC chain and
	// Local those of the KUBE-XLB chain.
	Cluster, Local []*model.Endpoint
	// InUse are the endpoints that get an endpoint chain: every endpoint a
	// route may send traffic to.
	InUse []*model.Endpoint
	// Topology is the topology mode that filtered Cluster ("" for none,
	// "PreferSameZone", "PreferSameNode"; 1.21-1.23 PreferSameZone when
	// the zone hints filtered the endpoints).
	Topology string
	// UsesCluster and UsesLocal report whether the port, as kube-proxy
	// reads it, uses the Cluster and the Local policy
	// (UsesClusterEndpoints and UsesLocalEndpoints of its service info,
	// with internalTrafficPolicy ignored where kube-proxy ignores it).
	UsesCluster, UsesLocal bool
	// HasEndpoints reports whether a usable endpoint exists anywhere.
	HasEndpoints bool
}

// SelectEndpoints returns what kube-proxy of the resolved version, gates
// and node does in proxy mode with the endpoints of sp in family f (see
// [Selection]): from 1.24 model.Categorize (pkg/proxy/topology.go
// CategorizeEndpoints) and the policy choice of syncProxyRules; in
// 1.20-1.23 the filter-then-scan of syncProxyRules; in IPVS mode the
// endpoints syncEndpoint gives each virtual server. mode is usually the
// resolved one (r.Mode).
func SelectEndpoints(r *resolve.Resolution, mode string, sp *model.ServicePort, f model.Family) Selection {
	return selectEndpoints(r, r.Categorize, mode, sp, f)
}

// selection is what the generators ask: the selection of sp in family f
// for mode.
func (in *input) selection(mode string, sp *model.ServicePort, f model.Family) Selection {
	return selectEndpoints(in.res, in.cat, mode, sp, f)
}

func selectEndpoints(r *resolve.Resolution, opts model.CategorizeOptions, mode string, sp *model.ServicePort, f model.Family) Selection {
	s := Selection{SP: sp, Family: f, Mode: mode}
	if sp.InternalPolicyLocal && !r.Has(resolve.InternalTrafficPolicyLocal) {
		// kube-proxy reads internalTrafficPolicy only where it honours it
		// (newBaseServiceInfo before 1.26, when the gate is off): the
		// port is a Cluster one to every mode's selection.
		c := *sp
		c.InternalPolicyLocal = false
		s.SP = &c
	}
	categorize := r.Has(resolve.CategorizeEndpoints)
	switch {
	case mode == model.ModeIPVS:
		s.ipvs(r, opts, categorize)
	case categorize:
		s.categorized(opts)
	default:
		s.legacy(r, opts)
	}
	s.UsesCluster, s.UsesLocal = s.SP.UsesClusterEndpoints(f), s.SP.UsesLocalEndpoints(f)
	s.SP = sp
	return s
}

// categorized selects as syncProxyRules of the iptables (1.24+) and
// nftables proxiers does: a Local policy without local endpoints drops,
// and a port without any endpoint rejects.
func (s *Selection) categorized(opts model.CategorizeOptions) {
	sp := s.SP
	cat := model.Categorize(sp, s.Family, opts)
	s.Cluster, s.Local, s.InUse, s.HasEndpoints, s.Topology = cat.Cluster, cat.Local, cat.AllReachable, cat.HasAny, cat.Topology
	route := func(local bool) Route {
		switch {
		case !s.HasEndpoints:
			return Route{Policy: policyOf(local), Verdict: Reject}
		case !local:
			return Route{Policy: PolicyCluster, Endpoints: s.Cluster}
		case len(s.Local) == 0:
			return Route{Policy: PolicyLocal, Verdict: Drop}
		}
		return Route{Policy: PolicyLocal, Endpoints: s.Local}
	}
	s.Internal = route(sp.InternalPolicyLocal)
	s.External = route(sp.ExternalPolicyLocal)
}

// ipvs selects as syncEndpoint of the IPVS proxier: the Local endpoints
// for a Local policy, the Cluster ones when there are none (1.24+,
// #97081), else the Cluster ones; a virtual server without real servers
// rejects. In 1.21-1.23 the endpoints are those FilterEndpoints keeps,
// then the ready ones, or for a Local policy the local ready ones (the
// local serving terminating ones with LocalTerminatingFallback), with no
// fallback.
func (s *Selection) ipvs(r *resolve.Resolution, opts model.CategorizeOptions, categorize bool) {
	sp, f := s.SP, s.Family
	var endpoints func(onlyLocal bool) ([]*model.Endpoint, Policy)
	if categorize {
		cat := model.Categorize(sp, f, opts)
		s.Cluster, s.Local, s.HasEndpoints, s.Topology = cat.Cluster, cat.Local, cat.HasAny, cat.Topology
		endpoints = func(onlyLocal bool) ([]*model.Endpoint, Policy) {
			if onlyLocal && len(cat.Local) > 0 {
				return cat.Local, PolicyLocal
			}
			return cat.Cluster, PolicyCluster
		}
	} else {
		eps, topology := legacyFilter(r, opts, sp, f, true)
		s.Topology = topology
		s.Cluster = filterEndpoints(eps, func(e *model.Endpoint) bool { return e.Ready })
		s.Local = filterEndpoints(eps, func(e *model.Endpoint) bool { return e.Local && e.Ready })
		if len(s.Local) == 0 && r.Has(resolve.LocalTerminatingFallback) {
			s.Local = filterEndpoints(eps, func(e *model.Endpoint) bool { return e.Local && e.Serving && e.Terminating })
		}
		s.HasEndpoints = len(s.Cluster) > 0 || len(s.Local) > 0
		endpoints = func(onlyLocal bool) ([]*model.Endpoint, Policy) {
			if onlyLocal {
				return s.Local, PolicyLocal
			}
			return s.Cluster, PolicyCluster
		}
	}
	route := func(onlyLocal bool) Route {
		eps, p := endpoints(onlyLocal)
		if len(eps) == 0 {
			return Route{Policy: p, Verdict: Reject}
		}
		return Route{Policy: p, Endpoints: eps}
	}
	s.Internal = route(sp.InternalPolicyLocal && r.Has(resolve.InternalTrafficPolicyLocal))
	s.External = route(sp.ExternalPolicyLocal)
	s.InUse = union(s.Internal.Endpoints, s.External.Endpoints)
}

// legacy selects as syncProxyRules of the iptables proxier of 1.20-1.23:
// pkg/proxy/topology.go FilterEndpoints (1.21-1.23, [legacyFilter]),
// then the ready endpoints for the service chain and, for
// externalTrafficPolicy Local, the local ready ones for the KUBE-XLB
// chain (1.22+: the local serving terminating ones when there are none
// and LocalTerminatingFallback is on), which marks the traffic for drop
// when it has none. A port without endpoints rejects. The topologyKeys
// filter of the alpha ServiceTopology gate (1.20, and 1.21 in
// FilterEndpoints) keeps every endpoint of a Service without
// topologyKeys, which proxyscan takes every Service to be (the field is
// gone from the API).
func (s *Selection) legacy(r *resolve.Resolution, opts model.CategorizeOptions) {
	sp := s.SP
	local := nodeLocalExternal(sp)
	eps, topology := legacyFilter(r, opts, sp, s.Family, r.Has(resolve.NotReadyEndpointsTracked))
	s.Topology = topology
	termGate := r.Has(resolve.LocalTerminatingFallback)
	var localReady, localServingTerminating bool
	for _, e := range eps {
		if e.Ready {
			s.HasEndpoints = true
			localReady = localReady || e.Local
		} else if local && termGate && e.Serving && e.Terminating {
			s.HasEndpoints = true
			localServingTerminating = localServingTerminating || e.Local
		}
	}
	useTerminating := !localReady && localServingTerminating
	for _, e := range eps {
		used := false
		if e.Ready {
			s.Cluster = append(s.Cluster, e)
			used = true
		}
		if local && e.Local && (useTerminating && e.Serving && e.Terminating || !useTerminating && e.Ready) {
			s.Local = append(s.Local, e)
			used = true
		}
		if used {
			s.InUse = append(s.InUse, e)
		}
	}
	// The service chain holds the local endpoints only when FilterEndpoints
	// kept only those (internalTrafficPolicy Local).
	svcPolicy := policyOf(legacyInternalLocal(r, sp))
	s.Internal = Route{Policy: svcPolicy, Endpoints: s.Cluster}
	if !s.HasEndpoints {
		s.Internal.Verdict = Reject
	}
	s.External = s.Internal
	if local {
		s.External = Route{Policy: PolicyLocal, Endpoints: s.Local}
		switch {
		case !s.HasEndpoints:
			s.External.Verdict = Reject
		case len(s.Local) == 0:
			s.External.Verdict = Drop
		}
	}
}

func policyOf(local bool) Policy {
	if local {
		return PolicyLocal
	}
	return PolicyCluster
}

// union returns the endpoints of a and those of b not in a.
func union(a, b []*model.Endpoint) []*model.Endpoint {
	out := append([]*model.Endpoint(nil), a...)
	for _, e := range b {
		if !model.Has(a, e.String()) {
			out = append(out, e)
		}
	}
	return out
}
