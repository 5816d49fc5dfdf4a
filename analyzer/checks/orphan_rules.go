package checks

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/analyzer/view"
)

var orphanRules = &Check{
	ID:       "orphan-rules",
	Severity: Warning,
	Title:    "rules, chains or entries that belong to no existing service",
	What: "The data plane holds kube-proxy objects — per-service chains, rules in the dispatch chains, virtual " +
		"servers, `kube-ipvs0` addresses, ipset members, map elements — for a Service (or Service port) that does " +
		"not exist in the exports, entries of an existing Service port for a destination it does not have (a cluster IP, " +
		"external IP or node port it had before), or objects nothing leads to any more. When the exports are not of the whole cluster " +
		"(they lack the Service default/kubernetes, which every cluster has: one Service or one namespace exported), " +
		"the objects of Services they do not hold are not judged, and the run says so; nor are those of the Services " +
		"that may lie after the cut of an export cut short.",
	Why: "Rules of a deleted Service keep capturing traffic to its old IPs (which the API server may give to a new " +
		"Service), and leftovers show that kube-proxy's cleanup did not run: a crashed sync, a second kube-proxy, " +
		"or rules restored from a backup.",
	Fix: "Make sure the exports are complete and current (`kubectl get svc,endpointslices -A -o yaml` at the time " +
		"of the capture). If they are, restart kube-proxy on the node: a full sync deletes what it no longer owns. " +
		"Leftovers of another proxy mode are removed with `kube-proxy --cleanup`.",
	Needs: serviceNeeds,
	Run:   runOrphanRules,
}

