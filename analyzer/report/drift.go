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
		groups := nodeGroups(d.Nodes, rows, width)
		cols := []column{{header: first}}
		for _, g := range groups {
			col := g.col
			cols = append(cols, column{header: g.header, style: func(row int) lipgloss.Style {
				if bad(row, col) {
					return t.sev[checks.Error]
				}
				return t.plain
			}})
		}
		for _, row := range rows {
			cols[0].cells = append(cols[0].cells, row[0])
			for i, g := range groups {
				cols[i+1].cells = append(cols[i+1].cells, row[g.col])
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

// nodeGroup is a column of the drift matrix: one node, or the nodes whose
// cells are alike in every row, named together.
type nodeGroup struct {
	header string
	// col is the column of the group's first node in the rows.
	col int
}

// nodeGroups returns the node columns of a drift matrix of rows (a row's
// first cell its title, then a cell per node of nodes): one per node when
// they fit side by side in width, else one per set of nodes whose cells
// are alike in every row ("n001, n002, n003 and 96 more nodes"), so that a
// fleet's matrix shows how the nodes differ rather than a line per node.
func nodeGroups(nodes []string, rows [][]string, width int) []nodeGroup {
	one := make([]nodeGroup, len(nodes))
	cols := []column{{}}
	for i, n := range nodes {
		one[i] = nodeGroup{header: n, col: i + 1}
		c := column{header: Escape(n)}
		for _, row := range rows {
			c.cells = append(c.cells, Escape(row[i+1]))
		}
		cols = append(cols, c)
	}
	for _, row := range rows {
		cols[0].cells = append(cols[0].cells, Escape(row[0]))
	}
	if _, ok := layout(cols, width); ok {
		return one
	}
	var out []nodeGroup
	var names [][]string
	at := map[string]int{}
	for i, n := range nodes {
		var key strings.Builder
		for _, row := range rows {
			key.WriteString(row[i+1])
			key.WriteByte(0)
		}
		g, ok := at[key.String()]
		if !ok {
			g = len(out)
			at[key.String()] = g
			out = append(out, nodeGroup{col: i + 1})
			names = append(names, nil)
		}
		names[g] = append(names[g], n)
	}
	for i := range out {
		out[i].header = listNames(names[i], "node")
	}
	return out
}
