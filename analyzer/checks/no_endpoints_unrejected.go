package checks

import (
	"fmt"
	"net/netip"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/view"
)

var noEndpointsUnrejected = &Check{
	ID:       "no-endpoints-unrejected",
	Severity: Warning,
	Title:    "a service without usable endpoints is not rejected",
	What: "kube-proxy rejects connections to a Service port that has no usable endpoint (ICMP port unreachable / TCP " +
		"reset), and drops those to a Local-policy destination that has endpoints only on other nodes. Here the " +
		"data plane has no such rule for a destination of the port, or the wrong verdict.",
	Why: "Without the reject, clients wait for a timeout instead of failing at once, which turns an outage into " +
		"slow cascading failures; a drop where kube-proxy rejects (or the reverse) hides why the Service fails.",
	Fix: "Check why the Service has no usable endpoints (`kubectl get endpointslices -l kubernetes.io/service-name=NAME`: " +
		"selector, readiness probes), and restart kube-proxy on the node if its rules lag behind.",
	// Without EndpointSlices every Service would look endpoint-less.
	Needs: endpointNeeds,
	Run:   runNoEndpointsUnrejected,
}

func runNoEndpointsUnrejected(p *Pass) {
	for _, v := range p.Views() {
		for _, sp := range p.PortsOf(v) {
			e := p.Expect(sp, v.Family)
			if !e.HasInternal() {
				cip, _ := sp.ClusterIP(v.Family)
				checkBlocked(p, v, sp, e, view.ClusterIP, cip, model.FromPod)
			}
			if !e.HasExternal() {
				for _, d := range e.ExternalDests() {
					checkBlocked(p, v, sp, e, d.Kind, d.entryIP, model.FromExternal)
				}
			}
		}
	}
}

// checkBlocked verifies that a destination without endpoints under its
// policy is rejected or dropped as kube-proxy does.
func checkBlocked(p *Pass, v *view.View, sp *model.ServicePort, e *Expect, k view.Kind, ip netip.Addr, origin model.Origin) {
	port := portOf(k, sp)
	want := e.BlockAction(k)
	dest := destText(k, ip, sp)
	b := blocked(v, k, ip, sp.ProtoLower(), port)
	if b == nil {
		// Layouts before 1.25 drop with KUBE-MARK-DROP in the dispatch.
		if f := forward(v, k, ip, sp.ProtoLower(), port); f != nil && want == view.Drop {
			if d := f.Dispatch[origin]; d != nil && d.Drops {
				return
			}
		}
		if sp.FromLegacyEndpoints() && forward(v, k, ip, sp.ProtoLower(), port) != nil {
			// The endpoints forwarded to may be serving terminating ones,
			// which an Endpoints object does not list.
			p.Note("%s%s %s is forwarded, not %s, although its Endpoints object lists no usable endpoint: kube-proxy forwards to the serving terminating endpoints then, which an Endpoints object does not list; the EndpointSlices would tell whether there are any",
				legacyEndpointsUnchecked, sp.String(), dest, want.Past())
			return
		}
		why := "has no endpoints"
		if e.HasEndpoints {
			why = "has no endpoints on this node and a Local traffic policy"
		}
		p.ReportMissing(v, fmt.Sprintf("%s %s (to %s)", sp.String(), dest, want), Finding{
			Service: sp.String(), Protocol: string(sp.Protocol),
			Message:  fmt.Sprintf("nothing %ss %s although the Service %s", want, dest, why),
			Evidence: []model.Evidence{ServiceEvidence(sp), missingAnchor(p, v, k, ip, sp.ProtoLower(), port)},
			Advice:   syncAdvice(v),
		})
		return
	}
	if b.Action != want {
		p.Report(Finding{
			Service: sp.String(), Protocol: string(sp.Protocol),
			Message:  fmt.Sprintf("%s is %s but kube-proxy would %s it", dest, b.Action.Past(), want),
			Evidence: append(append([]model.Evidence{}, b.Evidence...), ServiceEvidence(sp)),
			Advice:   "The rule reflects an older state of the Service's endpoints; restart kube-proxy on the node if it persists.",
		})
	}
}
