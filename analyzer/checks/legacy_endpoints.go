package checks

import (
	"fmt"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/model"
)

// legacyEndpointsUnchecked begins the notes of what a check did not report
// because the endpoints of a Service came from a legacy Endpoints object,
// which cannot show them wrong: coverage turns them into gaps.
const legacyEndpointsUnchecked = "not checked against a legacy Endpoints object: "

// endpointSlicesNeed is how to get what a legacy Endpoints object lacks.
var endpointSlicesNeed = InputNeed{"the cluster's EndpointSlices (legacy Endpoints objects list no terminating endpoint and at most 1,000 addresses)",
	"kubectl get endpointslices -A -o yaml > endpointslices.yaml"}

// legacyBlind says why the legacy Endpoints object sp's endpoints were
// read from cannot show that an endpoint it does not list is no endpoint
// of sp, or "" when it can (or sp's endpoints came from EndpointSlices).
// want is what kube-proxy should use for the dispatch. An Endpoints object
// lists no terminating endpoint (the endpoints controller skips
// terminating pods unless the Service publishes not-ready addresses), and
// kube-proxy forwards to the serving terminating endpoints when none is
// ready; and it stops at 1,000 addresses.
func legacyBlind(sp *model.ServicePort, want []*model.Endpoint) string {
	switch {
	case !sp.FromLegacyEndpoints():
		return ""
	case sp.EndpointsTruncated:
		return "its Endpoints object is cut at 1,000 addresses (annotation endpoints.kubernetes.io/over-capacity: truncated)"
	case len(want) == 0:
		return "its Endpoints object lists no ready endpoint, and kube-proxy then forwards to the serving terminating endpoints, which an Endpoints object does not list"
	}
	return ""
}

// endpointsSource names where sp's endpoints were read, for messages.
func endpointsSource(sp *model.ServicePort) string {
	if sp.FromLegacyEndpoints() {
		return "the Endpoints object"
	}
	return "the EndpointSlices"
}

// legacyNotes gathers, per service port, the programmed endpoints that a
// legacy Endpoints object cannot judge, for one note each.
type legacyNotes struct {
	order []*model.ServicePort
	by    map[*model.ServicePort][]string
	why   map[*model.ServicePort]string
}

func (l *legacyNotes) add(sp *model.ServicePort, endpoint, why string) {
	if l.by == nil {
		l.by, l.why = map[*model.ServicePort][]string{}, map[*model.ServicePort]string{}
	}
	if _, ok := l.by[sp]; !ok {
		l.order = append(l.order, sp)
		l.why[sp] = why
	}
	if !contains(l.by[sp], endpoint) {
		l.by[sp] = append(l.by[sp], endpoint)
	}
}

// note writes the notes, in the order the ports were met.
func (l *legacyNotes) note(p *Pass) {
	for _, sp := range l.order {
		eps := l.by[sp]
		p.Note("%s%s is programmed with %s, which its Endpoints object does not list: %s; the EndpointSlices would tell whether %s",
			legacyEndpointsUnchecked, sp.String(), strings.Join(eps, ", "), l.why[sp], stillEndpoints(len(eps)))
	}
}

func stillEndpoints(n int) string {
	if n == 1 {
		return "it is still an endpoint"
	}
	return fmt.Sprintf("those %d are still endpoints", n)
}
