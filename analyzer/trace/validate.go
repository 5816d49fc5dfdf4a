package trace

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/proxyscan/proxyscan/internal/ahead"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/ipset"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/nft"
)

// This file finds what makes the kernel refuse a ruleset: a jump to a
// chain that does not exist, a jump loop reachable from a built-in (base)
// chain, in nf_tables, jumps nested deeper than its jump stack, and a
// match of an ipset the node does not have.

// NFTJumpStackSize is the depth of nf_tables' jump stack
// (NFT_JUMP_STACK_SIZE in the kernel): a chain reached through this many
// jumps or gotos from a base chain is refused when the ruleset is loaded
// ("Too many links"). It applies to nft rulesets and to iptables-nft
// dumps; iptables-legacy has no such limit.
const NFTJumpStackSize = 16

// Kinds of [Problem].
const (
	ProblemMissingChain = "missing-chain"
	ProblemLoop         = "loop"
	ProblemDepth        = "jump-depth"
	ProblemMissingSet   = "missing-set"
)

// A Problem is a rule that makes the kernel (iptables-restore, nft -f)
// refuse the ruleset holding it.
type Problem struct {
	// Kind is ProblemMissingChain, ProblemLoop, ProblemDepth or
	// ProblemMissingSet.
	Kind string
	// Table is the iptables table ("filter") or the nft table ("ip
	// kube-proxy"); Chain the chain holding the rule.
	Table, Chain string
	// Rule is the offending rule as written.
	Rule string
	// Target is, for ProblemMissingChain, the chain the rule names that
	// the table does not have; Set and Element, when an element of a
	// named verdict map the rule looks up names it, that map and element.
	Target  string
	Set     *nft.Set
	Element *nft.Element
	// Pos locates the rule.
	Pos parsers.Pos
	// Message says what is wrong, naming the chains.
	Message string
}

// String formats the problem as "file:line: message".
func (p Problem) String() string { return p.Pos.String() + ": " + p.Message }

// Validate returns the problems of the rulesets dp's mode walks: its
// iptables dumps (iptables and IPVS modes) or its nft rulesets.
func Validate(dp *Dataplane) []Problem {
	if dp.Mode == "nftables" {
		return ValidateNFT(dp.NFT)
	}
	return append(ValidateIPTables(dp.IPTables), ValidateSets(dp.IPTables, dp.IPSets)...)
}

// Problems returns Validate(dp), computed once for the rulesets dp holds
// and shared with dp's traces, which warn of them. The slice is shared:
// it is not to be modified.
func (dp *Dataplane) Problems() []Problem { return dp.validate() }

// validateMu guards the problems cached on every Dataplane.
var validateMu sync.Mutex

// validate returns Validate(dp), computed once for the rulesets dp holds.
func (dp *Dataplane) validate() []Problem {
	validateMu.Lock()
	defer validateMu.Unlock()
	key := make([]any, 0, len(dp.IPTables)+len(dp.NFT)+len(dp.IPSets)+1)
	key = append(key, dp.Mode)
	for _, d := range dp.IPTables {
		key = append(key, d)
	}
	for _, d := range dp.IPSets {
		key = append(key, d)
	}
	for _, r := range dp.NFT {
		key = append(key, r)
	}
	if !slices.Equal(key, dp.validFor) {
		dp.problems, dp.validFor = Validate(dp), key
	}
	return dp.problems
}

// edge is a jump or goto of rule number rule of chain from to chain to
// (indices of the graph's chains): no pointer, so that the edges of a
// large table cost the collector nothing.
type edge struct {
	from, to, rule int32
}

// graph is the jump graph of one table. Chains are numbered in listing
// order; the edges of chain i are edges[start[i]:start[i+1]], added chain
// by chain in that order.
type graph struct {
	label string
	n     int                  // the number of chains
	name  func(i int32) string // the name of chain i
	edges []edge
	start []int32
	bases []int32 // the built-in (base) chains
	depth bool    // the nf_tables jump stack applies
	// ruleAt returns the text and position of an edge's rule.
	ruleAt func(e edge) (string, parsers.Pos)
}

