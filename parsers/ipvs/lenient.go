package ipvs

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/proxyscan/proxyscan/parsers"
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
)

// ParseLenient reads what people paste as ipvsadm output: what [Parse]
// reads, and also a listing printed without -n, whose services and real
// servers named by host or service names ("kubernetes.default:https")
// are skipped with the names (not resolved, never guessed), and lines
// Parse does not understand, skipped with its error. A real server of a
// service that was not read is skipped too. The dump says in
// PartialReason why it may not hold the whole IPVS table: lines skipped,
// or a listing without the version banner ipvsadm -Ln prints first (the
// listing of one service, ipvsadm -Ln -t VIP:PORT, or the top of a
// listing not pasted).
func ParseLenient(name string, data []byte) (*Dump, []parsers.LineNote, error) {
	lines := strings.Split(string(data), "\n")
	var notes []parsers.LineNote
	skipped := map[int]bool{}
	unresolved := 0
	for round := 0; ; round++ {
		d, err := Parse(name, []byte(strings.Join(lines, "\n")))
		if err == nil {
			var why []string
			if unresolved > 0 {
				why = append(why, fmt.Sprintf("%d lines name hosts or services in place of addresses or ports (ipvsadm -L without -n) and were not read", unresolved))
			}
			if n := len(notes) - unresolved; n > 0 {
				why = append(why, fmt.Sprintf("%d lines skipped (not understood, or of a service not read)", n))
			}
			if d.Form == FormList && d.Version == "" && len(d.Services) > 0 {
				why = append(why, "no version banner: the listing of some services (ipvsadm -Ln -t VIP:PORT), or the top of a listing not pasted")
			}
			d.PartialReason = strings.Join(why, "; ")
			sortNotes(notes)
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
			if !dest {
				// Its real servers go with it.
				for j := i + 1; j < len(lines) && strings.HasPrefix(strings.TrimLeft(lines[j], " "), "->"); j++ {
					notes = append(notes, parsers.LineNote{Line: j + 1, Reason: ReasonServiceSkipped, Skipped: true})
					skipped[j] = true
					lines[j] = ""
				}
			}
		}
		if !progress {
			return nil, nil, err
		}
	}
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
