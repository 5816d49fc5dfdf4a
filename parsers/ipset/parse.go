package ipset

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/proxyscan/proxyscan/parsers"
)

// MaxLineLength is the longest input line the parser accepts.
const MaxLineLength = 64 << 10

const maxErrors = 10

// Create options that take a value; the others (counters, comment,
// skbinfo, forceadd) are flags.
var valueOptions = map[string]bool{
	"family": true, "hashsize": true, "maxelem": true, "bucketsize": true, "initval": true,
	"timeout": true, "netmask": true, "markmask": true, "range": true, "size": true, "bitmask": true,
}

var flagOptions = map[string]bool{"counters": true, "comment": true, "skbinfo": true, "forceadd": true}

// Entry options that take a value; nomatch is a flag.
var entryValueOptions = map[string]bool{
	"timeout": true, "packets": true, "bytes": true, "comment": true,
	"skbmark": true, "skbprio": true, "skbqueue": true,
}

// line is one input line.
type line = parsers.Line

type parser struct {
	// lenient is set by ParseLenient: a set listing fewer members than
	// it says it has is partial rather than an error.
	lenient bool
	// terse says a set of the listing was listed without its
	// "Members:" line, as `ipset list -t` prints it; terseHides that one
	// such set has entries it does not list.
	terse, terseHides bool
	name              string
	errs              parsers.ErrorList
	d                 *Dump
	sets              map[string]*Set
}

func (p *parser) errorf(pos parsers.Pos, format string, args ...any) {
	if len(p.errs) < maxErrors {
		p.errs.Add(pos, format, args...)
	}
}

func splitLines(name string, data []byte) ([]line, error) {
	return parsers.Lines(name, data, MaxLineLength)
}

// Parse reads `ipset save` or `ipset list` output, telling them apart by
// their first line. Blank lines and # comments are skipped in the save
// form (in the list form a blank line ends a set).
func Parse(name string, data []byte) (*Dump, error) {
	lines, err := splitLines(name, data)
	if err != nil {
		return nil, err
	}
	for _, l := range lines {
		t := strings.TrimSpace(l.Text)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if strings.HasPrefix(t, "Name: ") || t == "Name:" {
			return parseList(name, lines)
		}
		if strings.HasPrefix(t, "create ") || strings.HasPrefix(t, "add ") {
			return parseSave(name, lines)
		}
		return nil, parsers.Errorf(l.Pos, "not ipset output: %s", quoteShort(l.Text))
	}
	return nil, parsers.Errorf(parsers.Pos{File: name}, "empty input: no ipset create line or Name: block")
}

func quoteShort(s string) string {
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return strconv.Quote(s)
}

// fields splits a line at spaces, keeping "quoted strings" (without the
// quotes) as one field; quoted reports which fields were quoted.
func fields(s string) (f []string, quoted []bool, msg string) {
	i := 0
	for i < len(s) {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i >= len(s) {
			break
		}
		if s[i] == '"' {
			j := strings.IndexByte(s[i+1:], '"')
			if j < 0 {
				return nil, nil, "unterminated quoted string"
			}
			f = append(f, s[i+1:i+1+j])
			quoted = append(quoted, true)
			i += j + 2
			if i < len(s) && s[i] != ' ' && s[i] != '\t' {
				return nil, nil, "text after a quoted string"
			}
			continue
		}
		j := i
		for j < len(s) && s[j] != ' ' && s[j] != '\t' {
			j++
		}
		if strings.IndexByte(s[i:j], '"') >= 0 {
			return nil, nil, "stray quote in " + strconv.Quote(s[i:j])
		}
		f = append(f, s[i:j])
		quoted = append(quoted, false)
		i = j
	}
	return f, quoted, ""
}

