package report

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/lipgloss/table"
	"github.com/muesli/termenv"

	"github.com/proxyscan/proxyscan/analyzer/checks"
)

// theme holds the styles of the terminal output, all made by one renderer
// so that colour follows Options.Color.
type theme struct {
	re                       *lipgloss.Renderer
	title, dim, ok, advice   lipgloss.Style
	header, cell, border     lipgloss.Style
	sev                      map[checks.Severity]lipgloss.Style
	evidenceFile, checkStyle lipgloss.Style
}

func newTheme(w io.Writer, color bool) *theme {
	re := lipgloss.NewRenderer(w)
	if color {
		re.SetColorProfile(termenv.ANSI256)
	} else {
		re.SetColorProfile(termenv.Ascii)
	}
	t := &theme{re: re}
	t.title = re.NewStyle().Bold(true)
	t.dim = re.NewStyle().Foreground(lipgloss.Color("245"))
	t.ok = re.NewStyle().Foreground(lipgloss.Color("34")).Bold(true)
	t.advice = re.NewStyle().Foreground(lipgloss.Color("111"))
	t.header = re.NewStyle().Bold(true).Padding(0, 1)
	t.cell = re.NewStyle().Padding(0, 1)
	t.border = re.NewStyle().Foreground(lipgloss.Color("240"))
	t.evidenceFile = re.NewStyle().Foreground(lipgloss.Color("245")).Underline(color)
	t.checkStyle = re.NewStyle().Foreground(lipgloss.Color("75"))
	t.sev = map[checks.Severity]lipgloss.Style{
		checks.Error:   re.NewStyle().Foreground(lipgloss.Color("196")).Bold(true),
		checks.Warning: re.NewStyle().Foreground(lipgloss.Color("214")).Bold(true),
		checks.Info:    re.NewStyle().Foreground(lipgloss.Color("39")),
	}
	return t
}

// RenderTable writes the report for a terminal: a header, the findings in
// a table grouped by severity and service (each with its evidence and
// advice), then skipped checks, notes and the summary.
func RenderTable(w io.Writer, r *Report, opts Options) error {
	t := newTheme(w, opts.Color)
	width := opts.Width
	if width <= 0 {
		width = 120
	}
	var b strings.Builder
	b.WriteString(t.title.Render(Escape(header(r))))
	b.WriteString("\n")
	b.WriteString(t.dim.Render(Escape(inputsLine(r))))
	b.WriteString("\n\n")

	if len(r.Findings) == 0 {
		b.WriteString(verdictLines(t, r))
	} else {
		fs := sortedForTable(r)
		b.WriteString(findingsTable(t, fs, len(r.Nodes) > 1, width))
		b.WriteString("\n\n")
		b.WriteString(details(t, fs, width))
	}
	b.WriteString(migrationSection(t, r, width))
	b.WriteString(driftTable(t, r, width))
	b.WriteString(statusLines(t, r))
	b.WriteString(summaryLine(t, r))
	_, err := io.WriteString(w, b.String())
	return err
}

// verdictLines says, when there is no finding, whether that is a clean
// bill of health: "✓ no findings" only when what matters for the node's
// mode was checked on complete inputs; otherwise what was not checked and
// the inputs (with the command that gets each) that would settle it.
func verdictLines(t *theme, r *Report) string {
	if !r.Inconclusive() {
		return t.ok.Render("✓ no findings") + "\n"
	}
	var b strings.Builder
	b.WriteString(t.sev[checks.Warning].Render("? " + inconclusiveText))
	b.WriteString("\n")
	gaps, needs := r.gaps()
	for _, g := range gaps {
		b.WriteString("  - " + Escape(g) + "\n")
	}
	if len(needs) > 0 {
		b.WriteString("to settle it, add:\n")
		for _, n := range needs {
			b.WriteString("  - " + Escape(n.Input) + ": " + t.dim.Render(Escape(n.Command)) + "\n")
		}
	}
	return b.String()
}

