package nft

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/google/nftables"
)

var familyNames = map[nftables.TableFamily]string{
	nftables.TableFamilyIPv4:   "ip",
	nftables.TableFamilyIPv6:   "ip6",
	nftables.TableFamilyINet:   "inet",
	nftables.TableFamilyARP:    "arp",
	nftables.TableFamilyBridge: "bridge",
	nftables.TableFamilyNetdev: "netdev",
}

// FamilyName returns the name nft uses for a table family ("ip", "inet",
// ...), or "unknown".
func FamilyName(f nftables.TableFamily) string {
	if s, ok := familyNames[f]; ok {
		return s
	}
	return "unknown"
}

// ParseFamily returns the table family named s ("ip", "ip6", "inet", "arp",
// "bridge", "netdev").
func ParseFamily(s string) (nftables.TableFamily, bool) {
	for f, n := range familyNames {
		if n == s {
			return f, true
		}
	}
	return 0, false
}

// PolicyName returns "accept" or "drop" for a chain policy, or "unknown".
func PolicyName(p nftables.ChainPolicy) string {
	switch p {
	case nftables.ChainPolicyAccept:
		return "accept"
	case nftables.ChainPolicyDrop:
		return "drop"
	}
	return "unknown"
}

func parsePolicy(s string) (*nftables.ChainPolicy, bool) {
	var p nftables.ChainPolicy
	switch s {
	case "accept":
		p = nftables.ChainPolicyAccept
	case "drop":
		p = nftables.ChainPolicyDrop
	default:
		return nil, false
	}
	return &p, true
}

// hook numbers per family (linux/netfilter.h, netfilter_arp.h).
var inetHooks = []string{"prerouting", "input", "forward", "output", "postrouting", "ingress"}
var arpHooks = []string{"input", "output", "forward", "ingress"}
var netdevHooks = []string{"ingress", "egress"}

func hookTable(f nftables.TableFamily) []string {
	switch f {
	case nftables.TableFamilyARP:
		return arpHooks
	case nftables.TableFamilyNetdev:
		return netdevHooks
	}
	return inetHooks
}

// HookNum returns the kernel hook number of the hook named name in family
// f, as github.com/google/nftables expects it in [nftables.Chain.Hooknum].
func HookNum(f nftables.TableFamily, name string) (nftables.ChainHook, bool) {
	for i, n := range hookTable(f) {
		if n == name {
			return nftables.ChainHook(i), true
		}
	}
	return 0, false
}

// HookName returns the name nft prints for hook number h in family f, or
// "unknown".
func HookName(f nftables.TableFamily, h nftables.ChainHook) string {
	t := hookTable(f)
	if int(h) < len(t) {
		return t[h]
	}
	return "unknown"
}

type prioTag struct {
	val  int32
	name string
}

var stdPrios = []prioTag{{-300, "raw"}, {-150, "mangle"}, {-100, "dstnat"}, {0, "filter"}, {50, "security"}, {100, "srcnat"}}
var bridgePrios = []prioTag{{-300, "dstnat"}, {-200, "filter"}, {100, "out"}, {300, "srcnat"}}

// prioCompat is nft's std_prio_family_hook_compat.
func prioCompat(prio int32, f nftables.TableFamily, hook string) bool {
	if f == nftables.TableFamilyBridge {
		switch prio {
		case -300:
			return hook == "prerouting"
		case -200:
			return true
		case 100:
			return hook == "output"
		case 300:
			return hook == "postrouting"
		}
		return false
	}
	ipish := f == nftables.TableFamilyINet || f == nftables.TableFamilyIPv4 || f == nftables.TableFamilyIPv6
	switch prio {
	case 0:
		return ipish || f == nftables.TableFamilyARP || f == nftables.TableFamilyNetdev
	case -300, -150, 50:
		return ipish
	case -100:
		return ipish && hook == "prerouting"
	case 100:
		return ipish && hook == "postrouting"
	}
	return false
}

