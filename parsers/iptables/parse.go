package iptables

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/internal/bytestr"
)

// maxErrors is how many errors Parse collects before it stops.
const maxErrors = 20

// maxRuleLen is the longest rule Parse accepts (option offsets are 16-bit).
const maxRuleLen = 1<<16 - 1

// Parse parses iptables-save output, or iptables-restore input, read from
// the file called name.
//
// Parse keeps references into data (rule texts are slices of it): the
// caller must not modify data afterwards.
//
// On error Parse returns no dump and a [parsers.ErrorList] whose entries
// name the file and line.
func Parse(name string, data []byte) (*Dump, error) {
	p := newParser(name, data, false)
	p.run()
	return p.finish()
}

// ParseLenient reads what people paste as an iptables dump: what Parse
// reads, and also a dump cut short (a table without COMMIT, a last line
// cut in the middle), rules without a "*table" header (each assigned to
// the table its chain and target imply: see [TableOf]), rules of chains
// that were not declared (declared implicitly), and lines it does not
// understand. It returns the dump and a note for every line it skipped,
// with the reason; the dump is [Dump.Partial] when what it skipped or
// lacks means it may not hold whole tables. Paste damage (prompts,
// fences, ...) is not its business: see package paste.
//
// ParseLenient fails only when nothing in data is an iptables dump.
func ParseLenient(name string, data []byte) (*Dump, []parsers.LineNote, error) {
	p := newParser(name, data, true)
	p.run()
	p.lenientEnd()
	d, err := p.finish()
	if err != nil {
		return nil, nil, err
	}
	return d, p.lax.notes, nil
}

func newParser(name string, data []byte, lenient bool) *parser {
	p := &parser{
		d:       &Dump{Name: name},
		text:    bytestr.Of(data),
		lenient: lenient,
	}
	// kube-proxy dumps have about one option per 20 bytes: a small dump's
	// options fit in its first chunk.
	p.args = make([]arg, 0, min(argChunk, len(data)/20+64))
	p.d.arena = [][]arg{p.args}
	return p
}

// argsStart returns the place in the arena of the next option read (see
// Rule.first), in the last chunk: a new one when that is full.
func (p *parser) argsStart() uint32 {
	if len(p.args) == cap(p.args) {
		p.args = make([]arg, 0, argChunk)
		p.d.arena = append(p.d.arena, p.args)
	}
	return uint32(len(p.d.arena)-1)*argChunk + uint32(len(p.args))
}

// addArg appends an option of the rule r being read to the arena and
// returns it. When the chunk is full, a new one is started and the rule's
// options so far move to it: a rule's options are in one chunk.
func (p *parser) addArg(r *Rule, a arg) *arg {
	if len(p.args) == cap(p.args) {
		start := int(r.first % argChunk)
		next := append(make([]arg, 0, argChunk), p.args[start:]...)
		p.d.arena[len(p.d.arena)-1] = p.args[:start]
		p.args = next
		p.d.arena = append(p.d.arena, p.args)
		r.first = uint32(len(p.d.arena)-1) * argChunk
	}
	p.args = append(p.args, a)
	return &p.args[len(p.args)-1]
}

func (p *parser) finish() (*Dump, error) {
	if cap(p.args) > len(p.args)+len(p.args)/4 {
		p.args = append([]arg(nil), p.args...) // give back the unused capacity
	}
	p.d.arena[len(p.d.arena)-1] = p.args
	// In line order: a table without COMMIT (at its header) before the
	// last line, cut in the middle, that it ends with.
	p.errs.Sort()
	if err := p.errs.Err(); err != nil {
		return nil, err
	}
	if len(p.d.Tables) == 0 {
		return nil, parsers.ErrorList{parsers.Errorf(parsers.Pos{File: p.d.Name}, "no table in iptables dump (expected a *filter, *nat, ... section)")}
	}
	if p.d.Family == FamilyUnknown {
		p.d.Family = p.family
	}
	return p.d, nil
}

