package ipvs

import (
	"encoding/binary"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// ipString formats an address the way glibc's inet_ntop does: dotted quad
// for a 4-byte address, RFC 5952 text for IPv6 with glibc's embedded-IPv4
// forms (::a.b.c.d and ::ffff:a.b.c.d).
func ipString(ip net.IP) string {
	if len(ip) == net.IPv4len {
		return ip.String()
	}
	if len(ip) != net.IPv6len {
		return "?"
	}
	return inetNtop6(ip)
}

// formatAddr formats an address of the given family.
func formatAddr(family uint16, ip net.IP) string {
	if family == FamilyIPv4 {
		if v4 := ip.To4(); v4 != nil {
			return v4.String()
		}
		return "0.0.0.0"
	}
	if v6 := ip.To16(); v6 != nil {
		return inetNtop6(v6)
	}
	return "::"
}

// addrPort formats addr:port, with brackets around an IPv6 address.
func addrPort(family uint16, ip net.IP, port uint16) string {
	p := strconv.Itoa(int(port))
	if family == FamilyIPv4 {
		return formatAddr(family, ip) + ":" + p
	}
	return "[" + formatAddr(family, ip) + "]:" + p
}

func inetNtop6(ip net.IP) string {
	var w [8]uint16
	for i := range w {
		w[i] = binary.BigEndian.Uint16(ip[2*i:])
	}
	// Longest run of zero words, at least two long (first one wins).
	bestBase, bestLen := -1, 0
	for i := 0; i < 8; {
		if w[i] != 0 {
			i++
			continue
		}
		j := i
		for j < 8 && w[j] == 0 {
			j++
		}
		if j-i > bestLen {
			bestBase, bestLen = i, j-i
		}
		i = j
	}
	if bestLen < 2 {
		bestBase = -1
	}
	var b strings.Builder
	for i := 0; i < 8; i++ {
		if bestBase >= 0 && i >= bestBase && i < bestBase+bestLen {
			if i == bestBase {
				b.WriteByte(':')
			}
			continue
		}
		if i != 0 {
			b.WriteByte(':')
		}
		if i == 6 && bestBase == 0 && (bestLen == 6 || (bestLen == 5 && w[5] == 0xffff)) {
			b.WriteString(net.IP(ip[12:16]).String())
			break
		}
		b.WriteString(strconv.FormatUint(uint64(w[i]), 16))
	}
	if bestBase >= 0 && bestBase+bestLen == 8 {
		b.WriteByte(':')
	}
	return b.String()
}

// parseAddrPort parses "1.2.3.4:80" or "[fd00::1]:80" into family, address
// (4 or 16 bytes) and port. hasPort reports whether a port was given;
// requirePort makes a missing port an error.
func parseAddrPort(s string, requirePort bool) (family uint16, ip net.IP, port uint16, hasPort bool, msg string) {
	host, portStr := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return 0, nil, 0, false, "missing ] in address " + strconv.Quote(s)
		}
		host = s[1:end]
		rest := s[end+1:]
		if rest == "" {
			if requirePort {
				return 0, nil, 0, false, "missing port in " + strconv.Quote(s)
			}
		} else if !strings.HasPrefix(rest, ":") {
			return 0, nil, 0, false, "bad address " + strconv.Quote(s)
		} else {
			portStr, hasPort = rest[1:], true
		}
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return 0, nil, 0, false, "bad IPv6 address " + strconv.Quote(host)
		}
		b := a.As16()
		ip = net.IP(b[:])
		family = FamilyIPv6
	} else {
		if i := strings.LastIndexByte(s, ':'); i >= 0 {
			host, portStr, hasPort = s[:i], s[i+1:], true
		} else if requirePort {
			return 0, nil, 0, false, "missing port in " + strconv.Quote(s)
		}
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is4() {
			if strings.ContainsAny(host, ":") {
				return 0, nil, 0, false, "IPv6 address " + strconv.Quote(host) + " without brackets"
			}
			if host != "" && !strings.ContainsAny(host[:1], "0123456789") {
				return 0, nil, 0, false, "address " + strconv.Quote(host) + " is not numeric (list with ipvsadm -n)"
			}
			return 0, nil, 0, false, "bad IPv4 address " + strconv.Quote(host)
		}
		b := a.As4()
		ip = net.IP(b[:])
		family = FamilyIPv4
	}
	if hasPort {
		p, err := strconv.ParseUint(portStr, 10, 16)
		if err != nil || portStr == "" || portStr[0] == '+' {
			if portStr != "" && !strings.ContainsAny(portStr[:1], "0123456789") {
				return 0, nil, 0, false, "port " + strconv.Quote(portStr) + " is not numeric (list with ipvsadm -n)"
			}
			return 0, nil, 0, false, "bad port " + strconv.Quote(portStr)
		}
		port = uint16(p)
	}
	return family, ip, port, hasPort, ""
}

// netmaskString prints an IPv4 persistence netmask as the kernel holds it
// (network byte order in a native-endian word, as moby/ipvs reads it).
func netmaskString(mask uint32) string {
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], mask)
	return net.IP(b[:]).String()
}

// parseNetmask is the inverse of netmaskString.
func parseNetmask(s string) (uint32, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		return 0, false
	}
	b := a.As4()
	return binary.NativeEndian.Uint32(b[:]), true
}
