package checks

import (
	"fmt"
	"sort"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/view"
)

var servicesUnprogrammed = &Check{
	ID:       "services-unprogrammed",
	Severity: Warning,
	Title:    "kube-proxy's chains hold no Service at all",
	What: "kube-proxy's dispatch (nat `KUBE-SERVICES`, the IPVS table, or the service-ips map of nftables mode) exists but holds " +
		"no Service: not even `default/kubernetes`, the API server's Service, which every cluster has. The check " +
		"reads the data plane alone and finds nothing when the Services are in the inputs: `service-missing` then " +
		"names each missing one.",
	Why: "kube-proxy created its chains at start-up but has never written the Services: it cannot list them " +
		"(RBAC, an unreachable API server), its first sync failed, or it is waiting for its Node. Every Service " +
		"is unreachable through the node.",
	Fix: "Read kube-proxy's log for list/watch and sync errors (`kubectl -n kube-system logs POD`), check that it " +
		"runs (`kubectl -n kube-system get pods -l k8s-app=kube-proxy -o wide`), and restart it.",
	Needs: []Need{NeedDataplane},
	Run:   runServicesUnprogrammed,
}

func runServicesUnprogrammed(p *Pass) {
	if len(p.Snap.Objects.Services) > 0 {
		return // service-missing, endpoint-missing and no-endpoints-unrejected compare with them
	}
	for _, v := range p.Views() {
		anchor, ok := dispatchAnchor(p, v)
		if !ok {
			continue
		}
		if len(v.Entries) > 0 {
			continue
		}
		// The dispatch chain is kube-proxy's own, in the dump given: it is
		// empty whatever mode the node is assumed to run.
		p.reportAbsence(v, Finding{
			Message:  fmt.Sprintf("%s exists but programs no Service at all, not even default/kubernetes (%s)", v.Where[view.ClusterIP], v.Family),
			Evidence: []model.Evidence{anchor},
			Advice:   "Read kube-proxy's log for list/watch and sync errors, and restart kube-proxy once its cause is fixed.",
		}, false)
	}
}

// dispatchAnchor returns the evidence of kube-proxy's Service dispatch in a
// view's data plane, when the inputs hold it: the nat KUBE-SERVICES chain,
// the service-ips map.
func dispatchAnchor(p *Pass, v *view.View) (model.Evidence, bool) {
	switch v.Mode {
	case model.ModeIPTables:
		d := p.Resolution().IPTables(v.Family)
		if d == nil {
			return model.Evidence{}, false
		}
		c := d.Chain("nat", kpnames.KubeServices)
		if c == nil {
			return model.Evidence{}, false
		}
		return model.ChainEvidence(c), true
	case model.ModeNFTables, model.ModeIPVS:
		a, ok := v.Anchors[view.ClusterIP]
		return a, ok && a.File != ""
	}
	return model.Evidence{}, false
}

var servicesWithoutEndpoints = &Check{
	ID:       "services-without-endpoints",
	Severity: Info,
	Title:    "services the data plane marks without endpoints",
	What: "An inventory, read off the data plane alone, of the Service ports kube-proxy marks as having no " +
		"endpoints (\"has no endpoints\": connections are rejected) or no local endpoints (\"has no local " +
		"endpoints\": external traffic under a Local policy is dropped), with each destination and what happens " +
		"to its traffic. It finds nothing when the Services are in the inputs: `no-endpoints-unrejected` then checks " +
		"these rules against them.",
	Why: "A Service without endpoints is the most common reason for \"connection refused\" to a Service; a " +
		"Local-policy Service without endpoints on the node drops what a load balancer sends to that node.",
	Fix: "Check the Service's selector and its Pods' readiness (`kubectl get endpointslices -l " +
		"kubernetes.io/service-name=NAME -o wide`); for a Local policy, check that the load balancer's health " +
		"checks take the node out.",
	Needs: []Need{NeedDataplane},
	Run:   runServicesWithoutEndpoints,
}

// blockedDest is one destination of a service port the data plane rejects
// or drops.
type blockedDest struct {
	what   string
	action view.Action
	ev     model.Evidence
}

func runServicesWithoutEndpoints(p *Pass) {
	if len(p.Snap.Objects.Services) > 0 {
		return // service-missing, endpoint-missing and no-endpoints-unrejected compare with them
	}
	for _, v := range p.Views() {
		var order []string
		by := map[string][]blockedDest{}
		add := func(svc string, b blockedDest) {
			if by[svc] == nil {
				order = append(order, svc)
			}
			by[svc] = append(by[svc], b)
		}
		for _, e := range v.Entries {
			switch {
			case e.Action == view.Reject || e.Action == view.Drop:
				add(entryService(e), blockedDest{entryDest(e), e.Action, e.Evidence[0]})
			case e.Action == view.Forward:
				// Layouts before 1.25 drop with KUBE-MARK-DROP in the KUBE-XLB chain.
				if d := e.Dispatch[model.FromExternal]; d != nil && d.Drops && len(d.Backends) == 0 {
					add(entryService(e), blockedDest{"external traffic to " + entryDest(e), view.Drop, d.Evidence[len(d.Evidence)-1]})
				}
			}
		}
		sort.Strings(order)
		for _, svc := range order {
			bs := by[svc]
			var rejected, dropped []string
			var ev []model.Evidence
			for _, b := range bs {
				if b.action == view.Reject {
					rejected = append(rejected, b.what)
				} else {
					dropped = append(dropped, b.what)
				}
				ev = append(ev, b.ev)
			}
			var parts []string
			why := "has no local endpoints"
			if len(rejected) > 0 {
				why = "has no endpoints"
				parts = append(parts, strings.Join(rejected, ", ")+" rejected")
			}
			if len(dropped) > 0 {
				parts = append(parts, strings.Join(dropped, ", ")+" dropped")
			}
			name, service := svc, svc
			if strings.HasPrefix(svc, unnamedPrefix) {
				name, service = "a Service port no rule names", ""
			}
			p.Report(Finding{
				Service:  service,
				Message:  fmt.Sprintf("%s %s: %s", name, why, strings.Join(parts, "; ")),
				Evidence: ev,
			})
		}
	}
}

// unnamedPrefix starts the key of an entry no rule attributes.
const unnamedPrefix = "\x00"

// entryService names the service port of an entry, or keys it by its
// destination when no rule names it.
func entryService(e *view.Entry) string {
	if e.Service != "" {
		return e.Service
	}
	return unnamedPrefix + entryDest(e)
}

// entryDest says an entry's destination: "10.96.0.10:53/udp", "node port
// 30080/tcp".
func entryDest(e *view.Entry) string {
	if e.Kind == view.NodePort {
		return fmt.Sprintf("node port %d/%s", e.Port, e.Protocol)
	}
	return fmt.Sprintf("%s/%s", model.JoinHostPort(e.IP, e.Port), e.Protocol)
}
