package report

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/checks"
)

// RenderMarkdown writes the report as markdown to paste into a ticket: the
// summary, the findings grouped by service with their evidence in fenced
// blocks (file:line, then the text there), the drift matrix of several
// nodes, skipped checks and notes.
func RenderMarkdown(w io.Writer, r *Report, _ Options) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", header(r))
	fmt.Fprintf(&b, "**%s, %s, %d info** · %s · %s\n\n", plural(r.Summary.Error, "error"), plural(r.Summary.Warning, "warning"),
		r.Summary.Info, checksLine(r), inputsLine(r))
	if lines := readingLines(r); len(lines) > 0 {
		for _, l := range lines {
			b.WriteString("- " + mdText(l) + "\n")
		}
		b.WriteString("\n")
	}
	if r.KubeProxyVersion != "" && r.VersionSource != "" {
		fmt.Fprintf(&b, "kube-proxy %s (%s); mode %s (%s).\n\n", r.KubeProxyVersion, r.VersionSource, orDash(r.Mode), orDash(r.ModeSource))
	}
	if len(r.Nodes) > 0 {
		b.WriteString("| node | bundle | mode | kube-proxy | errors | warnings | info |\n|---|---|---|---|---:|---:|---:|\n")
		for _, n := range r.Nodes {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %d | %d |\n", mdCell(orDash(n.Node)), mdCell(orDash(n.Bundle)), mdCell(orDash(n.Mode)),
				mdCell(orDash(n.KubeProxyVersion)), n.Summary.Error, n.Summary.Warning, n.Summary.Info)
		}
		b.WriteString("\n")
	}

	b.WriteString("## Findings\n\n")
	if len(r.Findings) == 0 && !r.Inconclusive() {
		b.WriteString("No findings.\n\n")
	} else if len(r.Findings) == 0 {
		gaps, needs := r.gaps()
		b.WriteString("**" + mdText(strings.ToUpper(inconclusiveText[:1])+inconclusiveText[1:]) + ".**\n\n")
		for _, g := range gaps {
			b.WriteString("- " + mdText(g) + "\n")
		}
		if len(needs) > 0 {
			b.WriteString("\nTo settle it, add:\n\n")
			for _, n := range needs {
				b.WriteString("- " + mdText(n.Input) + ": `" + n.Command + "`\n")
			}
		}
		b.WriteString("\n")
	}
	for _, g := range groupByService(alikeOnNodes(r.Findings)) {
		title := g.service
		if title == "" {
			title = "Not about one service"
		} else if g.protocol != "" {
			title += " (" + g.protocol + ")"
		}
		fmt.Fprintf(&b, "### %s\n\n", mdText(title))
		for _, f := range g.findings {
			fmt.Fprintf(&b, "- **%s** `%s`", f.Severity, f.Check)
			if f.Node != "" {
				fmt.Fprintf(&b, " on %s", strings.Replace(nodesLabel(f), " ", " `", 1)+"`")
			}
			fmt.Fprintf(&b, ": %s\n", mdText(f.Message))
			if len(f.Objects) > 1 {
				b.WriteString("\n")
				for _, o := range f.Objects {
					fmt.Fprintf(&b, "  - %s\n", mdText(o))
				}
			}
			if len(f.Evidence) > 0 {
				var ev strings.Builder
				for _, e := range f.Evidence {
					ev.WriteString(evidenceLoc(e) + "\n")
					if e.Text != "" {
						ev.WriteString("    " + e.Text + "\n")
					}
				}
				fence := fenceFor(ev.String())
				fmt.Fprintf(&b, "\n  %stext\n", fence)
				for _, line := range strings.Split(strings.TrimRight(ev.String(), "\n"), "\n") {
					b.WriteString("  " + line + "\n")
				}
				fmt.Fprintf(&b, "  %s\n", fence)
			}
			if f.Advice != "" {
				fmt.Fprintf(&b, "\n  Advice: %s\n", mdText(f.Advice))
			}
			b.WriteString("\n")
		}
	}

	if d := r.Drift; d != nil {
		b.WriteString("## Drift between nodes\n\n")
		if text := clustersText(d); text != "" {
			b.WriteString(mdText(text) + ".\n\n")
		}
		drifted, same := splitDrift(d)
		if len(drifted) > 0 {
			b.WriteString("| service port |")
			for _, n := range d.Nodes {
				b.WriteString(" " + mdCell(n) + " |")
			}
			b.WriteString("\n|---|" + strings.Repeat("---|", len(d.Nodes)) + "\n")
			for _, p := range drifted {
				fmt.Fprintf(&b, "| %s |", mdCell(portTitle(p)))
				for _, c := range p.Cells {
					text := mdCell(cellText(c))
					if c.State != checks.CellOK && c.State != checks.CellNone {
						text = "**" + c.State + "**" + mdCell(strings.TrimPrefix(cellText(c), c.State))
					}
					b.WriteString(" " + text + " |")
				}
				b.WriteString("\n")
			}
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s.\n\n", alikeText(d, same))
		if len(d.Fields) > 0 {
			b.WriteString("| setting |")
			for _, n := range d.Nodes {
				b.WriteString(" " + mdCell(n) + " |")
			}
			b.WriteString("\n|---|" + strings.Repeat("---|", len(d.Nodes)) + "\n")
			for _, f := range d.Fields {
				fmt.Fprintf(&b, "| %s |", mdCell(f.Field))
				for _, v := range f.Values {
					b.WriteString(" " + mdCell(orDash(v)) + " |")
				}
				b.WriteString("\n")
			}
			b.WriteString("\n")
		}
	}

	var skipped, notes []string
	for s := range allStatuses(r) {
		prefix := "`" + s.status.ID + "`"
		if len(r.Nodes) > 0 {
			prefix += " on " + s.node
		}
		if s.status.State == "skipped" {
			skipped = append(skipped, fmt.Sprintf("- %s: %s", prefix, mdText(s.status.Reason)))
		}
		for _, n := range s.status.Notes {
			notes = append(notes, fmt.Sprintf("- %s: %s", prefix, mdText(n)))
		}
	}
	for _, n := range r.Notes {
		notes = append(notes, "- "+mdText(n))
	}
	for _, n := range r.Nodes {
		for _, x := range n.Notes {
			notes = append(notes, fmt.Sprintf("- %s: %s", n.Label(), mdText(x)))
		}
	}
	for _, u := range r.Unknown {
		notes = append(notes, fmt.Sprintf("- unknown input `%s`: %s, not analysed", u, mdText(unknownReason(r, u))))
	}
	if len(skipped) > 0 {
		b.WriteString("## Skipped checks\n\n" + strings.Join(skipped, "\n") + "\n\n")
	}
	if len(notes) > 0 {
		b.WriteString("## Notes\n\n" + strings.Join(notes, "\n") + "\n\n")
	}
	fmt.Fprintf(&b, "Written by %s %s.\n", orDash(r.Tool.Name), r.Tool.Version)
	// Nothing of it is styled: escaping the whole text escapes every
	// input's text in it.
	_, err := io.WriteString(w, Escape(b.String()))
	return err
}

