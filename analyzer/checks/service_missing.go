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
		"The data plane has none, or rejects the cluster IP as if the Service had no endpoints (in IPVS mode, a virtual " +
		"server listed without real servers, or with every one at weight 0: the finding says which). In IPVS mode the " +
		"virtual server is not enough: the address must also be bound to `kube-ipvs0` (so that packets to it are " +
		"delivered locally, where IPVS sees them) and listed in ipset `KUBE-CLUSTER-IP` (or `KUBE-IPVS-FILTER` " +
		"rejects new connections to it); the finding says which of the three is missing (a node without `kube-ipvs0` at " +
		"all is one finding that lists the destinations it leaves unbound; an `ip addr` of other interfaces leaves the " +
		"bindings unjudged, a gap). When the exports do not hold " +
		"the Service's endpoints (Services exported without their EndpointSlices), the port must still have a forward " +
		"or a reject entry, as kube-proxy programs every service port whatever its endpoints: one with neither is " +
		"reported, one that is rejected is noted as not judged (so are node ports and external IPs by " +
		"nodeport-missing and external-missing).",
	Why: "Pods and nodes that connect to the cluster IP get no answer (or a reject): the Service is down on this node " +
		"even though its pods are healthy. This is the classic sign of a kube-proxy that stopped syncing, " +
		"failed its last restore, or runs in another mode than its configuration says.",
	Fix: "Look at the kube-proxy logs on the node for sync errors (`iptables-restore failed`, `Failed to list *v1.Service`), " +
		"check `kubeproxy_sync_proxy_rules_last_timestamp_seconds`, and restart the kube-proxy pod of the node " +
		"(`kubectl -n kube-system delete pod -l k8s-app=kube-proxy --field-selector spec.nodeName=NODE`) to force a full resync.",
	Needs: serviceNeeds,
	Run:   runServiceMissing,
}

// syncPending says, for findings of rules missing in family f, that
// kube-proxy's metrics show a sync of that family requested after its last
// one when they were read: the rules may have been on their way (a bundle
// taken between the syncs of the two families, or during the first sync).
func syncPending(p *Pass, f model.Family) (string, []model.Evidence) {
	m := p.Snap.Metrics
	if m == nil {
		return "", nil
	}
	fv := m.KubeProxy().Family(string(f))
	if fv == nil {
		return "", nil
	}
	if fv.LastSync == nil && fv.LastQueued != nil {
		return fmt.Sprintf("; kube-proxy's metrics show no %s sync done yet (its first sync was still running)", f),
			[]model.Evidence{scalarEvidence(fv.LastQueued)}
	}
	if lag, ok := fv.SyncLag(); ok && lag > 0 {
		return fmt.Sprintf("; kube-proxy had a sync of %s pending when the metrics were read (requested %.0f s after its last sync), so these rules may have been on their way", f, lag),
			[]model.Evidence{scalarEvidence(fv.LastSync), scalarEvidence(fv.LastQueued)}
	}
	return "", nil
}

func runServiceMissing(p *Pass) {
	var unjudged []string
	defer func() { noteUnjudged(p, unjudged) }()
	for _, v := range p.Views() {
		for _, sp := range p.PortsOf(v) {
			e := p.Expect(sp, v.Family)
			if !e.HasInternal() {
				if endpointsUnknown(p.Snap, sp) {
					cip, _ := sp.ClusterIP(v.Family)
					checkProgrammed(p, v, sp, view.ClusterIP, cip, sp.Port, &unjudged)
				}
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
				reportRejected(p, v, sp, view.ClusterIP, cip, b, len(e.Endpoints(e.InternalPolicy())))
				continue
			}
			also, alsoEv := ipvsAlso(p, v, sp, view.ClusterIP, cip)
			pending, pendingEv := syncPending(p, v.Family)
			p.ReportMissingIn(v, sp.String()+" "+dest, Finding{
				Service: sp.String(), Protocol: string(sp.Protocol),
				Message:  fmt.Sprintf("no entry for %s in %s (%s)%s%s", dest, where(v, view.ClusterIP), v.Family, also, pending),
				Evidence: append(append([]model.Evidence{ServiceEvidence(sp), missingAnchor(p, v, view.ClusterIP, cip, proto, sp.Port)}, alsoEv...), pendingEv...),
				Advice:   syncAdvice(v),
			}, "nat")
		}
	}
}
