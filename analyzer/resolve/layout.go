package resolve

import (
	"fmt"
	"slices"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/internal/ahead"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
)

// OldestLayoutMinor is the oldest kube-proxy minor whose iptables rule
// layout is read (KUBE-XLB chains, comments with an empty port name,
// masquerade rules in KUBE-SERVICES, session affinity with -m recent).
const OldestLayoutMinor = 10

// A Layout is what the iptables rules of a snapshot say of the kube-proxy
// release that wrote them: the minors whose layout has every trait found.
type Layout struct {
	// Oldest and Newest bound the minors the traits allow; Newest <
	// Oldest when the traits contradict each other (rules of two
	// releases).
	Oldest, Newest int
	// Traits are the traits recognised, each with the minors it implies
	// ("KUBE-XLB chains (1.10-1.23)"), and Evidence a rule or chain of each.
	Traits   []string
	Evidence []model.Evidence
}

// Old reports whether the traits rule out the newest releases.
func (l *Layout) Old() bool { return l != nil && l.Newest < kpversion.NewestMinor }

// Mixed reports whether the traits belong to no single release.
func (l *Layout) Mixed() bool { return l != nil && l.Newest < l.Oldest }

// Range says the minors of the layout: "1.10-1.18", "1.20-1.23", "1.22".
func (l *Layout) Range() string {
	if l.Oldest == l.Newest {
		return fmt.Sprintf("1.%d", l.Oldest)
	}
	return fmt.Sprintf("1.%d-1.%d", l.Oldest, l.Newest)
}

// String is the note a report gives of the layout.
func (l *Layout) String() string {
	if l.Mixed() {
		return "the iptables rules mix the layouts of several kube-proxy releases: " + strings.Join(l.Traits, ", ")
	}
	return fmt.Sprintf("rule layout of kube-proxy %s recognised: %s", l.Range(), strings.Join(l.Traits, ", "))
}

// Allows reports whether kube-proxy of minor m writes this layout.
func (l *Layout) Allows(m int) bool { return m >= l.Oldest && m <= l.Newest }

// A layoutTrait is something of the rules that only the releases with (or
// without) a behaviour write.
type layoutTrait struct {
	what string
	b    Behaviour
	// has: the trait shows the behaviour; otherwise it shows its absence.
	has bool
	// m finds the trait: a chain of any table by its name, or a rule of
	// one table.
	m traitMatch
}

var layoutTraits = []layoutTrait{
	{"comments with an empty port name", ServicePortNameWithoutColon, false, ruleIn("nat", func(r *traitRule) bool {
		return kpnames.HasEmptyPortName(r.Comment())
	})},
	{"KUBE-XLB chains", PolicyChains, false, chainNamed(kpnames.ChainXLB)},
	{"KUBE-SVL or KUBE-EXT chains", PolicyChains, true, chainNamed(kpnames.ChainEXT, kpnames.ChainSVL)},
	{"masquerade rules in KUBE-SERVICES", MasqueradeInServiceChain, false, ruleIn("nat", func(r *traitRule) bool {
		return r.chain == kpnames.KubeServices && r.Target() == kpnames.KubeMarkMasq && r.Has("-d")
	})},
	{"kube-proxy's jumps to KUBE-MARK-DROP", FilterTableFirewall, false, ruleIn("nat", func(r *traitRule) bool {
		return r.Target() == kpnames.KubeMarkDrop && kpnames.IsServiceChain(r.chain)
	})},
	{"KUBE-PROXY-FIREWALL", FilterTableFirewall, true, chainNamed(kpnames.KubeProxyFirewall)},
	{`"Balancing rule" comments`, BalancingRuleComments, true, ruleIn("nat", func(r *traitRule) bool {
		return strings.HasPrefix(r.Comment(), "Balancing rule ")
	})},
	{"separate pod source and destination conntrack rules in KUBE-FORWARD", ForwardConntrackOneRule, false, ruleIn("filter", func(r *traitRule) bool {
		return r.chain == kpnames.KubeForward && r.Comment() == "kubernetes forwarding conntrack pod source rule"
	})},
	{"no filter KUBE-NODEPORTS", HealthCheckNodePortsAccepted, false, traitMatch{dump: noFilterNodePorts}},
}

