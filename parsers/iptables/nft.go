package iptables

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/google/nftables"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/nft"
)

// ReasonNotTranslated is the reason of the notes of [FromNFT]: a rule of
// an iptables-nft table that nft lists in a form that does not say which
// iptables rule it is (an xt match or target shown by its name only,
// "xt match recent"; "ct status", which nft prints for some conntrack
// matches it cannot spell; an expression iptables does not write). Its
// Detail names the expression.
const ReasonNotTranslated = "not translated from nft"

// iptablesNFTTables are the tables iptables-nft writes, by name.
var iptablesNFTTables = map[string]bool{"filter": true, "nat": true, "mangle": true, "raw": true, "security": true}

// FromNFT reads the tables iptables-nft wrote (table ip filter, ip nat,
// ip mangle, ip raw, ip security and their ip6 counterparts) from the
// text (or the JSON) of nft list ruleset back into iptables dumps, one per family, as
// iptables-save would have written them: the common translations nft
// prints (meta l4proto, ip saddr/daddr, iifname, tcp/udp ports and port
// sets, tcp flags, icmp types, ct state, ct mark, meta mark, fib ... type,
// meta random, limit, pkttype, counters; accept, drop, return, jump,
// goto, reject, dnat, snat, masquerade, redirect, mark and ct mark
// setting, notrack, log, TCP MSS clamping) are turned back into their
// iptables options.
//
// What nft does not show is not guessed: a rule holding an expression of
// no iptables spelling, or an xt match or target nft shows by its name
// only ("xt match recent", "xt target CT"), is skipped and noted
// (ReasonNotTranslated), and the dump is Partial. Some matches leave no
// trace in nft's listing and are missing from the rules read: comments
// (unless nft prints them as the rule's comment), an nfacct match (which
// counts and always matches), and a -m tcp or -m udp without options.
// Policies' counters are not listed by nft and are read as zero.
//
// A ruleset read from JSON (nft -j list ruleset) is read the same way,
// from the text of its statements ([nft.RuleWords]). nft's JSON names
// every xt match and target by its name only ({"xt": {"type": "target",
// "name": "DNAT"}}), where its text spells those it can translate: of
// kube-proxy's rules, those with a DNAT, MARK, MASQUERADE or REJECT
// target or a conntrack, statistic, addrtype, recent, tcp or udp match
// are noted (with their JSON path) and left, and the reason the dump is
// partial counts the xt statements that made it so. Rules take the line
// on which nft's JSON starts them (one line for all in nft -j's output).
//
// A listing cut short ([nft.Ruleset.Partial]) makes partial, with its
// reason, the dumps of the families whose tables it was cut in, or cut
// before their nat or filter table.
//
// ok is false when rs holds no table of iptables-nft.
func FromNFT(name string, rs *nft.Ruleset) (dumps []*Dump, notes []parsers.LineNote, ok bool, err error) {
	for _, fam := range []struct {
		family nftables.TableFamily
		f      Family
	}{{nftables.TableFamilyIPv4, IPv4}, {nftables.TableFamilyIPv6, IPv6}} {
		var segs []*listingSegment
		xt := map[string]int{}
		cut, tables := false, map[string]bool{}
		for _, t := range rs.Tables {
			if t.Family != fam.family || !iptablesNFTTables[t.Name] {
				continue
			}
			segs = append(segs, nftSegment(rs, t, fam.f, xt))
			cut = cut || t.Cut
			tables[t.Name] = true
		}
		if len(segs) == 0 {
			continue
		}
		p, st := readSegments(name, segs)
		p.lenientEnd()
		d, err := p.finish()
		if err != nil {
			return nil, nil, false, err
		}
		d.Family = fam.f
		var why []string
		if rs.Partial != "" && (cut || !tables["nat"] || !tables["filter"]) {
			// A listing cut short in the family's tables, or before
			// one of them.
			why = append(why, rs.Partial)
		}
		if st.undetermined > 0 {
			why = append(why, fmt.Sprintf("%s of the iptables-nft tables listed by nft in a form that does not say which iptables rule it is%s", count(st.undetermined, "rule"), nftXTSummary(xt)))
		}
		if d.PartialReason != "" {
			for _, r := range strings.Split(d.PartialReason, "; ") {
				if !strings.Contains(r, "not understood, or rules of no known table") || st.undetermined == 0 {
					why = append(why, r)
				}
			}
		}
		d.Partial, d.PartialReason = len(why) > 0, strings.Join(why, "; ")
		dumps = append(dumps, d)
		notes = append(notes, p.lax.notes...)
	}
	sort.SliceStable(notes, func(i, j int) bool { return notes[i].Line < notes[j].Line })
	return dumps, notes, len(dumps) > 0, nil
}

