package checks

import (
	"slices"
	"sort"
)

// An explanation declares that the findings of one check, the cause,
// explain those of another, the consequence: one cause, one finding. After
// the checks of a node have run, [facts.explain] folds every consequence
// finding into the cause finding that explains it: the cause leads, with
// what the consequence adds, Checks lists the IDs of both, and the
// consequence check's status notes where its findings went. Node-drift
// asks the same declarations which of a node's findings already report a
// difference it finds (see [explainedBy]): it then reports none of its own.
type explanation struct {
	cause, consequence string
	// explains is the key both findings must share (the same Service
	// whose rules lag, the same node, the same endpoint): it reports
	// whether c, a finding of the cause, explains d, one of the
	// consequence. f is nil when node-drift asks.
	explains func(f *facts, c, d *Finding) bool
	// key, when set, is that shared key itself ("" for none): the
	// findings are then paired through an index, in time linear in their
	// number (a node whose every Service lags has thousands of each).
	key func(f *facts, x *Finding) string
	// keys, when set instead, are the keys a finding may share with
	// another (a cause offers each of its own, a consequence each it
	// could be explained by): a consequence is offered, in their order,
	// the causes that share one of its keys.
	keys func(f *facts, x *Finding) []string
	// split, for a cause that explains one endpoint, takes from a
	// consequence finding that lists several endpoints of a Service out
	// of step with its EndpointSlices (see endpointLag) those the cause
	// explains: the consequence finding keeps the others (see
	// splitExplained).
	split bool
	// fold writes into the cause finding c what the consequences ds it
	// explains add to it (nil for node-drift's: its differences are not
	// reported at all).
	fold func(f *facts, c *Finding, ds []Finding)
	// note says, in the status of the consequence check, where the
	// findings folded (into leads, the cause findings) are reported.
	note func(leads []Finding) string
}

// explanations are the declared relations between checks, applied in
// this order: the causes that explain one endpoint (a dangling reference,
// a misdirected rule) first, each taking its endpoint out of the finding
// that lists the endpoints of its Service out of step with the
// EndpointSlices; then the causes that explain a Service's endpoints as a
// whole (its rules lag, syncs fail), which take what is left.
var explanations = []*explanation{
	// A rule naming a chain its table does not have: the endpoint it
	// led to is not programmed, the rule forwards nowhere, the chains
	// and sets that only the missing chain referenced are orphans.
	{cause: idRulesetInvalid, consequence: idEndpointMissing, explains: explainedByDangling, keys: danglingKeys, split: true, fold: foldDangling, note: noteDangling},
	{cause: idRulesetInvalid, consequence: idEndpointStale, explains: explainedByDangling, keys: danglingKeys, split: true, fold: foldDangling, note: noteDangling},
	{cause: idRulesetInvalid, consequence: idAffinityMismatch, explains: explainedByDangling, keys: danglingKeys, fold: foldDangling, note: noteDangling},
	{cause: idRulesetInvalid, consequence: idOrphanRules, explains: explainedByDangling, keys: danglingKeys, fold: foldDangling, note: noteDangling},
	// A rule of a service chain edited to jump to another endpoint's
	// chain: that endpoint gets its share twice, the one the rule names
	// none.
	{cause: idLoadBalanceSkew, consequence: idEndpointMissing, explains: explainedByMisdirected, key: misdirectedKey, split: true, fold: foldMisdirected, note: noteMisdirected},
	// The rules of a Service that lag its EndpointSlices: the usable
	// endpoints not programmed are part of it.
	{cause: idEndpointStale, consequence: idEndpointMissing, explains: sameLag, key: lagKey, fold: foldLag, note: noteLag},
	// A node without usable IPVS: from 1.26 kube-proxy exits at start,
	// before it falls back to the iptables proxier.
	{cause: idIPVSModuleMissing, consequence: idKubeProxyUnhealthy, explains: ipvsExit, fold: foldIPVSUnusable, note: noteIPVSUnusable},
	{cause: idIPVSModuleMissing, consequence: idModeMismatch, explains: ipvsFallback, fold: foldIPVSUnusable, note: noteIPVSUnusable},
	// A configuration kube-proxy rejects: it exits at start, and logs it.
	{cause: idConfigInvalid, consequence: idLogErrors, explains: startupFailure, fold: foldStartupFailure, note: noteStartupFailure},
	// A configuration not applied whose clusterCIDR does not cover the
	// pods: restarting kube-proxy would apply it.
	{cause: idConfigNotApplied, consequence: idClusterCIDRUncovered, explains: wrongCIDRNotApplied, fold: foldWrongCIDR, note: noteWrongCIDR},
	// Rule syncs that fail: the last sync grows old, /healthz fails, the
	// rules lag the EndpointSlices.
	{cause: idSyncFailures, consequence: idSyncStale, explains: syncFailing, fold: foldSyncFailure, note: noteSyncFailure},
	{cause: idSyncFailures, consequence: idKubeProxyUnhealthy, explains: syncFailing, fold: foldSyncFailure, note: noteSyncFailure},
	{cause: idSyncFailures, consequence: idEndpointStale, explains: syncFailing, fold: foldSyncFailure, note: noteSyncFailure},
	{cause: idSyncFailures, consequence: idEndpointMissing, explains: syncFailing, fold: foldSyncFailure, note: noteSyncFailure},
	// What node-drift finds a node lacks or has in excess, that the
	// node's own findings report: an endpoint against the Service's
	// EndpointSlices, an entry of a Service not programmed.
	{cause: idEndpointMissing, consequence: nodeDriftID, explains: driftEndpoint},
	{cause: idEndpointStale, consequence: nodeDriftID, explains: driftEndpoint},
	{cause: idServiceMissing, consequence: nodeDriftID, explains: driftEntry},
	{cause: idNodePortMissing, consequence: nodeDriftID, explains: driftEntry},
	{cause: idExternalMissing, consequence: nodeDriftID, explains: driftEntry},
	{cause: idSyncFailures, consequence: nodeDriftID, explains: driftSynced},
	// The endpoint-missing findings folded into a dangling reference or a
	// misdirected rule (the lead names the endpoint).
	{cause: idRulesetInvalid, consequence: nodeDriftID, explains: driftFoldedEndpoint},
	{cause: idLoadBalanceSkew, consequence: nodeDriftID, explains: driftFoldedEndpoint},
}

