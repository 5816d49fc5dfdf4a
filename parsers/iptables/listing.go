package iptables

import (
	"fmt"
	"net/netip"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/internal/services"
)

// Reasons of the notes ParseListing adds to those of ParseLenient.
const (
	// ReasonNotDetermined: a rule of a listing whose matches the listing
	// does not spell completely (a match or target option it prints in a
	// form that does not say what the rule holds). Its note's Detail says
	// which words.
	ReasonNotDetermined = "not determined by the listing"
	// ReasonUnresolved: a rule read with a host, network or service name
	// where iptables -L without -n printed a name for an address or a
	// port; the name is kept as printed, not resolved (a note of a line
	// that was read, not skipped).
	ReasonUnresolved = "name not resolved"
	// ReasonServiceName: a rule read from a listing without -n whose
	// ports were printed as well-known service names ("dpt:https"), read
	// with their numbers (a built-in table, not the machine's
	// /etc/services); its note's Detail says which.
	ReasonServiceName = "service name read as its port"
)

var reListingCmd = regexp.MustCompile(`(?:^|[\s;|$#])(ip6?tables)(?:-legacy|-nft)?((?: +\S+)*)`)

// ListingCommand returns the table a command line that lists iptables
// rules names (iptables -t nat -L -n, iptables -nL: "filter" without -t),
// and whether t is such a command line at all.
func ListingCommand(t string) (table string, ok bool) {
	m := reListingCmd.FindStringSubmatch(t)
	if m == nil {
		return "", false
	}
	table = "filter"
	args := strings.Fields(m[2])
	for i, a := range args {
		if a == "|" || a == ";" || a == "&&" {
			args = args[:i]
			break
		}
	}
	list := false
	for i, a := range args {
		switch {
		case a == "-t" || a == "--table":
			if i+1 < len(args) {
				table = args[i+1]
			}
		case strings.HasPrefix(a, "--table="):
			table = strings.TrimPrefix(a, "--table=")
		case a == "--list" || strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "L"):
			list = true
		}
	}
	return table, list
}

// listingSegment is the part of a listing that lists one table.
type listingSegment struct {
	table   string // "" when nothing says which
	cmdLine int    // the line of the command that printed it, 0 without
	rows    []listingLine
	chains  map[string]bool
	verbose bool // listed with -v: counters and interfaces
	first   int  // its first line
}

// listingLine is a line of a listing translated into iptables-save's
// form ("" when it has none), or the reason it was not.
type listingLine struct {
	line       int
	text       string
	why        string // ReasonNotDetermined (with detail), or ""
	detail     string
	unresolved string // names printed in place of addresses or ports
	renamed    string // service names read as their ports
	inexact    bool   // counters printed rounded (K, M, G)
}

// ParseListing reads the output of iptables -L (or ip6tables -L), with
// or without -n, -v, -x and --line-numbers, one table or several, into a
// dump as iptables-save would have written it. orig, when not nil, is the
// input before its paste damage was removed (as many lines as data): its
// command lines ("iptables -t nat -L -n") say which table each listing
// is of; without one, the table is the one whose built-in chains the
// listing has, else the one each rule's chain and target imply (see
// [TableOf]).
//
// What a listing does not determine is not guessed: a rule printed with a
// match or target option whose printed form does not say what it holds
// is skipped (ReasonNotDetermined), names printed in place of addresses
// or ports (without -n) are kept as printed and noted
// (ReasonUnresolved), and the dump is [Dump.Partial], saying why: names
// not resolved, rules skipped, a listing without -v (which does not show
// the interfaces rules match), a listing of some chains only, or without
// one of the tables kube-proxy programs (filter and nat); a listing partial
// only by the tables it does not hold is also [Dump.TablesWhole].
func ParseListing(name string, data, orig []byte) (*Dump, []parsers.LineNote, error) {
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	var olines []string
	if orig != nil {
		olines = strings.Split(strings.TrimSuffix(string(orig), "\n"), "\n")
		if len(olines) != len(lines) {
			olines = nil
		}
	}
	words := listingText(lines)
	segs := splitListing(lines, olines)
	p, st := readSegments(name, segs)
	p.lax.notes = append(p.lax.notes, words...)
	unresolved, undetermined, noVerbose, someChains := st.unresolved, st.undetermined, st.noVerbose, st.someChains
	var why []string
	p.lenientEnd()
	d, err := p.finish()
	if err != nil {
		return nil, nil, err
	}
	if unresolved > 0 {
		why = append(why, fmt.Sprintf("%s read with names printed in place of addresses or ports (iptables -L without -n), which are not resolved", count(unresolved, "rule")))
	}
	if undetermined > 0 {
		why = append(why, fmt.Sprintf("%s printed in a form that does not say what it matches", count(undetermined, "rule")))
	}
	if noVerbose > 0 {
		why = append(why, "listed without -v, which does not show the interfaces rules match (-i, -o)")
	}
	var absent []string
	for _, t := range []string{"filter", "nat"} {
		if d.Table(t) == nil {
			absent = append(absent, t)
		}
	}
	tablesOnly := len(why) == 0 && len(absent) > 0 && len(d.Tables) > 0
	if len(absent) > 0 && len(d.Tables) > 0 {
		why = append(why, fmt.Sprintf("table %s not listed (iptables -L lists one table, filter unless -t says another)", strings.Join(absent, " and ")))
	}
	if len(someChains) > 0 {
		why = append(why, fmt.Sprintf("some chains of table %s listed, not all", strings.Join(someChains, " and ")))
	}
	if d.PartialReason != "" {
		// The lenient reader's own reasons, without those of the lines
		// this reader counted.
		for _, r := range strings.Split(d.PartialReason, "; ") {
			if !strings.Contains(r, "not understood, or rules of no known table") || undetermined == 0 {
				why = append(why, r)
			}
		}
	}
	d.Partial, d.PartialReason = len(why) > 0, strings.Join(why, "; ")
	d.TablesWhole = tablesOnly && len(why) == 1
	d.HidesInterfaces = noVerbose > 0
	sort.SliceStable(p.lax.notes, func(i, j int) bool { return p.lax.notes[i].Line < p.lax.notes[j].Line })
	return d, p.lax.notes, nil
}

