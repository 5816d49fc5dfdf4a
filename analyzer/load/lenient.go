package load

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/internal/fault"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/ipaddr"
	"github.com/proxyscan/proxyscan/parsers/ipset"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/ipvs"
	"github.com/proxyscan/proxyscan/parsers/klog"
	"github.com/proxyscan/proxyscan/parsers/kube"
	"github.com/proxyscan/proxyscan/parsers/metrics"
	"github.com/proxyscan/proxyscan/parsers/modules"
	"github.com/proxyscan/proxyscan/parsers/nft"
	"github.com/proxyscan/proxyscan/parsers/paste"
	"github.com/proxyscan/proxyscan/parsers/sysctl"
)

// readLenient parses a file that is read leniently into r: its paste
// damage is repaired first (package paste), and an iptables dump is read
// as far as it goes (iptables.ParseLenient). Every line removed, changed
// or skipped is in r.notes. A file read as an iptables dump of which
// nothing, or less than half, is one is not analysed (r.note says why):
// notes that quote a rule or two are not a dump. The output of iptables
// -L is read into a dump where it determines the rules
// (iptables.ParseListing).
func readLenient(r *parsed, data []byte, ko kube.Options) {
	name := r.f.name
	if r.kind == parsers.KindIPTablesSave {
		c, early, listing, err := cleanDump(name, data, r.f.lazy)
		if err != nil {
			r.err = err
			return
		}
		parse, what := iptables.ParseLenient, "an iptables dump"
		if early != nil {
			parse = func(string, []byte) (*iptables.Dump, []parsers.LineNote, error) {
				return early.d, early.notes, early.err
			}
		}
		if listing {
			parse = func(name string, clean []byte) (*iptables.Dump, []parsers.LineNote, error) {
				return iptables.ParseListing(name, clean, data)
			}
			what = "an iptables -L listing"
			r.note = "read from an iptables -L listing"
		}
		d, notes, err := parse(name, c.Data)
		if err != nil {
			r.kind, r.note = parsers.KindUnknown, "not analysed: read as "+what+", "+message(err)
			return
		}
		r.notes = append(c.Notes, notes...)
		if bad, good := unread(notes), understood(d); bad > good {
			r.kind, r.notes = parsers.KindUnknown, nil
			r.note = fmt.Sprintf("not analysed: read as %s, %d of its lines are not one and %d are", what, bad, good)
			return
		}
		r.prompt = promptOf(data, c.Notes)
		if f := filteredBy(data, c.Notes); f != "" {
			why := "filtered by `" + f + "` on the command line above it"
			if d.Partial {
				why = d.PartialReason + "; " + why
			}
			d.Partial, d.PartialReason = true, why
		}
		r.value = d
		return
	}
	if binaryUnknown(&r.f, r.kind) {
		return // no line of it is read: none is repaired
	}
	in := data
	if c := paste.Clean(data, paste.Options{LineNumbers: r.f.det.kind == parsers.KindUnknown}); c.Significant() {
		in, r.notes = c.Data, c.Notes
	}
	if r.kind == parsers.KindUnknown && r.note == "" {
		if why := cutBeforeKind(in); why != "" {
			r.note = "not analysed: " + why
		}
	}
	if r.kind == parsers.KindKube {
		if kube.IsDescribe(in) {
			r.note = "read from kubectl describe configmap"
		} else if words, notes := yamlWords(in); notes != nil {
			in, r.notes = words, append(r.notes, notes...)
		}
		r.value, r.err = kube.ParseWith(name, in, ko)
	} else if fn := lenientNoted[r.kind]; fn != nil {
		var notes []parsers.LineNote
		r.value, notes, r.err = fn(name, in)
		if words, listing := wordsAndListing(in, notes); r.err == nil && words > listing {
			// Notes quoting a bit of a listing are no listing.
			what := r.kind
			r.kind, r.value = parsers.KindUnknown, nil
			r.note = fmt.Sprintf("not analysed: read as %s, %d of its lines are words and %d are the listing's", what, words, listing)
			return
		}
		r.notes = append(r.notes, notes...)
	} else if fn := lenientParsers[r.kind]; fn != nil {
		r.value, r.err = fn(name, in)
	} else if fn := parsersByKind[r.kind]; fn != nil {
		r.value, r.err = fn(name, in)
	}
	if _, ok := r.value.(*klog.Log); !ok {
		r.prompt = promptOf(data, r.notes)
	}
	if l, ok := r.value.(*klog.Log); ok && l != nil {
		r.notes = append(r.notes, truncated(l)...)
		r.unit = journalUnit(data, r.notes)
	}
	if l, ok := r.value.(*modules.List); ok && l != nil {
		var why []string
		if l.Headerless {
			why = append(why, "lsmod lines without lsmod's header")
		}
		if f := filteredBy(data, r.notes); f != "" {
			why = append(why, "filtered by `"+f+"` on the command line above it")
		}
		l.Partial = strings.Join(why, "; ")
	}
	if d, ok := r.value.(*ipset.Dump); ok && d != nil {
		setsPartial(d, data, r.notes)
	}
	if d, ok := r.value.(*ipvs.Dump); ok && d != nil {
		if f := filteredBy(data, r.notes); f != "" {
			why := "filtered by `" + f + "` on the command line above it"
			if d.PartialReason != "" {
				why = d.PartialReason + "; " + why
			}
			d.PartialReason = why
		}
	}
	if d, ok := r.value.(*ipaddr.Dump); ok && d != nil {
		addrsPartial(d, data, r.notes)
	}
	if pg, ok := r.value.(*metrics.Page); ok && pg != nil {
		pg.Filter = filteredBy(data, r.notes)
	}
	if l, ok := r.value.(*sysctl.Listing); ok && l != nil {
		l.Filter = filteredBy(data, r.notes)
	}
	if rs, ok := r.value.(*nft.Ruleset); ok && rs != nil && r.kind == parsers.KindNFTText {
		rulesetPartial(rs, data, r.notes)
	}
}

