package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/trace"
)

// TraceFormats are the output formats of `proxyscan trace`.
var TraceFormats = Traces.Formats()

// RenderTrace writes traces in the named format ("table" or "json"): the
// paths of each result.
func RenderTrace(w io.Writer, format string, results []*trace.Result, opts Options) error {
	return Traces.Render(w, format, results, opts)
}

// RenderCompare writes comparisons in the named format.
func RenderCompare(w io.Writer, format string, cmps []*trace.Comparison, opts Options) error {
	return Comparisons.Render(w, format, cmps, opts)
}

// RenderTraceJSON writes the contract's Trace JSON: one object for one
// result, an array of them for several nodes.
func RenderTraceJSON(w io.Writer, results []*trace.Result) error {
	return jsonOneOrMany(w, results, Options{})
}

// RenderTraceTable writes traces for a terminal as packet walks, no line
// wider than opts.Width (see writeWalk); opts.Verbose prints every rule
// in full instead, however wide.
func RenderTraceTable(w io.Writer, results []*trace.Result, opts Options) error {
	t := newTheme(w, opts.Color)
	width := traceWidth(opts)
	var b strings.Builder
	for i, r := range results {
		if i > 0 {
			b.WriteString("\n")
		}
		writeTraceResult(&b, t, r, width, opts.Verbose)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// traceWidth is the width trace tables are fitted to.
func traceWidth(opts Options) int {
	if opts.Width <= 0 {
		return 120
	}
	return opts.Width
}

func traceHeader(r *trace.Result) string {
	parts := []string{"proxyscan trace"}
	if r.Node != "" {
		parts = append(parts, "node "+r.Node)
	}
	mode := "mode " + r.Mode
	if r.Expected {
		mode += " (expected rules)"
	}
	parts = append(parts, mode)
	return strings.Join(parts, " · ")
}

func packetLine(p trace.Packet) string {
	s := "packet " + p.String()
	if p.InIface != "" {
		s += ", in " + p.InIface
	}
	return s
}

// unhandled reports a destination kube-proxy's rules do not handle: no
// Service's address, or a port its Service does not have.
func unhandled(r *trace.Result) bool {
	return r.TargetKind == trace.TargetNoService || r.TargetKind == trace.TargetNoSuchPort
}

// writeTraceResult writes the header of a trace (node, mode, packet, what
// the destination is, what was assumed, warnings), then its walk.
func writeTraceResult(b *strings.Builder, t *theme, r *trace.Result, width int, verbose bool) {
	paragraph(b, t.title, traceHeader(r), width, "", "  ")
	paragraph(b, t.dim, packetLine(r.Packet), width, "", "  ")
	if r.Target != "" {
		if unhandled(r) {
			paragraph(b, t.sev[checks.Warning], "! "+r.Target, width, "", "  ")
		} else {
			paragraph(b, t.dim, r.Target, width, "", "  ")
		}
	}
	for _, a := range r.Assumed {
		paragraph(b, t.dim, "assumed: "+a, width, "", "  ")
	}
	for _, wn := range r.Warnings {
		paragraph(b, t.sev[checks.Warning], "! "+wn, width, "", "  ")
	}
	for i, p := range r.Paths {
		if p.Endpoint != nil && p.Endpoint.Stale {
			why := strings.TrimPrefix(strings.Join(p.Endpoint.Notes, "; "), "stale: ")
			paragraph(b, t.sev[checks.Error], fmt.Sprintf("✗ path %d (%s) ends at %s, a stale endpoint: %s",
				i+1, FormatProbability(p.Probability), p.Destination, why), width, "", "  ")
		}
	}
	b.WriteString("\n")
	if len(r.Paths) == 0 {
		b.WriteString(t.dim.Render("no path"))
		b.WriteString("\n")
		return
	}
	writeWalk(b, t, r, width, verbose)
}

// A walk lays out the paths of a trace as a tree: the steps all paths
// share once, numbered from 1, then one branch per path with its
// probability, its end and its own steps, numbered on from the shared
// ones. Before the first step in each hook a line says why the packet
// entered it. Each step is "N  table chain  rule ... file:line", the
// file:line ending at one column for the whole trace, inside the width;
// a rule too long for its room is cut at a space, with "…".
type walk struct {
	t       *theme
	width   int
	verbose bool
	// wrap wraps the rules too long for their room instead of cutting
	// them (where every word counts: the steps where two walks part).
	wrap  bool
	numW  int // width of the step numbers
	locW  int // width of the file:line column
	lineW int // where the file:line column ends
}

// Gutters of the tree: before a branch's head, before its other lines.
const (
	branchMid  = "├─ "
	branchLast = "└─ "
	gutterMid  = "│  "
	gutterLast = "   "
)

func writeWalk(b *strings.Builder, t *theme, r *trace.Result, width int, verbose bool) {
	k, hk := sharedPrefix(r.Paths)
	wk := &walk{t: t, width: width, verbose: verbose}
	most, natural := 0, 0
	for _, p := range r.Paths {
		most = max(most, len(p.Steps))
	}
	wk.numW = len(fmt.Sprint(most))
	for _, p := range r.Paths {
		for _, s := range p.Steps {
			wk.locW = max(wk.locW, textWidth(Escape(stepLocation(s))))
			natural = max(natural, textWidth(gutterMid)+wk.numW+2+textWidth(stepBody(s, verbose)))
		}
	}
	wk.lineW = min(width, natural+2+wk.locW)
	first := r.Paths[0]
	wk.steps(b, gutterLast, first, 0, k, first.Hops[:hk])
	for i, p := range r.Paths {
		head, gutter := branchMid, gutterMid
		if i == len(r.Paths)-1 {
			head, gutter = branchLast, gutterLast
		}
		wk.branchHead(b, r, p, head, gutter)
		wk.steps(b, gutter, p, k, len(p.Steps), p.Hops[hk:])
		shown := map[string]bool{}
		for _, s := range p.Steps {
			shown[s.Warning] = true
		}
		for _, wn := range p.Warnings {
			if !shown[wn] {
				paragraph(b, t.sev[checks.Warning], "! "+wn, width, gutter, gutter+"  ")
			}
		}
	}
}

// sharedPrefix returns the number of leading steps and hops every path
// takes: the steps up to the first hook a path enters for another reason
// than the others.
func sharedPrefix(paths []trace.Path) (steps, hops int) {
	k := sharedSteps(paths)
	for {
		hk := sharedHops(paths, k)
		cut := k
		for _, p := range paths {
			if hk < len(p.Hops) {
				cut = min(cut, p.Hops[hk].Step)
			}
		}
		if cut == k {
			return k, hk
		}
		k = cut
	}
}

// sharedSteps returns the number of leading steps every path takes.
func sharedSteps(paths []trace.Path) int {
	k := len(paths[0].Steps)
	for _, p := range paths[1:] {
		n := 0
		for n < k && n < len(p.Steps) && sameRule(paths[0].Steps[n], p.Steps[n]) {
			n++
		}
		k = n
	}
	return k
}

// sharedHops returns the number of leading hops every path makes before
// or at its step k.
func sharedHops(paths []trace.Path, k int) int {
	n := 0
	for ; n < len(paths[0].Hops); n++ {
		h := paths[0].Hops[n]
		if h.Step > k {
			return n
		}
		for _, p := range paths[1:] {
			if n >= len(p.Hops) || p.Hops[n] != h {
				return n
			}
		}
	}
	return n
}

// sameRule reports two steps of one trace at the same rule.
func sameRule(a, b trace.Step) bool {
	return a.Table == b.Table && a.Chain == b.Chain && a.Rule == b.Rule && a.File == b.File && a.Line == b.Line &&
		a.Path == b.Path && a.Note == b.Note
}

// steps writes the steps from to to of p after gutter, each after the
// hops that come before it, and the hops after the last one.
func (wk *walk) steps(b *strings.Builder, gutter string, p trace.Path, from, to int, hops []trace.Hop) {
	for i := from; i <= to; i++ {
		for len(hops) > 0 && hops[0].Step <= i {
			wk.hop(b, gutter, hops[0])
			hops = hops[1:]
		}
		if i < to {
			wk.step(b, gutter, i+1, p.Steps[i])
		}
	}
}

func (wk *walk) hop(b *strings.Builder, gutter string, h trace.Hop) {
	first := gutter + wk.t.title.Render("▸ "+Escape(h.Hook))
	if h.Why == "" {
		b.WriteString(first + "\n")
		return
	}
	first += "  "
	paragraph(b, wk.t.dim, h.Why, wk.width, first, gutter+strings.Repeat(" ", 4))
}

// stepWhere is the table and chain of a step ("nat KUBE-SERVICES").
func stepWhere(s trace.Step) string {
	where := s.Table
	if s.Chain != "" {
		where += " " + s.Chain
	}
	return where
}

// stepRule is the rule of a step without what stepWhere says: an
// iptables rule without its "-A CHAIN".
func stepRule(s trace.Step) string {
	if s.Chain != "" {
		if rest, ok := strings.CutPrefix(s.Rule, "-A "+s.Chain+" "); ok {
			return rest
		}
	}
	return s.Rule
}

// stepBody is the escaped text of a step's line between its number and
// its file:line, its rule in full when verbose, else summed up.
func stepBody(s trace.Step, verbose bool) string {
	return Escape(stepWhere(s)) + "  " + Escape(ruleText(s, verbose))
}

// ruleText is the rule of a step as printed: in full when verbose, else
// without its comments (the table and chain name the Service) and with
// its spacing folded.
func ruleText(s trace.Step, verbose bool) string {
	r := stepRule(s)
	if verbose {
		return r
	}
	return strings.Join(strings.Fields(dropComments(r)), " ")
}

// dropComments removes the comments of an iptables rule (-m comment
// --comment TEXT) or an nft rule (comment "TEXT") from r.
func dropComments(r string) string {
	for _, intro := range []string{"-m comment --comment ", "comment "} {
		for from := 0; ; {
			i := strings.Index(r[from:], intro)
			if i < 0 {
				break
			}
			i += from
			if i > 0 && r[i-1] != ' ' {
				from = i + len(intro)
				continue
			}
			end := i + len(intro)
			if end < len(r) && r[end] == '"' {
				end++
				for end < len(r) && r[end] != '"' {
					if r[end] == '\\' {
						end++
					}
					end++
				}
				end = min(end+1, len(r))
			} else if intro == "comment " {
				from = end // a word named comment, not a comment
				continue
			} else {
				for end < len(r) && r[end] != ' ' {
					end++
				}
			}
			r = r[:i] + strings.TrimLeft(r[end:], " ")
			from = i
		}
	}
	return strings.TrimRight(r, " ")
}

// step writes step n: its line, then its note and warning.
func (wk *walk) step(b *strings.Builder, gutter string, n int, s trace.Step) {
	t := wk.t
	num := fmt.Sprintf("%*d", wk.numW, n)
	lead := gutter + num + "  "
	where, rule, loc := Escape(stepWhere(s)), Escape(ruleText(s, wk.verbose)), Escape(stepLocation(s))
	room := wk.lineW - textWidth(lead) - 2 - wk.locW
	var more []string // the wrapped rule's other lines
	moreIndent := ""
	switch ruleRoom := room - textWidth(where) - 2; {
	case wk.verbose:
	case wk.wrap && ruleRoom >= 16:
		lines := wrapWords(rule, ruleRoom)
		rule, more = lines[0], lines[1:]
		moreIndent = strings.Repeat(" ", wk.numW+2+textWidth(where)+2)
	case wk.wrap && textWidth(rule) > ruleRoom:
		moreIndent = strings.Repeat(" ", wk.numW+4)
		more = wrapWords(rule, wk.width-textWidth(gutter)-textWidth(moreIndent))
		rule = ""
	default:
		rule = cutWords(rule, ruleRoom)
	}
	body := where
	if rule != "" {
		body += "  " + rule
	}
	line := gutter + t.dim.Render(num) + "  " + t.checkStyle.Render(where)
	if rule != "" {
		line += "  " + rule
	}
	bodyW := textWidth(lead) + textWidth(body)
	switch {
	case loc == "":
	case textWidth(body) <= room:
		line += strings.Repeat(" ", wk.lineW-bodyW-textWidth(loc)) + t.evidenceFile.Render(loc)
	case wk.verbose || bodyW+2+textWidth(loc) <= wk.width:
		line += "  " + t.evidenceFile.Render(loc)
	default:
		// The chain's name alone leaves no room: the file:line goes
		// under, at its column.
		line += "\n" + gutter + strings.Repeat(" ", max(0, wk.lineW-textWidth(gutter)-textWidth(loc))) + t.evidenceFile.Render(loc)
	}
	b.WriteString(line + "\n")
	for _, l := range more {
		b.WriteString(gutter + moreIndent + l + "\n")
	}
	indent := gutter + strings.Repeat(" ", wk.numW+2)
	if s.Note != "" {
		paragraph(b, t.dim, "→ "+s.Note, wk.width, indent, indent+"  ")
	}
	if s.Warning != "" {
		paragraph(b, t.sev[checks.Warning], "! "+s.Warning, wk.width, indent, indent+"  ")
	}
}

// cutWords returns s if it is at most width columns wide, else its
// longest prefix ending at a space that fits with "…" after it ("…"
// alone when no word does, "" when not even that fits).
func cutWords(s string, width int) string {
	if textWidth(s) <= width {
		return s
	}
	if width < 1 {
		return ""
	}
	cut := ""
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' {
			continue
		}
		head := strings.TrimRight(s[:i], " ")
		if head == "" {
			continue
		}
		if textWidth(head)+2 > width {
			break
		}
		cut = head
	}
	if cut == "" {
		return "…"
	}
	return cut + " …"
}

