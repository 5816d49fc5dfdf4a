package checks

import (
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/analyzer/view"
)

// nftViews returns the views of kube-proxy's nftables tables, IPv4 first.
func nftViews(r *resolve.Resolution, attr *view.Attribution) []*view.View {
	var out []*view.View
	for _, fam := range []model.Family{model.IPv4, model.IPv6} {
		if t := r.NFTTable(fam); t != nil {
			out = append(out, view.FromNFT(t, attr))
		}
	}
	return out
}

// policyUnused reports a dispatch of a traffic policy that no traffic of
// the port uses (a Cluster-policy chain for a port whose only traffic is
// internal with internalTrafficPolicy Local, or the reverse): its
// endpoints cannot be judged against the EndpointSlices, and
// traffic-policy-mismatch reports it. IPVS mode falls back to the cluster
// endpoints and is judged against them.
func policyUnused(v *view.View, sp *model.ServicePort, d *view.Dispatch) bool {
	if v.Mode == model.ModeIPVS {
		return false
	}
	if d.Policy == view.PolicyLocal {
		return !sp.UsesLocalEndpoints(v.Family)
	}
	return !sp.UsesClusterEndpoints(v.Family)
}
