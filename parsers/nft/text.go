package nft

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/google/nftables"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/internal/bytestr"
)

// maxLineLen bounds one line of text input (nft prints the biggest
// anonymous maps on one line; 16 MiB is far beyond any real listing).
const maxLineLen = 16 << 20

// textParser reads `nft list ruleset` text.
type textParser struct {
	name string
	src  string
	off  int // offset of the next line
	line int // number of the last line read
	toks []token
	// lax is set for a lenient read (ParseTextLenient).
	lax *laxText
	// elToks is the scratch of the tokens of a set's elements, sp the
	// statement parser of the rules: its scratch of elements is reused
	// by every rule (see [stmtParser.elements]).
	elToks []token
	sp     stmtParser
	// file is the Where of the chains and rules read.
	file *parsers.Pos
	// shared holds short statements read, by family and text, so that
	// the rules that repeat one share it (each of kube-proxy's service
	// chains matches `meta l4proto tcp`): see [textParser.share].
	shared  *[sharedSlots]sharedStmt
	printed []byte
}

// maxShared is the longest statement text that rules share: longer ones
// (anonymous maps of addresses) are rarely alike.
const maxShared = 64

// sharedSlots is the number of statements [textParser.share] holds, each
// in a slot its text's length and ends choose: a small fixed cache,
// neither grown nor cleared, which keeps what recurs as the unique
// statements (addresses of endpoints) pass through it, at the cost of a
// short comparison for each statement read.
const sharedSlots = 256

// sharedStmt is a statement read and the family and text it was read
// from.
type sharedStmt struct {
	fam  nftables.TableFamily
	text string
	s    Stmt
}

// share returns the statement read before from the same text in a table
// of family fam and that prints as s does, else s, kept for the next
// ones; text is s's text in the listing. Statements are not modified
// once read, so that rules may share them: a large ruleset repeats a few
// matches and verdicts thousands of times.
func (p *textParser) share(s Stmt, fam nftables.TableFamily, text string) Stmt {
	n := len(text)
	if n < 2 || n > maxShared {
		return s
	}
	if _, ok := s.(*Unsupported); ok {
		return s
	}
	if p.shared == nil {
		p.shared = new([sharedSlots]sharedStmt)
	}
	slot := &p.shared[(uint(n)*37+uint(text[0])*11+uint(text[n-2])*5+uint(text[n-1]))%sharedSlots]
	if slot.s != nil && slot.fam == fam && slot.text == text && p.same(slot.s, s) {
		return slot.s
	}
	*slot = sharedStmt{fam, text, s}
	return s
}

// same reports whether statements a and b, read from the same text, are
// alike: compared field by field for the verdicts and matches of
// selectors and constants that rules repeat most, else on their printed
// forms.
func (p *textParser) same(a, b Stmt) bool {
	switch x := a.(type) {
	case *Verdict:
		y, ok := b.(*Verdict)
		return ok && *x == *y
	case *Match:
		if y, ok := b.(*Match); ok && x.Op == y.Op {
			if l, r := sameLeaf(x.Left, y.Left), sameLeaf(x.Right, y.Right); l != 0 && r != 0 {
				return l > 0 && r > 0
			}
		}
	}
	p.printed = a.appendStmt(p.printed[:0])
	k := len(p.printed)
	p.printed = b.appendStmt(p.printed)
	return bytes.Equal(p.printed[:k], p.printed[k:])
}

// sameLeaf compares two selectors or constants: 1 when they are alike,
// -1 when not, 0 when one is of another kind of expression.
func sameLeaf(a, b Expr) int {
	switch x := a.(type) {
	case *Meta:
		return sameAs(x, b)
	case *Payload:
		return sameAs(x, b)
	case *Value:
		return sameAs(x, b)
	case *SetRef:
		return sameAs(x, b)
	case *Ct:
		return sameAs(x, b)
	}
	return 0
}

// sameAs is [sameLeaf] of x, of a comparable kind of expression, and b.
func sameAs[T comparable, P interface {
	*T
	Expr
}](x P, b Expr) int {
	y, ok := b.(P)
	switch {
	case !ok:
		return 0
	case *x == *y:
		return 1
	}
	return -1
}

// ParseText parses the text of `nft list ruleset` (or `nft -a list ruleset`).
// name is the file name used in positions and errors.
//
// ParseText keeps references into data (rule texts, names and element
// parts are slices of it): the caller must not modify data afterwards.
func ParseText(name string, data []byte) (*Ruleset, error) {
	return parseText(name, data, nil)
}

// parseText is ParseText, lenient when lx is set.
func parseText(name string, data []byte, lx *laxText) (*Ruleset, error) {
	p := &textParser{name: name, src: bytestr.Of(data), lax: lx}
	rs := &Ruleset{}
	for {
		line, ok := p.next()
		if !ok {
			return rs, nil
		}
		// Blank as the lexer sees it (isBlank), so that a strict and a
		// lenient read skip the same lines.
		t := strings.TrimLeft(line, blanks)
		blank := t == "" || t[0] == '#'
		if p.lax != nil && !blank && isText(t) {
			// Words around the listing, outside any table.
			p.lax.notes = append(p.lax.notes, parsers.LineNote{Line: p.line, Reason: parsers.ReasonText, Skipped: true})
			continue
		}
		if p.cutHere(false) {
			continue
		}
		if blank {
			continue
		}
		toks, err := p.lex(line)
		if err != nil {
			return nil, err
		}
		if len(toks) == 0 || toks[0].kind == tComment {
			continue
		}
		if toks[0].text != "table" {
			if p.lax != nil && !nftSyntax(t) {
				// A line outside any table without a word of nft's
				// syntax that is not words either (isText): a
				// sentence naming an address above the listing.
				p.lax.notes = append(p.lax.notes, parsers.LineNote{Line: p.line, Reason: reasonNotUnderstood, Skipped: true, Detail: "outside any table: " + quoteTok(toks[0])})
				p.lax.stray++
				continue
			}
			return nil, p.errf(p.line, "expected a table, found %s", quoteTok(toks[0]))
		}
		tbl, err := p.table(toks)
		if err != nil {
			return nil, err
		}
		rs.Tables = append(rs.Tables, tbl)
	}
}

func quoteTok(t token) string {
	s := t.text
	if t.kind == tComment {
		s = "#" + s
	}
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return strconv.Quote(s)
}

func (p *textParser) errf(line int, format string, args ...any) error {
	return parsers.Errorf(parsers.Pos{File: p.name, Line: line}, format, args...)
}

func (p *textParser) pos(line int) parsers.Pos { return parsers.Pos{File: p.name, Line: line} }

// fileWhere returns the file, which the chains and rules read share as
// their Where.
func (p *textParser) fileWhere() *parsers.Pos {
	if p.file == nil {
		p.file = &parsers.Pos{File: p.name}
	}
	return p.file
}

// next returns the next line.
func (p *textParser) next() (string, bool) {
	if p.off >= len(p.src) {
		return "", false
	}
	s := p.src[p.off:]
	i := strings.IndexByte(s, '\n')
	if i < 0 {
		i = len(s)
		p.off = len(p.src)
	} else {
		p.off += i + 1
	}
	p.line++
	return s[:i], true
}