// newGraph returns the graph of a table's n chains, without edges yet.
func newGraph(label string, n int, name func(i int32) string, base func(i int) bool, depth bool) *graph {
	g := &graph{label: label, n: n, name: name, depth: depth, start: make([]int32, 0, n+1)}
	for i := range n {
		if base(i) {
			g.bases = append(g.bases, int32(i))
		}
	}
	return g
}

// beginChain starts the edges of the next chain (called once per chain,
// in order, before its edges are added).
func (g *graph) beginChain() { g.start = append(g.start, int32(len(g.edges))) }

// out returns the edges of chain c.
func (g *graph) out(c int32) []edge {
	end := int32(len(g.edges))
	if int(c)+1 < len(g.start) {
		end = g.start[c+1]
	}
	return g.edges[g.start[c]:end]
}

// ValidateIPTables returns the problems of iptables dumps: jumps to chains
// a table does not declare, jump loops reachable from a built-in chain,
// and, in dumps of the nf_tables backend, jumps nested deeper than
// [NFTJumpStackSize].
func ValidateIPTables(dumps []*iptables.Dump) []Problem {
	return validateEach(dumps, &prevalidated, validateDump)
}

// validateEach returns the problems of each item, those validated ahead
// (in done) taken, the others found now.
func validateEach[K comparable](items []K, done *ahead.Results[K, []Problem], validate func(K) []Problem) []Problem {
	var out []Problem
	for _, it := range items {
		if problems, ok := done.Take(it); ok {
			out = append(out, problems...)
			continue
		}
		out = append(out, validate(it)...)
	}
	return out
}

// prevalidated holds the validations Prevalidate started, by dump: one
// whose validation panicked gives no answer, and the dump is validated
// again where it is asked, so that the panic is raised there.
var prevalidated ahead.Results[*iptables.Dump, []Problem]

// Prevalidate starts finding the problems of dumps in the background, so
// that the whole-ruleset checks of a trace run while the rest of its
// inputs are assembled: the next ValidateIPTables (Validate, Trace) of a
// dump waits for its answer, which is the one it would compute, and takes
// it. The dumps must not change afterwards.
func Prevalidate(dumps []*iptables.Dump) {
	for _, d := range dumps {
		prevalidated.Start(d, func() []Problem { return validateDump(d) })
	}
}

// Forget drops the validations of dumps that Prevalidate started and no
// validation took (a dump the snapshot did not keep, checks that did not
// ask), so that they do not keep the dumps alive; one still running ends
// unread.
func Forget(dumps []*iptables.Dump) {
	for _, d := range dumps {
		prevalidated.Forget(d)
	}
}