type parser struct {
	d *Dump
	// args is the arena's last chunk, which the options read go to.
	args    []arg
	text    string
	rest    string // the text after the current line
	line    int
	errs    parsers.ErrorList
	table   *Table // open table, nil between COMMIT and the next header
	pending []string
	last    *Table // last committed table, which receives trailer comments
	family  Family
	toks    []token
	// slab and chainSlab hand out Rules and Chains from chunks, one
	// allocation per chunk.
	slab      []Rule
	chainSlab []Chain
	// ruleList holds the rule lists of chains one after the other, up to
	// ruleList[used] (see appendRule).
	ruleList []*Rule
	used     int
	// skipping is set after a table header error: its lines are ignored up
	// to its COMMIT, so that one error is not reported many times.
	skipping bool

	// lenient is set by ParseLenient: errors are notes of skipped lines
	// (see lenient.go).
	lenient bool
	lax     laxState
	// names is set while a listing's rule with names printed in place of
	// ports is read: they are kept unresolved, not refused.
	names bool
	// shapes are the shapes of the rules whose options were found right.
	shapes *shapes
	// lookups counts the chains of rules looked up by name (chainNamed),
	// misses the guesses of the chain after the last rule's that were
	// wrong in a row: after a few, a dump whose rules are not in the
	// order of the chains' headers is guessed in only now and then.
	lookups, misses int
	// lz is set by ParseLenientLazy (see lazy.go).
	lz *lazyState
	// chain is the chain of the last rule read: a dump lists the rules
	// of a chain together, and finding the next rule's chain by name in
	// a large table is the costly part of reading a short rule.
	chain *Chain
}

type token struct {
	start, end int // offsets of the token text (without quotes) in the line
	quoted     bool
	escaped    bool
}

func (p *parser) errorf(format string, args ...any) {
	if p.lenient {
		p.skip(reasonNotUnderstood, fmt.Sprintf(format, args...))
		return
	}
	p.errs.Add(parsers.Pos{File: p.d.Name, Line: p.line}, format, args...)
}

func (p *parser) run() {
	text := p.text
	for len(text) > 0 && (p.lenient || len(p.errs) < maxErrors) {
		var ln string
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			ln, text = text[:i], text[i+1:]
		} else {
			ln, text = text, ""
		}
		p.line++
		p.rest = text
		ln = strings.TrimRight(ln, "\r")
		p.parseLine(ln)
		// A lazy read takes the rules of a chain at once (lazyBlock).
		text = p.rest
	}
	if len(p.errs) >= maxErrors {
		return
	}
	if p.table != nil && !p.lenient {
		p.errs.Add(parsers.Pos{File: p.d.Name, Line: p.table.Line},
			"table %s has no COMMIT line (truncated dump?)", p.table.Name)
	}
	if p.last != nil && len(p.pending) > 0 {
		p.last.Trailer = append(p.last.Trailer, p.pending...)
	}
}

func (p *parser) parseLine(ln string) {
	trimmed := trimBlanks(ln)
	if p.lenient && trimmed != "" {
		p.lax.lastLine = p.line
	}
	if p.skipping {
		if trimmed == "COMMIT" {
			p.skipping = false
		}
		if p.lenient && trimmed != "" {
			p.skip(reasonTableNotRead, "")
		}
		return
	}
	switch {
	case trimmed == "":
		return
	case trimmed[0] == '#':
		p.comment(trimmed)
	case trimmed[0] == '*':
		p.openTable(strings.TrimSpace(trimmed[1:]))
	case trimmed[0] == ':':
		if p.table == nil {
			if p.lenient {
				p.outside(trimmed, p.chainHeader)
				return
			}
			p.errorf("chain header outside a table (no *filter/*nat/... header before it)")
			return
		}
		p.chainHeader(trimmed)
	case trimmed == "COMMIT":
		if p.table == nil {
			if p.lenient {
				p.skip(reasonStrayCommit, "")
				return
			}
			p.errorf("COMMIT outside a table")
			return
		}
		p.last, p.table = p.table, nil
	case p.lenient && isLoggedPayload(trimmed):
		p.loggedPayload(trimmed)
	case trimmed[0] == '[' || trimmed[0] == '-':
		if p.table == nil {
			if p.lenient {
				p.outside(trimmed, p.command)
				return
			}
			p.errorf("rule outside a table (no *filter/*nat/... header before it)")
			return
		}
		p.command(trimmed)
	default:
		if p.lenient && p.table == nil && isText(trimmed) {
			// Around the dump, not in a table: it held no rule.
			p.skip(ReasonText, "")
			return
		}
		p.errorf("unexpected line %q", clip(trimmed))
	}
}