func (p *textParser) lex(line string) ([]token, error) {
	if len(line) > maxLineLen {
		return nil, p.errf(p.line, "line longer than %d bytes", maxLineLen)
	}
	toks, err := lexLine(p.toks[:0], line, p.line)
	if err != nil {
		return nil, p.errf(p.line, "%v", err)
	}
	p.toks = toks
	return toks, nil
}

// handleOf reads a `# handle N` annotation.
func handleOf(t token) uint64 {
	f := strings.Fields(t.text)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "handle" {
			n, _ := strconv.ParseUint(f[i+1], 10, 64)
			return n
		}
	}
	return 0
}

// header checks a block header `KIND NAME {` (with an optional handle
// annotation) and returns its name and handle.
func (p *textParser) header(toks []token, kind string, nameAt int) (string, uint64, error) {
	n := len(toks)
	var handle uint64
	if toks[n-1].kind == tComment {
		handle = handleOf(toks[n-1])
		n--
	}
	if n != nameAt+2 || toks[nameAt].kind != tWord || toks[n-1].text != "{" {
		return "", 0, p.errf(p.line, "malformed %s header", kind)
	}
	return toks[nameAt].text, handle, nil
}

func (p *textParser) table(toks []token) (*Table, error) {
	start := p.line
	if len(toks) < 2 {
		return nil, p.errf(p.line, "malformed table header")
	}
	fam, ok := ParseFamily(toks[1].text)
	if !ok {
		return nil, p.errf(p.line, "unknown table family %s", quoteTok(toks[1]))
	}
	name, handle, err := p.header(toks, "table", 2)
	if err != nil {
		return nil, err
	}
	t := &Table{Family: fam, Name: name, Handle: handle, Pos: p.pos(start)}
	for {
		line, ok := p.next()
		if !ok {
			if p.lax != nil {
				p.cutOpen("table " + FamilyName(fam) + " " + name)
				p.lax.table = t
				return t, nil
			}
			return nil, p.errf(p.line, "unexpected end of input: table %s %s opened at line %d is not closed", FamilyName(fam), name, start)
		}
		if p.cutHere(false) {
			continue
		}
		toks, err := p.lex(line)
		if err != nil {
			return nil, err
		}
		if len(toks) == 0 || toks[0].kind == tComment {
			continue
		}
		w := toks[0].text
		switch {
		case w == "}" && len(toks) == 1:
			return t, nil
		case w == "flags" && len(toks) >= 2:
			t.Flags = splitFlags(toks[1:])
		case w == "comment" && len(toks) == 2 && toks[1].kind == tString:
			t.Comment = unquote(toks[1].text)
		case (w == "set" || w == "map") && len(toks) >= 3:
			s, err := p.set(toks, fam)
			if err != nil {
				return nil, err
			}
			if s != nil { // nil: cut short before its type
				t.Sets = append(t.Sets, s)
			}
		case w == "chain" && len(toks) >= 3:
			c, err := p.chain(toks, fam)
			if err != nil {
				return nil, err
			}
			t.Chains = append(t.Chains, c)
		case toks[len(toks)-1].text == "{" || len(toks) > 1 && toks[len(toks)-1].kind == tComment && toks[len(toks)-2].text == "{":
			o, err := p.object(toks)
			if err != nil {
				return nil, err
			}
			if o != nil { // nil: cut short
				t.Objects = append(t.Objects, o)
			}
		default:
			return nil, p.errf(p.line, "unexpected %s in table %s", quoteTok(toks[0]), name)
		}
	}
}

// splitFlags reads a comma-separated flag list.
func splitFlags(toks []token) []string {
	var out []string
	for _, t := range toks {
		if t.kind == tWord {
			out = append(out, t.text)
		}
	}
	return out
}

// object reads a block the package keeps as raw lines.
func (p *textParser) object(toks []token) (*Object, error) {
	start := p.line
	n := len(toks)
	var handle uint64
	if toks[n-1].kind == tComment {
		handle = handleOf(toks[n-1])
		n--
	}
	if n < 3 {
		return nil, p.errf(p.line, "malformed object header")
	}
	kind := make([]string, 0, 2)
	for _, t := range toks[:n-2] {
		kind = append(kind, t.text)
	}
	o := &Object{Kind: strings.Join(kind, " "), Name: toks[n-2].text, Handle: handle, Pos: p.pos(start)}
	depth := 1
	for {
		line, ok := p.next()
		if !ok {
			if p.lax != nil {
				// Its lines are kept raw: what was read of them may be
				// cut anywhere.
				p.cutOpen(o.Kind + " " + o.Name)
				p.lax.skip(start, p.lax.end, "a block cut before its end")
				p.lax.dropped = append(p.lax.dropped, o.Kind+" "+o.Name+" is not read")
				return nil, nil
			}
			return nil, p.errf(p.line, "unexpected end of input: %s %s opened at line %d is not closed", o.Kind, o.Name, start)
		}
		if p.cutHere(false) {
			continue
		}
		toks, err := p.lex(line)
		if err != nil {
			return nil, err
		}
		for _, t := range toks {
			if t.kind == tPunct && t.text == "{" {
				depth++
			} else if t.kind == tPunct && t.text == "}" {
				depth--
			}
		}
		if depth == 0 {
			if len(toks) != 1 {
				return nil, p.errf(p.line, "unexpected text after the end of %s %s", o.Kind, o.Name)
			}
			if o.Kind == "counter" && len(o.Body) == 1 {
				if lt, err := lexLine(nil, o.Body[0], 0); err == nil {
					sp := &stmtParser{toks: lt}
					if c, ok := sp.counter().(*Counter); ok && sp.i == len(lt) && len(lt) == 4 {
						o.Counter, o.Body = c, nil
					}
				}
			}
			return o, nil
		}
		if depth < 0 {
			return nil, p.errf(p.line, "unbalanced braces")
		}
		o.Body = append(o.Body, strings.TrimLeft(line, "\t "))
	}
}

func (p *textParser) chain(toks []token, fam nftables.TableFamily) (*Chain, error) {
	start := p.line
	name, handle, err := p.header(toks, "chain", 1)
	if err != nil {
		return nil, err
	}
	c := &Chain{Name: name, Handle: handle, Where: p.fileWhere(), Line: int32(start)}
	for {
		line, ok := p.next()
		if !ok {
			if p.lax != nil {
				p.cutOpen("chain " + name)
				return c, nil
			}
			return nil, p.errf(p.line, "unexpected end of input: chain %s opened at line %d is not closed", name, start)
		}
		if p.cutHere(false) {
			continue
		}
		toks, err := p.lex(line)
		if err != nil {
			return nil, err
		}
		if len(toks) == 0 || toks[0].kind == tComment {
			continue
		}
		w := toks[0].text
		switch {
		case w == "}" && len(toks) == 1:
			return c, nil
		case len(c.Rules) == 0 && c.Hook == "" && c.Comment == "" && w == "comment" && len(toks) >= 2 && toks[1].kind == tString &&
			(len(toks) == 2 || len(toks) == 3 && toks[2].kind == tComment):
			// The chain's comment (a # comment may follow it).
			c.Comment = unquote(toks[1].text)
		case len(c.Rules) == 0 && c.Hook == "" && w == "type" && toks[0].kind == tWord:
			if err := p.baseChain(c, toks, fam); err != nil {
				return nil, err
			}
		default:
			r, err := p.rule(line, toks, fam)
			if err != nil {
				return nil, err
			}
			c.Rules = append(c.Rules, r)
		}
	}
}