// parseOptions reads create options (header) after the type.
func parseOptions(f []string, quoted []bool) ([]Option, string) {
	var opts []Option
	seen := map[string]bool{}
	for i := 0; i < len(f); i++ {
		k := f[i]
		if quoted[i] {
			return nil, "unexpected quoted string " + strconv.Quote(k)
		}
		if seen[k] {
			return nil, "option " + strconv.Quote(k) + " given twice"
		}
		seen[k] = true
		switch {
		case flagOptions[k]:
			opts = append(opts, Option{Name: k, Flag: true})
		case valueOptions[k]:
			if i+1 >= len(f) {
				return nil, "option " + strconv.Quote(k) + " needs a value"
			}
			i++
			v := f[i]
			if msg := checkCreateValue(k, v); msg != "" {
				return nil, msg
			}
			opts = append(opts, Option{Name: k, Value: v})
		default:
			return nil, "unknown create option " + strconv.Quote(k)
		}
	}
	return opts, ""
}

func checkCreateValue(k, v string) string {
	switch k {
	case "family":
		if v != "inet" && v != "inet6" {
			return "bad family " + strconv.Quote(v)
		}
	case "hashsize", "maxelem", "bucketsize", "timeout", "size", "netmask":
		if n, err := strconv.ParseUint(v, 10, 32); err != nil || (len(v) > 1 && v[0] == '0') {
			return "bad " + k + " " + strconv.Quote(v)
		} else if k == "hashsize" && n == 0 {
			return "bad hashsize " + strconv.Quote(v)
		}
	case "initval", "markmask":
		if !strings.HasPrefix(v, "0x") {
			return "bad " + k + " " + strconv.Quote(v) + " (want 0x…)"
		}
		if _, err := strconv.ParseUint(v[2:], 16, 32); err != nil {
			return "bad " + k + " " + strconv.Quote(v)
		}
	}
	return ""
}

// parseEntryOptions reads the options after an element.
func parseEntryOptions(f []string, quoted []bool) ([]Option, string) {
	var opts []Option
	seen := map[string]bool{}
	for i := 0; i < len(f); i++ {
		k := f[i]
		if quoted[i] {
			return nil, "unexpected quoted string " + strconv.Quote(k)
		}
		if seen[k] {
			return nil, "option " + strconv.Quote(k) + " given twice"
		}
		seen[k] = true
		if k == "nomatch" {
			opts = append(opts, Option{Name: k, Flag: true})
			continue
		}
		if !entryValueOptions[k] {
			return nil, "unknown entry option " + strconv.Quote(k)
		}
		if i+1 >= len(f) {
			return nil, "option " + strconv.Quote(k) + " needs a value"
		}
		i++
		v := f[i]
		if k == "comment" {
			if !quoted[i] {
				return nil, "comment must be quoted"
			}
		} else if quoted[i] {
			return nil, "option " + strconv.Quote(k) + " value must not be quoted"
		}
		switch k {
		case "timeout", "skbqueue":
			if _, err := strconv.ParseUint(v, 10, 32); err != nil || (len(v) > 1 && v[0] == '0') {
				return nil, "bad " + k + " " + strconv.Quote(v)
			}
		case "packets", "bytes":
			if _, err := strconv.ParseUint(v, 10, 64); err != nil || (len(v) > 1 && v[0] == '0') {
				return nil, "bad " + k + " " + strconv.Quote(v)
			}
		}
		opts = append(opts, Option{Name: k, Value: v})
	}
	return opts, ""
}

// newSet validates a set header.
func newSet(name, typ string, opts []Option) (*Set, string) {
	if name == "" || len(name) > 31 {
		return nil, "bad set name " + strconv.Quote(name) + " (1 to 31 characters)"
	}
	if dims(typ) == nil {
		return nil, "unknown set type " + strconv.Quote(typ)
	}
	s := &Set{Name: name, Type: typ, Options: opts, Entries: []*Entry{}}
	if fam, ok := lookup(opts, "family"); ok {
		s.Family = fam
	} else if strings.HasPrefix(typ, "hash:") && typ != "hash:mac" {
		s.Family = "inet" // ipset's default
	}
	return s, ""
}