// segmentStats counts what readSegments could not read as it was.
type segmentStats struct {
	unresolved, undetermined, noVerbose int
	someChains                          []string // tables some of whose built-in chains are not listed
}

// readSegments reads the translated rows of the segments of a listing
// into a lenient parser.
func readSegments(name string, segs []*listingSegment) (*parser, segmentStats) {
	p := newParser(name, nil, true)
	unresolved, undetermined, noVerbose, someChains := 0, 0, 0, []string{}
	exact := true
	for _, s := range segs {
		for _, r := range s.rows {
			exact = exact && !r.inexact
		}
	}
	for _, s := range segs {
		table := s.table
		if table == "" {
			table = builtinTable(s.chains)
		}
		if table == "" {
			table = ruleTable(s)
		}
		p.line = s.first
		if table != "" {
			if t := p.d.Table(table); t != nil {
				for _, r := range s.rows {
					p.line = r.line
					p.skip(ReasonTableNotRead, fmt.Sprintf("table %s is listed twice (first on line %d)", table, t.Line))
				}
				continue
			}
			p.openTable(table)
			if p.table == nil {
				for _, r := range s.rows {
					p.line = r.line
					p.skip(ReasonTableNotRead, fmt.Sprintf("unknown table %q", clip(table)))
				}
				p.skipping = false
				continue
			}
			var missing []string
			for _, c := range BuiltinChains(table) {
				if !s.chains[c] {
					missing = append(missing, c)
				}
			}
			if len(missing) > 0 {
				someChains = append(someChains, table)
			}
		}
		if !s.verbose && len(s.rows) > 0 {
			noVerbose++
		}
		for _, r := range s.rows {
			p.line = r.line
			switch {
			case r.why != "":
				p.skip(r.why, r.detail)
				p.lax.lost++
				undetermined++
			case r.text == "":
			default:
				text := r.text
				if !exact && text[0] == '[' {
					text = strings.TrimLeft(text[strings.IndexByte(text, ']')+1:], " ")
				}
				notes := len(p.lax.notes)
				p.names = r.unresolved != ""
				p.parseLine(text)
				p.names = false
				if r.unresolved != "" && len(p.lax.notes) == notes {
					p.lax.notes = append(p.lax.notes, parsers.LineNote{Line: r.line, Reason: ReasonUnresolved, Detail: r.unresolved})
					unresolved++
				}
				if r.renamed != "" && (len(p.lax.notes) == notes || !p.lax.notes[len(p.lax.notes)-1].Skipped) {
					p.lax.notes = append(p.lax.notes, parsers.LineNote{Line: r.line, Reason: ReasonServiceName, Detail: r.renamed})
				}
			}
		}
		if p.table != nil {
			p.last, p.table = p.table, nil
		}
	}
	return p, segmentStats{unresolved, undetermined, noVerbose, someChains}
}

