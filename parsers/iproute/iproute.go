package iproute

import (
	"bytes"
	"net/netip"
	"strconv"
	"strings"

	"github.com/proxyscan/proxyscan/parsers"
)

// MaxLineLength is the longest input line the parser accepts.
const MaxLineLength = 64 << 10

const maxErrors = 10

// Dump is a route listing in input order.
type Dump struct {
	Routes []*Route `json:"routes"`
}

// Attr is one attribute as printed: "dev eth0", "metric 100".
type Attr struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Route is one route line.
type Route struct {
	// Type is the route type when printed (local, broadcast, blackhole,
	// unreachable, prohibit, throw, multicast, anycast, nat); empty for a
	// unicast route.
	Type string `json:"type,omitempty"`
	// Default reports a "default" destination; Dst is then 0.0.0.0/0 or ::/0.
	Default bool         `json:"default,omitempty"`
	Dst     netip.Prefix `json:"dst"`
	// Via is the gateway; Dev the output device.
	Via netip.Addr `json:"via,omitzero"`
	Dev string     `json:"dev,omitempty"`
	// Proto, Scope, Src, Table and Pref are the attributes of that name.
	Proto string     `json:"proto,omitempty"`
	Scope string     `json:"scope,omitempty"`
	Src   netip.Addr `json:"src,omitzero"`
	Table string     `json:"table,omitempty"`
	Pref  string     `json:"pref,omitempty"`
	// Metric is the metric; HasMetric reports that one was printed.
	Metric    int  `json:"metric,omitempty"`
	HasMetric bool `json:"hasMetric,omitempty"`
	// Attrs are all key/value attributes in the order printed, Flags the
	// bare flags (onlink, linkdown, dead, …).
	Attrs []Attr   `json:"attrs"`
	Flags []string `json:"flags,omitempty"`
	// Nexthops are the "nexthop" lines of a multipath route.
	Nexthops []*Nexthop  `json:"nexthops,omitempty"`
	Pos      parsers.Pos `json:"pos"`
	Raw      string      `json:"raw"`
}

// Nexthop is one path of a multipath route.
type Nexthop struct {
	Via    netip.Addr  `json:"via,omitzero"`
	Dev    string      `json:"dev,omitempty"`
	Weight int         `json:"weight,omitempty"`
	Attrs  []Attr      `json:"attrs"`
	Flags  []string    `json:"flags,omitempty"`
	Pos    parsers.Pos `json:"pos"`
	Raw    string      `json:"raw"`
}

var routeTypes = map[string]bool{
	"unicast": true, "local": true, "broadcast": true, "blackhole": true, "unreachable": true,
	"prohibit": true, "throw": true, "multicast": true, "anycast": true, "nat": true,
}

var routeFlags = map[string]bool{
	"onlink": true, "linkdown": true, "dead": true, "pervasive": true, "offload": true,
	"trap": true, "offload_failed": true, "notify": true, "rt_offload": true, "rt_trap": true,
	"rt_offload_failed": true, "cloned": true, "cache": true,
}

// IsMain reports whether the route is in the main table.
func (r *Route) IsMain() bool { return r.Table == "" || r.Table == "main" }

// Lookup returns the most specific unicast or local route of the main
// and local tables that covers ip, or nil.
func (d *Dump) Lookup(ip netip.Addr) *Route {
	var best *Route
	for _, r := range d.Routes {
		if r.Type != "" && r.Type != "unicast" && r.Type != "local" {
			continue
		}
		if !r.IsMain() && r.Table != "local" {
			continue
		}
		if r.Dst.Contains(ip) && (best == nil || r.Dst.Bits() > best.Dst.Bits()) {
			best = r
		}
	}
	return best
}

// Defaults returns the default routes.
func (d *Dump) Defaults() []*Route {
	var out []*Route
	for _, r := range d.Routes {
		if r.Default {
			out = append(out, r)
		}
	}
	return out
}

func quoteShort(s string) string {
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return strconv.Quote(s)
}

// Parse reads `ip route` / `ip -6 route` output.
func Parse(name string, data []byte) (*Dump, error) {
	d := &Dump{Routes: []*Route{}}
	var errs parsers.ErrorList
	n := 0
	var last *Route
	for len(data) > 0 && len(errs) < maxErrors {
		n++
		i := bytes.IndexByte(data, '\n')
		var lb []byte
		if i < 0 {
			lb, data = data, nil
		} else {
			lb, data = data[:i], data[i+1:]
		}
		pos := parsers.Pos{File: name, Line: n}
		if len(lb) > MaxLineLength {
			return nil, parsers.Errorf(pos, "line too long (%d bytes, limit %d)", len(lb), MaxLineLength)
		}
		l := string(bytes.TrimSuffix(lb, []byte("\r")))
		if strings.TrimSpace(l) == "" {
			continue
		}
		if strings.HasPrefix(l, "\tnexthop") || strings.HasPrefix(l, " nexthop") {
			if last == nil {
				errs.Add(pos, "nexthop line without a route")
				continue
			}
			nh, msg := parseNexthop(strings.Fields(l)[1:])
			if msg != "" {
				errs.Add(pos, "%s", msg)
				continue
			}
			nh.Pos, nh.Raw = pos, l
			last.Nexthops = append(last.Nexthops, nh)
			continue
		}
		if strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") {
			errs.Add(pos, "unexpected indented line %s", quoteShort(l))
			continue
		}
		r, msg := parseRoute(strings.Fields(l))
		if msg != "" {
			errs.Add(pos, "%s", msg)
			last = nil
			continue
		}
		r.Pos, r.Raw = pos, l
		d.Routes = append(d.Routes, r)
		last = r
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	if len(d.Routes) == 0 && n > 0 {
		// Only blank lines: an empty table is a valid listing.
		return d, nil
	}
	return d, nil
}

