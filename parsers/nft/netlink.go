package nft

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
)

// Conversions from the netlink values of github.com/google/nftables, so
// that a ruleset read from the kernel fills the same model as a listing
// and [Format] prints it as `nft list ruleset` does.

// NetlinkTable is what github.com/google/nftables reads of one table, each
// list in the kernel's order: its named objects, its sets (named and
// anonymous, with their elements) and its chains with their rules.
type NetlinkTable struct {
	Table   *nftables.Table
	Objects []nftables.Obj
	Sets    []NetlinkSet
	Chains  []NetlinkChain
}

// NetlinkSet is a set and its elements as [nftables.Conn.GetSetElements]
// returns them.
type NetlinkSet struct {
	Set      *nftables.Set
	Elements []nftables.SetElement
}

// NetlinkChain is a chain and its rules.
type NetlinkChain struct {
	Chain *nftables.Chain
	Rules []*nftables.Rule
}

// FromNetlink converts tables read over netlink into a ruleset. Rules are
// decompiled from their expressions as nft decompiles them; ifnames names
// the interfaces of the node by index, as nft prints them in `iif "lo"`.
// The returned notes say what the conversion could not carry: what the
// netlink reader does not return (comments of tables, chains and sets,
// typeof declarations), rules with expressions the decompiler does not
// know, verdict maps whose key types had to be guessed, objects other
// than counters.
func FromNetlink(tables []NetlinkTable, ifnames map[uint32]string) (*Ruleset, []string) {
	rs := &Ruleset{}
	notes := []string{"table, chain and set comments are not returned by the netlink reader, and sets declared with typeof are shown with their datatypes"}
	var unsupported, guessed, objects int
	var setErrs []string
	for i := range tables {
		nt := &tables[i]
		t := FromTable(nt.Table)
		for _, o := range nt.Objects {
			if c, ok := o.(*nftables.CounterObj); ok {
				t.Objects = append(t.Objects, &Object{Kind: "counter", Name: c.Name, Counter: &Counter{Packets: c.Packets, Bytes: c.Bytes}})
			} else {
				objects++
			}
		}
		c := newRuleConv(nt, ifnames)
		for _, nc := range nt.Chains {
			ch := FromChain(nc.Chain)
			for _, r := range nc.Rules {
				mr := c.rule(r)
				if mr.Unsupported {
					unsupported++
				}
				ch.Rules = append(ch.Rules, mr)
			}
			t.Chains = append(t.Chains, ch)
		}
		for _, ns := range nt.Sets {
			if ns.Set.Anonymous {
				continue
			}
			s, inferred := c.keyTyped(ns.Set, ns.Elements)
			if inferred {
				guessed++
			}
			ms, err := FromSet(s, ns.Elements)
			if err != nil {
				setErrs = append(setErrs, fmt.Sprintf("%s %s: %v", FamilyName(t.Family), t.Name, err))
				ms, _ = FromSet(s, nil)
			}
			if ms != nil {
				t.Sets = append(t.Sets, ms)
			}
		}
		rs.Tables = append(rs.Tables, t)
	}
	if unsupported > 0 {
		notes = append(notes, fmt.Sprintf("%d rules hold netlink expressions that are not decompiled: kept as \"%s\" statements", unsupported, unsupportedPrefix))
	}
	if guessed > 0 {
		notes = append(notes, fmt.Sprintf("the key types of %d verdict maps, which the netlink reader loses, were guessed from their key length", guessed))
	}
	if objects > 0 {
		notes = append(notes, fmt.Sprintf("%d stateful objects other than counters left out", objects))
	}
	for _, e := range setErrs {
		notes = append(notes, "elements left out: set "+e)
	}
	return rs, notes
}

// FromTable converts a table read over netlink.
func FromTable(t *nftables.Table) *Table {
	out := &Table{Family: t.Family, Name: t.Name}
	if t.Flags&0x1 != 0 {
		out.Flags = append(out.Flags, "dormant")
	}
	if t.Flags&0x2 != 0 {
		out.Flags = append(out.Flags, "owner")
	}
	return out
}

