package checks

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/klog"
	"github.com/proxyscan/proxyscan/parsers/metrics"
	"github.com/proxyscan/proxyscan/parsers/paste"
)

// slowSync is the sync duration p99 from which syncs count as slow: the
// operating checklist's "sync duration < 1s".
const slowSync = 1.0

// fullSyncPeriod is how often the iptables and nftables proxiers resync
// without any change (pkg/proxy/util FullSyncPeriod); the ipvs proxier
// resyncs every ipvs.syncPeriod instead.
const fullSyncPeriod = time.Hour

// syncGrace is the slack allowed on top of the sync periods: a sync takes
// time, and the inputs are not all read at the same instant.
const syncGrace = 10 * time.Second

// kubeProxyMetrics returns kube-proxy's metrics of the snapshot, skipping
// the pass when there are none.
func kubeProxyMetrics(p *Pass) *metrics.View {
	if p.Snap.Metrics == nil {
		p.Skip("no kube-proxy /metrics page in the inputs (add curl -s http://127.0.0.1:10249/metrics from the node)")
		return nil
	}
	return p.Snap.Metrics.KubeProxy()
}

// familyName returns the ip_family label for messages.
func familyName(f *metrics.FamilyView) string {
	if f.IPFamily == "" {
		return "all families"
	}
	return f.IPFamily
}

// scalarEvidence returns the evidence of a metric sample.
func scalarEvidence(s *metrics.Scalar) model.Evidence { return model.EvidenceAt(s.Pos, s.Raw) }

// quantileEvidence returns the evidence of a histogram at the bucket its
// q-quantile falls in.
func quantileEvidence(h *metrics.HistogramStats, q float64) model.Evidence {
	rank := q * float64(h.Count)
	for _, b := range h.Buckets {
		if float64(b.Count) >= rank {
			return model.EvidenceAt(b.Pos, fmt.Sprintf("bucket le=%v: %v of %v syncs", float64(b.UpperBound), float64(b.Count), float64(h.Count)))
		}
	}
	return model.EvidenceAt(h.Pos, h.Raw)
}

// syncPeriods returns the sync period and minimum sync period of the
// running mode's proxier (kube-proxy's defaults without a configuration).
func syncPeriods(p *Pass) (period, minPeriod time.Duration, field string) {
	mode, _ := p.Mode()
	c := p.Snap.Config
	period, minPeriod = 30*time.Second, time.Second
	section := "iptables"
	switch mode {
	case model.ModeIPVS:
		section, minPeriod = "ipvs", 0
		if c != nil {
			period, minPeriod = c.IPVS.SyncPeriod.Duration, c.IPVS.MinSyncPeriod.Duration
		}
	case model.ModeNFTables:
		section = "nftables"
		if c != nil {
			period, minPeriod = c.NFTables.SyncPeriod.Duration, c.NFTables.MinSyncPeriod.Duration
		}
	default:
		if c != nil {
			period, minPeriod = c.IPTables.SyncPeriod.Duration, c.IPTables.MinSyncPeriod.Duration
		}
	}
	if period <= 0 {
		period = 30 * time.Second
	}
	return period, minPeriod, section
}

var syncSlow = &Check{
	ID:       "sync-slow",
	Severity: Warning,
	Title:    "rule syncs take a second or more",
	What: "The p99 of kube-proxy's rule sync duration (`kubeproxy_sync_proxy_rules_duration_seconds`, and its full " +
		"and partial variants of 1.28+), estimated from the histogram buckets as PromQL's histogram_quantile does, " +
		"is at or above 1 s, per IP family, and the buckets show it: more than 1% of the syncs took longer than " +
		"the first bucket bound at or above 1 s (1.024 s), so an estimate interpolated inside the bucket below " +
		"does not count.",
	Why: "While a sync runs, no change is programmed: new endpoints wait and removed ones keep receiving traffic. " +
		"Slow syncs are the symptom of a rule set too large for iptables-restore (every full sync rewrites it all), " +
		"lock contention with other iptables users, or a starved kube-proxy container (CPU limits).",
	Fix: "In iptables mode, move to nftables mode (1.31+) or raise `iptables.minSyncPeriod` so that changes are " +
		"batched; remove CPU limits from the kube-proxy container; look for other programs holding the xtables lock. " +
		"In IPVS mode every sync is full: a long `ipvs.syncPeriod` and fewer Service ports help.",
	Run: runSyncSlow,
}

