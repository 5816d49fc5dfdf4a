package ipaddr

import (
	"bytes"
	"net/netip"
	"strconv"
	"strings"

	"github.com/proxyscan/proxyscan/parsers"
)

// MaxBriefLineLength is the longest line of `ip -br addr` the parser
// accepts (kube-ipvs0's line of a node of 100,000 Service addresses).
const MaxBriefLineLength = 8 << 20

// MaxLineLength is the longest input line the parser accepts.
const MaxLineLength = 64 << 10

const maxErrors = 10

// line is one input line.
type line = parsers.Line

// Parse reads `ip addr`, `ip -o addr`, `ip -j addr` or `ip -br addr`
// output, telling the forms apart by content.
func Parse(name string, data []byte) (*Dump, error) {
	d, err := parse(name, data)
	if d != nil {
		d.notePartial()
	}
	return d, err
}

func parse(name string, data []byte) (*Dump, error) {
	t := bytes.TrimLeft(data, " \t\r\n")
	if len(t) > 0 && t[0] == '[' {
		return parseJSON(name, data)
	}
	limit := MaxLineLength
	if first, _, _ := bytes.Cut(bytes.TrimLeft(data, " \t\r\n"), []byte("\n")); len(first) < MaxLineLength && isBriefLine(string(first)) {
		// ip -br addr prints every address of an interface on its line:
		// kube-ipvs0 holds every Service address of an IPVS node.
		limit = MaxBriefLineLength
	}
	lines, err := parsers.Lines(name, data, limit)
	if err != nil {
		return nil, err
	}
	for _, l := range lines {
		if strings.TrimSpace(l.Text) == "" {
			continue
		}
		if _, rest, ok := cutIndex(l.Text); ok && !strings.HasPrefix(rest, " ") && strings.Contains(rest, ": <") {
			return parseText(lines)
		}
		if strings.Contains(l.Text, `\`) {
			return parseOneline(lines)
		}
		if isBriefLine(l.Text) {
			return parseBrief(lines)
		}
		return nil, parsers.Errorf(l.Pos, "not ip addr output: %s", quoteShort(l.Text))
	}
	return nil, parsers.Errorf(parsers.Pos{File: name}, "empty input: no interface")
}

func quoteShort(s string) string {
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return strconv.Quote(s)
}

// cutIndex splits "12: rest" into 12 and "rest".
func cutIndex(s string) (int, string, bool) {
	num, rest, ok := strings.Cut(s, ": ")
	if !ok || num == "" {
		return 0, "", false
	}
	n, err := strconv.ParseInt(num, 10, 32)
	if err != nil || n <= 0 || num[0] == '0' {
		return 0, "", false
	}
	return int(n), rest, true
}

type parser struct {
	errs parsers.ErrorList
	d    *Dump
	byIx map[int]*Interface
}

func (p *parser) errorf(pos parsers.Pos, format string, args ...any) {
	if len(p.errs) < maxErrors {
		p.errs.Add(pos, format, args...)
	}
}

func splitName(s string) (name, peer string) {
	if i := strings.IndexByte(s, '@'); i > 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

// header parses "2: eth0@if5: <FLAGS> mtu 1500 qdisc … qlen 1000".
func parseHeader(l line) (*Interface, string) {
	ix, rest, ok := cutIndex(l.Text)
	if !ok {
		return nil, "bad interface header " + quoteShort(l.Text)
	}
	nameStr, rest, ok := strings.Cut(rest, ": <")
	if !ok || nameStr == "" {
		return nil, "bad interface header " + quoteShort(l.Text)
	}
	flags, attrs, ok := strings.Cut(rest, ">")
	if !ok {
		return nil, "unterminated flags in " + quoteShort(l.Text)
	}
	i := &Interface{Index: ix, Pos: l.Pos, Raw: l.Text, Addresses: []*Address{}, Flags: []string{}}
	i.Name, i.Peer = splitName(nameStr)
	if flags != "" {
		i.Flags = strings.Split(flags, ",")
	}
	f := strings.Fields(attrs)
	if len(f)%2 != 0 {
		return nil, "attribute " + strconv.Quote(f[len(f)-1]) + " without a value"
	}
	for j := 0; j < len(f); j += 2 {
		k, v := f[j], f[j+1]
		i.Attrs = append(i.Attrs, Attr{k, v})
		var err error
		switch k {
		case "mtu":
			i.MTU, err = atoi(v)
		case "qlen":
			i.Qlen, err = atoi(v)
		case "qdisc":
			i.Qdisc = v
		case "state":
			i.State = v
		case "group":
			i.Group = v
		case "master":
			i.Master = v
		}
		if err != nil {
			return nil, "bad " + k + " " + strconv.Quote(v)
		}
	}
	return i, ""
}

func atoi(s string) (int, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err == nil && (n < 0 || (len(s) > 1 && s[0] == '0')) {
		err = strconv.ErrSyntax
	}
	return int(n), err
}

var linkKeywords = map[string]bool{"brd": true, "peer": true, "link-netnsid": true, "link-netns": true, "permaddr": true}

func parseLink(i *Interface, text string) string {
	f := strings.Fields(text)
	i.LinkType = strings.TrimPrefix(f[0], "link/")
	if i.LinkType == "" {
		return "link line without a link type"
	}
	f = f[1:]
	if len(f) > 0 && !linkKeywords[f[0]] {
		i.LinkAddress, f = f[0], f[1:]
	}
	if len(f)%2 != 0 {
		return "link attribute " + strconv.Quote(f[len(f)-1]) + " without a value"
	}
	for j := 0; j < len(f); j += 2 {
		if f[j] == "brd" && i.Broadcast == "" && len(i.LinkAttrs) == 0 {
			i.Broadcast = f[j+1]
			continue
		}
		i.LinkAttrs = append(i.LinkAttrs, Attr{f[j], f[j+1]})
	}
	return ""
}

// parseAddr parses "inet 10.0.0.1/24 brd 10.0.0.255 scope global secondary eth0".
func parseAddr(l line, text string) (*Address, string) {
	f := strings.Fields(text)
	a := &Address{Family: f[0], Pos: l.Pos, Raw: l.Text, ValidLft: Forever, PreferredLft: Forever}
	if len(f) < 2 {
		return nil, "truncated address line"
	}
	pfx, msg := parsePrefix(f[1], a.Family)
	if msg != "" {
		return nil, msg
	}
	a.Local, a.PrefixLen = pfx.Addr(), pfx.Bits()
	f = f[2:]
	for len(f) > 0 {
		k := f[0]
		switch k {
		case "peer", "brd", "scope", "metric", "any", "proto":
			if len(f) < 2 {
				return nil, k + " without a value"
			}
			v := f[1]
			switch k {
			case "peer":
				p, msg := parsePrefix(v, a.Family)
				if msg != "" {
					return nil, msg
				}
				a.Peer, a.PrefixLen = p, p.Bits()
			case "brd":
				b, err := netip.ParseAddr(v)
				if err != nil {
					return nil, "bad broadcast address " + strconv.Quote(v)
				}
				a.Broadcast = b
			case "scope":
				a.Scope = v
			default:
				return nil, "unsupported address attribute " + strconv.Quote(k)
			}
			f = f[2:]
		default:
			if isAddrFlag(k) {
				a.Flags = append(a.Flags, k)
				f = f[1:]
				continue
			}
			if a.Family == "inet" && len(f) == 1 {
				a.Label = k
				f = f[1:]
				continue
			}
			return nil, "unexpected " + strconv.Quote(k) + " on address line"
		}
	}
	return a, ""
}

func parsePrefix(s, family string) (netip.Prefix, string) {
	var p netip.Prefix
	var err error
	if strings.Contains(s, "/") {
		p, err = netip.ParsePrefix(s)
	} else {
		var a netip.Addr
		a, err = netip.ParseAddr(s)
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if err != nil || p.Addr().Zone() != "" {
		return p, "bad address " + strconv.Quote(s)
	}
	if (family == "inet") != p.Addr().Is4() {
		return p, "address " + strconv.Quote(s) + " is not " + family
	}
	return p, ""
}

// parseLifetimes parses "valid_lft forever preferred_lft 1798sec".
func parseLifetimes(a *Address, text string) string {
	f := strings.Fields(text)
	if len(f) != 4 || f[0] != "valid_lft" || f[2] != "preferred_lft" {
		return "bad lifetime line " + quoteShort(text)
	}
	for j, dst := range []*uint32{&a.ValidLft, &a.PreferredLft} {
		v := f[2*j+1]
		if v == "forever" {
			*dst = Forever
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSuffix(v, "sec"), 10, 32)
		if err != nil || !strings.HasSuffix(v, "sec") || n == Forever {
			return "bad lifetime " + strconv.Quote(v)
		}
		*dst = uint32(n)
	}
	return ""
}

func parseText(lines []line) (*Dump, error) {
	p := &parser{d: &Dump{Form: FormText, Interfaces: []*Interface{}}, byIx: map[int]*Interface{}}
	var cur *Interface
	var last *Address
	lastFailed := false
	for _, l := range lines {
		if len(p.errs) >= maxErrors {
			break
		}
		if strings.TrimSpace(l.Text) == "" {
			continue
		}
		if !strings.HasPrefix(l.Text, " ") {
			i, msg := parseHeader(l)
			if msg != "" {
				p.errorf(l.Pos, "%s", msg)
				cur, last = nil, nil
				continue
			}
			if old := p.byIx[i.Index]; old != nil {
				p.errorf(l.Pos, "interface index %d listed twice (first at line %d)", i.Index, old.Pos.Line)
				cur, last = nil, nil
				continue
			}
			p.byIx[i.Index] = i
			p.d.Interfaces = append(p.d.Interfaces, i)
			cur, last = i, nil
			continue
		}
		if cur == nil {
			if len(p.d.Interfaces) == 0 && len(p.errs) == 0 {
				p.errorf(l.Pos, "indented line before any interface header")
			}
			continue
		}
		t := strings.TrimLeft(l.Text, " ")
		switch {
		case strings.HasPrefix(t, "link/"):
			if msg := parseLink(cur, t); msg != "" {
				p.errorf(l.Pos, "%s", msg)
			}
			last = nil
		case strings.HasPrefix(t, "altname "):
			cur.AltNames = append(cur.AltNames, strings.TrimPrefix(t, "altname "))
			last = nil
		case strings.HasPrefix(t, "inet ") || strings.HasPrefix(t, "inet6 "):
			a, msg := parseAddr(l, t)
			if msg != "" {
				p.errorf(l.Pos, "%s", msg)
				last, lastFailed = nil, true
				continue
			}
			cur.Addresses = append(cur.Addresses, a)
			last, lastFailed = a, false
		case strings.HasPrefix(t, "valid_lft "):
			if last == nil {
				if !lastFailed {
					p.errorf(l.Pos, "lifetime line without an address line")
				}
				lastFailed = false
				continue
			}
			if msg := parseLifetimes(last, t); msg != "" {
				p.errorf(l.Pos, "%s", msg)
			}
			last = nil
		default:
			p.errorf(l.Pos, "unexpected line %s", quoteShort(l.Text))
		}
	}
	if err := p.errs.Err(); err != nil {
		return nil, err
	}
	return p.d, nil
}

// parseOneline reads `ip -o addr`: "2: eth0    inet … eth0\       valid_lft …".
func parseOneline(lines []line) (*Dump, error) {
	p := &parser{d: &Dump{Form: FormOneline, Interfaces: []*Interface{}}, byIx: map[int]*Interface{}}
	for _, l := range lines {
		if len(p.errs) >= maxErrors {
			break
		}
		if strings.TrimSpace(l.Text) == "" {
			continue
		}
		ix, rest, ok := cutIndex(l.Text)
		if !ok {
			p.errorf(l.Pos, "expected \"N: name\" at the start of the line, found %s", quoteShort(l.Text))
			continue
		}
		nameStr, addrPart, ok := strings.Cut(rest, " ")
		if !ok || nameStr == "" {
			p.errorf(l.Pos, "truncated line")
			continue
		}
		addrText, lft, ok := strings.Cut(addrPart, `\`)
		if !ok {
			p.errorf(l.Pos, "missing lifetimes after \\ (truncated?)")
			continue
		}
		t := strings.TrimLeft(addrText, " ")
		if !strings.HasPrefix(t, "inet ") && !strings.HasPrefix(t, "inet6 ") {
			p.errorf(l.Pos, "expected an inet or inet6 address, found %s", quoteShort(t))
			continue
		}
		a, msg := parseAddr(l, t)
		if msg == "" {
			msg = parseLifetimes(a, lft)
		}
		if msg != "" {
			p.errorf(l.Pos, "%s", msg)
			continue
		}
		name, peer := splitName(nameStr)
		i := p.byIx[ix]
		if i == nil {
			i = &Interface{Index: ix, Name: name, Peer: peer, Flags: []string{}, Addresses: []*Address{}, Pos: l.Pos, Raw: l.Text}
			p.byIx[ix] = i
			p.d.Interfaces = append(p.d.Interfaces, i)
		} else if i.Name != name {
			p.errorf(l.Pos, "interface %d is %s here but %s at line %d", ix, name, i.Name, i.Pos.Line)
			continue
		}
		i.Addresses = append(i.Addresses, a)
	}
	if err := p.errs.Err(); err != nil {
		return nil, err
	}
	return p.d, nil
}