// splitListing cuts a listing into the listings of its tables: at a
// command line that lists a table, and where a chain is listed a second
// time; and translates its lines.
func splitListing(lines, orig []string) []*listingSegment {
	var segs []*listingSegment
	var cur *listingSegment
	num := false
	open := func(line int) *listingSegment {
		s := &listingSegment{chains: map[string]bool{}, first: line}
		segs = append(segs, s)
		return s
	}
	chain := ""
	for i, l := range lines {
		n := i + 1
		if orig != nil && strings.TrimSpace(l) == "" {
			if t, ok := ListingCommand(orig[i]); ok {
				cur = open(n)
				cur.table, cur.cmdLine = t, n
				chain = ""
				continue
			}
		}
		t := strings.TrimRight(l, " \t\r")
		if t == "" {
			continue
		}
		if m := parsers.ReListingChain.FindStringSubmatch(t); m != nil {
			if cur == nil || cur.chains[m[1]] {
				cur = open(n)
			}
			cur.chains[m[1]] = true
			chain = m[1]
			text := ":" + m[1] + " - [0:0]"
			inexact := false
			if m[2] != "" {
				text = ":" + m[1] + " " + m[2] + " [0:0]"
				pk, e1 := listingCount(m[3])
				by, e2 := listingCount(m[4])
				inexact = m[3] != "" && (!e1 || !e2)
				if m[3] != "" && !inexact {
					text = ":" + m[1] + " " + m[2] + " [" + pk + ":" + by + "]"
				}
			}
			cur.rows = append(cur.rows, listingLine{line: n, text: text, inexact: inexact})
			continue
		}
		if parsers.ReListingHeader.MatchString(strings.TrimLeft(t, " ")) {
			h := strings.Fields(t)
			num = h[0] == "num"
			if cur != nil {
				cur.verbose = cur.verbose || strings.Contains(t, "pkts")
			}
			continue
		}
		if cur == nil || chain == "" {
			if cur == nil {
				cur = open(n)
			}
			cur.rows = append(cur.rows, listingLine{line: n, why: ReasonNotUnderstood, detail: fmt.Sprintf("unexpected line %q", clip(t))})
			continue
		}
		row := listingRow(chain, t, num, cur.verbose)
		row.line = n
		cur.rows = append(cur.rows, row)
	}
	return segs
}

// builtinTable returns the table whose built-in chains a listing lists
// ("" when that does not say).
func builtinTable(chains map[string]bool) string {
	pre, post, fwd, in := chains["PREROUTING"], chains["POSTROUTING"], chains["FORWARD"], chains["INPUT"]
	switch {
	case pre && post && fwd:
		return "mangle"
	case pre && post:
		return "nat"
	case pre && !post && !in && !fwd && chains["OUTPUT"]:
		return "raw"
	case fwd || in && chains["OUTPUT"] && !pre && !post:
		return "filter"
	}
	for c := range chains {
		if t, ok := chainTable(c); ok && !IsBuiltinChain(t, c) {
			return t
		}
	}
	return ""
}

// ruleTable returns the one table the rules of a listing imply, "" when
// they imply none or several.
func ruleTable(s *listingSegment) string {
	found := ""
	for _, r := range s.rows {
		if r.text == "" || r.text[0] == ':' {
			continue
		}
		text := r.text
		if text[0] == '[' {
			text = strings.TrimLeft(text[strings.IndexByte(text, ']')+1:], " ")
		}
		c, target, ct := lineChain(text)
		t, ok := TableOf(c, target, ct)
		switch {
		case !ok:
		case found == "":
			found = t
		case found != t:
			return ""
		}
	}
	return found
}

// protocols are the names iptables -L -n prints protocols numbers for.
var protocols = map[string]string{"0": "", "all": "", "1": "icmp", "6": "tcp", "17": "udp", "132": "sctp", "58": "ipv6-icmp", "icmpv6": "ipv6-icmp"}