// parseEntry parses an element of set s.
func parseEntry(s *Set, elem string) (*Entry, string) {
	e := &Entry{Elem: elem}
	if s.Type == "list:set" {
		if elem == "" || strings.ContainsAny(elem, ", ") {
			return nil, "bad set name " + strconv.Quote(elem)
		}
		e.Member = elem
		return e, ""
	}
	ds := dims(s.Type)
	parts := strings.Split(elem, ",")
	if len(parts) != len(ds) {
		return nil, "element " + strconv.Quote(elem) + " has " + strconv.Itoa(len(parts)) + " parts, " + s.Type + " needs " + strconv.Itoa(len(ds))
	}
	ipSeen := false
	for i, d := range ds {
		v := parts[i]
		switch d {
		case "ip":
			a, err := netip.ParseAddr(v)
			if err != nil || a.Zone() != "" {
				return nil, "bad address " + strconv.Quote(v)
			}
			if msg := checkFamily(s, a); msg != "" {
				return nil, msg
			}
			if !ipSeen {
				e.IP, ipSeen = a, true
			} else {
				e.IP2 = a
			}
		case "net":
			var pfx netip.Prefix
			var err error
			if strings.Contains(v, "/") {
				pfx, err = netip.ParsePrefix(v)
			} else {
				var a netip.Addr
				a, err = netip.ParseAddr(v)
				if err == nil {
					pfx = netip.PrefixFrom(a, a.BitLen())
				}
			}
			if err != nil || pfx.Addr().Zone() != "" {
				return nil, "bad network " + strconv.Quote(v)
			}
			if msg := checkFamily(s, pfx.Addr()); msg != "" {
				return nil, msg
			}
			e.Net = pfx
			if !ipSeen {
				e.IP, ipSeen = pfx.Addr(), true
			}
		case "port":
			if msg := parsePort(s, e, v); msg != "" {
				return nil, msg
			}
		default: // mark, iface, mac, set: kept as text
			if v == "" {
				return nil, "empty " + d + " in " + strconv.Quote(elem)
			}
		}
	}
	return e, ""
}

func checkFamily(s *Set, a netip.Addr) string {
	if s.Family == "inet" && !a.Is4() {
		return "IPv6 address " + a.String() + " in IPv4 set " + s.Name
	}
	if s.Family == "inet6" && !a.Is6() {
		return "IPv4 address " + a.String() + " in IPv6 set " + s.Name
	}
	return ""
}

