package ipaddr

import (
	"bytes"
	"fmt"
	"net/netip"
	"strings"

	"github.com/proxyscan/proxyscan/parsers"
)

// briefStates are the operational states `ip -br addr` prints in its
// second column.
var briefStates = map[string]bool{
	"UP": true, "DOWN": true, "UNKNOWN": true, "LOWERLAYERDOWN": true,
	"DORMANT": true, "NOTPRESENT": true, "TESTING": true,
}

// isBriefLine reports whether s looks like a line of `ip -br addr`: a
// name, an operational state, then addresses with their prefix lengths.
func isBriefLine(s string) bool {
	f := strings.Fields(s)
	if len(f) < 2 || !briefStates[f[1]] {
		return false
	}
	for _, a := range f[2:] {
		if _, err := netip.ParsePrefix(a); err != nil {
			return false
		}
	}
	return true
}

// parseBrief reads `ip -br addr`: one line per interface, its name (with
// @peer), its operational state and its addresses. Interfaces have no
// index, flags or attributes; addresses no scope or lifetimes.
func parseBrief(lines []line) (*Dump, error) {
	d := &Dump{Form: FormBrief, Interfaces: []*Interface{}}
	var errs parsers.ErrorList
	for _, l := range lines {
		if strings.TrimSpace(l.Text) == "" {
			continue
		}
		f := strings.Fields(l.Text)
		if len(f) < 2 || !briefStates[f[1]] {
			if len(errs) < maxErrors {
				errs.Add(l.Pos, "not an ip -br addr line (name, state, addresses): %s", quoteShort(l.Text))
			}
			continue
		}
		i := &Interface{Name: f[0], State: f[1], Flags: []string{}, Addresses: []*Address{}, Pos: l.Pos, Raw: l.Text}
		if name, peer, ok := strings.Cut(f[0], "@"); ok {
			i.Name, i.Peer = name, peer
		}
		if i.Name == "" {
			errs.Add(l.Pos, "interface without a name: %s", quoteShort(l.Text))
			continue
		}
		for _, s := range f[2:] {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				if len(errs) < maxErrors {
					errs.Add(l.Pos, "bad address %s of %s", quoteShort(s), i.Name)
				}
				continue
			}
			a := &Address{Family: "inet6", Local: p.Addr(), PrefixLen: p.Bits(), Pos: l.Pos, Raw: l.Text}
			if p.Addr().Is4() {
				a.Family = "inet"
			}
			i.Addresses = append(i.Addresses, a)
		}
		d.Interfaces = append(d.Interfaces, i)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return d, nil
}

// FormatBrief prints d as `ip -br addr` does.
func FormatBrief(d *Dump) []byte {
	var b bytes.Buffer
	for _, i := range d.Interfaces {
		state := i.State
		if state == "" {
			state = "UNKNOWN"
		}
		fmt.Fprintf(&b, "%-16s %-14s ", ifName(i), state)
		for _, a := range i.Addresses {
			b.WriteString(a.Prefix().String() + " ")
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}
