package iptables

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// extensionOptions are the long options (without their "--") of every
// match module and target iptables ships, as iptables-restore 1.8.9 takes
// them in either family: a match's options are known once "-m NAME" (or
// the protocol that loads it, see [protocolMatch]) comes before them in
// the rule, a target's once "-j NAME" does. A module or target without an
// entry has no options (l2tp and udplite are names iptables does not
// load). TestExtensionOptionsRestore checks the table against the real
// tools.
var extensionOptions = optionTable(map[string]string{
	"addrtype":  "dst-type limit-iface-in limit-iface-out src-type",
	"ah":        "ahlen ahres ahspi",
	"bpf":       "bytecode object-pinned",
	"cgroup":    "cgroup path",
	"cluster":   "cluster-hash-seed cluster-local-node cluster-local-nodemask cluster-total-nodes",
	"comment":   "comment",
	"connbytes": "connbytes connbytes-dir connbytes-mode",
	"connlabel": "label set",
	"connlimit": "connlimit-above connlimit-daddr connlimit-mask connlimit-saddr connlimit-upto",
	"connmark":  "mark",
	"conntrack": "ctdir ctexpire ctorigdst ctorigdstport ctorigsrc ctorigsrcport ctproto ctrepldst " +
		"ctrepldstport ctreplsrc ctreplsrcport ctstate ctstatus",
	"cpu":      "cpu",
	"dccp":     "dccp-option dccp-types destination-port dport source-port sport",
	"devgroup": "dst-group src-group",
	"dscp":     "dscp dscp-class",
	"dst":      "dst-len dst-opts",
	"ecn":      "ecn-ip-ect ecn-tcp-cwr ecn-tcp-ece",
	"esp":      "espspi",
	"eui64":    "",
	"frag":     "fragfirst fragid fraglast fraglen fragmore fragres",
	"hashlimit": "hashlimit hashlimit-above hashlimit-burst hashlimit-dstmask " +
		"hashlimit-htable-expire hashlimit-htable-gcinterval hashlimit-htable-max " +
		"hashlimit-htable-size hashlimit-mode hashlimit-name hashlimit-rate-interval " +
		"hashlimit-rate-match hashlimit-srcmask hashlimit-upto",
	"hbh":        "hbh-len hbh-opts",
	"helper":     "helper",
	"hl":         "hl hl-eq hl-gt hl-lt",
	"icmp":       "icmp-type",
	"icmp6":      "icmpv6-type",
	"ipcomp":     "compres ipcompspi",
	"iprange":    "dst-range src-range",
	"ipv6header": "header soft",
	"ipvs":       "ipvs vaddr vdir vmethod vport vportctl vproto",
	"length":     "length",
	"limit":      "limit limit-burst",
	"mac":        "mac-source",
	"mark":       "mark",
	"mh":         "mh-type",
	"multiport":  "destination-ports dports ports source-ports sports",
	"nfacct":     "nfacct-name",
	"osf":        "genre log ttl",
	"owner":      "gid-owner socket-exists suppl-groups uid-owner",
	"physdev":    "physdev-in physdev-is-bridged physdev-is-in physdev-is-out physdev-out",
	"pkttype":    "pkt-type",
	"policy":     "dir mode next pol proto reqid spi strict tunnel-dst tunnel-src",
	"quota":      "quota",
	"rateest": "rateest rateest-bps rateest-bps1 rateest-bps2 rateest-delta rateest-eq " +
		"rateest-gt rateest-lt rateest-pps rateest-pps1 rateest-pps2 rateest1 rateest2",
	"realm":    "realm",
	"recent":   "hitcount mask name rcheck rdest reap remove rsource rttl seconds set update",
	"rpfilter": "accept-local invert loose validmark",
	"rt":       "rt-0-addrs rt-0-not-strict rt-0-res rt-len rt-segsleft rt-type",
	"sctp":     "chunk-types destination-port dport source-port sport",
	"set": "bytes-eq bytes-gt bytes-lt match-set packets-eq packets-gt packets-lt " +
		"return-nomatch set update-counters update-subcounters",
	"socket": "nowildcard restore-skmark transparent",
	"srh": "srh-hdr-len-eq srh-hdr-len-gt srh-hdr-len-lt srh-last-entry-eq srh-last-entry-gt " +
		"srh-last-entry-lt srh-lsid srh-next-hdr srh-nsid srh-psid srh-segs-left-eq " +
		"srh-segs-left-gt srh-segs-left-lt srh-tag",
	"state":     "state",
	"statistic": "every mode packet probability",
	"string":    "algo from hex-string icase string to",
	"tcp":       "destination-port dport source-port sport syn tcp-flags tcp-option",
	"tcpmss":    "mss",
	"time": "contiguous datestart datestop kerneltz localtz monthdays timestart timestop utc " +
		"weekdays",
	"tos":       "tos",
	"ttl":       "ttl ttl-eq ttl-gt ttl-lt",
	"u32":       "u32",
	"udp":       "destination-port dport source-port sport",
	"AUDIT":     "type",
	"CHECKSUM":  "checksum-fill",
	"CLASSIFY":  "set-class",
	"CLUSTERIP": "clustermac hash-init hashmode local-node new total-nodes",
	"CONNMARK": "and-mark ctmask left-shift-mark mask nfmask or-mark restore-mark " +
		"right-shift-mark save-mark set-mark set-xmark xor-mark",
	"CONNSECMARK": "restore save",
	"CT":          "ctevents expevents helper notrack timeout zone zone-orig zone-reply",
	"DNAT":        "persistent random to-destination",
	"DNPT":        "dst-pfx src-pfx",
	"DSCP":        "set-dscp set-dscp-class",
	"ECN":         "ecn-ip-ect ecn-tcp-cwr ecn-tcp-ece ecn-tcp-remove",
	"HL":          "hl-dec hl-inc hl-set",
	"HMARK": "hmark-dport hmark-dport-mask hmark-dst-prefix hmark-mod hmark-offset " +
		"hmark-proto-mask hmark-rnd hmark-spi hmark-spi-mask hmark-sport hmark-sport-mask " +
		"hmark-src-prefix hmark-tuple",
	"IDLETIMER": "alarm label timeout",
	"LED":       "led-always-blink led-delay led-trigger-id",
	"LOG": "log-ip-options log-level log-macdecode log-prefix log-tcp-options " +
		"log-tcp-sequence log-uid",
	"MARK":        "and-mark or-mark set-mark set-xmark xor-mark",
	"MASQUERADE":  "random random-fully to-ports",
	"NETMAP":      "to",
	"NFLOG":       "nflog-group nflog-prefix nflog-range nflog-size nflog-threshold",
	"NFQUEUE":     "queue-balance queue-bypass queue-cpu-fanout queue-num",
	"NOTRACK":     "",
	"RATEEST":     "rateest-ewmalog rateest-interval rateest-name",
	"REDIRECT":    "random to-ports",
	"REJECT":      "reject-with",
	"SECMARK":     "selctx",
	"SET":         "add-set del-set exist map-mark map-prio map-queue map-set timeout",
	"SNAT":        "persistent random random-fully to-source",
	"SNPT":        "dst-pfx src-pfx",
	"SYNPROXY":    "ecn mss sack-perm timestamp wscale",
	"TCPMSS":      "clamp-mss-to-pmtu set-mss",
	"TCPOPTSTRIP": "strip-options",
	"TEE":         "gateway oif",
	"TOS":         "and-tos or-tos set-tos xor-tos",
	"TPROXY":      "on-ip on-port tproxy-mark",
	"TRACE":       "",
	"TTL":         "ttl-dec ttl-inc ttl-set",
	"ULOG":        "ulog-cprange ulog-nlgroup ulog-prefix ulog-qthreshold",
})

