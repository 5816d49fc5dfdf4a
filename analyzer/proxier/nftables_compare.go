package proxier

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/google/nftables"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/parsers/nft"
)

// Kinds of differences of nftables mode, besides those of chains and rules
// and MissingSet and SetDiffers (shared with IPVS mode: a set or map
// kube-proxy creates that the capture lacks, one declared differently).
// Their Table is "ip kube-proxy" or "ip6 kube-proxy", Chain the chain, set
// or map.
const (
	// ChainDiffers is a chain whose declaration (type, hook, priority,
	// policy, comment) differs.
	ChainDiffers DiffKind = "chain-differs"
	// ExtraSet is a set or map of the capture kube-proxy does not create.
	ExtraSet DiffKind = "extra-set"
	// MissingElement is a set or map element kube-proxy writes that the
	// capture lacks; ExtraElement one of the capture it does not write.
	MissingElement DiffKind = "missing-element"
	ExtraElement   DiffKind = "extra-element"
)

// nftFamilies are the table families of kube-proxy's tables, by IP family.
var nftFamilies = []struct {
	f   model.Family
	fam nftables.TableFamily
}{{model.IPv4, nftables.TableFamilyIPv4}, {model.IPv6, nftables.TableFamilyIPv6}}

// capturedNFT fills dp with the kube-proxy tables of the snapshot's
// nftables rulesets: those of the text listing, else of the JSON one
// (which lacks chain comments and the set flag "dynamic").
func capturedNFT(r *resolve.Resolution, dp *Dataplane) *Dataplane {
	out := &nft.Ruleset{}
	for _, f := range []model.Family{model.IPv4, model.IPv6} {
		if t := r.NFTTable(f); t != nil {
			out.Tables = append(out.Tables, t)
		}
	}
	if len(out.Tables) > 0 {
		dp.NFT = out
	}
	return dp
}

// nftJSONForm reports a ruleset read from `nft -j list ruleset`.
func nftJSONForm(rs *nft.Ruleset) bool {
	return len(rs.Tables) > 0 && rs.Tables[0].Pos.Path != ""
}

// nftJSONLossy returns the declarations of c and s as the JSON listing
// gives them: without chain comments and the set flag "dynamic".
func nftJSONLossy(c *nft.Chain, s *nft.Set) (*nft.Chain, *nft.Set) {
	if c != nil {
		cc := *c
		cc.Comment = ""
		c = &cc
	}
	if s != nil {
		ss := *s
		ss.Flags = nil
		for _, f := range s.Flags {
			if f != "dynamic" {
				ss.Flags = append(ss.Flags, f)
			}
		}
		s = &ss
	}
	return c, s
}

// nftChainDecl is a chain's declaration as one line: what a changed chain
// reports.
func nftChainDecl(c *nft.Chain) string {
	var parts []string
	if c.IsBase() {
		prio := ""
		if c.Priority != nil {
			prio = c.Priority.Text
		}
		pol := "accept"
		if c.Policy != nil {
			pol = nft.PolicyName(*c.Policy)
		}
		parts = append(parts, fmt.Sprintf("type %s hook %s priority %s; policy %s;", c.Type, c.Hook, prio, pol))
	}
	if c.Comment != "" {
		parts = append(parts, fmt.Sprintf("comment %q", c.Comment))
	}
	return strings.TrimSpace("chain " + c.Name + " { " + strings.Join(parts, " ") + " }")
}

// nftSetDecl is a set's declaration as one line, without its elements.
func nftSetDecl(s *nft.Set) string {
	kind := "set"
	if s.IsMap {
		kind = "map"
	}
	typ := strings.Join(s.KeyType, " . ")
	if s.Typeof != "" && typ == "" {
		typ = "typeof " + s.Typeof
	}
	if s.IsMap {
		typ += " : " + strings.Join(s.DataType, " . ")
	}
	parts := []string{"type " + typ + ";"}
	if s.Size != 0 {
		parts = append(parts, fmt.Sprintf("size %d;", s.Size))
	}
	if len(s.Flags) > 0 {
		parts = append(parts, "flags "+strings.Join(s.Flags, ",")+";")
	}
	if s.Timeout != 0 {
		parts = append(parts, fmt.Sprintf("timeout %s;", s.Timeout))
	}
	if s.Policy != "" {
		parts = append(parts, "policy "+s.Policy+";")
	}
	if s.Comment != "" {
		parts = append(parts, fmt.Sprintf("comment %q;", s.Comment))
	}
	return kind + " " + s.Name + " { " + strings.Join(parts, " ") + " }"
}

