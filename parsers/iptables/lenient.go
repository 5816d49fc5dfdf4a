package iptables

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/proxyscan/proxyscan/parsers"
)

// Reasons of the lines ParseLenient skips.
const (
	// ReasonNotUnderstood: a line Parse would refuse; its note's Detail
	// is Parse's error.
	ReasonNotUnderstood = "not understood"
	// ReasonCutShort: the last line of a dump that ends in the middle of
	// it.
	ReasonCutShort = "cut short"
	// ReasonTableNotKnown: a rule without a table header whose chain and
	// target do not say which table it belongs to.
	ReasonTableNotKnown = "table not known"
	// ReasonTableNotRead: the lines of a table that is not read (an
	// unknown table, or a second copy of one).
	ReasonTableNotRead = "table not read"
	// ReasonStrayCommit: a COMMIT outside a table.
	ReasonStrayCommit = "COMMIT outside a table"
	// ReasonText: a line of words outside any table ("Hi, here is the
	// output:" above a pasted dump, "thanks" below it), which holds no
	// rule or part of one (see isText).
	ReasonText = parsers.ReasonText
)

// The unexported names are the ones the parser uses.
const (
	reasonNotUnderstood = ReasonNotUnderstood
	reasonTableNotRead  = ReasonTableNotRead
	reasonStrayCommit   = ReasonStrayCommit
)

// laxState is what a lenient parse records besides the dump.
type laxState struct {
	notes []parsers.LineNote
	// lastLine is the last line that is not blank.
	lastLine int
	// lost counts the lines that may have held rules and were skipped: not
	// understood, or rules of no known table.
	lost int
	// cut lists the tables without COMMIT ("nat (line 3)").
	cut []string
	// outside counts the lines read without a table header, tables the
	// tables they went to.
	outside int
	tables  []string
	// pending are declarations outside a table (":CHAIN ...", "-N",
	// "-P") of a chain in more than one table: they go to the one table
	// that has the chain once every rule is read.
	pending []pendingLine
	// logged is set when lines were read from a kube-proxy log line.
	logged bool
}

// pendingLine is a line read once the tables are known.
type pendingLine struct {
	line  int
	text  string
	chain string
}

// skip notes that the current line was skipped for a reason.
func (p *parser) skip(reason, detail string) {
	if n := len(p.lax.notes); n > 0 && p.lax.notes[n-1].Line == p.line {
		return // one note a line
	}
	p.lax.notes = append(p.lax.notes, parsers.LineNote{Line: p.line, Reason: reason, Skipped: true, Detail: detail})
	if reason == ReasonNotUnderstood {
		p.lax.lost++
	}
}

// cutShort records a table that has no COMMIT.
func (p *parser) cutShort(t *Table) {
	if t.Implicit {
		return
	}
	p.lax.cut = append(p.lax.cut, fmt.Sprintf("table %s (line %d) has no COMMIT", t.Name, t.Line))
}

// outside reads a chain header or a command that is not inside a table:
// in the table its chain and target imply, made when the dump has none of
// that name yet.
func (p *parser) outside(ln string, read func(string)) {
	chain, target, ctstate := lineChain(ln)
	decl := declaration(ln)
	name, ok := "", false
	switch {
	case decl && builtinAnywhere(chain):
		// Every table has INPUT, OUTPUT, ...: the declaration goes to
		// the one whose rules use the chain, if one does.
	case decl:
		name, ok = TableOf(chain, "", false)
	default:
		name, ok = TableOf(chain, target, ctstate)
	}
	if !ok {
		if decl {
			p.lax.pending = append(p.lax.pending, pendingLine{p.line, ln, chain})
			return
		}
		p.skip(ReasonTableNotKnown, unknownTable(chain))
		p.lax.lost++ // a rule
		return
	}
	t := p.d.Table(name)
	made := t == nil
	if made {
		t = &Table{Name: name, Dump: p.d, Implicit: true}
		p.d.Tables = append(p.d.Tables, t)
	}
	if decl && ln[0] == ':' {
		if c := t.Chain(chain); c != nil && c.Line > 0 {
			// The same chain of another table (iptables-save lists
			// KUBE-SERVICES in filter and nat).
			p.skip(ReasonTableNotKnown, fmt.Sprintf("chain %s is declared twice (first on line %d): it is in more than one table", clip(chain), c.Line))
			return
		}
	}
	notes := len(p.lax.notes)
	p.table = t
	read(ln)
	p.table = nil
	if len(p.lax.notes) > notes {
		// The line was not read: a table made for it goes.
		if made && len(t.Chains) == 0 {
			p.d.Tables = p.d.Tables[:len(p.d.Tables)-1]
		}
		return
	}
	if made {
		p.lax.tables = append(p.lax.tables, name)
		t.Comments, p.pending = p.pending, nil // the comments before its first line
	}
	p.lax.outside++
	// Comments that follow go after the last table, as Format writes
	// them.
	p.last = p.d.Tables[len(p.d.Tables)-1]
}