// rulesetPartial makes an nft listing partial, and its kube-proxy tables
// [nft.Table.Cut], where it shows less than whole tables: the command
// line above it lists one chain, set or map (`nft list chain ip
// kube-proxy services`), or is filtered (`nft list ruleset | grep
// 10.96`); or a kube-proxy table of it holds no chain (kube-proxy's
// always holds some), or rules that look up a set or map it does not
// declare (nft refuses such a ruleset: a listing of part of the table).
func rulesetPartial(rs *nft.Ruleset, data []byte, notes []parsers.LineNote) {
	var why []string
	cmd, what := nftCommand(data, notes)
	if cmd != "" {
		why = append(why, fmt.Sprintf("the command line above it (`%s`) lists %s only", cmd, what))
	}
	if f := filteredBy(data, notes); f != "" {
		why = append(why, "filtered by `"+f+"` on the command line above it")
	}
	partial := len(why) > 0
	for _, t := range rs.Tables {
		if t.Name != kpnames.NFTTable {
			continue
		}
		label := "table " + nft.FamilyName(t.Family) + " " + t.Name
		switch undeclared := undeclaredSets(t); {
		case partial:
		case len(t.Chains) == 0:
			why = append(why, label+" holds no chain, which kube-proxy's always holds: it is a listing of part of the table")
		case undeclared != "":
			why = append(why, fmt.Sprintf("%s looks up %s, which it does not declare: it is a listing of part of the table", label, undeclared))
		default:
			continue
		}
		t.Cut = true
	}
	if len(why) == 0 {
		return
	}
	if rs.Partial != "" {
		why = append([]string{rs.Partial}, why...)
	}
	rs.Partial = strings.Join(why, "; ")
}

// undeclaredSets names the first set or map the rules of table t look up
// (@name, outside quoted comments) that t does not declare, or "".
func undeclaredSets(t *nft.Table) string {
	declared := make(map[string]bool, len(t.Sets))
	for _, s := range t.Sets {
		declared[s.Name] = true
	}
	for _, c := range t.Chains {
		for _, r := range c.Rules {
			raw := r.Raw
			if strings.IndexByte(raw, '@') < 0 {
				continue
			}
			quoted := false
			for i := 0; i < len(raw); i++ {
				switch raw[i] {
				case '"':
					quoted = !quoted
				case '\\':
					if quoted {
						i++
					}
				case '@':
					if quoted {
						continue
					}
					// kube-proxy's names hold slashes (affinity-X-ns/name/tcp/port).
					rest := raw[i+1:]
					n := strings.IndexAny(rest, " \t,;{}()")
					if n < 0 {
						n = len(rest)
					}
					if name := rest[:n]; name != "" && !declared[name] {
						if strings.Contains(raw, "map @"+name) {
							return "map " + name
						}
						return "set " + name
					}
				}
			}
		}
	}
	return ""
}

