// Package nftjson prints a ruleset of package parsers/nft as `nft -j list
// ruleset` prints it. Only tests use it: proxyscan reads nft's JSON but
// never writes it, so the package is not part of the binary
// (internal/depcheck checks that). Tests need it for the JSON listing of
// rulesets they have as text: the benchmarks' generated rulesets, and the
// nftables scenarios whose findings must not depend on the listing's form.
// Its output is nft's own, byte for byte, for every `nft -j` listing
// captured in testdata, and for rulesets loaded into nft as text but for
// what nft's JSON leaves out (see its tests).
package nftjson

import (
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/nftables"

	"github.com/proxyscan/proxyscan/parsers/nft"
)

// Format prints rs as `nft -j list ruleset` (nft 1.0.6, JSON schema
// version 1) prints it, with the same member order and spacing; for a
// ruleset parsed from that output it reproduces the input. Parts known
// only as text ([nft.Unsupported] statements and [nft.Object]s read from
// text) are written as {"unsupported": "..."} items, which nft refuses.
func Format(rs *nft.Ruleset) []byte {
	w := &jwriter{}
	w.raw(`{"nftables": [{"metainfo": {"version": "1.0.6", "release_name": "Lester Gooch #5", "json_schema_version": 1}}`)
	for _, t := range rs.Tables {
		w.table(t)
	}
	w.raw("]}\n")
	return w.b
}

type jwriter struct {
	b   []byte
	fam nftables.TableFamily
}

func (w *jwriter) raw(s string) { w.b = append(w.b, s...) }

func (w *jwriter) str(s string) {
	w.b = append(w.b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			w.b = append(w.b, '\\', c)
		case c < 0x20:
			w.b = append(w.b, `\u00`...)
			w.b = append(w.b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
		case c < utf8.RuneSelf:
			w.b = append(w.b, c)
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				w.b = append(w.b, `\ufffd`...)
			} else {
				w.b = append(w.b, s[i:i+n]...)
			}
			i += n
			continue
		}
		i++
	}
	w.b = append(w.b, '"')
}

// key writes `, "k": ` (or `"k": ` first in an object).
func (w *jwriter) key(first bool, k string) {
	if !first {
		w.raw(", ")
	}
	w.str(k)
	w.raw(": ")
}

func (w *jwriter) uint(n uint64) { w.b = strconv.AppendUint(w.b, n, 10) }

func (w *jwriter) strs(ss []string, single bool) {
	if single && len(ss) == 1 {
		w.str(ss[0])
		return
	}
	w.raw("[")
	for i, s := range ss {
		if i > 0 {
			w.raw(", ")
		}
		w.str(s)
	}
	w.raw("]")
}

func (w *jwriter) head(kind string, t *nft.Table) {
	w.raw(", {")
	w.str(kind)
	w.raw(": {")
	w.key(true, "family")
	w.str(nft.FamilyName(t.Family))
}

func (w *jwriter) table(t *nft.Table) {
	w.fam = t.Family
	w.head("table", t)
	w.key(false, "name")
	w.str(t.Name)
	w.key(false, "handle")
	w.uint(t.Handle)
	if len(t.Flags) > 0 {
		w.key(false, "flags")
		w.strs(t.Flags, true)
	}
	if t.Comment != "" {
		w.key(false, "comment")
		w.str(t.Comment)
	}
	w.raw("}}")
	for _, o := range t.Objects {
		if o.Kind != "flowtable" {
			w.object(t, o)
		}
	}
	for _, s := range t.Sets {
		w.set(t, s)
	}
	for _, o := range t.Objects {
		if o.Kind == "flowtable" {
			w.object(t, o)
		}
	}
	for _, c := range t.Chains {
		w.chain(t, c)
	}
	for _, c := range t.Chains {
		for _, r := range c.Rules {
			w.rule(t, c, r)
		}
	}
}

func (w *jwriter) object(t *nft.Table, o *nft.Object) {
	if o.Counter != nil {
		w.head("counter", t)
		w.key(false, "name")
		w.str(o.Name)
		w.key(false, "table")
		w.str(t.Name)
		w.key(false, "handle")
		w.uint(o.Handle)
		w.key(false, "packets")
		w.uint(o.Counter.Packets)
		w.key(false, "bytes")
		w.uint(o.Counter.Bytes)
		w.raw("}}")
		return
	}
	if o.JSON != "" {
		w.raw(", ")
		w.raw(o.JSON)
		return
	}
	w.raw(`, {"unsupported": `)
	w.str(o.Kind + " " + o.Name + " { " + strings.Join(o.Body, "; ") + " }")
	w.raw("}")
}

