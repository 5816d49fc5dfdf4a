package checks

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/view"
)

var nodePortMissing = &Check{
	ID:       "nodeport-missing",
	Severity: Error,
	Title:    "a node port has no entry in the data plane",
	What: "A NodePort or LoadBalancer Service port has usable endpoints, but the data plane of the node does not " +
		"forward its node port (`KUBE-NODEPORTS` in iptables mode, a virtual server per node IP in IPVS mode, " +
		"`service-nodeports` in nftables mode), or the node ports are not reachable at all. In IPVS mode each node " +
		"address kube-proxy serves node ports on needs its own virtual server, and the port a member of " +
		"`KUBE-NODE-PORT-<PROTO>` for its traffic to be masqueraded. In IPVS mode of 1.21-1.23 the node port of an " +
		"externalTrafficPolicy Local port without a local endpoint has a virtual server without real servers, which " +
		"rejects its traffic (there is no fallback to the cluster endpoints before 1.24): that is its entry. Otherwise " +
		"a virtual server listed without real servers (or with every one at weight 0) is not missing: it rejects the " +
		"traffic as if the Service had no endpoints, and is reported so, as service-missing reports a cluster IP in " +
		"that state.",
	Why: "Load balancers and clients that target <node IP>:<node port> get no answer from this node; load balancer " +
		"health checks fail and the node is taken out of rotation, or traffic is black-holed.",
	Fix: "Check the kube-proxy logs of the node and `nodePortAddresses` in its configuration (node ports are only " +
		"programmed on matching addresses); restart kube-proxy on the node to force a full resync.",
	Needs: serviceNeeds,
	Run:   runNodePortMissing,
}

func runNodePortMissing(p *Pass) {
	var unjudged []string
	defer func() { noteUnjudged(p, unjudged) }()
	for _, v := range p.Views() {
		anyNodePort := false
		for _, sp := range p.PortsOf(v) {
			if sp.NodePort == 0 {
				continue
			}
			anyNodePort = true
			e := p.Expect(sp, v.Family)
			if !e.HasEndpoints {
				if endpointsUnknown(p.Snap, sp) && v.NodePorts {
					checkProgrammed(p, v, sp, view.NodePort, netipZero, sp.NodePort, &unjudged)
				}
				continue
			}
			if ent := entryOf(v, e, view.NodePort, netipZero, sp.ProtoLower(), sp.NodePort); ent != nil {
				if v.Mode == model.ModeIPVS {
					reportIPVSMissing(p, v, sp, view.NodePort, netipZero, ent)
					checkNodePortAddresses(p, v, sp, ent)
				}
				continue
			}
			if v.Mode == model.ModeIPVS {
				if b := blocked(v, view.NodePort, netipZero, sp.ProtoLower(), sp.NodePort); b != nil {
					reportRejected(p, v, sp, view.NodePort, netipZero, b, len(e.Endpoints(e.ExternalPolicy())))
					continue
				}
			}
			dest := destText(view.NodePort, netipZero, sp)
			p.ReportMissingIn(v, sp.String()+" "+dest, Finding{
				Service: sp.String(), Protocol: string(sp.Protocol),
				Message:  fmt.Sprintf("no entry for %s in %s (%s)", dest, where(v, view.NodePort), v.Family),
				Evidence: []model.Evidence{ServiceEvidence(sp), missingAnchor(p, v, view.NodePort, netipZero, sp.ProtoLower(), sp.NodePort)},
				Advice:   syncAdvice(v),
			}, "nat")
		}
		if anyNodePort && !v.NodePorts && p.facts.bare(v) {
			continue // the node ports are among the objects of the data plane without Services
		}
		if anyNodePort && !v.NodePorts && v.Mode == model.ModeIPTables {
			p.ReportAbsence(v, Finding{
				Message:  fmt.Sprintf("nat KUBE-SERVICES has no rule jumping to KUBE-NODEPORTS (%s): no node port of this node is reachable", v.Family),
				Evidence: []model.Evidence{anchor(v, view.ClusterIP)},
				Advice: "kube-proxy writes this rule last in KUBE-SERVICES at every sync; its absence means the chain was " +
					"rewritten by something else or the last sync failed. Restart kube-proxy on the node.",
			})
		}
		if anyNodePort && !v.NodePorts && v.Mode == model.ModeNFTables {
			ev := append([]model.Evidence{}, v.NodePortsEvidence...)
			if len(ev) == 0 {
				ev = append(ev, anchor(v, view.NodePort))
			}
			// The rule or the set elements may be after the cut of a
			// listing cut short.
			p.reportAbsence(v, Finding{
				Message:  fmt.Sprintf("no node port of this node is reachable (%s): %s", v.Family, v.NodePortsWhy),
				Evidence: ev,
				Advice: "kube-proxy's services chain looks up service-nodeports for the addresses in nodeport-ips (or for every " +
					"local address when nodePortAddresses is unset before 1.31). An empty nodeport-ips set means that " +
					"nodePortAddresses matches no address of the node: check it against `ip addr` and the kube-proxy log; " +
					"a missing rule means the table was edited or the last sync failed: restart kube-proxy on the node.",
			}, false)
		}
	}
}

// checkNodePortAddresses verifies that an IPVS node port has a virtual
// server on every node address kube-proxy serves node ports on.
func checkNodePortAddresses(p *Pass, v *view.View, sp *model.ServicePort, ent *view.Entry) {
	want, ok := ipvsNodePortIPs(p.Snap, v.Family)
	if !ok {
		p.Note("node addresses not known (no ip addr, or a nodePortAddresses keyword): node-port virtual servers not checked per address")
		return
	}
	have := map[netip.Addr]bool{}
	for _, a := range ent.NodeIPs {
		have[a] = true
	}
	for _, a := range want {
		if have[a] {
			continue
		}
		p.Report(Finding{
			Service: sp.String(), Protocol: string(sp.Protocol),
			Message: fmt.Sprintf("%s has no virtual server on node address %s (it has on %s)", destText(view.NodePort, netipZero, sp), a,
				joinAddrs(ent.NodeIPs)),
			Evidence: append([]model.Evidence{ServiceEvidence(sp)}, ent.Evidence...),
			Advice:   "kube-proxy creates one virtual server per node address (nodePortAddresses selects them); an address added after kube-proxy's last sync gets one at the next sync, so check the kube-proxy logs for sync errors and restart it on the node.",
		})
	}
}

func joinAddrs(as []netip.Addr) string {
	var parts []string
	for _, a := range as {
		parts = append(parts, a.String())
	}
	return strings.Join(parts, ", ")
}