// nftCommand returns the first nft command of the prompt or command lines
// the paste repairs removed from data that lists part of a table (`nft
// list chain ip kube-proxy services`: a chain, set, map or the chains,
// sets or maps without their contents), and what it lists ("chain
// services"); "" when there is none (`nft list ruleset`, `nft list table
// ip kube-proxy` list whole tables).
func nftCommand(data []byte, notes []parsers.LineNote) (cmd, what string) {
	promptLines(data, notes, func(_ int, text string) bool {
		cmd, what = nftListCommand(text)
		return cmd == ""
	})
	return cmd, what
}

// nftListCommand returns the nft list command of a prompt or command
// line's first command (the words from "nft" on) and what it lists, when
// it lists part of a table (see nftCommand).
func nftListCommand(line string) (string, string) {
	first, _, _ := strings.Cut(line, "|")
	words := strings.Fields(first)
	at := slices.IndexFunc(words, func(w string) bool { return w == "nft" || strings.HasSuffix(w, "/nft") })
	if at < 0 {
		return "", ""
	}
	words = words[at:]
	var args []string
	for i := 1; i < len(words); i++ {
		w := words[i]
		if w == ";" || w == "&&" || strings.HasPrefix(w, ">") || strings.HasPrefix(w, "2>") {
			words = words[:i]
			break
		}
		if !strings.HasPrefix(w, "-") {
			args = append(args, w)
		}
	}
	if len(args) < 2 || args[0] != "list" {
		return "", ""
	}
	switch kind := args[1]; kind {
	case "ruleset", "table", "tables":
		return "", ""
	case "chain", "set", "map", "flowtable", "meter":
		name := ""
		if n := len(args); n >= 3 {
			name = " " + args[n-1]
		}
		return strings.Join(words, " "), kind + name
	default: // chains, sets, maps, counters, ...: without what the rules hold
		return strings.Join(words, " "), "the " + kind
	}
}

// setsPartial makes an ipset listing pasted under its command line
// partial where that command shows less than every set whole: `ipset save
// KUBE-CLUSTER-IP` (or list, -L, -S) names the sets it prints, which it
// prints whole, and the sets it does not name are not in it; a filter
// (`ipset list | grep 10.96`) may have dropped any line, of every set.
func setsPartial(d *ipset.Dump, data []byte, notes []parsers.LineNote) {
	var why []string
	if cmd, named := namedSets(data, notes); len(named) > 0 {
		what := "set " + named[0]
		if len(named) > 1 {
			what = "sets " + strings.Join(named, ", ")
		}
		why = append(why, fmt.Sprintf("the command line above it (`%s`) names %s: the other sets are not in it", cmd, what))
	}
	if f := filteredBy(data, notes); f != "" {
		filtered := "filtered by `" + f + "` on the command line above it"
		why = append(why, filtered)
		for _, s := range d.Sets {
			if s.Partial == "" {
				s.Partial = filtered
			}
		}
	}
	if len(why) == 0 {
		return
	}
	if d.PartialReason != "" {
		why = append([]string{d.PartialReason}, why...)
	}
	d.PartialReason = strings.Join(why, "; ")
}

// namedSets returns the first ipset command of the prompt or command lines
// the paste repairs removed from data that prints some sets by name
// (`ipset save KUBE-CLUSTER-IP`, `ipset -L KUBE-NODE-PORT-TCP`), and those
// names; "" and nil when there is none.
func namedSets(data []byte, notes []parsers.LineNote) (cmd string, sets []string) {
	promptLines(data, notes, func(_ int, text string) bool {
		cmd, sets = ipsetCommand(text)
		return len(sets) == 0
	})
	return cmd, sets
}

// ipsetListCommands are ipset's commands that print sets, the sets named
// after them or all.
var ipsetListCommands = map[string]bool{
	"save": true, "-S": true, "-save": true, "--save": true,
	"list": true, "-L": true, "-list": true, "--list": true,
}

