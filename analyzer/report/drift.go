package report

import (
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/proxyscan/proxyscan/analyzer/checks"
)

// driftTable renders node-drift's matrix for the terminal: the service
// ports not programmed alike (service ports × nodes) and the settings that
// differ; empty when the report has no drift. Cells wrap at spaces; when
// the nodes do not fit side by side, each row is a record, one node a
// line.
func driftTable(t *theme, r *Report, width int) string {
	d := r.Drift
	if d == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString(t.title.Render("drift between nodes"))
	b.WriteString("\n")
	if text := clustersText(d); text != "" {
		paragraph(&b, t.plain, Escape(text), width, "", "  ")
	}
	drifted, same := splitDrift(d)
	matrix := func(first string, rows [][]string, bad func(row, col int) bool) {
		cols := []column{{header: first}}
		for i, n := range d.Nodes {
			col := i + 1
			cols = append(cols, column{header: n, style: func(row int) lipgloss.Style {
				if bad(row, col) {
					return t.sev[checks.Error]
				}
				return t.plain
			}})
		}
		for _, row := range rows {
			for i := range cols {
				cols[i].cells = append(cols[i].cells, row[i])
			}
		}
		b.WriteString(fitTable(t, cols, width))
	}
	if len(drifted) > 0 {
		var rows [][]string
		for _, p := range drifted {
			row := []string{Escape(portTitle(p))}
			for _, c := range p.Cells {
				row = append(row, Escape(cellText(c)))
			}
			rows = append(rows, row)
		}
		matrix("SERVICE PORT", rows, func(row, col int) bool {
			s := drifted[row].Cells[col-1].State
			return s != checks.CellOK && s != checks.CellNone && s != checks.CellUnknown
		})
	}
	paragraph(&b, t.dim, alikeText(d, same), width, "", "  ")
	if len(d.Fields) > 0 {
		var rows [][]string
		for _, f := range d.Fields {
			row := []string{Escape(f.Field)}
			for _, v := range f.Values {
				row = append(row, Escape(orDash(v)))
			}
			rows = append(rows, row)
		}
		matrix("SETTING", rows, func(row, col int) bool { return false })
	}
	b.WriteString("\n")
	return b.String()
}
