package report

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/lipgloss/table"

	"github.com/proxyscan/proxyscan/analyzer/checks"
)

// driftTable renders node-drift's matrix for the terminal: the service
// ports not programmed alike (service ports × nodes) and the settings that
// differ; empty when the report has no drift.
func driftTable(t *theme, r *Report, width int) string {
	d := r.Drift
	if d == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString(t.title.Render("drift between nodes"))
	b.WriteString("\n")
	drifted, same := splitDrift(d)
	render := func(first string, rows [][]string, bad func(row, col int) bool) {
		headers := []string{first}
		for _, n := range d.Nodes {
			headers = append(headers, Escape(n))
		}
		colW := max(12, (width-30)/max(1, len(d.Nodes))-1)
		tbl := table.New().
			Border(lipgloss.RoundedBorder()).
			BorderStyle(t.border).
			Headers(headers...).
			Rows(rows...).
			StyleFunc(func(row, col int) lipgloss.Style {
				st := t.cell
				if row == table.HeaderRow {
					return t.header
				}
				if col == 0 {
					return st.Width(28)
				}
				st = st.Width(colW)
				if bad(row, col) {
					st = st.Inherit(t.sev[checks.Error])
				}
				return st
			})
		b.WriteString(tbl.Render())
		b.WriteString("\n")
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
		render("SERVICE PORT", rows, func(row, col int) bool {
			s := drifted[row].Cells[col-1].State
			return s != checks.CellOK && s != checks.CellNone && s != checks.CellUnknown
		})
	}
	b.WriteString(t.dim.Render(fmt.Sprintf("%s programmed alike on every node", plural(same, "service port"))))
	b.WriteString("\n")
	if len(d.Fields) > 0 {
		var rows [][]string
		for _, f := range d.Fields {
			row := []string{Escape(f.Field)}
			for _, v := range f.Values {
				row = append(row, Escape(orDash(v)))
			}
			rows = append(rows, row)
		}
		render("SETTING", rows, func(row, col int) bool { return false })
	}
	b.WriteString("\n")
	return b.String()
}
