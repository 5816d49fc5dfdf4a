package checks

import (
	"fmt"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/view"
)

var endpointMissing = &Check{
	ID:       idEndpointMissing,
	Severity: Error,
	Title:    "a usable endpoint is absent from the data plane",
	What: "An endpoint that kube-proxy would use for this Service port (ready, or serving and terminating when no " +
		"endpoint is ready; local ones for a Local policy) is not among the destinations the data plane balances over, " +
		"or is an IPVS real server left at weight 0, which gets no new connections. The endpoints not programmed of one " +
		"Service, on all its ports, are one finding; when the same Service also has endpoints programmed that are no " +
		"longer usable, both are one endpoint-stale finding (the rules lag the EndpointSlices) whose checks list " +
		"endpoint-missing too.",
	Why: "The remaining endpoints take all the traffic of this node; a newly scaled-up or rescheduled pod gets none. " +
		"It is the other half of \"endpoints not updated\".",
	Fix: "Check the kube-proxy logs of the node for EndpointSlice watch errors and restore failures, and " +
		"`kubeproxy_sync_proxy_rules_endpoint_changes_pending`; restart kube-proxy on the node.",
	Needs: endpointNeeds,
	Run:   runEndpointMissing,
}

func runEndpointMissing(p *Pass) {
	var lag endpointLag
	defer lag.report(p)
	for _, v := range p.Views() {
		ports := p.PortsOf(v)
		for i, sp := range ports {
			e := p.Expect(sp, v.Family)
			var broken []*dnatlessChain
			for _, u := range p.dispatchesAt(v, ports, i) {
				if policyUnused(v, sp, u.d) {
					continue // traffic-policy-mismatch reports the dispatch
				}
				if u.d.Drops {
					continue
				}
				for _, ep := range e.Endpoints(u.d.Policy) {
					if b := u.d.Backend(ep.String()); b != nil {
						if b.Graceful {
							p.Report(Finding{
								Service: sp.String(), Protocol: string(sp.Protocol), Endpoint: ep.String(),
								Message:  fmt.Sprintf("%s keeps %s (%s), a usable endpoint of %s, at weight 0: it gets no new connections", u.d.ID, ep.String(), epState(ep), sp.Name),
								Evidence: append([]model.Evidence{AddressEvidence(sp, ep)}, b.Evidence()...),
								Advice:   "kube-proxy sets weight 0 on real servers it is draining and back to 1 when the endpoint returns; restart kube-proxy on the node so that it resets the weights.",
							})
						}
						continue
					}
					if b := dnatlessBackend(u.d, sp, ep); b != nil {
						broken = addDNATless(broken, u.d, b, ep)
						continue
					}
					lag.add(p, v, sp, u.d.ID, ep.String(), lagMissing, epState(ep), Finding{
						Service: sp.String(), Protocol: string(sp.Protocol), Endpoint: ep.String(),
						Message:  fmt.Sprintf("%s does not forward to %s (%s), a usable endpoint of %s", u.d.ID, ep.String(), epState(ep), sp.Name),
						Evidence: append([]model.Evidence{AddressEvidence(sp, ep)}, u.d.Evidence...),
						Advice:   "kube-proxy has not programmed this endpoint yet: check its logs for EndpointSlice watch errors and its sync metrics, then restart it on the node.",
					})
				}
			}
			for _, c := range broken {
				ev := append([]model.Evidence{AddressEvidence(sp, c.ep)}, c.jumps...)
				if chain := c.b.Evidence(); len(chain) > 1 {
					ev = append(ev, chain[1])
				}
				// A chain cut short in a partial dump may have lost its
				// DNAT rule to the cut.
				sends := "sends"
				if len(c.dispatches) > 1 {
					sends = "send"
				}
				p.ReportAbsenceIn(v, Finding{
					Service: sp.String(), Protocol: string(sp.Protocol), Endpoint: c.ep.String(),
					Message: fmt.Sprintf("%s, the chain of %s (%s), a usable endpoint of %s, has no DNAT rule: the new connections %s %s to it "+
						"fall through to the next rules of the chain, and the endpoint gets none", c.b.ID, c.ep.String(), epState(c.ep), sp.Name, strings.Join(c.dispatches, " and "), sends),
					Evidence: ev,
					Advice: "kube-proxy never writes an endpoint chain without its DNAT rule, and its periodic syncs only rewrite the chains of changed " +
						"Services: something deleted the rule. Restart kube-proxy on the node (a full sync rewrites every chain) and find what edits its rules.",
				}, "nat")
			}
		}
	}
}

// dnatlessChain is a KUBE-SEP chain kube-proxy names for a usable
// endpoint, which the dispatches jump to but which holds no DNAT rule.
type dnatlessChain struct {
	b          *view.Backend
	ep         *model.Endpoint
	dispatches []string
	jumps      []model.Evidence
}

// addDNATless adds the jump of dispatch d to the DNAT-less chain of b.
func addDNATless(list []*dnatlessChain, d *view.Dispatch, b *view.Backend, ep *model.Endpoint) []*dnatlessChain {
	var c *dnatlessChain
	for _, x := range list {
		if x.b.ID == b.ID {
			c = x
		}
	}
	if c == nil {
		c = &dnatlessChain{b: b, ep: ep}
		list = append(list, c)
	}
	c.dispatches = append(c.dispatches, d.ID)
	if ev := b.Evidence(); len(ev) > 0 {
		c.jumps = append(c.jumps, ev[0])
	}
	return list
}

// dnatless reports whether the endpoint chain of b is in the dump but
// holds no DNAT rule.
func dnatless(b *view.Backend) bool { return strings.HasPrefix(b.Endpoint, "(no DNAT in ") }

// dnatlessBackend returns the backend of d whose chain is the KUBE-SEP
// chain kube-proxy names for ep but holds no DNAT rule, or nil.
func dnatlessBackend(d *view.Dispatch, sp *model.ServicePort, ep *model.Endpoint) *view.Backend {
	var name string
	for _, b := range d.Backends {
		if !dnatless(b) {
			continue
		}
		if name == "" {
			name = kpnames.ChainSEP + kpnames.EndpointChainHash(sp.String(), sp.ProtoLower(), ep.String())
		}
		if b.ID == name {
			return b
		}
	}
	return nil
}

// forUsableEndpoint reports whether b is a DNAT-less chain of one of the
// endpoints eps (endpoint-missing reports it).
func forUsableEndpoint(d *view.Dispatch, sp *model.ServicePort, b *view.Backend, eps []*model.Endpoint) bool {
	for _, ep := range eps {
		if dnatlessBackend(d, sp, ep) == b {
			return true
		}
	}
	return false
}
