package ipvs

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/internal/services"
)

// Reasons of the lines ParseLenient skips.
const (
	// ReasonUnresolved: a service or real server printed with a host or
	// service name in place of its address or port (ipvsadm -L without
	// -n); the name is not resolved, so the line is not read.
	ReasonUnresolved = "name not resolved"
	// ReasonNotUnderstood: a line Parse refuses; the note's Detail is
	// its error.
	ReasonNotUnderstood = "not understood"
	// ReasonServiceSkipped: a real server of a service that was not read.
	ReasonServiceSkipped = "service not read"
	// ReasonServiceName: a service or real server whose port ipvsadm -L
	// (without -n) printed as a well-known service name ("https"), read
	// with its port number (443); the note's Detail says which.
	ReasonServiceName = "service name read as its port"
)

// ParseLenient reads what people paste as ipvsadm output: what [Parse]
// reads, and also a listing printed without -n: ports printed as
// well-known service names ("http", "https", "domain", "postgresql") are
// read as their numbers (a built-in table, not the machine's
// /etc/services) and noted; services and real servers named by host
// names or other service names ("kubernetes.default:https") are skipped
// with the names (not resolved, never guessed), and lines
// Parse does not understand, skipped with its error. A real server of a
// service that was not read is skipped too. The dump says in
// PartialReason why it may not hold the whole IPVS table: lines skipped,
// or a listing without the version banner ipvsadm -Ln prints first (the
// listing of one service, ipvsadm -Ln -t VIP:PORT, or the top of a
// listing not pasted).
func ParseLenient(name string, data []byte) (*Dump, []parsers.LineNote, error) {
	lines := strings.Split(string(data), "\n")
	words := textAround(lines)
	notes, orig := servicePorts(lines)
	notes = append(notes, words...)
	skipped := map[int]bool{}
	unresolved := 0
	for round := 0; ; round++ {
		d, err := Parse(name, []byte(strings.Join(lines, "\n")))
		if err == nil {
			var why []string
			if unresolved > 0 {
				why = append(why, fmt.Sprintf("%d lines name hosts, or services not in the table of well-known ones, in place of addresses or ports (ipvsadm -L without -n) and were not read", unresolved))
			}
			if n := skippedCount(notes) - unresolved; n > 0 {
				why = append(why, fmt.Sprintf("%d line%s skipped (not understood, or of a service not read)", n, map[bool]string{true: "s"}[n > 1]))
			}
			if d.Form == FormList && d.Version == "" && len(d.Services) > 0 {
				why = append(why, "no version banner: the listing of some services (ipvsadm -Ln -t VIP:PORT), or the top of a listing not pasted")
			}
			d.PartialReason = strings.Join(why, "; ")
			sortNotes(notes)
			d.restoreRaw(orig)
			return d, notes, nil
		}
		var list parsers.ErrorList
		if round > 50 || !errors.As(err, &list) {
			return nil, nil, err
		}
		progress := false
		for _, e := range list {
			i := e.Pos.Line - 1
			if i < 0 || i >= len(lines) || skipped[i] || !isEntry(lines[i]) {
				continue
			}
			dest := strings.HasPrefix(strings.TrimLeft(lines[i], " "), "->")
			reason, detail := ReasonNotUnderstood, e.Msg
			if names := lineNames(lines[i]); names != "" {
				reason, detail = ReasonUnresolved, names
				unresolved++
			}
			notes = append(notes, parsers.LineNote{Line: i + 1, Reason: reason, Skipped: true, Detail: detail})
			skipped[i] = true
			lines[i] = ""
			progress = true
			if dest {
				// Its service goes with it: read without one of its
				// real servers, it would look as if it lacked one.
				k := i - 1
				for k >= 0 && (skipped[k] || strings.HasPrefix(strings.TrimLeft(lines[k], " "), "->")) {
					k--
				}
				if k < 0 || !isEntry(lines[k]) {
					continue
				}
				notes = append(notes, parsers.LineNote{Line: k + 1, Reason: ReasonServiceSkipped, Skipped: true, Detail: fmt.Sprintf("its real server on line %d is not read", i+1)})
				skipped[k] = true
				lines[k] = ""
				i = k
			}
			// Its real servers go with it.
			for j := i + 1; j < len(lines) && (skipped[j] || strings.HasPrefix(strings.TrimLeft(lines[j], " "), "->")); j++ {
				if skipped[j] {
					continue
				}
				notes = append(notes, parsers.LineNote{Line: j + 1, Reason: ReasonServiceSkipped, Skipped: true})
				skipped[j] = true
				lines[j] = ""
			}
		}
		if !progress {
			return nil, nil, err
		}
	}
}