// FromChain converts a chain read over netlink (without its rules); c.Table
// gives the family that hook numbers and priority names depend on.
func FromChain(c *nftables.Chain) *Chain {
	out := &Chain{Name: c.Name}
	if c.Hooknum == nil {
		return out
	}
	var fam nftables.TableFamily
	if c.Table != nil {
		fam = c.Table.Family
	}
	out.Type = c.Type
	out.Hook = HookName(fam, *c.Hooknum)
	var prio nftables.ChainPriority
	if c.Priority != nil {
		prio = *c.Priority
	}
	out.Priority = &Priority{Value: prio, Text: PriorityText(fam, out.Hook, prio)}
	if c.Policy != nil {
		p := *c.Policy
		out.Policy = &p
	}
	if c.Device != "" {
		out.Devices = []string{c.Device}
	}
	return out
}

// FromSet converts a set and its elements read over netlink (as
// [nftables.Conn.GetSetElements] returns them). Keys and data are rendered
// as nft prints them, in nft's order; interval sets give prefixes and
// ranges.
//
// github.com/google/nftables v0.3.0 reads the data type of a verdict map
// into KeyType, losing the key type, and does not read set comments: the
// caller must restore KeyType (and may set Comment) before converting such
// a map, as [FromNetlink] does; FromSet refuses a map whose key type is
// "verdict".
func FromSet(s *nftables.Set, elems []nftables.SetElement) (*Set, error) {
	if s.IsMap && s.KeyType.Name == TypeVerdictName {
		return nil, fmt.Errorf("set %s: key datatype unknown (reported as verdict)", s.Name)
	}
	out := &Set{Name: s.Name, IsMap: s.IsMap, Comment: s.Comment, Size: s.Size, Timeout: s.Timeout,
		AutoMerge: s.AutoMerge, Counter: s.Counter}
	out.KeyType = typeNames(s.KeyType)
	if s.IsMap {
		out.DataType = typeNames(s.DataType)
		if len(out.DataType) == 0 || s.DataType.Name == "" {
			out.DataType = []string{"verdict"}
		}
	}
	var flags []string
	if s.Constant {
		flags = append(flags, "constant")
	}
	if s.Dynamic {
		flags = append(flags, "dynamic")
	}
	if s.Interval {
		flags = append(flags, "interval")
	}
	if s.HasTimeout || s.Timeout != 0 {
		flags = append(flags, "timeout")
	}
	out.Flags, _ = canonSetFlags(flags)
	var err error
	if out.Elements, err = convertElements(out, elems); err != nil {
		return nil, fmt.Errorf("set %s: %w", s.Name, err)
	}
	return out, nil
}

// TypeVerdictName is the datatype name of verdict map data.
const TypeVerdictName = "verdict"

func typeNames(t nftables.SetDatatype) []string {
	if t.Name == "" {
		return nil
	}
	return strings.Split(t.Name, " . ")
}

// typeSize returns the byte size of one value of a datatype.
func typeSize(name string) (int, bool) {
	dts, ok := datatypes([]string{name})
	if !ok || dts[0].Bytes == 0 {
		return 0, false
	}
	return int(dts[0].Bytes), true
}

// splitKey cuts a key or data into its concatenated parts, each padded to
// 4 bytes when there are several.
func splitKey(b []byte, types []string) ([][]byte, error) {
	if len(types) == 1 {
		n, ok := typeSize(types[0])
		if !ok {
			return nil, fmt.Errorf("unsupported datatype %s", types[0])
		}
		if len(b) < n {
			return nil, fmt.Errorf("%d-byte value for datatype %s", len(b), types[0])
		}
		return [][]byte{b[:n]}, nil
	}
	var out [][]byte
	for _, t := range types {
		n, ok := typeSize(t)
		if !ok {
			return nil, fmt.Errorf("unsupported datatype %s", t)
		}
		w := (n + 3) &^ 3
		if len(b) < w {
			return nil, fmt.Errorf("value too short for %s", strings.Join(types, " . "))
		}
		out = append(out, b[:n])
		b = b[w:]
	}
	return out, nil
}

// hostOrder reports whether nft keeps values of datatype t in host byte
// order (the others are in network byte order).
func hostOrder(t string) bool {
	switch t {
	case "mark", "integer", "ct_state", "ct_status", "ct_event", "iface_index", "ifname", "string",
		"fib_addrtype", "uid", "gid", "realm", "classid", "devgroup", "hour", "day":
		return true
	}
	return false
}

