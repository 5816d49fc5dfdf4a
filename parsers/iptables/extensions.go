package iptables

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
)

// The match modules ("-m NAME") and the targets ("-j NAME") iptables
// knows: the extensions iptables ships (its extensions/ directory:
// libxt_NAME, libipt_NAME, libip6t_NAME; matches are in lower case,
// targets in upper case) and the built-in verdicts. iptables-restore
// refuses a match it has no extension for ("Couldn't load match"); a
// "-j NAME" it has no extension for is a jump to the chain NAME, which
// takes no options.
var (
	matchModules = setOf(
		"addrtype", "ah", "bpf", "cgroup", "cluster", "comment", "connbytes", "connlabel", "connlimit",
		"connmark", "conntrack", "cpu", "dccp", "devgroup", "dscp", "dst", "ecn", "esp", "eui64", "frag",
		"hashlimit", "hbh", "helper", "hl", "icmp", "icmp6", "ipcomp", "iprange", "ipv6header", "ipvs",
		"l2tp", "length", "limit", "mac", "mark", "mh", "multiport", "nfacct", "osf", "owner", "physdev",
		"pkttype", "policy", "quota", "rateest", "realm", "recent", "rpfilter", "rt", "sctp", "set",
		"socket", "srh", "state", "statistic", "string", "tcp", "tcpmss", "time", "tos", "ttl", "u32",
		"udp", "udplite",
	)
	targetNames = setOf(
		"ACCEPT", "DROP", "RETURN", "QUEUE", // the built-in verdicts
		"AUDIT", "CHECKSUM", "CLASSIFY", "CLUSTERIP", "CONNMARK", "CONNSECMARK", "CT", "DNAT", "DNPT",
		"DSCP", "ECN", "HL", "HMARK", "IDLETIMER", "LED", "LOG", "MARK", "MASQUERADE", "NETMAP", "NFLOG",
		"NFQUEUE", "NOTRACK", "RATEEST", "REDIRECT", "REJECT", "SECMARK", "SET", "SNAT", "SNPT", "SYNPROXY",
		"TCPMSS", "TCPOPTSTRIP", "TEE", "TOS", "TPROXY", "TRACE", "TTL", "ULOG",
	)
	// protocolNames are the names "-p" takes besides numbers: iptables' own
	// list and the usual names of /etc/protocols.
	protocolNames = setOf(
		"all", "tcp", "udp", "udplite", "icmp", "icmpv6", "ipv6-icmp", "esp", "ah", "sctp", "mh", "ipv6-mh",
		"dccp", "gre", "igmp", "ipip", "ipencap", "ipv6", "ipv6-frag", "ipv6-route", "ipv6-nonxt", "ipv6-opts",
		"hopopt", "ospf", "pim", "vrrp", "l2tp", "ipcomp", "egp", "rsvp", "etherip", "encap", "mptcp", "ip",
	)
	ctStates    = setOf("INVALID", "ESTABLISHED", "NEW", "RELATED", "UNTRACKED", "SNAT", "DNAT")
	addrTypes   = setOf("UNSPEC", "UNICAST", "LOCAL", "BROADCAST", "ANYCAST", "MULTICAST", "BLACKHOLE", "UNREACHABLE", "PROHIBIT", "THROW", "NAT", "XRESOLVE")
	rejectTypes = setOf(
		"icmp-net-unreachable", "net-unreach", "icmp-host-unreachable", "host-unreach",
		"icmp-proto-unreachable", "proto-unreach", "icmp-port-unreachable", "port-unreach",
		"icmp-net-prohibited", "net-prohib", "icmp-host-prohibited", "host-prohib",
		"icmp-admin-prohibited", "admin-prohib", "tcp-reset", "tcp-rst",
		"icmp6-no-route", "no-route", "icmp6-adm-prohibited", "adm-prohibited",
		"icmp6-addr-unreachable", "addr-unreach", "icmp6-port-unreachable",
		"icmp6-policy-fail", "policy-fail", "icmp6-reject-route", "reject-route",
	)
)

// generalOptions are the options of every rule, of no extension: they
// may follow a jump to a chain.
var generalOptions = setOf(
	"-m", "--match", "-j", "--jump", "-g", "--goto", "-p", "--protocol", "-s", "--source", "--src",
	"-d", "--destination", "--dst", "-i", "--in-interface", "-o", "--out-interface", "-f", "--fragment",
)