// explain folds, for each explanation of list, the findings of its
// consequence into the first finding of its cause that explains them, and
// notes it in the consequence check's status.
func (f *facts) explain(res *Result, list []*explanation) {
	for _, x := range list {
		if x.fold == nil {
			continue
		}
		fs := res.Findings
		keysOf := x.keys
		if x.key != nil {
			keysOf = func(f *facts, d *Finding) []string {
				if k := x.key(f, d); k != "" {
					return []string{k}
				}
				return nil
			}
		}
		var all []int // the findings of the cause
		var keyed map[string][]int
		if keysOf != nil {
			keyed = map[string][]int{}
		}
		for i := range fs {
			if fs[i].Check != x.cause {
				continue
			}
			all = append(all, i)
			if keyed != nil {
				for _, k := range keysOf(f, &fs[i]) {
					if l := keyed[k]; len(l) == 0 || l[len(l)-1] != i {
						keyed[k] = append(l, i)
					}
				}
			}
		}
		if len(all) == 0 {
			continue
		}
		explainer := func(d *Finding) int {
			candidates := all
			if keyed != nil {
				candidates = nil
				for _, k := range keysOf(f, d) {
					candidates = append(candidates, keyed[k]...)
				}
				slices.Sort(candidates)
				candidates = slices.Compact(candidates)
			}
			for _, i := range candidates {
				if x.explains(f, &fs[i], d) {
					return i
				}
			}
			return -1
		}
		var causes []int
		by := map[int][]int{} // cause → its consequences
		add := func(i, j int) {
			if by[i] == nil {
				causes = append(causes, i)
			}
			by[i] = append(by[i], j)
		}
		drop := map[int]bool{}
		for j, n := 0, len(fs); j < n; j++ {
			if fs[j].Check != x.consequence {
				continue
			}
			if x.split {
				if took, gone := f.splitExplained(&fs[j], explainer); len(took) > 0 {
					for _, t := range took {
						fs = append(fs, t.d)
						add(t.cause, len(fs)-1)
					}
					drop[j] = gone
					continue
				}
			}
			if i := explainer(&fs[j]); i >= 0 {
				add(i, j)
			}
		}
		if len(causes) == 0 {
			continue
		}
		var leads []Finding
		for _, i := range causes {
			var ds []Finding
			for _, j := range by[i] {
				ds = append(ds, fs[j])
				drop[j] = true
			}
			c := &fs[i]
			x.fold(f, c, ds)
			c.Checks = checkIDs(append([]Finding{*c}, ds...))
			leads = append(leads, *c)
		}
		kept := fs[:0]
		for j := range fs {
			if !drop[j] {
				kept = append(kept, fs[j])
			}
		}
		res.Findings = kept
		for i := range res.Statuses {
			if st := &res.Statuses[i]; st.ID == x.consequence {
				st.Notes = append(st.Notes, x.note(leads))
			}
		}
	}
}

// checkIDs returns the IDs of the checks findings stand for, sorted.
func checkIDs(fs []Finding) []string {
	var ids []string
	for _, d := range fs {
		for _, id := range append([]string{d.Check}, d.Checks...) {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	sort.Strings(ids)
	return ids
}

// explainedBy returns the check of the first of a node's findings that
// explains d, a difference node-drift finds on the node, "" when none
// does.
func explainedBy(findings []Finding, d *Finding) string {
	for i := range findings {
		c := &findings[i]
		for _, x := range explanations {
			if x.consequence == d.Check && x.cause == c.Check && x.explains(nil, c, d) {
				return c.Check
			}
		}
	}
	return ""
}