// nftElementText is an element as nft lists it: key, comment, data.
func nftElementText(s *nft.Set, e *nft.Element) string {
	t := strings.Join(e.Key(), " . ")
	if e.Comment() != "" {
		t += fmt.Sprintf(" comment %q", e.Comment())
	}
	switch {
	case e.Verdict != nil:
		t += " : " + nft.StmtString(e.Verdict)
	case len(e.Data()) > 0:
		t += " : " + strings.Join(e.Data(), " . ")
	}
	return t
}

// nftDynamic reports sets whose elements the packet path adds (the
// affinity sets): their elements are state, not configuration.
func nftDynamic(s *nft.Set) bool { return s.HasFlag("dynamic") }

// nftTableSummary is a table reduced to what comparisons look at.
type nftTableSummary struct {
	Comment string
	Chains  map[string][]string // declaration first, then the rules
	Sets    map[string][]string // declaration first, then the sorted elements
}

// nftSummary reduces the kube-proxy tables of a ruleset to their
// declarations, rules (in order) and elements (sorted; none for dynamic
// sets), by "family name".
func nftSummary(rs *nft.Ruleset) map[string]nftTableSummary {
	out := map[string]nftTableSummary{}
	if rs == nil {
		return out
	}
	for _, t := range rs.Tables {
		if t.Name != kpnames.NFTTable {
			continue
		}
		s := nftTableSummary{Comment: t.Comment, Chains: map[string][]string{}, Sets: map[string][]string{}}
		for _, c := range t.Chains {
			lines := []string{nftChainDecl(c)}
			for _, r := range c.Rules {
				lines = append(lines, r.String())
			}
			s.Chains[c.Name] = lines
		}
		for _, set := range t.Sets {
			var els []string
			if !nftDynamic(set) {
				for i := range set.Elements {
					els = append(els, nftElementText(set, &set.Elements[i]))
				}
				sort.Strings(els)
			}
			s.Sets[set.Name] = append([]string{nftSetDecl(set)}, els...)
		}
		out[nft.FamilyName(t.Family)+" "+t.Name] = s
	}
	return out
}

// compareNFT compares the kube-proxy tables of an expected and a captured
// nftables data plane: per family, chains missing, extra or declared
// differently, their rules (in order: every chain of kube-proxy's tables
// is written in a fixed order), then sets and maps missing, extra or
// declared differently and their elements (in any order; the elements of
// dynamic sets are not compared). Everything in kube-proxy's tables is
// kube-proxy's, so whatever the capture has more is extra.
func compareNFT(expected, actual *Dataplane) []Difference {
	ports := expected.ports
	if ports == nil {
		ports = actual.ports
	}
	attr := newNFTAttributor(ports)
	var out []Difference
	for _, ff := range nftFamilies {
		var et, at *nft.Table
		if expected.NFT != nil {
			et = expected.NFT.Table(ff.fam, kpnames.NFTTable)
		}
		if et == nil {
			continue
		}
		if actual.NFT != nil {
			at = actual.NFT.Table(ff.fam, kpnames.NFTTable)
		}
		out = append(out, compareNFTTable(ff.f, et, at, attr)...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Family != b.Family {
			return a.Family < b.Family
		}
		return a.Chain < b.Chain
	})
	return out
}