// PriorityText returns the form nft prints for priority p of a base chain
// of family f on hook (nft's prio2str): a standard name, a name with an
// offset of at most 10 ("dstnat - 10"), or the number.
func PriorityText(f nftables.TableFamily, hook string, p nftables.ChainPriority) string {
	tags := stdPrios
	if f == nftables.TableFamilyBridge {
		tags = bridgePrios
	}
	v := int64(p)
	for _, t := range tags {
		d := v - int64(t.val)
		if d >= -10 && d <= 10 {
			if !prioCompat(t.val, f, hook) {
				break
			}
			switch {
			case d > 0:
				return t.name + " + " + strconv.FormatInt(d, 10)
			case d < 0:
				return t.name + " - " + strconv.FormatInt(-d, 10)
			}
			return t.name
		}
	}
	return strconv.FormatInt(v, 10)
}

// priorityValue resolves a standard priority name for family f and hook.
func priorityValue(f nftables.TableFamily, hook, name string) (int32, bool) {
	tags := stdPrios
	if f == nftables.TableFamilyBridge {
		tags = bridgePrios
	}
	for _, t := range tags {
		if t.name == name && prioCompat(t.val, f, hook) {
			return t.val, true
		}
	}
	return 0, false
}

func newPriority(f nftables.TableFamily, hook string, v int32) *Priority {
	return &Priority{Value: nftables.ChainPriority(v), Text: PriorityText(f, hook, nftables.ChainPriority(v))}
}

// datatypes maps datatype names to github.com/google/nftables datatypes.
func datatypes(names []string) ([]nftables.SetDatatype, bool) {
	if len(names) == 0 {
		return nil, false
	}
	dts := nftables.ConcatSetTypeElements(nftables.SetDatatype{Name: strings.Join(names, " . ")})
	ok := true
	for _, d := range dts {
		if d.Name == "" {
			ok = false
		}
	}
	return dts, ok
}

// payloadTypes gives the datatype of payload fields ("proto field").
var payloadTypes = map[string]string{
	"ip saddr": "ipv4_addr", "ip daddr": "ipv4_addr", "ip protocol": "inet_proto", "ip dscp": "dscp",
	"ip ecn": "ecn", "ip version": "integer", "ip hdrlength": "integer", "ip length": "integer",
	"ip id": "integer", "ip frag-off": "integer", "ip ttl": "integer", "ip checksum": "integer",
	"ip6 saddr": "ipv6_addr", "ip6 daddr": "ipv6_addr", "ip6 nexthdr": "inet_proto", "ip6 dscp": "dscp",
	"ip6 ecn": "ecn", "ip6 version": "integer", "ip6 flowlabel": "integer", "ip6 length": "integer",
	"ip6 hoplimit": "integer",
	"tcp flags":    "tcp_flag", "icmp type": "icmp_type", "icmp code": "icmp_code",
	"icmpv6 type": "icmpv6_type", "icmpv6 code": "icmpv6_code",
	"ether saddr": "ether_addr", "ether daddr": "ether_addr", "ether type": "ether_type",
	"vlan type": "ether_type", "arp operation": "arp_op", "dccp type": "dccp_pkttype",
}

// payloadFields lists the header fields the text parser accepts.
var payloadFields = map[string][]string{
	"ip":      {"version", "hdrlength", "dscp", "ecn", "length", "id", "frag-off", "ttl", "protocol", "checksum", "saddr", "daddr"},
	"ip6":     {"version", "dscp", "ecn", "flowlabel", "length", "nexthdr", "hoplimit", "saddr", "daddr"},
	"tcp":     {"sport", "dport", "sequence", "ackseq", "doff", "reserved", "flags", "window", "checksum", "urgptr"},
	"udp":     {"sport", "dport", "length", "checksum"},
	"udplite": {"sport", "dport", "csumcov", "checksum"},
	"sctp":    {"sport", "dport", "vtag", "checksum"},
	"dccp":    {"sport", "dport", "type"},
	"th":      {"sport", "dport"},
	"icmp":    {"type", "code", "checksum", "id", "sequence", "gateway", "mtu"},
	"icmpv6":  {"type", "code", "checksum", "parameter-problem", "packet-too-big", "id", "sequence", "max-delay"},
	"ether":   {"saddr", "daddr", "type"},
	"vlan":    {"id", "dei", "cfi", "pcp", "type"},
	"arp":     {"htype", "ptype", "hlen", "plen", "operation"},
}