// branchHead writes the head of a path's branch: its probability and
// end, what the endpoint is, and the conditions it depends on.
func (wk *walk) branchHead(b *strings.Builder, r *trace.Result, p trace.Path, head, gutter string) {
	t := wk.t
	end := pathEnd(r, p)
	st := verdictStyle(t, p.Verdict)
	stale := p.Endpoint != nil && p.Endpoint.Stale
	switch {
	case stale:
		st = t.sev[checks.Error]
	case p.Verdict == trace.VerdictAccept && r.TargetKind != "":
		st = t.sev[checks.Warning]
	}
	paragraph(b, st, FormatProbability(p.Probability)+"  "+end, wk.width, head, gutter+"  ")
	if p.Endpoint != nil {
		what := "endpoint"
		if p.Endpoint.Service != "" {
			what += " of " + p.Endpoint.Service
		}
		if len(p.Endpoint.Notes) > 0 {
			what += ": " + strings.Join(p.Endpoint.Notes, ", ")
		}
		est := t.dim
		switch {
		case stale:
			what = "✗ " + what
			est = t.sev[checks.Error]
		case !slices.Contains(p.Endpoint.Notes, "ready"):
			est = t.sev[checks.Warning]
		}
		paragraph(b, est, what, wk.width, gutter+"  ", gutter+"    ")
	}
	for _, c := range p.Conditions {
		paragraph(b, t.plain, "if "+c, wk.width, gutter+"  ", gutter+"     ")
	}
}