// uintOf reads an unsigned number of 1, 2, 4 or 8 bytes.
func uintOf(b []byte, host bool) (uint64, bool) {
	var o binary.ByteOrder = binary.BigEndian
	if host {
		o = binary.NativeEndian
	}
	switch len(b) {
	case 1:
		return uint64(b[0]), true
	case 2:
		return uint64(o.Uint16(b)), true
	case 4:
		return uint64(o.Uint32(b)), true
	case 8:
		return o.Uint64(b), true
	}
	return 0, false
}

// symbols are the names nft prints for the values of symbolic datatypes.
var symbols = map[string]map[uint64]string{
	"inet_proto": {1: "icmp", 2: "igmp", 6: "tcp", 17: "udp", 33: "dccp", 47: "gre", 50: "esp", 51: "ah",
		58: "ipv6-icmp", 132: "sctp", 136: "udplite"},
	"nf_proto": {2: "ipv4", 10: "ipv6"},
	"ct_dir":   {0: "original", 1: "reply"},
	"icmp_type": {0: "echo-reply", 3: "destination-unreachable", 4: "source-quench", 5: "redirect", 8: "echo-request",
		9: "router-advertisement", 10: "router-solicitation", 11: "time-exceeded", 12: "parameter-problem",
		13: "timestamp-request", 14: "timestamp-reply", 15: "info-request", 16: "info-reply",
		17: "address-mask-request", 18: "address-mask-reply"},
	"icmpv6_type": {1: "destination-unreachable", 2: "packet-too-big", 3: "time-exceeded", 4: "parameter-problem",
		128: "echo-request", 129: "echo-reply", 130: "mld-listener-query", 131: "mld-listener-report",
		132: "mld-listener-done", 133: "nd-router-solicit", 134: "nd-router-advert", 135: "nd-neighbor-solicit",
		136: "nd-neighbor-advert", 137: "nd-redirect", 138: "router-renumbering", 141: "ind-neighbor-solicit",
		142: "ind-neighbor-advert", 143: "mld2-listener-report"},
	"icmp_code": {0: "net-unreachable", 1: "host-unreachable", 2: "prot-unreachable", 3: "port-unreachable",
		4: "frag-needed", 9: "net-prohibited", 10: "host-prohibited", 13: "admin-prohibited"},
	"icmpv6_code": {0: "no-route", 1: "admin-prohibited", 3: "addr-unreachable", 4: "port-unreachable",
		5: "policy-fail", 6: "reject-route"},
	"icmpx_code":   {0: "no-route", 1: "port-unreachable", 2: "host-unreachable", 3: "admin-prohibited"},
	"pkt_type":     {0: "host", 1: "broadcast", 2: "multicast", 3: "other"},
	"fib_addrtype": {0: "unspec", 1: "unicast", 2: "local", 3: "broadcast", 4: "anycast", 5: "multicast", 6: "blackhole", 7: "unreachable", 8: "prohibit"},
	"ether_type":   {0x0800: "ip", 0x0806: "arp", 0x86dd: "ip6", 0x8100: "8021q", 0x88a8: "8021ad"},
	"boolean":      {0: "missing", 1: "exists"},
}

// bitNames are the flag names of bitmask datatypes, lowest bit first.
var bitNames = map[string][]string{
	"ct_state":  {"invalid", "established", "related", "new", "", "", "untracked"},
	"ct_status": {"expected", "seen-reply", "assured", "confirmed", "snat", "dnat", "", "", "", "dying"},
	"tcp_flag":  {"fin", "syn", "rst", "psh", "ack", "urg", "ecn", "cwr"},
}

