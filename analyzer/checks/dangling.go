package checks

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/view"
)

const (
	idRulesetInvalid   = "ruleset-invalid"
	idAffinityMismatch = "affinity-mismatch"
	idOrphanRules      = "orphan-rules"
)

// A dangling reference is the finding of ruleset-invalid about the rules
// that name a chain their table does not have: the per-endpoint chain
// deleted under the rules of its service chain, the service chain deleted
// under the map element or rule that leads to it. What the other checks
// find of the Service then follows from it: the endpoint is not
// programmed (endpoint-missing), the rule leading nowhere forwards to no
// endpoint the EndpointSlices list (endpoint-stale), the affinity rules
// pin clients to the other endpoints only (affinity-mismatch), the
// endpoint chains and affinity sets of a deleted service chain are
// referenced by nothing (orphan-rules). Those findings are folded into
// the one of ruleset-invalid.
type dangling struct {
	// target is the chain the rules name.
	target string
	// rules are the positions of the rules that name it.
	rules map[evidenceKey]bool
}

// evidenceKey is where a piece of evidence is: a line of a text dump, or
// a path in a JSON one.
type evidenceKey struct {
	file, path string
	line       int
}

func evKeyOf(e model.Evidence) evidenceKey { return evidenceKey{e.File, e.Path, e.Line} }

// danglingOf returns the dangling reference a finding of ruleset-invalid
// reports, nil when it reports another problem.
func (f *facts) danglingOf(c *Finding) *dangling {
	if f == nil || c.Check != idRulesetInvalid || len(c.Evidence) == 0 {
		return nil
	}
	return f.dangling[evKeyOf(c.Evidence[0])]
}

// explainedByDangling reports whether d, a finding of endpoint-missing,
// endpoint-stale, affinity-mismatch or orphan-rules, follows from the
// dangling reference c reports.
func explainedByDangling(f *facts, c, d *Finding) bool {
	g := f.danglingOf(c)
	if g == nil {
		return false
	}
	// A finding quoting a rule that names the missing chain.
	for _, e := range d.Evidence {
		if g.rules[evKeyOf(e)] {
			return true
		}
	}
	switch d.Check {
	case idEndpointMissing:
		// The endpoint whose chain is missing.
		return d.Service != "" && d.Endpoint != "" && endpointChainOf(d.Service, d.Protocol, d.Endpoint, g.target)
	case idOrphanRules:
		// The chains and sets of the service port whose chain is missing.
		return d.Service != "" && serviceChainOf(d.Service, g.target)
	}
	return false
}

// endpointChainOf reports whether chain is the per-endpoint chain of
// endpoint ("IP:port") of the service port svc ("ns/name:port"): its
// iptables KUBE-SEP chain or its nftables endpoint chain.
func endpointChainOf(svc, proto, endpoint, chain string) bool {
	if proto == "" {
		return false
	}
	if strings.HasPrefix(chain, kpnames.ChainSEP) {
		return chain == kpnames.ChainSEP+kpnames.EndpointChainHash(svc, proto, endpoint)
	}
	n, ok := view.ParseNFTName(chain)
	if !ok || n.Port != svc || n.Endpoint == "" {
		return false
	}
	ap, err := netip.ParseAddrPort(endpoint)
	if err != nil {
		return false
	}
	ns, rest, _ := strings.Cut(svc, "/")
	name, port, _ := strings.Cut(rest, ":")
	return chain == n.Prefix+kpnames.NFTEndpointChainBase(ns, name, port, proto, ap.Addr().String(), int32(ap.Port()))
}

// serviceChainOf reports whether chain is a per-service chain of the
// service port svc ("ns/name:port"), whose endpoint chains and affinity
// sets nothing else references.
func serviceChainOf(svc, chain string) bool {
	if prefix, hash, ok := kpnames.SplitServiceChain(chain); ok {
		if prefix == kpnames.ChainSEP {
			return false
		}
		for _, proto := range []string{"tcp", "udp", "sctp"} {
			if hash == kpnames.PortProtoHash(svc, proto) {
				return true
			}
		}
		return false
	}
	n, ok := view.ParseNFTName(chain)
	return ok && n.Endpoint == "" && n.Port == svc
}

