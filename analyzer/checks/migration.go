package checks

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/proxier"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/analyzer/view"
	"github.com/proxyscan/proxyscan/parsers/ipvs"
)

// Migration says what a move of an IPVS-mode node to nftables mode would
// change, item by item, since ipvs mode is deprecated (1.35+: disabled by
// default in 1.40, removed in 1.43).
type Migration struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Ready reports that no item blocks the move.
	Ready bool `json:"ready"`
	// Items are ordered blockers first, then changes, then notes.
	Items []MigrationItem `json:"items"`
	// Unknown names what could block the move but is not in the inputs
	// ("kube-proxy's version", "the node's kernel version", "the node's
	// IPVS table" or what a partial listing of it does not show): Ready
	// then says that no blocker is known, not that none exists.
	Unknown []string `json:"unknown,omitempty"`
}

// Migration impacts, most serious first.
const (
	ImpactBlocker = "blocker" // the move cannot be made as things are
	ImpactChange  = "change"  // traffic is handled differently afterwards
	ImpactInfo    = "info"    // something to know or adapt (settings, dashboards)
)

// A MigrationItem is one thing that changes with the move.
type MigrationItem struct {
	// Topic is a stable kebab-case name: kernel, version, scheduler,
	// weights, graceful-termination, session-affinity, source-ranges,
	// kube-ipvs0, local-fallback, node-port-addresses, ipvs-settings,
	// metrics.
	Topic  string `json:"topic"`
	Impact string `json:"impact"`
	// Summary says what changes, in one or two sentences.
	Summary string `json:"summary"`
	// Services are the service ports concerned (a virtual server's name
	// when no Service explains it), when the item is about some of them.
	Services []string         `json:"services,omitempty"`
	Evidence []model.Evidence `json:"evidence,omitempty"`
}