func compareNFTTable(f model.Family, et, at *nft.Table, attr *nftAttributor) []Difference {
	table := nft.FamilyName(et.Family) + " " + kpnames.NFTTable
	if at == nil {
		at = &nft.Table{Family: et.Family, Name: kpnames.NFTTable}
	}
	lossy := at.Pos.Path != "" // a JSON listing
	chainDecl := func(c *nft.Chain) string {
		if lossy {
			c, _ = nftJSONLossy(c, nil)
		}
		return nftChainDecl(c)
	}
	setDecl := func(s *nft.Set) string {
		if lossy {
			_, s = nftJSONLossy(nil, s)
		}
		return nftSetDecl(s)
	}
	var out []Difference
	chainDiff := func(kind DiffKind, c *nft.Chain, note string) Difference {
		a := attr.name(c.Name)
		return Difference{Kind: kind, Family: f, Table: table, Chain: c.Name, Service: a.Service, Endpoint: a.Endpoint, How: a.How,
			Note: note, Evidence: nftChainEvidence(c)}
	}
	eChains, aChains := nftChainIndex(et), nftChainIndex(at)
	for _, ec := range et.Chains {
		ac := aChains[ec.Name]
		if ac == nil {
			out = append(out, chainDiff(MissingChain, ec, ""))
			continue
		}
		if ed, ad := chainDecl(ec), chainDecl(ac); ed != ad {
			out = append(out, chainDiff(ChainDiffers, ac, "expected "+ed))
		}
		out = append(out, compareNFTRules(f, table, ec, ac, attr)...)
	}
	for _, ac := range at.Chains {
		if eChains[ac.Name] == nil {
			out = append(out, chainDiff(ExtraChain, ac, ""))
		}
	}
	setDiff := func(kind DiffKind, s *nft.Set, note string) Difference {
		a := attr.name(s.Name)
		return Difference{Kind: kind, Family: f, Table: table, Chain: s.Name, Service: a.Service, Endpoint: a.Endpoint, How: a.How,
			Note: note, Evidence: model.EvidenceAt(s.Pos, nftSetDecl(s))}
	}
	eSets, aSets := nftSetIndex(et), nftSetIndex(at)
	for _, es := range et.Sets {
		as := aSets[es.Name]
		if as == nil {
			out = append(out, setDiff(MissingSet, es, ""))
			continue
		}
		if ed, ad := setDecl(es), setDecl(as); ed != ad {
			out = append(out, setDiff(SetDiffers, as, "expected "+ed))
		}
		if !nftDynamic(es) {
			out = append(out, compareNFTElements(f, table, es, as, attr)...)
		}
	}
	for _, as := range at.Sets {
		if eSets[as.Name] == nil {
			out = append(out, setDiff(ExtraSet, as, ""))
		}
	}
	return out
}

// nftChainIndex maps the chains of a table by name.
func nftChainIndex(t *nft.Table) map[string]*nft.Chain {
	m := make(map[string]*nft.Chain, len(t.Chains))
	for _, c := range t.Chains {
		m[c.Name] = c
	}
	return m
}

// nftSetIndex maps the sets and maps of a table by name.
func nftSetIndex(t *nft.Table) map[string]*nft.Set {
	m := make(map[string]*nft.Set, len(t.Sets))
	for _, s := range t.Sets {
		m[s.Name] = s
	}
	return m
}

// compareNFTRules compares the rules of a chain in order (matchRules: the
// unpaired rules are missing or extra, pairs off the longest common order
// are out of order).
func compareNFTRules(f model.Family, table string, ec, ac *nft.Chain, attr *nftAttributor) []Difference {
	texts := func(c *nft.Chain) []crule {
		out := make([]crule, len(c.Rules))
		for i, r := range c.Rules {
			out[i] = crule{text: r.String()}
		}
		return out
	}
	es, as := texts(ec), texts(ac)
	missing, extra, moved := matchRules(es, as)
	diff := func(kind DiffKind, c *nft.Chain, r *nft.Rule, note string) Difference {
		a := attr.rule(c.Name, r)
		return Difference{Kind: kind, Family: f, Table: table, Chain: c.Name, Rule: r.String(),
			Service: a.Service, Endpoint: a.Endpoint, How: a.How, Note: note, Evidence: model.EvidenceAt(r.Pos(), r.String())}
	}
	var out []Difference
	for _, i := range missing {
		out = append(out, diff(MissingRule, ec, ec.Rules[i], ""))
	}
	for _, j := range extra {
		out = append(out, diff(ExtraRule, ac, ac.Rules[j], ""))
	}
	for _, m := range moved {
		out = append(out, diff(MissingRule, ec, ec.Rules[m[0]], "present in the capture at another position"))
		out = append(out, diff(ExtraRule, ac, ac.Rules[m[1]], "out of order"))
	}
	return out
}

