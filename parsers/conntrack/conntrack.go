package conntrack

import (
	"bytes"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/proxyscan/proxyscan/parsers"
)

// MaxLineLength is the longest input line the parser accepts.
const MaxLineLength = 64 << 10

const maxErrors = 10

// Dump is a `conntrack -L` listing in input order.
type Dump struct {
	// Extended reports the `-o extended` form (lines start with the
	// layer-3 protocol).
	Extended bool    `json:"extended,omitempty"`
	Flows    []*Flow `json:"flows"`
	// Shown is the count of the "N flow entries have been shown" trailer
	// (printed on stderr), nil when absent; Version is that line's
	// conntrack-tools version.
	Shown   *int   `json:"shown,omitempty"`
	Version string `json:"version,omitempty"`
}

// Attr is a key=value item the model does not name.
type Attr struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Flow is one conntrack entry.
type Flow struct {
	// L3 and L3Num are the layer-3 protocol of the extended form ("ipv4" 2,
	// "ipv6" 10); empty otherwise.
	L3    string `json:"l3,omitempty"`
	L3Num int    `json:"l3Num,omitempty"`
	// Proto and ProtoNum are the layer-4 protocol ("tcp" 6, "udp" 17,
	// "sctp" 132, "icmp" 1, "icmpv6" 58, "unknown" N).
	Proto    string `json:"proto"`
	ProtoNum int    `json:"protoNum"`
	// Timeout is the remaining lifetime in seconds.
	Timeout int `json:"timeout"`
	// State is the protocol state (TCP, SCTP, DCCP), empty otherwise.
	State string `json:"state,omitempty"`
	Orig  Tuple  `json:"orig"`
	Reply Tuple  `json:"reply"`
	// Status flags as printed.
	Unreplied bool `json:"unreplied,omitempty"`
	Assured   bool `json:"assured,omitempty"`
	Offload   bool `json:"offload,omitempty"`
	HWOffload bool `json:"hwOffload,omitempty"`
	// Mark is the connection mark (HasMark: printed).
	Mark    uint32 `json:"mark,omitempty"`
	HasMark bool   `json:"hasMark,omitempty"`
	Secctx  string `json:"secctx,omitempty"`
	// Zone is the conntrack zone (HasZone: printed).
	Zone    uint16 `json:"zone,omitempty"`
	HasZone bool   `json:"hasZone,omitempty"`
	Use     int    `json:"use"`
	HasUse  bool   `json:"hasUse,omitempty"`
	// ID is the entry id of `-o id`.
	ID    uint32 `json:"id,omitempty"`
	HasID bool   `json:"hasID,omitempty"`
	// Extra are other key=value items (delta-time, helper, labels, …) in
	// input order; they print before use=.
	Extra []Attr      `json:"extra,omitempty"`
	Pos   parsers.Pos `json:"pos"`
	Raw   string      `json:"raw"`
}

// Tuple is one direction of a flow.
type Tuple struct {
	Src   netip.Addr `json:"src"`
	Dst   netip.Addr `json:"dst"`
	Sport uint16     `json:"sport,omitempty"`
	Dport uint16     `json:"dport,omitempty"`
	// ICMP fields (type=, code=, id=); HasICMP reports that they were
	// printed.
	Type    uint8  `json:"type,omitempty"`
	Code    uint8  `json:"code,omitempty"`
	ICMPID  uint16 `json:"icmpID,omitempty"`
	HasICMP bool   `json:"hasICMP,omitempty"`
	// HasPorts reports that sport= and dport= were printed.
	HasPorts bool `json:"hasPorts,omitempty"`
	// Extra are other per-tuple items (srckey=/dstkey= of GRE, …).
	Extra []Attr `json:"extra,omitempty"`
}

// OrigDst is the destination the client addressed: the Service VIP and
// port of a NATed Service flow.
func (f *Flow) OrigDst() netip.AddrPort { return netip.AddrPortFrom(f.Orig.Dst, f.Orig.Dport) }

// ReplySrc is where replies come from: the endpoint a DNATed flow was sent
// to.
func (f *Flow) ReplySrc() netip.AddrPort { return netip.AddrPortFrom(f.Reply.Src, f.Reply.Sport) }

// IsDNAT reports whether the destination was rewritten: the reply source
// is not the original destination (address or port).
func (f *Flow) IsDNAT() bool { return f.ReplySrc() != f.OrigDst() }

// IsSNAT reports whether the source was rewritten: the reply destination
// is not the original source (masquerade).
func (f *Flow) IsSNAT() bool {
	return netip.AddrPortFrom(f.Reply.Dst, f.Reply.Dport) != netip.AddrPortFrom(f.Orig.Src, f.Orig.Sport)
}