// nftSegment translates one table of iptables-nft into the rows of a
// listing segment: its chains' declarations, then its rules.
// The xt matches and targets that nft's JSON names without their options
// are counted in xt by "match NAME" or "target NAME".
func nftSegment(rs *nft.Ruleset, t *nft.Table, f Family, xt map[string]int) *listingSegment {
	s := &listingSegment{table: t.Name, chains: map[string]bool{}, verbose: true, first: rs.Line(t.Pos)}
	var builtin, user []*nft.Chain
	for _, c := range t.Chains {
		s.chains[c.Name] = true
		if IsBuiltinChain(t.Name, c.Name) {
			builtin = append(builtin, c)
		} else {
			user = append(user, c)
		}
	}
	chains := append(builtin, user...)
	for _, c := range chains {
		policy := "-"
		if c.Policy != nil {
			policy = strings.ToUpper(nft.PolicyName(*c.Policy))
		}
		s.rows = append(s.rows, listingLine{line: rs.Line(c.Pos()), text: ":" + c.Name + " " + policy + " [0:0]"})
	}
	for _, c := range chains {
		for _, r := range c.Rules {
			w, err := nft.RuleWords(r)
			text, detail := "", ""
			if err != nil {
				detail = err.Error()
			} else {
				text, detail = nftRule(c.Name, w, f)
			}
			line := rs.Line(r.Pos())
			row := listingLine{line: line, text: text}
			if detail != "" {
				if r.Pos().Path != "" {
					detail = r.Pos().Path + ": " + detail
					for k := 0; k+2 < len(w); k++ {
						if w[k] == "xt" && !nftHidden[w[k+1]+" "+w[k+2]] {
							xt[w[k+1]+" "+w[k+2]]++
						}
					}
				}
				row = listingLine{line: line, why: ReasonNotTranslated, detail: detail}
			}
			s.rows = append(s.rows, row)
		}
	}
	return s
}

// nftIcmpTypes are the ICMP types nft names, as iptables-save writes them.
var nftIcmpTypes = map[string]string{
	"echo-reply": "0", "destination-unreachable": "3", "source-quench": "4", "redirect": "5",
	"echo-request": "8", "router-advertisement": "9", "router-solicitation": "10", "time-exceeded": "11",
	"parameter-problem": "12", "timestamp-request": "13", "timestamp-reply": "14", "info-request": "15",
	"info-reply": "16", "address-mask-request": "17", "address-mask-reply": "18",
}

// nftRejects are the ICMP types of nft's reject, as iptables names them.
var nftRejects = map[string]string{
	"net-unreachable": "icmp-net-unreachable", "host-unreachable": "icmp-host-unreachable",
	"prot-unreachable": "icmp-proto-unreachable", "port-unreachable": "icmp-port-unreachable",
	"net-prohibited": "icmp-net-prohibited", "host-prohibited": "icmp-host-prohibited",
	"admin-prohibited": "icmp-admin-prohibited",
}

// nftLogLevels are the levels of nft's log statement.
var nftLogLevels = map[string]int{"emerg": 0, "alert": 1, "crit": 2, "err": 3, "warn": 4, "notice": 5, "info": 6, "debug": 7}

// nftLogFlags are nft's log flags and iptables' LOG options.
var nftLogFlags = map[string]string{"tcp sequence": "--log-tcp-sequence", "tcp options": "--log-tcp-options", "ip options": "--log-ip-options", "skuid": "--log-uid", "ether": "--log-macdecode"}

