package proxier

import (
	"math"
	"net/netip"
	"strconv"
	"strings"

	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// This file turns a rule written in any order iptables-restore accepts (the
// form kube-proxy writes: "-m comment --comment C -m tcp -p tcp -d IP
// --dport N -j X") into the text iptables-save prints for it, so that rules
// from kube-proxy's restore input, from the expected data plane and from a
// captured dump compare as strings. The rules it follows are those of
// iptables 1.8.9 (nf_tables and legacy print the same text): the address
// and interface options first, in the order -s -d -i -o -p -f; then the
// matches in the order they were loaded, each printing its options the way
// its extension's save function does; then the target and its options.
// What iptables refuses and the parser reads all the same (options no
// match owns, values with spaces) is printed so that the canonical form
// reads back as the same rule: such options before the others, such
// values quoted.

// matchOptions lists, per match extension, the options it owns: an option
// is given to the last loaded match that owns it, as iptables' option
// parser does.
var matchOptions = map[string][]string{
	"tcp":       {"--sport", "--source-port", "--dport", "--destination-port", "--tcp-flags", "--syn", "--tcp-option"},
	"udp":       {"--sport", "--source-port", "--dport", "--destination-port"},
	"sctp":      {"--sport", "--source-port", "--dport", "--destination-port", "--chunk-types"},
	"comment":   {"--comment"},
	"conntrack": {"--ctstate", "--ctproto", "--ctorigsrc", "--ctorigdst", "--ctreplsrc", "--ctrepldst", "--ctorigsrcport", "--ctorigdstport", "--ctreplsrcport", "--ctrepldstport", "--ctstatus", "--ctexpire", "--ctdir"},
	"state":     {"--state"},
	"mark":      {"--mark"},
	"addrtype":  {"--src-type", "--dst-type", "--limit-iface-in", "--limit-iface-out"},
	"statistic": {"--mode", "--probability", "--every", "--packet"},
	"recent":    {"--name", "--set", "--rcheck", "--update", "--remove", "--seconds", "--reap", "--hitcount", "--rttl", "--mask", "--rsource", "--rdest"},
	"nfacct":    {"--nfacct-name"},
	"physdev":   {"--physdev-in", "--physdev-out", "--physdev-is-in", "--physdev-is-out", "--physdev-is-bridged"},
	"set":       {"--match-set", "--return-nomatch", "--update-counters", "--update-subcounters", "--packets-eq", "--packets-lt", "--packets-gt", "--bytes-eq", "--bytes-lt", "--bytes-gt"},
	"multiport": {"--sports", "--source-ports", "--dports", "--destination-ports", "--ports"},
	"ipvs":      {"--ipvs", "--vproto", "--vaddr", "--vport", "--vdir", "--vmethod", "--vportctl"},
}

func ownsOption(match, opt string) bool {
	for _, o := range matchOptions[match] {
		if o == opt {
			return true
		}
	}
	return false
}

// optionAliases maps long spellings to the ones iptables-save prints.
var optionAliases = map[string]string{
	"--source-port": "--sport", "--destination-port": "--dport",
	"--source-ports": "--sports", "--destination-ports": "--dports",
	"--source": "-s", "--src": "-s", "--destination": "-d", "--dst": "-d",
	"--in-interface": "-i", "--out-interface": "-o", "--protocol": "-p",
	"--fragment": "-f", "--match": "-m", "--jump": "-j", "--goto": "-g",
}

// Owners of a rule's options while it is taken apart: the address and
// interface part, the target, nobody (ignored), an unknown option; a match
// is identified by its index.
const (
	ownIP     = -1
	ownTarget = -2
	ownSkip   = -3
	ownExtra  = -4
)

// A canonicalizer formats rules as iptables-save prints them, reusing its
// buffers from rule to rule (it is not safe for concurrent use).
type canonicalizer struct {
	args    []iptables.Arg
	owner   []int
	used    []bool
	matches []string
	probs   map[string]string
}

// CanonicalRule returns the rule "-A chain args..." as iptables-save prints
// it for a dump of the given family. args may be in any order that
// iptables-restore accepts; values that cannot be interpreted are kept as
// written.
func CanonicalRule(family iptables.Family, chain string, args []iptables.Arg) string {
	var c canonicalizer
	return string(c.appendRule(nil, family, chain, args))
}

// appendRule appends the canonical form of one rule to dst.
func (c *canonicalizer) appendRule(dst []byte, fam iptables.Family, chain string, in []iptables.Arg) []byte {
	c.args = append(c.args[:0], in...)
	c.owner = c.owner[:0]
	c.used = c.used[:0]
	c.matches = c.matches[:0]
	target, isGoto := "", false
	proto := -1
	inTarget := false
	for i := range c.args {
		a := &c.args[i]
		if n, ok := optionAliases[a.Name]; ok {
			a.Name = n
		}
		c.used = append(c.used, false)
		own := ownExtra
		switch {
		case inTarget:
			own = ownTarget
		case a.Name == "-s" || a.Name == "-d" || a.Name == "-i" || a.Name == "-o" || a.Name == "-f":
			own = ownIP
		case a.Name == "-p":
			own, proto = ownIP, i
		case a.Name == "-m":
			c.matches = append(c.matches, a.Value)
			own = ownSkip
		case a.Name == "-j" || a.Name == "-g":
			target, isGoto, inTarget, own = a.Value, a.Name == "-g", true, ownSkip
		case a.Name == "-c" || a.Name == "--set-counters":
			own = ownSkip
		default:
			own = c.matchFor(a.Name, proto)
		}
		c.owner = append(c.owner, own)
	}
	dst = append(dst, "-A "...)
	dst = append(dst, chain...)
	// Options no match owns come first: after a match, the parser would
	// give them to it (or load a match of the protocol for them), and the
	// canonical form would not read back as the same rule. (iptables
	// refuses such options: iptables-save never prints one.)
	dst = c.appendRest(dst, ownExtra)
	for _, name := range [...]string{"-s", "-d", "-i", "-o", "-p", "-f"} {
		i := c.find(ownIP, name)
		if i < 0 {
			continue
		}
		a := c.args[i]
		dst = appendNeg(dst, a.Neg)
		dst = append(dst, ' ')
		dst = append(dst, name...)
		switch name {
		case "-f":
			continue
		case "-s", "-d":
			dst = append(dst, ' ')
			dst = appendAddrValue(dst, a.Value)
		case "-p":
			dst = append(dst, ' ')
			dst = appendWord(dst, protoName(a.Value))
		default:
			dst = append(dst, ' ')
			dst = appendWord(dst, a.Value)
		}
	}
	for k, name := range c.matches {
		dst = append(dst, " -m "...)
		dst = appendWord(dst, name)
		dst = c.appendMatch(dst, k, name, fam)
		dst = c.appendRest(dst, k)
	}
	if target != "" {
		if isGoto {
			dst = append(dst, " -g "...)
		} else {
			dst = append(dst, " -j "...)
		}
		dst = appendWord(dst, target)
		dst = c.appendTarget(dst, target, fam)
		dst = c.appendRest(dst, ownTarget)
	}
	return dst
}

// matchFor returns the owner of a match option: the last loaded match
// owning it; a port option of tcp, udp or sctp with no such match loaded
// loads it implicitly (iptables does so for "-p tcp --dport 80"); else the
// last match when its options are not modelled.
func (c *canonicalizer) matchFor(opt string, proto int) int {
	for k := len(c.matches) - 1; k >= 0; k-- {
		if ownsOption(c.matches[k], opt) {
			return k
		}
	}
	if proto >= 0 && !c.args[proto].Neg {
		if p := protoName(c.args[proto].Value); (p == "tcp" || p == "udp" || p == "sctp") && ownsOption(p, opt) {
			c.matches = append(c.matches, p)
			return len(c.matches) - 1
		}
	}
	if n := len(c.matches); n > 0 {
		if _, known := matchOptions[c.matches[n-1]]; !known {
			return n - 1
		}
	}
	return ownExtra
}

// find returns the first unused option of owner called name, marking it
// used, or -1.
func (c *canonicalizer) find(owner int, names ...string) int {
	for i := range c.args {
		if c.used[i] || c.owner[i] != owner {
			continue
		}
		for _, n := range names {
			if c.args[i].Name == n {
				c.used[i] = true
				return i
			}
		}
	}
	return -1
}

// appendRest prints the unused options of owner in the order given, for
// extensions whose save format is not modelled.
func (c *canonicalizer) appendRest(dst []byte, owner int) []byte {
	for i := range c.args {
		if c.used[i] || c.owner[i] != owner {
			continue
		}
		c.used[i] = true
		o := c.args[i]
		dst = appendNeg(dst, o.Neg)
		dst = append(dst, ' ')
		dst = append(dst, o.Name...)
		if o.Value != "" {
			if strings.ContainsAny(o.Value, " \t\"'\\") {
				dst = saveString(dst, o.Value)
			} else {
				dst = append(dst, ' ')
				dst = appendWord(dst, o.Value)
			}
		}
	}
	return dst
}

// protoNumber returns the number of a protocol name ("6" for "tcp").
func protoNumber(p string) string {
	switch strings.ToLower(p) {
	case "tcp":
		return "6"
	case "udp":
		return "17"
	case "sctp":
		return "132"
	}
	return p
}

func protoName(p string) string {
	switch strings.ToLower(p) {
	case "6", "tcp":
		return "tcp"
	case "17", "udp":
		return "udp"
	case "132", "sctp":
		return "sctp"
	case "1", "icmp":
		return "icmp"
	case "58", "icmpv6", "ipv6-icmp":
		return "ipv6-icmp"
	}
	return strings.ToLower(p)
}

func appendNeg(dst []byte, neg bool) []byte {
	if neg {
		dst = append(dst, " !"...)
	}
	return dst
}

// appendAddrValue prints an -s/-d value as iptables-save does: a host
// address gets its prefix length ("10.0.0.1/32"), a prefix is masked
// ("10.1.2.3/8" is "10.0.0.0/8"), a dotted netmask becomes a length; a
// value that is none of these is kept.
func appendAddrValue(dst []byte, v string) []byte {
	if !strings.Contains(v, "/") {
		if a, err := netip.ParseAddr(v); err == nil {
			a = a.Unmap()
			dst = a.AppendTo(dst)
			dst = append(dst, '/')
			return strconv.AppendInt(dst, int64(a.BitLen()), 10)
		}
		return appendWord(dst, v)
	}
	if p, err := netip.ParsePrefix(v); err == nil {
		return p.Masked().AppendTo(dst)
	}
	return appendWord(dst, canonicalAddr(v))
}

// canonicalAddr handles the dotted netmask form "10.0.0.0/255.255.0.0".
func canonicalAddr(v string) string {
	if ip, mask, ok := strings.Cut(v, "/"); ok {
		a, err1 := netip.ParseAddr(ip)
		m, err2 := netip.ParseAddr(mask)
		if err1 == nil && err2 == nil && a.Is4() && m.Is4() {
			if bits, ok := maskBits(m.As4()); ok {
				return netip.PrefixFrom(a, bits).Masked().String()
			}
		}
	}
	return v
}

func maskBits(m [4]byte) (int, bool) {
	v := uint32(m[0])<<24 | uint32(m[1])<<16 | uint32(m[2])<<8 | uint32(m[3])
	bits := 0
	for v&0x80000000 != 0 {
		bits++
		v <<= 1
	}
	return bits, v == 0
}

// saveString prints a value as libxtables' xtables_save_string does: bare
// when it is made of letters, digits, "-" and "_" only, else in double
// quotes with ", \ and ' escaped.
func saveString(dst []byte, v string) []byte {
	dst = append(dst, ' ')
	bare := v != ""
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			bare = false
			break
		}
	}
	if bare {
		return append(dst, v...)
	}
	return appendQuoted(dst, v)
}

