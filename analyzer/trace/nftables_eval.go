package trace

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/proxyscan/proxyscan/parsers/nft"
)

// Outcomes of one rule for one branch.
const (
	rNoMatch  = iota // a match failed: next rule
	rContinue        // every statement ran, no verdict: next rule
	rAccept          // accept, or a NAT statement
	rDrop
	rReject
	rReturn
	rJump
	rGoto
)

// ruleOut is one branch's outcome of a rule.
type ruleOut struct {
	st     *nftState
	kind   int
	target string
}

func (o ruleOut) kindName() string {
	if o.kind == rGoto {
		return "goto"
	}
	return "jump"
}

// branch is one branch's outcome of a statement: it passed (next
// statement), or ended the rule with end.
type branch struct {
	st     *nftState
	pass   bool
	end    int
	target string
	note   string
	warn   string
}

// evalRule evaluates the statements of r left to right for st, forking
// where a statement does (numgen, an affinity set).
func (w *nftWalk) evalRule(st *nftState, t *nftTable, c *nft.Chain, r *nft.Rule) []ruleOut {
	// Fast path: statements that give one outcome each, up to the first
	// that forks.
	var notes, warns []string
	i := 0
	var forked []branch
	for ; i < len(r.Stmts); i++ {
		bs := w.evalStmt(st, t, r.Stmts[i])
		if len(bs) != 1 {
			forked = bs
			break
		}
		b := &bs[0]
		if b.note != "" {
			notes = append(notes, b.note)
		}
		if b.warn != "" {
			warns = append(warns, b.warn)
			b.st.warn(b.warn)
		}
		switch {
		case b.pass:
			st = b.st
			continue
		case b.end == rNoMatch:
			if len(warns) > 0 {
				// A match the tracer cannot decide: shown, assumed not
				// to match.
				w.step(b.st, t, c, r, notes, warns)
			}
			return w.out1(ruleOut{st: b.st, kind: rNoMatch})
		default:
			w.step(b.st, t, c, r, notes, warns)
			return w.out1(ruleOut{st: b.st, kind: b.end, target: b.target})
		}
	}
	if i == len(r.Stmts) {
		w.step(st, t, c, r, notes, warns)
		return w.out1(ruleOut{st: st, kind: rContinue})
	}
	// Statement i forked: its branches go on one by one.
	return w.runForks(st, t, c, r, i, forked, notes, warns, carve(&w.outs, len(forked)))
}

// runForks goes on with the statements of rule r from statement i for
// st, bs the branches of statement i when it was evaluated (nil when
// not), and appends their outcomes to out.
func (w *nftWalk) runForks(st *nftState, t *nftTable, c *nft.Chain, r *nft.Rule, i int, bs []branch, notes, warns []string, out []ruleOut) []ruleOut {
	if i == len(r.Stmts) {
		w.step(st, t, c, r, notes, warns)
		return append(out, ruleOut{st: st, kind: rContinue})
	}
	if bs == nil {
		bs = w.evalStmt(st, t, r.Stmts[i])
	}
	for _, b := range bs {
		n, ws := notes, warns
		if b.note != "" {
			n = append(n[:len(n):len(n)], b.note)
		}
		if b.warn != "" {
			ws = append(ws[:len(ws):len(ws)], b.warn)
			b.st.warn(b.warn)
		}
		switch {
		case b.pass:
			out = w.runForks(b.st, t, c, r, i+1, nil, n, ws, out)
		case b.end == rNoMatch:
			if len(ws) > 0 {
				w.step(b.st, t, c, r, n, ws)
			}
			out = append(out, ruleOut{st: b.st, kind: rNoMatch})
		default:
			w.step(b.st, t, c, r, n, ws)
			out = append(out, ruleOut{st: b.st, kind: b.end, target: b.target})
		}
	}
	return out
}

// nvals returns an empty slice of capacity n carved from the walk's
// arena (the values of a concatenation, read during the walk only).
func (w *nftWalk) nvals(n int) []nval { return carve(&w.vals, n) }

// variants returns an empty slice of capacity n carved from the walk's
// arena (the values of a key, read during the walk only).
func (w *nftWalk) variants(n int) []variant { return carve(&w.vars, n) }

// out1 returns o as a slice of one, the walk's own: it is read before
// the walk evaluates the next rule (as a range over the outcomes of a
// rule reads its one element before the loop's body runs).
func (w *nftWalk) out1(o ruleOut) []ruleOut {
	w.oneOut[0] = o
	return w.oneOut[:]
}

// carve returns an empty slice of capacity n carved from the end of
// *arena, starting a new chunk when it has less room: appending to the
// slice past n copies it out, and never writes over its neighbours.
func carve[T any](arena *[]T, n int) []T {
	if cap(*arena)-len(*arena) < n {
		*arena = make([]T, 0, max(256, n))
	}
	i := len(*arena)
	*arena = (*arena)[:i+n]
	return (*arena)[i : i : i+n]
}

// carveOne returns v as a slice of one carved from *arena.
func carveOne[T any](arena *[]T, v T) []T {
	s := carve(arena, 1)[:1]
	s[0] = v
	return s
}

// step records rule r as met by st.
func (w *nftWalk) step(st *nftState, t *nftTable, c *nft.Chain, r *nft.Rule, notes, warns []string) {
	st.nsteps++
	if w.opts.Summary {
		return
	}
	pos := r.Pos()
	s := Step{Table: t.label, Chain: c.Name, Rule: r.Raw, File: pos.File, Line: pos.Line, Path: pos.Path,
		Note: strings.Join(notes, "; ")}
	if len(warns) > 0 {
		s.Warning = strings.Join(warns, "; ")
	}
	st.steps = append(st.steps, s)
}

// one1 returns b as a slice of one, the walk's own: it is read before
// the walk evaluates the next statement (the slices are never appended
// to in place: their capacity is their length). A walk's branches and
// outcomes of one are most of them, and the walk is on its caller's
// stack: writing them there spares the arena's room (the stores still
// pass the collector's write barriers while it marks: the compiler does
// not know where w is).
func (w *nftWalk) one1(b branch) []branch {
	w.oneBranch[0] = b
	return w.oneBranch[:]
}