// validateDump returns the problems of one iptables dump (see
// ValidateIPTables).
func validateDump(d *iptables.Dump) []Problem {
	var out []Problem
	for _, t := range d.Tables {
		g := newGraph(t.Name, len(t.Chains), func(i int32) string { return t.Chains[i].Name },
			func(i int) bool { return t.Chains[i].Builtin() }, d.Backend == iptables.BackendNFT)
		g.ruleAt = func(e edge) (string, parsers.Pos) {
			r := t.Chains[e.from].Rules[e.rule]
			return r.Raw, r.Pos()
		}
		// The jumps are resolved once for the table's readers.
		jumps := t.Jumps()
		// The rules that jump to no chain of the table are looked at in
		// the order they are written (Jumps.Order), each chain's in turn;
		// what they find is listed chain by chain, as the chains are.
		type missing struct {
			chain int32
			p     Problem
		}
		var miss []missing
		for _, ci := range jumps.Order() {
			c := t.Chains[ci]
			for ri, r := range c.Rules {
				if _, ok := jumps.Target(c, ri); ok {
					continue
				}
				target := r.Target()
				if target == "" || iptables.IsBuiltinChain(t.Name, target) {
					continue
				}
				if !r.IsGoto() && (iptables.StandardTargets[target] || extensionTarget(target)) {
					continue
				}
				if d.Partial {
					// A fragment (iptables-save | grep) need not
					// hold the chains its rules name.
					continue
				}
				miss = append(miss, missing{ci, Problem{Kind: ProblemMissingChain, Table: t.Name, Chain: c.Name, Rule: r.Raw, Pos: r.Pos(), Target: target,
					Message: fmt.Sprintf("chain %s jumps to chain %s, which table %s does not declare: iptables-restore refuses the table", c.Name, target, t.Name)}})
			}
		}
		slices.SortStableFunc(miss, func(a, b missing) int { return cmp.Compare(a.chain, b.chain) })
		for _, m := range miss {
			out = append(out, m.p)
		}
		// The edges, from the resolved jumps alone. At most one edge per
		// rule: sized once rather than grown.
		nrules := 0
		for _, c := range t.Chains {
			nrules += len(c.Rules)
		}
		g.edges = make([]edge, 0, nrules)
		for ci, c := range t.Chains {
			g.beginChain()
			for ri := range c.Rules {
				if to, ok := jumps.Target(c, ri); ok {
					g.edges = append(g.edges, edge{from: int32(ci), to: int32(to), rule: int32(ri)})
				}
			}
		}
		out = append(out, g.check("iptables-restore")...)
	}
	return out
}

// ValidateSets returns the rules of iptables dumps that match a set
// ("--match-set NAME", or add to or delete from one) that the ipset dumps
// of the same node do not hold: iptables-restore refuses them ("Set NAME
// doesn't exist"). It says nothing without an ipset dump, or when one is
// not whole (a listing cut short), which may not list every set.
func ValidateSets(dumps []*iptables.Dump, sets []*ipset.Dump) []Problem {
	if len(sets) == 0 {
		return nil
	}
	have := map[string]bool{}
	var files []string
	for _, d := range sets {
		if d == nil || d.PartialReason != "" {
			return nil
		}
		for _, s := range d.Sets {
			have[s.Name] = true
			if f := s.Pos.File; f != "" && !slices.Contains(files, f) {
				files = append(files, f)
			}
		}
	}
	source := "the ipset dump given"
	if len(files) > 0 {
		source = strings.Join(files, ", ")
	}
	var out []Problem
	for _, d := range dumps {
		for _, t := range d.Tables {
			for _, c := range t.Chains {
				for _, r := range c.Rules {
					for _, a := range r.Args() {
						switch a.Name {
						case "--match-set", "--add-set", "--del-set", "--map-set":
						default:
							continue
						}
						name, _, _ := strings.Cut(a.Value, " ")
						if name == "" || have[name] {
							continue
						}
						out = append(out, Problem{Kind: ProblemMissingSet, Table: t.Name, Chain: c.Name, Rule: r.Raw, Pos: r.Pos(),
							Message: fmt.Sprintf("chain %s matches set %s, which %s does not hold: iptables-restore refuses the table (\"Set %s doesn't exist\")", c.Name, name, source, name)})
					}
				}
			}
		}
	}
	return out
}

// ValidateNFT returns the problems of nft rulesets: jumps and gotos
// (verdict maps included) to chains a table does not have, jump loops
// reachable from a base chain, and jumps nested deeper than
// [NFTJumpStackSize].
func ValidateNFT(rulesets []*nft.Ruleset) []Problem {
	return validateEach(rulesets, &prevalidatedNFT, validateRuleset)
}

// prevalidatedNFT holds the validations [ReadNFTAhead] started, by
// ruleset, as prevalidated does for dumps.
var prevalidatedNFT ahead.Results[*nft.Ruleset, []Problem]