// listingRow translates one rule row of a listing into iptables-save's
// form "-A CHAIN ...", with a "[p:b]" prefix when it has counters.
func listingRow(chain, t string, num, verbose bool) listingLine {
	f := fieldsAt(t)
	bad := func(format string, args ...any) listingLine {
		return listingLine{why: ReasonNotDetermined, detail: fmt.Sprintf(format, args...)}
	}
	i := 0
	if num {
		i++
	}
	var counters string
	inexact := false
	if verbose {
		if len(f) < i+2 {
			return listingLine{why: ReasonNotUnderstood, detail: fmt.Sprintf("unexpected line %q", clip(t))}
		}
		pk, e1 := listingCount(f[i].s)
		by, e2 := listingCount(f[i+1].s)
		inexact = !e1 || !e2
		counters = "[" + pk + ":" + by + "] "
		i += 2
	}
	// The target column is blank for a rule without a target: then the
	// protocol is followed by the options column.
	target := ""
	if i+1 < len(f) && !isOpt(f[i+1].s) {
		target = f[i].s
		i++
	}
	need := 4 // prot opt source destination
	if verbose {
		need = 6
	}
	if len(f) < i+need || !isOpt(f[i+1].s) {
		return listingLine{why: ReasonNotUnderstood, detail: fmt.Sprintf("unexpected line %q", clip(t))}
	}
	prot, opt := f[i].s, f[i+1].s
	i += 2
	var in, out string
	if verbose {
		in, out = f[i].s, f[i+1].s
		i += 2
	}
	src, dst := f[i].s, f[i+1].s
	extra := ""
	if i+2 < len(f) {
		extra = t[f[i+2].at:]
	}
	var b strings.Builder
	var names, renamed []string
	b.WriteString("-A " + chain)
	for _, a := range []struct{ flag, v string }{{"-s", src}, {"-d", dst}} {
		v, neg := strings.CutPrefix(a.v, "!")
		addr, name := listingAddr(v)
		if addr == "" {
			continue
		}
		if name {
			names = append(names, v+" (an address)")
		}
		if neg {
			b.WriteString(" !")
		}
		b.WriteString(" " + a.flag + " " + addr)
	}
	for _, a := range []struct{ flag, v string }{{"-i", in}, {"-o", out}} {
		v, neg := strings.CutPrefix(a.v, "!")
		if v == "" || v == "*" || v == "any" {
			continue
		}
		if neg {
			b.WriteString(" !")
		}
		b.WriteString(" " + a.flag + " " + v)
	}
	p, neg := strings.CutPrefix(prot, "!")
	if name, ok := protocols[p]; ok {
		p = name
	}
	if p != "" {
		if neg {
			b.WriteString(" !")
		}
		b.WriteString(" -p " + p)
	}
	switch opt {
	case "-f":
		b.WriteString(" -f")
	case "!f":
		b.WriteString(" ! -f")
	}
	goTo := false
	if x, ok := strings.CutPrefix(extra, "[goto]"); ok && (x == "" || x[0] == ' ') {
		extra, goTo = x, true
	}
	matches, targetOpts, target, err := listingExtras(extra, target)
	if err != "" {
		return bad("%s", err)
	}
	for _, m := range matches {
		b.WriteString(" " + m.text)
		names = append(names, m.names...)
		renamed = append(renamed, m.renamed...)
	}
	if target != "" {
		if goTo {
			b.WriteString(" -g " + target)
		} else {
			b.WriteString(" -j " + target)
		}
		for _, o := range targetOpts {
			b.WriteString(" " + o)
		}
	}
	return listingLine{text: counters + b.String(), unresolved: strings.Join(names, ", "), renamed: strings.Join(renamed, ", "), inexact: inexact}
}

// field is a field of a line and its offset.
type fieldAt struct {
	s  string
	at int
}

// fieldsAt splits t at blanks, keeping each field's offset.
func fieldsAt(t string) []fieldAt {
	var out []fieldAt
	for i := 0; i < len(t); {
		for i < len(t) && (t[i] == ' ' || t[i] == '\t') {
			i++
		}
		j := i
		for j < len(t) && t[j] != ' ' && t[j] != '\t' {
			j++
		}
		if j > i {
			out = append(out, fieldAt{t[i:j], i})
		}
		i = j
	}
	return out
}

// isOpt reports whether s is the opt column of a listing.
func isOpt(s string) bool { return s == "--" || s == "-f" || s == "!f" }

// listingCount returns a counter of a -v listing in iptables-save's form,
// and whether it is exact (not rounded to K, M, G, T).
func listingCount(s string) (string, bool) {
	if s == "" {
		return "0", false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return "0", false
		}
	}
	return s, true
}

// listingAddr returns the address of a source or destination column in
// iptables-save's form ("" for any address), and whether it is a name
// rather than an address.
func listingAddr(v string) (string, bool) {
	switch v {
	case "0.0.0.0/0", "::/0", "anywhere":
		return "", false
	}
	if a, err := netip.ParseAddr(v); err == nil {
		if a.Is4() {
			return v + "/32", false
		}
		return v + "/128", false
	}
	if _, err := netip.ParsePrefix(v); err == nil {
		return v, false
	}
	return v, true
}

