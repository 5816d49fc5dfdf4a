package report

import (
	"strings"

	"github.com/charmbracelet/lipgloss"
)

// The terminal tables are laid out as kubectl and gh lay out theirs: no
// borders, columns two spaces apart, as wide as their content. When that
// is wider than the terminal, the flexible column (a message) wraps at
// spaces, then columns are dropped, least needed first, then the other
// columns wrap at spaces down to their longest word; when even that does
// not fit, each row is printed as a record, one field a line. Words (a
// service port name, a chain name, an IP:port) are never broken, unless a
// word alone is wider than the terminal.

// cellGap separates the columns of a terminal table.
const cellGap = "  "

// A column of a terminal table (see [fitTable]).
type column struct {
	header string
	// cells hold the plain text of the column's cells, one per row.
	cells []string
	// style, if set, styles the body cell of a row.
	style func(row int) lipgloss.Style
	// flex marks the column that takes the width the others leave,
	// wrapping its text; it must get at least minFlex columns.
	flex    bool
	minFlex int
	// drop is 0 for a column that is always shown; when the table does
	// not fit, the column with the highest drop goes first.
	drop int
	// key columns make the first line of a row printed as a record (the
	// first column when none is).
	key bool
}

// textWidth is the number of terminal columns of plain text.
func textWidth(s string) int { return lipgloss.Width(s) }

// longestWord returns the width of the widest word of s.
func longestWord(s string) int {
	w := 0
	for _, f := range strings.Fields(s) {
		w = max(w, textWidth(f))
	}
	return w
}

// widest returns the width of the widest line of s.
func widest(s string) int {
	w := 0
	for _, l := range strings.Split(s, "\n") {
		w = max(w, textWidth(l))
	}
	return w
}

// wrapWords breaks s into lines of at most width columns at spaces,
// keeping the spacing inside a line as it is; a word wider than width is
// cut, which is the only way it fits.
func wrapWords(s string, width int) []string { return wrapHanging(s, width, width) }

// wrapHanging is wrapWords with a first line of first columns and the
// others of rest.
func wrapHanging(s string, first, rest int) []string {
	first, rest = max(first, 1), max(rest, 1)
	var out []string
	width := func() int {
		if len(out) == 0 {
			return first
		}
		return rest
	}
	for _, para := range strings.Split(s, "\n") {
		if textWidth(para) <= width() {
			out = append(out, para)
			continue
		}
		line, started := "", false
		for _, word := range strings.Split(para, " ") {
			switch {
			case !started && word == "":
				continue // the spaces where a line breaks
			case !started:
			case textWidth(line)+1+textWidth(word) <= width():
				line += " " + word
				continue
			default:
				out = append(out, strings.TrimRight(line, " "))
				line, started = "", false
				if word == "" {
					continue
				}
			}
			for textWidth(word) > width() {
				cut := cutWidth(word, width())
				out = append(out, word[:cut])
				word = word[cut:]
			}
			line, started = word, true
		}
		if started {
			out = append(out, strings.TrimRight(line, " "))
		}
	}
	return out
}

// cutWidth returns the byte length of the longest prefix of s at most
// width columns wide (at least one rune).
func cutWidth(s string, width int) int {
	n := 0
	for i, r := range s {
		w := textWidth(string(r))
		if i > 0 && n+w > width {
			return i
		}
		n += w
	}
	return len(s)
}

// paragraph writes s wrapped to width, its first line after first and the
// others after rest (both indents of spaces), each line styled.
func paragraph(b *strings.Builder, st lipgloss.Style, s string, width int, first, rest string) {
	for i, l := range wrapHanging(Escape(s), width-textWidth(first), width-textWidth(rest)) {
		if i == 0 {
			b.WriteString(first)
		} else {
			b.WriteString(rest)
		}
		if l != "" {
			b.WriteString(st.Render(l))
		}
		b.WriteByte('\n')
	}
}

// fitTable renders cols for a terminal of width columns (see the comment
// at the top of this file).
func fitTable(t *theme, cols []column, width int) string {
	cols = append([]column(nil), cols...)
	for i := range cols {
		cols[i].header = Escape(cols[i].header)
		cells := make([]string, len(cols[i].cells))
		for j, c := range cols[i].cells {
			cells[j] = Escape(c)
		}
		cols[i].cells = cells
	}
	for {
		if widths, ok := layout(cols, width); ok {
			return renderColumns(t, cols, widths)
		}
		drop := -1
		for i, c := range cols {
			if c.drop > 0 && (drop < 0 || c.drop > cols[drop].drop) {
				drop = i
			}
		}
		if drop < 0 {
			return renderRecords(t, cols, width)
		}
		cols = append(cols[:drop:drop], cols[drop+1:]...)
	}
}