func isPayloadField(proto, field string) bool {
	for _, f := range payloadFields[proto] {
		if f == field {
			return true
		}
	}
	return false
}

// metaTypes gives the datatype of the meta keys the parser accepts.
var metaTypes = map[string]string{
	"length": "integer", "protocol": "ether_type", "priority": "classid", "mark": "mark",
	"iif": "iface_index", "iifname": "ifname", "iiftype": "iface_type", "oif": "iface_index",
	"oifname": "ifname", "oiftype": "iface_type", "skuid": "uid", "skgid": "gid", "nftrace": "integer",
	"rtclassid": "realm", "ibrname": "ifname", "obrname": "ifname", "pkttype": "pkt_type",
	"cpu": "integer", "iifgroup": "devgroup", "oifgroup": "devgroup", "cgroup": "integer",
	"nfproto": "nf_proto", "l4proto": "inet_proto", "secpath": "boolean", "iifkind": "string",
	"oifkind": "string", "random": "integer", "sdif": "iface_index", "sdifname": "ifname",
}

// ctTypes gives the datatype of the ct keys the parser accepts.
var ctTypes = map[string]string{
	"state": "ct_state", "direction": "ct_dir", "status": "ct_status", "mark": "mark",
	"expiration": "time", "helper": "string", "l3proto": "nf_proto", "protocol": "inet_proto",
	"proto-src": "inet_service", "proto-dst": "inet_service", "label": "ct_label", "bytes": "integer",
	"packets": "integer", "avgpkt": "integer", "zone": "integer", "event": "ct_event", "id": "integer",
	"saddr": "", "daddr": "", "secmark": "integer",
}

// ExprType returns the datatype name of a selector expression, or "" when
// it is not known (parts of a concatenation are joined with " . ").
func ExprType(e Expr) string {
	switch x := e.(type) {
	case *Payload:
		if t, ok := payloadTypes[x.Proto+" "+x.Field]; ok {
			return t
		}
		if x.Field == "sport" || x.Field == "dport" {
			return "inet_service"
		}
		return "integer"
	case *Meta:
		return metaTypes[x.Key]
	case *Ct:
		if x.Key == "saddr" || x.Key == "daddr" {
			switch x.Family {
			case "ip":
				return "ipv4_addr"
			case "ip6":
				return "ipv6_addr"
			}
			return ""
		}
		return ctTypes[x.Key]
	case *Fib:
		switch x.Result {
		case "type":
			return "fib_addrtype"
		case "oif":
			return "iface_index"
		case "oifname":
			return "ifname"
		}
	case *Numgen:
		return "integer"
	case *Binop:
		return ExprType(x.Left)
	case *Concat:
		parts := make([]string, len(x.Parts))
		for i, p := range x.Parts {
			parts[i] = ExprType(p)
		}
		return strings.Join(parts, " . ")
	}
	return ""
}

// ExprTypes returns the datatype names of the concatenated parts of e.
func ExprTypes(e Expr) []string {
	if c, ok := e.(*Concat); ok {
		out := make([]string, len(c.Parts))
		for i, p := range c.Parts {
			out[i] = ExprType(p)
		}
		return out
	}
	return []string{ExprType(e)}
}

// isBitmask reports whether a datatype is a bitmask type (matched with an
// implicit flag test).
func isBitmask(t string) bool {
	switch t {
	case "ct_state", "ct_status", "tcp_flag", "ct_event":
		return true
	}
	return false
}

// isQuoted reports whether nft prints values of datatype t quoted.
func isQuoted(t string) bool {
	switch t {
	case "ifname", "iface_index", "string":
		return true
	}
	return false
}