// isShortOption reports whether name is one of the one-letter options
// of a rule (iptables' extensions have long options only): -s -d -p -i
// -o -f -j -g -m -c -4 -6.
func isShortOption(name string) bool {
	if len(name) != 2 || name[0] != '-' {
		return false
	}
	switch name[1] {
	case 's', 'd', 'p', 'i', 'o', 'f', 'j', 'g', 'm', 'c', '4', '6':
		return true
	}
	return false
}

// setOf returns the set of names.
func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// checkExtensions returns why iptables-restore would refuse the rule's
// options, match modules, target or the values of their options, or "":
// a one-letter option a rule does not take, a long option that no module
// or target loaded before it takes (see [optionState.checkLongOption]), a
// module it has no extension for, a target that is none followed by
// options, a value outside what the option takes.
//
// Rules of the same shape (see [shapes]) take the same options: once one
// is found right, the others' values only are checked.
func checkExtensions(raw string, args []arg, sh *shapes) string {
	if sh == nil {
		return checkOptions(raw, args, false)
	}
	key := sh.key(raw, args)
	if _, ok := sh.right[string(key)]; ok {
		return checkOptions(raw, args, true)
	}
	msg := checkOptions(raw, args, false)
	if msg == "" && len(sh.right) < maxShapes {
		sh.right[string(key)] = struct{}{}
	}
	return msg
}

// maxShapes bounds the shapes a parse remembers: kube-proxy's rules have
// a few dozen.
const maxShapes = 4096

// shapes are the shapes of the rules of a dump whose options
// checkOptions found right. The shape of a rule is what checkOptions
// reads of it besides the values it checks one by one: the names of its
// options, in order, and the values of "-m", "-p" and "-j" (of a "-j"
// to a chain, only that it is none of iptables' targets: no target's
// name holds a '-', most chains' names do).
type shapes struct {
	right map[string]struct{}
	buf   []byte
}

func newShapes() *shapes { return &shapes{right: map[string]struct{}{}} }

// key returns the shape of a rule, written unambiguously (every string
// after its length); it is valid until the next call.
func (sh *shapes) key(raw string, args []arg) []byte {
	b := sh.buf[:0]
	for _, a := range args {
		name := raw[a.nameOff : int(a.nameOff)+int(a.nameLen)]
		b = append(b, byte(len(name)))
		b = append(b, name...)
		var val string
		switch {
		case name == "-m" || name == "-p" || name == "--match" || name == "--protocol":
			val = raw[a.valOff : int(a.valOff)+int(a.valLen)]
		case name == "-j" || name == "-g" || name == "--jump" || name == "--goto":
			val = raw[a.valOff : int(a.valOff)+int(a.valLen)]
			if strings.IndexByte(val, '-') >= 0 {
				val = "-" // a chain
			}
		default:
			continue
		}
		b = binary.AppendUvarint(b, uint64(len(val)))
		b = append(b, val...)
	}
	sh.buf = b
	return b
}

