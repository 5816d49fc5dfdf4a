package checks

import (
	"fmt"
	"slices"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/trace"
	"github.com/proxyscan/proxyscan/analyzer/view"
)

var rulesetInvalid = &Check{
	ID:       "ruleset-invalid",
	Severity: Error,
	Title:    "a ruleset the kernel refuses to load",
	What: "A rule of the captured iptables or nftables ruleset makes the kernel refuse the whole table: it jumps " +
		"(or goes) to a chain the table does not have, it closes a jump loop that a built-in (base) chain " +
		"reaches, it matches an ipset (--match-set) that the node's ipset dump, given and whole, does not hold, or, with nf_tables (nft, and iptables-nft), it enters a chain more than 15 jumps below a base " +
		"chain, deeper than the kernel's jump stack (NFT_JUMP_STACK_SIZE, 16). iptables-restore and nft -f reject " +
		"such a ruleset (\"Couldn't load target\", \"Chain ... does not exist\", \"Set ... doesn't exist\", \"Too many links\").",
	Why: "The dump cannot be what the kernel runs: either it was edited or assembled by hand, or it will be refused " +
		"the next time it is restored, and with it every rule of the table (kube-proxy's included: its sync fails " +
		"and retries). What the tracer and the other checks say about the paths through such a ruleset is " +
		"meaningless: the loop or the missing chain is the finding.",
	Fix: "Remove the rule of the evidence or create the chain it names; break the loop (a chain must never jump, " +
		"directly or through others, back to one that called it); with nf_tables, flatten the chains so that no " +
		"packet goes through more than 15 nested jumps. `iptables-restore --test` or `nft -c -f` tells whether a " +
		"ruleset loads.",
	Run: runRulesetInvalid,
}

func runRulesetInvalid(p *Pass) {
	ipt, nft := rulesetProblems(p)
	probs := slices.Concat(ipt, nft) // a copy: the tracer's are shared
	// The rules of one table that name the same missing chain are one
	// finding: one chain is missing (a vmap and an affinity rule of a
	// service chain name the same endpoint chain).
	type group struct {
		first, n int
		ev       []model.Evidence
		in       map[string]bool // the chains holding the rules
	}
	groups := map[[3]string]*group{}
	var order []*group
	for i, pr := range probs {
		// The map element naming the chain, when one does, then the rule.
		ev := []model.Evidence{model.EvidenceAt(pr.Pos, pr.Rule)}
		if pr.Set != nil && pr.Element != nil {
			ev = append([]model.Evidence{view.NFTElementEvidence(pr.Set, pr.Element)}, ev...)
		}
		if pr.Kind == trace.ProblemMissingChain && pr.Target != "" {
			k := [3]string{pr.Pos.File, pr.Table, pr.Target}
			if g := groups[k]; g != nil {
				g.ev = appendEvidence(g.ev, ev...)
				g.in[pr.Chain] = true
				g.n++
				continue
			}
			g := &group{first: i, n: 1, ev: ev, in: map[string]bool{pr.Chain: true}}
			groups[k] = g
			order = append(order, g)
			continue
		}
		order = append(order, &group{first: i, n: 1, ev: ev})
	}
	for _, g := range order {
		pr := probs[g.first]
		msg := pr.Message
		if n := g.n; n > 1 && len(g.in) == 1 && pr.Set == nil {
			msg = strings.Replace(msg, "chain "+pr.Chain+" jumps to", fmt.Sprintf("%d rules of chain %s jump to", n, pr.Chain), 1)
		} else if n == 2 {
			msg += " (and 1 more rule names it)"
		} else if n > 2 {
			msg += fmt.Sprintf(" (and %d more rules name it)", n-1)
		}
		if pr.Kind == trace.ProblemMissingChain && pr.Target != "" {
			if p.facts.dangling == nil {
				p.facts.dangling = map[evidenceKey]*dangling{}
			}
			d := &dangling{target: pr.Target, rules: map[evidenceKey]bool{}}
			for _, e := range g.ev {
				d.rules[evKeyOf(e)] = true
			}
			p.facts.dangling[evKeyOf(g.ev[0])] = d
		}
		p.Report(Finding{
			Message:  msg,
			Evidence: g.ev,
			Advice:   rulesetAdvice[pr.Kind],
		})
	}
}

// rulesetProblems returns the problems of the snapshot's iptables dumps
// and of its nft rulesets. Those of the rulesets the tracer walks are
// the tracer's (found once, for its warnings too) when the checks trace.
func rulesetProblems(p *Pass) (ipt, nft []trace.Problem) {
	ownIPT := func() []trace.Problem {
		return append(trace.ValidateIPTables(p.Snap.IPTables), trace.ValidateSets(p.Snap.IPTables, p.Snap.IPSets)...)
	}
	if tf := p.facts.tracer; tf != nil && slices.Equal(tf.dp.IPTables, p.Snap.IPTables) && slices.Equal(tf.dp.NFT, p.Snap.NFT) &&
		slices.Equal(tf.dp.IPSets, p.Snap.IPSets) {
		if tf.dp.Mode == model.ModeNFTables {
			return ownIPT(), tf.dp.Problems()
		}
		return tf.dp.Problems(), trace.ValidateNFT(p.Snap.NFT)
	}
	return ownIPT(), trace.ValidateNFT(p.Snap.NFT)
}

var rulesetAdvice = map[string]string{
	trace.ProblemMissingChain: "Create the chain the rule names, or remove the rule.",
	trace.ProblemLoop:         "Break the loop: remove the jump back to a chain that called this one.",
	trace.ProblemDepth:        "Flatten the chains: no packet may go through more than 15 nested jumps in nf_tables.",
	trace.ProblemMissingSet:   "Create the ipset the rule names (kube-proxy creates its own at each sync), or remove the rule.",
}