// appendQuoted appends v in double quotes with ", \ and ' escaped.
func appendQuoted(dst []byte, v string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(v); i++ {
		if c := v[i]; c == '"' || c == '\\' || c == '\'' {
			dst = append(dst, '\\')
		}
		dst = append(dst, v[i])
	}
	return append(dst, '"')
}

// appendWord appends a value as one word of the rule: as it is, or, when
// the parser would read it otherwise (it holds a space, a tab, a quote or
// a backslash, is "!" or looks like an option), quoted as saveString
// quotes. iptables-save never prints such values (iptables refuses most
// of them), but the canonical form of any dump the parser reads must read
// back as the same rule.
func appendWord(dst []byte, v string) []byte {
	if strings.ContainsAny(v, " \t\"\\") || v == "!" || looksLikeOption(v) {
		return appendQuoted(dst, v)
	}
	return append(dst, v...)
}

// looksLikeOption reports whether the parser reads v, unquoted, as an
// option name ("-x", "--xyz").
func looksLikeOption(v string) bool {
	if len(v) < 2 || v[0] != '-' {
		return false
	}
	c := v[1]
	if c == '-' && len(v) > 2 {
		c = v[2]
	}
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// appendOpt prints option i with value (which may differ from the
// option's own value once normalised).
func (c *canonicalizer) appendOpt(dst []byte, i int, value string) []byte {
	o := c.args[i]
	dst = appendNeg(dst, o.Neg)
	dst = append(dst, ' ')
	dst = append(dst, o.Name...)
	if value != "" {
		dst = append(dst, ' ')
		dst = appendWord(dst, value)
	}
	return dst
}

// ordered prints the options of owner called names, in that order.
func (c *canonicalizer) ordered(dst []byte, owner int, names ...string) []byte {
	for _, n := range names {
		if i := c.find(owner, n); i >= 0 {
			dst = c.appendOpt(dst, i, c.args[i].Value)
		}
	}
	return dst
}

// appendMatch prints the options of match k as its extension's save
// function does (libxt_<name>.c of iptables 1.8.9); options it does not
// model are left for appendRest.
func (c *canonicalizer) appendMatch(dst []byte, k int, name string, fam iptables.Family) []byte {
	switch name {
	case "comment":
		if i := c.find(k, "--comment"); i >= 0 {
			dst = append(dst, " --comment"...)
			dst = saveString(dst, c.args[i].Value)
		}
	case "tcp":
		dst = c.ordered(dst, k, "--sport", "--dport", "--tcp-option", "--tcp-flags", "--syn")
	case "udp":
		dst = c.ordered(dst, k, "--sport", "--dport")
	case "sctp":
		dst = c.ordered(dst, k, "--sport", "--dport", "--chunk-types")
	case "conntrack":
		if i := c.find(k, "--ctstate"); i >= 0 {
			dst = c.appendOpt(dst, i, ctStates(c.args[i].Value))
		}
		dst = c.ordered(dst, k, "--ctproto", "--ctorigsrc", "--ctorigdst", "--ctreplsrc", "--ctrepldst",
			"--ctorigsrcport", "--ctorigdstport", "--ctreplsrcport", "--ctrepldstport", "--ctstatus", "--ctexpire", "--ctdir")
	case "state":
		if i := c.find(k, "--state"); i >= 0 {
			dst = c.appendOpt(dst, i, ctStates(c.args[i].Value))
		}
	case "mark":
		if i := c.find(k, "--mark"); i >= 0 {
			dst = c.appendOpt(dst, i, markValue(c.args[i].Value))
		}
	case "addrtype":
		for _, n := range []string{"--src-type", "--dst-type"} {
			if i := c.find(k, n); i >= 0 {
				dst = c.appendOpt(dst, i, strings.ToUpper(c.args[i].Value))
			}
		}
		dst = c.ordered(dst, k, "--limit-iface-in", "--limit-iface-out")
	case "statistic":
		if i := c.find(k, "--mode"); i >= 0 {
			dst = c.appendOpt(dst, i, c.args[i].Value)
			if c.args[i].Value == "random" {
				if j := c.find(k, "--probability"); j >= 0 {
					dst = c.appendOpt(dst, j, c.probability(c.args[j].Value))
				}
			} else {
				dst = c.ordered(dst, k, "--every", "--packet")
			}
		}
	case "recent":
		dst = c.appendRecent(dst, k, fam)
	case "set":
		// --match-set takes two words, the set and its flags, printed
		// unquoted.
		if i := c.find(k, "--match-set"); i >= 0 {
			dst = appendNeg(dst, c.args[i].Neg)
			dst = append(dst, " --match-set "...)
			dst = append(dst, strings.Join(strings.Fields(c.args[i].Value), " ")...)
		}
	case "ipvs":
		// libxt_ipvs prints --vproto as a number, --vaddr without a
		// full-length mask.
		dst = c.ordered(dst, k, "--ipvs")
		if i := c.find(k, "--vproto"); i >= 0 {
			dst = c.appendOpt(dst, i, protoNumber(c.args[i].Value))
		}
		if i := c.find(k, "--vaddr"); i >= 0 {
			v := c.args[i].Value
			if p, err := netip.ParsePrefix(v); err == nil && p.Bits() == p.Addr().BitLen() {
				v = p.Addr().String()
			}
			dst = c.appendOpt(dst, i, v)
		}
		dst = c.ordered(dst, k, "--vport", "--vdir", "--vmethod", "--vportctl")
	case "nfacct":
		if i := c.find(k, "--nfacct-name"); i >= 0 {
			dst = appendNeg(dst, c.args[i].Neg)
			dst = append(dst, " --nfacct-name "...)
			dst = saveString(dst, c.args[i].Value)
		}
	}
	return dst
}

// probability returns kernelProbability(v), remembering the values seen.
func (c *canonicalizer) probability(v string) string {
	if p, ok := c.probs[v]; ok {
		return p
	}
	if c.probs == nil {
		c.probs = map[string]string{}
	}
	p := kernelProbability(v)
	c.probs[v] = p
	return p
}

// ctStates orders conntrack states as libxt_conntrack prints them.
func ctStates(v string) string {
	order := []string{"INVALID", "NEW", "RELATED", "ESTABLISHED", "UNTRACKED", "SNAT", "DNAT"}
	have := map[string]bool{}
	for _, s := range strings.Split(v, ",") {
		have[strings.ToUpper(strings.TrimSpace(s))] = true
	}
	var out []string
	for _, s := range order {
		if have[s] {
			out = append(out, s)
			delete(have, s)
		}
	}
	if len(have) > 0 {
		return v // something unknown: keep it as written
	}
	return strings.Join(out, ",")
}

// parseMark reads "0x4000", "16384" or "0x4000/0x4000".
func parseMark(v string) (value, mask uint32, ok bool) {
	vs, ms, hasMask := strings.Cut(v, "/")
	val, err := strconv.ParseUint(vs, 0, 32)
	if err != nil {
		return 0, 0, false
	}
	m := uint64(math.MaxUint32)
	if hasMask {
		if m, err = strconv.ParseUint(ms, 0, 32); err != nil {
			return 0, 0, false
		}
	}
	return uint32(val), uint32(m), true
}

func hex(v uint32) string { return "0x" + strconv.FormatUint(uint64(v), 16) }

// markValue prints a mark match value as libxt_mark does: "0x4000/0x4000",
// or "0x4000" when the mask is all ones.
func markValue(v string) string {
	val, mask, ok := parseMark(v)
	if !ok {
		return v
	}
	if mask == math.MaxUint32 {
		return hex(val)
	}
	return hex(val) + "/" + hex(mask)
}

// kernelProbability returns the probability the statistic match prints:
// the kernel keeps round(p * 2^31) and iptables-save prints that over 2^31
// with 11 decimals (libxt_statistic.c).
func kernelProbability(v string) string {
	p, err := strconv.ParseFloat(v, 64)
	if err != nil || p < 0 || p > 1 {
		return v
	}
	stored := uint32(math.Round(p * 0x80000000))
	return strconv.FormatFloat(float64(stored)/0x80000000, 'f', 11, 64)
}

// appendRecent prints the recent match as libxt_recent's save function.
func (c *canonicalizer) appendRecent(dst []byte, k int, fam iptables.Family) []byte {
	neg := false
	var flags [4]string
	nflags := 0
	for _, n := range []string{"--set", "--rcheck", "--update", "--remove"} {
		if i := c.find(k, n); i >= 0 {
			neg = neg || c.args[i].Neg
			flags[nflags] = n
			nflags++
		}
	}
	if neg {
		dst = append(dst, " !"...)
	}
	for _, f := range flags[:nflags] {
		dst = append(dst, ' ')
		dst = append(dst, f...)
	}
	if i := c.find(k, "--seconds"); i >= 0 && c.args[i].Value != "0" {
		dst = append(dst, " --seconds "...)
		dst = appendWord(dst, c.args[i].Value)
	}
	if c.find(k, "--reap") >= 0 {
		dst = append(dst, " --reap"...)
	}
	if i := c.find(k, "--hitcount"); i >= 0 && c.args[i].Value != "0" {
		dst = append(dst, " --hitcount "...)
		dst = appendWord(dst, c.args[i].Value)
	}
	if c.find(k, "--rttl") >= 0 {
		dst = append(dst, " --rttl"...)
	}
	name := "DEFAULT"
	if i := c.find(k, "--name"); i >= 0 {
		name = c.args[i].Value
	}
	dst = append(dst, " --name "...)
	dst = appendWord(dst, name)
	dst = append(dst, " --mask "...)
	if i := c.find(k, "--mask"); i >= 0 {
		if a, err := netip.ParseAddr(c.args[i].Value); err == nil {
			dst = a.AppendTo(dst)
		} else {
			dst = appendWord(dst, c.args[i].Value)
		}
	} else if fam == iptables.IPv6 {
		dst = append(dst, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"...)
	} else {
		dst = append(dst, "255.255.255.255"...)
	}
	rsource := c.find(k, "--rsource") >= 0
	if c.find(k, "--rdest") >= 0 && !rsource {
		return append(dst, " --rdest"...)
	}
	return append(dst, " --rsource"...)
}

// appendTarget prints a target's options as its extension's save function
// does (libxt_<NAME>.c).
func (c *canonicalizer) appendTarget(dst []byte, target string, fam iptables.Family) []byte {
	const own = ownTarget
	switch target {
	case "MARK":
		if i := c.find(own, "--set-xmark", "--set-mark", "--or-mark", "--and-mark", "--xor-mark"); i >= 0 {
			o := c.args[i]
			val, mask, ok := parseMark(o.Value)
			if !ok {
				return c.appendOpt(dst, i, o.Value)
			}
			switch o.Name {
			case "--set-mark", "--set-xmark":
				if !strings.Contains(o.Value, "/") {
					mask = math.MaxUint32
				}
			case "--or-mark":
				mask = val
			case "--and-mark":
				val, mask = 0, ^val
			case "--xor-mark":
				mask = 0
			}
			dst = append(dst, " --set-xmark 0x"...)
			dst = strconv.AppendUint(dst, uint64(val), 16)
			dst = append(dst, "/0x"...)
			dst = strconv.AppendUint(dst, uint64(mask), 16)
		}
	case "DNAT":
		dst = c.ordered(dst, own, "--to-destination", "--random", "--persistent")
	case "SNAT":
		dst = c.ordered(dst, own, "--to-source", "--random", "--random-fully", "--persistent")
	case "MASQUERADE":
		dst = c.ordered(dst, own, "--to-ports", "--random", "--random-fully")
	case "REJECT":
		with := "icmp-port-unreachable"
		if fam == iptables.IPv6 {
			with = "icmp6-port-unreachable"
		}
		if i := c.find(own, "--reject-with"); i >= 0 {
			with = rejectWith(c.args[i].Value, fam)
		}
		dst = append(dst, " --reject-with "...)
		dst = appendWord(dst, with)
	}
	return dst
}

// rejectWith maps the short aliases libxt_REJECT accepts to the names it
// prints.
func rejectWith(v string, fam iptables.Family) string {
	if fam == iptables.IPv6 {
		switch v {
		case "port-unreach", "icmp6-port-unreachable":
			return "icmp6-port-unreachable"
		case "tcp-reset":
			return "tcp-reset"
		}
		return v
	}
	switch v {
	case "port-unreach", "icmp-port-unreachable":
		return "icmp-port-unreachable"
	case "net-unreach":
		return "icmp-net-unreachable"
	case "host-unreach":
		return "icmp-host-unreachable"
	case "proto-unreach":
		return "icmp-proto-unreachable"
	case "net-prohib":
		return "icmp-net-prohibited"
	case "host-prohib":
		return "icmp-host-prohibited"
	case "admin-prohib":
		return "icmp-admin-prohibited"
	}
	return v
}

// Canonicalize returns d (iptables-save output or iptables-restore input,
// such as what kube-proxy writes) as iptables-save would print it after
// loading it into empty tables: tables in the order iptables-save lists
// them, each with its built-in chains, user chains sorted by name, rules
// grouped by chain in that order and spelled as iptables-save spells them.
// Counters are dropped; comment lines are not kept. The family of d decides
// address lengths and reject types ("" is read as IPv4).
func Canonicalize(d *iptables.Dump) (*iptables.Dump, error) {
	fam := d.Family
	if fam == iptables.FamilyUnknown {
		fam = iptables.IPv4
	}
	var tables []*ruleTable
	for _, t := range d.Tables {
		rt := newRuleTable(t.Name, fam)
		for _, c := range t.Chains {
			rc := rt.chain(c.Name)
			if c.Builtin() {
				rc.policy = c.Policy()
			}
			for _, r := range c.Rules {
				rt.appendLine(rc, r.Args())
			}
		}
		tables = append(tables, rt)
	}
	out, _, err := canonicalDump(d.Name, fam, "", false, tables...)
	if err != nil {
		return nil, err
	}
	out.Backend, out.Tool = d.Backend, d.Tool
	return out, nil
}

// tableOrder is the order iptables-save (nf_tables) prints tables in.
var tableOrder = []string{"mangle", "security", "raw", "filter", "nat"}
