package checks

import (
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/resolve"
)

// mergeIPVSDown makes one finding of a kube-proxy configured for IPVS mode
// that was not running on a node without IPVS: from 1.26 kube-proxy exits
// at start when it cannot use IPVS, so the missing IPVS support
// (ipvs-module-missing) is the cause and the stopped kube-proxy
// (kube-proxy-unhealthy) its consequence. The finding of
// ipvs-module-missing stays, states both and lists both checks; it
// returns the findings and whether it merged them.
func (f *facts) mergeIPVSDown(fs []Finding) ([]Finding, bool) {
	if f.res == nil || !f.res.Has(resolve.IPVSFallbackRemoved) {
		return fs, false
	}
	cause, down := -1, -1
	for i, x := range fs {
		switch {
		case x.Check == ipvsModuleMissing.ID && cause < 0:
			cause = i
		case x.Check == kubeProxyUnhealthy.ID && down < 0 && strings.HasPrefix(x.Message, notRunningPrefix):
			down = i
		}
	}
	if cause < 0 || down < 0 || fs[cause].Node != fs[down].Node {
		return fs, false
	}
	c, d := &fs[cause], fs[down]
	c.Message += "; kube-proxy " + f.res.Version.Version.MinorString() + " exits at start when it cannot use IPVS, and it was not running " +
		strings.TrimPrefix(d.Message, notRunningPrefix)
	c.Evidence = appendEvidence(c.Evidence, d.Evidence...)
	c.Checks = []string{ipvsModuleMissing.ID, kubeProxyUnhealthy.ID}
	if d.Severity > c.Severity {
		c.Severity = d.Severity
	}
	return append(fs[:down], fs[down+1:]...), true
}

// notRunningPrefix begins the message of kube-proxy-unhealthy for a
// kube-proxy that was not running when the bundle was collected.
const notRunningPrefix = "kube-proxy was not running on the node "

// noteIPVSDown tells, in the status of kube-proxy-unhealthy, that its
// finding is in ipvs-module-missing's.
func noteIPVSDown(res *Result) {
	for i := range res.Statuses {
		if st := &res.Statuses[i]; st.ID == kubeProxyUnhealthy.ID {
			st.Notes = append(st.Notes, "kube-proxy was not running because the node has no IPVS: reported in the ipvs-module-missing finding")
		}
	}
}