// protocolMatches are the match modules a protocol given with "-p" loads
// without "-m" when an option follows that no module loaded before it
// takes, by protocol name and number (as iptables-restore takes them;
// icmp is IPv4's, icmp6 and mh IPv6's).
var protocolMatches = map[string]string{
	"tcp": "tcp", "6": "tcp", "udp": "udp", "17": "udp", "sctp": "sctp", "132": "sctp",
	"dccp": "dccp", "33": "dccp", "esp": "esp", "50": "esp", "ah": "ah", "51": "ah",
	"ipcomp": "ipcomp", "108": "ipcomp", "icmp": "icmp", "1": "icmp",
	"icmpv6": "icmp6", "ipv6-icmp": "icmp6", "58": "icmp6", "mh": "mh",
}

// commandOptions are long options of the iptables command that a rule
// may hold besides the options of [generalOptions]: iptables-restore
// takes them, they change nothing in the rule.
var commandOptions = setOf("--set-counters", "--ipv4", "--ipv6")

// toolOptions are options of the iptables command that iptables-restore
// takes in a rule although they are none of the rule's: this reader
// refuses them, iptables-save never prints them.
var toolOptions = setOf("--verbose", "--modprobe")

// optionOwners maps a long option (with its "--") to the match modules
// and targets that take it, matches first, then by name.
var optionOwners = map[string][]string{}