func (w *jwriter) set(t *nft.Table, s *nft.Set) {
	kind := "set"
	if s.IsMap {
		kind = "map"
	}
	w.head(kind, t)
	w.key(false, "name")
	w.str(s.Name)
	w.key(false, "table")
	w.str(t.Name)
	w.key(false, "type")
	w.strs(s.KeyType, true)
	w.key(false, "handle")
	w.uint(s.Handle)
	if s.Comment != "" {
		w.key(false, "comment")
		w.str(s.Comment)
	}
	if s.IsMap {
		w.key(false, "map")
		w.strs(s.DataType, true)
	}
	if !s.HasFlag("constant") {
		if s.Policy != "" {
			w.key(false, "policy")
			w.str(s.Policy)
		}
		if s.Size != 0 {
			w.key(false, "size")
			w.uint(uint64(s.Size))
		}
	}
	if len(s.Flags) > 0 {
		w.key(false, "flags")
		w.strs(s.Flags, false)
	}
	if s.Timeout != 0 {
		w.key(false, "timeout")
		w.uint(uint64(s.Timeout.Seconds()))
	}
	if s.GCInterval != 0 {
		w.key(false, "gc-interval")
		w.uint(uint64(s.GCInterval.Seconds()))
	}
	if s.AutoMerge {
		w.key(false, "auto-merge")
		w.raw("true")
	}
	if len(s.Elements) > 0 {
		w.key(false, "elem")
		w.raw("[")
		for i := range s.Elements {
			if i > 0 {
				w.raw(", ")
			}
			w.elem(&s.Elements[i], s.KeyType, s.DataType, s.IsMap)
		}
		w.raw("]")
	}
	if s.Counter {
		w.key(false, "stmt")
		w.raw(`[{"counter": null}]`)
	}
	w.raw("}}")
}

func (w *jwriter) elem(e *nft.Element, keyTypes, dataTypes []string, isMap bool) {
	if isMap {
		w.raw("[")
	}
	timeout, expires, counter := e.Timeout(), e.Expires(), e.Counter()
	wrapped := timeout != 0 || expires != 0 || e.Comment() != "" || counter != nil
	if wrapped {
		w.raw(`{"elem": {"val": `)
	}
	w.parts(e.Key(), keyTypes)
	if wrapped {
		if timeout != 0 {
			w.key(false, "timeout")
			w.uint(uint64(timeout.Seconds()))
		}
		if expires != 0 {
			w.key(false, "expires")
			w.uint(uint64(expires.Seconds()))
		}
		if e.Comment() != "" {
			w.key(false, "comment")
			w.str(e.Comment())
		}
		if counter != nil {
			w.key(false, "counter")
			w.counterBody(counter)
		}
		w.raw("}}")
	}
	if isMap {
		w.raw(", ")
		if e.Verdict != nil {
			w.verdict(e.Verdict)
		} else {
			w.parts(e.Data(), dataTypes)
		}
		w.raw("]")
	}
}

func (w *jwriter) parts(parts []string, types []string) {
	if len(parts) == 1 {
		t := ""
		if len(types) == 1 {
			t = types[0]
		}
		w.constant(parts[0], t)
		return
	}
	w.raw(`{"concat": [`)
	for i, p := range parts {
		if i > 0 {
			w.raw(", ")
		}
		t := ""
		if i < len(types) {
			t = types[i]
		}
		w.constant(p, t)
	}
	w.raw("]}")
}

func numericType(t string) bool {
	switch t {
	case "inet_service", "integer", "mark", "uid", "gid", "time", "realm", "devgroup", "iface_index":
		return true
	}
	return false
}

func addrType(t string) bool { return t == "ipv4_addr" || t == "ipv6_addr" }