// migration computes the migration section of an IPVS-mode node; nil for
// the other modes.
func migration(f *facts) *Migration {
	if f.res.Mode != model.ModeIPVS {
		return nil
	}
	s := f.snap
	m := &Migration{From: model.ModeIPVS, To: model.ModeNFTables}
	add := func(it MigrationItem) { m.Items = append(m.Items, it) }
	c := s.Config

	// Blockers: the release and the kernel.
	if versionAssumed(s) {
		m.Unknown = append(m.Unknown, "kube-proxy's version")
	}
	switch v := s.Version; {
	case !v.Known():
	case !resolve.InRelease(resolve.NFTablesMode, v.Version):
		add(MigrationItem{Topic: "version", Impact: ImpactBlocker,
			Summary: fmt.Sprintf("kube-proxy %s has no nftables mode (it exists from 1.29, on by default from 1.31, GA in 1.33): upgrade first", v.MinorString())})
	case !resolve.Enabled(resolve.NFTablesMode, v.Version, nil):
		add(MigrationItem{Topic: "version", Impact: ImpactChange,
			Summary: fmt.Sprintf("kube-proxy %s has nftables mode only behind the NFTablesProxyMode feature gate (alpha); 1.31+ has it on by default, 1.33+ as GA", v.MinorString())})
	}
	if major, minor, ok := nodeKernel(s); ok {
		if major < 5 || major == 5 && minor < 13 {
			add(MigrationItem{Topic: "kernel", Impact: ImpactBlocker,
				Summary:  fmt.Sprintf("nftables mode needs Linux 5.13 or newer; node %s runs %s", s.Node.Name, s.Node.Object.Status.NodeInfo.KernelVersion),
				Evidence: []model.Evidence{model.EvidenceAt(s.Node.Object.Pos, "Node "+s.Node.Name+": kernelVersion "+s.Node.Object.Status.NodeInfo.KernelVersion)}})
		}
	} else {
		m.Unknown = append(m.Unknown, "the node's kernel version")
		add(MigrationItem{Topic: "kernel", Impact: ImpactInfo,
			Summary: "nftables mode needs Linux 5.13 or newer (and nft 1.0.1+ in the kube-proxy image); the node's kernel version is not in the inputs"})
	}

	// What the IPVS table does that nftables does not: what it does not
	// show could block or change the move too.
	t := f.res.IPVSTable()
	if u := ipvsUnknown(f, t); u != "" {
		m.Unknown = append(m.Unknown, u)
	}
	if t != nil {
		sched := configuredScheduler(c)
		schedulers := map[string][]string{}
		for _, svc := range t.Services {
			if svc.SchedulerKnown() && svc.SchedName != "rr" {
				schedulers[svc.SchedName] = append(schedulers[svc.SchedName], svc.String())
			}
		}
		if len(schedulers) > 0 {
			var names []string
			for n := range schedulers {
				names = append(names, n)
			}
			sort.Strings(names)
			var ev []model.Evidence
			if c != nil {
				ev = append(ev, configEvidence(c, "ipvs.scheduler"))
			}
			add(MigrationItem{Topic: "scheduler", Impact: ImpactChange,
				Summary: fmt.Sprintf("virtual servers use scheduler %s (ipvs.scheduler %s); nftables picks an endpoint with numgen random for each new connection, so least-connection, locality and source-hash scheduling lose their meaning",
					strings.Join(names, ", "), sched),
				Evidence: ev})
		}
		weights, graceful := map[string]bool{}, map[string]bool{}
		var wEv, gEv []model.Evidence
		for _, v := range f.views {
			for _, e := range v.Entries {
				for _, d := range entryDispatchList(e) {
					name := e.Service
					if name == "" {
						name = d.ID
					}
					for _, b := range d.Backends {
						switch {
						case b.Graceful:
							if !graceful[name] && len(gEv) < 3 {
								gEv = append(gEv, b.Evidence()...)
							}
							graceful[name] = true
						case b.Weight != 1 && b.Weight != view.WeightUnknown:
							if !weights[name] && len(wEv) < 3 {
								wEv = append(wEv, b.Evidence()...)
							}
							weights[name] = true
						}
					}
				}
			}
		}
		if len(weights) > 0 {
			add(MigrationItem{Topic: "weights", Impact: ImpactChange,
				Summary:  "real servers have weights other than 1 (set outside kube-proxy); nftables gives every endpoint the same share",
				Services: sortedKeys(weights), Evidence: wEv})
		}
		if len(graceful) > 0 {
			add(MigrationItem{Topic: "graceful-termination", Impact: ImpactInfo,
				Summary:  "IPVS drains removed endpoints at weight 0 until their connections end; nftables removes them from the Service's map at once, and established connections keep their endpoint through conntrack",
				Services: sortedKeys(graceful), Evidence: gEv})
		}
	}
	var affinity, ranges []string
	var affEv, rangeEv []model.Evidence
	for _, v := range f.views {
		for _, e := range v.Entries {
			if d := e.Dispatch[model.FromExternal]; d != nil && d.Affinity != nil && e.Service != "" && !contains(affinity, e.Service) {
				affinity = append(affinity, e.Service)
				if len(affEv) < 3 {
					affEv = append(affEv, d.Affinity.Evidence...)
				}
			}
			if e.Firewall != nil && e.Service != "" && !contains(ranges, e.Service) {
				ranges = append(ranges, e.Service)
				if len(rangeEv) < 3 && len(e.Firewall.Evidence) > 0 {
					rangeEv = append(rangeEv, e.Firewall.Evidence[0])
				}
			}
		}
	}
	if len(affinity) > 0 {
		sort.Strings(affinity)
		add(MigrationItem{Topic: "session-affinity", Impact: ImpactChange,
			Summary:  "persistent virtual servers (sessionAffinity ClientIP) become per-Service affinity sets of the nftables table, keyed by client address with the Service's timeout; clients keep their endpoint per Service port rather than per virtual server",
			Services: affinity, Evidence: affEv})
	}
	if len(ranges) > 0 {
		sort.Strings(ranges)
		add(MigrationItem{Topic: "source-ranges", Impact: ImpactChange,
			Summary:  "loadBalancerSourceRanges enforced by the ipsets KUBE-LOAD-BALANCER-FW and KUBE-LOAD-BALANCER-SOURCE-CIDR and filter KUBE-SOURCE-RANGES-FIREWALL become the firewall-ips map and per-Service firewall chains of table ip kube-proxy",
			Services: ranges, Evidence: rangeEv})
	}
	if s.Addrs != nil {
		if bound := s.Addrs.KubeIPVSAddresses(); len(bound) > 0 {
			add(MigrationItem{Topic: "kube-ipvs0", Impact: ImpactChange,
				Summary:  fmt.Sprintf("the %d Service addresses bound to kube-ipvs0 stop being local addresses: the node no longer answers ping or ARP for them (ipvs.strictARP becomes moot), and anything that binds to a Service IP on the node stops working; kube-ipvs0, the ipsets and the IPVS table are left behind until kube-proxy --cleanup removes them", len(bound)),
				Evidence: []model.Evidence{model.EvidenceAt(bound[0].Pos, bound[0].Raw)}})
		}
	}

	// Local traffic policies: IPVS falls back to the cluster endpoints.
	var fallback []string
	for _, v := range f.views {
		for _, sp := range s.ActivePorts() {
			if _, ok := sp.ClusterIP(v.Family); !ok || !(sp.InternalPolicyLocal || sp.ExternalPolicyLocal) || !s.Node.Known() {
				continue
			}
			sel := proxier.SelectEndpoints(f.res, model.ModeIPVS, sp, v.Family)
			falls := func(local bool, r proxier.Route) bool {
				return local && r.Policy == proxier.PolicyCluster && r.Verdict == proxier.Forward
			}
			if (falls(sp.ExternalPolicyLocal && sp.ExternallyAccessible(v.Family), sel.External) || falls(sp.InternalPolicyLocal, sel.Internal)) && !contains(fallback, sp.String()) {
				fallback = append(fallback, sp.String())
			}
		}
	}
	if len(fallback) > 0 {
		sort.Strings(fallback)
		add(MigrationItem{Topic: "local-fallback", Impact: ImpactChange,
			Summary:  "these Local-policy Services have no endpoint on this node; IPVS sends their traffic to the endpoints of other nodes (losing the client address), nftables drops it as the iptables mode does",
			Services: fallback})
	}
	if c != nil && len(c.NodePortAddresses) == 0 && hasNodePorts(s) {
		var ips, others []string
		for _, v := range f.views {
			primary := primaryNodeIP(s, v.Family)
			for _, e := range v.Entries {
				for _, a := range e.NodeIPs {
					if !contains(ips, a.String()) {
						ips = append(ips, a.String())
						if a != primary {
							others = append(others, a.String())
						}
					}
				}
			}
		}
		sort.Strings(ips)
		if len(others) > 0 {
			add(MigrationItem{Topic: "node-port-addresses", Impact: ImpactChange,
				Summary:  fmt.Sprintf("nodePortAddresses is unset: IPVS serves node ports on every node address (%s), nftables mode (1.31+) on the node's primary addresses only; set nodePortAddresses to keep the others", strings.Join(ips, ", ")),
				Evidence: []model.Evidence{configEvidence(c, "nodePortAddresses")}})
		}
	}
	if c != nil {
		var set []string
		var ev []model.Evidence
		for _, field := range []string{"ipvs.scheduler", "ipvs.strictARP", "ipvs.excludeCIDRs", "ipvs.tcpTimeout", "ipvs.tcpFinTimeout", "ipvs.udpTimeout", "ipvs.syncPeriod", "ipvs.minSyncPeriod"} {
			if c.IsSet(field) || c.IsSet(strings.SplitN(field, "[", 2)[0]) {
				set = append(set, field)
				if len(ev) < 3 {
					ev = append(ev, configEvidence(c, field))
				}
			}
		}
		if len(set) > 0 {
			add(MigrationItem{Topic: "ipvs-settings", Impact: ImpactInfo,
				Summary:  fmt.Sprintf("%s have no effect in nftables mode, which reads the nftables section (syncPeriod, minSyncPeriod, masqueradeBit, masqueradeAll)", strings.Join(set, ", ")),
				Evidence: ev})
		}
	}
	add(MigrationItem{Topic: "metrics", Impact: ImpactInfo,
		Summary: "alerts on kubeproxy_sync_proxy_rules_iptables_restore_failures_total should watch kubeproxy_sync_proxy_rules_nftables_sync_failures_total instead; nftables mode also reports full and partial sync durations"})

	rank := map[string]int{ImpactBlocker: 0, ImpactChange: 1, ImpactInfo: 2}
	sort.SliceStable(m.Items, func(i, j int) bool { return rank[m.Items[i].Impact] < rank[m.Items[j].Impact] })
	m.Ready = len(m.Items) == 0 || m.Items[0].Impact != ImpactBlocker
	return m
}