// baseChain reads `type filter hook input [device "x"] priority P; policy accept;`.
func (p *textParser) baseChain(c *Chain, toks []token, fam nftables.TableFamily) error {
	bad := func(what string) error { return p.errf(p.line, "malformed base chain declaration: %s", what) }
	i := 0
	word := func() (string, bool) {
		if i < len(toks) && toks[i].kind == tWord {
			i++
			return toks[i-1].text, true
		}
		return "", false
	}
	if w, _ := word(); w != "type" {
		return bad("expected type")
	}
	typ, ok := word()
	if !ok {
		return bad("missing chain type")
	}
	switch nftables.ChainType(typ) {
	case nftables.ChainTypeFilter, nftables.ChainTypeNAT, nftables.ChainTypeRoute:
	default:
		return bad("unknown chain type " + strconv.Quote(typ))
	}
	c.Type = nftables.ChainType(typ)
	if w, _ := word(); w != "hook" {
		return bad("expected hook")
	}
	hook, ok := word()
	if _, known := HookNum(fam, hook); !ok || !known {
		return bad("unknown hook " + strconv.Quote(hook))
	}
	c.Hook = hook
	if i < len(toks) && toks[i].text == "device" {
		i++
		if i >= len(toks) || toks[i].kind != tString {
			return bad("device needs a quoted name")
		}
		c.Devices = []string{unquote(toks[i].text)}
		i++
	} else if i+2 < len(toks) && toks[i].text == "devices" && toks[i+1].text == "=" && toks[i+2].text == "{" {
		i += 3
		for i < len(toks) && toks[i].text != "}" {
			if toks[i].kind == tWord || toks[i].kind == tString {
				c.Devices = append(c.Devices, unquote(toks[i].text))
			}
			i++
		}
		i++
	}
	if w, _ := word(); w != "priority" {
		return bad("expected priority")
	}
	var pt []string
	for i < len(toks) && toks[i].text != ";" {
		pt = append(pt, toks[i].text)
		i++
	}
	if i >= len(toks) {
		return bad("missing ';' after priority")
	}
	i++
	v, err := p.priority(pt, fam, hook)
	if err != nil {
		return err
	}
	c.Priority = newPriority(fam, hook, v)
	for i < len(toks) && toks[i].kind != tComment {
		w, _ := word()
		switch w {
		case "policy":
			pol, _ := word()
			pp, ok := parsePolicy(pol)
			if !ok {
				return bad("unknown policy " + strconv.Quote(pol))
			}
			c.Policy = pp
		case "flags":
			f, _ := word()
			c.Flags = append(c.Flags, f)
		default:
			return bad("unexpected " + strconv.Quote(w))
		}
		if i >= len(toks) || toks[i].text != ";" {
			return bad("missing ';'")
		}
		i++
	}
	return nil
}

func (p *textParser) priority(pt []string, fam nftables.TableFamily, hook string) (int32, error) {
	bad := p.errf(p.line, "malformed priority %q", strings.Join(pt, " "))
	num := func(s string) (int32, bool) {
		n, err := strconv.ParseInt(s, 10, 32)
		return int32(n), err == nil
	}
	switch len(pt) {
	case 1:
		if n, ok := num(pt[0]); ok {
			return n, nil
		}
		v, ok := priorityValue(fam, hook, pt[0])
		if !ok {
			return 0, p.errf(p.line, "priority %q is not valid for %s hook %s", pt[0], FamilyName(fam), hook)
		}
		return v, nil
	case 3:
		v, ok := priorityValue(fam, hook, pt[0])
		if !ok {
			return 0, p.errf(p.line, "priority %q is not valid for %s hook %s", pt[0], FamilyName(fam), hook)
		}
		n, ok := num(pt[2])
		if !ok || n < 0 {
			return 0, bad
		}
		r := int64(v)
		switch pt[1] {
		case "+":
			r += int64(n)
		case "-":
			r -= int64(n)
		default:
			return 0, bad
		}
		if r < -1<<31 || r > 1<<31-1 {
			return 0, bad
		}
		return int32(r), nil
	}
	return 0, bad
}

func (p *textParser) set(toks []token, fam nftables.TableFamily) (*Set, error) {
	start := p.line
	kind := toks[0].text // toks is reused for the following lines
	name, handle, err := p.header(toks, kind, 1)
	if err != nil {
		return nil, err
	}
	s := &Set{Name: name, IsMap: kind == "map", Handle: handle, Pos: p.pos(start)}
	sawType := false
	for {
		line, ok := p.next()
		if !ok {
			if p.lax != nil {
				p.cutOpen(kind + " " + name)
				if !sawType {
					// Of no type, its elements could not be read.
					p.lax.skip(start, p.lax.end, "a "+kind+" cut before its type")
					p.lax.dropped = append(p.lax.dropped, kind+" "+name+" is not read: the cut is before its type")
					return nil, nil
				}
				finishSet(s)
				return s, nil
			}
			return nil, p.errf(p.line, "unexpected end of input: %s %s opened at line %d is not closed", kind, name, start)
		}
		if p.cutHere(true) {
			continue
		}
		lt, err := p.lex(line)
		if err != nil {
			if p.lax != nil && p.line == p.lax.stop {
				p.cutHere(false)
				continue
			}
			return nil, err
		}
		if len(lt) == 0 || lt[0].kind == tComment {
			continue
		}
		w := lt[0].text
		if p.lax != nil && p.line == p.lax.stop && w != "elements" {
			// Only an element list is read from the line cut.
			p.cutHere(false)
			continue
		}
		bad := func() error { return p.errf(p.line, "malformed %s declaration in %s", strconv.Quote(w), name) }
		switch {
		case w == "}" && len(lt) == 1:
			if !sawType {
				return nil, p.errf(p.line, "%s %s has no type", kind, name)
			}
			finishSet(s)
			return s, nil
		case w == "type" || w == "typeof":
			if err := p.setType(s, line, lt); err != nil {
				return nil, err
			}
			sawType = true
		case w == "flags" && len(lt) >= 2:
			f, unk := canonSetFlags(splitFlags(lt[1:]))
			if unk != "" {
				return nil, p.errf(p.line, "unknown set flag %q", unk)
			}
			s.Flags = f
		case w == "policy" && len(lt) == 2:
			if lt[1].text != "memory" && lt[1].text != "performance" {
				return nil, bad()
			}
			if lt[1].text == "memory" {
				s.Policy = "memory"
			}
		case w == "size" && len(lt) == 2:
			n, err := strconv.ParseUint(lt[1].text, 10, 32)
			if err != nil {
				return nil, bad()
			}
			s.Size = uint32(n)
		case w == "counter" && len(lt) == 1:
			s.Counter = true
		case w == "auto-merge" && len(lt) == 1:
			s.AutoMerge = true
		case (w == "timeout" || w == "gc-interval") && len(lt) == 2:
			d, err := parseTime(lt[1].text)
			if err != nil {
				return nil, bad()
			}
			if w == "timeout" {
				s.Timeout = d
			} else {
				s.GCInterval = d
			}
		case w == "comment" && len(lt) == 2 && lt[1].kind == tString:
			s.Comment = unquote(lt[1].text)
		case w == "elements" && len(lt) >= 3 && lt[1].text == "=" && lt[2].text == "{":
			if s.Elements != nil {
				return nil, p.errf(p.line, "%s %s has two element lists", kind, name)
			}
			els, err := p.elements(lt[2:], s, kind)
			if err != nil {
				return nil, err
			}
			s.Elements = els
		default:
			return nil, p.errf(p.line, "unexpected %s in %s %s", quoteTok(lt[0]), kind, name)
		}
	}
}

