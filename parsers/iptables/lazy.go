package iptables

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/proxyscan/proxyscan/parsers"
)

// ParseLenientLazy reads data as [ParseLenient] does, except that the
// options of the rules of the chains lazy accepts (by name) are read only
// when something asks for them: a reader that follows one packet through
// a table of tens of thousands of per-Service chains reads a few of them.
//
// Such a chain's rules are read lazily when they are written together
// right after its header was declared (as iptables-save writes them), and
// each of them is plain: spaces between its words, no control character,
// no backslash, no counters, at most one "-j" and no goto, its comment
// quoted or written in one word, its target written in one word. Their [Rule.Raw], [Rule.Line],
// [Rule.Target], [Rule.IsGoto] and [Rule.Comment] are read from the line
// as it is scanned (without the options' parse), which is what the passes
// over every rule (jumps, the kernel's checks) read; any other reading of
// a rule's options parses the rules of its chain then, once.
//
// A line of such a chain that [ParseLenient] would skip is not noted; when
// its chain is read, the dump says so ([Dump.LazyFailed]), and so it does
// when the parse of a chain's rules disagrees with what their scan found.
// A caller that must answer as a whole parse would then parses data again
// with ParseLenient. When anything else is unusual (a note of any line, a
// dump [Dump.Partial], without the family in its header, a chain's rules
// not together, a command other than "-A"), data is read as ParseLenient
// reads it: no chain is lazy.
func ParseLenientLazy(name string, data []byte, lazy func(chain string) bool) (*Dump, []parsers.LineNote, error) {
	p := newParser(name, data, true)
	p.lz = &lazyState{accept: lazy}
	p.run()
	p.lenientEnd()
	if p.d.lazy != nil && (p.lz.broken || len(p.lax.notes) > 0 || p.d.Partial || p.d.Family == FamilyUnknown) {
		return ParseLenient(name, data)
	}
	d, err := p.finish()
	if err != nil {
		return nil, nil, err
	}
	return d, p.lax.notes, nil
}

// ParseLazy reads data as [Parse] does, the rules of the chains lazy
// accepts read lazily as [ParseLenientLazy] reads them: a rule of such a
// chain that Parse would refuse is not refused, and when its chain is
// read, the dump says so ([Dump.LazyFailed]), and so it does when the
// parse of a chain's rules disagrees with what their scan found. A
// caller that must answer as Parse would then parses data again with
// Parse. When anything else is unusual (an error elsewhere, a dump
// without the family in its header, a chain's rules not together, a
// command other than "-A"), data is read as Parse reads it.
func ParseLazy(name string, data []byte, lazy func(chain string) bool) (*Dump, error) {
	p := newParser(name, data, false)
	p.lz = &lazyState{accept: lazy}
	p.run()
	if p.d.lazy != nil && (p.lz.broken || len(p.errs) > 0 || p.d.Family == FamilyUnknown) {
		return Parse(name, data)
	}
	return p.finish()
}

// lazyState is what a lazy parse records besides the dump.
type lazyState struct {
	accept func(chain string) bool
	// broken is set when the dump is not as a lazy read needs it.
	broken bool
	// scan holds the scans of a chain's rules while they are looked at.
	scan []lightRule
	// declined is the last chain whose rules were looked at and not read
	// lazily.
	declined *Chain
}

// lazyRules is what a dump holds of its lazy chains: the scan of their
// rules, in chunks of lightChunk (a lazy rule's Rule.first is its place
// in them), and their options once parsed, by chain.
type lazyRules struct {
	light [][]lightRule
	mu    sync.Mutex
	// parsed holds the parsed chains, failed is set when one's parse did
	// not read as its scan.
	parsed map[*Chain]*lazyParsed
	failed atomic.Bool
	chains int
	// strict is set when the dump was read as Parse reads it: a rule
	// Parse would refuse fails its chain.
	strict bool
}

// lightChunk is the size of a chunk of the scans of lazy rules.
const lightChunk = 1 << 14