// ipvsUnknown names, for the migration's unknowns, what the IPVS table t
// read from the inputs does not show of the node's: the table itself when
// no input holds it, the rest of it when the listing is partial (some
// virtual servers, or a paste cut short), the schedulers, persistence and
// weights when the listing does not print them (ipvsadm -Ln --stats,
// --rate, --thresholds). It returns "" when t shows the whole table.
func ipvsUnknown(f *facts, t *ipvs.Dump) string {
	if t == nil || t.Form == ipvs.FormTimeout {
		return "the node's IPVS table"
	}
	name := t.HeaderPos.File
	if name == "" && len(t.Services) > 0 {
		name = t.Services[0].Pos.File
	}
	if t.PartialReason != "" {
		if saved := f.res.IPVSSaved(); saved == nil || saved.PartialReason != "" {
			return fmt.Sprintf("the whole IPVS table (%s holds part of it)", name)
		}
	}
	if t.Form == ipvs.FormList {
		if hidden := t.Columns.Hidden(); hidden != "" {
			return fmt.Sprintf("a listing with the virtual servers' schedulers, persistence and weights (%s is an ipvsadm -Ln %s listing)", name, t.Columns.Option())
		}
	}
	return ""
}

// entryDispatchList returns the dispatches of an entry: one per origin
// (without repeats) and Also.
func entryDispatchList(e *view.Entry) []*view.Dispatch {
	var out []*view.Dispatch
	for _, o := range model.Origins {
		if d := e.Dispatch[o]; d != nil && !containsDispatch(out, d) {
			out = append(out, d)
		}
	}
	return append(out, e.Also...)
}

func containsDispatch(ds []*view.Dispatch, d *view.Dispatch) bool {
	for _, x := range ds {
		if x == d {
			return true
		}
	}
	return false
}

// primaryNodeIP returns the node's primary address of a family: the first
// InternalIP of the Node object (what nodePortAddresses "primary" means).
func primaryNodeIP(s *model.Snapshot, fam model.Family) netip.Addr {
	for _, a := range s.Node.Addresses {
		if model.FamilyOf(a) == fam {
			return a
		}
	}
	return netip.Addr{}
}