// finishSet completes a set read: one with a default timeout has the
// timeout flag.
func finishSet(s *Set) {
	if s.Timeout != 0 && !s.HasFlag("timeout") {
		s.Flags, _ = canonSetFlags(append(s.Flags, "timeout"))
	}
}

// setType reads `type K [. K]* [: [interval] D [. D]*]` or `typeof EXPR [: EXPR]`.
func (p *textParser) setType(s *Set, line string, lt []token) error {
	colon := -1
	for i, t := range lt {
		if t.kind == tWord && t.text == ":" {
			colon = i
			break
		}
	}
	key, data := lt[1:], []token(nil)
	if colon >= 0 {
		key, data = lt[1:colon], lt[colon+1:]
	}
	if len(key) == 0 || colon >= 0 && len(data) == 0 || colon >= 0 != s.IsMap {
		return p.errf(p.line, "malformed %s declaration", lt[0].text)
	}
	if len(data) > 0 && data[0].text == "interval" {
		s.DataInterval = true
		data = data[1:]
	}
	if lt[0].text == "type" {
		var err error
		if s.KeyType, err = p.typeNames(key); err != nil {
			return err
		}
		if data != nil {
			if s.DataType, err = p.typeNames(data); err != nil {
				return err
			}
		}
		return nil
	}
	raw := func(ts []token) string { return line[ts[0].off:ts[len(ts)-1].end] }
	sp := &stmtParser{toks: key}
	e := sp.lhs()
	if e == nil || sp.i != len(key) {
		return p.errf(p.line, "unsupported typeof expression %q", raw(key))
	}
	s.Typeof = raw(key)
	s.KeyType = knownTypes(ExprTypes(e))
	if data != nil {
		s.DataTypeof = raw(data)
		sp = &stmtParser{toks: data}
		if e := sp.lhs(); e != nil && sp.i == len(data) {
			s.DataType = knownTypes(ExprTypes(e))
		} else if len(data) == 1 && data[0].text == "verdict" {
			s.DataType = []string{"verdict"}
		}
	}
	return nil
}

// knownTypes returns ts, or nil when a part is unknown.
func knownTypes(ts []string) []string {
	for _, t := range ts {
		if t == "" {
			return nil
		}
	}
	return ts
}

func (p *textParser) typeNames(ts []token) ([]string, error) {
	var out []string
	for i, t := range ts {
		if i%2 == 1 {
			if t.text != "." {
				return nil, p.errf(p.line, "malformed type %q", t.text)
			}
			continue
		}
		if t.kind != tWord {
			return nil, p.errf(p.line, "malformed type %q", t.text)
		}
		out = append(out, t.text)
	}
	if len(ts)%2 == 0 {
		return nil, p.errf(p.line, "malformed type")
	}
	return out, nil
}

// elements reads `{ e, e, ... }`, which may span lines; lt starts at '{'.
// kind is "set" or "map".
func (p *textParser) elements(lt []token, s *Set, kind string) ([]Element, error) {
	start := p.line
	toks := append(p.elToks[:0], lt...)
	defer func() { p.elToks = toks[:0] }() // the tokens are slices of the text: nothing to clear
	depth := 0
	for {
		for _, t := range toks[len(toks)-len(lt):] {
			if t.kind == tPunct && t.text == "{" {
				depth++
			} else if t.kind == tPunct && t.text == "}" {
				depth--
			}
		}
		if depth <= 0 {
			break
		}
		line, ok := p.next()
		if !ok {
			if p.lax != nil {
				els, err := p.cutElements(toks, s, kind)
				if err != nil {
					return nil, err
				}
				return p.elementsOf(els, s)
			}
			return nil, p.errf(p.line, "unexpected end of input: elements of %s opened at line %d are not closed", s.Name, start)
		}
		if p.cutHere(true) {
			lt = nil
			continue
		}
		n := len(toks)
		if cap(toks)-n < len(line) {
			// The tokens of a large set's elements (tens of thousands
			// of lines) grow by doubling, not by the quarter append
			// grows a large slice by: that took five times their
			// room, per set, in copies.
			toks = slices.Grow(toks, max(n, len(line)))
		}
		var err error
		if toks, err = lexLine(toks, line, p.line); err != nil {
			toks = toks[:n]
			if p.lax != nil && p.line == p.lax.stop {
				p.cutHere(false)
				lt = nil
				continue
			}
			return nil, p.errf(p.line, "%v", err)
		}
		lt = toks[n:]
	}
	sp := &p.sp
	*sp = stmtParser{toks: toks, src: p.src, els: sp.els, parts: sp.parts, spans: sp.spans}
	els, err := sp.elements(true, nil, nil)
	if err == nil && sp.i != len(toks) {
		err = fmt.Errorf("unexpected %s after the elements", quoteTok(toks[sp.i]))
	}
	if err != nil {
		line := p.line
		if sp.i < len(toks) {
			line = int(toks[sp.i].line)
		}
		return nil, p.errf(line, "elements of %s: %v", s.Name, err)
	}
	return p.elementsOf(els, s)
}

// elementsOf gives the elements read of s their positions, and checks
// their shape.
func (p *textParser) elementsOf(els []Element, s *Set) ([]Element, error) {
	var file *parsers.Pos // the file, which the elements share
	if len(els) > 0 {
		file = &parsers.Pos{File: p.name}
	}
	for i := range els {
		els[i].Where = file
		if (els[i].Verdict != nil || els[i].HasData()) != s.IsMap {
			return nil, p.errf(int(els[i].Line), "element of %s %s has the wrong shape", map[bool]string{true: "map", false: "set"}[s.IsMap], s.Name)
		}
	}
	return els, nil
}

// rule reads one rule line.
func (p *textParser) rule(line string, toks []token, fam nftables.TableFamily) (*Rule, error) {
	r := &Rule{Where: p.fileWhere(), Line: int32(p.line)}
	n := len(toks)
	if toks[n-1].kind == tComment {
		r.Handle = handleOf(toks[n-1])
		n--
	}
	depth := 0
	for _, t := range toks[:n] {
		if t.kind == tPunct && t.text == "{" {
			depth++
		} else if t.kind == tPunct && t.text == "}" {
			depth--
		}
		if depth < 0 {
			break
		}
	}
	if depth != 0 {
		return nil, p.errf(p.line, "unbalanced braces in rule")
	}
	r.Raw = strings.TrimRight(line[toks[0].off:toks[n-1].end], " \t")
	// The rule's comment is its last. An empty one, which a listing
	// prints as no comment at all, gives way to one before it, so that
	// a rule reads as its printed form does.
	for n >= 2 && toks[n-1].kind == tString && toks[n-2].kind == tWord && toks[n-2].text == "comment" {
		r.Comment = unquote(toks[n-1].text)
		n -= 2
		if r.Comment != "" {
			break
		}
	}
	sp := &p.sp
	*sp = stmtParser{toks: toks[:n], fam: fam, src: p.src, els: sp.els, parts: sp.parts, spans: sp.spans}
	for sp.i < n {
		at := sp.i
		s := sp.stmt()
		if s == nil {
			r.Stmts = append(r.Stmts, &Unsupported{Text: strings.TrimRight(line[toks[at].off:toks[n-1].end], " \t")})
			r.Unsupported = true
			break
		}
		r.Stmts = append(r.Stmts, p.share(s, fam, line[toks[at].off:toks[sp.i-1].end]))
	}
	return r, nil
}