func (w *nftWalk) passed(st *nftState) []branch { return w.one1(branch{st: st, pass: true}) }
func (w *nftWalk) ended(st *nftState, kind int) []branch {
	return w.one1(branch{st: st, end: kind})
}
func (w *nftWalk) unknown(st *nftState, why string) []branch {
	return w.one1(branch{st: st, end: rNoMatch, warn: why})
}

func (w *nftWalk) evalStmt(st *nftState, t *nftTable, s nft.Stmt) []branch {
	switch s := s.(type) {
	case *nft.Match:
		return w.evalMatch(st, t, s)
	case *nft.Verdict:
		return w.verdictBranch(st, s)
	case *nft.Vmap:
		return w.evalVmap(st, t, s)
	case *nft.NAT:
		return w.evalNAT(st, t, s)
	case *nft.Mangle:
		return w.evalMangle(st, s)
	case *nft.Counter, *nft.Log:
		return w.passed(st)
	case *nft.SetUpdate:
		if st.updated == nil {
			st.updated = map[string]bool{}
		}
		st.updated[s.Set] = true
		return w.passed(st)
	case *nft.Reject:
		return w.ended(st, rReject)
	case *nft.Limit:
		return w.unknown(st, "not modelled: "+nft.StmtString(s)+" (rate limits depend on traffic); assumed not to match")
	case *nft.Notrack:
		return []branch{{st: st, pass: true, warn: "not modelled: notrack (the connection would not be NATed)"}}
	case *nft.Unsupported:
		return w.unknown(st, "not modelled: "+nft.StmtString(s)+"; assumed not to match")
	}
	return w.unknown(st, "not modelled: "+nft.StmtString(s)+"; assumed not to match")
}

func (w *nftWalk) verdictBranch(st *nftState, v *nft.Verdict) []branch {
	switch v.Kind {
	case "accept":
		return w.ended(st, rAccept)
	case "drop":
		return w.ended(st, rDrop)
	case "return":
		return w.ended(st, rReturn)
	case "continue":
		return w.passed(st)
	case "jump":
		return w.one1(branch{st: st, end: rJump, target: v.Target})
	case "goto":
		return w.one1(branch{st: st, end: rGoto, target: v.Target})
	}
	return w.unknown(st, "not modelled: verdict "+v.Kind+"; assumed not to match")
}

// ---- values ----

// Kinds of value a selector yields.
const (
	kAddr = iota
	kNum
	kStr
	kFlags // ct state, ct status: a set of flag names
)

// nval is the value of a selector for the packet.
type nval struct {
	kind  int
	addr  netip.Addr
	num   uint64
	str   string
	flags []string
}

// variant is one value of a key (a concatenation, or a numgen draw) with
// its share of the branches.
type variant struct {
	vals   []nval
	weight float64
	note   string
}

// errAbsent reports a selector on a header the packet does not have
// (`tcp dport` of a UDP packet, `ip saddr` of an IPv6 packet): the match
// fails, as in the kernel.
type selResult struct {
	// isOne marks a single value (one), kept out of vars to spare the
	// allocations of the common case.
	isOne  bool
	one    nval
	vars   []variant
	absent bool
	why    string // not modelled
}

func one(v nval) selResult { return selResult{isOne: true, one: v} }

// expand moves a single value into vars.
func (r *selResult) expand() {
	if r.isOne {
		r.vars = []variant{{vals: []nval{r.one}, weight: 1}}
		r.isOne = false
	}
}

// Flag values the walk reads only, shared by every packet.
var (
	ctFlagsNew   = []string{"new"}
	ctStatusBoth = []string{"dnat", "snat"}
)

var protoNums = map[string]uint64{"icmp": 1, "igmp": 2, "tcp": 6, "udp": 17, "ipv6-icmp": 58, "icmpv6": 58, "sctp": 132, "udplite": 136, "gre": 47, "esp": 50, "ah": 51}

// protoNum returns the number of the protocol of a packet (0 for none).
func protoNum(proto string) uint64 {
	switch proto {
	case "tcp":
		return 6
	case "udp":
		return 17
	}
	return protoNums[proto]
}

// Outcomes of scalar.
const (
	sOne    = iota // one value
	sAbsent        // a header the packet does not have
	sWhy           // not modelled: why says what
	sNot           // not a selector of one value: see evalKey
)