// constant writes a constant as nft's JSON writes a value of datatype t:
// numbers for integer types, prefix and range objects, arrays for flag
// lists, strings otherwise.
func (w *jwriter) constant(s, t string) {
	if strings.HasPrefix(s, `"`) {
		w.str(unquote(s))
		return
	}
	if a, l, ok := strings.Cut(s, "/"); ok && (addrType(t) || t == "" && isAddr(a)) {
		if n, err := strconv.Atoi(l); err == nil {
			w.raw(`{"prefix": {"addr": `)
			w.str(a)
			w.raw(`, "len": `)
			w.b = strconv.AppendInt(w.b, int64(n), 10)
			w.raw("}}")
			return
		}
	}
	if lo, hi, ok := strings.Cut(s, "-"); ok && (addrType(t) || numericType(t) || t == "" && (isAddr(lo) && isAddr(hi) || isNumber(lo) && isNumber(hi))) {
		w.raw(`{"range": [`)
		w.constant(lo, t)
		w.raw(", ")
		w.constant(hi, t)
		w.raw("]}")
		return
	}
	if strings.Contains(s, ",") && (isBitmask(t) || t == "") {
		w.strs(strings.Split(s, ","), false)
		return
	}
	if isNumber(s) && (numericType(t) || t == "" || t == "inet_proto") {
		n, _ := strconv.ParseUint(strings.TrimPrefix(s, "0x"), map[bool]int{true: 16, false: 10}[strings.HasPrefix(s, "0x")], 64)
		w.uint(n)
		return
	}
	w.str(s)
}

func isAddr(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}

func (w *jwriter) chain(t *nft.Table, c *nft.Chain) {
	w.head("chain", t)
	w.key(false, "table")
	w.str(t.Name)
	w.key(false, "name")
	w.str(c.Name)
	w.key(false, "handle")
	w.uint(c.Handle)
	if c.Comment != "" {
		w.key(false, "comment")
		w.str(c.Comment)
	}
	if c.Hook != "" {
		w.key(false, "type")
		w.str(string(c.Type))
		w.key(false, "hook")
		w.str(c.Hook)
		if len(c.Devices) > 0 {
			w.key(false, "dev")
			w.strs(c.Devices, true)
		}
		w.key(false, "prio")
		if c.Priority != nil {
			w.b = strconv.AppendInt(w.b, int64(c.Priority.Value), 10)
		} else {
			w.raw("0")
		}
		if c.Policy != nil {
			w.key(false, "policy")
			w.str(nft.PolicyName(*c.Policy))
		}
	}
	w.raw("}}")
}

func (w *jwriter) rule(t *nft.Table, c *nft.Chain, r *nft.Rule) {
	w.head("rule", t)
	w.key(false, "table")
	w.str(t.Name)
	w.key(false, "chain")
	w.str(c.Name)
	w.key(false, "handle")
	w.uint(r.Handle)
	if r.Comment != "" {
		w.key(false, "comment")
		w.str(r.Comment)
	}
	w.key(false, "expr")
	w.raw("[")
	for i, s := range r.Stmts {
		if i > 0 {
			w.raw(", ")
		}
		w.stmt(s)
	}
	w.raw("]}}")
}

func (w *jwriter) verdict(v *nft.Verdict) {
	w.raw("{")
	w.str(v.Kind)
	if v.Target != "" {
		w.raw(`: {"target": `)
		w.str(v.Target)
		w.raw("}}")
		return
	}
	w.raw(": null}")
}

func (w *jwriter) counterBody(c *nft.Counter) {
	w.raw(`{"packets": `)
	w.uint(c.Packets)
	w.raw(`, "bytes": `)
	w.uint(c.Bytes)
	w.raw("}")
}

func (w *jwriter) open(kind string) {
	w.raw("{")
	w.str(kind)
	w.raw(": {")
}