// stmtParser reads statements and expressions from tokens. Its methods
// return nil (or an error) for what they cannot read; the caller then
// keeps the text as unsupported.
type stmtParser struct {
	toks []token
	i    int
	fam  nftables.TableFamily
	// src is the listing the tokens were read from, if known: an
	// element whose text there is its parts as nft prints them keeps
	// that text (see [packElements]).
	src string
	// els, parts and spans are the scratch of [stmtParser.elements].
	els   []Element
	parts []string
	spans []elementSpan
}

func (p *stmtParser) peek(k int) *token {
	if p.i+k < len(p.toks) {
		return &p.toks[p.i+k]
	}
	return nil
}

// is reports whether the next token is the word w.
func (p *stmtParser) is(w string) bool {
	t := p.peek(0)
	return t != nil && t.kind == tWord && t.text == w
}

func (p *stmtParser) isPunct(c string) bool {
	t := p.peek(0)
	return t != nil && t.kind == tPunct && t.text == c
}

// word consumes and returns the next word token.
func (p *stmtParser) word() (string, bool) {
	t := p.peek(0)
	if t == nil || t.kind != tWord {
		return "", false
	}
	p.i++
	return t.text, true
}

func (p *stmtParser) str() (string, bool) {
	t := p.peek(0)
	if t == nil || t.kind != tString {
		return "", false
	}
	p.i++
	return unquote(t.text), true
}

func (p *stmtParser) uint(bits int) (uint64, bool) {
	w, ok := p.word()
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(w, 10, bits)
	return n, err == nil
}

func (p *stmtParser) stmt() Stmt {
	save := p.i
	s := p.stmt1()
	if s == nil {
		p.i = save
	}
	return s
}

func (p *stmtParser) stmt1() Stmt {
	t := p.peek(0)
	if t == nil || t.kind != tWord {
		return nil
	}
	switch t.text {
	case "accept", "drop", "continue", "return":
		p.i++
		return &Verdict{Kind: t.text}
	case "jump", "goto":
		p.i++
		target, ok := p.word()
		if !ok {
			return nil
		}
		return &Verdict{Kind: t.text, Target: target}
	case "counter":
		p.i++
		return p.counter()
	case "log":
		p.i++
		return p.log()
	case "limit":
		p.i++
		return p.limit()
	case "reject":
		p.i++
		return p.reject()
	case "notrack":
		p.i++
		return &Notrack{}
	case "snat", "dnat", "masquerade", "redirect":
		p.i++
		return p.nat(t.text)
	case "add", "update", "delete":
		if n := p.peek(1); n != nil && n.kind == tWord && strings.HasPrefix(n.text, "@") && len(n.text) > 1 {
			p.i += 2
			return p.setUpdate(t.text, n.text[1:])
		}
		return nil
	}
	left := p.lhs()
	if left == nil {
		return nil
	}
	switch {
	case p.is("set"):
		p.i++
		v := p.valueExpr(ExprType(left))
		if v == nil {
			return nil
		}
		return &Mangle{Key: left, Value: v}
	case p.is("vmap"):
		p.i++
		d := p.mapData(ExprTypes(left), nil)
		if d == nil {
			return nil
		}
		return &Vmap{Key: left, Data: d}
	}
	return p.match(left)
}

func (p *stmtParser) match(left Expr) Stmt {
	op, implicit := OpEq, true
	if t := p.peek(0); t != nil && t.kind == tWord {
		w := t.text
		if o, ok := relWords[w]; ok {
			w = o
		}
		switch Op(w) {
		case OpEq, OpNeq, OpLt, OpGt, OpLte, OpGte:
			op, implicit = Op(w), false
			p.i++
		}
	}
	right := p.rhs(left)
	if right == nil {
		return nil
	}
	if p.is("/") {
		// flag comparison: `tcp flags syn / syn,ack`
		p.i++
		mask := p.value(ExprType(left))
		if mask == nil || (op != OpEq && op != OpNeq) || !isBitmask(ExprType(left)) {
			return nil
		}
		if _, ok := right.(*Value); !ok {
			return nil
		}
		return &Match{Left: &Binop{Op: "&", Left: left, Right: mask}, Op: op, Right: right}
	}
	if implicit && isBitmask(ExprType(left)) {
		if _, ok := right.(*Value); ok {
			op = OpIn
		}
	}
	return &Match{Left: left, Op: op, Right: right}
}

// selector reads a packet selector.
func (p *stmtParser) selector() Expr {
	t := p.peek(0)
	if t == nil || t.kind != tWord {
		return nil
	}
	w := t.text
	switch {
	case payloadFields[w] != nil:
		f := p.peek(1)
		if f == nil || f.kind != tWord || !isPayloadField(w, f.text) {
			return nil
		}
		p.i += 2
		return &Payload{Proto: w, Field: f.text}
	case w == "meta":
		k := p.peek(1)
		if k == nil || k.kind != tWord {
			return nil
		}
		if _, ok := metaTypes[k.text]; !ok {
			return nil
		}
		p.i += 2
		return &Meta{Key: k.text}
	case unqualifiedMeta[w] || w == "mark":
		p.i++
		return &Meta{Key: w}
	case w == "ct":
		p.i++
		c := &Ct{}
		if p.is("original") || p.is("reply") {
			c.Dir, _ = p.word()
		}
		if p.is("ip") || p.is("ip6") {
			c.Family, _ = p.word()
		}
		k, ok := p.word()
		if _, known := ctTypes[k]; !ok || !known {
			return nil
		}
		c.Key = k
		return c
	case w == "fib":
		p.i++
		f := &Fib{}
		for {
			fl, ok := p.word()
			switch fl {
			case "saddr", "daddr", "mark", "iif", "oif":
			default:
				ok = false
			}
			if !ok {
				return nil
			}
			f.Flags = append(f.Flags, fl)
			if !p.is(".") {
				break
			}
			p.i++
		}
		res, _ := p.word()
		switch res {
		case "oif", "oifname", "type":
			f.Result = res
			return f
		}
		return nil
	case w == "numgen":
		p.i++
		n := &Numgen{}
		n.Mode, _ = p.word()
		if (n.Mode != "random" && n.Mode != "inc") || !p.is("mod") {
			return nil
		}
		p.i++
		mod, ok := p.uint(32)
		if !ok {
			return nil
		}
		n.Mod = uint32(mod)
		if p.is("offset") {
			p.i++
			off, ok := p.uint(32)
			if !ok {
				return nil
			}
			n.Offset = uint32(off)
		}
		return n
	}
	return nil
}