// lightOf returns the scan of the lazy rule r.
func (lz *lazyRules) lightOf(r *Rule) *lightRule {
	return &lz.light[r.first/lightChunk][r.first%lightChunk]
}

// lazyParsed is the options of a lazy chain's rules: spans by the rule's
// place in its chain, their places in arena as Rule.first of a parsed
// rule.
type lazyParsed struct {
	arena [][]arg
	spans []ruleSpan
}

// lightRule is what the scan of a plain rule found: the offsets in its
// Raw of its target's and its comment's values.
type lightRule struct {
	tOff, tLen, cOff, cLen uint16
	flags                  uint8
}

const (
	lightTarget  = 1 << iota // the rule has a target ("-j")
	lightComment             // the rule has a comment
)

// ruleSpan is where a lazy rule's options are once parsed.
type ruleSpan struct {
	first      uint32
	narg, targ uint16
}

// lazyOf returns the lazy rules of r's dump when r is one of them, nil
// when r's options were parsed with the dump.
func (r *Rule) lazyOf() *lazyRules {
	if c := r.Chain; c != nil && c.lazy {
		return c.Table.Dump.lazy
	}
	return nil
}

// opts returns the options of the lazy rule r and the place of its
// target among them, parsing the rules of r's chain if they are not yet.
func (lz *lazyRules) opts(r *Rule) ([]arg, uint16) {
	c := r.Chain
	pr := lz.parsedChain(c)
	// The rules of a lazy chain are consecutive in the scans.
	sp := pr.spans[r.first-c.Rules[0].first]
	if sp.narg == 0 {
		return nil, sp.targ
	}
	a := pr.arena[sp.first/argChunk]
	i := int(sp.first % argChunk)
	return a[i : i+int(sp.narg)], sp.targ
}

// parsedChain returns the options of the rules of the lazy chain c,
// parsing them the first time.
func (lz *lazyRules) parsedChain(c *Chain) *lazyParsed {
	lz.mu.Lock()
	defer lz.mu.Unlock()
	pr := lz.parsed[c]
	if pr == nil {
		pr = lz.parse(c)
		if lz.parsed == nil {
			lz.parsed = map[*Chain]*lazyParsed{}
		}
		lz.parsed[c] = pr
	}
	return pr
}

// parse parses the rules of the lazy chain c as the dump's parse would
// have, and tells the dump when one is refused or does not read as its
// scan did.
func (lz *lazyRules) parse(c *Chain) *lazyParsed {
	d := c.Table.Dump
	n := 0
	for _, r := range c.Rules {
		n += len(r.Raw)/20 + 2
	}
	// The family is the dump's: the rules read are not asked theirs
	// (their options are not c's until parsed).
	p := &parser{d: &Dump{Name: d.Name}, lenient: !lz.strict, table: c.Table, chain: c, slab: make([]Rule, len(c.Rules)), family: d.Family}
	p.args = make([]arg, 0, min(argChunk, n))
	p.d.arena = [][]arg{p.args}
	pr := &lazyParsed{spans: make([]ruleSpan, len(c.Rules))}
	failed := false
	for i, r := range c.Rules {
		p.line = r.Line
		pr.spans[i].targ = noTarget
		// What this rule's parse notes or refuses, not an earlier one's:
		// the rules after a refused one are read as a whole parse reads
		// them.
		before := len(p.lax.notes) + len(p.errs)
		got := p.rule(r.Raw, c.Name, false, 0, 0)
		if got == nil || len(p.lax.notes)+len(p.errs) > before || got.Chain != c {
			failed = true
			continue
		}
		pr.spans[i] = ruleSpan{first: got.first, narg: got.narg, targ: got.targ}
		start := int(got.first % argChunk)
		if !lz.lightOf(r).agrees(r.Raw, p.args[start:start+int(got.narg)], got.targ) {
			failed = true
		}
	}
	p.d.arena[len(p.d.arena)-1] = p.args
	pr.arena = p.d.arena
	if failed {
		lz.failed.Store(true)
	}
	return pr
}