// validateRuleset returns the problems of one nft ruleset (see
// ValidateNFT).
func validateRuleset(rs *nft.Ruleset) []Problem {
	var out []Problem
	for _, t := range rs.Tables {
		label := nft.FamilyName(t.Family) + " " + t.Name
		index := make(map[string]int32, len(t.Chains))
		for i, c := range t.Chains {
			index[c.Name] = int32(i)
		}
		g := newGraph(label, len(t.Chains), func(i int32) string { return t.Chains[i].Name },
			func(i int) bool { return t.Chains[i].IsBase() }, true)
		g.ruleAt = func(e edge) (string, parsers.Pos) {
			r := t.Chains[e.from].Rules[e.rule]
			return r.Raw, r.Pos()
		}
		sets := map[string]*nft.Set{}
		for _, s := range t.Sets {
			sets[s.Name] = s
		}
		for ci, c := range t.Chains {
			g.beginChain()
			for ri, r := range c.Rules {
				seen := map[string]bool{}
				for _, tg := range nftTargets(r, sets) {
					target := tg.chain
					if seen[target] {
						continue
					}
					seen[target] = true
					to, ok := index[target]
					if !ok && t.Cut {
						// A listing cut short in the table need
						// not hold the chains its rules name.
						continue
					}
					if !ok {
						msg := fmt.Sprintf("chain %s jumps to chain %s, which table %s does not have: nft refuses the ruleset", c.Name, target, label)
						if tg.set != nil {
							msg = fmt.Sprintf("an element of map %s, which chain %s looks up, goes to chain %s, which table %s does not have: nft refuses the ruleset",
								tg.set.Name, c.Name, target, label)
						}
						out = append(out, Problem{Kind: ProblemMissingChain, Table: label, Chain: c.Name, Rule: r.Raw, Pos: r.Pos(), Target: target,
							Set: tg.set, Element: tg.el, Message: msg})
						continue
					}
					g.edges = append(g.edges, edge{from: int32(ci), to: to, rule: int32(ri)})
				}
			}
		}
		out = append(out, g.check("nft")...)
	}
	return out
}

// nftTargets returns the chains rule r jumps or goes to, in its verdict
// and in its verdict maps (named ones from sets).
func nftTargets(r *nft.Rule, sets map[string]*nft.Set) []nftTarget {
	var out []nftTarget
	elems := func(set *nft.Set, es []nft.Element) {
		for i := range es {
			if v := es[i].Verdict; v != nil && v.Target != "" && (v.Kind == "jump" || v.Kind == "goto") {
				t := nftTarget{chain: v.Target}
				if set != nil {
					t.set, t.el = set, &es[i]
				}
				out = append(out, t)
			}
		}
	}
	for _, s := range r.Stmts {
		switch s := s.(type) {
		case *nft.Verdict:
			if s.Target != "" && (s.Kind == "jump" || s.Kind == "goto") {
				out = append(out, nftTarget{chain: s.Target})
			}
		case *nft.Vmap:
			switch d := s.Data.(type) {
			case *nft.AnonSet:
				elems(nil, d.Elements)
			case *nft.SetRef:
				if set := sets[strings.TrimPrefix(d.Name, "@")]; set != nil {
					elems(set, set.Elements)
				}
			}
		}
	}
	return out
}

// nftTarget is a chain a rule jumps or goes to, with the element of the
// named verdict map that names it (nil set and el when the rule itself or
// an anonymous map does).
type nftTarget struct {
	chain string
	set   *nft.Set
	el    *nft.Element
}