var binopBP = map[string]int{"|": 1, "^": 2, "&": 3, "<<": 4, ">>": 4, "or": 1, "xor": 2, "and": 3, "lshift": 4, "rshift": 4}

// binopWords are nft's keyword spellings of the bitwise operators.
var binopWords = map[string]string{"or": "|", "xor": "^", "and": "&", "lshift": "<<", "rshift": ">>"}

// binexpr reads operands joined by bitwise operators (precedence
// climbing); the first operand must be a selector when sel is set.
func (p *stmtParser) binexpr(minBP int, sel bool, hint string) Expr {
	var left Expr
	if sel {
		left = p.selector()
	} else if left = p.selector(); left == nil {
		if v := p.value(hint); v != nil {
			left = v
		}
	}
	if left == nil {
		return nil
	}
	for {
		t := p.peek(0)
		if t == nil || t.kind != tWord {
			return left
		}
		bp, ok := binopBP[t.text]
		if !ok || bp < minBP {
			return left
		}
		p.i++
		rt := ExprType(left)
		if rt == "" {
			rt = hint
		}
		right := p.binexpr(bp+1, false, rt)
		if right == nil {
			return nil
		}
		op := t.text
		if w, ok := binopWords[op]; ok {
			op = w
		}
		left = &Binop{Op: op, Left: left, Right: right}
	}
}

// lhs reads the left side of a match, vmap or mangle: selectors, binops
// and concatenations.
func (p *stmtParser) lhs() Expr {
	e := p.binexpr(1, true, "")
	if e == nil || !p.is(".") {
		return e
	}
	c := &Concat{Parts: []Expr{e}}
	for p.is(".") {
		p.i++
		e := p.binexpr(1, true, "")
		if e == nil {
			return nil
		}
		c.Parts = append(c.Parts, e)
	}
	return c
}

// valueExpr reads a value: an expression or constant, optionally looked
// up in a map (`numgen random mod 2 map { ... }`).
func (p *stmtParser) valueExpr(hint string) Expr {
	e := p.binexpr(1, false, hint)
	if e == nil {
		return nil
	}
	if p.is(".") {
		c := &Concat{Parts: []Expr{e}}
		for p.is(".") {
			p.i++
			e := p.binexpr(1, false, "")
			if e == nil {
				return nil
			}
			c.Parts = append(c.Parts, e)
		}
		e = c
	}
	if p.is("map") {
		p.i++
		d := p.mapData(ExprTypes(e), []string{hint})
		if d == nil {
			return nil
		}
		return &Map{Key: e, Data: d}
	}
	if v, ok := e.(*Value); ok && hint != "" && !validValue(v.Text, strings.HasPrefix(v.Text, `"`), hint) {
		return nil
	}
	return e
}

// mapData reads `@name` or an anonymous map; dataTypes is nil for a
// verdict map.
func (p *stmtParser) mapData(keyTypes, dataTypes []string) Expr {
	verdict := dataTypes == nil
	if t := p.peek(0); t != nil && t.kind == tWord && strings.HasPrefix(t.text, "@") && len(t.text) > 1 {
		p.i++
		return &SetRef{Name: t.text[1:]}
	}
	if !p.isPunct("{") {
		return nil
	}
	els, err := p.elements(false, keyTypes, dataTypes)
	if err != nil || len(els) == 0 {
		return nil
	}
	for _, e := range els {
		if (e.Verdict != nil) != verdict || (e.Verdict == nil && !e.HasData()) {
			return nil
		}
	}
	return &AnonSet{Elements: els}
}

// rhs reads the right side of a match: a set reference, an anonymous
// set, or constants (possibly concatenated).
func (p *stmtParser) rhs(left Expr) Expr {
	types := ExprTypes(left)
	t := p.peek(0)
	if t == nil {
		return nil
	}
	if t.kind == tWord && strings.HasPrefix(t.text, "@") && len(t.text) > 1 {
		p.i++
		return &SetRef{Name: t.text[1:]}
	}
	if p.isPunct("{") {
		els, err := p.elements(false, types, nil)
		if err != nil || len(els) == 0 {
			return nil
		}
		for _, e := range els {
			if e.Verdict != nil || e.HasData() {
				return nil
			}
		}
		return &AnonSet{Elements: els}
	}
	typeAt := func(i int) string {
		if i < len(types) {
			return types[i]
		}
		return ""
	}
	v := p.value(typeAt(0))
	if v == nil {
		return nil
	}
	if !p.is(".") {
		return v
	}
	c := &Concat{Parts: []Expr{v}}
	for p.is(".") {
		p.i++
		v := p.value(typeAt(len(c.Parts)))
		if v == nil {
			return nil
		}
		c.Parts = append(c.Parts, v)
	}
	return c
}

// valueText reads a constant token, joining comma lists written without
// blanks (`established,related`).
func (p *stmtParser) valueText() (string, bool) {
	t := p.peek(0)
	if t == nil {
		return "", false
	}
	switch {
	case t.kind == tString:
	case t.kind == tWord:
		switch t.text {
		case ".", ":", "=", "/", "==", "!=", "<", ">", "<=", ">=", "&", "|", "^", "<<", ">>", "map", "vmap", "set":
			return "", false
		}
		if strings.HasPrefix(t.text, "@") || strings.HasPrefix(t.text, "$") {
			return "", false
		}
	default:
		return "", false
	}
	p.i++
	start := p.i - 1
	if t.kind == tString {
		return t.text, true
	}
	for {
		c, n := p.peek(0), p.peek(1)
		if c == nil || n == nil || c.kind != tPunct || c.text != "," || c.sp || n.sp || n.kind != tWord {
			break
		}
		p.i += 2
	}
	if p.i == start+1 {
		return t.text, true
	}
	var b strings.Builder
	for k := start; k < p.i; k++ {
		b.WriteString(p.toks[k].text)
	}
	return b.String(), true
}

// value reads a constant that must be valid for datatype t.
func (p *stmtParser) value(t string) *Value {
	save := p.i
	s, ok := p.valueText()
	if !ok || !validValue(s, strings.HasPrefix(s, `"`), t) {
		p.i = save
		return nil
	}
	return &Value{Text: s}
}

