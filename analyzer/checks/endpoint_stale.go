package checks

import (
	"fmt"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/view"
)

var endpointStale = &Check{
	ID:       idEndpointStale,
	Severity: Error,
	Title:    "the data plane forwards to an endpoint that is not usable",
	What: "A rule (a `KUBE-SEP` DNAT, a real server, an nft endpoint chain) sends traffic of a Service to an IP:port " +
		"that is not a usable endpoint of that Service port: no EndpointSlice lists it any more, it is not ready while " +
		"ready endpoints exist, or it runs on another node while the traffic policy is Local. An IPVS real server at " +
		"weight 0 is being drained (graceful termination) and is only reported when kube-proxy would have deleted " +
		"it: at once for UDP and SCTP, as soon as it has no connections for TCP. The endpoints of one Service that are " +
		"programmed but not usable, on all its ports, are one finding. When the same Service also has usable endpoints " +
		"that are not programmed, the cause is one — its rules lag its EndpointSlices, kube-proxy missed updates — and " +
		"so is the finding: it states the cause, lists every endpoint of both sides with its evidence, and its checks " +
		"list endpoint-missing and endpoint-stale. Read from legacy Endpoints objects instead of EndpointSlices, an " +
		"endpoint the object does not list is reported only when the object lists ready endpoints and is not cut at " +
		"1,000 addresses: an Endpoints object lists no terminating endpoint, and kube-proxy forwards to the serving " +
		"terminating ones when none is ready; otherwise the endpoint is noted as not checked and the EndpointSlices " +
		"are asked for.",
	Why: "Connections sent there fail or reach the wrong pod (IPs are reused): this is the \"endpoints not updated\" " +
		"failure, usually a kube-proxy that stopped receiving EndpointSlice updates from the API server.",
	Fix: "Check that the EndpointSlices are right (`kubectl get endpointslices -l kubernetes.io/service-name=NAME`), " +
		"then the kube-proxy logs for watch errors (`Failed to list *v1.EndpointSlice`, connection refused) and the " +
		"API server's load; restart kube-proxy on the node.",
	Needs: endpointNeeds,
	Run:   runEndpointStale,
}

func runEndpointStale(p *Pass) {
	var lag endpointLag
	var legacy legacyNotes
	defer lag.report(p)
	defer legacy.note(p)
	for _, v := range p.Views() {
		ports := p.PortsOf(v)
		for i, sp := range ports {
			e := p.Expect(sp, v.Family)
			for _, u := range p.dispatchesAt(v, ports, i) {
				if policyUnused(v, sp, u.d) {
					continue // traffic-policy-mismatch reports the dispatch
				}
				want := e.Endpoints(u.d.Policy)
				for _, b := range u.d.Backends {
					if model.Has(want, b.Endpoint) {
						continue
					}
					if dnatless(b) && forUsableEndpoint(u.d, sp, b, want) {
						continue // endpoint-missing reports the chain
					}
					if b.Graceful {
						drainingStale(p, sp, u.d, b)
						continue
					}
					if why := legacyBlind(sp, want); why != "" && findEndpoint(sp, b.Endpoint) == nil && !unread(b) {
						legacy.add(sp, b.Endpoint, why)
						continue
					}
					f := Finding{
						Service: sp.String(), Protocol: string(sp.Protocol), Endpoint: b.Endpoint,
						Message:  staleMessage(sp, u.d, b),
						Evidence: append(append([]model.Evidence{}, b.Evidence()...), staleEvidence(sp, b)...),
						Advice:   "Compare with " + endpointsSource(sp) + " of the Service; if they are right, kube-proxy on this node missed updates: check its logs for watch errors and restart it.",
					}
					if unread(b) {
						// "(missing chain ...)", "(no DNAT in ...)": what
						// the dump lacks.
						p.ReportAbsence(v, f)
						continue
					}
					lag.add(p, v, sp, u.d.ID, b.Endpoint, staleFault(sp, u.d, b), staleState(sp, u.d, b), f)
				}
			}
		}
	}
}

// unread reports a backend whose endpoint the view could not read: its
// chain, or the DNAT rule in it, is not in the dump.
func unread(b *view.Backend) bool { return strings.HasPrefix(b.Endpoint, "(") }

func staleMessage(sp *model.ServicePort, d *view.Dispatch, b *view.Backend) string {
	ep := findEndpoint(sp, b.Endpoint)
	head := fmt.Sprintf("%s forwards to %s", d.ID, b.Endpoint)
	switch {
	case ep == nil:
		if sp.FromLegacyEndpoints() {
			return fmt.Sprintf("%s, which the Endpoints object of %s does not list", head, sp.Name.Service())
		}
		return fmt.Sprintf("%s, which no EndpointSlice of %s lists", head, sp.Name.Service())
	case d.Policy == view.PolicyLocal && !ep.Local:
		return fmt.Sprintf("%s, which runs on node %q while the traffic policy is Local", head, ep.NodeName)
	case !ep.Ready && !(ep.Serving && ep.Terminating):
		return fmt.Sprintf("%s, which is %s", head, epState(ep))
	default:
		return fmt.Sprintf("%s, which is %s while other endpoints are ready", head, epState(ep))
	}
}

func staleEvidence(sp *model.ServicePort, b *view.Backend) []model.Evidence {
	if ep := findEndpoint(sp, b.Endpoint); ep != nil {
		return []model.Evidence{EndpointEvidence(sp, ep)}
	}
	return []model.Evidence{ServiceEvidence(sp)}
}

func findEndpoint(sp *model.ServicePort, s string) *model.Endpoint {
	for _, ep := range sp.Endpoints {
		if ep.String() == s {
			return ep
		}
	}
	return nil
}

// drainingStale reports an IPVS real server at weight 0 that kube-proxy's
// graceful termination (pkg/proxy/ipvs/graceful_termination.go) would have
// deleted: UDP and SCTP real servers are deleted at once, TCP ones as soon
// as they have no connections (checked every minute). A real server that
// is still draining TCP connections is normal.
func drainingStale(p *Pass, sp *model.ServicePort, d *view.Dispatch, b *view.Backend) {
	why := ""
	switch {
	case sp.Protocol != "TCP":
		why = fmt.Sprintf("kube-proxy deletes %s real servers at once instead of draining them", sp.Protocol)
	case b.Connections == 0:
		why = "it has no connections left, and kube-proxy deletes a draining real server once its connections are gone (checked every minute)"
	default:
		return
	}
	p.Report(Finding{
		Service: sp.String(), Protocol: string(sp.Protocol), Endpoint: b.Endpoint, Severity: Warning,
		Message:  fmt.Sprintf("%s keeps %s at weight 0, which is no usable endpoint: %s", d.ID, b.Endpoint, why),
		Evidence: append(append([]model.Evidence{}, b.Evidence()...), staleEvidence(sp, b)...),
		Advice:   "A weight-0 real server that stays means kube-proxy's graceful termination is not running for it (kube-proxy restarted and lost its list, or something else set the weight): delete it with ipvsadm -d, or restart kube-proxy on the node.",
	})
}