// checkOptions is checkExtensions; with valuesOnly, of a rule of a shape
// found right, it checks only the values that are not of its shape.
func checkOptions(raw string, args []arg, valuesOnly bool) string {
	statistic := false
	var opts optionState
	for i, a := range args {
		name := raw[a.nameOff : int(a.nameOff)+int(a.nameLen)]
		val := raw[a.valOff : int(a.valOff)+int(a.valLen)]
		if valuesOnly {
			switch name {
			case "-m", "--match":
				statistic = statistic || val == "statistic"
				continue
			case "-j", "--jump", "-g", "--goto", "-p", "--protocol":
				continue
			}
		} else if len(name) > 2 && name[1] != '-' {
			// getopt reads "-mcomment" as "-m comment": iptables-save
			// never prints it so.
			if mod := name[2:]; name[1] == 'm' && !matchModules[mod] {
				return fmt.Sprintf("-m: unknown match module %q, which iptables-restore refuses", clip(mod))
			}
			return fmt.Sprintf("option %q is a short option glued to its value, which this reader does not take (write %s %s)", clip(name), name[:2], clip(name[2:]))
		}
		if !valuesOnly && len(name) == 2 && !isShortOption(name) {
			return fmt.Sprintf("unknown option %q, which iptables-restore refuses", name)
		}
		if !valuesOnly && len(name) > 2 {
			if msg := opts.checkLongOption(name); msg != "" {
				return msg
			}
		}
		var msg string
		switch name {
		case "-m", "--match":
			statistic = statistic || val == "statistic"
			if !matchModules[val] {
				msg = fmt.Sprintf("unknown match module %q", clip(val))
			}
			opts.load(val)
		case "-j", "--jump", "-g", "--goto":
			known := targetNames[val]
			if known {
				opts.load(val)
			}
			if known || i+1 == len(args) {
				break
			}
			if next := raw[args[i+1].nameOff : int(args[i+1].nameOff)+int(args[i+1].nameLen)]; !generalOptions[next] {
				msg = fmt.Sprintf("%q is not a target iptables knows, and a jump to a chain takes no option (%s)", clip(val), clip(next))
			}
		case "-p", "--protocol":
			opts.protocol = strings.ToLower(val)
			if !protocolNames[opts.protocol] && !isNumberUpTo(val, 255) {
				msg = fmt.Sprintf("unknown protocol %q", clip(val))
			}
		case "--match-set", "--add-set", "--del-set", "--map-set":
			msg = checkSetFlags(val)
		case "--mode":
			if statistic && val != "random" && val != "nth" {
				msg = fmt.Sprintf("mode %q is neither random nor nth", clip(val))
			}
		case "--to-destination", "--to-source":
			msg = checkNATRange(val)
		case "--to-ports":
			msg = checkPortSpan(val, "-")
		case "--mark", "--set-xmark", "--set-mark", "--xor-mark", "--and-mark", "--or-mark", "--ctmark":
			msg = checkMark(val)
		case "--ctstate", "--state":
			msg = checkWords(val, ctStates, "state")
		case "--src-type", "--dst-type":
			msg = checkWords(val, addrTypes, "address type")
		case "--reject-with":
			if !rejectTypes[strings.ToLower(val)] {
				msg = fmt.Sprintf("unknown reject type %q", clip(val))
			}
		}
		if msg != "" {
			return fmt.Sprintf("%s: %s, which iptables-restore refuses", name, msg)
		}
	}
	return ""
}

// checkControl returns why iptables-restore would refuse a control
// character in an option's name or value (a free text, such as a
// comment, may hold one), or "".
func checkControl(raw string, args []arg) string {
	for _, a := range args {
		name := raw[a.nameOff : int(a.nameOff)+int(a.nameLen)]
		val := raw[a.valOff : int(a.valOff)+int(a.valLen)]
		if c := controlChar(name); c >= 0 {
			return fmt.Sprintf("option %q holds the control character %#02x, which iptables-restore refuses", clip(name), c)
		}
		if c := controlChar(val); c >= 0 && !singleValue(name) {
			return fmt.Sprintf("%s: value %q holds the control character %#02x, which iptables-restore refuses", name, clip(val), c)
		}
	}
	return ""
}

// controlChar returns the first control character of s, or -1.
func controlChar(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return int(s[i])
		}
	}
	return -1
}

// checkSetFlags checks the value of "--match-set NAME FLAGS": FLAGS is
// from one to six of src and dst, separated by commas.
func checkSetFlags(val string) string {
	set, flags, _ := strings.Cut(val, " ")
	flags = strings.TrimSpace(flags)
	if set == "" || flags == "" {
		return fmt.Sprintf("%q is not a set name followed by src/dst flags", clip(val))
	}
	n := 0
	for f := range strings.SplitSeq(flags, ",") {
		n++
		if f != "src" && f != "dst" {
			return fmt.Sprintf("flag %q of set %s is neither src nor dst", clip(f), clip(set))
		}
	}
	if n > 6 {
		return fmt.Sprintf("set %s has %d flags, more than 6", clip(set), n)
	}
	return ""
}

// checkNATRange checks a DNAT or SNAT range: [ADDR[-ADDR]][:PORT[-PORT]],
// an IPv6 address in brackets when a port follows.
func checkNATRange(val string) string {
	if isAddrPort4(val) {
		return "" // as kube-proxy writes it
	}
	return checkNATRangeOf(val)
}