// layout returns the widths of cols in width columns, or false when they
// do not fit without dropping one (when one can be dropped) or at all.
func layout(cols []column, width int) ([]int, bool) {
	natural, least := make([]int, len(cols)), make([]int, len(cols))
	total, flex, droppable := textWidth(cellGap)*(len(cols)-1), -1, false
	for i, c := range cols {
		natural[i], least[i] = textWidth(c.header), textWidth(c.header)
		for _, cell := range c.cells {
			natural[i] = max(natural[i], widest(cell))
			least[i] = max(least[i], longestWord(cell))
		}
		total += natural[i]
		if c.flex {
			flex = i
			least[i] = max(least[i], c.minFlex)
		}
		droppable = droppable || c.drop > 0
	}
	if total <= width {
		return natural, true
	}
	if flex >= 0 {
		if room := width - (total - natural[flex]); room >= least[flex] {
			natural[flex] = room
			return natural, true
		}
	}
	if droppable {
		return nil, false
	}
	// Wrap the widest columns, down to their longest word.
	widths := append([]int(nil), natural...)
	for excess := total - width; excess > 0; excess-- {
		i := -1
		for j := range widths {
			if widths[j] > least[j] && (i < 0 || widths[j] > widths[i]) {
				i = j
			}
		}
		if i < 0 {
			return nil, false
		}
		widths[i]--
	}
	// A column is as wide as its widest wrapped line.
	for i, c := range cols {
		w := textWidth(c.header)
		for _, cell := range c.cells {
			for _, l := range wrapWords(cell, widths[i]) {
				w = max(w, textWidth(l))
			}
		}
		widths[i] = w
	}
	return widths, true
}

// renderColumns writes the header and the rows of cols at widths.
func renderColumns(t *theme, cols []column, widths []int) string {
	var b strings.Builder
	line := func(cells []string, style func(col int) lipgloss.Style) {
		wrapped := make([][]string, len(cols))
		height := 1
		for i, c := range cells {
			wrapped[i] = wrapWords(c, widths[i])
			height = max(height, len(wrapped[i]))
		}
		for l := 0; l < height; l++ {
			var row strings.Builder
			for i := range cols {
				text := ""
				if l < len(wrapped[i]) {
					text = wrapped[i][l]
				}
				if i > 0 {
					row.WriteString(cellGap)
				}
				if text != "" {
					row.WriteString(style(i).Render(text))
				}
				if i < len(cols)-1 {
					row.WriteString(strings.Repeat(" ", widths[i]-textWidth(text)))
				}
			}
			b.WriteString(strings.TrimRight(row.String(), " "))
			b.WriteByte('\n')
		}
	}
	headers := make([]string, len(cols))
	for i, c := range cols {
		headers[i] = c.header
	}
	line(headers, func(int) lipgloss.Style { return t.head })
	rows := 0
	if len(cols) > 0 {
		rows = len(cols[0].cells)
	}
	for r := 0; r < rows; r++ {
		cells := make([]string, len(cols))
		for i, c := range cols {
			cells[i] = c.cells[r]
		}
		line(cells, func(i int) lipgloss.Style { return cellStyle(t, cols[i], r) })
	}
	return b.String()
}

func cellStyle(t *theme, c column, row int) lipgloss.Style {
	if c.style != nil {
		return c.style(row)
	}
	return t.plain
}

// renderRecords writes each row as a record: its key cells on a line,
// then one line per other column, "header  value", indented.
func renderRecords(t *theme, cols []column, width int) string {
	var b strings.Builder
	var keys, rest []column
	for _, c := range cols {
		if c.key {
			keys = append(keys, c)
		} else {
			rest = append(rest, c)
		}
	}
	if len(keys) == 0 {
		keys, rest = cols[:1], cols[1:]
	}
	labelW := 0
	for _, c := range rest {
		labelW = max(labelW, textWidth(c.header))
	}
	for r := range cols[0].cells {
		var title []string
		for _, c := range keys {
			title = append(title, cellStyle(t, c, r).Render(c.cells[r]))
		}
		// The key cells are words of their own: wrap them as a whole.
		line := ""
		for _, cell := range title {
			switch {
			case line == "":
				line = cell
			case textWidth(line+cellGap+cell) <= width:
				line += cellGap + cell
			default:
				b.WriteString(line + "\n")
				line = "  " + cell
			}
		}
		b.WriteString(line + "\n")
		for _, c := range rest {
			if c.cells[r] == "" {
				continue
			}
			label := "  " + strings.ToLower(c.header) + strings.Repeat(" ", labelW-textWidth(c.header)) + cellGap
			paragraph(&b, cellStyle(t, c, r), c.cells[r], width, label, strings.Repeat(" ", textWidth(label)))
		}
	}
	return b.String()
}