// compareNFTElements compares the elements of a set or map, in any order.
func compareNFTElements(f model.Family, table string, es, as *nft.Set, attr *nftAttributor) []Difference {
	count := map[string]int{}
	for i := range as.Elements {
		count[nftElementText(as, &as.Elements[i])]++
	}
	diff := func(kind DiffKind, s *nft.Set, e *nft.Element, text string) Difference {
		a := attr.element(s, e)
		return Difference{Kind: kind, Family: f, Table: table, Chain: s.Name, Rule: text,
			Service: a.Service, Endpoint: a.Endpoint, How: a.How, Evidence: model.EvidenceAt(e.Pos(), "element "+text+" of "+s.Name)}
	}
	var out []Difference
	for i := range es.Elements {
		text := nftElementText(es, &es.Elements[i])
		if count[text] > 0 {
			count[text]--
			continue
		}
		out = append(out, diff(MissingElement, es, &es.Elements[i], text))
	}
	for i := range as.Elements {
		text := nftElementText(as, &as.Elements[i])
		if count[text] > 0 {
			count[text]--
			out = append(out, diff(ExtraElement, as, &as.Elements[i], text))
		}
	}
	return out
}

func nftChainEvidence(c *nft.Chain) model.Evidence { return model.EvidenceAt(c.Pos(), nftChainDecl(c)) }

// nftAttributor names the service port (and endpoint) an nftables object
// belongs to: by the hashed base of its name, the chains its rules and
// verdicts go to, its comment or its key. Its indexes are built on first
// use: a comparison without differences never needs them.
type nftAttributor struct {
	ports    []*model.ServicePort
	built    bool
	byBase   map[string]string    // "HASH8-ns/name/proto/port" -> service port
	byEPBase map[string][2]string // endpoint base -> service port, endpoint
	byHash   map[string]string    // HASH8 -> service port, for truncated names
	byDest   map[string][]string  // "ip . proto . port" -> service ports
	byNode   map[string][]string  // "proto . nodeport" -> service ports
	byEP     map[string][]string  // "ip . proto . port" of an endpoint -> service ports
	names    map[string]bool      // service port names
}

func newNFTAttributor(ports []*model.ServicePort) *nftAttributor {
	return &nftAttributor{ports: ports}
}

// build indexes the service ports.
func (a *nftAttributor) build() {
	if a.built {
		return
	}
	a.built = true
	a.byBase, a.byEPBase, a.byHash = map[string]string{}, map[string][2]string{}, map[string]string{}
	a.byDest, a.byNode, a.byEP, a.names = map[string][]string{}, map[string][]string{}, map[string][]string{}, map[string]bool{}
	for _, sp := range a.ports {
		name, proto := sp.String(), sp.ProtoLower()
		a.names[name] = true
		base := nftChainBase(sp)
		a.byBase[base] = name
		a.byHash[base[:8]] = name
		for _, e := range sp.Endpoints {
			a.byEPBase[nftEndpointBase(sp, e)] = [2]string{name, e.String()}
			k := e.IP.String() + " . " + proto + " . " + strconv.Itoa(int(e.Port))
			a.byEP[k] = appendOnce(a.byEP[k], name)
		}
		if sp.Skip != "" {
			continue
		}
		for _, ips := range [][]netip.Addr{sp.ClusterIPs, sp.ExternalIPs, sp.LoadBalancerVIPs} {
			for _, ip := range ips {
				k := ip.String() + " . " + proto + " . " + strconv.Itoa(int(sp.Port))
				a.byDest[k] = appendOnce(a.byDest[k], name)
			}
		}
		if sp.NodePort != 0 {
			k := proto + " . " + strconv.Itoa(int(sp.NodePort))
			a.byNode[k] = appendOnce(a.byNode[k], name)
		}
	}
}