// agrees reports whether the scan of the rule raw found what its parse
// reads: its options args, the target the one at targ.
func (l *lightRule) agrees(raw string, args []arg, targ uint16) bool {
	target, comment := "", ""
	if l.flags&lightTarget != 0 {
		target = raw[l.tOff : l.tOff+l.tLen]
	}
	if l.flags&lightComment != 0 {
		comment = raw[l.cOff : l.cOff+l.cLen]
	}
	gotTarget, gotComment, isGoto := "", "", false
	if targ != noTarget {
		a := argOf(raw, args[targ])
		gotTarget, isGoto = a.Value, a.Name == "-g" || a.Name == "--goto"
	}
	for _, a := range args {
		if int(a.nameLen) == len("--comment") && raw[a.nameOff:int(a.nameOff)+int(a.nameLen)] == "--comment" {
			gotComment = argOf(raw, a).Value
			break
		}
	}
	return gotTarget == target && !isGoto && gotComment == comment
}

// target returns the target the scan of r found.
func (l *lightRule) target(r *Rule) string {
	if l.flags&lightTarget == 0 {
		return ""
	}
	return r.Raw[l.tOff : l.tOff+l.tLen]
}

// comment returns the comment the scan of r found.
func (l *lightRule) comment(r *Rule) string {
	if l.flags&lightComment == 0 {
		return ""
	}
	return r.Raw[l.cOff : l.cOff+l.cLen]
}

// LazyFailed reports whether a lazy chain of the dump, read since, held
// a rule that a whole parse skips or reads otherwise than its scan did
// (see [ParseLenientLazy]): what was read of the dump may differ from
// what a whole parse gives.
func (d *Dump) LazyFailed() bool { return d.lazy != nil && d.lazy.failed.Load() }

// LazyChains returns the number of chains of the dump whose rules were
// read lazily, and how many of them were parsed since.
func (d *Dump) LazyChains() (lazy, parsed int) {
	if d.lazy == nil {
		return 0, 0
	}
	d.lazy.mu.Lock()
	defer d.lazy.mu.Unlock()
	return d.lazy.chains, len(d.lazy.parsed)
}

// lazyBlock reads lazily, when it may, the rules of the chain called name
// that start with the line ln (an "-A" without counters): it reports
// whether it did, the lines read then behind the parser.
func (p *parser) lazyBlock(ln, name string) bool {
	if p.lz.broken || (p.chain != nil && p.chain.Name == name) || !ruleOf(ln, name) || !p.lz.accept(name) {
		return false
	}
	c := p.chainNamed(name)
	if c == nil || c.Line == 0 || len(c.Rules) > 0 || c.lazy || c == p.lz.declined {
		return false
	}
	// A chain declined once is not scanned again at each of its lines
	// (its first rule refused, it has none for the next to follow).
	p.lz.declined = c
	// The line and those that follow with rules of the chain, all plain.
	scan := append(p.lz.scan[:0], lightRule{})
	if !scanPlain(ln, len(name), &scan[0]) {
		return false
	}
	rest := p.rest
	for {
		line, after, ok := nextLine(rest)
		if !ok || !ruleOf(line, name) {
			break
		}
		scan = append(scan, lightRule{})
		if !scanPlain(line, len(name), &scan[len(scan)-1]) {
			p.lz.scan = scan
			return false
		}
		rest = after
	}
	p.lz.scan = scan
	n := len(scan)
	lz := p.d.lazy
	if lz == nil {
		lz = &lazyRules{strict: !p.lenient}
		p.d.lazy = lz
	}
	lz.chains++
	c.lazy = true
	line := ln
	for i := range n {
		if i > 0 {
			line, p.rest, _ = nextLine(p.rest)
			p.line++
		}
		k := len(lz.light) - 1
		if k < 0 || len(lz.light[k]) == lightChunk {
			lz.light = append(lz.light, make([]lightRule, 0, lightChunk))
			k++
		}
		first := uint32(k*lightChunk + len(lz.light[k]))
		lz.light[k] = append(lz.light[k], scan[i])
		r := p.newRule()
		*r = Rule{Chain: c, Raw: line, Line: p.line, first: first, targ: noTarget}
		p.appendRule(c, r)
	}
	p.chain = c
	return true
}