// noFilterNodePorts finds, in a whole dump of iptables mode (per-service
// chains in nat), a filter table with kube-proxy's chains but no
// KUBE-NODEPORTS: from 1.21 kube-proxy creates that chain at every sync
// (iptablesJumpChains: the health check node ports are accepted in it),
// whether or not a Service has a health check node port. The evidence is
// the filter table's header.
func noFilterNodePorts(d *iptables.Dump) (model.Evidence, bool) {
	if d.Partial {
		return model.Evidence{}, false
	}
	filter, nat := d.Table("filter"), d.Table("nat")
	if filter == nil || nat == nil || filter.Chain(kpnames.KubeNodePorts) != nil ||
		filter.Chain(kpnames.KubeServices) == nil && filter.Chain(kpnames.KubeForward) == nil {
		return model.Evidence{}, false
	}
	for _, c := range nat.Chains {
		if strings.HasPrefix(c.Name, kpnames.ChainSVC) || strings.HasPrefix(c.Name, kpnames.ChainSEP) {
			return model.EvidenceAt(filter.Pos(), "*filter (no "+kpnames.KubeNodePorts+" chain)"), true
		}
	}
	return model.Evidence{}, false
}

// ruleIn returns a trait's table and rule match (the trait's fields).
func ruleIn(table string, match func(r *traitRule) bool) traitMatch {
	return traitMatch{table: table, rule: match}
}

// chainNamed returns a trait's chain match: a chain whose name starts with
// one of prefixes.
func chainNamed(prefixes ...string) traitMatch {
	return traitMatch{chain: func(name string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}}
}

// traitMatch is how a trait is found: a chain by its name, a rule of one
// table, or something of a whole dump (dump, with its evidence).
type traitMatch struct {
	chain func(name string) bool
	table string
	rule  func(r *traitRule) bool
	dump  func(d *iptables.Dump) (model.Evidence, bool)
}

// traitRule is a rule the traits look at, in its chain: its comment, which
// several traits read, is read once.
type traitRule struct {
	*iptables.Rule
	chain   string
	comment string
	read    bool
}

// Comment returns the rule's comment ([iptables.Rule.Comment]).
func (r *traitRule) Comment() string {
	if !r.read {
		r.comment, r.read = r.Rule.Comment(), true
	}
	return r.comment
}

// findTraits returns the evidence of each trait in the dumps (ok false
// where a trait is absent), reading each rule once whatever the number of
// traits. A trait's evidence is its first chain or rule, the dumps, their
// tables and their chains in order. A dump whose traits ReadLayoutAhead
// started finding gives that answer (every trait is a chain's or a rule's
// of one table, so a dump's evidence does not depend on the dumps before
// it).
func findTraits(dumps []*iptables.Dump) (ev []model.Evidence, ok []bool) {
	ev, ok = make([]model.Evidence, len(layoutTraits)), make([]bool, len(layoutTraits))
	for _, d := range dumps {
		if a, found := layoutAhead.Take(d); found {
			for i := range a.found {
				if a.found[i] && !ok[i] {
					ev[i], ok[i] = a.ev[i], true
				}
			}
			continue
		}
		findDumpTraits(d, ev, ok)
	}
	return ev, ok
}

// traitsOfDump is the evidence of each trait one dump holds (found false
// where it does not).
type traitsOfDump struct {
	ev    []model.Evidence
	found []bool
}

// layoutAhead holds the findings ReadLayoutAhead started, by dump, until
// RecognizeLayout takes them or ForgetLayout drops them: one that
// panicked gives no answer, and the dump is read again where it is asked,
// so that the panic is raised there.
var layoutAhead ahead.Results[*iptables.Dump, traitsOfDump]

// ReadLayoutAhead starts finding, in the background, the traits of
// kube-proxy's rule layout in each of dumps, so that RecognizeLayout of a
// snapshot holding them takes the answer (the one it would compute)
// rather than reading the rules while the snapshot is assembled. The
// dumps must not change afterwards.
func ReadLayoutAhead(dumps []*iptables.Dump) {
	for _, d := range dumps {
		layoutAhead.Start(d, func() traitsOfDump {
			t := traitsOfDump{make([]model.Evidence, len(layoutTraits)), make([]bool, len(layoutTraits))}
			findDumpTraits(d, t.ev, t.found)
			return t
		})
	}
}

