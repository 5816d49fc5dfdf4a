package resolve

import (
	"fmt"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
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
	// find returns the evidence of the trait in a dump, or false.
	find func(d *iptables.Dump) (model.Evidence, bool)
}

var layoutTraits = []layoutTrait{
	{"comments with an empty port name", ServicePortNameWithoutColon, false, findRule("nat", func(_ string, r *iptables.Rule) bool {
		return kpnames.HasEmptyPortName(r.Comment())
	})},
	{"KUBE-XLB chains", PolicyChains, false, findChain(kpnames.ChainXLB)},
	{"KUBE-SVL or KUBE-EXT chains", PolicyChains, true, findChain(kpnames.ChainEXT, kpnames.ChainSVL)},
	{"masquerade rules in KUBE-SERVICES", MasqueradeInServiceChain, false, findRule("nat", func(c string, r *iptables.Rule) bool {
		return c == kpnames.KubeServices && r.Target() == kpnames.KubeMarkMasq && r.Has("-d")
	})},
	{"kube-proxy's jumps to KUBE-MARK-DROP", FilterTableFirewall, false, findRule("nat", func(c string, r *iptables.Rule) bool {
		return r.Target() == kpnames.KubeMarkDrop && kpnames.IsServiceChain(c)
	})},
	{"KUBE-PROXY-FIREWALL", FilterTableFirewall, true, findChain(kpnames.KubeProxyFirewall)},
	{`"Balancing rule" comments`, BalancingRuleComments, true, findRule("nat", func(_ string, r *iptables.Rule) bool {
		return strings.HasPrefix(r.Comment(), "Balancing rule ")
	})},
	{"separate pod source and destination conntrack rules in KUBE-FORWARD", ForwardConntrackOneRule, false, findRule("filter", func(c string, r *iptables.Rule) bool {
		return c == kpnames.KubeForward && r.Comment() == "kubernetes forwarding conntrack pod source rule"
	})},
}

func findRule(table string, match func(chain string, r *iptables.Rule) bool) func(*iptables.Dump) (model.Evidence, bool) {
	return func(d *iptables.Dump) (model.Evidence, bool) {
		t := d.Table(table)
		if t == nil {
			return model.Evidence{}, false
		}
		for _, c := range t.Chains {
			for _, r := range c.Rules {
				if match(c.Name, r) {
					return model.RuleEvidence(r), true
				}
			}
		}
		return model.Evidence{}, false
	}
}

func findChain(prefixes ...string) func(*iptables.Dump) (model.Evidence, bool) {
	return func(d *iptables.Dump) (model.Evidence, bool) {
		for _, t := range d.Tables {
			for _, c := range t.Chains {
				for _, p := range prefixes {
					if strings.HasPrefix(c.Name, p) {
						return model.EvidenceAt(c.Pos(), ":"+c.Name), true
					}
				}
			}
		}
		return model.Evidence{}, false
	}
}

// RecognizeLayout reads the release of kube-proxy's rule layout off the
// snapshot's iptables dumps; nil when nothing in them tells.
func RecognizeLayout(s *model.Snapshot) *Layout {
	l := &Layout{Oldest: OldestLayoutMinor, Newest: kpversion.NewestMinor}
	for _, t := range layoutTraits {
		var ev model.Evidence
		found := false
		for _, d := range s.IPTables {
			if ev, found = t.find(d); found {
				break
			}
		}
		if !found {
			continue
		}
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