func (w *jwriter) stmt(s nft.Stmt) {
	switch x := s.(type) {
	case *nft.Match:
		w.open("match")
		w.key(true, "op")
		op := string(x.Op)
		w.str(op)
		w.key(false, "left")
		w.expr(x.Left, "", nil)
		w.key(false, "right")
		w.expr(x.Right, nft.ExprType(x.Left), nft.ExprTypes(x.Left))
		w.raw("}}")
	case *nft.Verdict:
		w.verdict(x)
	case *nft.Vmap:
		w.open("vmap")
		w.key(true, "key")
		w.expr(x.Key, "", nil)
		w.key(false, "data")
		w.mapData(x.Data, nft.ExprTypes(x.Key), []string{"verdict"}, true)
		w.raw("}}")
	case *nft.Mangle:
		w.open("mangle")
		w.key(true, "key")
		w.expr(x.Key, "", nil)
		w.key(false, "value")
		w.expr(x.Value, nft.ExprType(x.Key), nil)
		w.raw("}}")
	case *nft.Counter:
		if x.Name != "" {
			w.raw(`{"counter": `)
			w.str(x.Name)
			w.raw("}")
			return
		}
		w.raw(`{"counter": `)
		w.counterBody(x)
		w.raw("}")
	case *nft.NAT:
		w.nat(x)
	case *nft.SetUpdate:
		w.open("set")
		w.key(true, "op")
		w.str(x.Op)
		w.key(false, "elem")
		if x.Timeout != 0 {
			w.raw(`{"elem": {"val": `)
			w.expr(x.Key, "", nil)
			w.raw(`, "timeout": `)
			w.uint(uint64(x.Timeout.Seconds()))
			w.raw("}}")
		} else {
			w.expr(x.Key, "", nil)
		}
		w.key(false, "set")
		w.str("@" + x.Set)
		w.raw("}}")
	case *nft.Log:
		w.log(x)
	case *nft.Limit:
		w.open("limit")
		w.key(true, "rate")
		w.uint(x.Rate)
		w.key(false, "burst")
		b := x.Burst
		if b == 0 && x.Unit == "" {
			b = 5
		}
		w.uint(b)
		w.key(false, "per")
		w.str(x.Per)
		if x.Over {
			w.key(false, "inv")
			w.raw("true")
		}
		if x.Unit != "" {
			w.key(false, "rate_unit")
			w.str(x.Unit)
			w.key(false, "burst_unit")
			if x.BurstUnit != "" {
				w.str(x.BurstUnit)
			} else {
				w.str("bytes")
			}
		}
		w.raw("}}")
	case *nft.Reject:
		typ, code := x.Type, x.Code
		if typ == "" {
			code = "port-unreachable"
			switch w.fam {
			case nftables.TableFamilyIPv4:
				typ = "icmp"
			case nftables.TableFamilyIPv6:
				typ = "icmpv6"
			default:
				typ = "icmpx"
			}
		}
		w.open("reject")
		w.key(true, "type")
		w.str(typ)
		if code != "" {
			w.key(false, "expr")
			w.str(code)
		}
		w.raw("}}")
	case *nft.Notrack:
		w.raw(`{"notrack": null}`)
	case *nft.Unsupported:
		if x.JSON != "" {
			w.raw(x.JSON)
			return
		}
		w.raw(`{"unsupported": `)
		w.str(x.Text)
		w.raw("}")
	}
}

func (w *jwriter) nat(x *nft.NAT) {
	if x.Family == "" && x.Addr == nil && x.Port == nil && len(x.Flags) == 0 {
		w.raw("{")
		w.str(x.Kind)
		w.raw(": null}")
		return
	}
	w.open(x.Kind)
	first := true
	if x.Family != "" {
		w.key(first, "family")
		w.str(x.Family)
		first = false
	}
	if x.Addr != nil {
		w.key(first, "addr")
		t := "ipv4_addr"
		if x.Family == "ip6" || w.fam == nftables.TableFamilyIPv6 {
			t = "ipv6_addr"
		}
		w.expr(x.Addr, t, nil)
		first = false
	}
	if x.Port != nil {
		w.key(first, "port")
		w.expr(x.Port, "inet_service", nil)
		first = false
	}
	if len(x.Flags) > 0 {
		w.key(first, "flags")
		w.strs(x.Flags, true)
	}
	w.raw("}}")
}

func (w *jwriter) log(x *nft.Log) {
	if x.Prefix == "" && x.Group == nil && x.Snaplen == nil && x.QueueThreshold == nil && x.Level == "" && len(x.Flags) == 0 {
		w.raw(`{"log": null}`)
		return
	}
	w.open("log")
	first := true
	k := func(name string) {
		w.key(first, name)
		first = false
	}
	if x.Prefix != "" {
		k("prefix")
		w.str(x.Prefix)
	}
	for _, f := range []struct {
		name string
		v    *uint32
	}{{"group", x.Group}, {"snaplen", x.Snaplen}, {"queue-threshold", x.QueueThreshold}} {
		if f.v != nil {
			k(f.name)
			w.uint(uint64(*f.v))
		}
	}
	if x.Level != "" {
		k("level")
		w.str(x.Level)
	}
	if len(x.Flags) > 0 {
		k("flags")
		w.strs(x.Flags, true)
	}
	w.raw("}}")
}