// ipsetArgOptions are ipset's options that take a value.
var ipsetArgOptions = map[string]bool{
	"-o": true, "-output": true, "--output": true, "-f": true, "-file": true, "--file": true,
}

// ipsetCommand returns the ipset command of a prompt or command line's
// first command (what a prompt leaves of the line: the words from
// "ipset" on) and the sets it names, when it prints sets.
func ipsetCommand(line string) (string, []string) {
	first, _, _ := strings.Cut(line, "|")
	words := strings.Fields(first)
	at := slices.IndexFunc(words, func(w string) bool { return w == "ipset" || strings.HasSuffix(w, "/ipset") })
	if at < 0 {
		return "", nil
	}
	words = words[at:]
	listing := false
	var sets []string
	for i := 1; i < len(words); i++ {
		w := words[i]
		switch {
		case w == ";" || w == "&&" || strings.HasPrefix(w, ">") || strings.HasPrefix(w, "2>"):
			i = len(words)
			continue
		case ipsetListCommands[w] && !listing:
			listing = true
		case ipsetArgOptions[w]:
			i++
		case strings.HasPrefix(w, "-"):
		case listing:
			sets = append(sets, strings.Trim(w, `'"`))
		default:
			return "", nil // another command (create, add, ...)
		}
	}
	if !listing || len(sets) == 0 {
		return "", nil
	}
	return strings.TrimSpace(strings.Join(words, " ")), sets
}

// cutBeforeKind says why a file of no kind recognised is a Kubernetes
// object cut short before its kind: line ("" when it is not one): its
// first line is apiVersion: at the top level, it has no kind: line there
// (kubectl prints the keys sorted, so kind: follows apiVersion: and a
// ConfigMap's data:), and it ends in the middle of a line or with a key
// without a value, which kubectl never prints.
func cutBeforeKind(data []byte) string {
	lines := bytes.Split(bytes.TrimRight(data, " \t"), []byte("\n"))
	n := len(lines)
	for n > 0 && len(bytes.TrimSpace(lines[n-1])) == 0 {
		n--
	}
	first := 0
	for first < n && len(bytes.TrimSpace(lines[first])) == 0 {
		first++
	}
	if n == 0 || first == n || !bytes.HasPrefix(lines[first], []byte("apiVersion:")) {
		return ""
	}
	for _, l := range lines[first:n] {
		if bytes.HasPrefix(l, []byte("kind:")) || bytes.Equal(l, []byte("---")) {
			return ""
		}
	}
	last := bytes.TrimRight(lines[n-1], " \t\r")
	unterminated := n == len(lines) && !bytes.HasSuffix(data, []byte("\n"))
	if !unterminated && !bytes.HasSuffix(last, []byte(":")) {
		return ""
	}
	return fmt.Sprintf("cut short in line %d: a Kubernetes object (apiVersion: on line %d) ends there before its kind: line (kubectl prints the keys sorted: a ConfigMap's data: before kind:), so its kind is not known", n, first+1)
}

// filteredBy returns the filter (paste.LineFilter) of the first prompt or
// command line the paste repairs removed from data that pipes its output
// through a program keeping only some lines, or "".
func filteredBy(data []byte, notes []parsers.LineNote) string {
	f := ""
	promptLines(data, notes, func(_ int, text string) bool {
		f = paste.LineFilter(text)
		return f == ""
	})
	return f
}

// promptLines calls fn with each prompt or command line the paste repairs
// removed from data (notes say which), in order, while fn returns true.
func promptLines(data []byte, notes []parsers.LineNote, fn func(line int, text string) bool) {
	line, rest := 1, data
	for _, n := range notes {
		if n.Reason != paste.ReasonPrompt && n.Reason != paste.ReasonCommand {
			continue
		}
		if n.Line < line {
			line, rest = 1, data
		}
		for line < n.Line && rest != nil {
			i := bytes.IndexByte(rest, '\n')
			if i < 0 {
				rest = nil
				break
			}
			rest, line = rest[i+1:], line+1
		}
		if line != n.Line {
			return
		}
		text, _, _ := bytes.Cut(rest, []byte("\n"))
		if !fn(n.Line, string(text)) {
			return
		}
	}
}