// perLine returns how many elements of a named set with key type keys nft
// prints per line (calculate_delim in nft's expression.c); 1 means one per
// line.
func perLine(keys []string) int {
	if len(keys) != 1 {
		return 1
	}
	switch keys[0] {
	case "nf_proto", "integer", "arp_op", "inet_proto", "inet_service", "tcp_flag", "dccp_pkttype",
		"mark", "iface_index", "classid", "uid", "gid", "ct_dir":
		return 5
	case "ipv4_addr", "ct_state", "ct_status", "pkt_type":
		return 2
	}
	return 1
}

// formatNumber renders a JSON number as nft prints a value of datatype t.
func formatNumber(n uint64, t string) string {
	if t == "mark" {
		s := strconv.FormatUint(n, 16)
		if len(s) < 8 {
			s = strings.Repeat("0", 8-len(s)) + s
		}
		return "0x" + s
	}
	return strconv.FormatUint(n, 10)
}

var errTime = errors.New("bad time value")

// parseTime reads nft's time format (1d2h3m4s5ms).
func parseTime(s string) (time.Duration, error) {
	if s == "" {
		return 0, errTime
	}
	var d time.Duration
	for s != "" {
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == 0 || i > 12 {
			return 0, errTime
		}
		n, _ := strconv.ParseUint(s[:i], 10, 64)
		s = s[i:]
		var unit time.Duration
		switch {
		case strings.HasPrefix(s, "ms"):
			unit, s = time.Millisecond, s[2:]
		case strings.HasPrefix(s, "d"):
			unit, s = 24*time.Hour, s[1:]
		case strings.HasPrefix(s, "h"):
			unit, s = time.Hour, s[1:]
		case strings.HasPrefix(s, "m"):
			unit, s = time.Minute, s[1:]
		case strings.HasPrefix(s, "s"):
			unit, s = time.Second, s[1:]
		default:
			return 0, errTime
		}
		d += time.Duration(n) * unit
		if d < 0 || d > 100*365*24*time.Hour {
			return 0, errTime
		}
	}
	return d, nil
}

// setFlagOrder is the order in which nft prints set flags.
var setFlagOrder = []string{"constant", "dynamic", "interval", "timeout"}

// canonSetFlags orders flags as nft prints them and reports an unknown one.
func canonSetFlags(flags []string) ([]string, string) {
	seen := map[string]bool{}
	for _, f := range flags {
		known := false
		for _, k := range setFlagOrder {
			if f == k {
				known = true
			}
		}
		if !known {
			return nil, f
		}
		seen[f] = true
	}
	var out []string
	for _, k := range setFlagOrder {
		if seen[k] {
			out = append(out, k)
		}
	}
	return out, ""
}

var natFlagOrder = []string{"random", "fully-random", "persistent"}

func canonNATFlags(flags []string) ([]string, string) {
	seen := map[string]bool{}
	for _, f := range flags {
		ok := false
		for _, k := range natFlagOrder {
			ok = ok || f == k
		}
		if !ok {
			return nil, f
		}
		seen[f] = true
	}
	var out []string
	for _, k := range natFlagOrder {
		if seen[k] {
			out = append(out, k)
		}
	}
	return out, ""
}

var logFlagOrder = []string{"all", "tcp sequence", "tcp options", "ip options", "skuid", "ether"}

func canonLogFlags(flags []string) ([]string, string) {
	seen := map[string]bool{}
	for _, f := range flags {
		ok := false
		for _, k := range logFlagOrder {
			ok = ok || f == k
		}
		if !ok {
			return nil, f
		}
		seen[f] = true
	}
	if seen["all"] {
		return []string{"all"}, ""
	}
	var out []string
	for _, k := range logFlagOrder {
		if seen[k] {
			out = append(out, k)
		}
	}
	return out, ""
}

// canonReject clears the type and code of a reject that nft prints as a
// plain `reject` in a table of family f.
func canonReject(r *Reject, f nftables.TableFamily) {
	if r.Code != "port-unreachable" {
		return
	}
	if r.Type == "icmpx" || r.Type == "icmp" && f == nftables.TableFamilyIPv4 ||
		r.Type == "icmpv6" && f == nftables.TableFamilyIPv6 {
		r.Type, r.Code = "", ""
	}
}