// pathEnd says how a path ends: "DNAT → 10.244.1.5:80 · masquerade",
// "ACCEPT untouched → ..." with why nothing rewrote it.
func pathEnd(r *trace.Result, p trace.Path) string {
	var s string
	switch p.Verdict {
	case trace.VerdictDNAT:
		s = "DNAT → " + p.Destination
		if p.Endpoint != nil && p.Endpoint.Stale {
			s += " (STALE endpoint)"
		}
	case trace.VerdictLocal:
		s = "LOCAL: delivered to the node, " + p.Destination
	case trace.VerdictAccept:
		s = "ACCEPT untouched → " + p.Destination
		if r.Undetermined != "" {
			s = "ACCEPT untouched as far as the inputs show → " + p.Destination + ": no verdict, the rules that would rewrite it may lie outside a partial input"
			break
		}
		switch r.TargetKind {
		case trace.TargetNoService:
			s += ": no Service has this address, kube-proxy's rules let the packet pass as it is"
		case trace.TargetNoSuchPort:
			s += ": the Service has no such port (its ports are listed above), kube-proxy's rules let the packet pass as it is"
		case trace.TargetService, trace.TargetNodePort:
			s += ": no rule rewrote it to an endpoint of the Service"
		}
	default:
		s = string(p.Verdict)
		if p.Destination != "" {
			s += " " + p.Destination
		}
		if r.Undetermined != "" {
			s += " as far as the inputs show: no verdict, rules before it may lie outside a partial input"
		}
	}
	if p.Masquerade {
		s += " · masquerade"
	}
	if p.SNAT != "" {
		s += " · SNAT to " + p.SNAT
	}
	return s
}