// nextLine returns the first line of text and what follows it; ok is
// false when text is empty.
func nextLine(text string) (line, rest string, ok bool) {
	if text == "" {
		return "", "", false
	}
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		return text[:i], text[i+1:], true
	}
	return text, "", true
}

// ruleOf reports whether line is "-A name " and more.
func ruleOf(line, name string) bool {
	return len(line) > 4+len(name) && line[:3] == "-A " && line[3:3+len(name)] == name && line[3+len(name)] == ' '
}

// scanPlain scans ln, "-A CHAIN ..." with a chain name of nameLen bytes,
// into l: it reports whether the rule is plain (see [ParseLenientLazy]),
// so that its target and comment are what the parse would read.
func scanPlain(ln string, nameLen int, l *lightRule) bool {
	if len(ln) > maxRuleLen || nameLen > 28 {
		return false
	}
	*l = lightRule{}
	// The words after "-A CHAIN": the one before the word read (prev,
	// whether it is an option name or "!"), the comment seen.
	i := 3 + nameLen
	prevOption, prevBang := false, false
	expect := 0 // 1: the comment's value, 2: the target's, 3: an option or "!"
	for {
		for i < len(ln) && ln[i] == ' ' {
			i++
		}
		if i >= len(ln) {
			return expect == 0 || expect == 3
		}
		start, quoted := i, false
		if ln[i] == '"' {
			j := strings.IndexByte(ln[i+1:], '"')
			if j < 0 {
				return false
			}
			for k := i + 1; k <= i+j; k++ {
				if plainClass[ln[k]] == plainBad {
					return false
				}
			}
			quoted, i = true, i+1+j+1
			if i < len(ln) && ln[i] != ' ' {
				return false
			}
		} else {
			for i < len(ln) {
				if k := plainClass[ln[i]]; k != 0 {
					if k != plainSpace {
						return false
					}
					break
				}
				i++
			}
		}
		w := ln[start:i]
		option := !quoted && isOption(w)
		bang := !quoted && w == "!"
		switch expect {
		case 1, 2:
			if option || bang || !quoted && w != "" && w[0] == '-' {
				return false
			}
			off, n := start, len(w)
			if quoted {
				off, n = start+1, len(w)-2
			}
			if n == 0 {
				return false // an empty value is no value: the next word would be read as one
			}
			if expect == 1 {
				l.cOff, l.cLen, l.flags = uint16(off), uint16(n), l.flags|lightComment
			} else {
				if quoted {
					return false
				}
				l.tOff, l.tLen, l.flags = uint16(off), uint16(n), l.flags|lightTarget
			}
			expect = 3
			prevOption, prevBang = false, false
			continue
		case 3:
			if !option && !bang {
				return false // a second value, which the parse joins to the first
			}
			expect = 0
		}
		if option {
			switch w {
			case "-g", "--goto", "--jump":
				return false
			case "-j":
				if l.flags&lightTarget != 0 || prevOption || prevBang {
					return false
				}
				expect = 2
			case "--comment":
				if l.flags&lightComment == 0 {
					if prevOption || prevBang {
						return false
					}
					expect = 1
				}
			}
		}
		prevOption, prevBang = option, bang
	}
}

// The classes of the bytes of a plain rule's words (see scanPlain).
const (
	plainSpace = 1 + iota // ' ', which ends an unquoted word
	plainQuote            // '"', which no unquoted word holds
	plainBad              // a control character or a backslash
)

// plainClass is the class of every byte (0 for those a word may hold).
var plainClass = func() (t [256]uint8) {
	for c := range 0x20 {
		t[c] = plainBad
	}
	t[0x7f], t['\\'] = plainBad, plainBad
	t[' '], t['"'] = plainSpace, plainQuote
	return t
}()
