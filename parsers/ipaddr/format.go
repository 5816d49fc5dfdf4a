package ipaddr

import (
	"bytes"
	"strconv"
	"strings"
)

// Format prints d in the form it was read from.
func Format(d *Dump) []byte {
	switch d.Form {
	case FormOneline:
		return FormatOneline(d)
	case FormJSON:
		return FormatJSON(d)
	case FormBrief:
		return FormatBrief(d)
	}
	return FormatText(d)
}

// FormatText prints d as `ip addr` does.
func FormatText(d *Dump) []byte {
	var b bytes.Buffer
	for _, i := range d.Interfaces {
		b.WriteString(strconv.Itoa(i.Index) + ": " + ifName(i) + ": <" + strings.Join(i.Flags, ",") + ">")
		for _, a := range i.Attrs {
			b.WriteString(" " + a.Key + " " + a.Value)
		}
		b.WriteByte('\n')
		if i.LinkType != "" {
			b.WriteString("    link/" + i.LinkType)
			if i.LinkAddress != "" {
				b.WriteString(" " + i.LinkAddress)
			}
			if i.Broadcast != "" {
				b.WriteString(" brd " + i.Broadcast)
			}
			for _, a := range i.LinkAttrs {
				b.WriteString(" " + a.Key + " " + a.Value)
			}
			b.WriteByte('\n')
		}
		for _, n := range i.AltNames {
			b.WriteString("    altname " + n + "\n")
		}
		for _, a := range i.Addresses {
			b.WriteString(addrLine(a) + "\n" + lifetimes(a) + "\n")
		}
	}
	return b.Bytes()
}

func ifName(i *Interface) string {
	if i.Peer != "" {
		return i.Name + "@" + i.Peer
	}
	return i.Name
}

// addrLine prints an address line as iproute2 does: every attribute and
// flag followed by a space, then the IPv4 label (so an IPv6 line, which
// has no label, ends in a space).
func addrLine(a *Address) string {
	var b strings.Builder
	if a.Peer.IsValid() {
		b.WriteString("    " + a.Family + " " + a.Local.String() + " peer " + a.Peer.String() + " ")
	} else {
		b.WriteString("    " + a.Family + " " + a.Local.String() + "/" + strconv.Itoa(a.PrefixLen) + " ")
	}
	if a.Broadcast.IsValid() {
		b.WriteString("brd " + a.Broadcast.String() + " ")
	}
	if a.Scope != "" {
		b.WriteString("scope " + a.Scope + " ")
	}
	for _, f := range a.Flags {
		b.WriteString(f + " ")
	}
	b.WriteString(a.Label)
	return b.String()
}

func lft(v uint32) string {
	if v == Forever {
		return "forever"
	}
	return strconv.FormatUint(uint64(v), 10) + "sec"
}

func lifetimes(a *Address) string {
	return "       valid_lft " + lft(a.ValidLft) + " preferred_lft " + lft(a.PreferredLft)
}

// FormatOneline prints d as `ip -o addr` does: one line per address.
func FormatOneline(d *Dump) []byte {
	var b bytes.Buffer
	for _, i := range d.Interfaces {
		for _, a := range i.Addresses {
			b.WriteString(strconv.Itoa(i.Index) + ": " + ifName(i) + addrLine(a) + `\` + lifetimes(a) + "\n")
		}
	}
	return b.Bytes()
}