// isAddrPort4 reports whether val is an IPv4 address and a port, the
// range checkNATRange sees most.
func isAddrPort4(val string) bool {
	addr, port, ok := strings.Cut(val, ":")
	return ok && isDottedQuad(addr) && isNumberUpTo(port, 65535)
}

// checkNATRangeOf is checkNATRange of any range.
func checkNATRangeOf(val string) string {
	v := strings.Trim(val, `"`)
	if v == "" {
		return "empty address"
	}
	addrs, ports := v, ""
	switch {
	case strings.HasPrefix(v, "["):
		end := strings.IndexByte(v, ']')
		if end < 0 {
			return fmt.Sprintf("bad address %q", clip(val))
		}
		addrs, ports = v[1:end], v[end+1:]
		if ports != "" && ports[0] != ':' {
			return fmt.Sprintf("bad address %q", clip(val))
		}
	case strings.Count(v, ":") == 1:
		i := strings.IndexByte(v, ':')
		addrs, ports = v[:i], v[i:]
	}
	if addrs != "" {
		for s := range strings.SplitSeq(addrs, "-") {
			if _, err := netip.ParseAddr(s); err != nil {
				return fmt.Sprintf("bad address %q", clip(s))
			}
		}
	}
	if ports != "" {
		return checkPortSpan(ports[1:], "-")
	}
	return ""
}

// checkPortSpan checks a port or a range of ports "LO" sep "HI".
func checkPortSpan(v, sep string) string {
	ports := []string{v}
	if lo, hi, isRange := strings.Cut(v, sep); isRange {
		ports = []string{lo, hi}
	}
	for _, p := range ports {
		if !isNumberUpTo(p, 65535) {
			return fmt.Sprintf("port %q is not a number from 0 to 65535", clip(p))
		}
	}
	return ""
}

// isDottedQuad reports whether s is an IPv4 address written as four
// decimal numbers from 0 to 255 without leading zeros, which
// netip.ParseAddr takes (it takes no other IPv4 form).
func isDottedQuad(s string) bool {
	for f := range 4 {
		n, i := 0, 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' && i < 3 {
			n = n*10 + int(s[i]-'0')
			i++
		}
		if i == 0 || n > 255 || i > 1 && s[0] == '0' {
			return false
		}
		s = s[i:]
		if f < 3 {
			if s == "" || s[0] != '.' {
				return false
			}
			s = s[1:]
		}
	}
	return s == ""
}

// isNumberUpTo reports whether s is a decimal number from 0 to max.
func isNumberUpTo(s string, max int) bool {
	if s == "" || len(s) > 6 {
		return false
	}
	n := 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int(c-'0')
	}
	return n <= max
}

// checkMark checks a mark "VALUE[/MASK]", each a 32-bit number written
// as C reads it (0x for hexadecimal, a leading 0 for octal).
func checkMark(val string) string {
	v, mask, hasMask := strings.Cut(val, "/")
	parts := []string{v}
	if hasMask {
		parts = append(parts, mask)
	}
	for _, s := range parts {
		if !isCNumber32(s) {
			return fmt.Sprintf("%q is not a 32-bit number", clip(s))
		}
	}
	return ""
}

// isCNumber32 reports whether s is a number of at most 32 bits written
// in decimal, in hexadecimal after 0x, or in octal after 0.
func isCNumber32(s string) bool {
	base, digits := uint64(10), s
	switch {
	case len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X"):
		base, digits = 16, s[2:]
	case len(s) > 1 && s[0] == '0':
		base, digits = 8, s[1:]
	}
	if digits == "" {
		return false
	}
	var n uint64
	for _, c := range []byte(strings.ToLower(digits)) {
		var d uint64
		switch {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		default:
			return false
		}
		if d >= base {
			return false
		}
		if n = n*base + d; n > 1<<32-1 {
			return false
		}
	}
	return true
}

// checkWords checks a comma-separated list of words taken from known,
// in any case.
func checkWords(val string, known map[string]bool, what string) string {
	for w := range strings.SplitSeq(val, ",") {
		if !known[strings.ToUpper(w)] {
			return fmt.Sprintf("unknown %s %q", what, clip(w))
		}
	}
	return ""
}