func (p *parser) comment(ln string) {
	if p.table != nil {
		return // comments inside a table carry nothing
	}
	if rest, ok := strings.CutPrefix(ln, "# Generated by "); ok {
		p.header(rest)
	}
	if p.last != nil && strings.HasPrefix(ln, "# Completed on") {
		p.last.Trailer = append(p.last.Trailer, ln)
		return
	}
	p.pending = append(p.pending, ln)
}

// header reads "iptables-save v1.8.9 (nf_tables) on DATE".
func (p *parser) header(rest string) {
	tool, fam, backend := readHeader(rest)
	if p.d.Backend == BackendUnknown {
		p.d.Backend = backend
	}
	if p.d.Tool == "" {
		p.d.Tool = tool
	}
	if fam == IPv6 || fam == IPv4 && p.d.Family == FamilyUnknown {
		p.d.Family = fam
	}
}

// ReadHeader reads the comment iptables-save writes above each table,
// "# Generated by iptables-save v1.8.9 (nf_tables) on DATE": the tool and
// its version, the family (FamilyUnknown for a tool of neither name) and
// the backend. ok is false for any other line.
func ReadHeader(line string) (tool string, fam Family, backend Backend, ok bool) {
	rest, ok := strings.CutPrefix(line, "# Generated by ")
	if !ok {
		return "", FamilyUnknown, BackendUnknown, false
	}
	tool, fam, backend = readHeader(rest)
	return tool, fam, backend, true
}

// readHeader reads a header after its "# Generated by ".
func readHeader(rest string) (tool string, fam Family, backend Backend) {
	tool, _, _ = strings.Cut(rest, " on ")
	// iptables 1.8 tags the nf_tables flavour; the legacy one has no tag
	// (some distributions print "(legacy)").
	backend = BackendLegacy
	if i := strings.Index(tool, " ("); i >= 0 {
		if strings.TrimSuffix(tool[i+2:], ")") == "nf_tables" {
			backend = BackendNFT
		}
		tool = tool[:i]
	}
	switch {
	case strings.HasPrefix(tool, "ip6tables"):
		fam = IPv6
	case strings.HasPrefix(tool, "iptables"):
		fam = IPv4
	}
	return tool, fam, backend
}

func (p *parser) openTable(name string) {
	if p.table != nil {
		if !p.lenient {
			p.errorf("table %s starts before table %s (line %d) was committed", name, p.table.Name, p.table.Line)
			return
		}
		p.cutShort(p.table)
		p.last, p.table = p.table, nil
	}
	if _, ok := builtinChains[name]; !ok {
		if p.lenient {
			p.skip(reasonTableNotRead, fmt.Sprintf("unknown table %q", clip(name)))
		} else {
			p.errorf("unknown table %q (expected filter, nat, mangle, raw or security)", clip(name))
		}
		p.skipping = true
		return
	}
	if t := p.d.Table(name); t != nil {
		if p.lenient {
			p.skip(reasonTableNotRead, fmt.Sprintf("table %s appears twice (first on line %d)", name, t.Line))
		} else {
			p.errorf("table %s appears twice", name)
		}
		p.skipping = true
		return
	}
	// Size the chain index for the table's chain headers: a large nat
	// table has tens of thousands.
	t := &Table{Name: name, Line: p.line, Dump: p.d, index: indexWithRoom(nil, chainHeaders(p.rest)+1), Comments: p.pending}
	p.pending = nil
	p.d.Tables = append(p.d.Tables, t)
	p.table = t
}

// chainHeaders counts the chain headers at the start of text, the lines
// after a table's header: iptables-save lists them all there.
func chainHeaders(text string) int {
	n := 0
	for len(text) > 0 && text[0] == ':' {
		n++
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			break
		}
		text = text[i+1:]
	}
	return n
}

// chainHeader reads ":NAME POLICY [packets:bytes]".
func (p *parser) chainHeader(ln string) {
	name, rest := field(ln[1:])
	policy, rest := field(rest)
	counters, rest := field(rest)
	if policy == "" || strings.Trim(rest, " \t") != "" {
		p.errorf("malformed chain header %q (want :NAME POLICY [packets:bytes])", clip(ln))
		return
	}
	if err := checkChainName(name); err != "" {
		p.errorf("%s", err)
		return
	}
	builtin := IsBuiltinChain(p.table.Name, name)
	switch {
	case builtin && policy != "ACCEPT" && policy != "DROP":
		p.errorf("built-in chain %s has policy %q (want ACCEPT or DROP)", name, clip(policy))
		return
	case !builtin && policy != "-":
		p.errorf("chain %s is not a built-in chain of table %s but has policy %q", name, p.table.Name, clip(policy))
		return
	}
	c := p.table.Chain(name)
	if c != nil && c.Line > 0 {
		p.errorf("chain %s declared twice in table %s (first on line %d)", name, p.table.Name, c.Line)
		return
	}
	if counters != "" {
		if _, _, ok := parseCounters(counters); !ok {
			p.errorf("malformed chain counters %q (want [packets:bytes])", clip(counters))
			return
		}
	}
	if c == nil {
		c = p.newChain(name)
	}
	c.Line, c.Header = p.line, ln
	c.setPolicy(policy)
}