// count returns "1 line", "2 lines".
func count(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// unknownTable says why the table of a rule of chain is not known.
func unknownTable(chain string) string {
	switch chain {
	case "KUBE-SERVICES", "KUBE-NODEPORTS", "KUBE-PROXY-CANARY", "KUBE-KUBELET-CANARY":
	default:
		if !builtinAnywhere(chain) {
			return fmt.Sprintf("chain %s is not one of kube-proxy's, whose tables are known", clip(chain))
		}
	}
	return fmt.Sprintf("chain %s is in more than one table, and the rule's target does not say which", clip(chain))
}

// builtinAnywhere reports whether chain is a built-in chain of some table.
func builtinAnywhere(chain string) bool {
	for t := range builtinChains {
		if IsBuiltinChain(t, chain) {
			return true
		}
	}
	return false
}

// declaration reports whether a line declares a chain or sets its policy
// rather than adding a rule.
func declaration(ln string) bool {
	return ln[0] == ':' || strings.HasPrefix(ln, "-N ") || strings.HasPrefix(ln, "-P ") ||
		strings.HasPrefix(ln, "--new-chain ") || strings.HasPrefix(ln, "--policy ")
}

// declared reports whether c is a chain its table declares on a line of its
// own (not only one a rule used); nil, a chain the table does not have yet
// (one of the lines of one table), is not.
func declared(c *Chain) bool { return c != nil && c.Line > 0 }

// resolvePending reads the pending declarations in the one table that has
// their chain, and skips the others.
func (p *parser) resolvePending() {
	headers := map[string]int{} // a chain's headers: one of each table it is in
	for _, pl := range p.lax.pending {
		if pl.text[0] == ':' {
			headers[pl.chain]++
		}
	}
	for _, pl := range p.lax.pending {
		p.line = pl.line
		if pl.text[0] == ':' && headers[pl.chain] > 1 {
			p.skip(ReasonTableNotKnown, fmt.Sprintf("chain %s is declared %d times: it is in more than one table", clip(pl.chain), headers[pl.chain]))
			continue
		}
		var in []*Table
		for _, t := range p.d.Tables {
			if t.Chain(pl.chain) != nil {
				in = append(in, t)
			}
		}
		if len(in) == 0 && len(p.d.Tables) == 1 && (pl.text[0] != '-' || !strings.HasPrefix(pl.text, "-P ") || IsBuiltinChain(p.d.Tables[0].Name, pl.chain)) {
			// The lines of one table (iptables -t nat -S): a built-in
			// chain's policy, or a chain no rule uses, is that table's.
			in = p.d.Tables
		}
		if len(in) != 1 || pl.text[0] == ':' && declared(in[0].Chain(pl.chain)) {
			why := "is in more than one table"
			if len(in) == 0 {
				why = "has no rule in this input that says which table it is in"
			}
			p.skip(ReasonTableNotKnown, fmt.Sprintf("chain %s %s", clip(pl.chain), why))
			continue
		}
		p.table = in[0]
		if pl.text[0] == ':' {
			p.chainHeader(pl.text)
		} else {
			p.command(pl.text)
		}
		p.table = nil
	}
	p.lax.pending = nil
}

// policy reads "-P CHAIN POLICY", which iptables -S prints for the
// built-in chains.
func (p *parser) policy(rest string) {
	name, rest := field(rest)
	policy, rest := field(rest)
	switch {
	case !IsBuiltinChain(p.table.Name, name):
		p.errorf("-P for %q, which is not a built-in chain of table %s", clip(name), p.table.Name)
	case policy != "ACCEPT" && policy != "DROP" || strings.TrimSpace(rest) != "":
		p.errorf("malformed -P %s (want -P CHAIN ACCEPT or DROP)", clip(name))
	default:
		p.ensureChain(name).setPolicy(policy)
	}
}

// isLoggedPayload recognises the kube-proxy log line of a failed
// iptables-restore with the lines around the failure (pkg/proxy/iptables
// proxier.go: "Failed to execute iptables-restore" ... rules=[{"Line":N,
// "Data":"..."}, ...], utiliptables.ExtractLines).
func isLoggedPayload(ln string) bool {
	// A rule has no '{': looking for one is quicker than for the text.
	return strings.IndexByte(ln, '{') >= 0 && strings.Contains(ln, `rules=[{"Line":`) && strings.Contains(ln, "iptables-restore")
}

// loggedPayload reads the lines of the restore input a log line quotes,
// each at the log line's position.
func (p *parser) loggedPayload(ln string) {
	i := strings.Index(ln, `rules=[{"Line":`)
	var lines []struct {
		Line int
		Data string
	}
	if err := json.NewDecoder(strings.NewReader(ln[i+len("rules="):])).Decode(&lines); err != nil {
		p.errorf("the rules of this log line are not JSON: %v", err)
		return
	}
	p.lax.logged = true
	for _, l := range lines {
		t := strings.TrimSpace(l.Data)
		switch {
		case t == "":
		case strings.ContainsFunc(t, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }):
			// A line of restore input holds no line break or other
			// control character; the log quotes something else.
			p.skip(ReasonNotUnderstood, fmt.Sprintf("line %d quoted by the log holds a control character", l.Line))
		default:
			p.parseLine(t)
		}
	}
}