// scalar sets *v to the value of e for st when e selects one value (a
// header field, a meta, ct or fib key, a bitwise operation on one), as
// evalKey would return it, without the room evalKey's result keeps for
// several values; it returns sNot for the expressions it leaves to
// evalKey.
func (w *nftWalk) scalar(st *nftState, e nft.Expr, v *nval) (res int, why string) {
	switch e := e.(type) {
	case *nft.Payload:
		return payloadVal(st, e, v)
	case *nft.Meta:
		switch e.Key {
		case "l4proto", "protocol":
			if e.Key == "protocol" {
				if st.is4() {
					*v = nval{kind: kStr, str: "ip"}
					return sOne, ""
				}
				*v = nval{kind: kStr, str: "ip6"}
				return sOne, ""
			}
			*v = nval{kind: kNum, num: protoNum(st.proto)}
			return sOne, ""
		case "mark":
			*v = nval{kind: kNum, num: uint64(st.mark)}
			return sOne, ""
		case "nfproto":
			if st.is4() {
				*v = nval{kind: kStr, str: "ipv4"}
				return sOne, ""
			}
			*v = nval{kind: kStr, str: "ipv6"}
			return sOne, ""
		case "iifname":
			if st.hook == "output" || st.hook == "postrouting" && st.iif == "" {
				*v = nval{kind: kStr, str: ""}
				return sOne, ""
			}
			*v = nval{kind: kStr, str: st.iif}
			return sOne, ""
		case "oifname":
			if st.oif != "" {
				*v = nval{kind: kStr, str: st.oif}
				return sOne, ""
			}
			if st.hook == "prerouting" || st.hook == "input" {
				*v = nval{kind: kStr, str: ""}
				return sOne, ""
			}
		}
		return sWhy, "not modelled: " + nft.ExprString(e)
	case *nft.Ct:
		if e.Dir != "" {
			break
		}
		switch e.Key {
		case "state":
			*v = nval{kind: kFlags, flags: ctFlagsNew}
			return sOne, ""
		case "status":
			dnat, snat := st.dnat.IsValid(), st.masq || st.snat != ""
			var fl []string
			switch {
			case dnat && snat:
				fl = ctStatusBoth
			case dnat:
				fl = ctStatusBoth[:1:1]
			case snat:
				fl = ctStatusBoth[1:2:2]
			}
			*v = nval{kind: kFlags, flags: fl}
			return sOne, ""
		case "mark":
			*v = nval{kind: kNum, num: uint64(st.ctmark)}
			return sOne, ""
		case "direction":
			*v = nval{kind: kStr, str: "original"}
			return sOne, ""
		}
	case *nft.Fib:
		if e.Result != "type" || len(e.Flags) == 0 {
			break
		}
		var a netip.Addr
		switch e.Flags[0] {
		case "daddr":
			a = st.dst
		case "saddr":
			a = st.src
		default:
			return sWhy, "not modelled: " + nft.ExprString(e)
		}
		for _, f := range e.Flags[1:] {
			if f != "iif" && f != "oif" {
				return sWhy, "not modelled: " + nft.ExprString(e)
			}
		}
		switch {
		case w.dp.IsLocal(a):
			*v = nval{kind: kStr, str: "local"}
		case a.IsMulticast():
			*v = nval{kind: kStr, str: "multicast"}
		default:
			*v = nval{kind: kStr, str: "unicast"}
		}
		return sOne, ""
	case *nft.Binop:
		var l nval
		lres, lwhy := w.scalar(st, e.Left, &l)
		if lres == sNot {
			// Several values, or their lack.
			switch k := w.evalKey(st, e.Left); {
			case k.absent:
				return sAbsent, ""
			case k.why != "":
				return sWhy, k.why
			case k.isOne:
				l, lres = k.one, sOne
			}
		}
		switch lres {
		case sAbsent, sWhy:
			return lres, lwhy
		}
		r, ok := e.Right.(*nft.Value)
		n, ok2 := parseNum(textOf(r, ok))
		if lres != sOne || !ok || !ok2 || l.kind != kNum {
			break
		}
		x := l.num
		switch e.Op {
		case "&":
			x &= n
		case "|":
			x |= n
		case "^":
			x ^= n
		case "<<":
			x <<= n
		case ">>":
			x >>= n
		}
		*v = nval{kind: kNum, num: x}
		return sOne, ""
	case *nft.Numgen, *nft.Concat:
		return sNot, ""
	}
	return sWhy, "not modelled: " + nft.ExprString(e)
}

// maxKeyParts is the most parts of a concatenation keyVals reads.
const maxKeyParts = 8

// keyVals returns the values of e for st when e selects one value, or is
// a concatenation of such selectors (the keys of a large node's verdict
// maps and sets), in buf: what evalKey would return as its one value or
// its one variant's values, without carving them from the walk's arena.
// It returns sNot for the expressions it leaves to evalKey.
func (w *nftWalk) keyVals(st *nftState, e nft.Expr, buf *[maxKeyParts]nval) ([]nval, int, string) {
	c, ok := e.(*nft.Concat)
	if !ok {
		res, why := w.scalar(st, e, &buf[0])
		return buf[:1], res, why
	}
	if len(c.Parts) > len(buf) {
		return nil, sNot, ""
	}
	for i, p := range c.Parts {
		// As evalKey: the first part absent or not modelled is the
		// concatenation's answer.
		if res, why := w.scalar(st, p, &buf[i]); res != sOne {
			return nil, res, why
		}
	}
	return buf[:len(c.Parts)], sOne, ""
}

// evalKey returns the values of expression e for st.
func (w *nftWalk) evalKey(st *nftState, e nft.Expr) selResult {
	var v nval
	switch res, why := w.scalar(st, e, &v); res {
	case sOne:
		return one(v)
	case sAbsent:
		return selResult{absent: true}
	case sWhy:
		return selResult{why: why}
	}
	switch e := e.(type) {
	case *nft.Numgen:
		if e.Mod == 0 {
			break
		}
		note := "numgen random"
		if e.Mode != "random" {
			note = "numgen " + e.Mode
		}
		vars := w.variants(int(e.Mod))[:e.Mod]
		vals := w.nvals(int(e.Mod))[:e.Mod]
		for i := range vars {
			vals[i] = nval{kind: kNum, num: uint64(e.Offset) + uint64(i)}
			vars[i] = variant{vals: vals[i : i+1 : i+1], weight: 1 / float64(e.Mod), note: note}
		}
		return selResult{vars: vars}
	case *nft.Concat:
		vals := w.nvals(len(e.Parts))
		res := selResult{vars: carveOne(&w.vars, variant{weight: 1})}
		for _, p := range e.Parts {
			if vals != nil {
				// Parts of one value each, so far: the common case.
				switch r, why := w.scalar(st, p, &v); r {
				case sOne:
					vals = append(vals, v)
					continue
				case sAbsent:
					return selResult{absent: true}
				case sWhy:
					return selResult{why: why}
				}
			}
			pr := w.evalKey(st, p)
			if pr.absent || pr.why != "" {
				return pr
			}
			if pr.isOne && vals != nil {
				vals = append(vals, pr.one)
				continue
			}
			if vals != nil {
				res.vars[0].vals = vals
				vals = nil
			}
			pr.expand()
			var next []variant
			for _, a := range res.vars {
				for _, b := range pr.vars {
					vals := append(a.vals[:len(a.vals):len(a.vals)], b.vals...)
					note := a.note
					if b.note != "" {
						note = b.note
					}
					next = append(next, variant{vals: vals, weight: a.weight * b.weight, note: note})
				}
			}
			res.vars = next
		}
		if vals != nil {
			res.vars[0].vals = vals
		}
		return res
	}
	return selResult{why: "not modelled: " + nft.ExprString(e)}
}

func textOf(v *nft.Value, ok bool) string {
	if !ok || v == nil {
		return ""
	}
	return v.Text
}

