package ipaddr

import (
	"net/netip"
	"strings"

	"github.com/proxyscan/proxyscan/parsers"
)

// Form is the output form a Dump was read from.
type Form string

// The forms of `ip addr` output.
const (
	FormText    Form = "text"    // ip addr
	FormOneline Form = "oneline" // ip -o addr
	FormJSON    Form = "json"    // ip -j addr
	FormBrief   Form = "brief"   // ip -br addr
)

// KubeIPVSInterface is the dummy interface kube-proxy's IPVS mode binds
// service addresses to.
const KubeIPVSInterface = "kube-ipvs0"

// Forever is the lifetime iproute2 prints as "forever" (4294967295 in JSON).
const Forever = 1<<32 - 1

// Dump is a listing of interfaces in input order.
type Dump struct {
	Form       Form         `json:"form"`
	Interfaces []*Interface `json:"interfaces"`
	// Partial, when not "", says why the listing may not show every
	// interface of the node: it has no loopback interface, which every
	// node has (a listing of named interfaces, `ip addr show eth0`), or
	// the command line pasted above it selects interfaces or filters its
	// lines. The interfaces it shows are whole unless Filtered.
	Partial string `json:"partial,omitempty"`
	// Filtered reports a listing whose lines may have been dropped one by
	// one (`ip addr | grep inet`): an interface it shows may lack
	// addresses.
	Filtered bool `json:"filtered,omitempty"`
	// Family, when not "", is the only address family the listing shows
	// ("inet" for `ip -4 addr`, "inet6" for `ip -6 addr`).
	Family string `json:"family,omitempty"`
}

// ShowsAddresses reports whether the listing shows every address of the
// family ("inet" or "inet6") bound to the named interface, as far as it
// tells: the interface is listed, or the listing is of every interface
// (then it has none). It is false for a listing of other interfaces only,
// of the other family only, or filtered line by line.
func (d *Dump) ShowsAddresses(name, family string) bool {
	if d.Filtered || d.Family != "" && d.Family != family {
		return false
	}
	return d.Partial == "" || d.Interface(name) != nil
}

// notePartial sets Partial when the listing shows no loopback interface.
func (d *Dump) notePartial() {
	for _, i := range d.Interfaces {
		if i.IsLoopback() || i.Name == "lo" {
			return
		}
	}
	d.Partial = "it lists no loopback interface (lo), which every node has: a listing of some interfaces only"
}

// Attr is one key/value attribute as printed ("mtu 1500", "qdisc noqueue").
type Attr struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Interface is one network interface.
type Interface struct {
	Index int    `json:"index"`
	Name  string `json:"name"`
	// Peer is the part after "@" (the link of a veth or VLAN: a name, or
	// "ifN" when it lives in another namespace); empty when absent.
	Peer string `json:"peer,omitempty"`
	// Flags are the <...> flags, e.g. UP, LOWER_UP, BROADCAST.
	Flags []string `json:"flags"`
	MTU   int      `json:"mtu,omitempty"`
	Qdisc string   `json:"qdisc,omitempty"`
	// Master is the bridge or bond the interface belongs to.
	Master string `json:"master,omitempty"`
	// State is the operational state: UP, DOWN, UNKNOWN, ...
	State string `json:"state,omitempty"`
	Group string `json:"group,omitempty"`
	Qlen  int    `json:"qlen,omitempty"`
	// Attrs are all header attributes in the order printed (mtu, qdisc,
	// master, state, group, qlen and any others).
	Attrs []Attr `json:"attrs,omitempty"`
	// LinkType is the "link/…" type (ether, loopback, none, …).
	LinkType string `json:"linkType,omitempty"`
	// LinkAddress and Broadcast are the link-layer addresses.
	LinkAddress string `json:"linkAddress,omitempty"`
	Broadcast   string `json:"broadcast,omitempty"`
	// LinkAttrs are further attributes of the link line (link-netnsid, …).
	LinkAttrs []Attr `json:"linkAttrs,omitempty"`
	// AltNames are the "altname" lines.
	AltNames  []string   `json:"altNames,omitempty"`
	Addresses []*Address `json:"addresses"`
	// Pos and Raw locate the header line (text form) or the first line of
	// the interface (one-line form).
	Pos parsers.Pos `json:"pos"`
	Raw string      `json:"raw"`
}