// promptOf returns the host the prompts data's repairs removed name
// (paste.PromptHost): the one every such prompt names, when none runs its
// command on another host; the zero value when there is none or they
// disagree.
func promptOf(data []byte, notes []parsers.LineNote) hostPrompt {
	var out hostPrompt
	promptLines(data, notes, func(line int, text string) bool {
		host, remote := paste.PromptHost(text)
		switch {
		case remote:
			out = hostPrompt{}
			return false
		case host == "":
		case out.host == "":
			out = hostPrompt{host: host, line: line}
		case out.host != host:
			out = hostPrompt{}
			return false
		}
		return true
	})
	return out
}

// hostPrompt is the host a file's shell prompts name, and the line of the
// first; journal says it is the host the journal's prefixes of a log's
// lines name ("Dec 03 10:01:12 worker-7 kube-proxy[1234]: ...").
type hostPrompt struct {
	host    string
	line    int
	journal bool
}

// dumpParse is what iptables.ParseLenient returned.
type dumpParse struct {
	d     *iptables.Dump
	notes []parsers.LineNote
	err   error
}

// cleanDump repairs the paste damage of an iptables dump (paste.Clean).
// Its quick look for damage runs beside the parse of data as it is: when
// there is none, and data is not an iptables -L listing, early is that
// parse, the one readLenient would make of the cleaned data. listing
// reports whether the cleaned data is an iptables -L listing: the whole
// of a large dump is looked at once for it. The error is a panic of
// either. lazy reads the rules of kube-proxy's per-Service chains of the
// early parse lazily (iptables.ParseLenientLazy).
func cleanDump(name string, data []byte, lazy bool) (c *paste.Result, early *dumpParse, listing bool, err error) {
	var damaged bool
	g := fault.Group{Name: "load.cleanDump"}
	g.Go(func() error {
		damaged = paste.MayBeDamaged(data, paste.All)
		return nil
	})
	listing = parsers.IsIPTablesListing(data)
	if !listing {
		early = &dumpParse{}
		if lazy {
			early.d, early.notes, early.err = iptables.ParseLenientLazy(name, data, kpnames.IsServiceChain)
		} else {
			early.d, early.notes, early.err = iptables.ParseLenient(name, data)
		}
	}
	if err := g.Wait(); err != nil {
		return nil, nil, false, err
	}
	if !damaged {
		return &paste.Result{Data: data}, early, listing, nil
	}
	c = paste.Clean(data, paste.All)
	return c, nil, parsers.IsIPTablesListing(c.Data), nil
}

// ReasonTruncated is the reason of the notes of log lines that whatever
// printed them cut short with "…" (systemctl status does, to the width
// of its terminal): read as far as they go.
const ReasonTruncated = "cut with …"

// truncated notes the lines of a log that end in "…".
func truncated(l *klog.Log) []parsers.LineNote {
	var out []parsers.LineNote
	for _, e := range l.Entries {
		if !e.Truncated {
			continue
		}
		for i, raw := range strings.Split(e.Raw, "\n") {
			if strings.HasSuffix(raw, "…") {
				out = append(out, parsers.LineNote{Line: e.Pos.Line + i, Reason: ReasonTruncated})
			}
		}
	}
	return out
}

// lenientParsers are the parsers of the kinds that read more of a file
// leniently than strictly (an ipset listing cut short, an ipset save cut
// in its last line).
var lenientParsers = map[parsers.Kind]parseFunc{
	parsers.KindIPSetList: func(name string, data []byte) (any, error) { return ipset.ParseLenient(name, data) },
	parsers.KindIPSetSave: func(name string, data []byte) (any, error) { return ipset.ParseLenient(name, data) },
}

// lenientNoted are the lenient parsers that skip lines, and say which.
var lenientNoted = map[parsers.Kind]func(string, []byte) (any, []parsers.LineNote, error){
	parsers.KindIPVSList: func(name string, data []byte) (any, []parsers.LineNote, error) {
		return ipvs.ParseLenient(name, data)
	},
	// A page cut inside a histogram (a paste, a grep) is read as far as
	// it goes.
	parsers.KindMetrics: func(name string, data []byte) (any, []parsers.LineNote, error) {
		return metrics.ParseLenient(name, data)
	},
	// An nft list ruleset cut short (a paste that stops) is read as far
	// as it goes, partial.
	parsers.KindNFTText: func(name string, data []byte) (any, []parsers.LineNote, error) {
		return nft.ParseTextLenient(name, data)
	},
}

