package checks

import (
	"fmt"

	"github.com/proxyscan/proxyscan/analyzer/model"
)

var affinityMismatch = &Check{
	ID:       "affinity-mismatch",
	Severity: Warning,
	Title:    "session affinity differs between Service and data plane",
	What: "`sessionAffinity: ClientIP` makes kube-proxy pin each client IP to one endpoint for " +
		"`sessionAffinityConfig.clientIP.timeoutSeconds` (default 10800): `-m recent` rules in iptables mode, " +
		"persistence in IPVS mode, affinity sets in nftables mode. Here the data plane pins clients although the " +
		"Service does not ask for it, does not pin them although it does, uses another timeout, or pins only some endpoints.",
	Why: "Applications that keep state per client (sessions, caches) break when affinity is missing; unexpected " +
		"affinity concentrates load on a few endpoints.",
	Fix: "Check `spec.sessionAffinity` and `spec.sessionAffinityConfig` of the Service; if they are what you want, " +
		"restart kube-proxy on the node so that it rewrites the rules.",
	Needs: serviceNeeds,
	Run:   runAffinityMismatch,
}

func runAffinityMismatch(p *Pass) {
	for _, v := range p.Views() {
		ports := p.PortsOf(v)
		for i, sp := range ports {
			for _, u := range p.dispatchesAt(v, ports, i) {
				d := u.d
				if len(d.Backends) == 0 {
					continue
				}
				if d.AffinityUnknown {
					p.Note("session affinity of the virtual servers not checked: %s", d.Hidden)
					continue
				}
				f := Finding{Service: sp.String(), Protocol: string(sp.Protocol)}
				absence := false // what the finding says rests on rules the dump lacks
				switch {
				case sp.AffinityClientIP && d.Affinity == nil:
					f.Message = fmt.Sprintf("sessionAffinity is ClientIP but %s does not pin clients to endpoints", d.ID)
					absence = true
					f.Evidence = append([]model.Evidence{ServiceEvidence(sp)}, d.Evidence...)
				case !sp.AffinityClientIP && d.Affinity != nil:
					f.Message = fmt.Sprintf("%s pins clients for %ds but the Service's sessionAffinity is None", d.ID, d.Affinity.Timeout)
					f.Evidence = append(append([]model.Evidence{}, d.Affinity.Evidence...), ServiceEvidence(sp))
				case sp.AffinityClientIP && d.Affinity.Timeout != int(sp.AffinityTimeout):
					f.Message = fmt.Sprintf("%s pins clients for %ds but the Service's timeout is %ds", d.ID, d.Affinity.Timeout, sp.AffinityTimeout)
					f.Evidence = append(append([]model.Evidence{}, d.Affinity.Evidence...), ServiceEvidence(sp))
				case sp.AffinityClientIP && !d.Affinity.Complete:
					f.Message = fmt.Sprintf("%s pins clients to only some of its %d endpoints", d.ID, len(d.Backends))
					absence = true
					f.Evidence = append(append([]model.Evidence{}, d.Affinity.Evidence...), ServiceEvidence(sp))
				default:
					continue
				}
				f.Advice = "Restart kube-proxy on the node if the Service's affinity settings are right; they are applied at the next sync."
				if absence {
					p.ReportAbsence(v, f)
				} else {
					p.Report(f)
				}
			}
		}
	}
}
