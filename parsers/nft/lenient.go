package nft

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/proxyscan/proxyscan/parsers"
)

// ReasonCutShort is the reason of the lines [ParseTextLenient] does not
// read because the listing was cut in them: a last line that ends in the
// middle, an element or a block cut before its end.
const ReasonCutShort = "cut short"

// laxText is what a lenient read of nft text records besides the ruleset.
type laxText struct {
	// stop is the line the input is taken to be cut in (0: none): the
	// last line, when it ends without a newline and may be cut in the
	// middle (soft), or when it does not read.
	stop int
	soft bool
	// why is the error of a last line that does not read.
	why string
	// stopSkipped is set once the stop line was skipped.
	stopSkipped bool
	// end is the last line that is not blank: where the listing ends.
	end int
	// open lists the blocks not closed at the end of the input, the
	// innermost first ("chain X", "the elements of map M"); cutAt is the
	// line of the cut.
	open []string
	// dropped says what at the cut was not read ("the element cut there").
	dropped []string
	// table is the table the listing was cut in.
	table *Table
	notes []parsers.LineNote
	// stray counts the lines outside any table that were not understood
	// and skipped.
	stray int
}

// reasonNotUnderstood is the reason of a line skipped outside any table
// that is neither nft's nor words.
const reasonNotUnderstood = "not understood"

// skip notes the lines from..to as not read, cut short.
func (lx *laxText) skip(from, to int, detail string) {
	for l := from; l <= to; l++ {
		lx.notes = append(lx.notes, parsers.LineNote{Line: l, Reason: ReasonCutShort, Skipped: true, Detail: detail})
	}
}

// sortedNotes returns the notes by line, one a line (the first made).
func (lx *laxText) sortedNotes() []parsers.LineNote {
	sort.SliceStable(lx.notes, func(i, j int) bool { return lx.notes[i].Line < lx.notes[j].Line })
	out := lx.notes[:0]
	for _, n := range lx.notes {
		if len(out) == 0 || out[len(out)-1].Line != n.Line {
			out = append(out, n)
		}
	}
	return out
}

// cutHere reports whether the line just read is the one the input is cut
// in and is not read: then it is noted as skipped. An element list reads
// the whole elements of a last line without its newline (inSet), and
// skips the others itself.
func (p *textParser) cutHere(inSet bool) bool {
	lx := p.lax
	if lx == nil || p.line != lx.stop || lx.soft && inSet {
		return false
	}
	lx.skip(p.line, p.line, lx.why)
	lx.stopSkipped = true
	return true
}

// cutOpen records a block left open at the end of the input.
func (p *textParser) cutOpen(what string) {
	p.lax.open = append(p.lax.open, what)
}

// ParseTextLenient reads `nft list ruleset` text as ParseText does, but
// reads a listing cut short (a paste that stops early) as far as it goes:
// a table, chain, set or map that is not closed keeps what was read of it
// (the rules and declarations on whole lines, the elements up to the last
// one followed by its comma), a block nft keeps as raw lines (a counter,
// a quota, ...) or a set whose type was not reached is dropped, and a
// last line that ends without its newline, or that does not read, is
// taken as cut in the middle and is not read (but for the whole elements
// it holds). The ruleset is then [Ruleset.Partial], the table cut in
// [Table.Cut], and the notes are the lines not read ([ReasonCutShort]).
// Everything else is read as ParseText reads it: a line that does not
// read before the last one is an error. As ParseText, it keeps references
// into data: the caller must not modify data afterwards.
func ParseTextLenient(name string, data []byte) (*Ruleset, []parsers.LineNote, error) {
	lx := newLax(data)
	rs, err := parseText(name, data, lx)
	var pe *parsers.Error
	if err != nil && errors.As(err, &pe) && pe.Pos.Line == lx.end && lx.end > 0 {
		// The last line does not read: it is where the paste was cut.
		lx = &laxText{stop: lx.end, end: lx.end, why: pe.Msg}
		rs, err = parseText(name, data, lx)
	}
	if err != nil {
		return nil, nil, err
	}
	rs.Partial = lx.reason()
	if lx.table != nil {
		lx.table.Cut = true
	}
	return rs, lx.sortedNotes(), nil
}

// newLax returns the state of a lenient read of data: where it ends, and
// whether its last line may be cut in the middle (it ends without a
// newline, and is not a closing brace, a comment or blank, which no cut
// changes the meaning of).
func newLax(data []byte) *laxText {
	lx := &laxText{}
	s := string(data)
	line, last := 0, ""
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		text := s
		if i >= 0 {
			text, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		line++
		if strings.TrimLeft(text, blanks) != "" {
			lx.end, last = line, text
		}
	}
	if len(data) == 0 || data[len(data)-1] == '\n' || lx.end != line {
		return lx
	}
	toks, err := lexLine(nil, last, line)
	if err == nil && (len(toks) == 0 || toks[0].kind == tComment || len(toks) == 1 && toks[0].text == "}") {
		return lx
	}
	lx.stop, lx.soft, lx.why = line, true, "the listing ends in the middle of this line"
	return lx
}