// NATed returns the flows whose destination was rewritten.
func (d *Dump) NATed() []*Flow {
	var out []*Flow
	for _, f := range d.Flows {
		if f.IsDNAT() {
			out = append(out, f)
		}
	}
	return out
}

var l3Nums = map[string]int{"ipv4": 2, "ipv6": 10}

var protoNums = map[string]int{"icmp": 1, "igmp": 2, "tcp": 6, "udp": 17, "dccp": 33, "gre": 47, "icmpv6": 58, "sctp": 132, "udplite": 136}

func quoteShort(s string) string {
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return strconv.Quote(s)
}

// Parse reads `conntrack -L` output, with or without `-o extended`, and
// the "flow entries have been shown" line if it was captured too (then
// the count must match).
func Parse(name string, data []byte) (*Dump, error) {
	d := &Dump{Flows: []*Flow{}}
	var errs parsers.ErrorList
	n := 0
	form := -1 // 0 plain, 1 extended
	var trailerPos parsers.Pos
	for len(data) > 0 && len(errs) < maxErrors {
		n++
		i := bytes.IndexByte(data, '\n')
		var lb []byte
		if i < 0 {
			lb, data = data, nil
		} else {
			lb, data = data[:i], data[i+1:]
		}
		pos := parsers.Pos{File: name, Line: n}
		if len(lb) > MaxLineLength {
			return nil, parsers.Errorf(pos, "line too long (%d bytes, limit %d)", len(lb), MaxLineLength)
		}
		l := string(bytes.TrimSuffix(lb, []byte("\r")))
		if strings.TrimSpace(l) == "" {
			continue
		}
		if strings.HasPrefix(l, "conntrack v") {
			ver, cnt, msg := parseTrailer(l)
			if msg != "" {
				errs.Add(pos, "%s", msg)
				continue
			}
			if d.Shown != nil {
				errs.Add(pos, "second \"flow entries have been shown\" line")
				continue
			}
			d.Version, d.Shown, trailerPos = ver, &cnt, pos
			continue
		}
		if d.Shown != nil {
			errs.Add(pos, "flow after the \"flow entries have been shown\" line")
			continue
		}
		f, msg := parseFlow(l)
		if msg != "" {
			errs.Add(pos, "%s", msg)
			continue
		}
		ext := 0
		if f.L3 != "" {
			ext = 1
		}
		if form >= 0 && ext != form {
			errs.Add(pos, "mixes the plain and the -o extended form")
			continue
		}
		form = ext
		f.Pos, f.Raw = pos, l
		d.Flows = append(d.Flows, f)
	}
	if d.Shown != nil && *d.Shown != len(d.Flows) && len(errs) == 0 {
		errs.Add(trailerPos, "%d flow entries shown, but %d listed (truncated?)", *d.Shown, len(d.Flows))
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	d.Extended = form == 1
	return d, nil
}

func parseTrailer(l string) (string, int, string) {
	// conntrack v1.4.7 (conntrack-tools): 9 flow entries have been shown.
	rest := strings.TrimPrefix(l, "conntrack v")
	ver, rest, ok := strings.Cut(rest, " (conntrack-tools): ")
	num, tail, ok2 := strings.Cut(rest, " ")
	if !ok || !ok2 || tail != "flow entries have been shown." {
		return "", 0, "bad trailer line " + quoteShort(l)
	}
	cnt, err := strconv.ParseInt(num, 10, 32)
	if err != nil || cnt < 0 {
		return "", 0, "bad flow count " + strconv.Quote(num)
	}
	return ver, int(cnt), ""
}

func parseFlow(l string) (*Flow, string) {
	f := strings.Fields(l)
	fl := &Flow{}
	if _, ok := l3Nums[f[0]]; !ok && protoNums[f[0]] == 0 && f[0] != "unknown" {
		return nil, "expected a flow (ipv4/ipv6, tcp, udp, …), found " + quoteShort(l)
	}
	if len(f) < 3 {
		return nil, "truncated flow " + quoteShort(l)
	}
	if num, ok := l3Nums[f[0]]; ok {
		n, err := strconv.Atoi(f[1])
		if err != nil || n != num {
			return nil, "bad layer-3 protocol number " + strconv.Quote(f[1]) + " for " + f[0]
		}
		fl.L3, fl.L3Num = f[0], n
		f = f[2:]
		if len(f) < 3 {
			return nil, "truncated flow " + quoteShort(l)
		}
	}
	fl.Proto = f[0]
	n, err := strconv.ParseUint(f[1], 10, 8)
	if err != nil {
		return nil, "bad protocol number " + strconv.Quote(f[1])
	}
	fl.ProtoNum = int(n)
	if want, ok := protoNums[fl.Proto]; ok && want != fl.ProtoNum {
		return nil, fmt.Sprintf("protocol %s with number %d, want %d", fl.Proto, fl.ProtoNum, want)
	} else if !ok && fl.Proto != "unknown" {
		return nil, "unknown protocol " + strconv.Quote(fl.Proto)
	}
	t, err := strconv.ParseUint(f[2], 10, 32)
	if err != nil {
		return nil, "bad timeout " + strconv.Quote(f[2])
	}
	fl.Timeout = int(t)
	f = f[3:]
	if len(f) > 0 && !strings.Contains(f[0], "=") && !strings.HasPrefix(f[0], "[") {
		fl.State, f = f[0], f[1:]
	}
	// Tuples: the first src= starts the original tuple, the second the
	// reply tuple.
	dir := 0 // 0 none yet, 1 orig, 2 reply, 3 after reply
	cur := &fl.Orig
	seen := map[string]bool{}
	for _, tok := range f {
		if strings.HasPrefix(tok, "[") {
			switch tok {
			case "[UNREPLIED]":
				fl.Unreplied = true
			case "[ASSURED]":
				fl.Assured = true
			case "[OFFLOAD]":
				fl.Offload = true
			case "[HW_OFFLOAD]":
				fl.HWOffload = true
			default:
				return nil, "unknown flag " + strconv.Quote(tok)
			}
			continue
		}
		k, v, ok := strings.Cut(tok, "=")
		if !ok {
			return nil, "unexpected " + strconv.Quote(tok)
		}
		if k == "src" {
			switch dir {
			case 0:
				dir, cur = 1, &fl.Orig
			case 1:
				if msg := checkTuple(seen); msg != "" {
					return nil, "original tuple: " + msg
				}
				dir, cur = 2, &fl.Reply
				seen = map[string]bool{}
			default:
				return nil, "third tuple in flow"
			}
		}
		tupleKey := k == "src" || k == "dst" || k == "sport" || k == "dport" || k == "type" || k == "code" || (k == "id" && cur != nil && cur.HasICMP && !seen["id"])
		if tupleKey && dir >= 1 && dir <= 2 {
			if seen[k] {
				return nil, "repeated " + k + "= in a tuple"
			}
			seen[k] = true
			if msg := setTuple(cur, k, v); msg != "" {
				return nil, msg
			}
			continue
		}
		if dir == 0 {
			return nil, strconv.Quote(tok) + " before the original tuple"
		}
		if (k == "srckey" || k == "dstkey") && dir <= 2 {
			cur.Extra = append(cur.Extra, Attr{k, v})
			continue
		}
		if dir == 2 {
			if msg := checkTuple(seen); msg != "" {
				return nil, "reply tuple: " + msg
			}
		}
		if dir <= 2 {
			dir = 3 // flow-level items end the tuples
		}
		var err error
		switch k {
		case "mark":
			var m uint64
			m, err = strconv.ParseUint(v, 10, 32)
			fl.Mark, fl.HasMark = uint32(m), true
		case "zone":
			var z uint64
			z, err = strconv.ParseUint(v, 10, 16)
			fl.Zone, fl.HasZone = uint16(z), true
		case "use":
			var u uint64
			u, err = strconv.ParseUint(v, 10, 31)
			fl.Use, fl.HasUse = int(u), true
		case "id":
			var x uint64
			x, err = strconv.ParseUint(v, 10, 32)
			fl.ID, fl.HasID = uint32(x), true
		case "secctx":
			fl.Secctx = v
		default:
			fl.Extra = append(fl.Extra, Attr{k, v})
		}
		if err != nil {
			return nil, "bad " + k + " " + strconv.Quote(v)
		}
	}
	if dir == 2 {
		if msg := checkTuple(seen); msg != "" {
			return nil, "reply tuple: " + msg
		}
	}
	if !fl.Orig.Src.IsValid() || !fl.Orig.Dst.IsValid() {
		return nil, "flow without an original tuple (truncated?)"
	}
	if !fl.Reply.Src.IsValid() || !fl.Reply.Dst.IsValid() {
		return nil, "flow without a reply tuple (truncated?)"
	}
	if fl.Orig.Src.Is4() != fl.Reply.Src.Is4() || fl.Orig.Src.Is4() != fl.Orig.Dst.Is4() || fl.Reply.Src.Is4() != fl.Reply.Dst.Is4() {
		return nil, "flow mixes IPv4 and IPv6 addresses"
	}
	if fl.L3 != "" && (fl.L3 == "ipv4") != fl.Orig.Src.Is4() {
		return nil, "layer-3 protocol " + fl.L3 + " with addresses of the other family"
	}
	return fl, ""
}

// checkTuple rejects tuples that conntrack cannot print: ports and ICMP
// fields together, or half of either.
func checkTuple(seen map[string]bool) string {
	ports := seen["sport"] || seen["dport"]
	icmp := seen["type"] || seen["code"] || seen["id"]
	switch {
	case ports && icmp:
		return "mixes ports and ICMP fields"
	case ports && !(seen["sport"] && seen["dport"]):
		return "sport= without dport= or the reverse (truncated?)"
	case icmp && !(seen["type"] && seen["code"] && seen["id"]):
		return "incomplete ICMP fields (type=, code=, id=)"
	}
	return ""
}

func setTuple(t *Tuple, k, v string) string {
	switch k {
	case "src", "dst":
		a, err := netip.ParseAddr(v)
		if err != nil || a.Zone() != "" || a.Is4In6() {
			return "bad address " + strconv.Quote(v)
		}
		if k == "src" {
			t.Src = a
		} else {
			t.Dst = a
		}
	case "sport", "dport", "id":
		n, err := strconv.ParseUint(v, 10, 16)
		if err != nil || (len(v) > 1 && v[0] == '0') {
			return "bad " + k + " " + strconv.Quote(v)
		}
		switch k {
		case "sport":
			t.Sport, t.HasPorts = uint16(n), true
		case "dport":
			t.Dport, t.HasPorts = uint16(n), true
		default:
			t.ICMPID = uint16(n)
		}
	case "type", "code":
		n, err := strconv.ParseUint(v, 10, 8)
		if err != nil || (len(v) > 1 && v[0] == '0') {
			return "bad " + k + " " + strconv.Quote(v)
		}
		t.HasICMP = true
		if k == "type" {
			t.Type = uint8(n)
		} else {
			t.Code = uint8(n)
		}
	}
	return ""
}

// Format prints d as conntrack-tools 1.4.7 does (libnetfilter_conntrack's
// default output), with the trailer line when d has one.
func Format(d *Dump) []byte {
	var b bytes.Buffer
	for _, f := range d.Flows {
		var items []string
		if f.L3 != "" {
			items = append(items, fmt.Sprintf("%-8s %d", f.L3, f.L3Num))
		}
		items = append(items, fmt.Sprintf("%-8s %d", f.Proto, f.ProtoNum), strconv.Itoa(f.Timeout))
		if f.State != "" {
			items = append(items, f.State)
		}
		items = append(items, tuple(f.Orig)...)
		if f.Unreplied {
			items = append(items, "[UNREPLIED]")
		}
		items = append(items, tuple(f.Reply)...)
		if f.Assured {
			items = append(items, "[ASSURED]")
		}
		if f.Offload {
			items = append(items, "[OFFLOAD]")
		}
		if f.HWOffload {
			items = append(items, "[HW_OFFLOAD]")
		}
		if f.HasMark {
			items = append(items, "mark="+strconv.FormatUint(uint64(f.Mark), 10))
		}
		if f.Secctx != "" {
			items = append(items, "secctx="+f.Secctx)
		}
		if f.HasZone {
			items = append(items, "zone="+strconv.Itoa(int(f.Zone)))
		}
		for _, a := range f.Extra {
			items = append(items, a.Key+"="+a.Value)
		}
		if f.HasUse {
			items = append(items, "use="+strconv.Itoa(f.Use))
		}
		if f.HasID {
			items = append(items, "id="+strconv.FormatUint(uint64(f.ID), 10))
		}
		b.WriteString(strings.Join(items, " ") + "\n")
	}
	if d.Shown != nil {
		fmt.Fprintf(&b, "conntrack v%s (conntrack-tools): %d flow entries have been shown.\n", d.Version, *d.Shown)
	}
	return b.Bytes()
}

func tuple(t Tuple) []string {
	out := []string{"src=" + t.Src.String(), "dst=" + t.Dst.String()}
	if t.HasICMP {
		out = append(out, "type="+strconv.Itoa(int(t.Type)), "code="+strconv.Itoa(int(t.Code)), "id="+strconv.Itoa(int(t.ICMPID)))
	} else if t.HasPorts {
		out = append(out, "sport="+strconv.Itoa(int(t.Sport)), "dport="+strconv.Itoa(int(t.Dport)))
	}
	for _, a := range t.Extra {
		out = append(out, a.Key+"="+a.Value)
	}
	return out
}