// mapData writes the data of a vmap or map: "@name" or {"set": [...]}.
func (w *jwriter) mapData(e nft.Expr, keyTypes, dataTypes []string, isMap bool) {
	switch x := e.(type) {
	case *nft.SetRef:
		w.str("@" + x.Name)
	case *nft.AnonSet:
		w.raw(`{"set": [`)
		for i := range x.Elements {
			if i > 0 {
				w.raw(", ")
			}
			w.elem(&x.Elements[i], keyTypes, dataTypes, isMap)
		}
		w.raw("]}")
	default:
		w.expr(e, "", nil)
	}
}

func (w *jwriter) expr(e nft.Expr, hint string, parts []string) {
	switch x := e.(type) {
	case *nft.Payload:
		w.raw(`{"payload": {"protocol": `)
		w.str(x.Proto)
		w.raw(`, "field": `)
		w.str(x.Field)
		w.raw("}}")
	case *nft.Meta:
		w.raw(`{"meta": {"key": `)
		w.str(x.Key)
		w.raw("}}")
	case *nft.Ct:
		w.raw(`{"ct": {"key": `)
		w.str(x.Key)
		if x.Dir != "" {
			w.raw(`, "dir": `)
			w.str(x.Dir)
		}
		w.raw("}}")
	case *nft.Fib:
		w.raw(`{"fib": {"result": `)
		w.str(x.Result)
		w.raw(`, "flags": `)
		w.strs(x.Flags, false)
		w.raw("}}")
	case *nft.Numgen:
		w.raw(`{"numgen": {"mode": `)
		w.str(x.Mode)
		w.raw(`, "mod": `)
		w.uint(uint64(x.Mod))
		w.raw(`, "offset": `)
		w.uint(uint64(x.Offset))
		w.raw("}}")
	case *nft.Concat:
		w.raw(`{"concat": [`)
		for i, p := range x.Parts {
			if i > 0 {
				w.raw(", ")
			}
			t := ""
			if i < len(parts) {
				t = parts[i]
			}
			w.expr(p, t, nil)
		}
		w.raw("]}")
	case *nft.Binop:
		w.raw("{")
		w.str(x.Op)
		w.raw(": [")
		w.expr(x.Left, hint, nil)
		w.raw(", ")
		rt := nft.ExprType(x.Left)
		if rt == "" {
			rt = hint
		}
		w.expr(x.Right, rt, nil)
		w.raw("]}")
	case *nft.Map:
		w.raw(`{"map": {"key": `)
		w.expr(x.Key, "", nil)
		w.raw(`, "data": `)
		dt := parts
		if dt == nil && hint != "" {
			dt = []string{hint}
		}
		w.mapData(x.Data, nft.ExprTypes(x.Key), dt, true)
		w.raw("}}")
	case *nft.Value:
		w.constant(x.Text, hint)
	case *nft.SetRef:
		w.str("@" + x.Name)
	case *nft.AnonSet:
		types := parts
		if types == nil {
			types = []string{hint}
		}
		w.raw(`{"set": [`)
		for i := range x.Elements {
			if i > 0 {
				w.raw(", ")
			}
			w.elem(&x.Elements[i], types, nil, false)
		}
		w.raw("]}")
	default:
		w.raw("null")
	}
}

// isBitmask reports whether values of datatype t are flag lists.
func isBitmask(t string) bool {
	switch t {
	case "ct_state", "ct_status", "tcp_flag", "ct_event":
		return true
	}
	return false
}

// isNumber reports whether s is a decimal or 0x-prefixed hexadecimal
// number.
func isNumber(s string) bool {
	if h, ok := strings.CutPrefix(s, "0x"); ok {
		_, err := strconv.ParseUint(h, 16, 64)
		return err == nil
	}
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}

// unquote strips the quotes of a quoted string.
func unquote(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return s
}
