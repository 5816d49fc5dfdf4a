package parsers

import "sort"

// A LineNote says what a lenient reader did with one line of an input that
// it did not take as written: it skipped it (removed it, or could not
// understand it) or changed it (removed paste damage around its content).
// Line is the line in the file as the user gave it.
type LineNote struct {
	Line int
	// Reason groups the notes: "shell prompt", "code fence", "not
	// understood", ...
	Reason string
	// Skipped is set for a line that was not read at all; a changed line
	// was read without what Reason names.
	Skipped bool
	// Detail says more about a line that was not understood (the error a
	// strict reader gives).
	Detail string
}

// A LineRange is a run of consecutive lines skipped or changed for one
// reason: From and To are lines of the file as given (From == To for one
// line); Detail is the first line's, when it has one.
type LineRange struct {
	From   int    `json:"from"`
	To     int    `json:"to"`
	Reason string `json:"reason"`
	Detail string `json:"detail,omitempty"`
}

// Lines returns how many lines the range covers.
func (r LineRange) Lines() int { return r.To - r.From + 1 }

// Ranges returns the notes that are skipped (or, with skipped false, the
// changed notes of lines that were not skipped too) as ranges of
// consecutive lines with the same reason, ordered by line.
func Ranges(notes []LineNote, skipped bool) []LineRange {
	gone := map[int]bool{}
	for _, n := range notes {
		if n.Skipped {
			gone[n.Line] = true
		}
	}
	var sel []LineNote
	for _, n := range notes {
		if n.Skipped == skipped && (skipped || !gone[n.Line]) {
			sel = append(sel, n)
		}
	}
	sort.SliceStable(sel, func(i, j int) bool {
		if sel[i].Reason != sel[j].Reason {
			return sel[i].Reason < sel[j].Reason
		}
		return sel[i].Line < sel[j].Line
	})
	var out []LineRange
	for _, n := range sel {
		if k := len(out) - 1; k >= 0 && out[k].Reason == n.Reason && (out[k].To == n.Line || out[k].To+1 == n.Line) {
			out[k].To = n.Line
			continue
		}
		out = append(out, LineRange{From: n.Line, To: n.Line, Reason: n.Reason, Detail: n.Detail})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].From != out[j].From {
			return out[i].From < out[j].From
		}
		return out[i].Reason < out[j].Reason
	})
	return out
}

// CountLines returns how many distinct lines the ranges cover.
func CountLines(rs []LineRange) int {
	sorted := append([]LineRange(nil), rs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].From < sorted[j].From })
	n, end := 0, 0
	for _, r := range sorted {
		from := max(r.From, end+1)
		if r.To >= from {
			n += r.To - from + 1
			end = r.To
		}
	}
	return n
}

// TakeAround calls take on the lines of a listing of n lines from its
// first line down, then from its last line up, each time until take
// returns false: how a lenient reader takes the lines pasted above and
// below a listing (words, a signature), which take notes and blanks.
func TakeAround(n int, take func(i int) bool) {
	first := 0
	for first < n && take(first) {
		first++
	}
	for last := n - 1; last > first && take(last); last-- {
	}
}

// ReasonText is the reason of the lines of words a lenient reader skips
// around a pasted listing ("Hi, here is the output:" above it, "Thanks!"
// below it, outside any table), which hold no rule or part of one.
const ReasonText = "text, not a rule"

// DottedDigits reports whether a word holds a digit, a dot and a digit: an
// IPv4 address or a part of one, which words pasted around a listing
// (see ReasonText) do not hold.
func DottedDigits(w string) bool {
	for i := 1; i+1 < len(w); i++ {
		if w[i] == '.' && isDigit(w[i-1]) && isDigit(w[i+1]) {
			return true
		}
	}
	return false
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }
