package checks

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/parsers/metrics"
)

// Sizes from which the rule set of a node is large: 20,000 iptables rules
// (the size at which kube-proxy's iptables-restore runs take seconds and
// nftables or IPVS mode is advised; a warning when syncs are slow or the
// xtables lock contended, or at ten times that size, else information), 5,000 when syncs are already slow, and
// 1,000 IPVS virtual servers for a short ipvs.syncPeriod.
const (
	manyIPTablesRules    = 20000
	hugeIPTablesRules    = 10 * manyIPTablesRules
	someIPTablesRules    = 5000
	manyVirtualServers   = 1000
	shortIPVSSyncPeriod  = 5 * time.Second
	shortIPVSSyncShare   = 0.1 // p99 of a sync as a share of ipvs.syncPeriod
	iptablesMinSyncZero  = 0
	xtablesLockPatternID = "iptables-xtables-lock"
)

var rulesetScale = &Check{
	ID:       "ruleset-scale",
	Severity: Warning,
	Title:    "the rule set is at a size where tuning or another mode helps",
	What: "The node's kube-proxy rules have grown to where the mode or its settings matter: more than 20,000 " +
		"iptables rules (counted in the dumps, or by `kubeproxy_sync_proxy_rules_iptables_total`; a warning when " +
		"syncs are slow, the xtables lock is contended or the rules number over 200,000, information otherwise, " +
		"since a size alone is not a fault), or more than " +
		"5,000 with syncs already taking a second at p99; in iptables mode `iptables.minSyncPeriod: 0` (one " +
		"iptables-restore per change) with such a rule set or xtables lock contention in the logs; in IPVS mode an " +
		"`ipvs.syncPeriod` under 5 s (every IPVS sync is a full one) with 1,000 virtual servers or syncs taking " +
		"10% of the period. The finding gives the numbers: rules, Service ports, endpoints.",
	Why: "iptables-restore rewrites the whole rule set at each full sync and the kernel evaluates KUBE-SERVICES " +
		"linearly, so sync time and first-packet latency grow with the number of Services and endpoints; the " +
		"settings above multiply the syncs. This is the \"slow iptables sync at scale\" failure: high kube-proxy " +
		"CPU, Services intermittently unreachable after changes.",
	Fix: "Move large clusters to nftables mode (GA since 1.33; IPVS mode is deprecated since 1.35), or at least " +
		"raise `iptables.minSyncPeriod` (e.g. 10s) to batch changes; in IPVS mode keep `ipvs.syncPeriod` at its " +
		"default 30s or more. Removing unused Services and endpoints helps in every mode.",
	Run: runRulesetScale,
}

