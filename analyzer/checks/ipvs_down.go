package checks

import (
	"slices"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/resolve"
)

// notRunningPrefix begins the message of kube-proxy-unhealthy for a
// kube-proxy that was not running when the bundle was collected.
const notRunningPrefix = "kube-proxy was not running on the node "

// ipvsFallbackPrefix begins the messages of mode-mismatch for a node
// configured for IPVS that runs, or holds the rules of, the iptables
// proxier.
const ipvsFallbackPrefix = "the configuration selects ipvs mode but "

// mergeIPVSUnusable makes one finding of a node configured for IPVS mode
// whose IPVS support is missing (ipvs-module-missing) and of what kube-proxy
// does about it: from 1.26 it exits at start, so it was not running
// (kube-proxy-unhealthy); before, it fell back to the iptables proxier
// (mode-mismatch). The missing IPVS is the cause: its finding stays, states
// the consequence after it and lists every check it stands for. It returns
// the findings and the check whose findings were merged ("" when none).
func (f *facts) mergeIPVSUnusable(fs []Finding) ([]Finding, string) {
	if f.res == nil {
		return fs, ""
	}
	exits := f.res.Has(resolve.IPVSFallbackRemoved)
	consequence, what := kubeProxyUnhealthy.ID, " exits at start when it cannot use IPVS, and it was not running "
	if !exits {
		consequence, what = modeMismatch.ID, " falls back to the iptables proxier when it cannot use IPVS, so the node runs iptables mode under a configuration that says ipvs: "
	}
	cause := -1
	var follow []int
	for i, x := range fs {
		switch {
		case x.Check == ipvsModuleMissing.ID && cause < 0:
			cause = i
		case exits && x.Check == consequence && strings.HasPrefix(x.Message, notRunningPrefix):
			follow = append(follow, i)
		case !exits && x.Check == consequence && strings.HasPrefix(x.Message, ipvsFallbackPrefix):
			follow = append(follow, i)
		}
	}
	if cause < 0 || len(follow) == 0 {
		return fs, ""
	}
	c := &fs[cause]
	var told []string
	for _, i := range follow {
		d := fs[i]
		if d.Node != c.Node {
			return fs, ""
		}
		if exits {
			told = append(told, strings.TrimPrefix(d.Message, notRunningPrefix))
		} else {
			told = append(told, strings.TrimSuffix(strings.TrimPrefix(d.Message, ipvsFallbackPrefix), fallbackNoteText))
		}
		c.Evidence = appendEvidence(c.Evidence, d.Evidence...)
		if d.Severity > c.Severity {
			c.Severity = d.Severity
		}
	}
	c.Message += "; kube-proxy " + f.res.Version.Version.MinorString() + what + strings.Join(told, "; ")
	c.Checks = []string{ipvsModuleMissing.ID, consequence}
	kept := fs[:0]
	for i, x := range fs {
		if !slices.Contains(follow, i) {
			kept = append(kept, x)
		}
	}
	return kept, consequence
}

// noteIPVSUnusable tells, in the status of the check whose findings
// mergeIPVSUnusable merged, that they are in ipvs-module-missing's.
func noteIPVSUnusable(res *Result, check string) {
	for i := range res.Statuses {
		if st := &res.Statuses[i]; st.ID == check {
			st.Notes = append(st.Notes, "the node has no usable IPVS, which explains it: reported in the ipvs-module-missing finding")
		}
	}
}
