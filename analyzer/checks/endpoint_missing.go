package checks

import (
	"fmt"

	"github.com/proxyscan/proxyscan/analyzer/model"
)

var endpointMissing = &Check{
	ID:       "endpoint-missing",
	Severity: Error,
	Title:    "a usable endpoint is absent from the data plane",
	What: "An endpoint that kube-proxy would use for this Service port (ready, or serving and terminating when no " +
		"endpoint is ready; local ones for a Local policy) is not among the destinations the data plane balances over, " +
		"or is an IPVS real server left at weight 0, which gets no new connections.",
	Why: "The remaining endpoints take all the traffic of this node; a newly scaled-up or rescheduled pod gets none. " +
		"It is the other half of \"endpoints not updated\".",
	Fix: "Check the kube-proxy logs of the node for EndpointSlice watch errors and restore failures, and " +
		"`kubeproxy_sync_proxy_rules_endpoint_changes_pending`; restart kube-proxy on the node.",
	Needs: endpointNeeds,
	Run:   runEndpointMissing,
}

func runEndpointMissing(p *Pass) {
	for _, v := range p.Views() {
		for _, sp := range p.PortsOf(v) {
			e := p.Expect(sp, v.Family)
			for _, u := range dispatches(v, sp) {
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
								Evidence: append([]model.Evidence{EndpointEvidence(sp, ep)}, b.Evidence()...),
								Advice:   "kube-proxy sets weight 0 on real servers it is draining and back to 1 when the endpoint returns; restart kube-proxy on the node so that it resets the weights.",
							})
						}
						continue
					}
					p.ReportAbsence(v, Finding{
						Service: sp.String(), Protocol: string(sp.Protocol), Endpoint: ep.String(),
						Message:  fmt.Sprintf("%s does not forward to %s (%s), a usable endpoint of %s", u.d.ID, ep.String(), epState(ep), sp.Name),
						Evidence: append([]model.Evidence{EndpointEvidence(sp, ep)}, u.d.Evidence...),
						Advice:   "kube-proxy has not programmed this endpoint yet: check its logs for EndpointSlice watch errors and its sync metrics, then restart it on the node.",
					})
				}
			}
		}
	}
}
