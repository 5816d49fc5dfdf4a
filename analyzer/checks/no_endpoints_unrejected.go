package checks

import (
	"fmt"
	"net/netip"
	"strconv"

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
		msg := fmt.Sprintf("nothing %ss %s although the Service %s", want, dest, why)
		ev := []model.Evidence{ServiceEvidence(sp), blockAnchor(p, v, k, ip, sp.ProtoLower(), port)}
		if w, ok := v.BlockWhere[k]; ok {
			msg += ": " + blockAbsent(v, w, k, ip, sp.ProtoLower(), port)
			if f := forward(v, k, ip, sp.ProtoLower(), port); f != nil {
				msg += ", and its entry in " + where(v, k) + " forwards its traffic instead"
				ev = append(ev, f.Evidence...)
			} else {
				msg += ", so its traffic " + unblockedFate(k, want)
			}
		}
		p.ReportMissing(v, fmt.Sprintf("%s %s (to %s)", sp.String(), dest, want), Finding{
			Service: sp.String(), Protocol: string(sp.Protocol),
			Message:  msg,
			Evidence: ev,
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

// blockAnchor points at where the reject or drop entries of kind k live
// (the no-endpoint map, the filter chain), else where its entries do, or
// the place its virtual server would have in an ipvsadm listing (see
// missingAnchor).
func blockAnchor(p *Pass, v *view.View, k view.Kind, ip netip.Addr, proto string, port int32) model.Evidence {
	if e, ok := v.BlockAnchors[k]; ok {
		return e
	}
	return missingAnchor(p, v, k, ip, proto, port)
}

// blockAbsent says that w, where the reject or drop of a destination
// lives, has none for it: the element an nftables map lacks, as nft lists
// its key, or the rule an iptables chain lacks.
func blockAbsent(v *view.View, w string, k view.Kind, ip netip.Addr, proto string, port int32) string {
	if v.Mode != model.ModeNFTables {
		return w + " has no rule for it"
	}
	key := proto + " . " + strconv.Itoa(int(port))
	if k != view.NodePort {
		key = ip.String() + " . " + key
	}
	return w + " has no element " + key
}

// unblockedFate says what becomes of the traffic to a destination of kind
// k that kube-proxy would reject or drop (want) and that no rule of its
// matches.
func unblockedFate(k view.Kind, want view.Action) string {
	if k == view.NodePort {
		return "matches no rule of kube-proxy's and is delivered to the node itself as to any other port"
	}
	s := "matches no rule of kube-proxy's and is routed on as to any other address"
	if want == view.Reject {
		s += " (clients wait for a timeout instead of being refused)"
	}
	return s
}