// payloadVal sets *v to the value of header field e for st (see scalar).
func payloadVal(st *nftState, e *nft.Payload, v *nval) (res int, why string) {
	switch e.Proto {
	case "ip", "ip6":
		if (e.Proto == "ip") != st.is4() {
			return sAbsent, ""
		}
		switch e.Field {
		case "saddr":
			*v = nval{kind: kAddr, addr: st.src}
			return sOne, ""
		case "daddr":
			*v = nval{kind: kAddr, addr: st.dst}
			return sOne, ""
		case "protocol", "nexthdr":
			*v = nval{kind: kNum, num: protoNum(st.proto)}
			return sOne, ""
		}
	case "th", "tcp", "udp", "sctp":
		if e.Proto != "th" && e.Proto != st.proto {
			return sAbsent, ""
		}
		switch e.Field {
		case "dport":
			*v = nval{kind: kNum, num: uint64(st.dport)}
			return sOne, ""
		case "sport":
			return sWhy, "not modelled: " + nft.ExprString(e) + " (the source port is chosen by the client)"
		}
	}
	return sWhy, "not modelled: " + nft.ExprString(e)
}

// ---- constants ----

// part is a constant as the rules print it, read once: an address, a
// prefix, a range, a number, a protocol name or a string.
type part struct {
	text       string
	hasAddr    bool
	addr, hi   netip.Addr
	isPrefix   bool
	prefix     netip.Prefix
	isAddrRng  bool
	hasNum     bool
	lo, numHi  uint64
	isNumRange bool
	str        string
	wildcard   bool
	quoted     bool
	// flags are the comma-separated names, for flag values, when there
	// are several; flag is the one name otherwise.
	flags []string
	flag  string
}

func compilePart(text string) part {
	p := part{text: text}
	if strings.Contains(text, ",") {
		for _, f := range strings.Split(text, ",") {
			p.flags = append(p.flags, strings.TrimSpace(f))
		}
	} else {
		p.flag = strings.TrimSpace(text)
	}
	if strings.HasPrefix(text, "\"") && strings.HasSuffix(text, "\"") && len(text) >= 2 {
		p.quoted = true
		p.str = text[1 : len(text)-1]
		if strings.HasSuffix(p.str, "*") && !strings.HasSuffix(p.str, "\\*") {
			p.wildcard = true
			p.str = strings.TrimSuffix(p.str, "*")
		}
		return p
	}
	p.str = text
	// Every address has a dot or a colon, every prefix a slash: the
	// parsers are not asked (and their errors not made) for the others.
	if strings.ContainsAny(text, ".:") {
		if a, err := netip.ParseAddr(text); err == nil {
			p.hasAddr, p.addr = true, a.Unmap()
			return p
		}
	}
	if strings.Contains(text, "/") {
		if pf, err := netip.ParsePrefix(text); err == nil {
			p.isPrefix, p.prefix = true, pf.Masked()
			return p
		}
	}
	if lo, hi, ok := strings.Cut(text, "-"); ok {
		if a, err := netip.ParseAddr(lo); err == nil {
			if b, err := netip.ParseAddr(hi); err == nil {
				p.isAddrRng, p.addr, p.hi = true, a.Unmap(), b.Unmap()
				return p
			}
		}
		if a, ok := parseNum(lo); ok {
			if b, ok := parseNum(hi); ok {
				p.isNumRange, p.lo, p.numHi = true, a, b
				return p
			}
		}
	}
	if n, ok := parseNum(text); ok {
		p.hasNum, p.lo = true, n
		return p
	}
	if n, ok := protoNums[text]; ok {
		p.hasNum, p.lo = true, n
	}
	return p
}

func parseNum(s string) (uint64, bool) {
	if s == "" || s[0] < '0' || s[0] > '9' {
		// Not a number, whatever its base: the error is not made.
		return 0, false
	}
	n, err := strconv.ParseUint(s, 0, 64)
	return n, err == nil
}

// hpart is one part of a hash key.
type hpart struct {
	kind int
	addr netip.Addr
	num  uint64
	str  string
}

// maxHashParts is the most parts a hashed key has: elements and values
// with more are compared one by one.
const maxHashParts = 6

// appendKey appends the encoding of h to a hash key: equal parts, and
// only they, encode alike, and the encoding of a key is its parts' in
// order. ok is false for a part too long to encode (an address zone of
// 256 bytes or more).
func appendKey(b []byte, h hpart) (_ []byte, ok bool) {
	b = append(b, byte(h.kind))
	switch h.kind {
	case kAddr:
		n := len(b)
		b, _ = h.addr.AppendBinary(append(b, 0))
		if len(b)-n-1 > 255 {
			return b, false
		}
		b[n] = byte(len(b) - n - 1)
	case kNum:
		b = binary.BigEndian.AppendUint64(b, h.num)
	default:
		b = binary.AppendUvarint(b, uint64(len(h.str)))
		b = append(b, h.str...)
	}
	return b, true
}

// exact reports whether p matches one value only, and its hash key part.
func (p *part) exact() (hpart, bool) {
	switch {
	case p.hasAddr:
		return hpart{kind: kAddr, addr: p.addr}, true
	case p.hasNum:
		return hpart{kind: kNum, num: p.lo}, true
	case p.isPrefix || p.isAddrRng || p.isNumRange || p.wildcard:
		return hpart{}, false
	}
	return hpart{kind: kStr, str: p.str}, true
}

func valKey(v nval) (hpart, bool) {
	switch v.kind {
	case kAddr:
		return hpart{kind: kAddr, addr: v.addr}, true
	case kNum:
		return hpart{kind: kNum, num: v.num}, true
	case kStr:
		return hpart{kind: kStr, str: v.str}, true
	}
	return hpart{}, false
}

// match reports whether v matches the constant p; ok is false when the
// two cannot be compared.
func (p *part) match(v nval) (match, ok bool) {
	switch v.kind {
	case kAddr:
		switch {
		case p.hasAddr:
			return p.addr == v.addr, true
		case p.isPrefix:
			return p.prefix.Contains(v.addr), true
		case p.isAddrRng:
			return p.addr.Compare(v.addr) <= 0 && v.addr.Compare(p.hi) <= 0, true
		}
	case kNum:
		switch {
		case p.hasNum:
			return p.lo == v.num, true
		case p.isNumRange:
			return p.lo <= v.num && v.num <= p.numHi, true
		}
	case kStr:
		if p.wildcard {
			return strings.HasPrefix(v.str, p.str), true
		}
		return p.str == v.str, true
	case kFlags:
		if p.flags == nil {
			return slices.Contains(v.flags, p.flag), true
		}
		for _, f := range p.flags {
			for _, g := range v.flags {
				if f == g {
					return true, true
				}
			}
		}
		return false, true
	}
	return false, false
}

