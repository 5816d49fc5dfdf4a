package iptables

import (
	"fmt"
	"strconv"
	"strings"
)

// The forms iptables -L prints of the matches and targets of kube-proxy
// and common CNI plugins, read back into iptables-save's spelling. Each
// function reads the words of a listing's options column from where its
// match or target starts, and returns how many it took.

// conntrackKeys are the words of the conntrack match (-m conntrack) as
// iptables -L prints them: ctstate, ctorigdst... for --ctstate,
// --ctorigdst...
var conntrackKeys = map[string]bool{
	"ctstate": true, "ctproto": true, "ctorigsrc": true, "ctorigdst": true, "ctreplsrc": true, "ctrepldst": true,
	"ctorigsrcport": true, "ctorigdstport": true, "ctreplsrcport": true, "ctrepldstport": true,
	"ctstatus": true, "ctexpire": true, "ctdir": true,
}

// listingConntrack reads one conntrack match: its options (each a key of
// conntrackKeys and a value, "!" before it when negated), printed in
// iptables-save's order.
func listingConntrack(w []string) (string, int, string) {
	s := "-m conntrack"
	i := 0
	for i < len(w) {
		neg, k := "", i
		if w[k] == "!" {
			neg, k = "! ", k+1
		}
		if k >= len(w) || !conntrackKeys[w[k]] {
			break
		}
		if k+1 >= len(w) {
			return "", 0, "conntrack match " + w[k] + " without a value"
		}
		s += " " + neg + "--" + w[k] + " " + w[k+1]
		i = k + 2
	}
	return s, i, ""
}

// tcpFlagNames are TCP's flags in the order iptables-save names them.
var tcpFlagNames = []struct {
	name string
	bit  uint64
}{{"FIN", 0x01}, {"SYN", 0x02}, {"RST", 0x04}, {"PSH", 0x08}, {"ACK", 0x10}, {"URG", 0x20}}

// listingTCPFlags translates the value of the tcp match's "flags:" (mask
// and set flags, in hexadecimal with -n, else by name: "0x17/0x02",
// "!SYN,RST/SYN") into its --tcp-flags option.
func listingTCPFlags(v string) (string, bool) {
	neg := ""
	if x, ok := strings.CutPrefix(v, "!"); ok {
		v, neg = x, "! "
	}
	mask, set, ok := strings.Cut(v, "/")
	if !ok {
		return "", false
	}
	m, ok1 := tcpFlags(mask)
	c, ok2 := tcpFlags(set)
	if !ok1 || !ok2 {
		return "", false
	}
	return neg + "--tcp-flags " + tcpFlagList(m) + " " + tcpFlagList(c), true
}

// tcpFlags reads flags printed as a number or as names.
func tcpFlags(s string) (uint64, bool) {
	if n, err := strconv.ParseUint(s, 0, 8); err == nil {
		return n, n <= 0x3f
	}
	var n uint64
	for _, f := range strings.Split(s, ",") {
		switch f {
		case "ALL":
			n |= 0x3f
			continue
		case "NONE":
			continue
		}
		found := false
		for _, t := range tcpFlagNames {
			if t.name == f {
				n, found = n|t.bit, true
			}
		}
		if !found {
			return 0, false
		}
	}
	return n, true
}

// tcpFlagList names flags as iptables-save does.
func tcpFlagList(n uint64) string {
	var names []string
	for _, t := range tcpFlagNames {
		if n&t.bit != 0 {
			names = append(names, t.name)
		}
	}
	if len(names) == 0 {
		return "NONE"
	}
	return strings.Join(names, ",")
}

// icmpNames are the ICMP types and codes iptables -L (without -n) names,
// as iptables-save writes them.
var icmpNames = map[string]string{
	"any": "any", "echo-reply": "0", "pong": "0", "destination-unreachable": "3",
	"network-unreachable": "3/0", "host-unreachable": "3/1", "protocol-unreachable": "3/2", "port-unreachable": "3/3",
	"fragmentation-needed": "3/4", "source-route-failed": "3/5", "network-unknown": "3/6", "host-unknown": "3/7",
	"network-prohibited": "3/9", "host-prohibited": "3/10", "TOS-network-unreachable": "3/11", "TOS-host-unreachable": "3/12",
	"communication-prohibited": "3/13", "host-precedence-violation": "3/14", "precedence-cutoff": "3/15",
	"source-quench": "4", "redirect": "5", "network-redirect": "5/0", "host-redirect": "5/1",
	"TOS-network-redirect": "5/2", "TOS-host-redirect": "5/3", "echo-request": "8", "ping": "8",
	"router-advertisement": "9", "router-solicitation": "10", "time-exceeded": "11", "ttl-exceeded": "11",
	"ttl-zero-during-transit": "11/0", "ttl-zero-during-reassembly": "11/1", "parameter-problem": "12",
	"ip-header-bad": "12/0", "required-option-missing": "12/1", "timestamp-request": "13", "timestamp-reply": "14",
	"address-mask-request": "17", "address-mask-reply": "18",
}