// reason is the partial reason of a lenient read, "" when nothing was
// cut.
func (lx *laxText) reason() string {
	cut := lx.cutReason()
	if lx.stray == 0 {
		return cut
	}
	stray := fmt.Sprintf("%d line%s outside any table not understood and skipped", lx.stray, map[bool]string{true: "s"}[lx.stray > 1])
	if cut == "" {
		return stray
	}
	return cut + "; " + stray
}

// cutReason says where and how the listing was cut, "" when it was not.
func (lx *laxText) cutReason() string {
	if len(lx.open) == 0 && !lx.stopSkipped {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "cut short at line %d", lx.end)
	var what []string
	if n := len(lx.open); n > 0 {
		// The outermost block is the table.
		fmt.Fprintf(&b, ": %s is not closed", lx.open[n-1])
		if n > 1 {
			what = append(what, "in "+lx.open[0])
		}
	}
	what = append(what, lx.dropped...)
	if lx.stopSkipped {
		if lx.soft {
			what = append(what, fmt.Sprintf("its last line (%d) ends in the middle and is not read", lx.stop))
		} else {
			what = append(what, fmt.Sprintf("its last line (%d) does not read (%s) and is taken as cut in the middle", lx.stop, lx.why))
		}
	}
	if len(what) > 0 {
		if len(lx.open) == 0 {
			b.WriteString(": " + strings.Join(what, "; "))
		} else {
			b.WriteString(" (" + strings.Join(what, "; ") + ")")
		}
	}
	return b.String()
}

// cutElements reads the elements of a list cut short (toks starts at its
// '{'): those followed by their comma; the element after the last comma,
// which may be cut, is dropped and its lines noted.
func (p *textParser) cutElements(toks []token, s *Set, kind string) ([]Element, error) {
	lx := p.lax
	lx.open = append(lx.open, "the elements of "+kind+" "+s.Name)
	depth, comma := 0, 0
	for i, t := range toks {
		if t.kind != tPunct {
			continue
		}
		switch t.text {
		case "{":
			depth++
		case "}":
			depth--
		case ",":
			if depth == 1 {
				comma = i
			}
		}
	}
	if rest := toks[comma+1:]; len(rest) > 0 {
		lx.skip(int(rest[0].line), int(rest[len(rest)-1].line), "an element cut before its comma")
		lx.dropped = append(lx.dropped, "the element cut there is not read")
	}
	// The elements before the last comma (none without one), closed.
	kept := append(toks[:max(comma, 1):max(comma, 1)], token{kind: tPunct, text: "}", line: toks[0].line})
	sp := &stmtParser{toks: kept}
	els, err := sp.elements(true, nil, nil)
	if err == nil && sp.i != len(kept) {
		err = fmt.Errorf("unexpected %s after the elements", quoteTok(kept[sp.i]))
	}
	if err != nil {
		line := p.line
		if sp.i < len(kept) {
			line = int(kept[sp.i].line)
		}
		return nil, p.errf(line, "elements of %s: %v", s.Name, err)
	}
	return els, nil
}

// nftWords are the words of nft's syntax a line of rules or declarations
// holds (statements, selectors, verdicts, block keywords): a line of words
// outside any table with none of them, and none of its punctuation, is
// text pasted around the listing (see isText).
var nftWords = map[string]bool{
	"table": true, "chain": true, "set": true, "map": true, "flowtable": true, "type": true,
	"hook": true, "priority": true, "policy": true, "elements": true, "flags": true,
	"ip": true, "ip6": true, "inet": true, "tcp": true, "udp": true, "sctp": true, "th": true,
	"meta": true, "ct": true, "fib": true, "numgen": true, "iifname": true, "oifname": true,
	"jump": true, "goto": true, "accept": true, "drop": true, "reject": true, "return": true,
	"dnat": true, "snat": true, "masquerade": true, "counter": true, "vmap": true,
	"daddr": true, "saddr": true, "dport": true, "sport": true, "mark": true, "comment": true,
}

// nftSyntax reports whether a line has a word of nft's syntax (nftWords),
// a brace, quote, semicolon, '@', '$' or '=': outside any table, such a
// line is a listing's damage (its table's line lost), not a person's
// words.
func nftSyntax(line string) bool {
	if strings.ContainsAny(line, "{}\";@$=") {
		return true
	}
	for _, w := range strings.Fields(line) {
		if nftWords[strings.ToLower(strings.Trim(w, ",.!?():"))] {
			return true
		}
	}
	return false
}

// isText reports whether a line outside any table is words of the person
// who pasted the listing: no word of nft's syntax (nftWords), no brace,
// quote, semicolon, '@', '$' or '=', and no address (a digit, a dot, a
// digit; two colons).
func isText(line string) bool {
	if strings.ContainsAny(line, "{}\";@$=") {
		return false
	}
	for _, w := range strings.Fields(line) {
		lw := strings.ToLower(strings.Trim(w, ",.!?():"))
		if nftWords[lw] || strings.Count(w, ":") > 1 || parsers.DottedDigits(w) {
			return false
		}
	}
	return true
}
