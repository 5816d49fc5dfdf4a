package trace

import (
	"sort"
	"strings"
)

// An Outcome is where a packet ends on one side or both of a comparison:
// the verdict, the destination and the masquerade, with the probability
// of reaching it through the captured (Actual) and the expected data plane.
type Outcome struct {
	Verdict     Verdict `json:"verdict"`
	Destination string  `json:"destination,omitempty"`
	Masquerade  bool    `json:"masquerade"`
	Actual      float64 `json:"actual"`
	Expected    float64 `json:"expected"`
}

// A Divergence is the first step where a path of one side leaves the
// paths of the other: the step index (0-based) and the step of each side
// there (nil when that side's path ended before).
type Divergence struct {
	// Outcome names the outcome whose paths are compared.
	Outcome string `json:"outcome"`
	// Index is the position of the first differing step.
	Index    int   `json:"index"`
	Actual   *Step `json:"actual,omitempty"`
	Expected *Step `json:"expected,omitempty"`
	// Note explains a divergence without a differing step: both sides
	// take the same rules to the outcome, with different probabilities.
	Note string `json:"note,omitempty"`
}

// A Comparison sets the trace of a packet through the captured data plane
// beside its trace through the data plane kube-proxy should have
// programmed.
type Comparison struct {
	Packet   Packet  `json:"packet"`
	Actual   *Result `json:"actual"`
	Expected *Result `json:"expected"`
	// Outcomes are the ends of both sides, most probable first.
	Outcomes []Outcome `json:"outcomes"`
	// Diverged reports outcomes whose probabilities differ between the
	// sides.
	Diverged bool `json:"diverged"`
	// Divergences lists, for every outcome the sides reach differently,
	// the first step where the most probable path to it parts from the
	// other side's closest path.
	Divergences []Divergence `json:"divergences,omitempty"`
}

// probTolerance is the difference below which two probabilities are the
// same (the kernel stores statistic probabilities with 31 bits).
const probTolerance = 1e-6

// Compare compares the trace of the same packet through the captured
// (actual) and the expected data plane.
func Compare(actual, expected *Result) *Comparison {
	c := &Comparison{Packet: actual.Packet, Actual: actual, Expected: expected}
	idx := map[string]int{}
	add := func(p Path, exp bool) {
		k := outcomeKey(p)
		i, ok := idx[k]
		if !ok {
			i = len(c.Outcomes)
			idx[k] = i
			c.Outcomes = append(c.Outcomes, Outcome{Verdict: p.Verdict, Destination: p.Destination, Masquerade: p.Masquerade})
		}
		if exp {
			c.Outcomes[i].Expected += p.Probability
		} else {
			c.Outcomes[i].Actual += p.Probability
		}
	}
	for _, p := range actual.Paths {
		add(p, false)
	}
	for _, p := range expected.Paths {
		add(p, true)
	}
	sort.SliceStable(c.Outcomes, func(i, j int) bool {
		a, b := c.Outcomes[i], c.Outcomes[j]
		if d := max(a.Actual, a.Expected) - max(b.Actual, b.Expected); d > 1e-12 || d < -1e-12 {
			return d > 0
		}
		return a.Destination < b.Destination
	})
	for _, o := range c.Outcomes {
		d := o.Actual - o.Expected
		if d > probTolerance || d < -probTolerance || (len(actual.Paths) == 0) != (len(expected.Paths) == 0) {
			c.Diverged = true
			if dv, ok := divergence(o, actual.Paths, expected.Paths); ok {
				c.Divergences = append(c.Divergences, dv)
			}
		}
	}
	return c
}

func outcomeKey(p Path) string {
	m := "-"
	if p.Masquerade {
		m = "masquerade"
	}
	return string(p.Verdict) + " " + p.Destination + " " + m
}

// String formats an outcome: "DNAT 10.244.1.5:80 (masquerade)".
func (o Outcome) String() string {
	s := string(o.Verdict)
	if o.Destination != "" {
		s += " " + o.Destination
	}
	if o.Masquerade {
		s += " (masquerade)"
	}
	return s
}

// divergence finds the first step where the most probable path to o of
// the side that reaches it more often parts from the closest path of the
// other side.
func divergence(o Outcome, actual, expected []Path) (Divergence, bool) {
	from, to := actual, expected
	fromActual := true
	if o.Expected > o.Actual {
		from, to, fromActual = expected, actual, false
	}
	var path *Path
	for i := range from {
		if outcomeKey(from[i]) == outcomeKeyOf(o) && (path == nil || from[i].Probability > path.Probability) {
			path = &from[i]
		}
	}
	if path == nil {
		return Divergence{}, false
	}
	best, bestAt := -1, -1
	for i := range to {
		n := commonPrefix(path.Steps, to[i].Steps)
		if n > bestAt {
			best, bestAt = i, n
		}
	}
	dv := Divergence{Outcome: o.String(), Index: max(bestAt, 0)}
	if best >= 0 && bestAt == len(path.Steps) && bestAt == len(to[best].Steps) {
		dv.Note = "both sides take the same rules to this outcome; only its probability differs (the rules before it send a different share of the packets elsewhere)"
		return dv, true
	}
	var mine, theirs *Step
	if dv.Index < len(path.Steps) {
		s := path.Steps[dv.Index]
		mine = &s
	}
	if best >= 0 && dv.Index < len(to[best].Steps) {
		s := to[best].Steps[dv.Index]
		theirs = &s
	}
	if fromActual {
		dv.Actual, dv.Expected = mine, theirs
	} else {
		dv.Actual, dv.Expected = theirs, mine
	}
	return dv, true
}

func outcomeKeyOf(o Outcome) string {
	return outcomeKey(Path{Verdict: o.Verdict, Destination: o.Destination, Masquerade: o.Masquerade})
}

// commonPrefix counts the leading steps two paths share, comparing the
// table, chain and rule text (not the file and line: the two sides are
// different files).
func commonPrefix(a, b []Step) int {
	n := 0
	for n < len(a) && n < len(b) && sameStep(a[n], b[n]) {
		n++
	}
	return n
}

func sameStep(a, b Step) bool {
	return a.Table == b.Table && a.Chain == b.Chain && normalizeRule(a.Rule) == normalizeRule(b.Rule)
}

// normalizeRule folds the spacing of a rule's text.
func normalizeRule(s string) string { return strings.Join(strings.Fields(s), " ") }

// Reached reports whether some path of r, of non-zero probability, takes
// the packet to an endpoint: rewritten to one (DNAT) or delivered to the
// node (LOCAL).
func (r *Result) Reached() bool {
	for _, p := range r.Paths {
		if p.Probability > 0 && (p.Verdict == VerdictDNAT || p.Verdict == VerdictLocal) {
			return true
		}
	}
	return false
}