// listingMatch is a match of a rule in iptables-save's form.
type listingMatch struct {
	text    string
	names   []string // names in place of ports
	renamed []string // service names read as their ports: "https (443)"
}

// servicePorts returns, for a port, port range or port list printed with
// service names ("https", "8000:http-alt"), the names and their ports
// ("https (443)"), and whether every name is a well-known one (false
// when it has no name).
func servicePorts(v string) ([]string, bool) {
	var out []string
	for _, part := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ':' }) {
		if numericPorts(part) {
			continue
		}
		p, ok := services.Port(part)
		if !ok {
			return nil, false
		}
		out = append(out, fmt.Sprintf("%s (%d)", part, p))
	}
	return out, len(out) > 0
}

// numbered returns a port value with its well-known service names
// replaced by their numbers.
func numbered(v string) string {
	parts := strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ':' })
	var b strings.Builder
	i := 0
	for _, part := range parts {
		j := strings.Index(v[i:], part) + i
		b.WriteString(v[i:j])
		if p, ok := services.Port(part); ok && !numericPorts(part) {
			b.WriteString(strconv.Itoa(int(p)))
		} else {
			b.WriteString(part)
		}
		i = j + len(part)
	}
	b.WriteString(v[i:])
	return b.String()
}

// listingExtras translates the options column of a listing row: the
// matches as iptables-save writes them, the target's options, and the
// target (NOTRACK where the listing says CT). err says what it does not
// understand.
func listingExtras(extra, target string) (matches []listingMatch, targetOpts []string, newTarget, err string) {
	w := listingWords(extra)
	i := 0
	peek := func(k int) string {
		if i+k < len(w) {
			return w[i+k]
		}
		return ""
	}
	for i < len(w) {
		neg := ""
		if w[i] == "!" {
			neg = "! "
			i++
			if i == len(w) {
				return nil, nil, target, "\"!\" at the end of the rule"
			}
		}
		word := w[i]
		switch {
		case strings.HasPrefix(word, "/* "):
			c := strings.TrimSuffix(strings.TrimPrefix(word, "/* "), " */")
			matches = append(matches, listingMatch{text: "-m comment --comment " + saveString(c)})
			i++
		case word == "tcp" || word == "udp" || word == "sctp":
			m := listingMatch{text: "-m " + word}
			i++
			for i < len(w) {
				k, v, ok := strings.Cut(w[i], ":")
				if !ok {
					break
				}
				var flag string
				switch k {
				case "dpt", "dpts":
					flag = "--dport"
				case "spt", "spts":
					flag = "--sport"
				case "flags":
					if f, ok := listingTCPFlags(v); ok && word == "tcp" {
						m.text += " " + f
						i++
						continue
					}
					return nil, nil, target, fmt.Sprintf("%s option %q", word, clip(w[i]))
				case "option", "type", "code":
					return nil, nil, target, fmt.Sprintf("%s option %q", word, clip(w[i]))
				}
				if flag == "" {
					break // the target's options
				}
				pn := ""
				if x, ok := strings.CutPrefix(v, "!"); ok {
					v, pn = x, "! "
				}
				if r, ok := servicePorts(v); ok {
					m.renamed = append(m.renamed, r...)
					v = numbered(v)
				} else if !numericPorts(v) {
					m.names = append(m.names, v+" (a port)")
				}
				m.text += " " + pn + flag + " " + v
				i++
			}
			matches = append(matches, m)
		case word == "multiport":
			if peek(1) != "dports" && peek(1) != "sports" && peek(1) != "ports" || peek(2) == "" {
				return nil, nil, target, "multiport match " + clip(strings.Join(w[i:min(i+3, len(w))], " "))
			}
			v, pn := peek(2), ""
			if x, ok := strings.CutPrefix(v, "!"); ok {
				v, pn = x, "! "
			}
			var renamed []string
			if r, ok := servicePorts(v); ok {
				renamed, v = r, numbered(v)
			}
			m := listingMatch{text: "-m multiport " + pn + "--" + peek(1) + " " + v, renamed: renamed}
			if !numericPorts(v) {
				m.names = append(m.names, v+" (ports)")
			}
			matches = append(matches, m)
			i += 3
		case word == "statistic":
			switch {
			case peek(1) == "mode" && peek(2) == "random" && peek(3) == "probability" && peek(4) != "":
				matches = append(matches, listingMatch{text: "-m statistic --mode random --probability " + peek(4)})
				i += 5
			case peek(1) == "mode" && peek(2) == "nth" && peek(3) == "every" && peek(4) != "":
				s := "-m statistic --mode nth --every " + peek(4)
				i += 5
				if peek(0) == "packet" && peek(1) != "" {
					s += " --packet " + peek(1)
					i += 2
				}
				matches = append(matches, listingMatch{text: s})
			default:
				return nil, nil, target, "statistic match " + clip(strings.Join(w[i:min(i+5, len(w))], " "))
			}
		case word == "recent:":
			s, n, e := listingRecent(w[i+1:])
			if e != "" {
				return nil, nil, target, e
			}
			matches = append(matches, listingMatch{text: "-m recent " + neg + s})
			i += 1 + n
			neg = ""
		case word == "mark" && peek(1) == "match":
			i += 2
			pn := ""
			if peek(0) == "!" {
				pn = "! "
				i++
			}
			if peek(0) == "" {
				return nil, nil, target, "mark match without a value"
			}
			matches = append(matches, listingMatch{text: "-m mark " + pn + "--mark " + peek(0)})
			i++
		case word == "state":
			if peek(1) == "" {
				return nil, nil, target, word + " without a value"
			}
			matches = append(matches, listingMatch{text: "-m state " + neg + "--state " + peek(1)})
			neg = ""
			i += 2
		case conntrackKeys[word]:
			start := i
			if neg != "" {
				start-- // the "!" before it
			}
			s, n, e := listingConntrack(w[start:])
			if e != "" {
				return nil, nil, target, e
			}
			matches = append(matches, listingMatch{text: s})
			i = start + n
			neg = ""
		case word == "icmptype" || word == "icmp":
			s, n, e := listingICMP(w[i:])
			if e != "" {
				return nil, nil, target, e
			}
			if neg != "" {
				return nil, nil, target, "\"!\" before icmp"
			}
			matches = append(matches, listingMatch{text: s})
			i += n
		case word == "connmark" && peek(1) == "match":
			i += 2
			pn := ""
			if v, ok := strings.CutPrefix(peek(0), "!"); ok {
				pn = "! "
				if v == "" {
					i++
				} else {
					w[i] = v
				}
			}
			if peek(0) == "" {
				return nil, nil, target, "connmark match without a value"
			}
			matches = append(matches, listingMatch{text: "-m connmark " + pn + "--mark " + peek(0)})
			i++
		case word == "PHYSDEV" && peek(1) == "match":
			s, n, e := listingPhysdev(w[i+2:])
			if e != "" {
				return nil, nil, target, e
			}
			matches = append(matches, listingMatch{text: s})
			i += 2 + n
		case word == "PKTTYPE" && (peek(1) == "=" || peek(1) == "!=") && peek(2) != "":
			pn := ""
			if peek(1) == "!=" {
				pn = "! "
			}
			matches = append(matches, listingMatch{text: "-m pkttype " + pn + "--pkt-type " + peek(2)})
			i += 3
		case word == "socket":
			// Its options are printed as iptables-save writes them.
			opt := "-m socket"
			i++
			for peek(0) == "--transparent" || peek(0) == "--nowildcard" || peek(0) == "--restore-skmark" {
				opt += " " + peek(0)
				i++
			}
			matches = append(matches, listingMatch{text: opt})
		case (word == "source" || word == "destination") && peek(1) == "IP" && peek(2) == "range" && peek(3) != "":
			flag := map[string]string{"source": "--src-range ", "destination": "--dst-range "}[word]
			i += 3
			if peek(0) == "!" && peek(1) != "" {
				neg = "! "
				i++
			}
			opt := neg + flag + peek(0)
			neg = ""
			i++
			// The source and destination ranges are one match.
			if n := len(matches); n > 0 && strings.HasPrefix(matches[n-1].text, "-m iprange ") {
				matches[n-1].text += " " + opt
			} else {
				matches = append(matches, listingMatch{text: "-m iprange " + opt})
			}
		case word == "#conn":
			s, e := listingConnlimit(peek(1), peek(2), peek(3))
			if e != "" {
				return nil, nil, target, e
			}
			matches = append(matches, listingMatch{text: s})
			i += 4
		case (word == "ADDRTYPE" || word == "addrtype") && peek(1) == "match":
			i += 2
			s := "-m addrtype"
			for peek(0) == "src-type" || peek(0) == "dst-type" {
				v, pn := peek(1), ""
				if x, ok := strings.CutPrefix(v, "!"); ok {
					v, pn = x, "! "
				}
				if v == "" {
					return nil, nil, target, "addrtype match without a type"
				}
				s += " " + pn + "--" + peek(0) + " " + v
				i += 2
			}
			if s == "-m addrtype" {
				return nil, nil, target, "addrtype match " + clip(peek(0))
			}
			for _, l := range []string{"limit-in", "limit-out"} {
				if peek(0) == l {
					s += " --limit-iface-" + strings.TrimPrefix(l, "limit-")
					i++
				}
			}
			matches = append(matches, listingMatch{text: s})
		case word == "match-set":
			if peek(2) == "" {
				return nil, nil, target, "match-set without a set and directions"
			}
			matches = append(matches, listingMatch{text: "-m set " + neg + "--match-set " + peek(1) + " " + peek(2)})
			neg = ""
			i += 3
		case word == "nfacct-name" && peek(1) != "":
			matches = append(matches, listingMatch{text: "-m nfacct --nfacct-name  " + peek(1)})
			i += 2
		case word == "limit:" && peek(1) == "avg" && peek(3) == "burst" && peek(4) != "":
			matches = append(matches, listingMatch{text: "-m limit --limit " + peek(2) + " --limit-burst " + peek(4)})
			i += 5
		case target == "CT" && word == "NOTRACK" && neg == "":
			// The alias -j NOTRACK, which iptables lists as CT.
			target = "NOTRACK"
			i++
		default:
			opts, n, e := listingTarget(target, w[i:])
			if e != "" {
				return nil, nil, target, e
			}
			targetOpts = append(targetOpts, opts...)
			i += n
		}
		if neg != "" {
			return nil, nil, target, fmt.Sprintf("\"!\" before %q", clip(word))
		}
	}
	return matches, targetOpts, target, ""
}