// elements reads `{ e, e, ... }`. Named sets record each element's line;
// the constants of anonymous ones are checked against keyTypes and
// dataTypes.
func (p *stmtParser) elements(named bool, keyTypes, dataTypes []string) ([]Element, error) {
	check := func(s string, types []string, i int) bool {
		if named {
			return true
		}
		t := ""
		if i < len(types) {
			t = types[i]
		}
		return validValue(s, strings.HasPrefix(s, `"`), t)
	}
	if !p.isPunct("{") {
		return nil, fmt.Errorf("expected '{'")
	}
	p.i++
	if p.isPunct("}") {
		p.i++
		return nil, nil
	}
	// The parts of every key and data are gathered in one list and the
	// elements get their slices of it once all are read (see
	// [packElements]): a large set holds tens of thousands of elements.
	// The scratch is taken, so that it is no one else's meanwhile.
	els, parts, spans := p.els[:0], p.parts[:0], p.spans[:0]
	p.els, p.parts, p.spans = nil, nil, nil
	defer func() {
		clear(els)
		clear(parts)
		p.els, p.parts, p.spans = els[:0], parts[:0], spans[:0]
	}()
	for {
		e := Element{}
		if t := p.peek(0); t != nil && named {
			e.Line = int32(t.line)
		}
		start, nkey := len(parts), 0
		for {
			v, ok := p.valueText()
			if !ok || !check(v, keyTypes, nkey) {
				return nil, p.unexpected("element key")
			}
			parts = append(doubled(parts), v)
			nkey++
			if !p.is(".") {
				break
			}
			p.i++
		}
	attrs:
		for {
			switch {
			case p.is("counter"):
				p.i++
				c, ok := p.counter().(*Counter)
				if !ok || c.Name != "" {
					return nil, p.unexpected("counter")
				}
				e.attrs().Counter = c
			case p.is("timeout") || p.is("expires"):
				w, _ := p.word()
				ts, _ := p.word()
				d, err := parseTime(ts)
				if err != nil {
					return nil, fmt.Errorf("bad %s %q", w, ts)
				}
				switch {
				case d == 0:
				case w == "timeout":
					e.attrs().Timeout = d
				default:
					e.attrs().Expires = d
				}
			case p.is("comment"):
				p.i++
				s, ok := p.str()
				if !ok {
					return nil, p.unexpected("comment")
				}
				if s != "" {
					e.attrs().Comment = s
				}
			default:
				break attrs
			}
		}
		if p.is(":") {
			p.i++
			if t := p.peek(0); t != nil && t.kind == tWord && verdictKinds[t.text] {
				v, ok := p.stmt1().(*Verdict)
				if !ok {
					return nil, p.unexpected("verdict")
				}
				e.Verdict = v
			} else {
				for ndata := 0; ; {
					v, ok := p.valueText()
					if !ok || !check(v, dataTypes, ndata) {
						return nil, p.unexpected("element data")
					}
					parts = append(doubled(parts), v)
					ndata++
					if !p.is(".") {
						break
					}
					p.i++
				}
			}
		}
		els, spans = doubled(els), doubled(spans)
		els = append(els, e)
		spans = append(spans, elementSpan{start: int32(start), key: int32(nkey), data: int32(len(parts) - start - nkey)})
		switch {
		case p.isPunct(","):
			p.i++
		case p.isPunct("}"):
			p.i++
			return packElements(p.src, els, parts, spans), nil
		default:
			return nil, p.unexpected("',' or '}'")
		}
	}
}

// doubled returns s with room for one more element: twice its room when
// full, rather than the quarter append adds to a large slice, so that
// the scratch of a set of tens of thousands of elements is copied a few
// times, not dozens (five times its final size in copies).
func doubled[T any](s []T) []T {
	if len(s) == cap(s) && len(s) >= 256 {
		return slices.Grow(s, len(s))
	}
	return s
}

// elementSpan is where the key and data parts of an element are in the
// parts [stmtParser.elements] gathers.
type elementSpan struct{ start, key, data int32 }

// packElements returns els made to their length, each element's parts
// its text in src when that is its parts as nft prints them (a listing
// read off the heap is not copied), else their joined (or encoded) text
// in one string made for all of them: the elements of a set take no
// more room than they need, whatever their number.
func packElements(src string, els []Element, parts []string, spans []elementSpan) []Element {
	out := make([]Element, len(els))
	copy(out, els)
	var arena []byte
	// placed holds where in arena the text of an element not in src is.
	type span struct {
		start, end int32
		in         bool
	}
	var placed []span
	for i, sp := range spans {
		k := int(sp.start)
		key, data := parts[k:k+int(sp.key)], parts[k+int(sp.key):k+int(sp.key+sp.data)]
		e := &out[i]
		if t, ok := textIn(src, key, data); ok {
			e.parts, e.nkey, e.n = t, uint16(len(key)), uint16(len(key)+len(data))
			continue
		}
		if placed == nil {
			placed = make([]span, len(spans))
		}
		start := len(arena)
		var ok bool
		if arena, ok = joinParts(arena, key, data); ok {
			e.nkey, e.n = uint16(len(key)), uint16(len(key)+len(data))
		} else {
			arena, e.nkey, e.n = encodeParts(arena[:start], key, data), 0, encoded
		}
		placed[i] = span{start: int32(start), end: int32(len(arena)), in: true}
	}
	if placed != nil {
		all := string(arena)
		for i, pl := range placed {
			if pl.in {
				out[i].parts = all[pl.start:pl.end]
			}
		}
	}
	return out
}

// textIn returns the text of src that is the parts of key and data as
// nft prints them (see Element.parts), when they are parts of src
// written so.
func textIn(src string, key, data []string) (string, bool) {
	if len(key) == 0 || len(key)+len(data) >= encoded {
		return "", false
	}
	last := key[len(key)-1]
	if len(data) > 0 {
		last = data[len(data)-1]
	}
	a, ok1 := offsetIn(src, key[0])
	b, ok2 := offsetIn(src, last)
	if !ok1 || !ok2 || b+len(last) < a {
		return "", false
	}
	t := src[a : b+len(last)]
	if !joinedAs(t, key, data) || !splitsBack(t, key, data) {
		return "", false
	}
	return t, true
}

// offsetIn returns the offset of s in src when s is a part of src's
// memory.
func offsetIn(src, s string) (int, bool) {
	if len(s) == 0 || len(s) > len(src) {
		return 0, false
	}
	base := uintptr(unsafe.Pointer(unsafe.StringData(src)))
	at := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	if at < base || at-base > uintptr(len(src)-len(s)) {
		return 0, false
	}
	return int(at - base), true
}

// joinedAs reports whether t is the parts of key and data joined as nft
// prints them.
func joinedAs(t string, key, data []string) bool {
	next := func(sep, part string) bool {
		if !strings.HasPrefix(t, sep) {
			return false
		}
		t = t[len(sep):]
		if !strings.HasPrefix(t, part) {
			return false
		}
		t = t[len(part):]
		return true
	}
	for i, k := range key {
		sep := " . "
		if i == 0 {
			sep = ""
		}
		if !next(sep, k) {
			return false
		}
	}
	for i, d := range data {
		sep := " . "
		if i == 0 {
			sep = " : "
		}
		if !next(sep, d) {
			return false
		}
	}
	return t == ""
}

func (p *stmtParser) unexpected(want string) error {
	t := p.peek(0)
	if t == nil {
		return fmt.Errorf("expected %s, found the end", want)
	}
	return fmt.Errorf("expected %s, found %s", want, quoteTok(*t))
}

func (p *stmtParser) counter() Stmt {
	c := &Counter{}
	if p.is("name") {
		p.i++
		s, ok := p.str()
		if !ok {
			return nil
		}
		c.Name = s
		return c
	}
	if p.is("packets") {
		p.i++
		n, ok := p.uint(64)
		if !ok || !p.is("bytes") {
			return nil
		}
		p.i++
		m, ok := p.uint(64)
		if !ok {
			return nil
		}
		c.Packets, c.Bytes = n, m
	}
	return c
}

