package proxier

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
)

// From 1.24 kube-proxy selects endpoints with CategorizeEndpoints, which
// model.Categorize mirrors (with the version's options from
// categorizeOptions). This file holds the selection of 1.20-1.23, which
// filtered the endpoint list first and then scanned it in syncProxyRules.

// legacySelection is what syncProxyRules of 1.20-1.23 derives from a
// service port's endpoints.
type legacySelection struct {
	// ready are the endpoints of the KUBE-SVC chain; local those of the
	// KUBE-XLB chain (externalTrafficPolicy Local); inUse those that get a
	// KUBE-SEP chain, in endpoint order.
	ready, local, inUse []*model.Endpoint
	hasEndpoints        bool
}

// nodeLocalExternal mirrors RequestsOnlyLocalTraffic (pkg/proxy/util,
// 1.20-1.23): a NodePort or LoadBalancer Service with
// externalTrafficPolicy Local.
func nodeLocalExternal(sp *model.ServicePort) bool {
	if sp.Service == nil || !sp.ExternalPolicyLocal {
		return false
	}
	t := sp.Service.Spec.Type
	return t == corev1.ServiceTypeNodePort || t == corev1.ServiceTypeLoadBalancer
}

// legacyEndpoints selects the endpoints of sp for family f the way
// syncProxyRules of 1.20-1.23 does: pkg/proxy/topology.go FilterEndpoints
// (1.21-1.23, filterEndpointsLegacy), then ready endpoints for the
// service chain and, for externalTrafficPolicy Local, the local ready ones
// (1.22+: the local serving terminating ones when there are none and the
// ProxyTerminatingEndpoints gate is on). The topologyKeys filter of the
// alpha ServiceTopology gate (1.20, and 1.21 in FilterEndpoints) keeps
// every endpoint of a Service without topologyKeys, which proxyscan takes
// every Service to be (the field is gone from the API).
func (p *iptablesProxier) legacyEndpoints(sp *model.ServicePort) legacySelection {
	res := p.in.res
	all := res.Has(resolve.NotReadyEndpointsTracked)
	var eps []*model.Endpoint
	for _, e := range sp.Endpoints {
		if e.Family() == p.family && (all || e.Ready) {
			eps = append(eps, e)
		}
	}
	local := nodeLocalExternal(sp)
	eps = p.in.filterEndpointsLegacy(sp, eps)
	var s legacySelection
	termGate := res.Has(resolve.LocalTerminatingFallback)
	var localReady, localServingTerminating bool
	for _, e := range eps {
		if e.Ready {
			s.hasEndpoints = true
			localReady = localReady || e.Local
		} else if local && termGate && e.Serving && e.Terminating {
			s.hasEndpoints = true
			localServingTerminating = localServingTerminating || e.Local
		}
	}
	useTerminating := !localReady && localServingTerminating
	for _, e := range eps {
		used := false
		if e.Ready {
			s.ready = append(s.ready, e)
			used = true
		}
		if local && e.Local {
			if useTerminating {
				if e.Serving && e.Terminating {
					s.local = append(s.local, e)
					used = true
				}
			} else if e.Ready {
				s.local = append(s.local, e)
				used = true
			}
		}
		if used {
			s.inUse = append(s.inUse, e)
		}
	}
	return s
}

// filterEndpointsLegacy mirrors pkg/proxy/topology.go FilterEndpoints of
// 1.21-1.23, which both proxiers apply to the endpoints of a service port
// before they select: it leaves them alone for externalTrafficPolicy Local
// and, in 1.21, without EndpointSliceProxying or with ServiceTopology
// (whose topologyKeys filter keeps every endpoint of a Service without
// topologyKeys; the field is gone from the API, and proxyscan cannot read
// it); else it keeps the local ones for internalTrafficPolicy Local with
// ServiceInternalTrafficPolicy (alpha in 1.21, beta from 1.22), else
// applies the zone hints with TopologyAwareHints (off by default).
func (in *input) filterEndpointsLegacy(sp *model.ServicePort, eps []*model.Endpoint) []*model.Endpoint {
	r := in.res
	if !r.Has(resolve.FilterEndpoints) || nodeLocalExternal(sp) {
		return eps
	}
	if resolve.InRelease(resolve.EndpointSliceProxyingFilter, r.Version.Version) &&
		(!r.Has(resolve.EndpointSliceProxyingFilter) || r.Has(resolve.ServiceTopologyFilter)) {
		return eps
	}
	switch {
	case sp.InternalPolicyLocal && r.Has(resolve.InternalTrafficPolicyLocal):
		return filterEndpoints(eps, func(e *model.Endpoint) bool { return e.Local })
	case r.Has(resolve.ZoneTopologyHints):
		return filterByHints(eps, sp, in.cat.Zone, r.Has(resolve.HintsIgnoreUnready))
	}
	return eps
}

func filterEndpoints(eps []*model.Endpoint, keep func(*model.Endpoint) bool) []*model.Endpoint {
	var out []*model.Endpoint
	for _, e := range eps {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

// filterByHints mirrors filterEndpointsWithHints (1.21-1.23): with the
// annotation "Auto" or "auto" and a zone label, the endpoints hinted for
// the zone, unless an endpoint has no hint or none is for the zone. In
// 1.21 and 1.22 every endpoint counts, ready or not, and the unready ones
// of the zone are kept (the chains then use the ready ones only, and may
// have none); 1.23 looks at the ready endpoints only (#106507).
func filterByHints(eps []*model.Endpoint, sp *model.ServicePort, zone string, readyOnly bool) []*model.Endpoint {
	if sp.Service == nil {
		return eps
	}
	if a := sp.Service.Annotations["service.kubernetes.io/topology-aware-hints"]; a != "Auto" && a != "auto" {
		return eps
	}
	if zone == "" {
		return eps
	}
	var out []*model.Endpoint
	for _, e := range eps {
		if !e.Ready && readyOnly {
			continue
		}
		if len(e.ZoneHints()) == 0 {
			return eps
		}
		for _, z := range e.ZoneHints() {
			if z == zone {
				out = append(out, e)
				break
			}
		}
	}
	if len(out) == 0 {
		return eps
	}
	return out
}