// listingICMP reads the icmp match: "icmptype 8", "icmptype 3 code 4",
// "icmp !type 8" (with -n), "icmp echo-request", "icmp !any" (without).
func listingICMP(w []string) (string, int, string) {
	at := func(k int) string {
		if k < len(w) {
			return w[k]
		}
		return ""
	}
	bad := func() (string, int, string) {
		return "", 0, "icmp match " + clip(strings.Join(w[:min(4, len(w))], " "))
	}
	neg, typ, n := "", "", 0
	switch {
	case w[0] == "icmptype":
		typ, n = at(1), 2
	case w[0] == "icmp" && at(1) == "!type":
		neg, typ, n = "! ", at(2), 3
	case w[0] == "icmp" && at(1) != "":
		name := at(1)
		if x, ok := strings.CutPrefix(name, "!"); ok {
			neg, name = "! ", x
		}
		v, ok := icmpNames[name]
		if !ok {
			return bad()
		}
		return "-m icmp " + neg + "--icmp-type " + v, 2, ""
	default:
		return bad()
	}
	t, err := strconv.ParseUint(typ, 10, 8)
	if err != nil {
		return bad()
	}
	v := typ
	switch {
	case at(n) == "code":
		if _, err := strconv.ParseUint(at(n+1), 10, 8); err != nil {
			return bad()
		}
		v += "/" + at(n+1)
		n += 2
	case at(n) == "codes":
		// A range of codes, which iptables-save does not write.
		return bad()
	case t == 255:
		v = "any"
	}
	return "-m icmp " + neg + "--icmp-type " + v, n, ""
}

// listingPhysdev reads what follows "PHYSDEV match": the options as
// iptables-save writes them, in the same order.
func listingPhysdev(w []string) (string, int, string) {
	s := "-m physdev"
	i := 0
	for i < len(w) {
		neg, k := "", i
		if w[k] == "!" {
			neg, k = "! ", k+1
		}
		if k >= len(w) {
			break
		}
		switch w[k] {
		case "--physdev-is-in", "--physdev-is-out", "--physdev-is-bridged":
			s += " " + neg + w[k]
			i = k + 1
			continue
		case "--physdev-in", "--physdev-out":
			if k+1 >= len(w) {
				return "", 0, "physdev match " + w[k] + " without an interface"
			}
			s += " " + neg + w[k] + " " + w[k+1]
			i = k + 2
			continue
		}
		break
	}
	if i == 0 {
		return "", 0, "physdev match without options"
	}
	return s, i, ""
}

// listingConnlimit reads the connlimit match, "#conn src/32 > 3"
// (--connlimit-above; "<=" for --connlimit-upto).
func listingConnlimit(addr, op, limit string) (string, string) {
	side, prefix, ok := strings.Cut(addr, "/")
	_, e1 := strconv.ParseUint(prefix, 10, 8)
	_, e2 := strconv.ParseUint(limit, 10, 32)
	if !ok || e1 != nil || e2 != nil || side != "src" && side != "dst" || op != ">" && op != "<=" {
		return "", "connlimit match " + clip(strings.Join([]string{addr, op, limit}, " "))
	}
	flag := "--connlimit-above "
	if op == "<=" {
		flag = "--connlimit-upto "
	}
	return "-m connlimit " + flag + limit + " --connlimit-mask " + prefix + " --connlimit-" + map[string]string{"src": "saddr", "dst": "daddr"}[side], ""
}

// listingSetXMark returns the --set-xmark value of what MARK and
// CONNMARK print as "set 0x1", "or 0x4000", "and 0xffffbfff", "xor 0x1"
// or "xset 0x1/0xff".
func listingSetXMark(op, v string) (string, bool) {
	v, m, hasMask := strings.Cut(v, "/")
	n, err := strconv.ParseUint(v, 0, 32)
	if err != nil {
		return "", false
	}
	switch op {
	case "or":
		return v + "/" + v, true
	case "xor":
		return v + "/0x0", true
	case "set":
		return v + "/0xffffffff", true
	case "and":
		return fmt.Sprintf("0x0/%#x", ^uint32(n)), true
	case "xset":
		if !hasMask {
			m = "0xffffffff"
		}
		return v + "/" + m, true
	}
	return "", false
}