// listingRecent translates what follows "recent:" and returns how many
// words it took.
func listingRecent(w []string) (string, int, string) {
	var mode, seconds, reap, hits, ttl, name, mask, side string
	i := 0
loop:
	for i < len(w) {
		next := ""
		if i+1 < len(w) {
			next = w[i+1]
		}
		switch w[i] {
		case "SET":
			mode = "--set"
		case "CHECK":
			mode = "--rcheck"
		case "UPDATE":
			mode = "--update"
		case "REMOVE":
			mode = "--remove"
		case "reap":
			reap = " --reap"
		case "TTL-Match":
			ttl = " --rttl"
		case "seconds:", "hit_count:", "name:", "side:", "mask:":
			if next == "" {
				return "", 0, "recent match " + w[i] + " without a value"
			}
			switch w[i] {
			case "seconds:":
				seconds = " --seconds " + next
			case "hit_count:":
				hits = " --hitcount " + next
			case "name:":
				name = " --name " + next
			case "side:":
				switch next {
				case "source":
					side = " --rsource"
				case "dest":
					side = " --rdest"
				default:
					return "", 0, "recent match side " + clip(next)
				}
			case "mask:":
				mask = " --mask " + next
			}
			i++
		default:
			break loop
		}
		i++
	}
	if mode == "" {
		return "", 0, "recent match without SET, CHECK, UPDATE or REMOVE"
	}
	return mode + seconds + reap + hits + ttl + name + mask + side, i, ""
}

