package report

import (
	"fmt"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/checks"
)

// migrationSection renders the IPVS-to-nftables migration sections of a
// report: the single node's, or each node's of a multi-node report.
func migrationSection(t *theme, r *Report, width int) string {
	var b strings.Builder
	if r.Migration != nil {
		b.WriteString(renderMigration(t, "", r.Migration, width))
	}
	for _, n := range r.Nodes {
		if n.Migration != nil {
			b.WriteString(renderMigration(t, n.Label(), n.Migration, width))
		}
	}
	return b.String()
}

// impactMarks are the table's markers of the migration impacts.
var impactMarks = map[string]string{checks.ImpactBlocker: "blocker", checks.ImpactChange: "change ", checks.ImpactInfo: "info   "}

func renderMigration(t *theme, node string, m *checks.Migration, width int) string {
	var b strings.Builder
	head := fmt.Sprintf("Migration %s → %s", m.From, m.To)
	if node != "" {
		head += " · node " + node
	}
	switch {
	case m.Ready && len(m.Unknown) > 0:
		are := " is"
		if len(m.Unknown) > 1 {
			are = " are"
		}
		head += ": no blocker known (" + strings.Join(m.Unknown, " and ") + are + " not in the inputs), " +
			plural(count(m, checks.ImpactChange), "change") + " to plan"
	case m.Ready:
		head += ": nothing blocks it, " + plural(count(m, checks.ImpactChange), "change") + " to plan"
	default:
		head += ": " + plural(count(m, checks.ImpactBlocker), "blocker")
	}
	paragraph(&b, t.title, head, width, "", "  ")
	for _, it := range m.Items {
		style := t.dim
		switch it.Impact {
		case checks.ImpactBlocker:
			style = t.sev[checks.Error]
		case checks.ImpactChange:
			style = t.sev[checks.Warning]
		}
		mark := impactMarks[it.Impact]
		if mark == "" {
			mark = it.Impact
		}
		b.WriteString("  ")
		b.WriteString(style.Render(Escape(mark)))
		b.WriteString(" ")
		b.WriteString(t.checkStyle.Render(Escape(it.Topic)))
		b.WriteString("\n")
		paragraph(&b, t.plain, it.Summary, width, "      ", "      ")
		if len(it.Services) > 0 {
			paragraph(&b, t.dim, "services: "+strings.Join(it.Services, ", "), width, "      ", "        ")
		}
		for _, e := range it.Evidence {
			loc := evidenceLoc(e)
			if e.Text != "" && textWidth("      "+loc+" "+e.Text) <= width {
				b.WriteString("      " + t.evidenceFile.Render(Escape(loc)) + " " + t.dim.Render(Escape(e.Text)) + "\n")
				continue
			}
			paragraph(&b, t.evidenceFile, loc, width, "      ", "        ")
			if e.Text != "" {
				paragraph(&b, t.dim, e.Text, width, "        ", "            ")
			}
		}
	}
	b.WriteString("\n")
	return b.String()
}

func count(m *checks.Migration, impact string) int {
	n := 0
	for _, it := range m.Items {
		if it.Impact == impact {
			n++
		}
	}
	return n
}
