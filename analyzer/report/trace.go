package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/lipgloss/table"

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

// RenderTraceTable writes traces for a terminal: per result a header, a
// table of the paths (probability, verdict, destination, masquerade,
// conditions), then each path's steps with their file and line.
func RenderTraceTable(w io.Writer, results []*trace.Result, opts Options) error {
	t := newTheme(w, opts.Color)
	width := opts.Width
	if width <= 0 {
		width = 120
	}
	var b strings.Builder
	for i, r := range results {
		if i > 0 {
			b.WriteString("\n")
		}
		writeTraceResult(&b, t, r, width)
	}
	_, err := io.WriteString(w, b.String())
	return err
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

func writeTraceResult(b *strings.Builder, t *theme, r *trace.Result, width int) {
	b.WriteString(t.title.Render(Escape(traceHeader(r))))
	b.WriteString("\n")
	b.WriteString(t.dim.Render(Escape(packetLine(r.Packet))))
	b.WriteString("\n")
	if r.Target != "" {
		b.WriteString(t.dim.Render(Escape(r.Target)))
		b.WriteString("\n")
	}
	for _, a := range r.Assumed {
		b.WriteString(t.dim.Render(Escape("assumed: " + a)))
		b.WriteString("\n")
	}
	for _, wn := range r.Warnings {
		b.WriteString(t.sev[checks.Warning].Render(Escape("! " + wn)))
		b.WriteString("\n")
	}
	b.WriteString("\n")
	if len(r.Paths) == 0 {
		b.WriteString(t.dim.Render("no path"))
		b.WriteString("\n")
		return
	}
	b.WriteString(pathsTable(t, r.Paths, width))
	b.WriteString("\n")
	for i, p := range r.Paths {
		b.WriteString("\n")
		writePathSteps(b, t, i+1, p)
	}
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
	return t.cell.Padding(0)
}

func pathsTable(t *theme, paths []trace.Path, width int) string {
	headers := []string{"#", "PROBABILITY", "VERDICT", "DESTINATION", "MASQ", "CONDITIONS"}
	var rows [][]string
	destW := 13
	for i, p := range paths {
		cond := strings.Join(p.Conditions, "; ")
		if cond == "" {
			cond = "-"
		}
		rows = append(rows, []string{fmt.Sprint(i + 1), FormatProbability(p.Probability),
			verdictStyle(t, p.Verdict).Render(Escape(string(p.Verdict))), Escape(p.Destination), yesNo(p.Masquerade), Escape(cond)})
		destW = max(destW, len(p.Destination)+2)
	}
	fixed := map[int]int{0: 4, 1: 18, 2: 9, 3: destW, 4: 6}
	return borderedTable(t, headers, rows, fixed, width, 16)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// writePathSteps lists the steps of one path, unwrapped so that rules can
// be copied, each with its file and line.
func writePathSteps(b *strings.Builder, t *theme, n int, p trace.Path) {
	head := fmt.Sprintf("path %d · %s · %s", n, FormatProbability(p.Probability), p.Verdict)
	if p.Destination != "" {
		head += " " + p.Destination
	}
	if p.Masquerade {
		head += " · masquerade"
	}
	if p.SNAT != "" {
		head += " · SNAT to " + p.SNAT
	}
	b.WriteString(verdictStyle(t, p.Verdict).Render(Escape(head)))
	b.WriteString("\n")
	for _, c := range p.Conditions {
		b.WriteString("    if " + Escape(c) + "\n")
	}
	for _, s := range p.Steps {
		writeStep(b, t, "    ", s)
	}
}

func writeStep(b *strings.Builder, t *theme, indent string, s trace.Step) {
	where := s.Table
	if s.Chain != "" {
		where += " " + s.Chain
	}
	b.WriteString(indent)
	b.WriteString(t.checkStyle.Render(Escape(where)))
	b.WriteString("  ")
	b.WriteString(Escape(s.Rule))
	if loc := stepLocation(s); loc != "" {
		b.WriteString("  ")
		b.WriteString(t.evidenceFile.Render(Escape(loc)))
	}
	b.WriteString("\n")
	if s.Note != "" {
		b.WriteString(indent + "  " + t.dim.Render(Escape("→ "+s.Note)) + "\n")
	}
	if s.Warning != "" {
		b.WriteString(indent + "  " + t.sev[checks.Warning].Render(Escape("! "+s.Warning)) + "\n")
	}
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
// the probability on each side, the first diverging steps, then both
// traces.
func RenderCompareTable(w io.Writer, cmps []*trace.Comparison, opts Options) error {
	t := newTheme(w, opts.Color)
	width := opts.Width
	if width <= 0 {
		width = 120
	}
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
		b.WriteString(t.title.Render(Escape(head)))
		b.WriteString("\n")
		b.WriteString(t.dim.Render(Escape(packetLine(c.Packet))))
		b.WriteString("\n\n")
		var rows [][]string
		for j, o := range c.Outcomes {
			same := "same"
			if d := o.Actual - o.Expected; d > 1e-6 || d < -1e-6 {
				same = t.sev[checks.Error].Render("differs")
			}
			rows = append(rows, []string{fmt.Sprint(j + 1), verdictStyle(t, o.Verdict).Render(Escape(string(o.Verdict))), Escape(o.Destination),
				yesNo(o.Masquerade), FormatProbability(o.Actual), FormatProbability(o.Expected), same})
		}
		tbl := table.New().
			Border(lipgloss.RoundedBorder()).
			BorderStyle(t.border).
			Headers("#", "VERDICT", "DESTINATION", "MASQ", "CAPTURED", "EXPECTED", "").
			Rows(rows...).
			StyleFunc(func(row, col int) lipgloss.Style {
				if row == table.HeaderRow {
					return t.header
				}
				return t.cell
			})
		b.WriteString(tbl.Render())
		b.WriteString("\n")
		if !c.Diverged {
			b.WriteString(t.ok.Render("✓ the captured rules take the packet where the expected rules do"))
			b.WriteString("\n")
		} else {
			b.WriteString(t.sev[checks.Error].Render("✗ the captured rules and the expected rules diverge"))
			b.WriteString("\n")
			for _, d := range c.Divergences {
				if d.Note != "" {
					b.WriteString(Escape(fmt.Sprintf("\n%s: %s\n", d.Outcome, d.Note)))
					continue
				}
				b.WriteString(Escape(fmt.Sprintf("\n%s: first difference at step %d\n", d.Outcome, d.Index+1)))
				b.WriteString("  captured:\n")
				if d.Actual != nil {
					writeStep(&b, t, "    ", *d.Actual)
				} else {
					b.WriteString("    (path ends)\n")
				}
				b.WriteString("  expected:\n")
				if d.Expected != nil {
					writeStep(&b, t, "    ", *d.Expected)
				} else {
					b.WriteString("    (path ends)\n")
				}
			}
		}
		b.WriteString("\n")
		b.WriteString(t.title.Render("captured rules"))
		b.WriteString("\n")
		writeTraceResult(&b, t, c.Actual, width)
		b.WriteString("\n")
		b.WriteString(t.title.Render("expected rules"))
		b.WriteString("\n")
		writeTraceResult(&b, t, c.Expected, width)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// borderedTable renders rows under headers in a bordered table: the
// columns of fixed have those widths and the last one takes what is left
// of width, at least minLast.
func borderedTable(t *theme, headers []string, rows [][]string, fixed map[int]int, width, minLast int) string {
	rest := width - 1 - len(headers)
	for _, w := range fixed {
		rest -= w
	}
	last := len(headers) - 1
	tbl := table.New().
		Border(lipgloss.RoundedBorder()).
		BorderStyle(t.border).
		Headers(headers...).
		Rows(rows...).
		StyleFunc(func(row, col int) lipgloss.Style {
			st := t.cell
			if row == table.HeaderRow {
				st = t.header
			}
			if w, ok := fixed[col]; ok {
				st = st.Width(w)
			}
			if col == last {
				st = st.Width(max(minLast, rest))
			}
			return st
		})
	return tbl.Render()
}