// nftRule translates a rule as nft lists it (its words, see
// [nft.RuleWords]) into iptables-save's form
// ("[p:b] -A CHAIN ..."), or says which expression it cannot translate.
func nftRule(chain string, w []string, f Family) (text, detail string) {
	i := 0
	at := func(k int) string {
		if i+k < len(w) {
			return w[i+k]
		}
		return ""
	}
	// neg takes a "!=" at k, and returns "! " when there was one.
	neg := func(k int) string {
		if at(k) == "!=" {
			i++
			return "! "
		}
		return ""
	}
	var (
		head     []string // -s, -d, -i, -o, -p
		matches  []string
		target   string
		counters = "[0:0] "
		proto    string
		lastMod  string // the module of the last match, to add options to
		addrtype string
	)
	addMatch := func(mod, opt string) {
		if mod != "" && mod == lastMod {
			matches[len(matches)-1] = nftAddOption(matches[len(matches)-1], mod, opt)
			return
		}
		matches = append(matches, "-m "+mod+" "+opt)
		lastMod = mod
	}
	setProto := func(p string) {
		if proto == "" {
			proto = p
			head = append(head, "-p "+p)
		}
	}
	bad := func() (string, string) {
		return "", fmt.Sprintf("%q", clip(strings.Join(w[min(i, len(w)-1):], " ")))
	}
	for i < len(w) {
		word := w[i]
		if target != "" && word != "comment" {
			return bad()
		}
		if word != "fib" && addrtype != "" {
			addMatch("addrtype", addrtype)
			addrtype = ""
		}
		switch {
		case word == "counter" && at(1) == "packets" && at(3) == "bytes":
			counters = "[" + at(2) + ":" + at(4) + "] "
			i += 5
		case word == "meta" && at(1) == "l4proto" && at(2) != "":
			setProto(at(2))
			i += 3
		case word == "ip" && at(1) == "protocol" && at(2) != "" && (proto == "" || proto == at(2)):
			setProto(at(2))
			i += 3
		case (word == "ip" && f == IPv4 || word == "ip6" && f == IPv6) && (at(1) == "saddr" || at(1) == "daddr"):
			flag := map[string]string{"saddr": "-s ", "daddr": "-d "}[at(1)]
			i += 2
			n := neg(0)
			a := at(0)
			if lo, hi, ok := strings.Cut(a, "-"); ok {
				// A range: the iprange match.
				_, e1 := netip.ParseAddr(lo)
				_, e2 := netip.ParseAddr(hi)
				if e1 != nil || e2 != nil {
					return bad()
				}
				addMatch("iprange", n+map[string]string{"-s ": "--src-range ", "-d ": "--dst-range "}[flag]+a)
				i++
				break
			}
			if _, err := netip.ParsePrefix(a); err != nil {
				if _, err := netip.ParseAddr(a); err != nil {
					return bad()
				}
				a += map[Family]string{IPv4: "/32", IPv6: "/128"}[f]
			}
			head = append(head, n+flag+a)
			i++
		case word == "iifname" || word == "oifname":
			i++
			n := neg(0)
			v := strings.Trim(at(0), `"`)
			if v == "" {
				return bad()
			}
			v = strings.TrimSuffix(v, "*")
			if strings.HasSuffix(at(0), `*"`) {
				v += "+"
			}
			head = append(head, n+map[string]string{"iifname": "-i ", "oifname": "-o "}[word]+v)
			i++
		case (word == "tcp" || word == "udp" || word == "sctp") && (at(1) == "dport" || at(1) == "sport"):
			setProto(word)
			dir := at(1)
			i += 2
			n := neg(0)
			v := at(0)
			if strings.HasPrefix(v, "{") {
				ports := strings.Fields(strings.NewReplacer("{", "", "}", "", ",", " ").Replace(v))
				for k, p := range ports {
					ports[k] = strings.Replace(p, "-", ":", 1)
				}
				if lastMod == word {
					lastMod = ""
				}
				addMatch("multiport", n+"--"+dir+"s "+strings.Join(ports, ","))
				lastMod = ""
			} else {
				if strings.Trim(v, "0123456789-") != "" || v == "" {
					return bad()
				}
				addMatch(word, n+"--"+dir+" "+strings.Replace(v, "-", ":", 1))
			}
			i++
		case word == "tcp" && at(1) == "flags":
			i += 2
			n := neg(0)
			set, mask := at(0), at(2)
			if at(1) != "/" {
				return bad()
			}
			s, ok1 := tcpFlags(strings.ToUpper(set))
			m, ok2 := tcpFlags(strings.ToUpper(mask))
			if !ok1 || !ok2 {
				return bad()
			}
			setProto("tcp")
			addMatch("tcp", n+"--tcp-flags "+tcpFlagList(m)+" "+tcpFlagList(s))
			i += 3
		case word == "icmp" && at(1) == "type" && f == IPv4:
			i += 2
			n := neg(0)
			v, ok := nftIcmpTypes[at(0)]
			if !ok {
				return bad()
			}
			setProto("icmp")
			addMatch("icmp", n+"--icmp-type "+v)
			i++
		case word == "ct" && at(1) == "state":
			i += 2
			n := ""
			if at(0) == "!" || at(0) == "!=" {
				n = "! "
				i++
			}
			if at(0) == "" {
				return bad()
			}
			addMatch("conntrack", n+"--ctstate "+strings.ToUpper(at(0)))
			i++
		case word == "ct" && at(1) == "direction" && (at(2) == "original" || at(2) == "reply"):
			addMatch("conntrack", "--ctdir "+strings.ToUpper(at(2)))
			i += 3
		case word == "ct" && at(1) == "mark" && at(2) != "set":
			i += 2
			v, ok := nftMarkMatch(w, &i)
			if !ok {
				return bad()
			}
			addMatch("connmark", v)
		case word == "meta" && at(1) == "mark" && at(2) != "set":
			i += 2
			v, ok := nftMarkMatch(w, &i)
			if !ok {
				return bad()
			}
			addMatch("mark", v)
		case word == "fib" && (at(1) == "saddr" || at(1) == "daddr"):
			side := map[string]string{"saddr": "--src-type ", "daddr": "--dst-type "}[at(1)]
			i += 2
			limit := ""
			if at(0) == "." && (at(1) == "iif" || at(1) == "oif") {
				limit = " --limit-iface-" + map[string]string{"iif": "in", "oif": "out"}[at(1)]
				i += 2
			}
			if at(0) != "type" {
				return bad()
			}
			i++
			n := neg(0)
			if at(0) == "" || strings.HasPrefix(at(0), "{") {
				return bad()
			}
			if addrtype != "" {
				addrtype += " "
			}
			addrtype += n + side + strings.ToUpper(at(0)) + limit
			i++
		case word == "meta" && at(1) == "random" && at(2) == "&" && at(3) == "2147483647" && at(4) == "<":
			n, err := strconv.ParseUint(at(5), 10, 32)
			if err != nil {
				return bad()
			}
			addMatch("statistic", fmt.Sprintf("--mode random --probability %.11f", float64(n)/0x80000000))
			i += 6
		case word == "limit" && at(1) == "rate":
			rate, unit, ok := strings.Cut(at(2), "/")
			u := map[string]string{"second": "sec", "minute": "min", "hour": "hour", "day": "day"}[unit]
			if !ok || u == "" {
				return bad()
			}
			opt := "--limit " + rate + "/" + u
			i += 3
			if at(0) == "burst" && at(2) == "packets" {
				if at(1) != "5" {
					opt += " --limit-burst " + at(1)
				}
				i += 3
			}
			addMatch("limit", opt)
		case word == "pkttype":
			i++
			n := neg(0)
			if at(0) == "" {
				return bad()
			}
			addMatch("pkttype", n+"--pkt-type "+at(0))
			i++
		case word == "xt" && at(1) == "match" && strings.Trim(at(2), `"`) == "nfacct",
			word == "#" && at(1) == "xt_nfacct", word == "#xt_nfacct":
			// It counts and always matches: the rule is the same without it.
			i += nftXTWords(word)
		case word == "xt" && at(1) == "match" && strings.Trim(at(2), `"`) == "comment",
			word == "#" && at(1) == "xt_comment", word == "#xt_comment":
			// A comment nft does not show.
			i += nftXTWords(word)
		case word == "comment" && strings.HasPrefix(at(1), `"`):
			c, err := strconv.Unquote(at(1))
			if err != nil {
				c = strings.Trim(at(1), `"`)
			}
			addMatch("comment", "--comment "+saveString(c))
			lastMod = ""
			i += 2
		case word == "accept" || word == "drop" || word == "return":
			target = "-j " + strings.ToUpper(word)
			i++
		case (word == "jump" || word == "goto") && at(1) != "":
			target = map[string]string{"jump": "-j ", "goto": "-g "}[word] + at(1)
			i += 2
		case word == "reject":
			target = "-j REJECT --reject-with icmp-port-unreachable"
			i++
			switch {
			case at(0) == "with" && at(1) == "tcp" && at(2) == "reset":
				target = "-j REJECT --reject-with tcp-reset"
				i += 3
			case at(0) == "with" && at(1) == "icmp" && at(2) == "type" && nftRejects[at(3)] != "":
				target = "-j REJECT --reject-with " + nftRejects[at(3)]
				i += 4
			case at(0) == "with":
				return bad()
			}
		case (word == "dnat" || word == "snat") && at(1) == "to" && at(2) != "":
			target = map[string]string{"dnat": "-j DNAT --to-destination ", "snat": "-j SNAT --to-source "}[word] + at(2)
			i += 3
			target += nftNATFlags(w, &i)
		case word == "masquerade" || word == "redirect":
			target = "-j " + strings.ToUpper(word)
			i++
			if at(0) == "to" && strings.HasPrefix(at(1), ":") {
				target += " --to-ports " + at(1)[1:]
				i += 2
			}
			target += nftNATFlags(w, &i)
		case word == "meta" && at(1) == "mark" && at(2) == "set":
			i += 3
			if at(0) == "ct" && at(1) == "mark" {
				target = "-j CONNMARK --restore-mark --nfmask 0xffffffff --ctmask 0xffffffff"
				i += 2
				break
			}
			x, ok := nftSetMark(w, &i)
			if !ok {
				return bad()
			}
			target = "-j MARK --set-xmark " + x
		case word == "ct" && at(1) == "mark" && at(2) == "set":
			i += 3
			if at(0) == "mark" && at(1) != "and" && at(1) != "or" && at(1) != "xor" {
				target = "-j CONNMARK --save-mark --nfmask 0xffffffff --ctmask 0xffffffff"
				i++
				break
			}
			x, ok := nftSetMark(w, &i)
			if !ok {
				return bad()
			}
			target = "-j CONNMARK --set-xmark " + x
		case word == "notrack":
			target = "-j CT --notrack"
			i++
		case word == "log":
			i++
			t, ok := nftLog(w, &i)
			if !ok {
				return bad()
			}
			target = t
		case word == "tcp" && at(1) == "option" && at(2) == "maxseg" && at(3) == "size" && at(4) == "set":
			switch {
			case at(5) == "rt" && at(6) == "mtu":
				target = "-j TCPMSS --clamp-mss-to-pmtu"
				i += 7
			case strings.Trim(at(5), "0123456789") == "" && at(5) != "":
				target = "-j TCPMSS --set-mss " + at(5)
				i += 6
			default:
				return bad()
			}
		default:
			return bad()
		}
	}
	if addrtype != "" {
		addMatch("addrtype", addrtype)
	}
	parts := append([]string{"-A " + chain}, nftHeadOrder(head)...)
	parts = append(parts, matches...)
	if target != "" {
		parts = append(parts, target)
	}
	return counters + strings.Join(parts, " "), ""
}