// ---- sets ----

// setIndex is a set's or map's elements read once: a hash of the elements
// with exact keys, and the others in order. A large node's maps have an
// element per Service or endpoint: an exact element is only its encoded
// key; the compiled parts of every element are made only for a lookup of
// values that cannot be hashed.
//
// A large node has an anonymous map per Service (its endpoints): the
// index of a small set is one string and a few words.
type setIndex struct {
	elems []nft.Element
	// exact holds the encoded keys of the exact elements, sorted, with
	// their indexes (looked up by binary search: a large set's index
	// takes about a third of a map's room); a set of at most smallSet
	// exact elements (an anonymous map of a Service's endpoints) lists
	// them in few instead: each its key's length (uvarint), its key and
	// its index (uvarint), one after the other.
	exact *sortedKeys
	few   string
	// inexact holds the elements whose keys are not exact (nil when
	// there are none).
	inexact *inexactElems
	// all is every element's compiled key, made on first need.
	all atomic.Pointer[[][]part]
}

// inexactElems are the elements of a set whose keys are not exact, in
// order, with their compiled keys.
type inexactElems struct {
	ranged []int32
	rparts [][]part
}

// smallSet is the most exact elements a set lists rather than sorts.
const smallSet = 8

// sortedKeys are the encoded keys of a set's exact elements, in the
// order of their bytes, each with the index of the first element of that
// key: the keys are written one after the other in keys.
type sortedKeys struct {
	keys []byte
	ents []sortedKey
	// absent is a Bloom filter of the keys of a large set (nil for a
	// smaller one): two bits of each key's hash (see keyBits) are set.
	// A key one of whose bits is clear is in none of the elements: the
	// lookups of a packet's walk through a large node are most of them
	// of keys that are not (an endpoint's address in the set of cluster
	// IPs, in the hairpin connections), and are answered without the
	// binary search's reads all over the keys.
	absent []uint64
}

// minFiltered is the fewest keys a set's Bloom filter is made for.
const minFiltered = 512

// filterSeed seeds the hashes of sortedKeys.absent.
var filterSeed = maphash.MakeSeed()

// keyBits returns the two bits of key in a filter of mask+1 bits.
func keyBits(key []byte, mask uint64) (uint64, uint64) {
	h := maphash.Bytes(filterSeed, key)
	return h & mask, (h >> 32) & mask
}

// filterMask returns the mask of the bits of the filter of n keys: from
// 8 to 16 bits a key (two of which are set), a few percent of keys not
// in the set passing.
func filterMask(n int) uint64 {
	bits := uint64(64)
	for bits < uint64(n)*8 {
		bits <<= 1
	}
	return bits - 1
}

// A sortedKey is where a key is in sortedKeys.keys, and its element.
type sortedKey struct{ start, end, elem int32 }

// key returns the key of e.
func (s *sortedKeys) key(e sortedKey) []byte { return s.keys[e.start:e.end] }

// find returns the element of key, or -1.
func (s *sortedKeys) find(key []byte) int32 {
	if s.absent != nil {
		a, b := keyBits(key, uint64(len(s.absent))*64-1)
		if s.absent[a/64]&(1<<(a%64)) == 0 || s.absent[b/64]&(1<<(b%64)) == 0 {
			return -1
		}
	}
	lo, hi := 0, len(s.ents)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch c := bytes.Compare(s.key(s.ents[m]), key); {
		case c == 0:
			return s.ents[m].elem
		case c < 0:
			lo = m + 1
		default:
			hi = m
		}
	}
	return -1
}

// sortKeys returns the keys written one after the other in buf, each at
// ents' place, sorted, the first element of a key kept.
func sortKeys(buf []byte, ents []sortedKey) *sortedKeys {
	s := &sortedKeys{keys: slices.Clip(buf), ents: ents}
	slices.SortStableFunc(s.ents, func(a, b sortedKey) int { return bytes.Compare(s.key(a), s.key(b)) })
	s.ents = slices.CompactFunc(s.ents, func(a, b sortedKey) bool { return bytes.Equal(s.key(a), s.key(b)) })
	s.ents = slices.Clip(s.ents)
	if len(s.ents) >= minFiltered {
		mask := filterMask(len(s.ents))
		s.absent = make([]uint64, (mask+1)/64)
		for _, e := range s.ents {
			a, b := keyBits(s.key(e), mask)
			s.absent[a/64] |= 1 << (a % 64)
			s.absent[b/64] |= 1 << (b % 64)
		}
	}
	return s
}

func newSetIndex(elems []nft.Element) *setIndex {
	ix := &setIndex{elems: elems}
	big := len(elems) > smallSet
	var kbytes []byte // the keys of a big set, one after the other
	var ents []sortedKey
	// Room on the stack for a small set's keys.
	var kbuf [64]byte
	var fbuf [256]byte
	var pbuf [4]part
	var ebuf [4]string
	key, few := kbuf[:0], fbuf[:0]
	ps := pbuf[:0] // the compiled key of the element, kept only when not exact
	for i := range elems {
		ek := elems[i].AppendKey(ebuf[:0])
		ps = slices.Grow(ps[:0], len(ek))[:len(ek)]
		isExact := len(ek) <= maxHashParts
		key = key[:0]
		for j, k := range ek {
			ps[j] = compilePart(k)
			if !isExact {
				continue
			}
			hp, ok := ps[j].exact()
			if ok {
				key, ok = appendKey(key, hp)
			}
			isExact = ok
		}
		switch {
		case !isExact:
			if ix.inexact == nil {
				ix.inexact = &inexactElems{}
			}
			ix.inexact.ranged = append(ix.inexact.ranged, int32(i))
			ix.inexact.rparts = append(ix.inexact.rparts, slices.Clone(ps))
		case !big:
			if findFew(few, key) < 0 {
				few = binary.AppendUvarint(few, uint64(len(key)))
				few = binary.AppendUvarint(append(few, key...), uint64(i))
			}
		default:
			if ents == nil {
				ents = make([]sortedKey, 0, len(elems))
			}
			start := len(kbytes)
			kbytes = append(kbytes, key...)
			ents = append(ents, sortedKey{int32(start), int32(len(kbytes)), int32(i)})
		}
	}
	if ents != nil {
		ix.exact = sortKeys(kbytes, ents)
	}
	ix.few = string(few)
	return ix
}

// findExact returns the index of the exact element of encoded key, or -1.
func (ix *setIndex) findExact(key []byte) int32 {
	if ix.exact == nil {
		return findFew(ix.few, key)
	}
	return ix.exact.find(key)
}

// findFew returns the index of the exact element of encoded key listed
// in few (see setIndex.few), or -1.
func findFew[S ~string | ~[]byte](few S, key []byte) int32 {
	for len(few) > 0 {
		n, w := uvarint(few)
		few = few[w:]
		k := few[:n]
		few = few[n:]
		i, w := uvarint(few)
		few = few[w:]
		if string(k) == string(key) {
			return int32(i)
		}
	}
	return -1
}

// uvarint decodes the uvarint at the start of b (written by
// binary.AppendUvarint) and returns it with its width.
func uvarint[S ~string | ~[]byte](b S) (int, int) {
	var x uint64
	var s uint
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c < 0x80 {
			return int(x | uint64(c)<<s), i + 1
		}
		x |= uint64(c&0x7f) << s
		s += 7
	}
	return int(x), len(b)
}

// lookup returns the index of the element vals match, or -1; ok is false
// when the values cannot be compared with the elements.
func (ix *setIndex) lookup(vals []nval) (int, bool) {
	var buf [128]byte
	key, hashable := buf[:0], len(vals) <= maxHashParts
	for _, v := range vals {
		hp, ok := valKey(v)
		if ok {
			key, ok = appendKey(key, hp)
		}
		if !ok {
			hashable = false
			break
		}
	}
	if hashable {
		if i := ix.findExact(key); i >= 0 {
			return int(i), true
		}
		if ix.inexact == nil {
			return -1, true
		}
		for k, i := range ix.inexact.ranged {
			switch m, ok := matchParts(ix.inexact.rparts[k], vals); {
			case !ok:
				return -1, false
			case m:
				return int(i), true
			}
		}
		return -1, true
	}
	all := ix.all.Load()
	if all == nil {
		// Made by whichever lookup comes first, the same every time.
		parts := make([][]part, len(ix.elems))
		var ebuf [4]string
		for i := range ix.elems {
			ek := ix.elems[i].AppendKey(ebuf[:0])
			parts[i] = make([]part, len(ek))
			for j, k := range ek {
				parts[i][j] = compilePart(k)
			}
		}
		ix.all.CompareAndSwap(nil, &parts)
		all = ix.all.Load()
	}
	for i, ps := range *all {
		switch m, ok := matchParts(ps, vals); {
		case !ok:
			return -1, false
		case m:
			return i, true
		}
	}
	return -1, true
}

// matchParts reports whether vals match the compiled key ps (not when
// their numbers differ); ok is false when they cannot be compared.
func matchParts(ps []part, vals []nval) (match, ok bool) {
	if len(ps) != len(vals) {
		return false, true
	}
	for j := range ps {
		m, ok := ps[j].match(vals[j])
		if !ok || !m {
			return false, ok
		}
	}
	return true, true
}

// index returns the index of a named set of t, or of an anonymous set;
// dynamic reports a named set rules add to from the packet path.
func (w *nftWalk) index(t *nftTable, e nft.Expr) (ix *setIndex, set *nft.Set, dynamic bool, why string) {
	switch e := e.(type) {
	case *nft.SetRef:
		// The last few are remembered (see nftWalk.value).
		for i := range w.sets {
			if j := &w.sets[i]; j.ref == e {
				return j.ix, j.set, j.dynamic, ""
			}
		}
		s := t.sets[e.Name]
		if s == nil {
			return nil, nil, false, "unknown set @" + e.Name
		}
		ix := t.setIndex(s)
		dyn := t.dynamic[s.Name]
		w.sets[w.nextSet%uint8(len(w.sets))] = setSeen{ref: e, ix: ix, set: s, dynamic: dyn}
		w.nextSet++
		return ix, s, dyn, ""
	case *nft.AnonSet:
		return t.anonIndex(e), nil, false, ""
	}
	return nil, nil, false, "not modelled: " + nft.ExprString(e)
}

// ---- statements ----

func (w *nftWalk) evalMatch(st *nftState, t *nftTable, m *nft.Match) []branch {
	var buf [maxKeyParts]nval
	switch vals, res, why := w.keyVals(st, m.Left, &buf); res {
	case sOne:
		return w.matchValue(st, t, m, vals, "")
	case sAbsent:
		return w.ended(st, rNoMatch)
	case sWhy:
		return w.unknown(st, why+"; assumed not to match")
	}
	key := w.evalKey(st, m.Left)
	if key.absent {
		return w.ended(st, rNoMatch)
	}
	if key.why != "" {
		return w.unknown(st, key.why+"; assumed not to match")
	}
	if key.isOne {
		vals := [1]nval{key.one}
		return w.matchValue(st, t, m, vals[:], "")
	}
	out := carve(&w.arena, len(key.vars))
	for _, v := range key.vars {
		bst := st
		if len(key.vars) > 1 {
			bst = w.clone(st)
			bst.prob *= v.weight
		}
		out = append(out, w.matchValue(bst, t, m, v.vals, v.note)...)
	}
	return out
}

func (w *nftWalk) matchValue(st *nftState, t *nftTable, m *nft.Match, vals []nval, note string) []branch {
	want := m.Op != nft.OpNeq
	switch r := m.Right.(type) {
	case *nft.SetRef, *nft.AnonSet:
		ix, set, dynamic, why := w.index(t, r)
		if why != "" {
			return w.unknown(st, why+"; assumed not to match")
		}
		i, ok := ix.lookup(vals)
		if !ok {
			return w.unknown(st, "not modelled: "+nft.StmtString(m)+"; assumed not to match")
		}
		found := i >= 0
		if dynamic && !found && m.Op != nft.OpNeq && m.Op != nft.OpEq && m.Op != nft.OpIn {
			return w.unknown(st, "not modelled: "+nft.StmtString(m)+"; assumed not to match")
		}
		if dynamic && !found {
			if st.updated[set.Name] {
				return w.boolBranch(st, want, "entry added by this packet")
			}
			// History the listing cannot show: an entry from an earlier
			// connection of the same client. Both ways are paths; the one
			// with the entry carries the condition and no probability of
			// its own (the first connection of a client has none).
			present := w.clone(st)
			present.prob = 0
			cond := "affinity entry present in @" + set.Name + " for " + st.src.String()
			present.conds = append(present.conds, cond)
			var out []branch
			out = append(out, w.boolBranch(present, want, "affinity entry present")...)
			out = append(out, w.boolBranch(st, !want, "")...)
			return out
		}
		listed := ""
		if dynamic && found {
			listed = "affinity entry listed"
		}
		return w.boolBranch(st, found == want, listed)
	case *nft.Value:
		p := w.value(t, r)
		if len(vals) != 1 {
			return w.unknown(st, "not modelled: "+nft.StmtString(m)+"; assumed not to match")
		}
		val := vals[0]
		switch m.Op {
		case nft.OpLt, nft.OpGt, nft.OpLte, nft.OpGte:
			if val.kind != kNum || !p.hasNum {
				return w.unknown(st, "not modelled: "+nft.StmtString(m)+"; assumed not to match")
			}
			var res bool
			switch m.Op {
			case nft.OpLt:
				res = val.num < p.lo
			case nft.OpGt:
				res = val.num > p.lo
			case nft.OpLte:
				res = val.num <= p.lo
			default:
				res = val.num >= p.lo
			}
			return w.boolBranch(st, res, note)
		}
		ok, cmp := p.match(val)
		if !cmp {
			return w.unknown(st, "not modelled: "+nft.StmtString(m)+"; assumed not to match")
		}
		return w.boolBranch(st, ok == want, note)
	}
	return w.unknown(st, "not modelled: "+nft.StmtString(m)+"; assumed not to match")
}

func (w *nftWalk) boolBranch(st *nftState, ok bool, note string) []branch {
	if ok {
		return w.one1(branch{st: st, pass: true, note: note})
	}
	return w.one1(branch{st: st, end: rNoMatch})
}

// smallDraws is the most variants draws groups without a map.
const smallDraws = 16

// draws groups the variants of a key by the element they select, so that
// N numgen draws over N elements give N branches.
type draw struct {
	elem   int
	weight float64
	note   string
}

func (w *nftWalk) draws(st *nftState, key selResult, ix *setIndex) ([]draw, string) {
	if key.isOne {
		vals := [1]nval{key.one}
		return w.drawOne(ix, vals[:])
	}
	// The walk's buffer: the draws are read before the next lookup.
	out := w.drawBuf[:0]
	var pos map[int]int // by element, for many variants
	if len(key.vars) > smallDraws {
		pos = make(map[int]int, len(key.vars))
	}
next:
	for _, v := range key.vars {
		i, ok := ix.lookup(v.vals)
		if !ok {
			return nil, "cannot compare the key with the elements"
		}
		if pos == nil {
			for k := range out {
				if out[k].elem == i {
					out[k].weight += v.weight
					continue next
				}
			}
		} else if k, seen := pos[i]; seen {
			out[k].weight += v.weight
			continue
		} else {
			pos[i] = len(out)
		}
		out = append(out, draw{elem: i, weight: v.weight, note: v.note})
	}
	w.drawBuf = out[:0]
	return out, ""
}

// drawOne is draws of a key of one value (of each of its parts).
func (w *nftWalk) drawOne(ix *setIndex, vals []nval) ([]draw, string) {
	i, ok := ix.lookup(vals)
	if !ok {
		return nil, "cannot compare the key with the elements"
	}
	return append(w.drawBuf[:0], draw{elem: i, weight: 1}), ""
}

func (w *nftWalk) probNote(note string, weight float64, n int) string {
	if note == "" || weight == 1 || w.opts.Summary {
		return ""
	}
	return fmt.Sprintf("%s: probability %s", note, fraction(weight, n))
}

// fraction prints w as k/n when it is one.
func fraction(w float64, n int) string {
	if n > 0 {
		k := w * float64(n)
		if r := float64(int(k + 0.5)); r-k < 1e-9 && k-r < 1e-9 {
			return fmt.Sprintf("%d/%d", int(r), n)
		}
	}
	return strconv.FormatFloat(w, 'g', 6, 64)
}

// mapDraw is one element a map lookup draws, with the state of its branch.
type mapDraw struct {
	st   *nftState
	elem int // -1: no element matches
	note string
}

// mapDraws evaluates the lookup of key in the map data of statement stmt:
// the elements drawn, each with the state of its branch (forked, with its
// probability, when there are several). When the lookup cannot be made,
// done holds the branches that end the rule.
func (w *nftWalk) mapDraws(st *nftState, t *nftTable, key, data nft.Expr, stmt nft.Stmt) (ix *setIndex, out []mapDraw, done []branch) {
	var buf [maxKeyParts]nval
	vals, res, why := w.keyVals(st, key, &buf)
	var k selResult
	switch res {
	case sAbsent:
		k.absent = true
	case sWhy:
		k.why = why
	case sNot:
		k = w.evalKey(st, key)
	}
	if k.absent {
		return nil, nil, w.ended(st, rNoMatch)
	}
	if k.why != "" {
		return nil, nil, w.unknown(st, k.why+"; assumed not to match")
	}
	ix, _, _, why = w.index(t, data)
	if why != "" {
		return nil, nil, w.unknown(st, why+"; assumed not to match")
	}
	var ds []draw
	if res == sOne {
		ds, why = w.drawOne(ix, vals)
	} else {
		ds, why = w.draws(st, k, ix)
	}
	if why != "" {
		return nil, nil, w.unknown(st, "not modelled: "+nft.StmtString(stmt)+": "+why+"; assumed not to match")
	}
	// The walk's buffer: the caller reads the draws before the next
	// lookup.
	out = w.mapDrawBuf[:0]
	for _, d := range ds {
		bst := st
		if len(ds) > 1 || d.weight != 1 {
			bst = w.clone(st)
			bst.prob *= d.weight
		}
		out = append(out, mapDraw{st: bst, elem: d.elem, note: w.probNote(d.note, d.weight, len(k.vars))})
	}
	w.mapDrawBuf = out[:0]
	return ix, out, nil
}