// lineChain returns the chain a chain header or command names, the target
// of a rule, and whether the rule matches a conntrack state.
func lineChain(ln string) (chain, target string, ctstate bool) {
	if ln[0] == ':' {
		chain, _ = field(ln[1:])
		return chain, "", false
	}
	if ln[0] == '[' {
		if i := strings.IndexByte(ln, ']'); i >= 0 {
			ln = ln[i+1:]
		}
	}
	toks, _, _ := tokenize(ln, nil)
	words := make([]string, len(toks))
	for i, t := range toks {
		words[i] = ln[t.start:t.end]
	}
	if len(words) > 1 {
		chain = words[1]
	}
	for i, w := range words {
		switch {
		case isTarget(w) && i+1 < len(words):
			target = words[i+1]
		case w == "--ctstate" || w == "--state":
			ctstate = true
		}
	}
	return chain, target, ctstate
}

// Chains that are in one table only.
var (
	natPrefixes = []string{"KUBE-SVC-", "KUBE-SEP-", "KUBE-SVL-", "KUBE-EXT-", "KUBE-FW-", "KUBE-XLB-"}
	natChains   = map[string]bool{
		"KUBE-MARK-MASQ": true, "KUBE-MARK-DROP": true, "KUBE-POSTROUTING": true, "KUBE-LOAD-BALANCER": true,
		"KUBE-NODE-PORT": true, "KUBE-LOOP-BACK": true, "PREROUTING": true, "POSTROUTING": true,
	}
	filterChains = map[string]bool{
		"KUBE-FORWARD": true, "KUBE-FIREWALL": true, "KUBE-PROXY-FIREWALL": true, "KUBE-EXTERNAL-SERVICES": true,
		"KUBE-IPVS-FILTER": true, "KUBE-IPVS-OUT-FILTER": true, "KUBE-SOURCE-RANGES-FIREWALL": true,
		"INPUT": true, "FORWARD": true,
	}
	natTargets = map[string]bool{"DNAT": true, "SNAT": true, "MASQUERADE": true, "REDIRECT": true, "NETMAP": true}
)

// chainTable returns the table a chain name implies.
func chainTable(chain string) (string, bool) {
	for _, p := range natPrefixes {
		if strings.HasPrefix(chain, p) {
			return "nat", true
		}
	}
	switch {
	case natChains[chain]:
		return "nat", true
	case filterChains[chain]:
		return "filter", true
	}
	return "", false
}