// valueText renders the bytes of one value of datatype t as nft does.
func valueText(b []byte, t string) (string, error) {
	switch t {
	case "ipv4_addr":
		if len(b) == 4 {
			return netip.AddrFrom4([4]byte(b)).String(), nil
		}
	case "ipv6_addr":
		if len(b) == 16 {
			return netip.AddrFrom16([16]byte(b)).String(), nil
		}
	case "ifname", "string":
		if i := bytes.IndexByte(b, 0); i >= 0 {
			b = b[:i]
		}
		return `"` + string(b) + `"`, nil
	case "ether_addr":
		parts := make([]string, len(b))
		for i, c := range b {
			parts[i] = fmt.Sprintf("%02x", c)
		}
		return strings.Join(parts, ":"), nil
	case "mark":
		if n, ok := uintOf(b, true); ok {
			return formatNumber(n, "mark"), nil
		}
	case "inet_service", "integer", "uid", "gid", "realm", "devgroup", "classid", "iface_index":
		if n, ok := uintOf(b, hostOrder(t)); ok {
			return strconv.FormatUint(n, 10), nil
		}
	}
	if names, ok := bitNames[t]; ok {
		n, ok := uintOf(b, t != "tcp_flag")
		if !ok {
			return "", fmt.Errorf("%d-byte value for datatype %s", len(b), t)
		}
		var out []string
		for i, name := range names {
			if n&(1<<i) != 0 && name != "" {
				out = append(out, name)
				n &^= 1 << i
			}
		}
		if n != 0 || len(out) == 0 {
			out = append(out, fmt.Sprintf("0x%x", n))
		}
		return strings.Join(out, ","), nil
	}
	if syms, ok := symbols[t]; ok {
		n, ok := uintOf(b, hostOrder(t))
		if !ok {
			return "", fmt.Errorf("%d-byte value for datatype %s", len(b), t)
		}
		if s, ok := syms[n]; ok {
			return s, nil
		}
		return strconv.FormatUint(n, 10), nil
	}
	return "", fmt.Errorf("unsupported datatype %s (%d bytes)", t, len(b))
}

// rangeText renders the inclusive range lo..hi as nft does: a single
// value, an address prefix, or lo-hi.
func rangeText(lo, hi []byte, t string) (string, error) {
	a, err := valueText(lo, t)
	if err != nil || bytes.Equal(lo, hi) {
		return a, err
	}
	if t == "ipv4_addr" || t == "ipv6_addr" {
		if plen, ok := prefixLen(lo, hi); ok {
			return a + "/" + strconv.Itoa(plen), nil
		}
	}
	z, err := valueText(hi, t)
	return a + "-" + z, err
}

// prefixLen reports whether lo..hi is exactly a prefix, and its length.
func prefixLen(lo, hi []byte) (int, bool) {
	ones, seenZero := 0, false
	for i := len(lo) - 1; i >= 0; i-- {
		x := lo[i] ^ hi[i]
		if lo[i]&x != 0 || hi[i]&x != x {
			return 0, false
		}
		for bit := 0; bit < 8; bit++ {
			if x>>bit&1 == 1 {
				if seenZero {
					return 0, false
				}
				ones++
			} else {
				seenZero = true
			}
		}
	}
	return len(lo)*8 - ones, true
}

// decrement returns b-1 (big-endian), for the exclusive end of an interval.
func decrement(b []byte) []byte {
	out := append([]byte(nil), b...)
	for i := len(out) - 1; i >= 0; i-- {
		out[i]--
		if out[i] != 0xff {
			break
		}
	}
	return out
}

// sortValue is the number nft orders the elements of a set by (its
// expr_msort_value): the key read in its datatype's byte order, and for a
// concatenation the parts, unpadded, read as one number in host byte
// order.
func sortValue(parts [][]byte, types []string) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	if len(types) > 1 || hostOrder(types[0]) {
		if binary.NativeEndian.Uint16([]byte{0, 1}) != 1 { // little-endian host
			b = append([]byte(nil), b...)
			for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
				b[i], b[j] = b[j], b[i]
			}
		}
	}
	return b
}