// field returns the first field of s, separated by spaces or tabs, and
// what follows it.
func field(s string) (f, rest string) {
	s = trimBlanks(s)
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' || s[i] == '\t' {
			return s[:i], s[i:]
		}
	}
	return s, ""
}

// trimBlanks returns s without its leading spaces and tabs.
func trimBlanks(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	return s
}

// ensureChain returns the open table's chain called name, creating it.
func (p *parser) ensureChain(name string) *Chain {
	if c := p.table.Chain(name); c != nil {
		return c
	}
	return p.newChain(name)
}

// newChain creates the open table's chain called name, which it does not
// have.
func (p *parser) newChain(name string) *Chain {
	if len(p.chainSlab) == 0 {
		p.chainSlab = make([]Chain, 256)
	}
	c := &p.chainSlab[0]
	p.chainSlab = p.chainSlab[1:]
	*c = Chain{Name: name, Table: p.table, idx: p.table.nchains}
	p.table.nchains++
	if IsBuiltinChain(p.table.Name, name) {
		c.policy = policyAccept
	}
	p.table.Chains = append(p.table.Chains, c)
	p.table.addChain(c)
	return c
}

func checkChainName(name string) string {
	switch {
	case len(name) > 28:
		return fmt.Sprintf("chain name %q is longer than 28 characters", clip(name))
	case strings.HasPrefix(name, "-") || strings.HasPrefix(name, "!") || hasBlank(name):
		return fmt.Sprintf("invalid chain name %q", clip(name))
	}
	return ""
}

// hasBlank reports whether s holds a space, a tab or a carriage return.
func hasBlank(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == ' ' || c == '\t' || c == '\r' {
			return true
		}
	}
	return false
}

// command reads a rule line "[p:b] -A CHAIN ..." or a restore command.
func (p *parser) command(ln string) {
	var pk, by uint64
	counters := false
	if ln[0] == '[' {
		end := strings.IndexByte(ln, ']')
		if end < 0 {
			p.errorf("malformed rule counters in %q", clip(ln))
			return
		}
		var ok bool
		if pk, by, ok = parseCounters(ln[:end+1]); !ok {
			p.errorf("malformed rule counters %q (want [packets:bytes])", clip(ln[:end+1]))
			return
		}
		counters = true
		ln = trimBlanks(ln[end+1:])
	}
	cmd, rest, _ := strings.Cut(ln, " ")
	rest = strings.TrimLeft(rest, " ")
	if p.lz != nil && cmd != "-A" {
		p.lz.broken = true // restore commands: read the dump whole
	}
	switch cmd {
	case "-A", "--append":
	case "-I", "--insert":
		p.insert(rest, counters, pk, by)
		return
	case "-N", "--new-chain":
		name := strings.TrimSpace(rest)
		if err := checkChainName(name); err != "" || name == "" {
			p.errorf("invalid chain name %q", clip(name))
			return
		}
		p.ensureChain(name).Line = p.line
		return
	case "-X", "--delete-chain":
		p.deleteChain(strings.TrimSpace(rest))
		return
	case "-P", "--policy":
		if p.lenient { // iptables -S lists built-in chains' policies so
			p.policy(rest)
			return
		}
		p.errorf("unsupported command %q (expected -A, -I, -N, -X or -F)", clip(cmd))
		return
	case "-F", "--flush":
		if name := strings.TrimSpace(rest); name == "" {
			for _, c := range p.table.Chains {
				c.Rules = nil
			}
		} else if c := p.table.Chain(name); c != nil {
			c.Rules = nil
		} else {
			p.errorf("flush of unknown chain %q", clip(name))
		}
		return
	default:
		p.errorf("unsupported command %q (expected -A, -I, -N, -X or -F)", clip(cmd))
		return
	}
	chainName, _, _ := strings.Cut(rest, " ")
	if p.lz != nil && !counters && p.lazyBlock(ln, chainName) {
		return
	}
	r := p.rule(ln, chainName, counters, pk, by)
	if r != nil {
		if r.Chain.lazy {
			p.lz.broken = true // a lazy chain's rules are not together
		}
		p.appendRule(r.Chain, r)
	}
}