// checksLine counts the checks that ran and were skipped.
func checksLine(r *Report) string {
	ran, skipped := 0, 0
	for s := range allStatuses(r) {
		if s.status.State == "skipped" {
			skipped++
		} else {
			ran++
		}
	}
	return fmt.Sprintf("%d checks ran, %d skipped", ran, skipped)
}

// serviceGroup holds the findings of one service.
type serviceGroup struct {
	service, protocol string
	findings          []checks.Finding
}

// groupByService groups findings by Service (namespace/name), services in
// name order with the findings of no service last; within a group,
// findings keep the report's order.
func groupByService(fs []checks.Finding) []serviceGroup {
	idx := map[string]int{}
	var out []serviceGroup
	for _, f := range fs {
		key := serviceOf(f.Service)
		i, ok := idx[key]
		if !ok {
			i = len(out)
			idx[key] = i
			out = append(out, serviceGroup{service: key})
		}
		if f.Service == key {
			out[i].protocol = f.Protocol
		}
		out[i].findings = append(out[i].findings, f)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].service, out[j].service
		if (a == "") != (b == "") {
			return b == ""
		}
		return a < b
	})
	return out
}

// serviceOf returns "namespace/name" of a service port name.
func serviceOf(sp string) string {
	if i := strings.IndexByte(sp, ':'); i >= 0 {
		return sp[:i]
	}
	return sp
}

// alikeText says how many service ports the nodes program alike, for the
// drift section of every report.
func alikeText(d *checks.Drift, same int) string {
	if len(d.Clusters) > 1 {
		return plural(same, "service port") + " programmed alike on every node of their cluster"
	}
	return plural(same, "service port") + " programmed alike on every node"
}

// clustersText says, when the nodes of a drift are of several clusters,
// which nodes each holds ("" when they are of one).
func clustersText(d *checks.Drift) string {
	if len(d.Clusters) < 2 {
		return ""
	}
	parts := make([]string, len(d.Clusters))
	for i, c := range d.Clusters {
		names := c.Nodes
		more := ""
		if len(names) > 5 {
			names, more = names[:3], fmt.Sprintf(" and %d more", len(names)-3)
		}
		parts[i] = fmt.Sprintf("%s%s (Service default/kubernetes uid %s)", strings.Join(names, ", "), more, c.ID)
	}
	return fmt.Sprintf("nodes of %d clusters, each compared only with the nodes of its own: %s", len(d.Clusters), strings.Join(parts, "; "))
}

// splitDrift returns the drifted rows of a matrix and how many are alike.
func splitDrift(d *checks.Drift) ([]checks.DriftPort, int) {
	var out []checks.DriftPort
	same := d.Alike
	for _, p := range d.Ports {
		if p.Drifted() {
			out = append(out, p)
		} else {
			same++
		}
	}
	return out, same
}

func portTitle(p checks.DriftPort) string {
	if p.Protocol != "" {
		return p.Service + " (" + p.Protocol + ")"
	}
	return p.Service
}

// cellText describes a cell of the drift matrix: its state, then what the
// node lacks (−) and has in excess (+).
func cellText(c checks.DriftCell) string {
	parts := []string{c.State}
	for _, m := range c.Missing {
		parts = append(parts, "−"+m)
	}
	for _, x := range c.Extra {
		parts = append(parts, "+"+x)
	}
	if len(c.ExplainedBy) > 0 {
		parts = append(parts, "(see the node's "+strings.Join(c.ExplainedBy, ", ")+" finding)")
	}
	return strings.Join(parts, " ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// mdText escapes the characters that markdown would interpret in running
// text.
func mdText(s string) string {
	r := strings.NewReplacer(`\`, `\\`, "*", `\*`, "`", "\\`", "<", "&lt;", "[", `\[`)
	return r.Replace(s)
}

// mdCell escapes text for a table cell.
func mdCell(s string) string { return strings.ReplaceAll(mdText(s), "|", `\|`) }

// fenceFor returns a code fence longer than any run of backticks in s.
func fenceFor(s string) string {
	longest, run := 0, 0
	for _, c := range s {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}
