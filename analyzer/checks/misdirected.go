package checks

import (
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
)

const idLoadBalanceSkew = "load-balance-skew"

// A misdirected rule is a rule of an iptables service chain whose comment
// names one endpoint ("ns/name:port -> IP:port") and whose jump goes to
// the KUBE-SEP chain of another endpoint of the chain: a rule edited by
// hand. load-balance-skew finds the other endpoint listed twice (or its
// share uneven) and endpoint-missing the named endpoint not programmed;
// it is one cause, reported as one finding of load-balance-skew that
// leads with the rule.

// misdirectedRule returns the evidence of the rule of c, a finding of
// load-balance-skew, whose comment names endpoint; ok is false when c
// quotes none, or when that rule jumps to the endpoint's own chain.
func misdirectedRule(c *Finding, svc, proto, endpoint string) (ev model.Evidence, target string, ok bool) {
	if proto == "" {
		return ev, "", false
	}
	own := kpnames.ChainSEP + kpnames.EndpointChainHash(svc, proto, endpoint)
	for _, e := range c.Evidence {
		if !strings.HasPrefix(e.Text, "-A ") || !strings.Contains(e.Text, " -> "+endpoint+"\" ") {
			continue
		}
		_, t, found := strings.Cut(e.Text, " -j ")
		if !found {
			continue
		}
		t, _, _ = strings.Cut(t, " ")
		if t != own && strings.HasPrefix(t, kpnames.ChainSEP) {
			return e, t, true
		}
	}
	return ev, "", false
}

// explainedByMisdirected reports whether d, a finding of endpoint-missing,
// is about the endpoint whose rule in the service chain c, a finding of
// load-balance-skew, quotes jumps to another endpoint's chain.
func explainedByMisdirected(_ *facts, c, d *Finding) bool {
	if c.Service == "" || c.Service != d.Service || d.Endpoint == "" {
		return false
	}
	_, _, ok := misdirectedRule(c, d.Service, d.Protocol, d.Endpoint)
	return ok
}

// foldMisdirected makes c, the finding of load-balance-skew, lead with the
// rule that jumps to another endpoint's chain, and say what ds, the
// findings of endpoint-missing it explains, report.
func foldMisdirected(_ *facts, c *Finding, ds []Finding) {
	var lead []string
	var rules []model.Evidence
	for _, d := range ds {
		ev, target, ok := misdirectedRule(c, d.Service, d.Protocol, d.Endpoint)
		if !ok {
			continue
		}
		chain, _, _ := strings.Cut(strings.TrimPrefix(ev.Text, "-A "), " ")
		lead = append(lead, "the rule of "+chain+" for "+d.Endpoint+" jumps to "+target+", the chain of another endpoint: "+d.Message)
		rules = append(rules, ev)
		c.Severity = max(c.Severity, d.Severity)
	}
	ev := appendEvidence(rules, c.Evidence...)
	for _, d := range ds {
		ev = appendEvidence(ev, d.Evidence...)
	}
	c.Evidence = ev
	c.Message = strings.Join(lead, "; ") + "; " + c.Message
	// The endpoint not programmed, when it is one: node-drift then
	// leaves it to this finding (driftEndpoint).
	if ep := missingEndpoint(ds); ep != "" && c.Endpoint == "" {
		c.Endpoint = ep
	}
}

// noteMisdirected tells, in the status of endpoint-missing, where the
// findings foldMisdirected folded are reported.
func noteMisdirected([]Finding) string {
	return "endpoints whose rule in the service chain jumps to another endpoint's chain: reported in the load-balance-skew finding that quotes the rule"
}

// misdirectedKey is the Service port a finding of load-balance-skew or
// endpoint-missing is about: a misdirected rule explains only findings of
// its own (see explainedByMisdirected).
func misdirectedKey(_ *facts, x *Finding) string { return x.Service }