// TableOf returns the table a rule of chain belongs to when the dump does
// not say (a fragment without "*table" headers), as kube-proxy lays its
// rules out: its per-service chains (KUBE-SVC-, KUBE-SEP-, KUBE-SVL-,
// KUBE-EXT-, KUBE-FW-, KUBE-XLB-), KUBE-MARK-MASQ, KUBE-POSTROUTING and
// the IPVS mode's KUBE-LOAD-BALANCER and KUBE-NODE-PORT are nat;
// KUBE-FORWARD, KUBE-FIREWALL, KUBE-PROXY-FIREWALL, KUBE-EXTERNAL-SERVICES
// and the IPVS filter chains are filter. KUBE-SERVICES and KUBE-NODEPORTS
// are in both: their rules go by target (DNAT or a nat chain: nat; REJECT,
// DROP, and ACCEPT in KUBE-NODEPORTS, a health check port: filter), as do
// those of OUTPUT, whose jump to KUBE-SERVICES is filter's when it
// matches a conntrack state (ctstate). For a chain header (target "")
// only the chain decides. ok is false when nothing decides.
func TableOf(chain, target string, ctstate bool) (table string, ok bool) {
	if t, ok := chainTable(chain); ok {
		return t, true
	}
	if target == "" {
		return "", false
	}
	switch {
	case natTargets[target]:
		return "nat", true
	case target == "REJECT":
		return "filter", true
	case chain == "OUTPUT" && target == "KUBE-SERVICES":
		if ctstate {
			return "filter", true
		}
		return "nat", true
	case chain == "KUBE-SERVICES":
		switch target {
		case "DROP":
			return "filter", true
		case "ACCEPT", "RETURN", "KUBE-NODEPORTS":
			return "nat", true // IPVS mode's nat KUBE-SERVICES
		}
	case chain == "KUBE-NODEPORTS":
		switch target {
		case "ACCEPT", "DROP":
			return "filter", true
		case "RETURN":
			return "nat", true
		}
	}
	if t, ok := chainTable(target); ok {
		return t, true
	}
	return "", false
}

// lenientEnd closes a lenient parse: an open table is cut short, a last
// line that was not understood is where the input was cut, and the dump
// is partial when anything it should hold may be missing.
func (p *parser) lenientEnd() {
	if p.table != nil {
		p.cutShort(p.table)
		p.last, p.table = p.table, nil
	}
	if n := len(p.lax.notes); n > 0 {
		if last := &p.lax.notes[n-1]; last.Line == p.lax.lastLine && last.Reason == ReasonNotUnderstood {
			last.Reason = ReasonCutShort
			p.lax.cut = append(p.lax.cut, fmt.Sprintf("its last line (%d) ends in the middle of a rule", last.Line))
			p.lax.lost--
		}
	}
	p.resolvePending()
	var why []string
	if len(p.lax.cut) > 0 {
		why = append(why, "cut short: "+strings.Join(p.lax.cut, ", "))
	}
	if p.lax.outside > 0 {
		why = append(why, fmt.Sprintf("%s without a table header (a fragment, such as the output of iptables-save | grep), read into table %s by their chains and targets",
			count(p.lax.outside, "line"), strings.Join(p.lax.tables, " and ")))
	}
	var u []string // "table chain" of chains given rules without a declaration
	for _, t := range p.d.Tables {
		for _, c := range t.Chains {
			if c.Line == 0 && len(c.Rules) > 0 && !c.Builtin() {
				u = append(u, t.Name+" "+c.Name)
			}
		}
	}
	if len(u) > 0 {
		sort.Strings(u)
		list := u
		if len(list) > 3 {
			list = list[:3]
		}
		more := ""
		if len(u) > 3 {
			more = " and " + strconv.Itoa(len(u)-3) + " more"
		}
		why = append(why, fmt.Sprintf("%s with rules but no declaration (%s%s)", count(len(u), "chain"), strings.Join(list, ", "), more))
	}
	if p.lax.logged {
		why = append(why, "rules quoted by a kube-proxy log line (the lines around a failed iptables-restore)")
	}
	if p.lax.lost > 0 {
		why = append(why, fmt.Sprintf("%s skipped (not understood, or rules of no known table)", count(p.lax.lost, "line")))
	}
	if len(why) > 0 {
		p.d.Partial, p.d.PartialReason = true, strings.Join(why, "; ")
	}
}

// isText reports whether a line outside any table is words of the person
// who pasted the dump rather than a rule or a rule's part cut by a
// terminal's wrapping: no word starts with '-' (an option, a command),
// names a kube-proxy chain, holds an address (10.96.0.10, a prefix's '/',
// two colons of an IPv6 address), a quote (a comment's end) or '='.
func isText(ln string) bool {
	for _, w := range strings.Fields(ln) {
		switch {
		case w[0] == '-', strings.Contains(w, "KUBE-"), strings.ContainsAny(w, `"'/=`):
			return false
		case strings.Count(w, ":") > 1, parsers.DottedDigits(w):
			return false
		}
	}
	return true
}