// nftHidden are the xt matches that leave no trace in the rules read
// (see [FromNFT]): they are not named among what nft's JSON hides.
var nftHidden = map[string]bool{"match comment": true, "match nfacct": true}

// nftXTSummary says which xt matches and targets nft's JSON named
// without their options, and how many times: " (nft -j names xt matches
// and targets without their options: target DNAT 16 times, ...; nft list
// ruleset, without -j, spells most of them)"; "" when none did.
func nftXTSummary(xt map[string]int) string {
	if len(xt) == 0 {
		return ""
	}
	names := make([]string, 0, len(xt))
	for n := range xt {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if xt[names[i]] != xt[names[j]] {
			return xt[names[i]] > xt[names[j]]
		}
		return names[i] < names[j]
	})
	for k, n := range names {
		names[k] = n + " " + count(xt[n], "time")
	}
	return " (nft -j names xt matches and targets without their options: " + strings.Join(names, ", ") + "; nft list ruleset, without -j, spells most of them)"
}

// nftTCPOrder ranks the options of the tcp, udp and sctp matches in the
// order iptables-save writes them: ports, then TCP options and flags.
var nftTCPOrder = map[string]int{"--sport": 1, "--dport": 2, "--tcp-option": 3, "--tcp-flags": 4}

// nftAddOption adds opt ("--dport 80", "! --tcp-flags SYN,RST SYN") to m,
// a match of module mod ("-m tcp --tcp-flags ..."): after the others, but
// for the port options of tcp, udp and sctp, which iptables-save writes
// before TCP options and flags.
func nftAddOption(m, mod, opt string) string {
	rank := func(o string) int {
		name, _, _ := strings.Cut(strings.TrimPrefix(o, "! "), " ")
		return nftTCPOrder[name]
	}
	if mod != "tcp" && mod != "udp" && mod != "sctp" || rank(opt) == 0 {
		return m + " " + opt
	}
	// The options of m, each from its "--" (or the "! " before it).
	var opts []string
	rest := strings.TrimPrefix(m, "-m "+mod+" ")
	for rest != "" {
		start := 2
		if strings.HasPrefix(rest, "! ") {
			start = 4
		}
		end := len(rest)
		if k := strings.Index(rest[start:], " --"); k >= 0 {
			end = start + k
		}
		if k := strings.Index(rest[start:], " ! --"); k >= 0 && start+k < end {
			end = start + k
		}
		opts = append(opts, rest[:end])
		rest = strings.TrimPrefix(rest[end:], " ")
	}
	at := len(opts)
	for k, o := range opts {
		if rank(o) > rank(opt) {
			at = k
			break
		}
	}
	opts = append(opts[:at], append([]string{opt}, opts[at:]...)...)
	return "-m " + mod + " " + strings.Join(opts, " ")
}

// nftXTWords returns how many words an xt match spelled from word takes:
// "xt match NAME", "# xt_NAME" or "#xt_NAME".
func nftXTWords(word string) int {
	switch word {
	case "xt":
		return 3
	case "#":
		return 2
	}
	return 1
}

// nftHeadOrder orders -s, -d, -i, -o and -p as iptables-save writes them.
func nftHeadOrder(head []string) []string {
	var out []string
	for _, flag := range []string{"-s ", "-d ", "-i ", "-o ", "-p "} {
		for _, h := range head {
			if strings.HasPrefix(strings.TrimPrefix(h, "! "), flag) {
				out = append(out, h)
			}
		}
	}
	return out
}

// nftHex spells a mark as iptables does (0x4000, not 0x00004000).
func nftHex(v string) (string, bool) {
	n, err := strconv.ParseUint(v, 0, 32)
	if err != nil {
		return "", false
	}
	return fmt.Sprintf("%#x", n), true
}

// nftMarkMatch reads what follows "meta mark" or "ct mark" in a match:
// "0x1", "!= 0x1", "& 0x4000 == 0x4000", "& 0x4000 != 0x4000".
func nftMarkMatch(w []string, i *int) (string, bool) {
	at := func(k int) string {
		if *i+k < len(w) {
			return w[*i+k]
		}
		return ""
	}
	if at(0) == "&" {
		m, ok1 := nftHex(at(1))
		v, ok2 := nftHex(at(3))
		if !ok1 || !ok2 || at(2) != "==" && at(2) != "!=" {
			return "", false
		}
		n := ""
		if at(2) == "!=" {
			n = "! "
		}
		*i += 4
		return n + "--mark " + v + "/" + m, true
	}
	n := ""
	if at(0) == "!=" {
		n = "! "
		*i++
	}
	v, ok := nftHex(at(0))
	if !ok {
		return "", false
	}
	*i++
	return n + "--mark " + v, true
}

// nftSetMark reads the value of "meta mark set" or "ct mark set": "0x1",
// "mark or 0x4000", "mark and 0xffffbfff", "mark xor 0x4000"; and
// returns it as --set-xmark's value.
func nftSetMark(w []string, i *int) (string, bool) {
	at := func(k int) string {
		if *i+k < len(w) {
			return w[*i+k]
		}
		return ""
	}
	if (at(0) == "mark" || at(0) == "ct" && at(1) == "mark") && (at(1) == "or" || at(1) == "and" || at(1) == "xor") {
		op := at(1)
		v, ok := nftHex(at(2))
		if !ok {
			return "", false
		}
		*i += 3
		return listingSetXMark(op, v)
	}
	v, ok := nftHex(at(0))
	if !ok {
		return "", false
	}
	*i++
	return v + "/0xffffffff", true
}

// nftNATFlags reads the flags after a NAT statement's address.
func nftNATFlags(w []string, i *int) string {
	out := ""
	for *i < len(w) {
		switch w[*i] {
		case "fully-random":
			out += " --random-fully"
		case "random":
			out += " --random"
		case "persistent":
			out += " --persistent"
		default:
			return out
		}
		*i++
	}
	return out
}

// nftLog reads what follows "log": prefix, level and flags.
func nftLog(w []string, i *int) (string, bool) {
	at := func(k int) string {
		if *i+k < len(w) {
			return w[*i+k]
		}
		return ""
	}
	prefix, level := "", 4
	var flags []string
	group, size, threshold := "", "", ""
	for *i < len(w) {
		switch {
		case (at(0) == "group" || at(0) == "snaplen" || at(0) == "queue-threshold") && strings.Trim(at(1), "0123456789") == "" && at(1) != "":
			// NFLOG's: the log statement of nflog.
			switch at(0) {
			case "group":
				group = at(1)
			case "snaplen":
				size = at(1)
			default:
				threshold = at(1)
			}
			*i += 2
		case at(0) == "prefix" && strings.HasPrefix(at(1), `"`):
			p, err := strconv.Unquote(at(1))
			if err != nil {
				return "", false
			}
			prefix = p
			*i += 2
		case at(0) == "level":
			l, ok := nftLogLevels[at(1)]
			if !ok {
				return "", false
			}
			level = l
			*i += 2
		case at(0) == "flags" && nftLogFlags[at(1)+" "+at(2)] != "":
			flags = append(flags, at(1)+" "+at(2))
			*i += 3
		case at(0) == "flags" && nftLogFlags[at(1)] != "":
			flags = append(flags, at(1))
			*i += 2
		default:
			// What follows the statement (its comment) is read after it.
			return nftLogOf(prefix, level, flags, group, size, threshold)
		}
	}
	return nftLogOf(prefix, level, flags, group, size, threshold)
}

// nftLogOf returns LOG, or NFLOG when the statement has a group.
func nftLogOf(prefix string, level int, flags []string, group, size, threshold string) (string, bool) {
	if group == "" {
		return nftLogTarget(prefix, level, flags), size == "" && threshold == ""
	}
	if level != 4 || len(flags) > 0 {
		return "", false
	}
	t := "-j NFLOG"
	if prefix != "" {
		t += " --nflog-prefix " + saveString(prefix)
	}
	if group != "0" {
		t += " --nflog-group " + group
	}
	if size != "" {
		t += " --nflog-size " + size
	}
	if threshold != "" && threshold != "1" {
		t += " --nflog-threshold " + threshold
	}
	return t, true
}

// nftLogTarget spells LOG and its options as iptables-save does.
func nftLogTarget(prefix string, level int, flags []string) string {
	t := "-j LOG"
	if prefix != "" {
		t += " --log-prefix " + saveString(prefix)
	}
	if level != 4 {
		t += " --log-level " + strconv.Itoa(level)
	}
	for _, f := range []string{"tcp sequence", "tcp options", "ip options", "skuid", "ether"} {
		for _, g := range flags {
			if g == f {
				t += " " + nftLogFlags[f]
			}
		}
	}
	return t
}
