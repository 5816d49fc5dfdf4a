package iptables

import (
	"math"
	"net/netip"
	"strconv"
	"strings"
)

// The readers of the option values a rule's typed reading ([Meanings])
// is made of.

// ParsePrefix reads the value of -s or -d: an address (unmapped, a
// prefix of its length), a prefix (masked), or an address with a dotted
// mask, which iptables-save prints as a length, so that only contiguous
// ones are accepted.
func ParsePrefix(s string) (netip.Prefix, bool) {
	if p, ok := parseIPv4Prefix(s); ok {
		return p, true
	}
	if addr, mask, ok := strings.Cut(s, "/"); ok {
		if p, err := netip.ParsePrefix(s); err == nil {
			return p.Masked(), true
		}
		a, err1 := netip.ParseAddr(addr)
		m, err2 := netip.ParseAddr(mask)
		if err1 != nil || err2 != nil || !m.Is4() {
			return netip.Prefix{}, false
		}
		b := m.As4()
		v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
		n := 0
		for v&(1<<31) != 0 {
			n++
			v <<= 1
		}
		if v != 0 {
			return netip.Prefix{}, false
		}
		return netip.PrefixFrom(a.Unmap(), n).Masked(), true
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, false
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), true
}

// parseIPv4Prefix reads the usual form of an IPv4 prefix,
// "a.b.c.d/n" (decimal without leading zeros), as netip.ParsePrefix does
// and masked, and quickly: rules have thousands of them. It returns false
// for any other form, which ParsePrefix then reads (or refuses).
func parseIPv4Prefix(s string) (netip.Prefix, bool) {
	a, i, ok := leadingIPv4(s)
	if !ok || i >= len(s) || s[i] != '/' {
		return netip.Prefix{}, false
	}
	bits, n := leadingDecimal(s[i+1:], 2)
	if n == 0 || i+1+n != len(s) || bits > 32 {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(a, bits).Masked(), true
}

// ParseAddrPort reads the --to-destination values kube-proxy writes,
// "ip:port" and "[ip6]:port" (unmapped), quickly; false for the other
// forms (ranges, an address alone).
func ParseAddrPort(v string) (netip.AddrPort, bool) {
	if ap, ok := parseIPv4AddrPort(v); ok {
		return ap, true
	}
	if ap, err := netip.ParseAddrPort(v); err == nil && !strings.Contains(v, "-") {
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
	}
	return netip.AddrPort{}, false
}

// parseIPv4AddrPort reads the usual form of an IPv4 address and port,
// "a.b.c.d:port" (decimal without leading zeros), as netip.ParseAddrPort
// does, and quickly. It returns false for any other form, which
// ParseAddrPort then reads (or refuses).
func parseIPv4AddrPort(s string) (netip.AddrPort, bool) {
	a, i, ok := leadingIPv4(s)
	if !ok || i >= len(s) || s[i] != ':' {
		return netip.AddrPort{}, false
	}
	port, n := leadingDecimal(s[i+1:], 5)
	if n == 0 || i+1+n != len(s) || port > 65535 {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(a, uint16(port)), true
}

// leadingIPv4 reads the dotted IPv4 address s starts with (decimal
// without leading zeros), and its length.
func leadingIPv4(s string) (netip.Addr, int, bool) {
	var b [4]byte
	i := 0
	for k := range b {
		if k > 0 {
			if i >= len(s) || s[i] != '.' {
				return netip.Addr{}, 0, false
			}
			i++
		}
		v, n := leadingDecimal(s[i:], 3)
		if n == 0 || v > 255 {
			return netip.Addr{}, 0, false
		}
		b[k], i = byte(v), i+n
	}
	return netip.AddrFrom4(b), i, true
}

// leadingDecimal reads the decimal number s starts with, of at most max
// digits and without a leading zero (but "0"), and its length; 0 for the
// length when there is none, or it has more digits.
func leadingDecimal(s string, max int) (int, int) {
	v, n := 0, 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		if n == max || n == 1 && s[0] == '0' {
			return 0, 0
		}
		v = v*10 + int(s[n]-'0')
		n++
	}
	return v, n
}

// ProtocolNumber reads a protocol as -p writes it: a name (any case) or
// a number; "all" is 0.
func ProtocolNumber(s string) (uint8, bool) {
	switch strings.ToLower(s) {
	case "tcp":
		return 6, true
	case "udp":
		return 17, true
	case "sctp":
		return 132, true
	case "icmp":
		return 1, true
	case "icmpv6", "ipv6-icmp":
		return 58, true
	case "all":
		return 0, true
	}
	n, err := strconv.ParseUint(s, 10, 8)
	return uint8(n), err == nil
}

// parsePortRange reads "port", "lo:hi", "lo:" or ":hi".
func parsePortRange(part string) (PortRange, bool) {
	lo, hi, isRange := strings.Cut(part, ":")
	a, err := strconv.ParseUint(lo, 10, 16)
	if lo == "" {
		a, err = 0, nil
	}
	if err != nil {
		return PortRange{}, false
	}
	b := a
	if isRange {
		b = 65535
		if hi != "" {
			b, err = strconv.ParseUint(hi, 10, 16)
			if err != nil {
				return PortRange{}, false
			}
		}
	}
	return PortRange{uint16(a), uint16(b)}, true
}

// setPortList sets the port ranges s lists ("80", "80,443", "1000:2000")
// of a port match x: a list goes in its extension. A single range, the
// usual case, is read without allocating.
func setPortList(x *Match, ext *MatchExt, s string) bool {
	if !strings.Contains(s, ",") {
		r, ok := parsePortRange(s)
		x.setPort(r)
		return ok
	}
	var out []PortRange
	for part := range strings.SplitSeq(s, ",") {
		r, ok := parsePortRange(part)
		if !ok {
			return false
		}
		out = append(out, r)
	}
	if len(out) == 1 {
		x.setPort(out[0])
	} else {
		ext.Ports = out
	}
	return true
}

// ParseMark reads a mark and its mask ("0x4000/0x4000"); the mask is all
// ones when none is written.
func ParseMark(s string) (value, mask uint32, ok bool) {
	v, m, hasMask := strings.Cut(s, "/")
	val, err := strconv.ParseUint(v, 0, 32)
	if err != nil {
		return 0, 0, false
	}
	msk := uint64(0xffffffff)
	if hasMask {
		msk, err = strconv.ParseUint(m, 0, 32)
		if err != nil {
			return 0, 0, false
		}
	}
	return uint32(val), uint32(msk), true
}

// addrTypeNames are the address types of -m addrtype that are modelled.
var addrTypeNames = map[string]uint32{"LOCAL": AddrLocal, "UNICAST": AddrUnicast, "BROADCAST": AddrBroadcast, "MULTICAST": AddrMulticast}

// ctStateNames are the states of --ctstate and --state.
var ctStateNames = map[string]uint32{"NEW": CtNew, "ESTABLISHED": CtEstablished, "RELATED": CtRelated, "INVALID": CtInvalid,
	"UNTRACKED": CtUntracked, "SNAT": CtSNAT, "DNAT": CtDNAT}

// tcpFlagBits are the flags of --tcp-flags (NONE is none of them).
var tcpFlagBits = map[string]uint32{"FIN": TCPFIN, "SYN": TCPSYN, "RST": TCPRST, "PSH": TCPPSH, "ACK": TCPACK, "URG": TCPURG, "ALL": 0x3f, "NONE": 0}

// parseTCPFlags reads a --tcp-flags list; names it does not know are left
// out.
func parseTCPFlags(s string) uint8 {
	bits, _ := parseFlags(s, tcpFlagBits)
	return uint8(bits)
}

// parseFlags reads a comma-separated list of names (any case) into the
// union of their bits; false when a name is not in names (the bits are
// then those of the names it knows).
func parseFlags(s string, names map[string]uint32) (uint32, bool) {
	var bits uint32
	ok := true
	for n := range strings.SplitSeq(s, ",") {
		b, known := names[strings.ToUpper(n)]
		bits |= b
		ok = ok && known
	}
	return bits, ok
}

// parseProbability reads a --probability value as strconv.ParseFloat
// does. iptables-save writes "0.16666666651": up to 15 decimals after
// "0." are read as an integer divided by a power of ten, which, both being
// exact doubles, rounds to the same double as ParseFloat; other forms go
// to ParseFloat.
func parseProbability(s string) (float64, error) {
	if len(s) > 2 && len(s) <= 17 && s[0] == '0' && s[1] == '.' {
		num := uint64(0)
		for i := 2; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return strconv.ParseFloat(s, 64)
			}
			num = num*10 + uint64(s[i]-'0')
		}
		return float64(num) / pow10[len(s)-2], nil
	}
	return strconv.ParseFloat(s, 64)
}

// pow10 holds the powers of ten parseProbability divides by.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// KernelProbability returns the probability the kernel applies for a
// statistic --probability p: it stores p as a 31-bit fraction and
// iptables-save prints that fraction back with 11 decimals, so the printed
// value is read back to the exact stored fraction.
func KernelProbability(p float64) float64 {
	stored := math.Round(p * (1 << 31))
	if stored >= 1<<31 {
		return 1
	}
	if stored <= 0 {
		return 0
	}
	// The printed value of 1/n rounds back to 1/n: keep the exact ratio
	// when it is within the kernel's resolution of one.
	inv := 1 / p
	if n := math.Round(inv); n >= 1 && math.Abs(stored-math.Round((1<<31)/n)) <= 1 {
		return 1 / n
	}
	return stored / (1 << 31)
}

// ProtocolName returns the name -p gives protocol number n ("tcp"), its
// number in decimal for one without a name.
func ProtocolName(n uint8) string {
	switch n {
	case 6:
		return "tcp"
	case 17:
		return "udp"
	case 132:
		return "sctp"
	case 1:
		return "icmp"
	case 58:
		return "icmpv6"
	case 0:
		return "all"
	}
	return strconv.Itoa(int(n))
}
