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
// (1.21-1.23: all endpoints for externalTrafficPolicy Local, only local
// ones for internalTrafficPolicy Local with the ServiceInternalTrafficPolicy
// gate, beta from 1.22, and the zone hints with the TopologyAwareHints
// gate, off by default, annotation "Auto"), then ready endpoints for the
// service chain and, for externalTrafficPolicy Local, the local ready ones
// (1.22+: the local serving terminating ones when there are none and the
// ProxyTerminatingEndpoints gate is on). The alpha ServiceTopology
// (topologyKeys) filtering of 1.20 is not modelled.
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
	if !local {
		switch {
		case sp.InternalPolicyLocal && res.Has(resolve.InternalTrafficPolicyLocal):
			eps = filterEndpoints(eps, func(e *model.Endpoint) bool { return e.Local })
		case res.Has(resolve.ZoneTopologyHints):
			eps = filterByHints(eps, sp, p.in.cat.Zone)
		}
	}
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

func filterEndpoints(eps []*model.Endpoint, keep func(*model.Endpoint) bool) []*model.Endpoint {
	var out []*model.Endpoint
	for _, e := range eps {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

// filterByHints mirrors filterEndpointsWithHints (1.21-1.23).
func filterByHints(eps []*model.Endpoint, sp *model.ServicePort, zone string) []*model.Endpoint {
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
		if !e.Ready {
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