// servicePorts replaces, in the service and real server lines of lines,
// ports printed as well-known service names by their numbers, and returns
// a note for each line changed and its text before (by index).
func servicePorts(lines []string) ([]parsers.LineNote, map[int]string) {
	var notes []parsers.LineNote
	orig := map[int]string{}
	for i, l := range lines {
		if !isEntry(l) {
			continue
		}
		at, end, ok := portField(l)
		if !ok {
			continue
		}
		name := l[at:end]
		p, ok := services.Port(name)
		if !ok {
			continue
		}
		orig[i] = l
		lines[i] = l[:at] + strconv.Itoa(int(p)) + l[end:]
		notes = append(notes, parsers.LineNote{Line: i + 1, Reason: ReasonServiceName, Detail: fmt.Sprintf("%s (%d)", name, p)})
	}
	return notes, orig
}

// portField returns where the port of a service or real server line is,
// when it is a name (not a number).
func portField(l string) (at, end int, ok bool) {
	i := len(l) - len(strings.TrimLeft(l, " "))
	t := l[i:]
	if strings.HasPrefix(t, "->") {
		i += 2
	} else if j := strings.IndexByte(t, ' '); j > 0 {
		i += j
	}
	for i < len(l) && l[i] == ' ' {
		i++
	}
	end = i
	for end < len(l) && l[end] != ' ' && l[end] != '\t' {
		end++
	}
	tok := l[i:end]
	c := strings.LastIndexByte(tok, ':')
	switch {
	case c < 0:
		return 0, 0, false
	case strings.HasPrefix(tok, "["):
		if !strings.HasSuffix(tok[:c], "]") {
			return 0, 0, false // an IPv6 address without a port
		}
	case strings.Count(tok, ":") > 1:
		return 0, 0, false // an IPv6 address without brackets
	}
	at = i + c + 1
	if at == end || strings.Trim(l[at:end], "0123456789") == "" {
		return 0, 0, false
	}
	return at, end, true
}

// restoreRaw puts back, in the Raw of the services and real servers read
// from lines whose port names were replaced, the lines as given.
func (d *Dump) restoreRaw(orig map[int]string) {
	if len(orig) == 0 {
		return
	}
	for _, s := range d.Services {
		if o, ok := orig[s.Pos.Line-1]; ok {
			s.Raw = o
		}
		for _, r := range s.Destinations {
			if o, ok := orig[r.Pos.Line-1]; ok {
				r.Raw = o
			}
		}
	}
}

// skippedCount counts the notes of lines skipped.
func skippedCount(notes []parsers.LineNote) int {
	n := 0
	for _, x := range notes {
		if x.Skipped && x.Reason != parsers.ReasonText { // words held no entry
			n++
		}
	}
	return n
}

