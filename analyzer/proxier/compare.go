package proxier

import (
	"sort"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// DiffKind says how expected and captured data planes differ.
type DiffKind string

// Kinds of differences.
const (
	// MissingRule is a rule kube-proxy writes that the capture lacks.
	MissingRule DiffKind = "missing-rule"
	// ExtraRule is a rule of the capture that kube-proxy does not write.
	ExtraRule DiffKind = "extra-rule"
	// MissingChain is a chain kube-proxy creates that the capture lacks.
	MissingChain DiffKind = "missing-chain"
	// ExtraChain is a chain of the capture, named like kube-proxy's, that
	// kube-proxy does not create (a stale chain, or another version's).
	ExtraChain DiffKind = "extra-chain"
)

// A Difference is one rule or chain that is in one data plane and not in
// the other, attributed to the service port it belongs to.
type Difference struct {
	Kind   DiffKind     `json:"kind"`
	Family model.Family `json:"family"`
	Table  string       `json:"table"`
	Chain  string       `json:"chain"`
	// Rule is the rule in iptables-save form ("-A CHAIN ..."); empty for a
	// chain difference.
	Rule string `json:"rule,omitempty"`
	// Service is the service port name the rule or chain belongs to, ""
	// for an orphan; Endpoint the endpoint it belongs to, if any; How
	// says what named them: "comment", "chain" (the chain's hash),
	// "target" (the target chain's hash), "address" or "endpoint".
	Service  string `json:"service,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
	How      string `json:"how,omitempty"`
	// Note explains a difference that is one of order: the rule exists on
	// both sides at different places.
	Note string `json:"note,omitempty"`
	// Evidence points at the rule or chain: in the capture for extra
	// ones, in the expected dump for missing ones.
	Evidence model.Evidence `json:"evidence"`
}

// unorderedChains are the chains kube-proxy fills in Go map order, where
// the order of rules of different service ports carries no meaning (the
// rules of one service port keep theirs); the node-ports rules of nat
// KUBE-SERVICES come last. Rules in built-in chains are compared without
// order too: kube-proxy prepends its jumps only when they are missing.
var unorderedChains = map[string]bool{
	"nat " + kpnames.KubeServices:            true,
	"nat " + kpnames.KubeNodePorts:           true,
	"filter " + kpnames.KubeServices:         true,
	"filter " + kpnames.KubeExternalServices: true,
	"filter " + kpnames.KubeNodePorts:        true,
	"filter " + kpnames.KubeProxyFirewall:    true,
}

// kubeProxyChains are the fixed chains of kube-proxy's iptables mode in
// any version; a captured chain of this name, or a per-service chain, is
// compared even when the expected data plane lacks it.
var kubeProxyChains = map[string]bool{
	kpnames.KubeServices: true, kpnames.KubeExternalServices: true, kpnames.KubeNodePorts: true,
	kpnames.KubePostrouting: true, kpnames.KubeMarkMasq: true, kpnames.KubeForward: true,
	kpnames.KubeProxyFirewall: true, kpnames.KubeProxyCanary: true,
}

// kubeletRule reports rules kubelet writes into chains it shares with
// kube-proxy (before IPTablesOwnershipCleanup): they are not compared.
func kubeletRule(chain string, r *iptables.Rule) bool {
	switch chain {
	case kpnames.KubeMarkDrop:
		return true
	case kpnames.KubeletFirewall:
		return r.Comment() == "kubernetes firewall for dropping marked packets"
	}
	return false
}

// Compare returns the differences between an expected data plane (from
// [Expect]) and a captured one (from [Captured]), family by family, table
// by table, chain by chain: chains missing or extra, then rules missing or
// extra, compared in iptables-save form (both sides are canonicalised, so
// restore-input spellings compare equal to what iptables-save prints).
// Only kube-proxy's chains are compared: the expected ones, captured
// per-service and fixed kube-proxy chains, and in built-in chains the
// rules that jump to them. The result is sorted by family, table and
// chain; within a chain the chain itself comes first, then missing rules
// in expected order, extra rules in captured order, and rules out of
// order. IPVS-mode data planes also compare their virtual and real
// servers, ipsets and kube-ipvs0 addresses (see the package doc).
func Compare(expected, actual *Dataplane) []Difference {
	if expected.Mode == model.ModeNFTables {
		return compareNFT(expected, actual)
	}
	if expected.Mode == model.ModeIPVS {
		return compareIPVS(expected, actual)
	}
	ports := expected.ports
	if ports == nil {
		ports = actual.ports
	}
	attr := newAttributor(ports)
	var out []Difference
	for _, f := range []model.Family{model.IPv4, model.IPv6} {
		e, a := expected.IPTablesFor(f), actual.IPTablesFor(f)
		if e == nil {
			continue
		}
		out = append(out, compareIPTables(f, e, a, expected.canonical, actual.canonical, attr)...)
	}
	tableRank := map[string]int{}
	for i, t := range tableOrder {
		tableRank[t] = i
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Family != b.Family {
			return a.Family < b.Family
		}
		if a.Table != b.Table {
			return tableRank[a.Table] < tableRank[b.Table]
		}
		return a.Chain < b.Chain
	})
	return out
}

// crule is one rule being compared: its canonical text, where it is, and
// the key that groups it in an unordered chain.
type crule struct {
	text  string
	rule  *iptables.Rule
	group string
	tail  bool
}

func compareIPTables(f model.Family, exp, act *iptables.Dump, expCanonical, actCanonical bool, attr *attributor) []Difference {
	fam := iptables.Family(f)
	var out []Difference
	for _, tname := range tableOrder {
		et := exp.Table(tname)
		if et == nil {
			continue
		}
		var at *iptables.Table
		if act != nil {
			at = act.Table(tname)
		}
		names, owned := comparedChains(et, at, func(name string) bool { return kpnames.IsServiceChain(name) || kubeProxyChains[name] })
		for _, name := range names {
			ec := et.Chain(name)
			var ac *iptables.Chain
			if at != nil {
				ac = at.Chain(name)
			}
			out = append(out, compareChain(f, fam, tname, name, ec, ac, expCanonical, actCanonical, owned, attr)...)
		}
	}
	return out
}

// comparedChains returns the chains of one table to compare: every chain
// of the expected table, then the chains of the captured table that only
// it holds and that kube-proxy owns (by kubeChain), and the set of
// non-built-in chains kube-proxy writes there (owned).
func comparedChains(et, at *iptables.Table, kubeChain func(name string) bool) (names []string, owned map[string]bool) {
	owned = map[string]bool{}
	for _, c := range et.Chains {
		names = append(names, c.Name)
		if !c.Builtin() {
			owned[c.Name] = true
		}
	}
	if at != nil {
		for _, c := range at.Chains {
			if !c.Builtin() && !owned[c.Name] && kubeChain(c.Name) {
				owned[c.Name] = true
				names = append(names, c.Name)
			}
		}
	}
	return names, owned
}

func compareChain(f model.Family, fam iptables.Family, table, name string, ec, ac *iptables.Chain, expCanonical, actCanonical bool, owned map[string]bool, attr *attributor) []Difference {
	builtin := iptables.IsBuiltinChain(table, name)
	chainDiff := func(kind DiffKind, c *iptables.Chain) Difference {
		at := attr.chain(name)
		if at.Service == "" {
			for _, r := range c.Rules {
				if s, ep := kpnames.CommentService(r.Comment()); s != "" {
					at = attribution{Service: s, Endpoint: ep, How: "comment"}
					break
				}
			}
		}
		return Difference{Kind: kind, Family: f, Table: table, Chain: name, Service: at.Service, Endpoint: at.Endpoint, How: at.How,
			Evidence: model.EvidenceAt(c.Pos(), chainHeader(c))}
	}
	var out []Difference
	switch {
	case ec == nil && ac == nil:
		return nil
	case ac == nil && !builtin:
		out = append(out, chainDiff(MissingChain, ec))
	case ec == nil && !builtin:
		out = append(out, chainDiff(ExtraChain, ac))
	}
	keep := func(r *iptables.Rule) bool {
		if kubeletRule(name, r) {
			return false
		}
		return !builtin || owned[r.Target()]
	}
	unordered := builtin || unorderedChains[table+" "+name]
	es := collectRules(fam, name, ec, expCanonical, keep, unordered, builtin, table, attr)
	as := collectRules(fam, name, ac, actCanonical, keep, unordered, builtin, table, attr)
	diff := func(kind DiffKind, r crule, note string) Difference {
		at := attr.rule(name, r.rule)
		return Difference{Kind: kind, Family: f, Table: table, Chain: name, Rule: r.text,
			Service: at.Service, Endpoint: at.Endpoint, How: at.How, Note: note, Evidence: model.RuleEvidence(r.rule)}
	}
	if unordered && table == "nat" && name == kpnames.KubeServices {
		// The node-ports rules must come last: a service rule after one
		// of them is out of place.
		seenTail := false
		var body []crule
		for _, r := range as {
			if r.tail {
				seenTail = true
			} else if seenTail {
				out = append(out, diff(ExtraRule, r, "after the node-ports rule, which must be the last rule of the chain"))
				continue
			}
			body = append(body, r)
		}
		as = body
	}
	if unordered {
		sortGroups(es)
		sortGroups(as)
	}
	missing, extra, moved := matchRules(es, as)
	for _, i := range missing {
		out = append(out, diff(MissingRule, es[i], ""))
	}
	for _, j := range extra {
		out = append(out, diff(ExtraRule, as[j], ""))
	}
	for _, m := range moved {
		out = append(out, diff(MissingRule, es[m[0]], "present in the capture at another position"))
		out = append(out, diff(ExtraRule, as[m[1]], "out of order"))
	}
	return out
}

func chainHeader(c *iptables.Chain) string {
	if c.Header != "" {
		return c.Header
	}
	return ":" + c.Name + " " + c.Policy()
}

// collectRules returns the compared rules of a chain in order.
func collectRules(fam iptables.Family, name string, c *iptables.Chain, canonical bool, keep func(*iptables.Rule) bool, unordered, builtin bool, table string, attr *attributor) []crule {
	if c == nil {
		return nil
	}
	out := make([]crule, 0, len(c.Rules))
	var buf []byte
	var canon canonicalizer
	for _, r := range c.Rules {
		if !keep(r) {
			continue
		}
		cr := crule{text: r.Raw, rule: r}
		if !canonical {
			buf = canon.appendRule(buf[:0], fam, name, r.Args())
			cr.text = string(buf)
		}
		switch {
		case builtin:
			cr.group = cr.text // no order at all
		case unordered:
			cr.tail = table == "nat" && name == kpnames.KubeServices && r.Target() == kpnames.KubeNodePorts
			if s, _ := kpnames.CommentService(r.Comment()); s != "" {
				cr.group = s
			} else {
				cr.group = attr.rule(name, r).Service
			}
		}
		out = append(out, cr)
	}
	return out
}

// sortGroups orders rules by group (node-ports rules last), keeping the
// order inside a group.
func sortGroups(rs []crule) {
	sort.SliceStable(rs, func(i, j int) bool {
		if rs[i].tail != rs[j].tail {
			return !rs[i].tail
		}
		return rs[i].group < rs[j].group
	})
}

// matchRules pairs equal rules of exp and act (the k-th occurrence of a
// text with the k-th) and returns the unpaired ones, and the pairs that
// are out of order: those not on a longest chain of pairs whose order
// agrees on both sides.
func matchRules(exp, act []crule) (missing, extra []int, moved [][2]int) {
	queue := make(map[string][]int, len(exp))
	for i, r := range exp {
		queue[r.text] = append(queue[r.text], i)
	}
	type pair struct{ i, j int }
	var pairs []pair
	for j, r := range act {
		if q := queue[r.text]; len(q) > 0 {
			pairs = append(pairs, pair{q[0], j})
			queue[r.text] = q[1:]
			continue
		}
		extra = append(extra, j)
	}
	for i, r := range exp {
		if q := queue[r.text]; len(q) > 0 && q[0] == i {
			missing = append(missing, i)
			queue[r.text] = q[1:]
		}
	}
	sort.Ints(missing)
	// Longest increasing subsequence of the expected positions, in the
	// capture's order.
	seq := make([]int, len(pairs))
	for k, p := range pairs {
		seq[k] = p.i
	}
	onLIS := lis(seq)
	for k, p := range pairs {
		if !onLIS[k] {
			moved = append(moved, [2]int{p.i, p.j})
		}
	}
	return missing, extra, moved
}

// lis marks the elements of one longest strictly increasing subsequence.
func lis(seq []int) []bool {
	n := len(seq)
	mark := make([]bool, n)
	if n == 0 {
		return mark
	}
	tails := []int{}       // indices into seq of the smallest tail per length
	prev := make([]int, n) // predecessor on the subsequence
	for k, v := range seq {
		lo := sort.Search(len(tails), func(x int) bool { return seq[tails[x]] >= v })
		if lo > 0 {
			prev[k] = tails[lo-1]
		} else {
			prev[k] = -1
		}
		if lo == len(tails) {
			tails = append(tails, k)
		} else {
			tails[lo] = k
		}
	}
	for k := tails[len(tails)-1]; k >= 0; k = prev[k] {
		mark[k] = true
	}
	return mark
}

// ForService returns the differences attributed to a service port:
// "ns/name:port" selects that port, "ns/name" every port of the Service.
func ForService(diffs []Difference, name string) []Difference {
	var out []Difference
	for _, d := range diffs {
		if d.Service == name || !strings.Contains(name, ":") && strings.HasPrefix(d.Service, name+":") {
			out = append(out, d)
		}
	}
	return out
}