// listingTarget translates the options of a target at the start of w,
// and returns how many words it took.
func listingTarget(target string, w []string) ([]string, int, string) {
	word := w[0]
	next := ""
	if len(w) > 1 {
		next = w[1]
	}
	notUnderstood := func() ([]string, int, string) {
		return nil, 0, fmt.Sprintf("%q (%s)", clip(word), map[bool]string{true: "an option this reader does not know", false: "an option of target " + target}[target == ""])
	}
	switch target {
	case "DNAT", "SNAT":
		flag := "--to-destination "
		if target == "SNAT" {
			flag = "--to-source "
		}
		switch {
		case strings.HasPrefix(word, "to:"):
			return []string{flag + strings.TrimPrefix(word, "to:")}, 1, ""
		case word == "random" || word == "random-fully" || word == "persistent":
			return []string{"--" + word}, 1, ""
		}
	case "MASQUERADE":
		switch {
		case word == "random" || word == "random-fully":
			return []string{"--" + word}, 1, ""
		case word == "masq" && next == "ports:" && len(w) > 2:
			return []string{"--to-ports " + w[2]}, 3, ""
		}
	case "REJECT":
		if word == "reject-with" && next != "" {
			return []string{"--reject-with " + next}, 2, ""
		}
	case "MARK", "CONNMARK":
		if word != target || next == "" {
			break
		}
		if target == "CONNMARK" && (next == "save" || next == "restore") {
			if o, n := listingConnmarkSave(w[1:]); o != "" {
				return []string{o}, 1 + n, ""
			}
			break
		}
		if len(w) < 3 {
			break
		}
		if x, ok := listingSetXMark(next, w[2]); ok {
			return []string{"--set-xmark " + x}, 3, ""
		}
	case "REDIRECT":
		switch {
		case word == "redir" && next == "ports" && len(w) > 2:
			return []string{"--to-ports " + w[2]}, 3, ""
		case word == "random":
			return []string{"--random"}, 1, ""
		}
	case "TPROXY":
		// "TPROXY redirect 0.0.0.0:4000 mark 0x200/0xffffffff"
		if word == "TPROXY" && next == "redirect" && len(w) > 4 && w[3] == "mark" {
			ip, port, ok := strings.Cut(w[2], ":")
			if j := strings.LastIndexByte(w[2], ':'); j >= 0 {
				ip, port, ok = w[2][:j], w[2][j+1:], true
			}
			if ok {
				return []string{"--on-port " + port + " --on-ip " + strings.Trim(ip, "[]") + " --tproxy-mark " + w[4]}, 5, ""
			}
		}
	case "NFLOG":
		// Each option a word and its value; a prefix with blanks would
		// not say where it ends.
		var opts []string
		n := 0
		for n+1 < len(w) {
			o := map[string]string{"nflog-prefix": "--nflog-prefix ", "nflog-group": "--nflog-group ", "nflog-range": "--nflog-size ", "nflog-size": "--nflog-size ", "nflog-threshold": "--nflog-threshold "}[w[n]]
			if o == "" {
				break
			}
			v := w[n+1]
			if w[n] == "nflog-prefix" {
				v = saveString(v)
			}
			opts = append(opts, o+v)
			n += 2
		}
		if n > 0 && n == len(w) {
			return opts, n, ""
		}
	case "TCPMSS":
		switch {
		case word == "TCPMSS" && next == "clamp" && len(w) > 3 && w[2] == "to" && w[3] == "PMTU":
			return []string{"--clamp-mss-to-pmtu"}, 4, ""
		case word == "TCPMSS" && next == "set" && len(w) > 2:
			return []string{"--set-mss " + w[2]}, 3, ""
		}
	case "CT":
		if word == "CT" {
			if o, n, e := listingCT(w[1:]); e == "" {
				return o, 1 + n, ""
			}
		}
	case "LOG":
		if word == "LOG" {
			o, n, e := listingLOG(w[1:])
			if e != "" {
				return nil, 0, e
			}
			return o, 1 + n, ""
		}
	}
	return notUnderstood()
}