var logLevels = []string{"emerg", "alert", "crit", "err", "warn", "notice", "info", "debug", "audit"}

func isLogLevel(s string) bool {
	for _, l := range logLevels {
		if l == s {
			return true
		}
	}
	return false
}

var verdictKinds = map[string]bool{"accept": true, "drop": true, "continue": true, "return": true, "jump": true, "goto": true}

// reserved are words of nft's grammar that are never constants of an
// unknown datatype: meeting one where a constant is expected means the
// statement is one the package does not model.
var reserved = map[string]bool{
	"map": true, "vmap": true, "set": true, "mod": true, "seed": true, "offset": true, "jhash": true,
	"symhash": true, "numgen": true, "meta": true, "ct": true, "fib": true, "rt": true, "socket": true,
	"osf": true, "at": true, "with": true, "to": true, "over": true, "burst": true, "comment": true,
	"counter": true, "log": true, "limit": true, "reject": true, "accept": true, "drop": true,
	"return": true, "jump": true, "goto": true, "continue": true, "queue": true, "masquerade": true,
	"redirect": true, "notrack": true, "update": true, "add": true, "delete": true, "dup": true,
	"fwd": true, "synproxy": true, "flow": true, "xt": true, "option": true, "by": true, "typeof": true,
	"type": true, "timeout": true, "expires": true, "quota": true, "tproxy": true, "ipsec": true,
	"exthdr": true, "hbh": true, "rt0": true, "frag": true, "dst": true, "mh": true, "srh": true,
}

// validValue reports whether text (a word, or a quoted string when quoted
// is set) can be a constant of datatype t as nft prints it. Unknown
// datatypes accept anything but reserved words.
func validValue(text string, quoted bool, t string) bool {
	if quoted {
		return t == "" || isQuoted(t)
	}
	if text == "" || reserved[text] {
		return false
	}
	single := func(s string) bool {
		switch t {
		case "ipv4_addr":
			a, err := netip.ParseAddr(s)
			return err == nil && a.Is4()
		case "ipv6_addr":
			a, err := netip.ParseAddr(s)
			return err == nil && a.Is6()
		case "inet_service", "integer", "mark", "uid", "gid", "time", "iface_index", "realm", "devgroup":
			return isNumber(s)
		}
		return true
	}
	switch t {
	case "ipv4_addr", "ipv6_addr":
		if a, l, ok := strings.Cut(text, "/"); ok {
			n, err := strconv.Atoi(l)
			return err == nil && n >= 0 && n <= 128 && single(a)
		}
		if lo, hi, ok := strings.Cut(text, "-"); ok {
			return single(lo) && single(hi)
		}
		return single(text)
	case "inet_service", "integer", "mark", "uid", "gid":
		if lo, hi, ok := strings.Cut(text, "-"); ok {
			return single(lo) && single(hi)
		}
		return single(text)
	case "ifname", "string":
		return false
	case "iface_index":
		return isNumber(text)
	}
	return true
}

// isNumber reports whether s is a decimal or 0x-prefixed hexadecimal
// number of at most 64 bits.
func isNumber(s string) bool {
	hex := strings.HasPrefix(s, "0x")
	if hex {
		s = s[2:]
	}
	if s == "" || len(s) > 20 || hex && len(s) > 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= '0' && c <= '9' || hex && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			continue
		}
		return false
	}
	if !hex && len(s) == 20 {
		_, err := strconv.ParseUint(s, 10, 64)
		return err == nil
	}
	return true
}

var rejectCodes = map[string][]string{
	"icmp":   {"net-unreachable", "host-unreachable", "prot-unreachable", "port-unreachable", "frag-needed", "net-prohibited", "host-prohibited", "admin-prohibited"},
	"icmpv6": {"no-route", "admin-prohibited", "addr-unreachable", "port-unreachable", "policy-fail", "reject-route"},
	"icmpx":  {"port-unreachable", "admin-prohibited", "no-route", "host-unreachable"},
}

func validRejectCode(typ, code string) bool {
	for _, c := range rejectCodes[typ] {
		if c == code {
			return true
		}
	}
	return isNumber(code)
}
