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
// that a ruleset read from the kernel fills the same model as a listing.
// Rules are not converted: their netlink form is a list of low-level
// expressions that nft decompiles into statements.

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

// FromChain converts a chain read over netlink; c.Table gives the family
// that hook numbers and priority names depend on.
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
// as nft prints them; interval sets give prefixes and ranges.
//
// github.com/google/nftables v0.3.0 reads the data type of a verdict map
// into KeyType, losing the key type, and does not read set comments: the
// caller must restore KeyType (and may set Comment) before converting such
// a map; FromSet refuses a map whose key type is "verdict".
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

var protoNames = map[byte]string{1: "icmp", 2: "igmp", 6: "tcp", 17: "udp", 33: "dccp", 47: "gre", 50: "esp", 51: "ah", 58: "ipv6-icmp", 132: "sctp", 136: "udplite"}

// valueText renders the bytes of one value of datatype t as nft does.
func valueText(b []byte, t string) (string, error) {
	switch t {
	case "ipv4_addr":
		return netip.AddrFrom4([4]byte(b)).String(), nil
	case "ipv6_addr":
		return netip.AddrFrom16([16]byte(b)).String(), nil
	case "inet_service":
		return strconv.Itoa(int(binary.BigEndian.Uint16(b))), nil
	case "inet_proto":
		if n, ok := protoNames[b[0]]; ok {
			return n, nil
		}
		return strconv.Itoa(int(b[0])), nil
	case "mark":
		return formatNumber(uint64(binaryutil.NativeEndian.Uint32(b)), "mark"), nil
	case "integer":
		return strconv.FormatUint(uint64(binaryutil.NativeEndian.Uint32(b)), 10), nil
	case "ifname":
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
	}
	return "", fmt.Errorf("unsupported datatype %s", t)
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

func convertElements(s *Set, elems []nftables.SetElement) ([]Element, error) {
	interval := s.HasFlag("interval") && len(s.KeyType) == 1
	if interval {
		elems = append([]nftables.SetElement(nil), elems...)
		sort.SliceStable(elems, func(i, j int) bool { return bytes.Compare(elems[i].Key, elems[j].Key) < 0 })
	}
	var out []Element
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
		e := Element{Timeout: el.Timeout, Expires: el.Expires, Comment: el.Comment}
		for k, p := range parts {
			txt, err := rangeText(p, ends[k], s.KeyType[k])
			if err != nil {
				return nil, err
			}
			e.Key = append(e.Key, txt)
		}
		if el.Counter != nil {
			e.Counter = &Counter{Packets: el.Counter.Packets, Bytes: el.Counter.Bytes}
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
					e.Data = append(e.Data, txt)
				}
			}
		}
		out = append(out, e)
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
