package ipset

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/proxyscan/proxyscan/parsers"
)

// Form is the text form a Dump was read from.
type Form string

// The forms of ipset output.
const (
	FormSave Form = "save" // ipset save
	FormList Form = "list" // ipset list
)

// Dump is a set of IP sets, in input order.
type Dump struct {
	Form Form   `json:"form"`
	Sets []*Set `json:"sets"`
	// PartialReason, for a listing read leniently ([ParseLenient]), says
	// which sets it lists only some members of; "" when it lists them
	// all.
	PartialReason string `json:"partialReason,omitempty"`
}

// Set is one IP set.
type Set struct {
	Name string `json:"name"`
	// Type is the set type, e.g. "hash:ip,port" or "bitmap:port".
	Type string `json:"type"`
	// Family is "inet" or "inet6" for hash types, empty for bitmap and
	// list types.
	Family string `json:"family,omitempty"`
	// Options are the create options (the header) in input order.
	Options []Option `json:"options"`
	// List holds what only `ipset list` shows; nil for the save form.
	List *ListInfo `json:"list,omitempty"`
	// Entries are the members in input order.
	Entries []*Entry `json:"entries"`
	// Partial, for a set of a listing read leniently that lists fewer
	// members than its "Number of entries" says (a paste cut short),
	// says how many it lists: "3 of its 10 entries". A member it does
	// not list may be in the set.
	Partial string `json:"partial,omitempty"`
	// Pos and Raw locate the create line (save) or the Name: line (list).
	Pos parsers.Pos `json:"pos"`
	Raw string      `json:"raw"`
}

// ListInfo is the part of an `ipset list` block that the save form lacks.
type ListInfo struct {
	Revision     int `json:"revision"`
	SizeInMemory int `json:"sizeInMemory"`
	References   int `json:"references"`
	// Entries is the "Number of entries" line; -1 when absent (older
	// ipset versions).
	Entries int `json:"entries"`
}

// Option is one create or entry option: a keyword with its value, or a
// flag (Value empty, Flag true) such as "counters" or "nomatch".
type Option struct {
	Name  string `json:"name"`
	Value string `json:"value,omitempty"`
	Flag  bool   `json:"flag,omitempty"`
}

// Entry is one member of a set.
type Entry struct {
	// Elem is the element text, e.g. "10.96.0.10,udp:53".
	Elem string `json:"elem"`
	// IP is the first address (hash:ip, hash:ip,port, …); for a hash:net
	// element it is the network address.
	IP netip.Addr `json:"ip,omitzero"`
	// Net is the network of a hash:net element, or the third part of
	// hash:ip,port,net.
	Net netip.Prefix `json:"net,omitzero"`
	// Proto is the protocol number of a port part, ProtoName its text as
	// printed ("udp", or "17" when ipset printed a number).
	Proto     uint8  `json:"proto,omitempty"`
	ProtoName string `json:"protoName,omitempty"`
	// Port is the port (the element of bitmap:port; the port part of
	// hash:*,port,*). PortText is the port part as printed when it is not
	// a number (an ICMP type name).
	Port     uint16 `json:"port,omitempty"`
	PortText string `json:"portText,omitempty"`
	// IP2 is the third part of hash:ip,port,ip.
	IP2 netip.Addr `json:"ip2,omitzero"`
	// Member is the set name of a list:set element.
	Member string `json:"member,omitempty"`
	// Options are the entry options in input order (timeout, packets,
	// bytes, comment, skbmark, skbprio, skbqueue, nomatch).
	Options []Option `json:"options,omitempty"`
	// Pos and Raw locate the add line (save) or the member line (list).
	Pos parsers.Pos `json:"pos"`
	Raw string      `json:"raw"`
}

// Option returns the value of a set's create option and whether it is set.
func (s *Set) Option(name string) (string, bool) { return lookup(s.Options, name) }

// Option returns the value of an entry option and whether it is set.
func (e *Entry) Option(name string) (string, bool) { return lookup(e.Options, name) }

func lookup(opts []Option, name string) (string, bool) {
	for _, o := range opts {
		if o.Name == name {
			return o.Value, true
		}
	}
	return "", false
}

// Comment returns the entry's comment, unquoted.
func (e *Entry) Comment() string {
	v, _ := e.Option("comment")
	return v
}

// Set returns the set with the given name, or nil.
func (d *Dump) Set(name string) *Set {
	for _, s := range d.Sets {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Protocol numbers and names ipset prints in port parts.
var protoNames = map[string]uint8{
	"icmp": 1, "igmp": 2, "tcp": 6, "udp": 17, "gre": 47, "esp": 50, "ah": 51,
	"icmpv6": 58, "ipv6-icmp": 58, "sctp": 132, "udplite": 136,
}

// ProtoName returns the usual name of a protocol number ("tcp" for 6), or
// the number in decimal.
func ProtoName(p uint8) string {
	switch p {
	case 6:
		return "tcp"
	case 17:
		return "udp"
	case 132:
		return "sctp"
	case 1:
		return "icmp"
	case 58:
		return "ipv6-icmp"
	}
	for n, v := range protoNames {
		if v == p && n != "icmpv6" {
			return n
		}
	}
	return strconv.Itoa(int(p))
}

// dims returns the element parts of a set type ("hash:ip,port" → ip,
// port), or nil for a type whose name is not of that shape.
func dims(typ string) []string {
	kind, parts, ok := strings.Cut(typ, ":")
	if !ok || (kind != "hash" && kind != "bitmap" && kind != "list") || parts == "" {
		return nil
	}
	return strings.Split(parts, ",")
}