func header(r *Report) string {
	var parts []string
	if r.Node != "" {
		parts = append(parts, "node "+r.Node)
	} else if len(r.Nodes) > 1 {
		parts = append(parts, fmt.Sprintf("%d nodes", len(r.Nodes)))
	}
	if r.Mode != "" {
		mode := "mode " + r.Mode
		if r.ModeOrigin == "assumed" {
			mode += " (assumed)"
		}
		parts = append(parts, mode)
	}
	if r.KubeProxyVersion != "" {
		parts = append(parts, "kube-proxy "+r.KubeProxyVersion)
	}
	if len(parts) == 0 {
		return "proxyscan analyze"
	}
	return "proxyscan analyze · " + strings.Join(parts, " · ")
}

func inputsLine(r *Report) string {
	counts := map[string]int{}
	for _, in := range r.Inputs {
		counts[string(in.Kind)]++
	}
	var kinds []string
	for k, n := range counts {
		kinds = append(kinds, fmt.Sprintf("%s ×%d", k, n))
	}
	sort.Strings(kinds)
	return fmt.Sprintf("inputs: %d files (%s)", len(r.Inputs), strings.Join(kinds, ", "))
}

// sortedForTable orders findings by severity, node, service and check.
func sortedForTable(r *Report) []checks.Finding {
	fs := append([]checks.Finding(nil), r.Findings...)
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.Severity != b.Severity {
			return a.Severity > b.Severity
		}
		if a.Node != b.Node {
			return a.Node < b.Node
		}
		if a.Service != b.Service {
			return a.Service < b.Service
		}
		return a.Check < b.Check
	})
	return fs
}

// findingsTable renders one row per finding, grouped by severity and
// service (repeated cells are left blank so that groups stand out); the
// number in the first column refers to the details below the table.
func findingsTable(t *theme, fs []checks.Finding, multi bool, width int) string {
	headers := []string{"#", "SEVERITY", "SERVICE", "CHECK", "FINDING"}
	if multi {
		headers = []string{"#", "SEVERITY", "NODE", "SERVICE", "CHECK", "FINDING"}
	}
	var rows [][]string
	var prevSev checks.Severity
	prevSvc, prevNode := "\x00", "\x00"
	for i, f := range fs {
		sev, node := t.sev[f.Severity].Render(f.Severity.String()), Escape(f.Node)
		svc := f.Service
		if svc == "" {
			svc = "-"
		} else if f.Protocol != "" {
			svc += " (" + f.Protocol + ")"
		}
		svc = Escape(svc)
		if f.Severity == prevSev {
			sev = ""
			if f.Node == prevNode {
				node = ""
				if f.Service == prevSvc {
					svc = ""
				}
			}
		}
		prevSev, prevSvc, prevNode = f.Severity, f.Service, f.Node
		msg := f.Message
		if f.Endpoint != "" && !strings.Contains(msg, f.Endpoint) {
			msg += " [" + f.Endpoint + "]"
		}
		msg = Escape(msg)
		check := t.checkStyle.Render(Escape(f.Check))
		row := []string{fmt.Sprint(i + 1), sev, svc, check, msg}
		if multi {
			row = []string{fmt.Sprint(i + 1), sev, node, svc, check, msg}
		}
		rows = append(rows, row)
	}
	svcW, checkW, nodeW := 9, 7, 6
	for _, f := range fs {
		svcW = max(svcW, min(len(f.Service)+len(f.Protocol)+5, 28))
		checkW = max(checkW, len(f.Check)+2)
		nodeW = max(nodeW, min(len(f.Node)+2, 24))
	}
	fixed := map[int]int{0: 4, 1: 10, 2: svcW, 3: checkW}
	if multi {
		fixed = map[int]int{0: 4, 1: 10, 2: nodeW, 3: svcW, 4: checkW}
	}
	return fitTable(t, headers, rows, fixed, width, 24)
}