// ForgetLayout drops the findings ReadLayoutAhead started for dumps that
// no RecognizeLayout took (a dump the snapshot did not keep), so that they
// do not keep the dumps alive; one still running ends unread.
func ForgetLayout(dumps []*iptables.Dump) {
	for _, d := range dumps {
		layoutAhead.Forget(d)
	}
}

// findDumpTraits sets the evidence, in ev and ok, of each trait not found
// yet (ok false) that d holds.
func findDumpTraits(d *iptables.Dump, ev []model.Evidence, ok []bool) {
	// One rule at a time: the traits are called through a func value, so
	// the rule they are given is on the heap.
	tr := new(traitRule)
	for i, lt := range layoutTraits {
		if lt.m.dump != nil && !ok[i] {
			ev[i], ok[i] = lt.m.dump(d)
		}
	}
	for _, t := range d.Tables {
		for _, c := range t.Chains {
			for i, lt := range layoutTraits {
				if lt.m.chain != nil && !ok[i] && lt.m.chain(c.Name) {
					ev[i], ok[i] = model.ChainEvidence(c), true
				}
			}
		}
		// The rule traits of this table not found yet, and the place
		// of the chain of each one's first rule found in it so far.
		var pending []int
		var at []int32
		for i, lt := range layoutTraits {
			if lt.m.rule != nil && lt.m.table == t.Name && !ok[i] {
				pending = append(pending, i)
				at = append(at, int32(len(t.Chains)))
			}
		}
		if len(pending) == 0 {
			continue
		}
		// The rules are read in the order they are written
		// (iptables.DumpOrder): a trait found in a chain is looked
		// for further only in the chains before it, and no chain
		// after all the traits' is read.
		bound := int32(len(t.Chains))
		for _, ci := range iptables.DumpOrder(t) {
			if ci >= bound {
				continue
			}
			c := t.Chains[ci]
			for _, r := range c.Rules {
				*tr = traitRule{Rule: r, chain: c.Name}
				for k, i := range pending {
					if ci < at[k] && layoutTraits[i].m.rule(tr) {
						ev[i], at[k] = model.RuleEvidence(r), ci
						bound = slices.Max(at)
					}
				}
			}
		}
		for k, i := range pending {
			ok[i] = at[k] < int32(len(t.Chains))
		}
	}
}

// RecognizeLayout reads the release of kube-proxy's rule layout off the
// snapshot's iptables dumps; nil when nothing in them tells.
func RecognizeLayout(s *model.Snapshot) *Layout {
	l := &Layout{Oldest: OldestLayoutMinor, Newest: kpversion.NewestMinor}
	evs, found := findTraits(s.IPTables)
	for i, t := range layoutTraits {
		if !found[i] {
			continue
		}
		ev := evs[i]
		span := behaviours[t.b]
		lo, hi := OldestLayoutMinor, kpversion.NewestMinor
		switch {
		case t.has:
			lo = max(lo, span.since)
			if span.until != 0 {
				hi = span.until - 1
			}
		case span.until != 0:
			lo = span.until
		default:
			hi = span.since - 1
		}
		l.Oldest, l.Newest = max(l.Oldest, lo), min(l.Newest, hi)
		l.Traits = append(l.Traits, fmt.Sprintf("%s (%s)", t.what, minors(lo, hi)))
		l.Evidence = append(l.Evidence, ev)
	}
	if len(l.Traits) == 0 {
		return nil
	}
	return l
}

func minors(lo, hi int) string {
	switch {
	case hi >= kpversion.NewestMinor:
		return fmt.Sprintf("1.%d+", lo)
	case lo == hi:
		return fmt.Sprintf("1.%d", lo)
	case lo <= OldestLayoutMinor:
		return fmt.Sprintf("up to 1.%d", hi)
	}
	return fmt.Sprintf("1.%d-1.%d", lo, hi)
}