// listingConnmarkSave reads CONNMARK's "save" and "restore" and their
// masks ("save mask 0xff", "restore ctmask 0xff nfmask ~0xff").
func listingConnmarkSave(w []string) (string, int) {
	at := func(k int) string {
		if k < len(w) {
			return w[k]
		}
		return ""
	}
	flag := "--" + w[0] + "-mark"
	const all = "0xffffffff"
	switch {
	case at(1) == "mask" && at(2) != "":
		return flag + " --nfmask " + at(2) + " --ctmask " + at(2), 3
	case w[0] == "save" && at(1) == "nfmask" && at(3) == "ctmask" && strings.HasPrefix(at(4), "~"):
		return flag + " --nfmask " + at(2) + " --ctmask " + at(4)[1:], 5
	case w[0] == "restore" && at(1) == "ctmask" && at(3) == "nfmask" && strings.HasPrefix(at(4), "~"):
		return flag + " --nfmask " + at(4)[1:] + " --ctmask " + at(2), 5
	}
	return flag + " --nfmask " + all + " --ctmask " + all, 1
}

// listingCT reads what follows the CT target's "CT": notrack, helper,
// timeout, ctevents, expevents, zone.
func listingCT(w []string) ([]string, int, string) {
	var opts []string
	i := 0
	for i < len(w) {
		switch w[i] {
		case "notrack":
			opts = append(opts, "--notrack")
			i++
			continue
		case "helper", "timeout", "ctevents", "expevents", "zone", "zone-orig", "zone-reply":
			if i+1 >= len(w) {
				return nil, 0, "CT " + w[i] + " without a value"
			}
			opts = append(opts, "--"+w[i]+" "+w[i+1])
			i += 2
			continue
		}
		break
	}
	return opts, i, ""
}

// logLevels are the syslog levels LOG's listing names.
var logLevels = map[string]int{
	"emerg": 0, "panic": 0, "alert": 1, "crit": 2, "err": 3, "error": 3,
	"warn": 4, "warning": 4, "notice": 5, "info": 6, "debug": 7,
}

// logFlags are LOG's flags, in iptables-save's order: their bits (as -n
// prints them), the words iptables -L prints without -n, and the
// options.
var logFlags = []struct {
	bit        uint64
	word, flag string
}{
	{0x01, "tcp-sequence", "--log-tcp-sequence"},
	{0x02, "tcp-options", "--log-tcp-options"},
	{0x04, "ip-options", "--log-ip-options"},
	{0x08, "uid", "--log-uid"},
	{0x20, "macdecode", "--log-macdecode"},
}

// listingLOG reads what follows the LOG target's "LOG": "flags 14 level
// 7 prefix "x"" with -n, "level debug tcp-options uid prefix "x""
// without.
func listingLOG(w []string) ([]string, int, string) {
	at := func(k int) string {
		if k < len(w) {
			return w[k]
		}
		return ""
	}
	bad := func() ([]string, int, string) {
		return nil, 0, "LOG target " + clip(strings.Join(w[:min(6, len(w))], " "))
	}
	var flags uint64
	level := -1
	i := 0
	if at(0) == "flags" {
		f, err := strconv.ParseUint(at(1), 10, 8)
		l, err2 := strconv.Atoi(at(3))
		if err != nil || at(2) != "level" || err2 != nil || l < 0 || l > 7 {
			return bad()
		}
		flags, level, i = f, l, 4
	} else {
		if at(0) != "level" {
			return bad()
		}
		l, ok := logLevels[at(1)]
		if !ok {
			return bad()
		}
		level, i = l, 2
	words:
		for i < len(w) {
			for _, f := range logFlags {
				if w[i] == f.word {
					flags |= f.bit
					i++
					continue words
				}
			}
			break
		}
	}
	var known uint64
	for _, f := range logFlags {
		known |= f.bit
	}
	if flags&^known != 0 {
		return bad()
	}
	var opts []string
	if at(i) == "prefix" {
		p := at(i + 1)
		if len(p) < 2 || p[0] != '"' || p[len(p)-1] != '"' {
			return bad()
		}
		opts = append(opts, "--log-prefix "+saveString(p[1:len(p)-1]))
		i += 2
	}
	if level != 4 {
		opts = append(opts, "--log-level "+strconv.Itoa(level))
	}
	for _, f := range logFlags {
		if flags&f.bit != 0 {
			opts = append(opts, f.flag)
		}
	}
	return opts, i, ""
}

// quotedEnd returns the offset of the quote that ends the quoted string
// at the start of s, 0 when there is none. iptables -L prints LOG's
// prefix, the one quoted string it prints, last and as it is (quotes
// and all): the string ends at the last quote before a blank or the end
// of s.
func quotedEnd(s string) int {
	end := 0
	for j := 1; j < len(s); j++ {
		if s[j] == '"' && (j+1 == len(s) || s[j+1] == ' ' || s[j+1] == '\t') {
			end = j
		}
	}
	return end
}

// saveString spells a string option's value as iptables-save does:
// bare when made of letters, digits, "-" and "_" only, else quoted with
// its quotes and backslashes escaped.
func saveString(s string) string {
	bare := s != ""
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			bare = false
			break
		}
	}
	if bare {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range []byte(s) {
		if c == '"' || c == '\\' || c == '\'' {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	b.WriteByte('"')
	return b.String()
}