// metricsUnchecked begins the note of a check that reads series a
// filtered /metrics page does not show (they may be on the node's page):
// coverage turns it into a gap.
const metricsUnchecked = "not checked, as the /metrics page is filtered: "

// wholeMetricsNeed is how to get kube-proxy's whole /metrics page when the
// one given is filtered.
var wholeMetricsNeed = InputNeed{"kube-proxy's whole /metrics page, unfiltered",
	"curl -s http://127.0.0.1:10249/metrics > metrics.txt (on the node)"}

// series is a series of kube-proxy's /metrics page a check reads, and
// whether a family of the page shows it.
type series struct {
	names []string // any of them
	has   func(*metrics.FamilyView) bool
}

// unseenSeries notes, for a /metrics page filtered on its way into the
// inputs, which of the series a check reads none of the page's families
// shows and the filter may have dropped: what the check would judge of
// them is not checked. On a whole page, or one whose filter keeps the
// series (grep kubeproxy), a series kube-proxy does not export is nothing
// to judge.
func unseenSeries(p *Pass, v *metrics.View, of ...series) {
	pg := p.Snap.Metrics
	if pg == nil || pg.Filter == "" {
		return
	}
	var unseen []string
	for _, s := range of {
		if !slices.ContainsFunc(v.Families, s.has) && !slices.ContainsFunc(s.names, func(n string) bool { return paste.FilterKeeps(pg.Filter, n) }) {
			unseen = append(unseen, strings.Join(s.names, " or "))
		}
	}
	if len(unseen) > 0 {
		p.Note("%s%s is partial (filtered by `%s` on the command line above it), and does not show %s", metricsUnchecked, pg.File, pg.Filter, strings.Join(unseen, ", "))
	}
}

func runSyncSlow(p *Pass) {
	v := kubeProxyMetrics(p)
	if v == nil {
		return
	}
	unseenSeries(p, v, series{[]string{metrics.SyncProxyRulesDuration}, func(f *metrics.FamilyView) bool { return f.SyncDuration != nil }})
	for _, f := range v.Families {
		for _, h := range []struct {
			name  string
			stats *metrics.HistogramStats
		}{
			{metrics.SyncProxyRulesDuration, f.SyncDuration},
			{metrics.SyncFullProxyRulesDuration, f.SyncFullDuration},
			{metrics.SyncPartialProxyRulesDuration, f.SyncPartialDuration},
		} {
			if h.stats == nil || h.stats.P99 == nil || float64(*h.stats.P99) < slowSync {
				continue
			}
			// The estimate interpolates inside a bucket; report only when the
			// buckets show that more than 1% of the syncs took longer than
			// the first bound at or above 1 s.
			bound := slowBucket(h.stats)
			if bound == nil || float64(h.stats.Count)-float64(bound.Count) <= 0.01*float64(h.stats.Count) {
				continue
			}
			over := float64(h.stats.Count) - float64(bound.Count)
			p99 := float64(*h.stats.P99)
			kind := "rule syncs"
			switch h.name {
			case metrics.SyncFullProxyRulesDuration:
				kind = "full rule syncs"
			case metrics.SyncPartialProxyRulesDuration:
				kind = "partial rule syncs"
			}
			mean := ""
			if h.stats.Mean != nil {
				mean = fmt.Sprintf(", %.2f s on average", float64(*h.stats.Mean))
			}
			msg := fmt.Sprintf("%s take %.2f s at p99%s; %v of %v took more than %v s (%s, %s)", kind, p99, mean, over, float64(h.stats.Count),
				float64(bound.UpperBound), familyName(f), h.name)
			p.Report(Finding{
				Message: msg,
				Evidence: []model.Evidence{model.EvidenceAt(bound.Pos, fmt.Sprintf("bucket le=%v: %v of %v syncs", float64(bound.UpperBound), float64(bound.Count), float64(h.stats.Count))),
					model.EvidenceAt(h.stats.Pos, h.stats.Raw)},
				Advice: syncSlowAdvice(p),
			})
		}
	}
}

// slowBucket returns the first bucket whose bound is at least slowSync.
func slowBucket(h *metrics.HistogramStats) *metrics.Bucket {
	for i := range h.Buckets {
		if float64(h.Buckets[i].UpperBound) >= slowSync {
			return &h.Buckets[i]
		}
	}
	return nil
}