// foldDangling writes into c, the finding of a dangling reference, what
// the findings ds it explains report: their messages, evidence and the
// Service they are about.
func foldDangling(_ *facts, c *Finding, ds []Finding) {
	var told []string
	svc, proto := ds[0].Service, ds[0].Protocol
	for _, d := range ds {
		told = append(told, d.Message+" ("+d.Check+")")
		c.Evidence = appendEvidence(c.Evidence, d.Evidence...)
		c.Severity = max(c.Severity, d.Severity)
		if d.Service != svc {
			svc = ""
		}
		if d.Protocol != proto {
			proto = ""
		}
	}
	if c.Service == "" && svc != "" {
		c.Service, c.Protocol = svc, proto
	}
	// The endpoint not programmed, when it is one: node-drift then
	// leaves it to this finding (driftEndpoint).
	if ep := missingEndpoint(ds); ep != "" && c.Endpoint == "" && c.Service == svc {
		c.Endpoint = ep
	}
	// The findings of each check are folded in turn: the first says what
	// follows, the others add to the list.
	if strings.Contains(c.Message, danglingFollows) {
		c.Message += "; " + strings.Join(told, "; ")
	} else {
		c.Message += danglingFollows + strings.Join(told, "; ")
	}
}

// danglingFollows introduces, in the message of a dangling reference,
// what the other checks report that follows from it.
const danglingFollows = "; what follows from it: "

// noteDangling tells, in the status of a check whose findings
// foldDangling folded, where they are reported.
func noteDangling(leads []Finding) string {
	what := "the ruleset-invalid finding of the chain they lead to, which the table does not have"
	if len(leads) > 1 {
		what = fmt.Sprintf("the ruleset-invalid findings of the %d chains they lead to, which the tables do not have", len(leads))
	}
	return "findings that follow from rules naming a missing chain: reported in " + what
}

// missingEndpoint returns the endpoint the endpoint-missing findings of ds
// name, "" when they name none or several.
func missingEndpoint(ds []Finding) string {
	ep := ""
	for _, d := range ds {
		if d.Check != idEndpointMissing || d.Endpoint == "" {
			continue
		}
		if ep != "" && ep != d.Endpoint {
			return ""
		}
		ep = d.Endpoint
	}
	return ep
}

// driftFoldedEndpoint reports whether c, a finding that holds an
// endpoint-missing finding folded into it, names the endpoint of d, a
// difference node-drift finds (see driftEndpoint).
func driftFoldedEndpoint(f *facts, c, d *Finding) bool {
	return slices.Contains(c.Checks, idEndpointMissing) && driftEndpoint(f, c, d)
}

// danglingKeys are the keys through which findings are paired with the
// dangling references that may explain them (see explainedByDangling):
// for c, a finding of ruleset-invalid, the positions of the rules naming
// the missing chain and that chain's name, hash or service port; for a
// finding of another check, the positions of its evidence and the chain
// names its endpoint or service port would have.
func danglingKeys(f *facts, x *Finding) []string {
	if x.Check == idRulesetInvalid {
		g := f.danglingOf(x)
		if g == nil {
			return nil
		}
		keys := make([]string, 0, len(g.rules)+2)
		for k := range g.rules {
			keys = append(keys, k.String())
		}
		keys = append(keys, "chain "+g.target)
		if prefix, hash, ok := kpnames.SplitServiceChain(g.target); ok && prefix != kpnames.ChainSEP {
			keys = append(keys, "hash "+hash)
		}
		if n, ok := view.ParseNFTName(g.target); ok && n.Port != "" {
			keys = append(keys, "port "+n.Port)
		}
		return keys
	}
	keys := make([]string, 0, len(x.Evidence)+4)
	for _, e := range x.Evidence {
		keys = append(keys, evKeyOf(e).String())
	}
	if x.Service == "" {
		return keys
	}
	switch x.Check {
	case idEndpointMissing:
		if x.Endpoint != "" && x.Protocol != "" {
			keys = append(keys, "chain "+kpnames.ChainSEP+kpnames.EndpointChainHash(x.Service, x.Protocol, x.Endpoint), "port "+x.Service)
		}
	case idOrphanRules:
		for _, proto := range []string{"tcp", "udp", "sctp"} {
			keys = append(keys, "hash "+kpnames.PortProtoHash(x.Service, proto))
		}
		keys = append(keys, "port "+x.Service)
	}
	return keys
}

// String spells the key of a piece of evidence for an index of strings.
func (k evidenceKey) String() string {
	return "at " + k.file + "\x00" + k.path + "\x00" + strconv.Itoa(k.line)
}