func parseRoute(f []string) (*Route, string) {
	r := &Route{Attrs: []Attr{}}
	if routeTypes[f[0]] {
		r.Type, f = f[0], f[1:]
		if len(f) == 0 {
			return nil, "route type " + strconv.Quote(r.Type) + " without a destination"
		}
	}
	if f[0] == "default" {
		r.Default = true
	} else {
		p, msg := parseDst(f[0])
		if msg != "" {
			return nil, msg
		}
		r.Dst = p
	}
	f = f[1:]
	attrs, flags, msg := parseAttrs(f)
	if msg != "" {
		return nil, msg
	}
	r.Attrs, r.Flags = attrs, flags
	v6 := false
	for _, a := range attrs {
		var err error
		switch a.Key {
		case "via":
			addr := strings.TrimPrefix(strings.TrimPrefix(a.Value, "inet6 "), "inet ")
			r.Via, err = netip.ParseAddr(addr)
		case "src":
			r.Src, err = netip.ParseAddr(a.Value)
		case "dev":
			r.Dev = a.Value
		case "proto":
			r.Proto = a.Value
		case "scope":
			r.Scope = a.Value
		case "table":
			r.Table = a.Value
		case "pref":
			r.Pref, v6 = a.Value, true
		case "metric":
			var n uint64
			n, err = strconv.ParseUint(a.Value, 10, 32)
			r.Metric, r.HasMetric = int(n), true
		}
		if err != nil {
			return nil, "bad " + a.Key + " " + strconv.Quote(a.Value)
		}
	}
	if r.Default {
		if v6 || (r.Via.IsValid() && r.Via.Is6() && !strings.HasPrefix(attrValue(attrs, "via"), "inet6 ")) {
			r.Dst = netip.PrefixFrom(netip.IPv6Unspecified(), 0)
		} else {
			r.Dst = netip.PrefixFrom(netip.IPv4Unspecified(), 0)
		}
	}
	return r, ""
}

func attrValue(attrs []Attr, key string) string {
	for _, a := range attrs {
		if a.Key == key {
			return a.Value
		}
	}
	return ""
}

func parseDst(s string) (netip.Prefix, string) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil || p.Addr().Zone() != "" || p.Masked() != p || strings.Contains(strings.SplitN(s, "/", 2)[1], "+") {
			return p, "bad destination " + strconv.Quote(s)
		}
		return p, ""
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, "bad destination " + strconv.Quote(s)
	}
	return netip.PrefixFrom(a, a.BitLen()), ""
}

// keysWithTwoWords are attributes whose value can be two words ("mtu
// lock 1500", "via inet6 fe80::1").
func parseAttrs(f []string) ([]Attr, []string, string) {
	attrs := []Attr{}
	var flags []string
	for i := 0; i < len(f); i++ {
		k := f[i]
		if routeFlags[k] {
			flags = append(flags, k)
			continue
		}
		if i+1 >= len(f) {
			return nil, nil, "attribute " + strconv.Quote(k) + " without a value"
		}
		v := f[i+1]
		i++
		if (k == "via" && (v == "inet6" || v == "inet")) || v == "lock" {
			if i+1 >= len(f) {
				return nil, nil, "attribute " + strconv.Quote(k) + " without a value"
			}
			v += " " + f[i+1]
			i++
		}
		attrs = append(attrs, Attr{k, v})
	}
	return attrs, flags, ""
}

func parseNexthop(f []string) (*Nexthop, string) {
	attrs, flags, msg := parseAttrs(f)
	if msg != "" {
		return nil, msg
	}
	nh := &Nexthop{Attrs: attrs, Flags: flags}
	for _, a := range attrs {
		var err error
		switch a.Key {
		case "via":
			nh.Via, err = netip.ParseAddr(strings.TrimPrefix(strings.TrimPrefix(a.Value, "inet6 "), "inet "))
		case "dev":
			nh.Dev = a.Value
		case "weight":
			var n uint64
			n, err = strconv.ParseUint(a.Value, 10, 16)
			nh.Weight = int(n)
		}
		if err != nil {
			return nil, "bad nexthop " + a.Key + " " + strconv.Quote(a.Value)
		}
	}
	return nh, ""
}

// Format prints d as iproute2 does: destination (or default) after the
// type, then the attributes and flags; IPv4 lines end in a space, IPv6
// lines end after "pref" (iproute2 6.1 prints them so).
func Format(d *Dump) []byte {
	var b bytes.Buffer
	for _, r := range d.Routes {
		if r.Type != "" {
			b.WriteString(r.Type + " ")
		}
		switch {
		case r.Default:
			b.WriteString("default")
		case r.Dst.Bits() == r.Dst.Addr().BitLen():
			b.WriteString(r.Dst.Addr().String())
		default:
			b.WriteString(r.Dst.String())
		}
		writeAttrs(&b, r.Attrs, r.Flags)
		b.WriteByte('\n')
		for _, nh := range r.Nexthops {
			b.WriteString("\tnexthop")
			writeAttrs(&b, nh.Attrs, nh.Flags)
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

func writeAttrs(b *bytes.Buffer, attrs []Attr, flags []string) {
	for _, a := range attrs {
		b.WriteString(" " + a.Key + " " + a.Value)
	}
	for _, f := range flags {
		b.WriteString(" " + f)
	}
	if len(attrs) == 0 || attrs[len(attrs)-1].Key != "pref" {
		b.WriteByte(' ')
	}
}