// isEntry reports whether a line is a service or real server line, which
// ParseLenient may skip (not a header, whose errors it cannot repair).
func isEntry(l string) bool {
	t := strings.TrimLeft(l, " ")
	for _, p := range []string{"->", "TCP ", "UDP ", "SCTP ", "FWM "} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// lineNames returns the host and service names of a service or real
// server line printed without -n ("" when its address and port are
// numbers).
func lineNames(l string) string {
	f := strings.Fields(strings.TrimPrefix(strings.TrimLeft(l, " "), "->"))
	if len(f) == 0 {
		return ""
	}
	ap := f[0]
	if ap == "TCP" || ap == "UDP" || ap == "SCTP" {
		if len(f) < 2 {
			return ""
		}
		ap = f[1]
	}
	if strings.HasPrefix(ap, "[") {
		return "" // an IPv6 address in brackets
	}
	host, port, ok := strings.Cut(ap, ":")
	if !ok {
		return ""
	}
	var names []string
	if _, err := netip.ParseAddr(host); err != nil {
		names = append(names, host+" (an address)")
	}
	if port != "" && strings.Trim(port, "0123456789") != "" {
		names = append(names, port+" (a port)")
	}
	return strings.Join(names, ", ")
}

// sortNotes orders notes by line.
func sortNotes(n []parsers.LineNote) {
	for i := 1; i < len(n); i++ {
		for j := i; j > 0 && n[j].Line < n[j-1].Line; j-- {
			n[j], n[j-1] = n[j-1], n[j]
		}
	}
}

// textAround blanks the lines pasted above and below a listing, from its
// first line and its last up to the first line ipvsadm prints (blank lines
// and comments aside), and returns their notes: words ("Hi, here is the
// output:", "Thanks!": see isText) are skipped as parsers.ReasonText; any
// other line (a sentence that names an address, "the VIP 10.96.0.10:53 is
// down"; a signature) as not understood, and the listing is partial for
// it (it might have held what ipvsadm printed), rather than the whole
// paste refused.
func textAround(lines []string) []parsers.LineNote {
	var notes []parsers.LineNote
	take := func(i int) bool {
		switch {
		case skippable(lines[i]):
			return true
		case isText(lines[i]):
			notes = append(notes, parsers.LineNote{Line: i + 1, Reason: parsers.ReasonText, Skipped: true})
		case ipvsadmLine(lines[i]):
			return false
		default:
			notes = append(notes, parsers.LineNote{Line: i + 1, Reason: ReasonNotUnderstood, Skipped: true, Detail: "not ipvsadm output: " + quoteShort(lines[i])})
		}
		lines[i] = ""
		return true
	}
	parsers.TakeAround(len(lines), take)
	return notes
}

// isText reports whether a line is words of the person who pasted a
// listing rather than a line of it: no word is a protocol or a column of
// ipvsadm's (TCP, UDP, SCTP, FWM, Prot, IP, ->, Masq, ...), a flag, an
// address (a digit, a dot, a digit; a colon followed by a digit) or a
// number of a counter, and it has a letter.
func isText(line string) bool {
	t := strings.TrimLeft(line, " \t")
	if skippable(line) || strings.HasPrefix(t, versionPrefix) || strings.HasPrefix(t, timeoutPrefix) ||
		strings.HasPrefix(t, "Prot ") || strings.HasPrefix(t, "IPVS connection entries") {
		return false // ipvsadm's own lines
	}
	letter := false
	for _, w := range strings.Fields(line) {
		if strings.Trim(w, "0123456789") == "" {
			return false // a number: a counter, a weight
		}
		switch strings.ToUpper(strings.Trim(w, ",.!?():")) {
		case "TCP", "UDP", "SCTP", "FWM", "PROT", "IP", "->", "MASQ", "ROUTE", "LOCAL", "TUNNEL", "PERSISTENT", "WEIGHT", "ACTIVECONN", "INACTCONN":
			return false
		}
		if w[0] == '-' || w[0] == '[' {
			return false
		}
		for i := 0; i < len(w); i++ {
			c := w[i]
			switch {
			case c >= '0' && c <= '9':
				// An address or a time: 10.96.0.1, 10.96.0.1:443,
				// 2001:db8::1, 10:30; not the end of a sentence
				// ("on worker-7:").
				if i+2 < len(w) && (w[i+1] == '.' && isDigit(w[i+2]) || w[i+1] == ':' && isAddrChar(w[i+2])) || i > 0 && w[i-1] == ':' {
					return false
				}
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
				letter = true
			}
		}
	}
	return letter
}

// isAddrChar reports whether c may follow a colon in an address or a
// time: a hexadecimal digit or a colon ("::").
func isAddrChar(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == ':'
}

// isDigit reports whether c is a decimal digit.
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// ipvsadmLine reports whether a line may be one ipvsadm prints: its
// header lines, a service or a real server (listed or saved), the
// timeout line.
func ipvsadmLine(l string) bool {
	t := strings.TrimLeft(l, " \t")
	for _, p := range []string{versionPrefix, timeoutPrefix, "Prot ", "->", "TCP ", "UDP ", "SCTP ", "FWM ", "-A ", "-a ", "--add-service ", "--add-server ", "IPVS connection entries"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}
