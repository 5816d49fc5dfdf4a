package trace

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/nft"
)

// This file finds what makes the kernel refuse a ruleset: a jump to a
// chain that does not exist, a jump loop reachable from a built-in (base)
// chain, and, in nf_tables, jumps nested deeper than its jump stack.

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
)

// A Problem is a rule that makes the kernel (iptables-restore, nft -f)
// refuse the ruleset holding it.
type Problem struct {
	// Kind is ProblemMissingChain, ProblemLoop or ProblemDepth.
	Kind string
	// Table is the iptables table ("filter") or the nft table ("ip
	// kube-proxy"); Chain the chain holding the rule.
	Table, Chain string
	// Rule is the offending rule as written.
	Rule string
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
	return ValidateIPTables(dp.IPTables)
}

// validateMu guards the problems cached on every Dataplane.
var validateMu sync.Mutex

// validate returns Validate(dp), computed once for the rulesets dp holds.
func (dp *Dataplane) validate() []Problem {
	validateMu.Lock()
	defer validateMu.Unlock()
	key := make([]any, 0, len(dp.IPTables)+len(dp.NFT)+1)
	key = append(key, dp.Mode)
	for _, d := range dp.IPTables {
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

// edge is a jump or goto of a rule to a chain.
type edge struct {
	to    string
	table string
	chain string
	rule  string
	pos   parsers.Pos
}

// graph is the jump graph of one table.
type graph struct {
	label  string
	chains map[string]bool // the chains of the table
	order  []string        // the chains, in listing order
	edges  map[string][]edge
	bases  []string // the built-in (base) chains
	depth  bool     // the nf_tables jump stack applies
}

// ValidateIPTables returns the problems of iptables dumps: jumps to chains
// a table does not declare, jump loops reachable from a built-in chain,
// and, in dumps of the nf_tables backend, jumps nested deeper than
// [NFTJumpStackSize].
func ValidateIPTables(dumps []*iptables.Dump) []Problem {
	var out []Problem
	for _, d := range dumps {
		for _, t := range d.Tables {
			g := &graph{label: t.Name, chains: map[string]bool{}, edges: map[string][]edge{},
				depth: d.Backend == iptables.BackendNFT}
			for _, c := range t.Chains {
				g.chains[c.Name] = true
				g.order = append(g.order, c.Name)
				if c.Builtin() {
					g.bases = append(g.bases, c.Name)
				}
			}
			for _, c := range t.Chains {
				for _, r := range c.Rules {
					target := r.Target()
					if target == "" || iptables.IsBuiltinChain(t.Name, target) {
						continue
					}
					exists := t.Chain(target) != nil
					if !exists && !r.IsGoto() && (iptables.StandardTargets[target] || extensionTarget(target)) {
						continue
					}
					e := edge{to: target, table: t.Name, chain: c.Name, rule: r.Raw, pos: r.Pos()}
					if !exists {
						if d.Partial {
							// A fragment (iptables-save | grep) need not
							// hold the chains its rules name.
							continue
						}
						out = append(out, Problem{Kind: ProblemMissingChain, Table: t.Name, Chain: c.Name, Rule: r.Raw, Pos: e.pos,
							Message: fmt.Sprintf("chain %s jumps to chain %s, which table %s does not declare: iptables-restore refuses the table", c.Name, target, t.Name)})
						continue
					}
					g.edges[c.Name] = append(g.edges[c.Name], e)
				}
			}
			out = append(out, g.check("iptables-restore")...)
		}
	}
	return out
}

// ValidateNFT returns the problems of nft rulesets: jumps and gotos
// (verdict maps included) to chains a table does not have, jump loops
// reachable from a base chain, and jumps nested deeper than
// [NFTJumpStackSize].
func ValidateNFT(rulesets []*nft.Ruleset) []Problem {
	var out []Problem
	for _, rs := range rulesets {
		for _, t := range rs.Tables {
			label := nft.FamilyName(t.Family) + " " + t.Name
			g := &graph{label: label, chains: map[string]bool{}, edges: map[string][]edge{}, depth: true}
			for _, c := range t.Chains {
				g.chains[c.Name] = true
				g.order = append(g.order, c.Name)
				if c.IsBase() {
					g.bases = append(g.bases, c.Name)
				}
			}
			sets := map[string]*nft.Set{}
			for _, s := range t.Sets {
				sets[s.Name] = s
			}
			for _, c := range t.Chains {
				for _, r := range c.Rules {
					seen := map[string]bool{}
					for _, to := range nftTargets(r, sets) {
						if seen[to] {
							continue
						}
						seen[to] = true
						e := edge{to: to, table: label, chain: c.Name, rule: r.Raw, pos: r.Pos}
						if !g.chains[to] {
							out = append(out, Problem{Kind: ProblemMissingChain, Table: label, Chain: c.Name, Rule: r.Raw, Pos: r.Pos,
								Message: fmt.Sprintf("chain %s jumps to chain %s, which table %s does not have: nft refuses the ruleset", c.Name, to, label)})
							continue
						}
						g.edges[c.Name] = append(g.edges[c.Name], e)
					}
				}
			}
			out = append(out, g.check("nft")...)
		}
	}
	return out
}

// nftTargets returns the chains rule r jumps or goes to, in its verdict
// and in its verdict maps (named ones from sets).
func nftTargets(r *nft.Rule, sets map[string]*nft.Set) []string {
	var out []string
	elems := func(es []nft.Element) {
		for _, e := range es {
			if v := e.Verdict; v != nil && v.Target != "" && (v.Kind == "jump" || v.Kind == "goto") {
				out = append(out, v.Target)
			}
		}
	}
	for _, s := range r.Stmts {
		switch s := s.(type) {
		case *nft.Verdict:
			if s.Target != "" && (s.Kind == "jump" || s.Kind == "goto") {
				out = append(out, s.Target)
			}
		case *nft.Vmap:
			switch d := s.Data.(type) {
			case *nft.AnonSet:
				elems(d.Elements)
			case *nft.SetRef:
				if set := sets[strings.TrimPrefix(d.Name, "@")]; set != nil {
					elems(set.Elements)
				}
			}
		}
	}
	return out
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
	color := map[string]int{}
	var stack []string
	looped := map[string]bool{} // the rules reported, by position and target
	var visit func(c string)
	visit = func(c string) {
		color[c] = grey
		stack = append(stack, c)
		for _, e := range g.edges[c] {
			switch color[e.to] {
			case grey:
				key := e.pos.String() + ">" + e.to
				if looped[key] {
					continue
				}
				looped[key] = true
				i := len(stack) - 1
				for stack[i] != e.to {
					i--
				}
				cycle := append(append([]string(nil), stack[i:]...), e.to)
				out = append(out, Problem{Kind: ProblemLoop, Table: e.table, Chain: e.chain, Rule: e.rule, Pos: e.pos,
					Message: fmt.Sprintf("jump loop %s, reached from built-in chain %s: %s refuses the table", strings.Join(cycle, " -> "), stack[0], tool)})
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
	height := map[string]int{}
	next := map[string]*edge{}
	state := map[string]int{}
	var h func(c string) int
	h = func(c string) int {
		switch state[c] {
		case grey:
			return 0
		case black:
			return height[c]
		}
		state[c] = grey
		best := 0
		for i := range g.edges[c] {
			e := &g.edges[c][i]
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
		path := []string{b}
		c := b
		var e *edge
		for range NFTJumpStackSize {
			e = next[c]
			c = e.to
			path = append(path, c)
		}
		out = append(out, Problem{Kind: ProblemDepth, Table: e.table, Chain: e.chain, Rule: e.rule, Pos: e.pos,
			Message: fmt.Sprintf("jumps nest %d chains deep from base chain %s (%s): the kernel's jump stack holds %d, %s refuses the rule (Too many links)",
				h(b), b, strings.Join(path, " -> "), NFTJumpStackSize-1, tool)})
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