func syncSlowAdvice(p *Pass) string {
	switch mode, _ := p.Mode(); mode {
	case model.ModeIPVS:
		return "Every IPVS sync is a full one: lengthen ipvs.syncPeriod, give the kube-proxy container CPU (no tight limit), and check the number of virtual servers (see ruleset-scale)."
	case model.ModeNFTables:
		return "Give the kube-proxy container CPU (no tight limit) and check the size of the ruleset; raise nftables.minSyncPeriod to batch changes."
	}
	return "Batch changes with a larger iptables.minSyncPeriod, give the kube-proxy container CPU, look for other programs holding the xtables lock, and consider nftables mode for large clusters."
}

var syncStale = &Check{
	ID:       "sync-stale",
	Severity: Error,
	Title:    "the last successful sync is older than allowed",
	What: "`kubeproxy_sync_proxy_rules_last_timestamp_seconds` is the time of the last successful sync. At " +
		"collection time (the healthz response's currentTime) it must not be older than the proxier allows: the " +
		"ipvs proxier resyncs every `ipvs.syncPeriod`; the iptables and nftables proxiers resync at least hourly " +
		"and serve a queued change within `minSyncPeriod` (a failed sync is retried after `syncPeriod`), so a change " +
		"queued (`..._last_queued_timestamp_seconds`) longer ago than that and still not synced is stale. Without a " +
		"collection time only the gap between last queued and last synced is judged.",
	Why: "A proxier that stopped syncing leaves the node's rules frozen: scaled, moved and deleted pods are not " +
		"reflected, which is the \"endpoints not updated\" failure even though kube-proxy looks alive.",
	Fix: "Look at kube-proxy's log around the time of the last sync (restore failures, a deadlock, API watch errors) " +
		"and at `kube-proxy-unhealthy`; restart the kube-proxy pod of the node.",
	Run: runSyncStale,
}

func runSyncStale(p *Pass) {
	v := kubeProxyMetrics(p)
	if v == nil {
		return
	}
	mode, _ := p.Mode()
	period, minPeriod, section := syncPeriods(p)
	var now time.Time
	var nowEv model.Evidence
	if h := p.Snap.Healthz; h != nil && !h.CurrentTime.Time.IsZero() {
		now = h.CurrentTime.Time
		nowEv = model.Evidence{File: h.File, Line: h.BodyLine, Path: "$.currentTime", Text: "currentTime " + h.CurrentTime.Text}
	} else {
		p.Note("no collection time (healthz currentTime): only the gap between the last queued and the last successful sync is judged")
	}
	unseenSeries(p, v, series{[]string{metrics.SyncProxyRulesLastTimestamp}, func(f *metrics.FamilyView) bool { return f.LastSync != nil }},
		series{[]string{metrics.SyncProxyRulesLastQueued}, func(f *metrics.FamilyView) bool { return f.LastQueued != nil }})
	periodic := mode == model.ModeIPVS
	maxAge := fullSyncPeriod + period + syncGrace
	if periodic {
		maxAge = period + minPeriod + syncGrace
	}
	maxPending := period + minPeriod + syncGrace
	for _, f := range v.Families {
		if f.LastSync == nil {
			continue
		}
		last := unixTime(float64(f.LastSync.Value))
		ev := []model.Evidence{scalarEvidence(f.LastSync)}
		var queued time.Time
		if f.LastQueued != nil {
			queued = unixTime(float64(f.LastQueued.Value))
		}
		var msg string
		switch {
		case !now.IsZero() && now.Sub(last) > maxAge:
			msg = fmt.Sprintf("the last successful sync (%s) was %s before collection", last.UTC().Format(time.RFC3339), roundDur(now.Sub(last)))
			if periodic {
				msg += fmt.Sprintf(", but the ipvs proxier resyncs every %s (%s.syncPeriod)", period, section)
			} else {
				msg += fmt.Sprintf(", but the %s proxier resyncs at least every %s", mode, fullSyncPeriod)
			}
			ev = append(ev, nowEv)
		case !now.IsZero() && queued.After(last) && now.Sub(queued) > maxPending:
			msg = fmt.Sprintf("a sync queued at %s is still not done %s later (last success %s): changes are served within %s.minSyncPeriod (%s), failed syncs retried after %s",
				queued.UTC().Format(time.RFC3339), roundDur(now.Sub(queued)), last.UTC().Format(time.RFC3339), section, minPeriod, period)
			ev = append(ev, scalarEvidence(f.LastQueued), nowEv)
		case queued.Sub(last) > maxPending && (periodic || queued.Sub(last) > maxAge):
			msg = fmt.Sprintf("the last queued sync (%s) is %s after the last successful one (%s): syncs have been failing or hung at least that long",
				queued.UTC().Format(time.RFC3339), roundDur(queued.Sub(last)), last.UTC().Format(time.RFC3339))
			ev = append(ev, scalarEvidence(f.LastQueued))
		default:
			continue
		}
		p.Report(Finding{
			Message:  msg + " (" + familyName(f) + ")",
			Evidence: ev,
			Advice:   "The rules of this node are frozen since the last successful sync: check kube-proxy's log for sync errors and watch failures, then restart its pod on the node.",
		})
	}
}

