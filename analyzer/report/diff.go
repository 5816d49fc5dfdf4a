package report

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/lipgloss/table"

	"github.com/proxyscan/proxyscan/analyzer/diff"
	"github.com/proxyscan/proxyscan/analyzer/model"
)

// DiffFormats are the output formats of `proxyscan diff`.
var DiffFormats = Diffs.Formats()

func diffSideText(s *diff.Side) string {
	if s == nil {
		return "absent"
	}
	parts := []string{}
	if s.Mode != "" {
		parts = append(parts, "mode "+s.Mode)
	}
	if s.KubeProxyVersion != "" {
		parts = append(parts, "kube-proxy "+s.KubeProxyVersion)
	}
	parts = append(parts, fmt.Sprintf("%d files", s.Inputs))
	if s.Bundle != "" {
		parts = append([]string{s.Bundle}, parts...)
	}
	return strings.Join(parts, ", ")
}

func diffTitle(r *diff.Result) string {
	t := "proxyscan diff"
	if r.OldPath != "" || r.NewPath != "" {
		t += " " + r.OldPath + " → " + r.NewPath
	}
	return t
}

func diffSummary(r *diff.Result) string {
	if len(r.Changes) == 0 && r.Incomplete {
		return "no differences in what was compared (see the notes for what was not)"
	}
	if len(r.Changes) == 0 {
		return "no differences"
	}
	var parts []string
	for _, k := range sortedKinds(r.Summary) {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, r.Summary[k]))
	}
	n := len(r.Changes)
	word := "differences"
	if n == 1 {
		word = "difference"
	}
	return fmt.Sprintf("%d %s (%s)", n, word, strings.Join(parts, ", "))
}

func sortedKinds(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return diff.KindRank(out[i]) < diff.KindRank(out[j]) })
	return out
}