// fitTable renders rows under headers: the columns of fixed have those
// widths and the last one takes what is left of width, at least minLast.
func fitTable(t *theme, headers []string, rows [][]string, fixed map[int]int, width, minLast int) string {
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

// details writes each finding's evidence (unwrapped, so that rules can be
// copied) and advice.
func details(t *theme, fs []checks.Finding, width int) string {
	var b strings.Builder
	for i, f := range fs {
		head := fmt.Sprintf("[%d] %s · %s", i+1, f.Severity, f.Check)
		if f.Service != "" {
			head += " · " + f.Service
		}
		if f.Node != "" {
			head += " · node " + f.Node
		}
		b.WriteString(t.sev[f.Severity].Render(Escape(head)))
		b.WriteString("\n    ")
		b.WriteString(strings.ReplaceAll(wrapText(Escape(f.Message), width-4), "\n", "\n    "))
		b.WriteString("\n")
		for _, e := range f.Evidence {
			loc := e.File
			if e.Line > 0 {
				loc += fmt.Sprintf(":%d", e.Line)
			}
			if e.Path != "" {
				loc += " " + e.Path
			}
			b.WriteString("    ")
			b.WriteString(t.evidenceFile.Render(Escape(loc)))
			if e.Text != "" {
				b.WriteString("\n      ")
				b.WriteString(t.dim.Render(Escape(e.Text)))
			}
			b.WriteString("\n")
		}
		if f.Advice != "" {
			for j, line := range strings.Split(wrapText("→ "+Escape(f.Advice), width-6), "\n") {
				if j == 0 {
					b.WriteString("    ")
				} else {
					b.WriteString("      ")
				}
				b.WriteString(t.advice.Render(line))
				b.WriteString("\n")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// wrapText breaks s into lines of at most width columns at spaces.
func wrapText(s string, width int) string {
	if width < 20 {
		width = 20
	}
	var b strings.Builder
	n := 0
	for i, word := range strings.Fields(s) {
		if i > 0 {
			if n+1+len([]rune(word)) > width {
				b.WriteByte('\n')
				n = 0
			} else {
				b.WriteByte(' ')
				n++
			}
		}
		b.WriteString(word)
		n += len([]rune(word))
	}
	return b.String()
}

func statusLines(t *theme, r *Report) string {
	var b strings.Builder
	statuses := r.Checks
	if len(r.Nodes) > 1 {
		statuses = nil
		for _, n := range r.Nodes {
			for _, s := range n.Checks {
				s.ID = n.Node + ": " + s.ID
				statuses = append(statuses, s)
			}
		}
	}
	for _, s := range statuses {
		if s.State == "skipped" {
			b.WriteString(t.dim.Render(Escape(fmt.Sprintf("skipped %s: %s", s.ID, s.Reason))))
			b.WriteString("\n")
		}
		for _, n := range s.Notes {
			b.WriteString(t.dim.Render(Escape(fmt.Sprintf("note (%s): %s", s.ID, n))))
			b.WriteString("\n")
		}
	}
	notes := r.Notes
	for _, n := range r.Nodes {
		for _, x := range n.Notes {
			notes = append(notes, n.Node+": "+x)
		}
	}
	for _, n := range notes {
		b.WriteString(t.dim.Render(Escape("note: " + n)))
		b.WriteString("\n")
	}
	for _, u := range r.Unknown {
		b.WriteString(t.sev[checks.Warning].Render("unknown input: ") + Escape(u) + t.dim.Render(" (kind not recognised, not analysed)"))
		b.WriteString("\n")
	}
	return b.String()
}

func summaryLine(t *theme, r *Report) string {
	ran, skipped := 0, 0
	count := func(list []checks.Status) {
		for _, s := range list {
			if s.State == "skipped" {
				skipped++
			} else {
				ran++
			}
		}
	}
	count(r.Checks)
	for _, n := range r.Nodes {
		count(n.Checks)
	}
	parts := []string{
		t.sev[checks.Error].Render(plural(r.Summary.Error, "error")),
		t.sev[checks.Warning].Render(plural(r.Summary.Warning, "warning")),
		t.sev[checks.Info].Render(fmt.Sprintf("%d info", r.Summary.Info)),
	}
	return fmt.Sprintf("%s · %d checks ran, %d skipped\n", strings.Join(parts, ", "), ran, skipped)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