// ruleListChunk is how many rules the lists of chains are handed out from
// at once.
const ruleListChunk = 4096

// appendRule appends r to the rules of c. A dump lists the rules of a
// chain together: the lists of the chains are handed out one after the
// other from a chunk, a chain's list grown in place while its rules come,
// rather than each list allocated and grown on its own (a nat table has
// tens of thousands of chains of a few rules). A list so handed out has
// no room beyond its rules: an append elsewhere copies it.
func (p *parser) appendRule(c *Chain, r *Rule) {
	n := len(c.Rules)
	if n > 0 && (p.used == 0 || &c.Rules[n-1] != &p.ruleList[p.used-1]) {
		// Not the last list handed out.
		c.Rules = append(c.Rules, r)
		return
	}
	if p.used == len(p.ruleList) {
		// The chunk is full: the list moves to the next one.
		next := make([]*Rule, max(ruleListChunk, 2*n+1))
		p.ruleList, p.used = next, copy(next, c.Rules)
	}
	p.ruleList[p.used] = r
	p.used++
	c.Rules = p.ruleList[p.used-n-1 : p.used : p.used]
}

// insert handles "-I CHAIN [N] ...", stored as the rule's "-A" form.
func (p *parser) insert(rest string, counters bool, pk, by uint64) {
	chainName, opts, _ := strings.Cut(rest, " ")
	pos := 1
	if num, after, _ := strings.Cut(strings.TrimLeft(opts, " "), " "); num != "" && num[0] >= '0' && num[0] <= '9' {
		n, err := strconv.Atoi(num)
		if err != nil || n < 1 {
			p.errorf("invalid rule number %q in -I", clip(num))
			return
		}
		pos, opts = n, after
	}
	raw := "-A " + chainName
	if o := strings.TrimLeft(opts, " "); o != "" {
		raw += " " + o
	}
	r := p.rule(raw, chainName, counters, pk, by)
	if r == nil {
		return
	}
	c := r.Chain
	if pos > len(c.Rules)+1 {
		p.errorf("rule number %d beyond the %d rules of chain %s", pos, len(c.Rules), c.Name)
		return
	}
	c.Rules = append(c.Rules, nil)
	copy(c.Rules[pos:], c.Rules[pos-1:])
	c.Rules[pos-1] = r
}

func (p *parser) deleteChain(name string) {
	if name == "" {
		p.errorf("-X without a chain name")
		return
	}
	c := p.table.Chain(name)
	if c == nil {
		p.errorf("delete of unknown chain %q", clip(name))
		return
	}
	if c.Builtin() {
		p.errorf("cannot delete built-in chain %s", name)
		return
	}
	p.chain = nil
	for i, x := range p.table.Chains {
		if x == c {
			p.table.Chains = append(p.table.Chains[:i], p.table.Chains[i+1:]...)
			break
		}
	}
	p.table.reindexChains()
}

// chainNamed returns the open table's chain called name, nil for none.
// iptables-save lists the rules of the chains in the order of their
// headers: the chain after the last rule's in the table's list is looked
// at before the index.
func (p *parser) chainNamed(name string) *Chain {
	p.lookups++
	if c := p.chain; c != nil && c.Table == p.table && (p.misses < 8 || p.lookups%64 == 0) {
		// c.Index() is c's place in the list unless a chain before it
		// was deleted; names are unique in the list.
		if i := c.Index() + 1; i < len(p.table.Chains) && p.table.Chains[i].Name == name {
			p.misses = 0
			return p.table.Chains[i]
		}
		p.misses++
	}
	return p.table.Chain(name)
}

// newRule returns a zeroed Rule from the current chunk.
func (p *parser) newRule() *Rule {
	if len(p.slab) == 0 {
		p.slab = make([]Rule, 1024)
	}
	r := &p.slab[0]
	p.slab = p.slab[1:]
	return r
}

