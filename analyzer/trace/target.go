package trace

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/model"
)

// Kinds of destination (Result.TargetKind).
const (
	// TargetService: an IP and port of a Service port (cluster,
	// external or load balancer IP).
	TargetService = "service"
	// TargetNodePort: a node port of a Service port.
	TargetNodePort = "nodePort"
	// TargetNoSuchPort: an address of a Service that has no such port.
	TargetNoSuchPort = "noSuchPort"
	// TargetNoService: no Service's address, and no node port.
	TargetNoService = "noService"
)

// An Endpoint is what the Services of the inputs say of the endpoint a
// path ends at.
type Endpoint struct {
	// Service is the Service port the packet was sent to ("ns/name:port");
	// "" when the destination is no Service's.
	Service string `json:"service,omitempty"`
	// Node is the node the endpoint runs on, when the inputs say.
	Node string `json:"node,omitempty"`
	// Stale reports an endpoint the rules send to that is no endpoint of
	// the Service port in the inputs (rules left behind).
	Stale bool `json:"stale,omitempty"`
	// Notes describe the endpoint in words: "stale: ...", "not ready",
	// "terminating", "on this node", "on node NAME".
	Notes []string `json:"notes,omitempty"`
}

// Target says what a packet's destination is to kube-proxy, from the
// Services of the inputs: a Service port's cluster IP, external IP, load
// balancer IP or node port; an address of a Service that has no such port
// (with the ports it has); or no Service's address at all. It is "" when
// the inputs hold no Service.
func Target(ports []*model.ServicePort, pkt Packet) string {
	text, _, _ := describe(ports, pkt)
	return text
}

// Annotate sets what the Services of the inputs (ports) say of res: its
// Target and TargetKind, and the Endpoint of every path rewritten to an
// endpoint of the destination's Service port.
func Annotate(ports []*model.ServicePort, res *Result) {
	var sp *model.ServicePort
	res.Target, res.TargetKind, sp = describe(ports, res.Packet)
	if res.TargetKind == "" {
		return
	}
	for i := range res.Paths {
		p := &res.Paths[i]
		if p.Verdict != VerdictDNAT && p.Verdict != VerdictLocal {
			continue
		}
		dst, err := netip.ParseAddrPort(p.Destination)
		if err != nil || dst == res.Packet.Dst {
			continue
		}
		if sp == nil {
			// Rules for a Service or a port the inputs do not have:
			// left behind by a deleted one.
			p.Endpoint = &Endpoint{Stale: true, Notes: []string{"stale: the rules send the packet there, but no Service of the inputs has " +
				res.Packet.Dst.String() + " (rules of a deleted Service or port)"}}
			continue
		}
		p.Endpoint = endpointOf(sp, dst)
	}
}

// endpointOf describes dst as an endpoint of sp.
func endpointOf(sp *model.ServicePort, dst netip.AddrPort) *Endpoint {
	ep := &Endpoint{Service: sp.String()}
	var e *model.Endpoint
	for _, x := range sp.Endpoints {
		if x.IP == dst.Addr().Unmap() && x.Port == int32(dst.Port()) {
			e = x
			break
		}
	}
	if e == nil {
		if sp.EndpointSource == "" {
			ep.Notes = append(ep.Notes, "the inputs hold no endpoints of "+sp.String()+": not checked")
			return ep
		}
		ep.Stale = true
		ep.Notes = append(ep.Notes, "stale: not an endpoint of the Service port in the inputs; connections sent there fail")
		return ep
	}
	switch {
	case e.Terminating && e.Serving:
		ep.Notes = append(ep.Notes, "terminating (still serving)")
	case e.Terminating:
		ep.Notes = append(ep.Notes, "terminating")
	case !e.Ready:
		ep.Notes = append(ep.Notes, "not ready")
	default:
		ep.Notes = append(ep.Notes, "ready")
	}
	ep.Node = e.NodeName
	switch {
	case e.Local:
		ep.Notes = append(ep.Notes, "on this node")
	case e.NodeName != "":
		ep.Notes = append(ep.Notes, "on node "+e.NodeName)
	}
	return ep
}

// describe is Target, with the kind of destination and the Service port
// it is (nil when none).
func describe(ports []*model.ServicePort, pkt Packet) (string, string, *model.ServicePort) {
	if len(ports) == 0 {
		return "", "", nil
	}
	dst, port, proto := pkt.Dst.Addr().Unmap(), int32(pkt.Dst.Port()), strings.ToUpper(pkt.Proto)
	if proto == "" {
		proto = "TCP"
	}
	var same []*model.ServicePort // Services with this address
	for _, sp := range ports {
		if sp.Skip != "" {
			continue
		}
		kinds := []struct {
			what string
			ips  []netip.Addr
		}{{"cluster IP", sp.ClusterIPs}, {"external IP", sp.ExternalIPs}, {"load balancer IP", sp.LoadBalancerVIPs}}
		for _, k := range kinds {
			for _, ip := range k.ips {
				if ip != dst {
					continue
				}
				if sp.Port == port && string(sp.Protocol) == proto {
					return fmt.Sprintf("%s is the %s of %s, port %d/%s", pkt.Dst, k.what, sp, sp.Port, proto), TargetService, sp
				}
				same = append(same, sp)
			}
		}
		if sp.NodePort == port && string(sp.Protocol) == proto {
			return fmt.Sprintf("port %d/%s is the node port of %s (on the node's addresses)", port, proto, sp), TargetNodePort, sp
		}
	}
	if len(same) == 0 {
		return fmt.Sprintf("%s is no Service's address in the inputs, and port %d/%s no node port: kube-proxy's rules do not handle it", dst, port, proto), TargetNoService, nil
	}
	var list []string
	seen := map[string]bool{}
	for _, sp := range same {
		s := fmt.Sprintf("%d/%s (%s)", sp.Port, sp.Protocol, sp)
		if !seen[s] {
			seen[s] = true
			list = append(list, s)
		}
	}
	sort.Strings(list)
	return fmt.Sprintf("%s belongs to %s, which has no port %d/%s: its ports are %s", dst, same[0].Name.Service(), port, proto, strings.Join(list, ", ")), TargetNoSuchPort, nil
}