// message returns an input error's message without its position.
func message(err error) string {
	var l parsers.ErrorList
	if errors.As(err, &l) && len(l) > 0 {
		return l[0].Msg
	}
	var e *parsers.Error
	if errors.As(err, &e) {
		return e.Msg
	}
	return err.Error()
}

// unread counts the lines an iptables dump read leniently could not take.
func unread(notes []parsers.LineNote) int {
	n := 0
	for _, x := range notes {
		switch x.Reason {
		case iptables.ReasonNotUnderstood, iptables.ReasonTableNotKnown, iptables.ReasonCutShort, iptables.ReasonNotDetermined,
			iptables.ReasonText: // a file mostly of words is no dump
			n++
		}
	}
	return n
}

// understood counts the lines of a dump that were read: table headers,
// chain headers and rules.
func understood(d *iptables.Dump) int {
	n := 0
	for _, t := range d.Tables {
		if !t.Implicit {
			n++
		}
		for _, c := range t.Chains {
			if c.Line > 0 {
				n++
			}
			n += len(c.Rules)
		}
	}
	return n
}

// wordsAndListing counts the lines of a listing read leniently that were
// skipped as words around it (parsers.ReasonText) and its other lines that
// are not blank.
func wordsAndListing(data []byte, notes []parsers.LineNote) (words, listing int) {
	for _, n := range notes {
		if n.Reason == parsers.ReasonText {
			words++
		}
	}
	if words == 0 {
		return 0, 0
	}
	for _, l := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			listing++
		}
	}
	return words, listing - words
}

// yamlWords blanks the lines of words pasted above and below a YAML
// export ("Hi, here is the ConfigMap:", "Thanks, Alice"), from its first
// line and its last up to the first line of YAML (blank lines and
// comments aside), and returns the text and their notes
// (parsers.ReasonText); nil notes, and data as it is, when there are none
// or the export is JSON. A line of words starts with a letter in the
// first column and has no colon, or a space before its first: kubectl
// writes no such line at a document's top level, and a block's lines are
// indented.
func yamlWords(data []byte) ([]byte, []parsers.LineNote) {
	if kube.IsJSON(data) {
		return data, nil
	}
	lines := bytes.Split(data, []byte("\n"))
	var notes []parsers.LineNote
	parsers.TakeAround(len(lines), func(i int) bool {
		words, blank := yamlWordsLine(lines[i])
		if words {
			notes = append(notes, parsers.LineNote{Line: i + 1, Reason: parsers.ReasonText, Skipped: true})
		}
		return words || blank
	})
	if notes == nil {
		return data, nil
	}
	out := bytes.Clone(data)
	lines = bytes.Split(out, []byte("\n"))
	for _, n := range notes {
		for j := range lines[n.Line-1] {
			lines[n.Line-1][j] = ' '
		}
	}
	return out, notes
}

// yamlWordsLine tells whether a line of a YAML export is words pasted
// around it (see yamlWords), or blank or a comment, which yamlWords
// passes over.
func yamlWordsLine(l []byte) (words, blank bool) {
	l = bytes.TrimRight(l, "\r")
	switch {
	case len(bytes.TrimSpace(l)) == 0 || l[0] == '#':
		return false, true
	case !(l[0] >= 'A' && l[0] <= 'Z' || l[0] >= 'a' && l[0] <= 'z'):
		return false, false
	}
	key, _, ok := bytes.Cut(l, []byte(":"))
	return !ok || bytes.ContainsAny(key, " \t"), false // else a key: YAML
}

// yamlWordsAbove reports whether the head of a YAML export starts with a
// line of words (see yamlWords): "Hi team, here is the ConfigMap:" reads
// as YAML, a key of no value, which decoding the stream would pass over
// in silence. Only whole lines of head are looked at.
func yamlWordsAbove(head []byte) bool {
	if kube.IsJSON(head) {
		return false
	}
	for len(head) > 0 {
		l, rest, whole := bytes.Cut(head, []byte("\n"))
		if !whole {
			return false // cut short: read on as YAML
		}
		words, blank := yamlWordsLine(l)
		if !blank {
			return words
		}
		head = rest
	}
	return false
}