// rule tokenizes raw ("-A CHAIN opts...") into a Rule of chain.
func (p *parser) rule(raw, chainName string, counters bool, pk, by uint64) *Rule {
	if len(raw) > maxRuleLen {
		p.errorf("rule is %d bytes long, more than the %d this parser accepts", len(raw), maxRuleLen)
		return nil
	}
	if chainName == "" {
		p.errorf("rule without a chain name")
		return nil
	}
	toks, ctrl, err := tokenize(raw, p.toks[:0])
	p.toks = toks
	if err != "" {
		p.errorf("%s", err)
		return nil
	}
	// A chain the rule creates (a built-in chain without a header; in a
	// lenient read, any chain) is made once the rule is read.
	c := p.chain
	if c == nil || c.Table != p.table || c.Name != chainName {
		c = p.chainNamed(chainName)
	}
	if c == nil && !IsBuiltinChain(p.table.Name, chainName) && (!p.lenient || checkChainName(chainName) != "") {
		p.errorf("rule for chain %s, which table %s does not declare", clip(chainName), p.table.Name)
		return nil
	}
	r := p.newRule()
	*r = Rule{Chain: c, Raw: raw, Line: p.line, first: p.argsStart(), targ: noTarget}
	// toks[0] is "-A", toks[1] the chain name.
	var cur *arg
	neg := false
	for i := 2; i < len(toks); i++ {
		t := toks[i]
		s := raw[t.start:t.end]
		if !t.quoted && s == "!" {
			if cur != nil && cur.valLen == 0 && cur.flags&flagNeg == 0 && takesValue(raw[cur.nameOff:int(cur.nameOff)+int(cur.nameLen)]) {
				cur.flags |= flagNeg // old syntax: "--opt ! value"
				continue
			}
			if neg {
				p.errorf("double negation in rule")
				return nil
			}
			neg = true
			continue
		}
		if !t.quoted && isOption(s) && !(cur != nil && cur.valLen == 0 && singleValue(raw[cur.nameOff:int(cur.nameOff)+int(cur.nameLen)])) {
			if len(s) > 255 {
				p.errorf("option %q too long", clip(s))
				return nil
			}
			a := arg{nameOff: uint16(t.start), nameLen: uint8(len(s))}
			if neg {
				a.flags |= flagNeg
				neg = false
			}
			cur = p.addArg(r, a)
			continue
		}
		if cur == nil {
			p.errorf("value %q before any option", clip(s))
			return nil
		}
		if neg {
			p.errorf("\"!\" before value %q (it must precede an option)", clip(s))
			return nil
		}
		if cur.valLen == 0 {
			cur.valOff = uint16(t.start)
			cur.valLen = uint16(t.end - t.start)
			if t.quoted {
				cur.flags |= flagQuoted
				if t.escaped {
					cur.flags |= flagEscaped
				}
			}
		} else {
			// Several values ("--match-set NAME dst,dst"): extend the span.
			if cur.flags&flagQuoted != 0 {
				cur.flags &^= flagQuoted | flagEscaped
				cur.valOff-- // include the opening quote in the span
			}
			end := t.end
			if t.quoted {
				end++ // include the closing quote
			}
			cur.valLen = uint16(end - int(cur.valOff))
		}
	}
	if neg {
		p.errorf("rule ends with \"!\"")
		return nil
	}
	if p.shapes == nil {
		p.shapes = newShapes()
	}
	start := int(r.first % argChunk)
	if msg := checkValues(raw, p.args[start:], p.names, ctrl, p.shapes); msg != "" {
		p.args = p.args[:start]
		p.errorf("%s", msg)
		return nil
	}
	if counters {
		p.d.Counters = true
		if p.d.counters == nil {
			p.d.counters = map[*Rule][2]uint64{}
		}
		p.d.counters[r] = [2]uint64{pk, by}
	}
	if c == nil {
		r.Chain = p.ensureChain(chainName)
	}
	p.chain = r.Chain
	r.narg = uint16(len(p.args) - start)
	p.d.arena[len(p.d.arena)-1] = p.args
	for i := int(r.narg) - 1; i >= 0; i-- {
		a := p.args[start+i]
		if isTarget(raw[a.nameOff : int(a.nameOff)+int(a.nameLen)]) {
			r.targ = uint16(i)
			break
		}
	}
	if p.family == FamilyUnknown {
		p.family = guessFamily(raw, p.args[start:start+int(r.narg)])
	}
	return r
}