// check finds the loops reachable from the base chains of g and, when the
// nf_tables jump stack applies, the jumps nested too deep; tool names
// what refuses the table.
func (g *graph) check(tool string) []Problem {
	var out []Problem
	const (
		white = iota
		grey
		black
	)
	n := g.n
	color := make([]uint8, n)
	var stack []int32
	looped := map[string]bool{} // the rules reported, by position and target
	var visit func(c int32)
	visit = func(c int32) {
		color[c] = grey
		stack = append(stack, c)
		for _, e := range g.out(c) {
			switch color[e.to] {
			case grey:
				rule, pos := g.ruleAt(e)
				key := pos.String() + ">" + g.name(e.to)
				if looped[key] {
					continue
				}
				looped[key] = true
				i := len(stack) - 1
				for stack[i] != e.to {
					i--
				}
				var cycle []string
				for _, s := range stack[i:] {
					cycle = append(cycle, g.name(s))
				}
				cycle = append(cycle, g.name(e.to))
				out = append(out, Problem{Kind: ProblemLoop, Table: g.label, Chain: g.name(e.from), Rule: rule, Pos: pos,
					Message: fmt.Sprintf("jump loop %s, reached from built-in chain %s: %s refuses the table", strings.Join(cycle, " -> "), g.name(stack[0]), tool)})
			case white:
				visit(e.to)
			}
		}
		stack = stack[:len(stack)-1]
		color[c] = black
	}
	for _, b := range g.bases {
		if color[b] == white {
			visit(b)
		}
	}
	if !g.depth {
		return out
	}
	// height[c] is the number of nested jumps below c, loops left out (a
	// loop is reported above).
	height := make([]int, n)
	next := make([]*edge, n)
	state := make([]uint8, n)
	var h func(c int32) int
	h = func(c int32) int {
		switch state[c] {
		case grey:
			return 0
		case black:
			return height[c]
		}
		state[c] = grey
		best := 0
		es := g.out(c)
		for i := range es {
			e := &es[i]
			if state[e.to] == grey {
				continue
			}
			if v := h(e.to) + 1; v > best {
				best, next[c] = v, e
			}
		}
		state[c] = black
		height[c] = best
		return best
	}
	for _, b := range g.bases {
		if h(b) < NFTJumpStackSize {
			continue
		}
		// Follow the deepest jumps down to the one that enters a chain
		// NFTJumpStackSize levels below b.
		path := []string{g.name(b)}
		c := b
		var e *edge
		for range NFTJumpStackSize {
			e = next[c]
			c = e.to
			path = append(path, g.name(c))
		}
		rule, pos := g.ruleAt(*e)
		out = append(out, Problem{Kind: ProblemDepth, Table: g.label, Chain: g.name(e.from), Rule: rule, Pos: pos,
			Message: fmt.Sprintf("jumps nest %d chains deep from base chain %s (%s): the kernel's jump stack holds %d, %s refuses the rule (Too many links)",
				h(b), g.name(b), strings.Join(path, " -> "), NFTJumpStackSize-1, tool)})
		break
	}
	return out
}

// extensionTarget reports whether name is an iptables target extension
// (a target that is not a chain).
func extensionTarget(name string) bool {
	switch name {
	case "AUDIT", "CHECKSUM", "CLASSIFY", "CLUSTERIP", "CONNMARK", "CONNSECMARK", "CT", "DNAT", "DNPT", "DSCP",
		"ECN", "HL", "HMARK", "IDLETIMER", "LED", "LOG", "MARK", "MASQUERADE", "MIRROR", "NETMAP", "NFLOG",
		"NFQUEUE", "NOTRACK", "QUEUE", "RATEEST", "REDIRECT", "REJECT", "SAME", "SECMARK", "SET", "SNAT", "SNPT",
		"SYNPROXY", "TCPMSS", "TCPOPTSTRIP", "TEE", "TOS", "TPROXY", "TRACE", "TTL", "ULOG", "ACCEPT", "DROP",
		"RETURN", "BALANCE", "IPV4OPTSSTRIP", "ROUTE", "TARPIT", "DELUDE", "CHAOS", "LOGMARK", "SYSRQ", "DHCPMAC",
		"ECHO", "IPMARK", "STEAL", "TRACE6", "JOOL", "JOOL_SIIT", "FULLCONENAT", "xt_DYNJMP":
		return true
	}
	return false
}
