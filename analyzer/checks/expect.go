package checks

import (
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/proxier"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/analyzer/view"
)

// Expect is what kube-proxy programs for one service port in one family,
// in the terms of the view: the reference proxier's endpoint selection
// ([proxier.Selection], which its generators program), with the policies
// and verdicts as the view spells them.
type Expect struct {
	proxier.Selection
	// clusterAll, in IPVS mode, holds the endpoints the Cluster policy
	// would use for a port that kube-proxy only reaches under a Local
	// policy (Cluster is nil then), so that a virtual server written for
	// the Cluster policy is judged against them.
	clusterAll []*model.Endpoint
}

// HasInternal reports whether traffic to the cluster IP is forwarded to
// endpoints under its policy. What the Selection says is read, not kept
// (an Expect is made for every service port of the node).
func (e *Expect) HasInternal() bool { return e.Internal.Verdict == proxier.Forward }

// HasExternal reports whether traffic to external destinations is
// forwarded to endpoints under its policy.
func (e *Expect) HasExternal() bool { return e.External.Verdict == proxier.Forward }

// InternalPolicy is the policy of the traffic to the cluster IP.
func (e *Expect) InternalPolicy() view.Policy { return viewPolicy(e.Internal.Policy) }

// ExternalPolicy is the policy of the traffic to external destinations.
func (e *Expect) ExternalPolicy() view.Policy { return viewPolicy(e.External.Policy) }

func newExpect(r *resolve.Resolution, sp *model.ServicePort, fam model.Family) *Expect {
	s := proxier.SelectEndpoints(r, r.Mode, sp, fam)
	e := &Expect{Selection: s}
	if s.Mode == model.ModeIPVS && !s.UsesCluster {
		c := *sp
		c.InternalPolicyLocal = false
		e.clusterAll = proxier.SelectEndpoints(r, r.Mode, &c, fam).Cluster
	}
	return e
}

func viewPolicy(p proxier.Policy) view.Policy {
	if p == proxier.PolicyLocal {
		return view.PolicyLocal
	}
	return view.PolicyCluster
}

// Endpoints returns the endpoints a dispatch of the given policy uses:
// those of the route that forwards under it (in 1.20-1.23 the KUBE-SVC
// chain of internalTrafficPolicy Local holds the local endpoints), else
// those of the policy.
func (e *Expect) Endpoints(p view.Policy) []*model.Endpoint {
	for _, r := range []proxier.Route{e.Internal, e.External} {
		if r.Verdict == proxier.Forward && viewPolicy(r.Policy) == p {
			return r.Endpoints
		}
	}
	switch {
	case p == view.PolicyLocal:
		return e.Local
	case e.Cluster == nil:
		return e.clusterAll
	}
	return e.Cluster
}

// BlockAction is the filter verdict for a destination of kind k without
// endpoints under its policy (see [proxier.Verdict]).
func (e *Expect) BlockAction(k view.Kind) view.Action {
	v := e.External.Verdict
	if k == view.ClusterIP {
		v = e.Internal.Verdict
	}
	if v == proxier.Drop {
		return view.Drop
	}
	return view.Reject
}

// ExternalDests lists the external destinations of the port in the family:
// external IPs, load balancer VIPs and the node port.
func (e *Expect) ExternalDests() []Dest {
	var out []Dest
	for _, ip := range e.SP.ExternalIPsOf(e.Family) {
		out = append(out, Dest{Kind: view.ExternalIP, IP: ip.String(), entryIP: ip})
	}
	for _, ip := range e.SP.LoadBalancerVIPsOf(e.Family) {
		out = append(out, Dest{Kind: view.LoadBalancerIP, IP: ip.String(), entryIP: ip})
	}
	if e.SP.NodePort != 0 {
		out = append(out, Dest{Kind: view.NodePort})
	}
	return out
}