// checkValues returns why iptables-restore would refuse a value of the
// rule's options, or "": a prefix length past the address's (/33, /129),
// a port that is not a number from 0 to 65535 (iptables-restore resolves
// service names through /etc/services, which iptables-save never prints
// and an offline reading cannot), a probability outside [0, 1], an empty
// DNAT or SNAT target; and what [checkExtensions] refuses.
//
// With names set, ports may be names (a listing printed without -n). ctrl
// reports whether raw holds a control character: without one, no value
// can hold one. sh, if not nil, are the shapes of the rules read before
// (see [checkExtensions]).
func checkValues(raw string, args []arg, names, ctrl bool, sh *shapes) string {
	if ctrl {
		if msg := checkControl(raw, args); msg != "" {
			return msg
		}
	}
	for _, a := range args {
		name := raw[a.nameOff : int(a.nameOff)+int(a.nameLen)]
		val := raw[a.valOff : int(a.valOff)+int(a.valLen)]
		var msg string
		switch name {
		case "-s", "--source", "--src", "-d", "--destination", "--dst":
			for v := range strings.SplitSeq(val, ",") {
				if msg = checkPrefix(v); msg != "" {
					break
				}
			}
		case "--dport", "--sport", "--destination-port", "--source-port":
			msg = checkPortRange(val, names)
		case "--dports", "--sports", "--ports":
			for v := range strings.SplitSeq(val, ",") {
				if msg = checkPortRange(v, names); msg != "" {
					break
				}
			}
		case "--probability":
			if isDecimalFraction(val) {
				break // as kube-proxy writes it
			}
			if f, err := strconv.ParseFloat(val, 64); err != nil || !(f >= 0 && f <= 1) {
				msg = fmt.Sprintf("probability %q is not a number from 0 to 1", clip(val))
			}
		case "--to-destination", "--to-source":
			if strings.Trim(val, `"`) == "" {
				msg = "empty address"
			}
		}
		if msg != "" {
			return fmt.Sprintf("%s: %s, which iptables-restore refuses", name, msg)
		}
	}
	return checkExtensions(raw, args, sh)
}