func unixTime(sec float64) time.Time {
	s, frac := math.Modf(sec)
	return time.Unix(int64(s), int64(frac*1e9))
}

func roundDur(d time.Duration) time.Duration {
	if d > time.Minute {
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}

var syncFailures = &Check{
	ID:       "sync-failures",
	Severity: Error,
	Title:    "rule syncs failed (metrics or logs)",
	What: "kube-proxy counts failed rule syncs: `kubeproxy_sync_proxy_rules_iptables_restore_failures_total` " +
		"(iptables and ipvs modes), `..._iptables_partial_restore_failures_total` (1.26+, a partial sync that fell " +
		"back to a full one), `..._nftables_sync_failures_total`; and logs them (\"Failed to execute " +
		"iptables-restore\", \"Sync failed\", xtables lock timeouts, nftables transaction errors). The counters are " +
		"cumulative since kube-proxy started. A \"Sync failed\" line that follows a failure of a named kind is " +
		"reported with it, not on its own. The counters and the log tell of the same failures: with both, they are " +
		"one finding, led by the cause the log gives (a missing kernel module or iptables extension, an iptables too " +
		"old, an nftables feature the kernel lacks), with the log lines and the counters as evidence; counters that no " +
		"logged failure explains say that their cause is unknown and that kube-proxy's log tells it. While the syncs " +
		"fail (a failed sync with one still pending on the /metrics page, or, without counters, a failure the log " +
		"shows), what follows from them is part of that finding, not reported on its own: the overdue last sync " +
		"(`sync-stale`), /healthz failing (`kube-proxy-unhealthy`), the rules of Services lagging their EndpointSlices " +
		"(`endpoint-stale`, `endpoint-missing`), each of the IP families whose syncs fail (the counters' ip_family, the log's ipFamily); its `objects` list the messages of the first two and each lagging " +
		"endpoint after its Service, its `evidence` holds theirs and its `checks` names their checks. On a page filtered on its way into the inputs (`curl .../metrics | grep " +
		"sync_proxy_rules_last`), a counter the page does not show is noted as not checked, not taken as 0.",
	Why: "A failed sync leaves the previous rules in place until the retry after `syncPeriod`; repeated failures " +
		"freeze the data plane. The usual causes are another program holding the xtables lock, an iptables backend " +
		"mismatch between kube-proxy's image and the node, a missing kernel module, or something deleting " +
		"kube-proxy's chains between syncs.",
	Fix: "Read the failing restore's error in kube-proxy's log (the rules= lines name the rejected rule), align the " +
		"iptables backend (`iptables-backend-mixed`), stop other writers of kube-proxy's chains, and restart kube-proxy.",
	Run: runSyncFailures,
}

func runSyncFailures(p *Pass) {
	s := p.Snap
	if s.Metrics == nil && len(s.Logs) == 0 {
		p.Skip("no kube-proxy /metrics page or log in the inputs")
		return
	}
	var counted []Finding    // the failures the /metrics page counts
	var partial []bool       // per counted failure: of partial restores
	failing := -1            // the first counted failure with a sync still pending
	var failingFams []string // the families of those
	allFailing := false      // one of those is of all families
	counters := false        // the page shows a failure counter
	if s.Metrics != nil {
		unseenSeries(p, s.Metrics.KubeProxy(), series{[]string{metrics.IPTablesRestoreFailures, metrics.NFTablesSyncFailures},
			func(f *metrics.FamilyView) bool {
				return f.IPTablesRestoreFailures != nil || f.NFTablesSyncFailures != nil
			}})
		for _, f := range s.Metrics.KubeProxy().Families {
			pending := f.LastQueued != nil && f.LastSync != nil && float64(f.LastQueued.Value) > float64(f.LastSync.Value)
			for _, c := range []struct {
				s       *metrics.Scalar
				what    string
				partial bool
			}{
				{f.IPTablesRestoreFailures, "iptables-restore runs failed", false},
				{f.IPTablesPartialRestoreFailures, "partial iptables-restore runs failed and fell back to a full sync", true},
				{f.NFTablesSyncFailures, "nftables transactions failed", false},
			} {
				if c.s == nil {
					continue
				}
				counters = counters || !c.partial
				if float64(c.s.Value) <= 0 {
					continue
				}
				fnd := Finding{
					Message:  fmt.Sprintf("%v %s since kube-proxy started (%s)", float64(c.s.Value), c.what, familyName(f)),
					Evidence: []model.Evidence{scalarEvidence(c.s)},
					Advice:   "Find the failing restore in kube-proxy's log (it logs the error and the rejected rules) and fix its cause; kube-proxy retries after its sync period.",
				}
				switch {
				case c.partial:
					fnd.Severity = Warning
				case pending:
					fnd.Message += ", and a sync is still pending"
					fnd.Evidence = append(fnd.Evidence, scalarEvidence(f.LastQueued), scalarEvidence(f.LastSync))
					if failing < 0 {
						failing = len(counted)
					}
					if f.IPFamily == "" {
						allFailing = true
					}
					failingFams = addFamily(failingFams, f.IPFamily)
				default:
					fnd.Severity = Warning
					if f.LastSync != nil {
						fnd.Message += "; the last sync succeeded"
						fnd.Evidence = append(fnd.Evidence, scalarEvidence(f.LastSync))
					}
				}
				counted = append(counted, fnd)
				partial = append(partial, c.partial)
			}
		}
	}
	logged, led, loggedFams := loggedSyncFailures(s)
	lead := -1 // the logged failure the counted ones are part of
	for i := range logged {
		if logged[i].Severity == Error && (lead < 0 || led[i] != "" && led[lead] == "") {
			lead = i
		}
	}
	if lead < 0 && len(logged) > 0 {
		lead = 0
	}
	if lead >= 0 && len(counted) > 0 {
		// The log and the counters tell of the same failures: one
		// finding, led by the cause the log gives.
		c := &logged[lead]
		if led[lead] != "" {
			c.Message = led[lead]
		}
		var told []string
		for _, d := range counted {
			told = append(told, d.Message)
			c.Evidence = appendEvidence(c.Evidence, d.Evidence...)
			c.Severity = max(c.Severity, d.Severity)
		}
		c.Message += "; the /metrics page counts " + strings.Join(told, "; ")
		led[lead] = c.Message
		counted = nil
	}
	for i := range counted {
		if partial[i] {
			continue
		}
		counted[i].Message += "; " + syncCauseUnknown(s)
	}
	// The failures that explain what follows from them (see
	// syncFailing): those a pending sync shows, or those a log shows
	// when no counter says otherwise.
	if allFailing {
		failingFams = nil
	}
	// The lead is the failure a pending sync shows, whatever severity
	// the finding will be reported with (the check's own when unset).
	switch {
	case failing >= 0 && len(logged) > 0:
		p.leadSyncs(logged[lead], led[lead], failingFams)
	case failing >= 0:
		p.leadSyncs(counted[failing], "", failingFams)
	case !counters && lead >= 0 && logged[lead].Severity == Error:
		p.leadSyncs(logged[lead], led[lead], loggedFams[lead])
	}
	for _, f := range counted {
		p.Report(f)
	}
	for _, f := range logged {
		p.Report(f)
	}
}

// syncCauseUnknown says, in a finding of failures the /metrics page counts
// that no log tells of, that their cause is not in the inputs and which
// input would tell it.
func syncCauseUnknown(s *model.Snapshot) string {
	if len(s.Logs) == 0 {
		return "their cause is unknown: kube-proxy's log names it (add kubectl -n kube-system logs POD, or the /var/log/pods file)"
	}
	var files []string
	for _, l := range s.Logs {
		files = append(files, l.File)
	}
	return "their cause is unknown: " + joinNames(files) + " logs none of them (add the log of the time they failed: kubectl -n kube-system logs --previous POD, or the /var/log/pods file)"
}

// loggedSyncFailures returns the findings of the failed syncs kube-proxy's
// logs show: one per kind of failure and log, with the cause read from
// the log, if any; led holds, for each, its message led by that cause
// ("" when no cause is read), which it takes when the finding is made one
// with others; fams holds, for each, the IP families its entries name
// (ipFamily), nil when one names none (all families).
func loggedSyncFailures(s *model.Snapshot) (out []Finding, led []string, fams [][]string) {
	for _, l := range s.Logs {
		var order []string
		by := map[string][]int{}
		ms := l.Matches()
		// "Sync failed" (sync-failed) is what kube-proxy logs after any
		// failed sync: one that follows the failure of a named kind is
		// part of that failure's finding (one cause, one finding).
		last := "" // the pattern of the last failure of a named kind
		followers := map[string][]int{}
		for i, m := range ms {
			if !contains(syncFailurePatterns, m.Pattern.ID) {
				continue
			}
			if m.Pattern.ID == "sync-failed" && last != "" {
				followers[last] = append(followers[last], i)
				continue
			}
			if m.Pattern.ID != "sync-failed" {
				last = m.Pattern.ID
			}
			if by[m.Pattern.ID] == nil {
				order = append(order, m.Pattern.ID)
			}
			by[m.Pattern.ID] = append(by[m.Pattern.ID], i)
		}
		for _, id := range order {
			idx := by[id]
			var sel []klog.Finding
			for _, i := range idx {
				sel = append(sel, ms[i])
			}
			pat := sel[0].Pattern
			var fam []string
			for _, m := range sel {
				v, _ := m.Entry.Get("ipFamily")
				if fam = addFamily(fam, v); fam == nil {
					break
				}
			}
			times := "once"
			if len(sel) > 1 {
				times = fmt.Sprintf("%d times", len(sel))
			}
			f := Finding{
				Severity: logSeverity(pat.Severity),
				Message:  fmt.Sprintf("%s logged %s (%s): %s", l.File, times, id, strings.TrimSuffix(pat.Meaning, ".")),
				Evidence: logEvidence(sel, 3),
				Advice:   pat.Advice,
			}
			lead := ""
			if c, ok := syncCause(l, sel); ok {
				// A pattern that names a kind of cause gives way to the
				// cause read; any other says what failed, then why.
				if pat.NamesCause() {
					f.Message = fmt.Sprintf("%s logged %s (%s): %s", l.File, times, id, c.Text)
					lead = fmt.Sprintf("%s, so kube-proxy's rule syncs fail: %s logged it %s (%s)", c.Text, l.File, times, id)
				} else {
					f.Message += "; cause: " + c.Text
					lead = fmt.Sprintf("%s, so kube-proxy's rule syncs fail: %s logged %s (%s): %s", c.Text, l.File, times, id, strings.TrimSuffix(pat.Meaning, "."))
				}
				if ev := model.EvidenceAt(c.Pos, c.Line); !citesLine(f.Evidence, ev) {
					f.Evidence = append(f.Evidence, ev)
				}
				f.Advice = c.Cause.Advice
			}
			if fl := followers[id]; len(fl) > 0 {
				var after []klog.Finding
				for _, i := range fl {
					after = append(after, ms[i])
				}
				what := "once"
				if len(after) > 1 {
					what = fmt.Sprintf("%d times", len(after))
				}
				then := fmt.Sprintf("; kube-proxy then logged \"Sync failed\" %s and retries", what)
				f.Message += then
				if lead != "" {
					lead += then
				}
				f.Evidence = append(f.Evidence, logEvidence(after, 2)...)
			}
			out = append(out, f)
			led = append(led, lead)
			fams = append(fams, fam)
		}
	}
	return out, led, fams
}

// addFamily adds the IP family fam ("IPv4", "IPv6") to the families of
// failing syncs fams; a family not named ("") stands for all of them,
// which nil is (the caller stops adding).
func addFamily(fams []string, fam string) []string {
	if fam == "" {
		return nil
	}
	if fams == nil {
		return []string{fam}
	}
	if !contains(fams, fam) {
		fams = append(fams, fam)
	}
	return fams
}

// citesLine reports whether list cites the line of file that ev cites
// (for evidence without a line, ev itself).
func citesLine(list []model.Evidence, ev model.Evidence) bool {
	for _, e := range list {
		if e == ev || ev.Line > 0 && e.File == ev.File && e.Line == ev.Line {
			return true
		}
	}
	return false
}

// syncCause reads the cause of failed syncs from their log entries and
// those of the same file that follow each of them.
func syncCause(l *klog.Log, sel []klog.Finding) (klog.FoundCause, bool) {
	for _, m := range sel {
		if c, ok := l.CauseAt(m.Entry, 3); ok {
			return c, true
		}
	}
	return klog.FoundCause{}, false
}