// optionTable turns the table of extensions' options into sets, and
// fills [optionOwners].
func optionTable(table map[string]string) map[string]map[string]bool {
	out := make(map[string]map[string]bool, len(table))
	for ext, opts := range table {
		set := map[string]bool{}
		for _, o := range strings.Fields(opts) {
			set["--"+o] = true
			optionOwners["--"+o] = append(optionOwners["--"+o], ext)
		}
		out[ext] = set
	}
	for _, owners := range optionOwners {
		sort.Slice(owners, func(i, j int) bool {
			if ti, tj := targetNames[owners[i]], targetNames[owners[j]]; ti != tj {
				return tj
			}
			return owners[i] < owners[j]
		})
	}
	return out
}

// extensionArg is how a rule loads ext: "-m NAME" or "-j NAME".
func extensionArg(ext string) string {
	if targetNames[ext] {
		return "-j " + ext
	}
	return "-m " + ext
}

// optionState follows, along a rule's options, the match modules and
// the target loaded so far, and the protocol given with "-p", to tell
// the options iptables-restore knows at that point.
type optionState struct {
	loaded   [8]string // the modules and the target loaded so far
	extra    []string  // more of them, rarely
	n        int
	protocol string // the value of -p, in lower case
}

func (s *optionState) load(ext string) {
	if s.n < len(s.loaded) {
		s.loaded[s.n] = ext
		s.n++
		return
	}
	s.extra = append(s.extra, ext)
}

// knows reports whether a module or target loaded so far takes the
// option; it loads the match of the protocol given with "-p" when it
// takes the option, as iptables-restore does.
func (s *optionState) knows(name string) bool {
	owners := optionOwners[name]
	if len(owners) == 0 {
		return false
	}
	for _, o := range owners {
		if s.loads(o) {
			return true
		}
	}
	if m := protocolMatches[s.protocol]; m != "" && slices.Contains(owners, m) {
		s.load(m)
		return true
	}
	return false
}

// loads reports whether the module or target ext is loaded so far.
func (s *optionState) loads(ext string) bool {
	return slices.Contains(s.loaded[:s.n], ext) || slices.Contains(s.extra, ext)
}

// checkLongOption returns why iptables-restore would refuse the long
// option name at this point of the rule, or "": an option no module or
// target takes, or one of a module or target the rule does not load
// before it. An abbreviation of a known option and an option joined to
// its value with "=" (which iptables-restore takes) and the options of
// the iptables command that are none of a rule's are refused as this
// reader does not take them.
func (s *optionState) checkLongOption(name string) string {
	if s.knows(name) || generalOptions[name] || commandOptions[name] {
		return ""
	}
	if toolOptions[name] {
		return fmt.Sprintf("option %q is an option of the iptables command, not of a rule, which this reader does not take", name)
	}
	if opt, val, ok := strings.Cut(name, "="); ok && opt != "" && (generalOptions[opt] || s.knows(opt)) {
		return fmt.Sprintf("option %q is joined to its value with \"=\", which this reader does not take (write %s %s)", clip(name), opt, clip(val))
	}
	if full := s.abbreviates(name); full != "" {
		return fmt.Sprintf("option %q is an abbreviation of %s, which this reader does not take (write %s)", clip(name), full, full)
	}
	owners := optionOwners[name]
	switch len(owners) {
	case 0:
		return fmt.Sprintf("unknown option %q, which iptables-restore refuses", clip(name))
	case 1:
		arg := extensionArg(owners[0])
		return fmt.Sprintf("%s: option of %s without %s before it, which iptables-restore refuses", name, arg, arg)
	}
	args := make([]string, len(owners))
	for i, o := range owners {
		args[i] = extensionArg(o)
	}
	return fmt.Sprintf("%s: option of %s without one of them before it, which iptables-restore refuses", name, orList(args))
}

// abbreviates returns the one option of the modules and target loaded so
// far, or of every rule, that name is the beginning of, or "".
func (s *optionState) abbreviates(name string) string {
	if len(name) < 4 {
		return ""
	}
	full := ""
	consider := func(o string) bool {
		if !strings.HasPrefix(o, name) {
			return true
		}
		if full != "" && full != o {
			full = ""
			return false
		}
		full = o
		return true
	}
	for o := range generalOptions {
		if strings.HasPrefix(o, "--") && !consider(o) {
			return ""
		}
	}
	exts := append(append([]string(nil), s.loaded[:s.n]...), s.extra...)
	if m := protocolMatches[s.protocol]; m != "" {
		exts = append(exts, m)
	}
	for _, e := range exts {
		for o := range extensionOptions[e] {
			if !consider(o) {
				return ""
			}
		}
	}
	return full
}

// orList writes names as "a, b or c".
func orList(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