// verdictStyle colours a verdict: green when the packet reaches an
// endpoint, red when it is dropped or rejected.
func verdictStyle(t *theme, v trace.Verdict) lipgloss.Style {
	switch v {
	case trace.VerdictDNAT, trace.VerdictLocal:
		return t.ok
	case trace.VerdictDrop, trace.VerdictReject:
		return t.sev[checks.Error]
	}
	return t.plain
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func stepLocation(s trace.Step) string {
	loc := s.File
	if loc == "" {
		return ""
	}
	if s.Line > 0 {
		loc += fmt.Sprintf(":%d", s.Line)
	}
	if s.Path != "" {
		loc += ":" + s.Path
	}
	return loc
}

// FormatProbability prints a probability as a small fraction when it is
// one ("1/3 (33.3%)"), else as a percentage.
func FormatProbability(p float64) string {
	pct := fmt.Sprintf("%.1f%%", p*100)
	switch {
	case p == 0:
		return "0"
	case math.Abs(p-1) < 1e-9:
		return "1 (100%)"
	}
	for n := 2; n <= 64; n++ {
		k := math.Round(p * float64(n))
		if k >= 1 && k < float64(n) && math.Abs(p-k/float64(n)) < 1e-9 && gcd(int(k), n) == 1 {
			return fmt.Sprintf("%d/%d (%s)", int(k), n, pct)
		}
	}
	return pct
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// RenderCompareTable writes comparisons for a terminal: the outcomes with
// the probability on each side, then, for every outcome reached
// differently, the first step where the paths part; opts.Verbose adds
// both walks.
func RenderCompareTable(w io.Writer, cmps []*trace.Comparison, opts Options) error {
	t := newTheme(w, opts.Color)
	width := traceWidth(opts)
	var b strings.Builder
	for i, c := range cmps {
		if i > 0 {
			b.WriteString("\n")
		}
		head := "proxyscan trace --compare"
		if c.Actual.Node != "" {
			head += " · node " + c.Actual.Node
		}
		head += " · mode " + c.Actual.Mode
		paragraph(&b, t.title, head, width, "", "  ")
		paragraph(&b, t.dim, packetLine(c.Packet), width, "", "  ")
		if c.Actual.Target != "" {
			paragraph(&b, t.dim, c.Actual.Target, width, "", "  ")
		}
		b.WriteString("\n")
		b.WriteString(outcomesTable(t, c, width))
		if !c.Diverged {
			paragraph(&b, t.ok, "✓ the captured rules take the packet where the expected rules do", width, "", "  ")
		} else {
			paragraph(&b, t.sev[checks.Error], "✗ the captured rules and the expected rules diverge", width, "", "  ")
			for _, d := range c.Divergences {
				b.WriteString("\n")
				if d.Note != "" {
					paragraph(&b, t.plain, d.Outcome+": "+d.Note, width, "", "  ")
					continue
				}
				paragraph(&b, t.plain, fmt.Sprintf("%s: first difference at step %d", d.Outcome, d.Index+1), width, "", "  ")
				wk := &walk{t: t, width: width, verbose: opts.Verbose, wrap: true, numW: len(fmt.Sprint(d.Index + 1))}
				var natural int
				for _, s := range []*trace.Step{d.Actual, d.Expected} {
					if s != nil {
						wk.locW = max(wk.locW, textWidth(Escape(stepLocation(*s))))
						natural = max(natural, 4+wk.numW+2+textWidth(stepBody(*s, opts.Verbose)))
					}
				}
				wk.lineW = min(width, natural+2+wk.locW)
				for _, side := range []struct {
					name string
					s    *trace.Step
				}{{"captured", d.Actual}, {"expected", d.Expected}} {
					b.WriteString("  " + side.name + ":\n")
					if side.s == nil {
						b.WriteString("    (path ends)\n")
						continue
					}
					wk.step(&b, "    ", d.Index+1, *side.s)
				}
			}
		}
		if !opts.Verbose {
			b.WriteString(t.dim.Render("(-v shows both walks)") + "\n")
			continue
		}
		for _, side := range []struct {
			name string
			r    *trace.Result
		}{{"captured rules", c.Actual}, {"expected rules", c.Expected}} {
			b.WriteString("\n")
			b.WriteString(t.title.Render("── " + side.name))
			b.WriteString("\n")
			writeTraceResult(&b, t, side.r, width, true)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// outcomesTable lists the outcomes of a comparison with the probability
// of each on both sides.
func outcomesTable(t *theme, c *trace.Comparison, width int) string {
	n := len(c.Outcomes)
	cols := []column{
		{header: "#", cells: make([]string, n), key: true},
		{header: "VERDICT", cells: make([]string, n), key: true},
		{header: "DESTINATION", cells: make([]string, n), key: true},
		{header: "MASQ", cells: make([]string, n), drop: 1},
		{header: "CAPTURED", cells: make([]string, n)},
		{header: "EXPECTED", cells: make([]string, n)},
		{header: "", cells: make([]string, n)},
	}
	differs := make([]bool, n)
	for j, o := range c.Outcomes {
		same := "same"
		if d := o.Actual - o.Expected; d > 1e-6 || d < -1e-6 {
			same, differs[j] = "differs", true
		}
		for i, v := range []string{fmt.Sprint(j + 1), string(o.Verdict), o.Destination, yesNo(o.Masquerade),
			FormatProbability(o.Actual), FormatProbability(o.Expected), same} {
			cols[i].cells[j] = v
		}
	}
	cols[1].style = func(row int) lipgloss.Style { return verdictStyle(t, c.Outcomes[row].Verdict) }
	cols[6].style = func(row int) lipgloss.Style {
		if differs[row] {
			return t.sev[checks.Error]
		}
		return t.plain
	}
	return fitTable(t, cols, width)
}