func runOrphanRules(p *Pass) {
	ports := servicePortByName(p.Snap)
	// The maps are made to their size: a large cluster has tens of
	// thousands of ports.
	all := make(map[string]*model.ServicePort, len(p.Snap.Ports))
	for _, sp := range p.Snap.Ports {
		all[sp.String()] = sp
	}
	large := largeCluster(p.Snap)
	// Services that exist, whole: the leftovers of a deleted Service are
	// one finding whatever the number of its ports.
	services := make(map[string]bool, len(p.Snap.Ports))
	for _, sp := range p.Snap.Ports {
		services[sp.Name.Service()] = true
	}
	// What is left of a Service port that does not exist (or that
	// kube-proxy ignores) is one finding per Service port, and one per
	// Service when the whole Service is gone: one cause.
	left := map[string]*Finding{}
	grouped := map[string]bool{}
	var order []string
	// An export without default/kubernetes, which every cluster has, is
	// of some namespaces or Services: the objects of the Services it does
	// not hold are not judged.
	// An export cut short may hold more Services after the cut
	// (model.ExportCut): the objects of those are not judged either.
	exported := wholeExport(p.Snap)
	cutAll := p.Snap.ServicesCut()
	whole := exported && cutAll == nil
	var unexported []string
	unmatched := 0
	cut := map[string][]string{} // by export cut short
	var cuts []string
	defer func() {
		if len(unexported) > 0 || unmatched > 0 && !exported {
			var what []string
			if unmatched > 0 && !exported {
				what = append(what, plural(unmatched, "object")+" matching no exported Service")
			}
			what = append(what, unexported...)
			p.Note("%s%s", servicesUnexported, listObjects(what))
		}
		for _, file := range cuts {
			sort.Strings(cut[file])
			p.Note("%s (%s): %s", servicesCut, file, listObjects(cut[file]))
		}
		if unmatched > 0 && exported {
			p.Note("%s (%s): %s", servicesCut, cutAll.File, plural(unmatched, "object")+" matching no exported Service")
		}
	}()
	leftover := func(service, protocol, object string, ev []model.Evidence) {
		key := service
		if n, ok := model.ParseServicePortName(service); ok {
			if !services[n.Service()] {
				key = n.Service()
				if !exported {
					if !contains(unexported, key) {
						unexported = append(unexported, key)
					}
					return
				}
			}
			// The Service, or the port of the last one read, may lie
			// after the cut.
			if c := p.Snap.ServiceCut(n.Namespace, n.Name); c != nil {
				if cut[c.File] == nil {
					cuts = append(cuts, c.File)
				}
				if !contains(cut[c.File], key) {
					cut[c.File] = append(cut[c.File], key)
				}
				return
			}
		}
		f := left[key]
		if f == nil {
			f = &Finding{Service: service}
			left[key] = f
			order = append(order, key)
		}
		if f.Service != service {
			// A second port of a deleted Service: the finding is the
			// Service's.
			f.Service, grouped[key] = key, true
		}
		if f.Protocol == "" {
			f.Protocol = protocol
		}
		f.Objects = append(f.Objects, object)
		f.Evidence = append(f.Evidence, ev...)
	}
	defer func() {
		for _, name := range order {
			f := left[name]
			cause := "Service port " + f.Service + " does not exist"
			switch sp := all[f.Service]; {
			case sp != nil:
				cause = "Service port " + f.Service + " is one kube-proxy ignores (" + sp.Skip + ")"
			case grouped[name]:
				cause = "Service " + name + " does not exist"
			}
			what := listObjects(f.Objects)
			verb := "are"
			if len(f.Objects) == 1 {
				verb = "is"
			}
			f.Message = fmt.Sprintf("%s, but %s of its objects %s left: %s", cause, countWord(len(f.Objects)), verb, what)
			f.Advice = "Restart kube-proxy on the node so that a full sync removes the rules of deleted Services."
			p.Report(*f)
		}
	}()
	explained := 0
	defer func() {
		if explained > 0 {
			p.Note("%d unreferenced objects of service ports whose entries are missing are left to the findings about those entries", explained)
		}
	}()
	// Members of KUBE-LOOP-BACK are endpoints: without EndpointSlices
	// nothing says whose they are.
	unjudged := 0
	noSlices := p.Snap.Objects.EndpointObjects() == 0
	defer func() {
		if unjudged > 0 {
			p.Note("%s of %s not checked: %s", plural(unjudged, "member"), kpnames.SetLoopBack, needHints[NeedEndpoints])
		}
	}()
	// Entries of an existing port for a destination it no longer has (an
	// external IP removed, a cluster IP or node port changed) are one
	// finding per port: one change of the Service.
	stale := map[string]*Finding{}
	var staleOrder []string
	defer func() {
		for _, name := range staleOrder {
			f := stale[name]
			what := "that destination"
			if len(f.Objects) > 1 {
				what = "those destinations"
			}
			f.Message = fmt.Sprintf("kube-proxy's rules still send %s to Service port %s, which does not have %s (it has %s)",
				listObjects(f.Objects), name, what, strings.Join(portDests(ports[name]), ", "))
			f.Advice = "Traffic to the old destination still reaches the Service's endpoints (and would capture a Service the address or port is given to next): restart kube-proxy on the node so that a full sync removes the rule."
			p.Report(*f)
		}
	}()
	for _, v := range p.Views() {
		for _, e := range v.Entries {
			if e.Service != "" {
				if sp := ports[e.Service]; sp != nil {
					if !hasDest(sp, e, v.Family) {
						f := stale[e.Service]
						if f == nil {
							f = &Finding{Service: e.Service, Protocol: upperProtocol(e.Protocol)}
							stale[e.Service] = f
							staleOrder = append(staleOrder, e.Service)
						}
						f.Objects = append(f.Objects, e.Dest())
						f.Evidence = append(f.Evidence, e.Evidence...)
					}
					continue
				}
				leftover(e.Service, upperProtocol(e.Protocol), fmt.Sprintf("%s entry for %s", e.Action, e.Dest()), e.Evidence)
				continue
			}
			if !whole {
				unmatched++
				continue
			}
			p.Report(Finding{
				Protocol: upperProtocol(e.Protocol),
				Message:  fmt.Sprintf("%s entry for %s matches no Service", e.Action, e.Dest()),
				Evidence: e.Evidence,
				Advice:   "If no Service uses this address any more, restart kube-proxy on the node so that a full sync removes the rule.",
			})
		}
		for _, o := range v.Objects {
			if o.Flushed && !o.Referenced {
				p.ReportAbsence(v, Finding{
					Service: o.Service, Severity: Info,
					Message:  fmt.Sprintf("%s %s is empty and not referenced by any rule: kube-proxy flushes the chains it stops using and deletes them at a later sync", o.Kind, o.Name),
					Evidence: []model.Evidence{o.Evidence()},
					Advice:   "Nothing to do if it is gone in a capture taken a few seconds later; if it stays, restart kube-proxy on the node.",
				})
				continue
			}
			switch {
			case o.Service == "" && !o.Referenced && noSlices && o.Kind == view.ObjSetEntry && loopBack(o.Name):
				unjudged++
			case o.Service == "" && !o.Referenced && !whole && o.Kind != view.ObjChain:
				// A set member or an address is told whose it is by the
				// Services and endpoints, which the export may not hold.
				unmatched++
			case o.Service != "" && ports[o.Service] == nil:
				leftover(o.Service, "", fmt.Sprintf("%s %s", o.Kind, o.Name), []model.Evidence{o.Evidence()})
			case o.Service == "" && (o.Hashed || o.Kind != view.ObjChain) && !o.Referenced:
				p.ReportAbsence(v, Finding{
					Message:  fmt.Sprintf("%s %s belongs to no Service and nothing leads to it", o.Kind, o.Name),
					Evidence: []model.Evidence{o.Evidence()},
					Advice:   "Restart kube-proxy on the node so that a full sync deletes it.",
				})
			case !o.Referenced && o.Service != "" && p.facts.services[o.Service]:
				// Its entry is missing: the finding about that (service-missing
				// and the like) is the cause of the chain being unreferenced.
				explained++
			case !o.Referenced:
				f := Finding{
					Service:  o.Service,
					Message:  fmt.Sprintf("%s %s is not referenced by any rule", o.Kind, o.Name),
					Evidence: []model.Evidence{o.Evidence()},
					Advice:   "kube-proxy deletes unreferenced chains of its own at its next full sync; if this one stays, restart kube-proxy on the node.",
				}
				if large && v.Mode == model.ModeIPTables {
					f.Severity = Info
					f.Message += " (large-cluster mode deletes stale chains at most once per sync period)"
				}
				if res := p.facts.res; o.Kind == view.ObjChain && strings.HasPrefix(o.Name, kpnames.ChainXLB) && res != nil && !res.Has(resolve.StaleXLBChainsDeleted) {
					f.Advice = fmt.Sprintf("kube-proxy up to 1.23 wrote KUBE-XLB chains and up to 1.27 deleted them when stale; kube-proxy %s (%s) does not: once nothing jumps to it, delete it by hand (iptables -t nat -F %s; iptables -t nat -X %s).",
						res.Version.MinorString(), res.Version.Source, o.Name, o.Name)
				}
				p.ReportAbsence(v, f)
			}
		}
	}
}