// name attributes a chain or set by its name.
func (a *nftAttributor) name(n string) attribution {
	a.build()
	for _, pre := range []string{nftServicePrefix, nftLocalPrefix, nftExternalPrefix, nftFirewallPrefix, nftEndpointPrefix, nftAffinityPrefix} {
		base, ok := strings.CutPrefix(n, pre)
		if !ok || !strings.Contains(base, "/") {
			continue
		}
		if s, ok := a.byBase[base]; ok {
			return attribution{Service: s, How: "chain"}
		}
		if se, ok := a.byEPBase[base]; ok {
			return attribution{Service: se[0], Endpoint: se[1], How: "chain"}
		}
		if len(base) > 8 {
			if s, ok := a.byHash[base[:8]]; ok {
				return attribution{Service: s, How: "chain"}
			}
		}
	}
	return attribution{}
}

// rule attributes a rule: by its chain's name, else by the per-service
// chains or sets it refers to.
func (a *nftAttributor) rule(chain string, r *nft.Rule) attribution {
	if at := a.name(chain); at.Service != "" {
		return at
	}
	var found attribution
	ref := func(n string) {
		if found.Service == "" {
			if at := a.name(n); at.Service != "" {
				found = attribution{Service: at.Service, Endpoint: at.Endpoint, How: "target"}
			}
		}
	}
	for _, s := range r.Stmts {
		nftStmtRefs(s, ref)
	}
	return found
}

// nftStmtRefs calls ref with the chains and sets a statement refers to.
func nftStmtRefs(s nft.Stmt, ref func(string)) {
	expr := func(e nft.Expr) {
		switch x := e.(type) {
		case *nft.SetRef:
			ref(x.Name)
		case *nft.AnonSet:
			for _, el := range x.Elements {
				if el.Verdict != nil {
					ref(el.Verdict.Target)
				}
			}
		}
	}
	switch x := s.(type) {
	case *nft.Verdict:
		ref(x.Target)
	case *nft.Vmap:
		expr(x.Data)
	case *nft.Match:
		expr(x.Right)
	case *nft.SetUpdate:
		ref(x.Set)
	}
}

// element attributes a set or map element: by the chain its verdict goes
// to, its comment (the service port name), its destination key or, for
// the hairpin set, its endpoint.
func (a *nftAttributor) element(s *nft.Set, e *nft.Element) attribution {
	a.build()
	if e.Verdict != nil && e.Verdict.Target != "" {
		if at := a.name(e.Verdict.Target); at.Service != "" {
			at.How = "target"
			return at
		}
	}
	if a.names[e.Comment()] {
		return attribution{Service: e.Comment(), How: "comment"}
	}
	ek := e.Key()
	key := strings.Join(ek, " . ")
	one := func(ss []string, how string) attribution {
		if len(ss) == 1 {
			return attribution{Service: ss[0], How: how}
		}
		return attribution{}
	}
	switch {
	case s.Name == nftHairpinSet && len(ek) == 4:
		at := one(a.byEP[strings.Join(ek[1:], " . ")], "endpoint")
		ip, err1 := netip.ParseAddr(ek[1])
		port, err2 := strconv.Atoi(ek[3])
		if at.Service != "" && err1 == nil && err2 == nil {
			at.Endpoint = model.JoinHostPort(ip, int32(port))
		}
		return at
	case len(ek) == 3:
		return one(a.byDest[key], "address")
	case len(ek) == 2:
		return one(a.byNode[key], "address")
	}
	return attribution{}
}

// nftExpectedFor counts the rules and map and set elements of an expected
// nftables data plane that belong to a service port ("ns/name:port") or
// to every port of a Service ("ns/name").
func nftExpectedFor(exp *Dataplane, name string) int {
	if exp.NFT == nil {
		return 0
	}
	attr := newNFTAttributor(exp.ports)
	match := func(s string) bool {
		return s == name || !strings.Contains(name, ":") && strings.HasPrefix(s, name+":")
	}
	n := 0
	for _, t := range exp.NFT.Tables {
		for _, c := range t.Chains {
			for _, r := range c.Rules {
				if match(attr.rule(c.Name, r).Service) {
					n++
				}
			}
		}
		for _, s := range t.Sets {
			for i := range s.Elements {
				if match(attr.element(s, &s.Elements[i]).Service) {
					n++
				}
			}
		}
	}
	return n
}
