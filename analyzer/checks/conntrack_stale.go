package checks

import (
	"fmt"
	"net/netip"
	"sort"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/conntrack"
)

var conntrackStale = &Check{
	ID:       "conntrack-stale",
	Severity: Warning,
	Title:    "stale udp conntrack flows to endpoints that are gone",
	What: "A UDP flow of the node's conntrack table targets a Service frontend (a cluster IP, external IP or load " +
		"balancer IP with the Service port, or a node port) but its reply comes from an address that is no serving " +
		"endpoint of that Service port: a pod that was deleted or replaced, or the frontend itself when the flow " +
		"was created before any rule existed. kube-proxy's conntrack reconciler (pkg/proxy/conntrack " +
		"CleanStaleEntries) deletes exactly these flows after each sync that removes UDP endpoints; the check " +
		"applies the same rule to the captured table.",
	Why: "Conntrack keeps a UDP flow as long as packets keep coming, and every packet of it is NATed to the old " +
		"destination: clients that reuse their source port (DNS resolvers, statsd, syslog) keep sending into the " +
		"void. This is \"DNS fails after a pod restart\": CoreDNS moved, but the node's flows still point at the " +
		"old pod.",
	Fix: "Delete the flows (`conntrack -D -p udp --orig-dst SERVICE_IP --orig-port-dst PORT`) and find out why " +
		"kube-proxy did not: its log (`Failed to delete stale service connections`, conntrack errors), the " +
		"`kubeproxy_conntrack_reconciler_*` metrics, and whether it can use the conntrack netlink interface (it needs " +
		"NET_ADMIN).",
	Needs: []Need{NeedServices, NeedEndpoints},
	Run:   runConntrackStale,
}

func runConntrackStale(p *Pass) {
	s := p.Snap
	if s.Conntrack == nil {
		if emptyConntrackCollected(s) {
			return // conntrack -L ran and listed no flow: nothing is stale
		}
		p.Skip("no conntrack listing in the inputs (add conntrack -L from the node)")
		return
	}
	// Frontends of UDP service ports, with the serving endpoints (any
	// condition but serving is ignored, as kube-proxy's reconciler does).
	type front struct {
		sp      *model.ServicePort
		serving map[netip.AddrPort]bool
	}
	byIP := map[netip.AddrPort]*front{}
	byNodePort := map[uint16]*front{}
	for _, sp := range s.ActivePorts() {
		if sp.Protocol != "UDP" {
			continue
		}
		f := &front{sp: sp, serving: map[netip.AddrPort]bool{}}
		for _, ep := range sp.Endpoints {
			if ep.Serving {
				f.serving[netip.AddrPortFrom(ep.IP, uint16(ep.Port))] = true
			}
		}
		for _, ips := range [][]netip.Addr{sp.ClusterIPs, sp.ExternalIPs, sp.LoadBalancerVIPs} {
			for _, ip := range ips {
				byIP[netip.AddrPortFrom(ip, uint16(sp.Port))] = f
			}
		}
		if sp.NodePort != 0 && len(f.serving) > 0 {
			byNodePort[uint16(sp.NodePort)] = f
		}
	}
	type group struct {
		sp    *model.ServicePort
		reply netip.AddrPort
		flows []*conntrack.Flow
	}
	groups := map[string]*group{}
	for _, fl := range s.Conntrack.Flows {
		if fl.ProtoNum != 17 || !fl.Orig.HasPorts || !fl.Reply.HasPorts {
			continue
		}
		dst, reply := fl.OrigDst(), fl.ReplySrc()
		f := byIP[dst]
		if f == nil {
			f = byNodePort[dst.Port()]
		}
		if f == nil || f.serving[reply] {
			continue
		}
		k := f.sp.String() + " " + reply.String()
		if groups[k] == nil {
			groups[k] = &group{sp: f.sp, reply: reply}
		}
		groups[k].flows = append(groups[k].flows, fl)
	}
	var keys []string
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		g := groups[k]
		fl := g.flows[0]
		dst := fl.OrigDst()
		var what string
		switch {
		case !fl.IsDNAT():
			what = fmt.Sprintf("%s UDP flow(s) to %s were never translated (the reply comes from %s itself): they were created while no rule existed, and keep their clients away from the Service's endpoints",
				count(g.flows), dst, dst.Addr())
		case findEndpoint(g.sp, model.JoinHostPort(g.reply.Addr(), int32(g.reply.Port()))) != nil:
			ep := findEndpoint(g.sp, model.JoinHostPort(g.reply.Addr(), int32(g.reply.Port())))
			what = fmt.Sprintf("%s UDP flow(s) to %s still go to %s, which is %s", count(g.flows), dst, model.JoinHostPort(g.reply.Addr(), int32(g.reply.Port())), epState(ep))
		default:
			what = fmt.Sprintf("%s UDP flow(s) to %s still go to %s, which no EndpointSlice of %s lists", count(g.flows), dst,
				model.JoinHostPort(g.reply.Addr(), int32(g.reply.Port())), g.sp.Name.Service())
		}
		ev := []model.Evidence{}
		for i, f := range g.flows {
			if i < 3 {
				ev = append(ev, model.EvidenceAt(f.Pos, f.Raw))
			}
		}
		ev = append(ev, ServiceEvidence(g.sp))
		p.Report(Finding{
			Service: g.sp.String(), Protocol: "UDP", Endpoint: model.JoinHostPort(g.reply.Addr(), int32(g.reply.Port())),
			Message:  what,
			Evidence: ev,
			Advice:   fmt.Sprintf("Delete them with conntrack -D -p udp --orig-dst %s --orig-port-dst %d, and check why kube-proxy's conntrack cleanup did not (its log and the kubeproxy_conntrack_reconciler metrics).", dst.Addr(), dst.Port()),
		})
	}
}

func count[T any](list []T) string { return fmt.Sprint(len(list)) }

// emptyConntrackCollected reports a bundle whose manifest records that the
// conntrack listing ran and wrote nothing: an empty table, not a missing
// input.
func emptyConntrackCollected(s *model.Snapshot) bool {
	if s.Manifest == nil {
		return false
	}
	for _, name := range []string{"conntrack-dnat", "conntrack6-dnat"} {
		if src := s.Manifest.Source(name); src != nil && (src.Status == "ok" || src.Status == "partial") && src.Bytes == 0 {
			return true
		}
	}
	return false
}