// listingWords splits the options column of a listing into words, a
// "/* comment */" being one.
func listingWords(s string) []string {
	var out []string
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return out
		}
		if strings.HasPrefix(s, "/* ") {
			if j := strings.Index(s, " */"); j >= 0 {
				out = append(out, s[:j+3])
				s = s[j+3:]
				continue
			}
		}
		if s[0] == '"' {
			// A quoted string (LOG's prefix), to the quote that ends the
			// line or comes before a blank.
			if j := quotedEnd(s); j > 0 {
				out = append(out, s[:j+1])
				s = s[j+1:]
				continue
			}
		}
		j := strings.IndexAny(s, " \t")
		if j < 0 {
			j = len(s)
		}
		out = append(out, s[:j])
		s = s[j:]
	}
}

// numericPorts reports whether a port, port range or port list is made
// of numbers only (not service names).
func numericPorts(v string) bool {
	for _, c := range []byte(v) {
		if (c < '0' || c > '9') && c != ':' && c != ',' {
			return false
		}
	}
	return v != ""
}

// listingText blanks the lines of words pasted above and below a listing
// ("Hi, here is the output:", "Thanks!"), from its first line and its
// last up to the first line that is not words (blank lines aside), and
// returns their notes (ReasonText). A chain's header and the columns'
// header are the listing's own, and a rule's row has its "opt" column
// ("--"), which words have not (see isText).
func listingText(lines []string) []parsers.LineNote {
	var notes []parsers.LineNote
	take := func(i int) bool {
		t := strings.TrimSpace(lines[i])
		if t == "" {
			return true
		}
		if parsers.ReListingChain.MatchString(t) || parsers.ReListingHeader.MatchString(t) || !isText(t) {
			return false
		}
		notes = append(notes, parsers.LineNote{Line: i + 1, Reason: ReasonText, Skipped: true})
		lines[i] = ""
		return true
	}
	parsers.TakeAround(len(lines), take)
	return notes
}