func parsePort(s *Set, e *Entry, v string) string {
	if s.Type == "bitmap:port" {
		n, err := strconv.ParseUint(v, 10, 16)
		if err != nil || (len(v) > 1 && v[0] == '0') {
			return "bad port " + strconv.Quote(v)
		}
		e.Port = uint16(n)
		if r, ok := s.Option("range"); ok {
			lo, hi, _ := strings.Cut(r, "-")
			l, _ := strconv.ParseUint(lo, 10, 16)
			h, _ := strconv.ParseUint(hi, 10, 16)
			if uint64(n) < l || uint64(n) > h {
				return "port " + v + " outside the set's range " + r
			}
		}
		return ""
	}
	proto, port, ok := strings.Cut(v, ":")
	if !ok {
		proto, port = "tcp", v // ipset's default protocol
	} else {
		e.ProtoName = proto
	}
	if n, err := strconv.ParseUint(proto, 10, 8); err == nil {
		e.Proto = uint8(n)
	} else if p, ok := protoNames[proto]; ok {
		e.Proto = p
	} else {
		return "unknown protocol " + strconv.Quote(proto)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err == nil && !(len(port) > 1 && port[0] == '0') {
		e.Port = uint16(n)
		return ""
	}
	if (e.Proto == 1 || e.Proto == 58) && port != "" && !strings.ContainsAny(port, " ,") {
		e.PortText = port // ICMP type name or type/code
		return ""
	}
	return "bad port " + strconv.Quote(port)
}

func checkRange(opts []Option) string {
	r, ok := lookup(opts, "range")
	if !ok {
		return ""
	}
	lo, hi, cut := strings.Cut(r, "-")
	l, err1 := strconv.ParseUint(lo, 10, 16)
	h, err2 := strconv.ParseUint(hi, 10, 16)
	if !cut || err1 != nil || err2 != nil || l > h {
		return "bad port range " + strconv.Quote(r)
	}
	return ""
}

func parseSave(name string, lines []line) (*Dump, error) {
	p := &parser{name: name, d: &Dump{Form: FormSave, Sets: []*Set{}}, sets: map[string]*Set{}}
	for _, l := range lines {
		t := strings.TrimSpace(l.Text)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if len(p.errs) >= maxErrors {
			break
		}
		f, q, msg := fields(l.Text)
		if msg != "" {
			p.errorf(l.Pos, "%s", msg)
			continue
		}
		switch f[0] {
		case "create":
			if len(f) < 3 {
				p.errorf(l.Pos, "create needs a name and a type")
				continue
			}
			opts, msg := parseOptions(f[3:], q[3:])
			if msg == "" {
				msg = checkRange(opts)
			}
			if msg != "" {
				p.errorf(l.Pos, "%s", msg)
				continue
			}
			s, msg := newSet(f[1], f[2], opts)
			if msg != "" {
				p.errorf(l.Pos, "%s", msg)
				continue
			}
			if old := p.sets[s.Name]; old != nil {
				p.errorf(l.Pos, "set %s created twice (first at line %d)", s.Name, old.Pos.Line)
				continue
			}
			s.Pos, s.Raw = l.Pos, l.Text
			p.sets[s.Name] = s
			p.d.Sets = append(p.d.Sets, s)
		case "add":
			if len(f) < 3 {
				p.errorf(l.Pos, "add needs a set name and an element")
				continue
			}
			s := p.sets[f[1]]
			if s == nil {
				p.errorf(l.Pos, "add to set %s, which no create line above defines", f[1])
				continue
			}
			p.addEntry(s, l, f[2], f[3:], q[3:])
		default:
			p.errorf(l.Pos, "unknown command %s (want create or add)", strconv.Quote(f[0]))
		}
	}
	if err := p.errs.Err(); err != nil {
		return nil, err
	}
	return p.d, nil
}

func (p *parser) addEntry(s *Set, l line, elem string, f []string, q []bool) {
	// Only a quoted field holds a blank, and ipset quotes no element.
	if strings.ContainsAny(elem, " \t") {
		p.errorf(l.Pos, "element %s holds a blank, which no element of ipset's does", strconv.Quote(elem))
		return
	}
	e, msg := parseEntry(s, elem)
	if msg == "" {
		e.Options, msg = parseEntryOptions(f, q)
	}
	if msg != "" {
		p.errorf(l.Pos, "%s", msg)
		return
	}
	e.Pos, e.Raw = l.Pos, l.Text
	s.Entries = append(s.Entries, e)
}

// list header lines, in the order ipset prints them; optional ones may be
// missing (older versions).
var listFields = []struct {
	prefix   string
	optional bool
}{
	{"Type: ", false},
	{"Revision: ", true},
	{"Header: ", false},
	{"Size in memory: ", false},
	{"References: ", false},
	{"Number of entries: ", true},
}

// ParseLenient reads what [Parse] reads, and also an `ipset list` cut
// short: a set that lists fewer members than its "Number of entries"
// says is read as [Set.Partial], and the dump says which sets are in
// PartialReason. An `ipset save` whose last line has no newline (ipset
// ends its output with one) was cut in that line, which may still read
// as a valid but other member or range: PartialReason says so.
func ParseLenient(name string, data []byte) (*Dump, error) {
	lines, err := splitLines(name, data)
	if err != nil {
		return nil, err
	}
	for _, l := range lines {
		if t := strings.TrimSpace(l.Text); t != "" && !strings.HasPrefix(t, "#") {
			if strings.HasPrefix(t, "Name: ") {
				return parseListWith(name, lines, true)
			}
			break
		}
	}
	d, err := Parse(name, data)
	if err != nil {
		return nil, err
	}
	if n := len(lines); n > 0 && len(data) > 0 && data[len(data)-1] != '\n' && strings.TrimSpace(lines[n-1].Text) != "" {
		d.PartialReason = fmt.Sprintf("cut short: its last line (%d) ends without the newline ipset save ends its output with", lines[n-1].Pos.Line)
	}
	return d, nil
}

func parseList(name string, lines []line) (*Dump, error) {
	return parseListWith(name, lines, false)
}

func parseListWith(name string, lines []line, lenient bool) (*Dump, error) {
	p := &parser{lenient: lenient, name: name, d: &Dump{Form: FormList, Sets: []*Set{}}, sets: map[string]*Set{}}
	i := 0
	for i < len(lines) && len(p.errs) < maxErrors {
		l := lines[i]
		if strings.TrimSpace(l.Text) == "" {
			i++
			continue
		}
		if !strings.HasPrefix(l.Text, "Name: ") {
			p.errorf(l.Pos, "expected \"Name: \" to start a set, found %s", quoteShort(l.Text))
			i++
			continue
		}
		i = p.listBlock(lines, i)
	}
	if err := p.errs.Err(); err != nil {
		return nil, err
	}
	if p.terseHides {
		why := "a terse listing (ipset list -t): it lists no members of its sets"
		if p.d.PartialReason != "" {
			why += "; " + p.d.PartialReason
		}
		p.d.PartialReason = why
	}
	return p.d, nil
}

// listBlock parses one Name: block starting at lines[i] and returns the
// index after it.
func (p *parser) listBlock(lines []line, i int) int {
	start := lines[i]
	name := strings.TrimPrefix(start.Text, "Name: ")
	i++
	vals := map[string]string{}
	var header line
	for _, fld := range listFields {
		if i < len(lines) && strings.HasPrefix(lines[i].Text, fld.prefix) {
			vals[fld.prefix] = strings.TrimPrefix(lines[i].Text, fld.prefix)
			if fld.prefix == "Header: " {
				header = lines[i]
			}
			i++
			continue
		}
		if !fld.optional {
			if p.lenient && i >= len(lines) {
				// A listing cut in a set's header (a paste that
				// stops, `ipset list | head`): the set cannot be
				// read, and the listing ends there.
				p.cutInHeader(name, lines[i-1].Pos.Line, false, "that set and those after it are not listed")
				return i
			}
			at := lines[len(lines)-1].Pos
			if i < len(lines) {
				at = lines[i].Pos
			}
			p.errorf(at, "set %s: missing %q line (truncated?)", name, strings.TrimSpace(fld.prefix))
			return skipBlock(lines, i)
		}
	}
	// terse is a header without its "Members:" line: `ipset list -t`
	// prints none, and no member (a blank line or the next set follows,
	// or the listing ends after a set of such a listing); cut is a
	// listing that ends in the header, which may lack its last lines.
	var terse, cut bool
	switch {
	case i < len(lines) && lines[i].Text == "Members:":
		i++
	case p.lenient && i < len(lines) && (lines[i].Text == "" || strings.HasPrefix(lines[i].Text, "Name: ")):
		terse = true
	case p.lenient && i >= len(lines) && p.terse:
		terse = true
	case p.lenient && i >= len(lines):
		cut = true
	default:
		at := lines[len(lines)-1].Pos
		if i < len(lines) {
			at = lines[i].Pos
		}
		p.errorf(at, "set %s: missing \"Members:\" line (truncated?)", name)
		return skipBlock(lines, i)
	}
	hf, hq, msg := fields(vals["Header: "])
	var opts []Option
	if msg == "" {
		opts, msg = parseOptions(hf, hq)
	}
	if msg == "" {
		msg = checkRange(opts)
	}
	if msg != "" {
		p.errorf(header.Pos, "%s", msg)
		return skipBlock(lines, i)
	}
	s, msg := newSet(name, vals["Type: "], opts)
	if msg != "" {
		p.errorf(start.Pos, "%s", msg)
		return skipBlock(lines, i)
	}
	s.Pos, s.Raw = start.Pos, start.Text
	info := &ListInfo{Entries: -1}
	for _, x := range []struct {
		key string
		dst *int
	}{{"Revision: ", &info.Revision}, {"Size in memory: ", &info.SizeInMemory}, {"References: ", &info.References}, {"Number of entries: ", &info.Entries}} {
		v, ok := vals[x.key]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 0 {
			p.errorf(start.Pos, "set %s: bad %s%q", name, x.key, v)
			return skipBlock(lines, i)
		}
		*x.dst = int(n)
	}
	if _, ok := vals["Revision: "]; !ok {
		info.Revision = -1
	}
	s.List = info
	switch {
	case terse:
		p.terse = true
		switch {
		case info.Entries > 0:
			s.Partial = fmt.Sprintf("none of its %d entries: ipset list -t lists no members", info.Entries)
		case info.Entries < 0:
			s.Partial = "none of its entries: ipset list -t lists no members"
		}
		if s.Partial != "" {
			p.terseHides = true
		}
	case cut && info.Entries == 0:
		p.cutInHeader(name, lines[i-1].Pos.Line, true, "the sets after it are not listed")
	case cut:
		s.Partial = "none of its entries: the listing ends in its header"
		p.cutInHeader(name, lines[i-1].Pos.Line, true, "its members are not listed, nor the sets after it")
	}
	for !terse && !cut && i < len(lines) && lines[i].Text != "" && !strings.HasPrefix(lines[i].Text, "Name: ") {
		l := lines[i]
		f, q, msg := fields(l.Text)
		if msg != "" {
			p.errorf(l.Pos, "%s", msg)
		} else if len(f) == 0 {
			p.errorf(l.Pos, "blank member line")
		} else {
			p.addEntry(s, l, f[0], f[1:], q[1:])
		}
		i++
	}
	if old := p.sets[s.Name]; old != nil {
		p.errorf(start.Pos, "set %s listed twice (first at line %d)", s.Name, old.Pos.Line)
		return i
	}
	if terse || cut {
		// Partial already, or listed whole (no entries).
	} else if p.lenient && info.Entries > len(s.Entries) && len(p.errs) == 0 {
		s.Partial = fmt.Sprintf("%d of its %d entries", len(s.Entries), info.Entries)
		why := fmt.Sprintf("set %s lists %s", s.Name, s.Partial)
		if i >= len(lines) {
			why += ", and the listing ends there: sets after it are not listed"
		}
		if p.d.PartialReason != "" {
			why = p.d.PartialReason + "; " + why
		}
		p.d.PartialReason = why
	} else if info.Entries >= 0 && info.Entries != len(s.Entries) && len(p.errs) == 0 {
		p.errorf(start.Pos, "set %s: \"Number of entries: %d\" but %d members (truncated?)", s.Name, info.Entries, len(s.Entries))
	}
	p.sets[s.Name] = s
	p.d.Sets = append(p.d.Sets, s)
	return i
}

// cutInHeader says in the dump's PartialReason that a listing read
// leniently ends in the header of set name, at line, and what it does
// not list: the set is read (with no member) when its header is whole but
// for "Members:", left out when not.
func (p *parser) cutInHeader(name string, line int, read bool, missing string) {
	why := fmt.Sprintf("the listing ends in the header of set %s (line %d): %s", name, line, missing)
	if read {
		// Its header may be whole: `ipset list -t SET` lists one set
		// without "Members:" too.
		why = fmt.Sprintf("the listing ends with the header of set %s (line %d), without its \"Members:\" line (cut there, or ipset list -t, which lists no members): %s", name, line, missing)
	}
	if p.d.PartialReason != "" {
		why = p.d.PartialReason + "; " + why
	}
	p.d.PartialReason = why
}

func skipBlock(lines []line, i int) int {
	for i < len(lines) && !strings.HasPrefix(lines[i].Text, "Name: ") {
		i++
	}
	return i
}