func (p *stmtParser) log() Stmt {
	l := &Log{}
	u32 := func() (*uint32, bool) {
		n, ok := p.uint(32)
		v := uint32(n)
		return &v, ok
	}
	var flags []string
	for {
		var ok bool
		switch {
		case p.is("prefix"):
			p.i++
			l.Prefix, ok = p.str()
		case p.is("group"):
			p.i++
			l.Group, ok = u32()
		case p.is("snaplen"):
			p.i++
			l.Snaplen, ok = u32()
		case p.is("queue-threshold"):
			p.i++
			l.QueueThreshold, ok = u32()
		case p.is("level"):
			p.i++
			l.Level, ok = p.word()
			ok = ok && isLogLevel(l.Level)
			if l.Level == "warn" {
				l.Level = ""
			}
		case p.is("flags"):
			p.i++
			w, _ := p.word()
			ok = true
			switch w {
			case "all", "skuid", "ether":
				flags = append(flags, w)
			case "ip":
				ok = p.is("options")
				p.i++
				flags = append(flags, "ip options")
			case "tcp":
				list, lok := p.valueText()
				ok = lok
				for _, f := range strings.Split(list, ",") {
					if f != "sequence" && f != "options" {
						ok = false
					}
					flags = append(flags, "tcp "+f)
				}
			default:
				ok = false
			}
		default:
			if flags != nil {
				var unk string
				l.Flags, unk = canonLogFlags(flags)
				if unk != "" {
					return nil
				}
			}
			return l
		}
		if !ok {
			return nil
		}
	}
}

var limitUnits = map[string]bool{"second": true, "minute": true, "hour": true, "day": true, "week": true}
var byteUnits = map[string]bool{"bytes": true, "kbytes": true, "mbytes": true}

func (p *stmtParser) limit() Stmt {
	if !p.is("rate") {
		return nil
	}
	p.i++
	l := &Limit{}
	if p.is("over") {
		p.i++
		l.Over = true
	}
	w, ok := p.word()
	if !ok {
		return nil
	}
	if n, per, found := strings.Cut(w, "/"); found {
		r, err := strconv.ParseUint(n, 10, 64)
		if err != nil || !limitUnits[per] {
			return nil
		}
		l.Rate, l.Per = r, per
	} else {
		r, err := strconv.ParseUint(w, 10, 64)
		u, _ := p.word()
		unit, per, _ := strings.Cut(u, "/")
		if err != nil || !byteUnits[unit] || !limitUnits[per] {
			return nil
		}
		l.Rate, l.Unit, l.Per = r, unit, per
	}
	if p.is("burst") {
		p.i++
		b, ok := p.uint(64)
		u, _ := p.word()
		if !ok {
			return nil
		}
		if l.Unit == "" {
			if u != "packets" {
				return nil
			}
			if b == 5 {
				b = 0
			}
		} else {
			if !byteUnits[u] {
				return nil
			}
			l.BurstUnit = u
		}
		l.Burst = b
		if b == 0 {
			l.BurstUnit = ""
		}
	}
	return l
}

func (p *stmtParser) reject() Stmt {
	r := &Reject{}
	if p.is("with") {
		p.i++
		w, _ := p.word()
		switch w {
		case "tcp":
			if !p.is("reset") {
				return nil
			}
			p.i++
			r.Type = "tcp reset"
		case "icmp", "icmpv6", "icmpx":
			code, ok := p.word()
			if !ok || !validRejectCode(w, code) {
				return nil
			}
			r.Type, r.Code = w, code
		default:
			return nil
		}
	}
	canonReject(r, p.fam)
	return r
}

func (p *stmtParser) nat(kind string) Stmt {
	n := &NAT{Kind: kind}
	if (p.is("ip") || p.is("ip6")) && kind != "masquerade" && kind != "redirect" {
		if t := p.peek(1); t != nil && t.text == "to" {
			n.Family, _ = p.word()
		}
	}
	if p.is("to") {
		p.i++
		t := p.peek(0)
		if t == nil || t.kind != tWord {
			return nil
		}
		switch {
		case strings.HasPrefix(t.text, ":"):
			if len(t.text) == 1 {
				return nil
			}
			p.i++
			n.Port = &Value{Text: t.text[1:]}
		case kind == "masquerade" || kind == "redirect":
			return nil
		default:
			save := p.i
			if p.selector() != nil {
				p.i = save
				if n.Addr = p.valueExpr(""); n.Addr == nil {
					return nil
				}
			} else {
				p.i = save + 1
				if !natAddr(n, t.text) || !p.validNAT(n) {
					return nil
				}
			}
		}
	} else if n.Family != "" {
		return nil
	}
	if t := p.peek(0); t != nil && t.kind == tWord {
		switch t.text {
		case "random", "fully-random", "persistent":
			list, _ := p.valueText()
			f, unk := canonNATFlags(strings.Split(list, ","))
			if unk != "" {
				return nil
			}
			n.Flags = f
		}
	}
	return n
}

// natAddr splits a NAT target `10.0.0.1:80`, `[fd00::1]:80`,
// `10.0.0.1-10.0.0.5:80-90`, `fd00::1` into address and port.
func natAddr(n *NAT, w string) bool {
	addr, port := w, ""
	if strings.HasPrefix(w, "[") {
		i := strings.IndexByte(w, ']')
		if i < 0 {
			return false
		}
		addr, rest := w[1:i], w[i+1:]
		if strings.HasPrefix(rest, "-[") {
			j := strings.IndexByte(rest, ']')
			if j < 0 {
				return false
			}
			addr += "-" + rest[2:j]
			rest = rest[j+1:]
		}
		if !strings.HasPrefix(rest, ":") || len(rest) < 2 {
			return false
		}
		n.Addr, n.Port = &Value{Text: addr}, &Value{Text: rest[1:]}
		return true
	}
	if strings.Count(w, ":") == 1 {
		addr, port, _ = strings.Cut(w, ":")
		if addr == "" || port == "" {
			return false
		}
	}
	n.Addr = &Value{Text: addr}
	if port != "" {
		n.Port = &Value{Text: port}
	}
	return true
}

func (p *stmtParser) setUpdate(op, set string) Stmt {
	if !p.isPunct("{") {
		return nil
	}
	p.i++
	u := &SetUpdate{Op: op, Set: set}
	u.Key = p.lhs()
	if u.Key == nil {
		return nil
	}
	if p.is("timeout") {
		p.i++
		w, _ := p.word()
		d, err := parseTime(w)
		if err != nil {
			return nil
		}
		u.Timeout = d
	}
	if !p.isPunct("}") {
		return nil
	}
	p.i++
	return u
}

// validNAT checks the constant address and port of a NAT statement.
func (p *stmtParser) validNAT(n *NAT) bool {
	if v, ok := n.Port.(*Value); ok && !validValue(v.Text, false, "inet_service") {
		return false
	}
	v, ok := n.Addr.(*Value)
	if !ok {
		return true
	}
	switch {
	case n.Family == "ip" || p.fam == nftables.TableFamilyIPv4:
		return validValue(v.Text, false, "ipv4_addr")
	case n.Family == "ip6" || p.fam == nftables.TableFamilyIPv6:
		return validValue(v.Text, false, "ipv6_addr")
	}
	return validValue(v.Text, false, "ipv4_addr") || validValue(v.Text, false, "ipv6_addr")
}

// relWords are nft's keyword spellings of the relational operators.
var relWords = map[string]string{"eq": "==", "ne": "!=", "lt": "<", "gt": ">", "le": "<=", "ge": ">="}
