package checks

import (
	"fmt"
	"net/netip"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/view"
)

var externalMissing = &Check{
	ID:       "external-missing",
	Severity: Error,
	Title:    "an external or load balancer IP has no entry",
	What: "A Service's `spec.externalIPs` entry or LoadBalancer ingress IP (ipMode VIP) has usable endpoints, " +
		"but the data plane has no entry forwarding it, or it does not restrict it to `loadBalancerSourceRanges`. In " +
		"IPVS mode the address must also be bound to `kube-ipvs0` (unless it is a node address) and listed in " +
		"`KUBE-EXTERNAL-IP` (`-LOCAL` for externalTrafficPolicy Local) or `KUBE-LOAD-BALANCER`. In IPVS mode of " +
		"1.21-1.23 the address of an externalTrafficPolicy Local port without a local endpoint has a virtual server " +
		"without real servers, which rejects its traffic: that is its entry. Otherwise a virtual server listed without " +
		"real servers (or with every one at weight 0) is not missing: it rejects the traffic as if the Service had no " +
		"endpoints, and is reported so, as service-missing reports a cluster IP in that state.",
	Why: "Traffic that a load balancer or a router sends to this node for the IP is not forwarded: clients outside " +
		"the cluster see timeouts while in-cluster traffic through the cluster IP works. A missing source-range filter " +
		"exposes the Service to every source.",
	Fix: "Check the Service status (`kubectl get svc -o wide`) and the kube-proxy logs of the node; restart kube-proxy " +
		"on the node to force a full resync. An ingress IP with `ipMode: Proxy` is deliberately not programmed.",
	Needs: serviceNeeds,
	Run:   runExternalMissing,
}

func runExternalMissing(p *Pass) {
	var unjudged []string
	defer func() { noteUnjudged(p, unjudged) }()
	for _, v := range p.Views() {
		for _, sp := range p.PortsOf(v) {
			e := p.Expect(sp, v.Family)
			if !e.HasEndpoints {
				if endpointsUnknown(p.Snap, sp) {
					for _, d := range e.ExternalDests() {
						if d.Kind != view.NodePort {
							checkProgrammed(p, v, sp, d.Kind, d.entryIP, sp.Port, &unjudged)
						}
					}
				}
				continue
			}
			ranges := sp.SourceRangesOf(v.Family)
			for _, d := range e.ExternalDests() {
				if d.Kind == view.NodePort {
					continue
				}
				ip := d.entryIP
				ent := entryOf(v, e, d.Kind, ip, sp.ProtoLower(), sp.Port)
				if ent == nil && v.Mode == model.ModeIPVS {
					if b := blocked(v, d.Kind, ip, sp.ProtoLower(), sp.Port); b != nil {
						reportRejected(p, v, sp, d.Kind, ip, b, len(e.Endpoints(e.ExternalPolicy())))
						continue
					}
				}
				if ent == nil {
					also, alsoEv := ipvsAlso(p, v, sp, d.Kind, ip)
					dest := destText(d.Kind, ip, sp)
					p.ReportMissingIn(v, sp.String()+" "+dest, Finding{
						Service: sp.String(), Protocol: string(sp.Protocol),
						Message:  fmt.Sprintf("no entry for %s in %s%s", dest, where(v, d.Kind), also),
						Evidence: append([]model.Evidence{ServiceEvidence(sp), missingAnchor(p, v, d.Kind, ip, sp.ProtoLower(), sp.Port)}, alsoEv...),
						Advice:   syncAdvice(v),
					}, "nat")
					continue
				}
				if v.Mode == model.ModeIPVS {
					reportIPVSMissing(p, v, sp, d.Kind, ip, ent)
				}
				if d.Kind == view.LoadBalancerIP && len(ranges) > 0 && ent.Action == view.Forward {
					checkFirewall(p, v, sp, ent, ip, ranges)
				}
			}
		}
	}
}

// checkFirewall verifies that a load balancer entry only admits the
// Service's source ranges.
func checkFirewall(p *Pass, v *view.View, sp *model.ServicePort, ent *view.Entry, ip netip.Addr, ranges []netip.Prefix) {
	if v.IPVS != nil && !v.IPVS.HasSets {
		// IPVS mode enforces the ranges with ipsets (KUBE-LOAD-BALANCER-FW
		// and -SOURCE-CIDR): without a listing they cannot be judged.
		p.Note("no ipset listing in the inputs (add ipset save from the node): the loadBalancerSourceRanges of load balancer IPs not checked")
		return
	}
	dest := destText(view.LoadBalancerIP, ip, sp)
	// In IPVS mode the entry's firewall is its member of
	// KUBE-LOAD-BALANCER-FW, its ranges those of -SOURCE-CIDR.
	fwSets := []string{kpnames.SetLoadBalancerFW, kpnames.SetLoadBalancerSrcCIDR}
	if ent.Firewall == nil || !ent.Firewall.DefaultDrop {
		p.ReportSetAbsence(v, Finding{
			Service: sp.String(), Protocol: string(sp.Protocol),
			Message:  fmt.Sprintf("%s is not restricted to its loadBalancerSourceRanges %v: every source is admitted", dest, ranges),
			Evidence: append(append([]model.Evidence{}, ent.Evidence...), ServiceEvidence(sp)),
			Advice:   syncAdvice(v),
		}, fwSets...)
		return
	}
	have := map[netip.Prefix]bool{}
	for _, r := range ent.Firewall.Ranges {
		have[r.Masked()] = true
	}
	for _, r := range ranges {
		if !have[r] {
			p.ReportSetAbsence(v, Finding{
				Service: sp.String(), Protocol: string(sp.Protocol),
				Message:  fmt.Sprintf("source range %s of %s is not admitted by the firewall rules", r, dest),
				Evidence: append(append([]model.Evidence{}, ent.Firewall.Evidence...), ServiceEvidence(sp)),
				Advice:   syncAdvice(v),
			}, fwSets...)
		}
	}
}