// RenderDiffTable writes a diff for a terminal: the node pairs, one row
// per change, then the evidence, the notes and the summary.
func RenderDiffTable(w io.Writer, r *diff.Result, opts Options) error {
	t := newTheme(w, opts.Color)
	re := t.re
	bold, dim := t.title, t.dim
	add := re.NewStyle().Foreground(lipgloss.Color("34"))
	del := re.NewStyle().Foreground(lipgloss.Color("196"))
	chg := re.NewStyle().Foreground(lipgloss.Color("214"))
	width := opts.Width
	if width <= 0 {
		width = 120
	}
	var b strings.Builder
	b.WriteString(bold.Render(Escape(diffTitle(r))) + "\n")
	for _, p := range r.Pairs {
		b.WriteString(dim.Render(Escape(fmt.Sprintf("node %s: old %s; new %s", unknownIfEmpty(p.Node), diffSideText(p.Old), diffSideText(p.New)))) + "\n")
	}
	b.WriteString("\n")
	if len(r.Changes) == 0 && r.Incomplete {
		b.WriteString(chg.Bold(true).Render("? no differences in what was compared: part of a data plane was not (see the notes)") + "\n")
	} else if len(r.Changes) == 0 {
		b.WriteString(add.Bold(true).Render("✓ no differences") + "\n")
	} else {
		style := func(kind string) lipgloss.Style {
			switch {
			case strings.HasSuffix(kind, "-added") || kind == diff.FindingResolved:
				return add
			case strings.HasSuffix(kind, "-removed") || kind == diff.FindingAppeared:
				return del
			}
			return chg
		}
		var rows [][]string
		for i, ch := range r.Changes {
			msg := ch.Message
			for _, d := range ch.Details {
				msg += "\n· " + d
			}
			rows = append(rows, []string{fmt.Sprint(i + 1), style(ch.Kind).Render(Escape(ch.Kind)), Escape(orDash(ch.Node)), Escape(msg)})
		}
		kindW := 8
		for _, ch := range r.Changes {
			kindW = max(kindW, len(ch.Kind)+2)
		}
		nodeW := 6
		for _, ch := range r.Changes {
			nodeW = max(nodeW, min(len(ch.Node)+2, 24))
		}
		rest := max(30, width-1-4-4-kindW-nodeW)
		tbl := table.New().Border(lipgloss.RoundedBorder()).BorderStyle(re.NewStyle().Foreground(lipgloss.Color("240"))).
			Headers("#", "CHANGE", "NODE", "WHAT").Rows(rows...).
			StyleFunc(func(row, col int) lipgloss.Style {
				st := re.NewStyle().Padding(0, 1)
				if row == table.HeaderRow {
					st = st.Bold(true)
				}
				switch col {
				case 0:
					return st.Width(4)
				case 1:
					return st.Width(kindW)
				case 2:
					return st.Width(nodeW)
				}
				return st.Width(rest)
			})
		b.WriteString(tbl.Render() + "\n\n")
		for i, ch := range r.Changes {
			if len(ch.OldEvidence)+len(ch.NewEvidence) == 0 {
				continue
			}
			b.WriteString(style(ch.Kind).Render(Escape(fmt.Sprintf("[%d] %s", i+1, ch.Kind))) + "\n")
			for _, side := range []struct {
				name string
				evs  []model.Evidence
			}{{"old", ch.OldEvidence}, {"new", ch.NewEvidence}} {
				for _, e := range side.evs {
					b.WriteString("    " + side.name + " " + dim.Render(Escape(evidenceLoc(e))) + "\n")
					if e.Text != "" {
						b.WriteString("      " + Escape(e.Text) + "\n")
					}
				}
			}
		}
		b.WriteString("\n")
	}
	for _, n := range r.Notes {
		b.WriteString(dim.Render(Escape("note: "+n)) + "\n")
	}
	b.WriteString(Escape(diffSummary(r)) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// RenderDiffMarkdown writes a diff as markdown for a ticket or a merge
// request.
func RenderDiffMarkdown(w io.Writer, r *diff.Result, _ Options) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n**%s**\n\n", mdText(diffTitle(r)), mdText(diffSummary(r)))
	b.WriteString("| node | old | new |\n|---|---|---|\n")
	for _, p := range r.Pairs {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", mdCell(unknownIfEmpty(p.Node)), mdCell(diffSideText(p.Old)), mdCell(diffSideText(p.New)))
	}
	b.WriteString("\n")
	if len(r.Changes) > 0 {
		b.WriteString("## Changes\n\n")
		for _, ch := range r.Changes {
			fmt.Fprintf(&b, "- `%s`", ch.Kind)
			if ch.Node != "" {
				fmt.Fprintf(&b, " on `%s`", ch.Node)
			}
			fmt.Fprintf(&b, ": %s\n", mdText(ch.Message))
			for _, d := range ch.Details {
				fmt.Fprintf(&b, "  - %s\n", mdText(d))
			}
			var ev []string
			for _, side := range []struct {
				name string
				evs  []model.Evidence
			}{{"old", ch.OldEvidence}, {"new", ch.NewEvidence}} {
				for _, e := range side.evs {
					ev = append(ev, side.name+" "+evidenceLoc(e))
					if e.Text != "" {
						ev = append(ev, "    "+e.Text)
					}
				}
			}
			if len(ev) > 0 {
				fence := fenceFor(strings.Join(ev, "\n"))
				fmt.Fprintf(&b, "\n  %stext\n", fence)
				for _, l := range ev {
					b.WriteString("  " + l + "\n")
				}
				fmt.Fprintf(&b, "  %s\n\n", fence)
			}
		}
		b.WriteString("\n")
	}
	if len(r.Notes) > 0 {
		b.WriteString("## Notes\n\n")
		for _, n := range r.Notes {
			b.WriteString("- " + mdText(n) + "\n")
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Written by %s %s.\n", orDash(r.Tool.Name), r.Tool.Version)
	// Nothing of it is styled: escaping the whole text escapes every
	// input's text in it.
	_, err := io.WriteString(w, Escape(b.String()))
	return err
}

func unknownIfEmpty(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}