func convertElements(s *Set, elems []nftables.SetElement) ([]Element, error) {
	interval := s.HasFlag("interval") && len(s.KeyType) == 1
	if interval {
		elems = append([]nftables.SetElement(nil), elems...)
		sort.SliceStable(elems, func(i, j int) bool { return bytes.Compare(elems[i].Key, elems[j].Key) < 0 })
	}
	var out []Element
	var order [][]byte
	for i := 0; i < len(elems); i++ {
		el := &elems[i]
		if el.IntervalEnd {
			continue // the end of an interval already read, or the one before the first
		}
		parts, err := splitKey(el.Key, s.KeyType)
		if err != nil {
			return nil, err
		}
		var ends [][]byte
		switch {
		case interval:
			end := make([]byte, len(parts[0]))
			for k := range end {
				end[k] = 0xff
			}
			if i+1 < len(elems) && elems[i+1].IntervalEnd {
				end = decrement(elems[i+1].Key[:len(end)])
			}
			ends = [][]byte{end}
		case len(el.KeyEnd) > 0:
			if ends, err = splitKey(el.KeyEnd, s.KeyType); err != nil {
				return nil, err
			}
		default:
			ends = parts
		}
		var e Element
		var key, data []string
		if el.Comment != "" || el.Timeout != 0 || el.Expires != 0 {
			e.Attrs = &ElementAttrs{Comment: el.Comment, Timeout: el.Timeout, Expires: el.Expires}
		}
		for k, p := range parts {
			txt, err := rangeText(p, ends[k], s.KeyType[k])
			if err != nil {
				return nil, err
			}
			key = append(key, txt)
		}
		if el.Counter != nil {
			e.attrs().Counter = &Counter{Packets: el.Counter.Packets, Bytes: el.Counter.Bytes}
		}
		if s.IsMap {
			if s.IsVerdictMap() {
				vd := el.VerdictData
				if vd == nil {
					var err error
					if vd, err = decodeVerdict(el.Val); err != nil {
						return nil, err
					}
				}
				v, err := verdictOf(vd)
				if err != nil {
					return nil, err
				}
				e.Verdict = v
			} else {
				dp, err := splitKey(el.Val, s.DataType)
				if err != nil {
					return nil, err
				}
				for k, p := range dp {
					txt, err := valueText(p, s.DataType[k])
					if err != nil {
						return nil, err
					}
					data = append(data, txt)
				}
			}
		}
		e.setParts(key, data)
		out = append(out, e)
		order = append(order, sortValue(parts, s.KeyType))
	}
	if !s.HasFlag("interval") {
		// The kernel returns elements in its own order; nft sorts them
		// (but for intervals, which come sorted, or in the kernel's order
		// for concatenations).
		idx := make([]int, len(out))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(i, j int) bool { return bytes.Compare(order[idx[i]], order[idx[j]]) < 0 })
		sorted := make([]Element, len(out))
		for i, k := range idx {
			sorted[i] = out[k]
		}
		out = sorted
	}
	return out, nil
}

func verdictOf(v *expr.Verdict) (*Verdict, error) {
	switch v.Kind {
	case expr.VerdictAccept:
		return &Verdict{Kind: "accept"}, nil
	case expr.VerdictDrop:
		return &Verdict{Kind: "drop"}, nil
	case expr.VerdictReturn:
		return &Verdict{Kind: "return"}, nil
	case expr.VerdictContinue:
		return &Verdict{Kind: "continue"}, nil
	case expr.VerdictJump:
		return &Verdict{Kind: "jump", Target: v.Chain}, nil
	case expr.VerdictGoto:
		return &Verdict{Kind: "goto", Target: v.Chain}, nil
	}
	return nil, fmt.Errorf("unsupported verdict %d", v.Kind)
}

// decodeVerdict reads the netlink attributes of a verdict (NFTA_VERDICT_CODE,
// NFTA_VERDICT_CHAIN), which github.com/google/nftables leaves as raw data
// in SetElement.Val when it lists the elements of a verdict map.
func decodeVerdict(b []byte) (*expr.Verdict, error) {
	v := &expr.Verdict{}
	seen := false
	for len(b) >= 4 {
		n := int(binaryutil.NativeEndian.Uint16(b[:2]))
		typ := binaryutil.NativeEndian.Uint16(b[2:4]) & 0x3fff
		if n < 4 || n > len(b) {
			return nil, fmt.Errorf("malformed verdict attribute")
		}
		payload := b[4:n]
		switch typ {
		case 1: // NFTA_VERDICT_CODE
			if len(payload) != 4 {
				return nil, fmt.Errorf("malformed verdict code")
			}
			v.Kind = expr.VerdictKind(int32(binary.BigEndian.Uint32(payload)))
			seen = true
		case 2: // NFTA_VERDICT_CHAIN
			v.Chain = string(bytes.TrimRight(payload, "\x00"))
		}
		w := (n + 3) &^ 3
		if w > len(b) {
			w = len(b)
		}
		b = b[w:]
	}
	if !seen {
		return nil, fmt.Errorf("verdict map element without a verdict")
	}
	return v, nil
}