// isDecimalFraction reports whether s is "0", "1" or "0." and digits: a
// number from 0 to 1 strconv.ParseFloat takes.
func isDecimalFraction(s string) bool {
	if s == "0" || s == "1" {
		return true
	}
	if len(s) < 3 || s[0] != '0' || s[1] != '.' {
		return false
	}
	for i := 2; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// checkPrefix checks the length of an address's prefix ("10.0.0.0/33").
func checkPrefix(v string) string {
	addr, mask, ok := strings.Cut(v, "/")
	if !ok {
		return ""
	}
	n, err := strconv.Atoi(mask)
	if err != nil {
		if strings.Contains(mask, ".") {
			return "" // a dotted mask (255.255.0.0)
		}
		return fmt.Sprintf("invalid mask %q", clip(mask))
	}
	max := 32
	if strings.Contains(addr, ":") {
		max = 128
	}
	if n < 0 || n > max {
		return fmt.Sprintf("invalid mask /%d of %s (at most /%d)", n, clip(addr), max)
	}
	return ""
}

// checkPortRange checks a port or a range of ports ("80", "1000:2000",
// ":1024"); with names, a port may also be a service name ("domain").
func checkPortRange(v string, names bool) string {
	ports := []string{v}
	if lo, hi, isRange := strings.Cut(v, ":"); isRange {
		ports = []string{lo, hi}
	}
	for i, p := range ports {
		if p == "" && len(ports) == 2 && (i == 1 || ports[1] != "") {
			continue // an open range: ":1024", "1024:"
		}
		if names && isServiceName(p) {
			continue
		}
		if n, err := strconv.ParseUint(p, 10, 32); err != nil || n > 65535 {
			return fmt.Sprintf("port %q is not a number from 0 to 65535", clip(p))
		}
	}
	return ""
}

// Classes of the bytes of a rule, for tokenize: a byte may be of several.
const (
	clsSep     = 1 << iota // separates tokens: space, tab
	clsControl             // a control character (tab included)
	clsQuote               // '"'
	clsEscape              // '\\'
)

// byteClass is the class of every byte (0 for the bytes of a token's
// text).
var byteClass = func() (t [256]uint8) {
	for c := range 0x20 {
		t[c] = clsControl
	}
	t[0x7f] = clsControl
	t[' '] = clsSep
	t['\t'] = clsSep | clsControl
	t['"'] = clsQuote
	t['\\'] = clsEscape
	return t
}()

// tokenize splits a rule into space-separated tokens; a token starting with
// a double quote runs to the closing unescaped quote. ctrl reports whether
// the rule holds a control character (a tab included) anywhere.
func tokenize(s string, toks []token) (_ []token, ctrl bool, err string) {
	var seen uint8 // the classes of the bytes read
	i := 0
	for i < len(s) {
		for i < len(s) && byteClass[s[i]]&clsSep != 0 {
			seen |= byteClass[s[i]]
			i++
		}
		if i >= len(s) {
			break
		}
		if s[i] == '"' {
			j := i + 1
			escaped := false
			for j < len(s) {
				k := byteClass[s[j]]
				if k&(clsQuote|clsEscape) != 0 {
					if k&clsQuote != 0 {
						break
					}
					if j+1 < len(s) {
						escaped = true
						j++
						k = byteClass[s[j]]
					}
				}
				seen |= k
				j++
			}
			if j >= len(s) {
				return toks, false, fmt.Sprintf("unterminated quote in rule at column %d", i+1)
			}
			toks = append(toks, token{start: i + 1, end: j, quoted: true, escaped: escaped})
			i = j + 1
			if i < len(s) && byteClass[s[i]]&clsSep == 0 {
				return toks, false, fmt.Sprintf("unexpected %q after quoted value at column %d", s[i], i+1)
			}
			continue
		}
		j := i
		for j < len(s) {
			k := byteClass[s[j]]
			if k&clsSep != 0 {
				break
			}
			seen |= k
			j++
		}
		toks = append(toks, token{start: i, end: j})
		i = j
	}
	if len(toks) < 2 {
		return toks, false, "rule without a chain name"
	}
	return toks, seen&clsControl != 0, ""
}

// isOption reports whether s is an option name: "-x" or "--xyz".
func isOption(s string) bool {
	if len(s) < 2 || s[0] != '-' {
		return false
	}
	c := s[1]
	if c == '-' {
		return len(s) > 2 && isLetter(s[2])
	}
	return isLetter(c)
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// singleValue lists options whose value is a free string that may itself
// look like an option ("--comment -x").
func singleValue(name string) bool {
	switch name {
	case "--comment", "--log-prefix", "--nflog-prefix", "--nfacct-name", "--name", "--helper":
		return true
	}
	return false
}

// takesValue lists options that take a value, for the old "--opt ! value"
// negation syntax.
func takesValue(name string) bool {
	switch name {
	case "-s", "--source", "-d", "--destination", "-p", "--protocol", "-i", "--in-interface", "-o", "--out-interface",
		"--dport", "--sport", "--ctstate", "--state", "--mark", "--src-type", "--dst-type", "--match-set", "--dports", "--sports":
		return true
	}
	return false
}

// guessFamily returns the family the options args of the rule raw
// imply, read from args as parsed: not through the rule's chain, whose
// rules may be read lazily (a rule of another chain's place, which makes
// the dump read whole, or one a lazy chain's parse is reading).
func guessFamily(raw string, args []arg) Family {
	for _, o := range args {
		a := argOf(raw, o)
		switch a.Name {
		case "-s", "-d", "--source", "--destination":
			if strings.Contains(a.Value, ":") {
				return IPv6
			}
			if strings.Contains(a.Value, ".") {
				return IPv4
			}
		case "--reject-with":
			if strings.HasPrefix(a.Value, "icmp6") {
				return IPv6
			}
		}
	}
	return FamilyUnknown
}

func parseCounters(s string) (uint64, uint64, bool) {
	if s == "[0:0]" {
		return 0, 0, true // a dump without -c
	}
	if len(s) < 5 || s[0] != '[' || s[len(s)-1] != ']' {
		return 0, 0, false
	}
	pk, by, ok := strings.Cut(s[1:len(s)-1], ":")
	if !ok {
		return 0, 0, false
	}
	a, err1 := strconv.ParseUint(pk, 10, 64)
	b, err2 := strconv.ParseUint(by, 10, 64)
	return a, b, err1 == nil && err2 == nil
}

func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func quote(s string) string {
	var b bytes.Buffer
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// isServiceName reports whether s can be a service name of /etc/services
// (a letter, then letters, digits, "-", "_", "." or "+").
func isServiceName(s string) bool {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.', c == '+':
		default:
			return false
		}
	}
	return true
}
