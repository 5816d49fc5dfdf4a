package checks

import (
	"fmt"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/view"
)

var serviceMissing = &Check{
	ID:       "service-missing",
	Severity: Error,
	Title:    "a service port has no cluster IP entry in the data plane",
	What: "The Service port has usable endpoints, so kube-proxy should forward its cluster IP: " +
		"a rule in nat `KUBE-SERVICES` (iptables), a virtual server (IPVS) or a `service-ips` element (nftables). " +
		"The data plane has none, or rejects the cluster IP as if the Service had no endpoints. In IPVS mode the " +
		"virtual server is not enough: the address must also be bound to `kube-ipvs0` (so that packets to it are " +
		"delivered locally, where IPVS sees them) and listed in ipset `KUBE-CLUSTER-IP` (or `KUBE-IPVS-FILTER` " +
		"rejects new connections to it); the finding says which of the three is missing.",
	Why: "Pods and nodes that connect to the cluster IP get no answer (or a reject): the Service is down on this node " +
		"even though its pods are healthy. This is the classic sign of a kube-proxy that stopped syncing, " +
		"failed its last restore, or runs in another mode than its configuration says.",
	Fix: "Look at the kube-proxy logs on the node for sync errors (`iptables-restore failed`, `Failed to list *v1.Service`), " +
		"check `kubeproxy_sync_proxy_rules_last_timestamp_seconds`, and restart the kube-proxy pod of the node " +
		"(`kubectl -n kube-system delete pod -l k8s-app=kube-proxy --field-selector spec.nodeName=NODE`) to force a full resync.",
	Needs: serviceNeeds,
	Run:   runServiceMissing,
}

func runServiceMissing(p *Pass) {
	for _, v := range p.Views() {
		for _, sp := range p.PortsOf(v) {
			e := p.Expect(sp, v.Family)
			if !e.HasInternal {
				continue
			}
			cip, _ := sp.ClusterIP(v.Family)
			proto := sp.ProtoLower()
			if ent := forward(v, view.ClusterIP, cip, proto, sp.Port); ent != nil {
				if v.Mode == model.ModeIPVS {
					reportIPVSMissing(p, v, sp, view.ClusterIP, cip, ent)
				}
				continue
			}
			dest := destText(view.ClusterIP, cip, sp)
			if b := blocked(v, view.ClusterIP, cip, proto, sp.Port); b != nil {
				p.Report(Finding{
					Service: sp.String(), Protocol: string(sp.Protocol),
					Message: fmt.Sprintf("%s is %sed as if the Service had no endpoints, but it has %d usable", dest, b.Action,
						len(e.Endpoints(e.InternalPolicy))),
					Evidence: append(append([]model.Evidence{}, b.Evidence...), ServiceEvidence(sp)),
					Advice:   syncAdvice(v),
				})
				continue
			}
			also, alsoEv := ipvsAlso(p, v, sp, view.ClusterIP, cip)
			p.ReportAbsence(v, Finding{
				Service: sp.String(), Protocol: string(sp.Protocol),
				Message:  fmt.Sprintf("no entry for %s in %s (%s)%s", dest, where(v, view.ClusterIP), v.Family, also),
				Evidence: append([]model.Evidence{ServiceEvidence(sp), anchor(v, view.ClusterIP)}, alsoEv...),
				Advice:   syncAdvice(v),
			})
		}
	}
}