func (w *nftWalk) evalVmap(st *nftState, t *nftTable, vm *nft.Vmap) []branch {
	ix, ds, done := w.mapDraws(st, t, vm.Key, vm.Data, vm)
	if done != nil {
		return done
	}
	out := carve(&w.arena, len(ds))
	for _, d := range ds {
		if d.elem < 0 {
			out = append(out, branch{st: d.st, end: rNoMatch})
			continue
		}
		v := ix.elems[d.elem].Verdict
		if v == nil {
			out = append(out, branch{st: d.st, end: rNoMatch, warn: "verdict map element without a verdict"})
			continue
		}
		for _, b := range w.verdictBranch(d.st, v) {
			b.note = d.note
			out = append(out, b)
		}
	}
	return out
}

func (w *nftWalk) evalNAT(st *nftState, t *nftTable, n *nft.NAT) []branch {
	bind := func(st *nftState) { st.natDone[natIdx(st.hook)] = true }
	switch n.Kind {
	case "masquerade":
		st.masq = true
		bind(st)
		if w.opts.Summary {
			return w.ended(st, rAccept)
		}
		return w.one1(branch{st: st, end: rAccept, note: masqueradeNote})
	case "snat":
		if v, ok := n.Addr.(*nft.Value); ok && n.Port == nil {
			st.snat = v.Text
			bind(st)
			return w.ended(st, rAccept)
		}
		return w.unknown(st, "not modelled: "+nft.StmtString(n)+"; assumed not to match")
	case "redirect":
		port := st.dport
		if v, ok := n.Port.(*nft.Value); ok {
			p, ok := parseNum(v.Text)
			if !ok {
				return w.unknown(st, "not modelled: "+nft.StmtString(n)+"; assumed not to match")
			}
			port = uint16(p)
		}
		lo := netip.MustParseAddr("127.0.0.1")
		if !st.is4() {
			lo = netip.IPv6Loopback()
		}
		st.dst, st.dport = lo, port
		st.dnat = netip.AddrPortFrom(lo, port)
		bind(st)
		return []branch{{st: st, end: rAccept, warn: "redirect: the destination is taken as the loopback address"}}
	case "dnat":
	default:
		return w.unknown(st, "not modelled: "+nft.StmtString(n)+"; assumed not to match")
	}
	// port reads the port of the map's data (text, when inMap), else of
	// the statement (pt), else keeps the packet's.
	port := func(st *nftState, text string, inMap bool, pt nft.Expr) (uint16, bool) {
		if !inMap {
			if pt == nil {
				return st.dport, true
			}
			pv, ok := pt.(*nft.Value)
			if !ok {
				return 0, false
			}
			text = pv.Text
		}
		p, ok := parseNum(text)
		return uint16(p), ok && p < 65536
	}
	to := func(st *nftState, addr, portText string, inMap bool, pt nft.Expr, note string) branch {
		a, err := netip.ParseAddr(strings.Trim(addr, "[]"))
		p, ok := port(st, portText, inMap, pt)
		if err != nil || !ok {
			return branch{st: st, end: rNoMatch, warn: "not modelled: " + nft.StmtString(n) + "; assumed not to match"}
		}
		st.dst, st.dport = a.Unmap(), p
		st.dnat = netip.AddrPortFrom(st.dst, p)
		bind(st)
		return branch{st: st, end: rAccept, note: note}
	}
	switch a := n.Addr.(type) {
	case *nft.Value:
		return []branch{to(st, a.Text, "", false, n.Port, "")}
	case *nft.Map:
		ix, ds, done := w.mapDraws(st, t, a.Key, a.Data, n)
		if done != nil {
			return done
		}
		out := carve(&w.arena, len(ds))
		var dbuf [2]string
		for _, d := range ds {
			if d.elem < 0 {
				out = append(out, branch{st: d.st, end: rNoMatch})
				continue
			}
			data := ix.elems[d.elem].AppendData(dbuf[:0])
			switch {
			case len(data) == 2 && n.Port == nil:
				out = append(out, to(d.st, data[0], data[1], true, nil, d.note))
			case len(data) == 1:
				out = append(out, to(d.st, data[0], "", false, n.Port, d.note))
			default:
				out = append(out, branch{st: d.st, end: rNoMatch, warn: "not modelled: " + nft.StmtString(n) + "; assumed not to match"})
			}
		}
		return out
	}
	return w.unknown(st, "not modelled: "+nft.StmtString(n)+"; assumed not to match")
}

func (w *nftWalk) evalMangle(st *nftState, m *nft.Mangle) []branch {
	var target *uint32
	switch k := m.Key.(type) {
	case *nft.Meta:
		switch k.Key {
		case "mark":
			target = &st.mark
		case "nftrace":
			return w.passed(st)
		}
	case *nft.Ct:
		if k.Key == "mark" && k.Dir == "" {
			target = &st.ctmark
		}
	}
	if target == nil {
		return []branch{{st: st, pass: true, warn: "not modelled: " + nft.StmtString(m) + " (ignored)"}}
	}
	v, ok := markValue(st, m.Value)
	if !ok {
		return []branch{{st: st, pass: true, warn: "not modelled: " + nft.StmtString(m) + " (ignored)"}}
	}
	before := *target
	*target = v
	if w.opts.Summary {
		return w.passed(st)
	}
	note := markNote(before, v)
	if target == &st.ctmark {
		note = "conntrack " + note
	}
	return w.one1(branch{st: st, pass: true, note: note})
}

// markValue evaluates the value of a mark statement: a constant, the
// packet or connection mark, or a bitwise operation on them.
func markValue(st *nftState, e nft.Expr) (uint32, bool) {
	switch e := e.(type) {
	case *nft.Value:
		n, ok := parseNum(e.Text)
		return uint32(n), ok
	case *nft.Meta:
		if e.Key == "mark" {
			return st.mark, true
		}
	case *nft.Ct:
		if e.Key == "mark" && e.Dir == "" {
			return st.ctmark, true
		}
	case *nft.Binop:
		l, ok1 := markValue(st, e.Left)
		r, ok2 := markValue(st, e.Right)
		if !ok1 || !ok2 {
			return 0, false
		}
		switch e.Op {
		case "&":
			return l & r, true
		case "|":
			return l | r, true
		case "^":
			return l ^ r, true
		case "<<":
			return l << r, true
		case ">>":
			return l >> r, true
		}
	}
	return 0, false
}