// Address is one address of an interface.
type Address struct {
	// Family is "inet" or "inet6".
	Family string `json:"family"`
	// Local is the address, PrefixLen its prefix length.
	Local     netip.Addr `json:"local"`
	PrefixLen int        `json:"prefixLen"`
	// Peer is the peer address of a point-to-point address.
	Peer      netip.Prefix `json:"peer,omitzero"`
	Broadcast netip.Addr   `json:"broadcast,omitzero"`
	Scope     string       `json:"scope,omitempty"`
	// Flags are the address flags printed after the scope: secondary,
	// dynamic, noprefixroute, nodad, tentative, deprecated, ...
	Flags []string `json:"flags,omitempty"`
	// Label is the IPv4 label (the interface name, or "eth0:vip").
	Label string `json:"label,omitempty"`
	// ValidLft and PreferredLft are the lifetimes in seconds; Forever for
	// "forever".
	ValidLft     uint32 `json:"validLft"`
	PreferredLft uint32 `json:"preferredLft"`
	// Pos and Raw locate the address line.
	Pos parsers.Pos `json:"pos"`
	Raw string      `json:"raw"`
}

// Prefix returns the address with its prefix length.
func (a *Address) Prefix() netip.Prefix { return netip.PrefixFrom(a.Local, a.PrefixLen) }

// HasFlag reports whether the address has the given flag ("secondary").
func (a *Address) HasFlag(f string) bool {
	for _, x := range a.Flags {
		if x == f {
			return true
		}
	}
	return false
}

// HasFlag reports whether the interface has the given <...> flag ("UP").
func (i *Interface) HasFlag(f string) bool {
	for _, x := range i.Flags {
		if x == f {
			return true
		}
	}
	return false
}

// IsLoopback reports whether the interface is a loopback interface.
func (i *Interface) IsLoopback() bool { return i.HasFlag("LOOPBACK") || i.LinkType == "loopback" }

// Interface returns the interface with the given name, or nil.
func (d *Dump) Interface(name string) *Interface {
	for _, i := range d.Interfaces {
		if i.Name == name {
			return i
		}
	}
	return nil
}

// LocalAddresses returns every address of every interface, in input order.
func (d *Dump) LocalAddresses() []netip.Addr {
	var out []netip.Addr
	for _, i := range d.Interfaces {
		for _, a := range i.Addresses {
			out = append(out, a.Local)
		}
	}
	return out
}

// KubeIPVSAddresses returns the addresses bound to kube-ipvs0 (nil when
// there is no such interface).
func (d *Dump) KubeIPVSAddresses() []*Address {
	if i := d.Interface(KubeIPVSInterface); i != nil {
		return i.Addresses
	}
	return nil
}

// NodeAddresses returns the addresses kube-proxy's IPVS mode serves
// NodePorts on when nodePortAddresses is unset: every local address except
// those on kube-ipvs0, on loopback interfaces, loopback addresses and IPv6
// link-local ones.
func (d *Dump) NodeAddresses() []netip.Addr {
	var out []netip.Addr
	for _, i := range d.Interfaces {
		if i.Name == KubeIPVSInterface || i.IsLoopback() {
			continue
		}
		for _, a := range i.Addresses {
			if a.Local.IsLoopback() || (a.Local.Is6() && a.Local.IsLinkLocalUnicast()) {
				continue
			}
			out = append(out, a.Local)
		}
	}
	return out
}

// knownAddrFlags are the address flags iproute2 prints after the scope.
var knownAddrFlags = map[string]bool{
	"secondary": true, "temporary": true, "dynamic": true, "noprefixroute": true, "nodad": true,
	"tentative": true, "deprecated": true, "optimistic": true, "dadfailed": true, "home": true,
	"mngtmpaddr": true, "autojoin": true, "stable-privacy": true, "permanent": true,
}

func isAddrFlag(s string) bool { return knownAddrFlags[s] || strings.HasPrefix(s, "flags") }
