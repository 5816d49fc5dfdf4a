package proxier

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
)

// From 1.24 kube-proxy selects endpoints with CategorizeEndpoints, which
// model.Categorize mirrors (with the version's options from
// resolve.CategorizeOptions). This file holds the filter of 1.21-1.23,
// which the proxiers applied to the endpoints before they selected them
// (see [Selection]).

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

// legacyFilter returns the endpoints of sp in family f that the proxiers
// of 1.20-1.23 select from: those kube-proxy tracks (every one with
// all, else the ready ones), filtered by [legacyFilterOf].
// The topology is "PreferSameZone" when the zone hints filtered them.
func legacyFilter(r *resolve.Resolution, opts model.CategorizeOptions, sp *model.ServicePort, f model.Family, all bool) (eps []*model.Endpoint, topology string) {
	eps = filterEndpoints(sp.Endpoints, func(e *model.Endpoint) bool { return e.Family() == f && (all || e.Ready) })
	switch legacyFilterOf(r, sp) {
	case filterLocal:
		return filterEndpoints(eps, func(e *model.Endpoint) bool { return e.Local }), ""
	case filterHints:
		if hinted := filterByHints(eps, sp, opts.Zone, r.Has(resolve.HintsIgnoreUnready)); hinted != nil {
			return hinted, corev1.ServiceTrafficDistributionPreferSameZone
		}
	}
	return eps, ""
}

// legacyInternalLocal reports whether the proxiers of 1.20-1.23 honour
// the internalTrafficPolicy Local of sp, by keeping only its local
// endpoints.
func legacyInternalLocal(r *resolve.Resolution, sp *model.ServicePort) bool {
	return legacyFilterOf(r, sp) == filterLocal
}

// The filters of FilterEndpoints.
const (
	filterNone = iota
	filterLocal
	filterHints
)

// legacyFilterOf mirrors pkg/proxy/topology.go FilterEndpoints of
// 1.21-1.23, which both proxiers apply to the endpoints of a service port
// before they select, and says which filter it applies: it leaves them alone for externalTrafficPolicy Local
// and, in 1.21, without EndpointSliceProxying or with ServiceTopology
// (whose topologyKeys filter keeps every endpoint of a Service without
// topologyKeys; the field is gone from the API, and proxyscan cannot read
// it); else it keeps the local ones for internalTrafficPolicy Local with
// ServiceInternalTrafficPolicy (alpha in 1.21, beta from 1.22), else
// applies the zone hints with TopologyAwareHints (off by default).
func legacyFilterOf(r *resolve.Resolution, sp *model.ServicePort) int {
	if !r.Has(resolve.FilterEndpoints) || nodeLocalExternal(sp) {
		return filterNone
	}
	if resolve.InRelease(resolve.EndpointSliceProxyingFilter, r.Version.Version) &&
		(!r.Has(resolve.EndpointSliceProxyingFilter) || r.Has(resolve.ServiceTopologyFilter)) {
		return filterNone
	}
	switch {
	case sp.InternalPolicyLocal && r.Has(resolve.InternalTrafficPolicyLocal):
		return filterLocal
	case r.Has(resolve.ZoneTopologyHints):
		return filterHints
	}
	return filterNone
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
// the zone, unless an endpoint has no hint or none is for the zone (nil
// then: no filtering). In 1.21 and 1.22 every endpoint counts, ready or
// not, and the unready ones of the zone are kept (the chains then use the
// ready ones only, and may have none); 1.23 looks at the ready endpoints
// only (#106507).
func filterByHints(eps []*model.Endpoint, sp *model.ServicePort, zone string, readyOnly bool) []*model.Endpoint {
	if sp.Service == nil || zone == "" {
		return nil
	}
	if a := sp.Service.Annotations["service.kubernetes.io/topology-aware-hints"]; a != "Auto" && a != "auto" {
		return nil
	}
	var out []*model.Endpoint
	for _, e := range eps {
		if !e.Ready && readyOnly {
			continue
		}
		if len(e.ZoneHints()) == 0 {
			return nil
		}
		for _, z := range e.ZoneHints() {
			if z == zone {
				out = append(out, e)
				break
			}
		}
	}
	return out
}
