package checks

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/analyzer/view"
)

// Expect is what kube-proxy programs for one service port in one family,
// at the level the view describes: which entries forward, reject or drop,
// with which policy, to which endpoints. It follows syncProxyRules of the
// iptables and nftables proxiers (v1.25-v1.37; earlier layouts reach the
// same decisions with other rules), and syncEndpoint of the ipvs proxier,
// which falls back to the cluster endpoints when a Local policy finds none
// on the node and has no drop: a virtual server without real servers
// rejects.
type Expect struct {
	SP     *model.ServicePort
	Family model.Family
	// Mode is the proxy mode the expectation is for.
	Mode string
	Cat  model.Category
	// HasEndpoints: a usable endpoint exists anywhere. HasInternal: traffic
	// to the cluster IP has endpoints under its policy; HasExternal: the
	// same for external destinations.
	HasEndpoints, HasInternal, HasExternal bool
	InternalPolicy, ExternalPolicy         view.Policy
	// clusterAll, in IPVS mode, holds the endpoints the Cluster policy
	// would use for a port that kube-proxy only reaches under a Local
	// policy (Cat.Cluster is empty then), so that a virtual server written
	// for the Cluster policy is judged against them.
	clusterAll []*model.Endpoint
}

func newExpect(r *resolve.Resolution, sp *model.ServicePort, fam model.Family) *Expect {
	mode := r.Mode
	e := &Expect{SP: sp, Family: fam, Mode: mode, Cat: model.Categorize(sp, fam, r.Categorize)}
	e.HasEndpoints = e.Cat.HasAny
	e.HasInternal, e.HasExternal = e.HasEndpoints, e.HasEndpoints
	e.InternalPolicy, e.ExternalPolicy = view.PolicyCluster, view.PolicyCluster
	if sp.InternalPolicyLocal {
		e.InternalPolicy = view.PolicyLocal
		e.HasInternal = len(e.Cat.Local) > 0
	}
	if sp.ExternalPolicyLocal {
		e.ExternalPolicy = view.PolicyLocal
		e.HasExternal = len(e.Cat.Local) > 0
	}
	if mode == model.ModeIPVS {
		// pkg/proxy/ipvs syncEndpoint: a Local policy without local
		// endpoints uses the cluster endpoints (#97081), which a port that
		// is only reached by its cluster IP does not compute.
		if e.InternalPolicy == view.PolicyLocal && len(e.Cat.Local) == 0 {
			e.InternalPolicy, e.HasInternal = view.PolicyCluster, len(e.Cat.Cluster) > 0
		}
		if e.ExternalPolicy == view.PolicyLocal && len(e.Cat.Local) == 0 {
			e.ExternalPolicy, e.HasExternal = view.PolicyCluster, len(e.Cat.Cluster) > 0
		}
		if !sp.UsesClusterEndpoints(fam) {
			c := *sp
			c.InternalPolicyLocal = false
			e.clusterAll = model.Categorize(&c, fam, r.Categorize).Cluster
		}
	}
	return e
}

// Endpoints returns the endpoints a dispatch of the given policy uses.
func (e *Expect) Endpoints(p view.Policy) []*model.Endpoint {
	if p == view.PolicyLocal {
		return e.Cat.Local
	}
	if e.Cat.Cluster == nil {
		return e.clusterAll
	}
	return e.Cat.Cluster
}

// BlockAction is the filter verdict when a destination has no endpoints
// under its policy: reject when none exist at all, drop when only remote
// ones do. IPVS mode has no drop: its virtual server without real servers
// answers ICMP port unreachable.
func (e *Expect) BlockAction() view.Action {
	if !e.HasEndpoints || e.Mode == model.ModeIPVS {
		return view.Reject
	}
	return view.Drop
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

// ServiceEvidence returns the evidence of a service port's Service object.
func ServiceEvidence(sp *model.ServicePort) model.Evidence {
	text := fmt.Sprintf("Service %s: port %d/%s", sp.Name.Service(), sp.Port, sp.Protocol)
	if sp.Name.Port != "" {
		text = fmt.Sprintf("Service %s: port %s %d/%s", sp.Name.Service(), sp.Name.Port, sp.Port, sp.Protocol)
	}
	if sp.Service != nil {
		if l, ok := sp.Service.PortLine(sp.Name.Port, sp.Port); ok {
			return model.Evidence{File: sp.Service.Pos.File, Line: l.Line, Text: l.Text}
		}
	}
	return model.EvidenceAt(sp.Pos(), text)
}

// EndpointEvidence returns the evidence of an endpoint's EndpointSlice.
func EndpointEvidence(sp *model.ServicePort, ep *model.Endpoint) model.Evidence {
	state := []string{}
	if ep.Ready {
		state = append(state, "ready")
	}
	if ep.Serving && !ep.Ready {
		state = append(state, "serving")
	}
	if ep.Terminating {
		state = append(state, "terminating")
	}
	if len(state) == 0 {
		state = append(state, "not ready")
	}
	where := ""
	if ep.NodeName != "" {
		where = " on node " + ep.NodeName
	}
	return model.EvidenceAt(ep.Pos(), fmt.Sprintf("EndpointSlice of %s: %s (%s)%s", sp.Name.Service(), ep.String(), strings.Join(state, ", "), where))
}

// Dest is an external destination of a service port.
type Dest struct {
	Kind    view.Kind
	IP      string
	entryIP netip.Addr
}
