package checks

import (
	"fmt"
	"slices"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/analyzer/view"
)

var trafficPolicyMismatch = &Check{
	ID:       "traffic-policy-mismatch",
	Severity: Error,
	Title:    "a Local traffic policy is not honoured",
	What: "With `externalTrafficPolicy: Local`, traffic from outside to a node port, external or load balancer IP " +
		"must only go to endpoints on the receiving node (preserving the client IP), and the health check node port " +
		"must answer; with `internalTrafficPolicy: Local`, cluster IP traffic must stay on the node. Here the data " +
		"plane sends such traffic under the other policy, or under the Local policy where the node's kube-proxy does " +
		"not honour it (internalTrafficPolicy before 1.21 or without its gate). In IPVS mode a Local policy without a " +
		"local endpoint falls back to the cluster endpoints from 1.24, as kube-proxy does (not reported), and the node ports, external and load " +
		"balancer IPs of externalTrafficPolicy Local Services must be in the -LOCAL ipsets that spare them the " +
		"masquerade (and only those); its health check node ports are in KUBE-HEALTH-CHECK-NODE-PORT.",
	Why: "A Local policy that is not honoured loses client source IPs (SNAT) and adds a hop, or, the other way " +
		"round, drops traffic the Service expects to be spread over the cluster; load balancers that rely on the " +
		"health check node port send traffic to nodes without endpoints.",
	Fix: "Check the traffic policies of the Service; if they are right, the rules were written for an older version " +
		"of the Service: restart kube-proxy on the node.",
	Needs: serviceNeeds,
	Run:   runTrafficPolicyMismatch,
}

func runTrafficPolicyMismatch(p *Pass) {
	for _, v := range p.Views() {
		if p.interfacesHidden(v) {
			continue
		}
		for _, sp := range p.PortsOf(v) {
			e := p.Expect(sp, v.Family)
			if e.HasInternal() {
				cip, _ := sp.ClusterIP(v.Family)
				if ent := forward(v, view.ClusterIP, cip, sp.ProtoLower(), sp.Port); ent != nil {
					policyFinding(p, sp, ent, model.FromPod, e.InternalPolicy(), "internalTrafficPolicy", sp.InternalPolicyLocal, destText(view.ClusterIP, cip, sp))
				}
			}
			if e.HasExternal() {
				for _, d := range e.ExternalDests() {
					ent := forward(v, d.Kind, d.entryIP, sp.ProtoLower(), portOf(d.Kind, sp))
					if ent == nil {
						continue
					}
					policyFinding(p, sp, ent, model.FromExternal, e.ExternalPolicy(), "externalTrafficPolicy", sp.ExternalPolicyLocal, destText(d.Kind, d.entryIP, sp))
				}
			}
			if v.Mode == model.ModeIPVS {
				checkIPVSLocalSets(p, v, sp)
			}
			checkHealthCheck(p, v, sp)
		}
	}
}

// policyFinding reports a dispatch of another policy than want, the one
// kube-proxy applies; specLocal is the Service's own field, which
// kube-proxy does not always honour as written (internalTrafficPolicy
// before 1.21 or without its gate, and restricting external traffic too
// in 1.21-1.23).
func policyFinding(p *Pass, sp *model.ServicePort, ent *view.Entry, origin model.Origin, want view.Policy, field string, specLocal bool, dest string) {
	d := ent.Dispatch[origin]
	if d == nil || d.Policy == want {
		return
	}
	msg := fmt.Sprintf("traffic to %s goes to %s (%s policy) but the Service's %s is %s", dest, d.ID, d.Policy, field, want)
	if spec := specPolicy(specLocal); spec != want {
		msg = fmt.Sprintf("traffic to %s goes to %s (%s policy) but kube-proxy %s applies the %s policy to it (the Service's %s is %s)",
			dest, d.ID, d.Policy, p.Resolution().Version.MinorString(), want, field, spec)
	}
	p.Report(Finding{
		Service: sp.String(), Protocol: string(sp.Protocol),
		Message:  msg,
		Evidence: appendNew(appendNew(appendNew(append([]model.Evidence{}, ent.Evidence...), ent.Via(origin)...), d.Evidence...), ServiceEvidence(sp)),
		Advice:   "Restart kube-proxy on the node so that it rewrites the Service's rules for its current traffic policy.",
	})
}

// checkHealthCheck verifies that the health check node port of an
// externalTrafficPolicy Local load balancer is accepted (iptables and ipvs,
// HealthCheckNodePortsAccepted).
func checkHealthCheck(p *Pass, v *view.View, sp *model.ServicePort) {
	sets := v.Mode == model.ModeIPVS && v.IPVS != nil && v.IPVS.HasSets // KUBE-HEALTH-CHECK-NODE-PORT
	if sp.HealthCheckNodePort == 0 || v.Mode != model.ModeIPTables && !sets || !p.Resolution().Has(resolve.HealthCheckNodePortsAccepted) || v.Family != model.IPv4 && !hasHealthChecks(v) {
		return
	}
	for _, h := range v.HealthChecks {
		if h.Port == sp.HealthCheckNodePort {
			return
		}
	}
	if v.Mode == model.ModeIPTables && versionAssumed(p.Snap) && !p.withheld(v) {
		// Without filter KUBE-NODEPORTS, which kube-proxy creates from
		// 1.21, the rules do not tell an older release that accepts no
		// health check node port (resolve.RecognizeLayout reads its
		// absence as such in a whole dump of iptables mode).
		if d := p.Resolution().IPTables(v.Family); d == nil || d.Chain("filter", kpnames.KubeNodePorts) == nil {
			p.Note(versionUnchecked+"health check node port %d of %s is not accepted in %s, which kube-proxy writes from 1.21 only, and the rules do not say whether the node's is older",
				sp.HealthCheckNodePort, sp.String(), where(v, view.HealthCheckPort))
			return
		}
	}
	if sets && setMayHide(p.Snap, v.IPVS.Set(kpnames.SetHealthCheckNodePort)) {
		p.ReportSetAbsence(v, Finding{Service: sp.String()}, kpnames.SetHealthCheckNodePort)
		return
	}
	p.ReportMissing(v, fmt.Sprintf("%s health check node port %d", sp.String(), sp.HealthCheckNodePort), Finding{
		Service: sp.String(), Protocol: string(sp.Protocol), Severity: Warning,
		Message:  fmt.Sprintf("health check node port %d of the externalTrafficPolicy Local Service is not accepted in %s", sp.HealthCheckNodePort, where(v, view.HealthCheckPort)),
		Evidence: []model.Evidence{ServiceEvidence(sp), anchor(v, view.HealthCheckPort)},
		Advice:   "Load balancers probe this port to find the nodes with local endpoints; restart kube-proxy on the node so that it writes the rule.",
	})
}

// appendNew appends to list the evidence of more it does not hold yet: in
// IPVS mode an entry and its dispatch are the same virtual server.
func appendNew(list []model.Evidence, more ...model.Evidence) []model.Evidence {
	for _, e := range more {
		if !slices.Contains(list, e) {
			list = append(list, e)
		}
	}
	return list
}

func hasHealthChecks(v *view.View) bool { return len(v.HealthChecks) > 0 }

func specPolicy(local bool) view.Policy {
	if local {
		return view.PolicyLocal
	}
	return view.PolicyCluster
}
