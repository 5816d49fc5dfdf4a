package checks

import (
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

// The checks whose findings foldIPVSUnusable makes one.
const (
	idIPVSModuleMissing  = "ipvs-module-missing"
	idKubeProxyUnhealthy = "kube-proxy-unhealthy"
	idModeMismatch       = "mode-mismatch"
)

// A node configured for IPVS mode whose IPVS support is missing
// (ipvs-module-missing) explains what kube-proxy does about it: from 1.26
// it exits at start, so it was not running (kube-proxy-unhealthy, see
// ipvsExit); before, it fell back to the iptables proxier (mode-mismatch,
// see ipvsFallback). The missing IPVS is the cause: its finding stays and
// states the consequence after it (foldIPVSUnusable).

// ipvsExit reports whether d, a finding of kube-proxy-unhealthy, says that
// kube-proxy was not running on c's node, where it exits at start without
// IPVS.
func ipvsExit(f *facts, c, d *Finding) bool {
	return f.res != nil && f.res.Has(resolve.IPVSFallbackRemoved) && d.Node == c.Node && strings.HasPrefix(d.Message, notRunningPrefix)
}

// ipvsFallback reports whether d, a finding of mode-mismatch, says that c's
// node, configured for IPVS, runs the iptables proxier, to which kube-proxy
// falls back without IPVS.
func ipvsFallback(f *facts, c, d *Finding) bool {
	return f.res != nil && !f.res.Has(resolve.IPVSFallbackRemoved) && d.Node == c.Node && strings.HasPrefix(d.Message, ipvsFallbackPrefix)
}

// foldIPVSUnusable states, after the message of ipvs-module-missing, what
// kube-proxy did without IPVS (ds, the findings of kube-proxy-unhealthy or
// mode-mismatch), with their evidence and severity.
func foldIPVSUnusable(f *facts, c *Finding, ds []Finding) {
	what := " exits at start when it cannot use IPVS, and it was not running "
	if !f.res.Has(resolve.IPVSFallbackRemoved) {
		what = " falls back to the iptables proxier when it cannot use IPVS, so the node runs iptables mode under a configuration that says ipvs: "
	}
	var told []string
	for _, d := range ds {
		if d.Check == idKubeProxyUnhealthy {
			told = append(told, strings.TrimPrefix(d.Message, notRunningPrefix))
		} else {
			told = append(told, strings.TrimSuffix(strings.TrimPrefix(d.Message, ipvsFallbackPrefix), fallbackNoteText))
		}
		c.Evidence = appendEvidence(c.Evidence, d.Evidence...)
		c.Severity = max(c.Severity, d.Severity)
	}
	c.Message += "; kube-proxy " + f.res.Version.Version.MinorString() + what + strings.Join(told, "; ")
}

// noteIPVSUnusable tells, in the status of the check whose findings
// foldIPVSUnusable folded, that they are in ipvs-module-missing's.
func noteIPVSUnusable([]Finding) string {
	return "the node has no usable IPVS, which explains it: reported in the ipvs-module-missing finding"
}