// hasDest reports whether service port sp has the destination of entry e,
// an entry of a view of family fam attributed to it: its cluster IP,
// one of its external or load balancer IPs (at its port), or its node
// port. The view's kind of an entry is read off the rules (a comment, a
// chain): an address of another kind of the port counts too.
func hasDest(sp *model.ServicePort, e *view.Entry, fam model.Family) bool {
	if e.Kind == view.NodePort {
		return e.Port == sp.NodePort
	}
	if e.Port != sp.Port {
		return false
	}
	ip := e.IP.Unmap()
	if c, ok := sp.ClusterIP(fam); ok && c == ip {
		return true
	}
	// An ingress IP of ipMode Proxy is programmed by the releases (and
	// gate settings) that do not honour ipMode: its entry is not judged.
	return slices.Contains(sp.ExternalIPs, ip) || slices.Contains(sp.LoadBalancerVIPs, ip) || slices.Contains(sp.ProxyIPs, ip)
}

// portDests lists the destinations a service port has, for messages.
func portDests(sp *model.ServicePort) []string {
	var out []string
	for _, a := range sp.ClusterIPs {
		out = append(out, "cluster IP "+netip.AddrPortFrom(a, uint16(sp.Port)).String())
	}
	for _, a := range sp.ExternalIPs {
		out = append(out, "external IP "+netip.AddrPortFrom(a, uint16(sp.Port)).String())
	}
	for _, a := range sp.LoadBalancerVIPs {
		out = append(out, "load balancer IP "+netip.AddrPortFrom(a, uint16(sp.Port)).String())
	}
	if sp.NodePort != 0 {
		out = append(out, fmt.Sprintf("node port %d", sp.NodePort))
	}
	if len(out) == 0 {
		out = append(out, "no destination")
	}
	return out
}

// servicesUnexported begins the note of the Services orphan-rules does not
// judge because the export is not of the whole cluster: coverage turns it
// into a gap.
const servicesUnexported = "not checked, as the exports hold some Services only (not default/kubernetes, which every cluster has): whether the rules of Services they do not hold are left over: "

// servicesCut begins the note of the Services orphan-rules does not judge
// because they may lie after the cut of an export cut short
// (model.ExportCut): coverage turns it into a gap.
const servicesCut = "not checked whether the rules of Services the exports do not hold are left over, as they may lie after the cut of an export cut short"

// wholeExport reports whether the Services of the exports are those of the
// whole cluster, as kubectl get services -A prints them: they include
// default/kubernetes, which the API server keeps in every cluster.
func wholeExport(s *model.Snapshot) bool {
	for _, svc := range s.Objects.Services {
		if svc.Namespace == "default" && svc.Name == "kubernetes" {
			return true
		}
	}
	return false
}

// loopBack reports whether a set entry object ("SET MEMBER") is a member
// of KUBE-LOOP-BACK, of either family.
func loopBack(name string) bool {
	set, _, _ := strings.Cut(name, " ")
	return set == kpnames.SetName(kpnames.SetLoopBack, false) || set == kpnames.SetName(kpnames.SetLoopBack, true)
}

// largeCluster reports kube-proxy's large-cluster mode: more than 1000
// endpoints in total (pkg/proxy/iptables largeClusterEndpointsThreshold).
func largeCluster(s *model.Snapshot) bool {
	n := 0
	for _, sp := range s.ActivePorts() {
		n += len(sp.Endpoints)
	}
	return n > 1000
}

// listObjects lists the objects of a finding for its message: the first
// six, and how many more.
func listObjects(objs []string) string {
	if len(objs) > 6 {
		return strings.Join(objs[:6], ", ") + fmt.Sprintf(" and %d more", len(objs)-6)
	}
	return strings.Join(objs, ", ")
}

// countWord writes small counts as words ("three"), others as digits.
func countWord(n int) string {
	words := []string{"no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"}
	if n >= 0 && n < len(words) {
		return words[n]
	}
	return fmt.Sprint(n)
}