func runRulesetScale(p *Pass) {
	s := p.Snap
	mode, _ := p.Mode()
	ports := s.ActivePorts()
	endpoints := 0
	for _, sp := range ports {
		endpoints += len(sp.Endpoints)
	}
	var p99 float64
	var p99Ev *model.Evidence
	if s.Metrics != nil {
		for _, f := range s.Metrics.KubeProxy().Families {
			if h := f.SyncDuration; h != nil && h.P99 != nil && float64(*h.P99) > p99 {
				p99 = float64(*h.P99)
				e := quantileEvidence(h, 0.99)
				p99Ev = &e
			}
		}
	}
	scale := fmt.Sprintf("%d Service ports, %d endpoints", len(ports), endpoints)
	switch mode {
	case model.ModeIPTables:
		rules, ev, detail := iptablesRuleCount(p.Resolution())
		if rules == 0 {
			p.Skip("no iptables rule count (iptables-save or the kubeproxy_sync_proxy_rules_iptables_total metric)")
			return
		}
		locks := logMatches(s, xtablesLockPatternID)
		switch {
		case rules > manyIPTablesRules:
			// A size is not a fault: a warning needs a sign that it hurts
			// (slow syncs, lock contention) or a size far past the mark.
			f := Finding{
				Message:  fmt.Sprintf("%d iptables rules (%s) for %s: iptables mode slows down at this size", rules, detail, scale),
				Evidence: ev,
				Advice:   "Plan a move to nftables mode; meanwhile raise iptables.minSyncPeriod so that changes are batched.",
			}
			switch {
			case p99 >= slowSync && p99Ev != nil:
				f.Message += fmt.Sprintf(", and syncs take %.2f s at p99", p99)
				f.Evidence = append(f.Evidence, *p99Ev)
			case len(locks) > 0:
				f.Message += fmt.Sprintf(", and the log shows %d xtables lock timeouts", len(locks))
				f.Evidence = append(f.Evidence, logEvidence(locks, 2)...)
			case rules > hugeIPTablesRules:
			case p99Ev != nil:
				f.Severity = Info
				f.Message += fmt.Sprintf("; syncs take %.2f s at p99, so it does not hurt yet", p99)
				f.Evidence = append(f.Evidence, *p99Ev)
			default:
				f.Severity = Info
				f.Message += "; nothing in the inputs shows whether syncs suffer from it (kube-proxy's /metrics would)"
			}
			p.Report(f)
		case rules > someIPTablesRules && p99 >= slowSync && p99Ev != nil:
			p.Report(Finding{
				Message:  fmt.Sprintf("%d iptables rules (%s) for %s, and syncs take %.2f s at p99", rules, detail, scale, p99),
				Evidence: append(ev, *p99Ev),
				Advice:   "Raise iptables.minSyncPeriod to batch changes and give kube-proxy CPU; consider nftables mode.",
			})
		}
		if c := s.Config; c != nil && c.IPTables.MinSyncPeriod.Duration == iptablesMinSyncZero && c.IsSet("iptables.minSyncPeriod") {
			if rules > someIPTablesRules || len(locks) > 0 {
				why := fmt.Sprintf("with %d rules", rules)
				if len(locks) > 0 {
					why = fmt.Sprintf("and the log shows %d xtables lock timeouts", len(locks))
				}
				p.Report(Finding{
					Message:  fmt.Sprintf("iptables.minSyncPeriod is 0s: kube-proxy runs iptables-restore for every change %s", why),
					Evidence: append([]model.Evidence{configEvidence(c, "iptables.minSyncPeriod")}, logEvidence(locks, 2)...),
					Advice:   "Set iptables.minSyncPeriod to 1s (the default) or more so that bursts of changes share one restore.",
				})
			}
		}
	case model.ModeIPVS:
		c := s.Config
		t := p.Resolution().IPVSTable()
		if c == nil || t == nil {
			p.Skip("no kube-proxy configuration or IPVS table in the inputs")
			return
		}
		period := c.IPVS.SyncPeriod.Duration
		vs := len(t.Services)
		if period <= 0 || period >= shortIPVSSyncPeriod {
			return
		}
		var why string
		ev := []model.Evidence{configEvidence(c, "ipvs.syncPeriod")}
		switch {
		case vs >= manyVirtualServers:
			why = fmt.Sprintf("%d virtual servers", vs)
		case p99 >= shortIPVSSyncShare*period.Seconds() && p99Ev != nil:
			why = fmt.Sprintf("syncs taking %.2f s at p99", p99)
			ev = append(ev, *p99Ev)
		default:
			return
		}
		p.Report(Finding{
			Message:  fmt.Sprintf("ipvs.syncPeriod is %s: every IPVS sync is a full one, with %s (%s, %d virtual servers)", period, why, scale, vs),
			Evidence: ev,
			Advice:   "Set ipvs.syncPeriod back to 30s (the default) or more; changes are still programmed at once, within ipvs.minSyncPeriod.",
		})
	}
}

// iptablesRuleCount returns the number of kube-proxy's iptables rules: the
// larger of the dumps' count (kube-proxy's dump of each family) and the
// kubeproxy_sync_proxy_rules_iptables_total metric, with the evidence.
func iptablesRuleCount(r *resolve.Resolution) (int, []model.Evidence, string) {
	s := r.Snap
	dumpRules, perTable := 0, map[string]int{}
	var ev []model.Evidence
	for _, fam := range []model.Family{model.IPv4, model.IPv6} {
		d := r.IPTablesOf(model.ModeIPTables, fam)
		if d == nil || !resolve.IsIPTablesMode(d) {
			continue
		}
		for _, t := range d.Tables {
			for _, c := range t.Chains {
				perTable[t.Name] += len(c.Rules)
				dumpRules += len(c.Rules)
			}
			if t.Name == "nat" {
				ev = append(ev, model.EvidenceAt(t.Pos(), "*nat"))
			}
		}
	}
	metricRules, perMetric := 0, map[string]int{}
	var mev []model.Evidence
	if s.Metrics != nil {
		for _, f := range s.Metrics.KubeProxy().Families {
			for table, sc := range f.IPTablesTotal {
				metricRules += int(float64(sc.Value))
				perMetric[table] += int(float64(sc.Value))
				mev = append(mev, scalarEvidence(sc))
			}
		}
	}
	if metricRules > dumpRules {
		sortEvidence(mev)
		return metricRules, mev, tableDetail(perMetric) + " by " + metrics.IPTablesRulesTotal
	}
	return dumpRules, ev, tableDetail(perTable) + " in the dumps"
}

func tableDetail(m map[string]int) string {
	var names []string
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %d", n, m[n]))
	}
	return strings.Join(parts, ", ")
}

func sortEvidence(ev []model.Evidence) {
	sort.Slice(ev, func(i, j int) bool { return ev[i].Line < ev[j].Line })
}
