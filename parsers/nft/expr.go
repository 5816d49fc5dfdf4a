package nft

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// Expr is an expression of a rule: a packet selector ([Payload], [Meta],
// [Ct], [Fib], [Numgen]), a combination of them ([Concat], [Binop], [Map])
// or a constant ([Value], [SetRef], [AnonSet]).
type Expr interface {
	appendExpr(b []byte) []byte
}

// Stmt is a statement of a rule.
type Stmt interface {
	appendStmt(b []byte) []byte
}

// Payload is a packet header field: `ip daddr`, `tcp dport`, `th dport`.
type Payload struct {
	Proto string `json:"proto"` // ip, ip6, tcp, udp, sctp, th, icmp, ether, ...
	Field string `json:"field"`
}

// Meta is packet meta information: `meta l4proto`, `meta mark`, `iifname`.
type Meta struct {
	Key string `json:"key"`
}

// Ct is connection tracking state: `ct state`, `ct status`,
// `ct original ip saddr`.
type Ct struct {
	Dir    string `json:"dir,omitempty"`    // "original", "reply"
	Family string `json:"family,omitempty"` // "ip", "ip6" (for saddr/daddr with a direction)
	Key    string `json:"key"`
}

// Fib is a FIB lookup: `fib saddr type`, `fib daddr . iif oif`.
type Fib struct {
	Flags  []string `json:"flags"`  // saddr, daddr, mark, iif, oif
	Result string   `json:"result"` // type, oif, oifname
}

// Numgen is a number generator: `numgen random mod 3`.
type Numgen struct {
	Mode   string `json:"mode"` // "random", "inc"
	Mod    uint32 `json:"mod"`
	Offset uint32 `json:"offset,omitempty"`
}

// Concat is a concatenation: `ip daddr . meta l4proto . th dport`.
type Concat struct {
	Parts []Expr `json:"parts"`
}

// Binop is a bitwise operation: `meta mark & 0x00004000`,
// `meta mark | 0x00004000`.
type Binop struct {
	Op    string `json:"op"` // "&", "|", "^", "<<", ">>"
	Left  Expr   `json:"left"`
	Right Expr   `json:"right"`
}

// Map is a map lookup yielding data: `numgen random mod 2 map { 0 : ..., 1 : ... }`,
// `ip saddr map @m`. Data is a [*SetRef] or an [*AnonSet].
type Map struct {
	Key  Expr `json:"key"`
	Data Expr `json:"data"`
}

// Value is a constant as nft prints it: "10.0.0.1", "10.0.0.0/8",
// "1000-2000", "tcp", "80", "0x00004000", "established,related", `"eth0"`.
type Value struct {
	Text string `json:"text"`
}

// SetRef is a reference to a named set or map: `@cluster-ips`.
type SetRef struct {
	Name string `json:"name"`
}

// AnonSet is an anonymous set or map written in the rule:
// `{ 10.0.0.0/8, 192.168.0.0/16 }`, `{ 0 : goto a, 1 : goto b }`.
type AnonSet struct {
	Elements []Element `json:"elements"`
}

// Op is the operator of a [Match].
type Op string

// The operators of a match. OpEq covers equality, prefix, range and set
// membership; nft prints it only where it must. OpIn is the implicit flag
// test of bitmask types (`ct state new`, `tcp flags syn`), which JSON
// spells "in".
const (
	OpEq  Op = "=="
	OpNeq Op = "!="
	OpLt  Op = "<"
	OpGt  Op = ">"
	OpLte Op = "<="
	OpGte Op = ">="
	OpIn  Op = "in"
)

// Match is a relational statement: `ip daddr 10.0.0.1`,
// `ip saddr != 10.0.0.0/8`, `ct state new`, `ip daddr @cluster-ips`,
// `meta mark & 0x00004000 != 0x00000000`.
type Match struct {
	Left  Expr `json:"left"`
	Op    Op   `json:"op"`
	Right Expr `json:"right"`
}

// Verdict is a verdict statement (or a verdict map element's data):
// accept, drop, continue, return, jump X, goto X.
type Verdict struct {
	Kind   string `json:"kind"`
	Target string `json:"target,omitempty"` // chain of jump and goto
}

// Vmap is a verdict map lookup: `ip daddr . meta l4proto . th dport vmap @service-ips`,
// `numgen random mod 2 vmap { 0 : goto a, 1 : goto b }`. Data is a
// [*SetRef] or an [*AnonSet].
type Vmap struct {
	Key  Expr `json:"key"`
	Data Expr `json:"data"`
}

// NAT is a NAT statement: `dnat to 10.0.0.1:80`, `dnat ip to numgen ... map { ... }`,
// `snat to ...`, `masquerade fully-random`, `redirect to :8080`.
type NAT struct {
	Kind   string   `json:"kind"`             // "snat", "dnat", "masquerade", "redirect"
	Family string   `json:"family,omitempty"` // "ip", "ip6" when printed (`dnat ip to`)
	Addr   Expr     `json:"addr,omitempty"`
	Port   Expr     `json:"port,omitempty"`
	Flags  []string `json:"flags,omitempty"` // random, fully-random, persistent (in that order)
}

// Mangle sets a packet or connection field: `meta mark set meta mark | 0x00004000`,
// `ct mark set meta mark`.
type Mangle struct {
	Key   Expr `json:"key"`
	Value Expr `json:"value"`
}

// Counter is a counter statement: `counter packets 3 bytes 180`, or a
// reference to a named counter (`counter name "c"`).
type Counter struct {
	Name    string `json:"name,omitempty"`
	Packets uint64 `json:"packets"`
	Bytes   uint64 `json:"bytes"`
}

// SetUpdate adds to or updates a set from the packet path:
// `update @affinity-x { ip saddr }`, `add @s { ip saddr timeout 30s }`.
type SetUpdate struct {
	Op      string        `json:"op"` // "add", "update", "delete"
	Set     string        `json:"set"`
	Key     Expr          `json:"key"`
	Timeout time.Duration `json:"timeout,omitempty"`
}

// Log is a log statement.
type Log struct {
	Prefix         string  `json:"prefix,omitempty"`
	Group          *uint32 `json:"group,omitempty"`
	Snaplen        *uint32 `json:"snaplen,omitempty"`
	QueueThreshold *uint32 `json:"queueThreshold,omitempty"`
	Level          string  `json:"level,omitempty"` // empty for the default (warn)
	// Flags are in JSON spelling and nft's order: "all", or some of
	// "tcp sequence", "tcp options", "ip options", "skuid", "ether".
	Flags []string `json:"flags,omitempty"`
}

// Limit is a rate limit: `limit rate 5/second burst 10 packets`,
// `limit rate over 1 mbytes/second`.
type Limit struct {
	Over      bool   `json:"over,omitempty"`
	Rate      uint64 `json:"rate"`
	Unit      string `json:"unit,omitempty"` // empty for packets, else bytes, kbytes, mbytes
	Per       string `json:"per"`            // second, minute, hour, day, week
	Burst     uint64 `json:"burst,omitempty"`
	BurstUnit string `json:"burstUnit,omitempty"` // for byte limits
}

// Reject is a reject statement. Type and Code are empty for the family's
// default (port unreachable), which nft prints as plain `reject`.
type Reject struct {
	Type string `json:"type,omitempty"` // "icmp", "icmpv6", "icmpx", "tcp reset"
	Code string `json:"code,omitempty"` // "admin-prohibited", ...
}

// Notrack is the notrack statement.
type Notrack struct{}

// Unsupported is the part of a rule the package does not model, from the
// first statement it could not read to the end of the rule. Text is that
// text as listed (text input); JSON is the statement's JSON (JSON input).
type Unsupported struct {
	Text string `json:"text,omitempty"`
	JSON string `json:"json,omitempty"`
}

// tagged renders v (a value of a local alias type) as {"kind": v}.
func tagged(kind string, v any) ([]byte, error) {
	return json.Marshal(map[string]any{kind: v})
}

// MarshalJSON renders the expression tagged with its kind.
func (x *Payload) MarshalJSON() ([]byte, error) { type t Payload; return tagged("payload", (*t)(x)) }

// MarshalJSON renders the expression tagged with its kind.
func (x *Meta) MarshalJSON() ([]byte, error) { type t Meta; return tagged("meta", (*t)(x)) }

// MarshalJSON renders the expression tagged with its kind.
func (x *Ct) MarshalJSON() ([]byte, error) { type t Ct; return tagged("ct", (*t)(x)) }

// MarshalJSON renders the expression tagged with its kind.
func (x *Fib) MarshalJSON() ([]byte, error) { type t Fib; return tagged("fib", (*t)(x)) }

// MarshalJSON renders the expression tagged with its kind.
func (x *Numgen) MarshalJSON() ([]byte, error) { type t Numgen; return tagged("numgen", (*t)(x)) }

// MarshalJSON renders the expression tagged with its kind.
func (x *Concat) MarshalJSON() ([]byte, error) { type t Concat; return tagged("concat", (*t)(x)) }

// MarshalJSON renders the expression tagged with its kind.
func (x *Binop) MarshalJSON() ([]byte, error) { type t Binop; return tagged("binop", (*t)(x)) }

// MarshalJSON renders the expression tagged with its kind.
func (x *Map) MarshalJSON() ([]byte, error) { type t Map; return tagged("map", (*t)(x)) }

// MarshalJSON renders the expression tagged with its kind.
func (x *Value) MarshalJSON() ([]byte, error) { return tagged("value", x.Text) }

// MarshalJSON renders the expression tagged with its kind.
func (x *SetRef) MarshalJSON() ([]byte, error) { return tagged("setref", x.Name) }

// MarshalJSON renders the expression tagged with its kind.
func (x *AnonSet) MarshalJSON() ([]byte, error) { return tagged("set", x.Elements) }

// MarshalJSON renders the statement tagged with its kind.
func (x *Match) MarshalJSON() ([]byte, error) { type t Match; return tagged("match", (*t)(x)) }

// MarshalJSON renders the statement tagged with its kind.
func (x *Verdict) MarshalJSON() ([]byte, error) { type t Verdict; return tagged("verdict", (*t)(x)) }

// MarshalJSON renders the statement tagged with its kind.
func (x *Vmap) MarshalJSON() ([]byte, error) { type t Vmap; return tagged("vmap", (*t)(x)) }

// MarshalJSON renders the statement tagged with its kind.
func (x *NAT) MarshalJSON() ([]byte, error) { type t NAT; return tagged("nat", (*t)(x)) }

// MarshalJSON renders the statement tagged with its kind.
func (x *Mangle) MarshalJSON() ([]byte, error) { type t Mangle; return tagged("mangle", (*t)(x)) }

// MarshalJSON renders the statement tagged with its kind.
func (x *Counter) MarshalJSON() ([]byte, error) { type t Counter; return tagged("counter", (*t)(x)) }

// MarshalJSON renders the statement tagged with its kind.
func (x *SetUpdate) MarshalJSON() ([]byte, error) {
	type t SetUpdate
	return tagged("setupdate", (*t)(x))
}

// MarshalJSON renders the statement tagged with its kind.
func (x *Log) MarshalJSON() ([]byte, error) { type t Log; return tagged("log", (*t)(x)) }

// MarshalJSON renders the statement tagged with its kind.
func (x *Limit) MarshalJSON() ([]byte, error) { type t Limit; return tagged("limit", (*t)(x)) }

// MarshalJSON renders the statement tagged with its kind.
func (x *Reject) MarshalJSON() ([]byte, error) { type t Reject; return tagged("reject", (*t)(x)) }

// MarshalJSON renders the statement tagged with its kind.
func (x *Notrack) MarshalJSON() ([]byte, error) { return tagged("notrack", struct{}{}) }

// MarshalJSON renders the statement tagged with its kind.
func (x *Unsupported) MarshalJSON() ([]byte, error) {
	type t Unsupported
	return tagged("unsupported", (*t)(x))
}

// ---- text rendering ----

// unqualifiedMeta are the meta keys nft prints without "meta".
var unqualifiedMeta = map[string]bool{
	"iif": true, "oif": true, "iifname": true, "oifname": true, "iifgroup": true, "oifgroup": true,
}

func (x *Payload) appendExpr(b []byte) []byte {
	b = append(b, x.Proto...)
	b = append(b, ' ')
	return append(b, x.Field...)
}

func (x *Meta) appendExpr(b []byte) []byte {
	if !unqualifiedMeta[x.Key] {
		b = append(b, "meta "...)
	}
	return append(b, x.Key...)
}

func (x *Ct) appendExpr(b []byte) []byte {
	b = append(b, "ct "...)
	if x.Dir != "" {
		b = append(b, x.Dir...)
		b = append(b, ' ')
	}
	if x.Family != "" {
		b = append(b, x.Family...)
		b = append(b, ' ')
	}
	return append(b, x.Key...)
}

func (x *Fib) appendExpr(b []byte) []byte {
	b = append(b, "fib "...)
	for i, f := range x.Flags {
		if i > 0 {
			b = append(b, " . "...)
		}
		b = append(b, f...)
	}
	b = append(b, ' ')
	return append(b, x.Result...)
}

func (x *Numgen) appendExpr(b []byte) []byte {
	b = append(b, "numgen "...)
	b = append(b, x.Mode...)
	b = append(b, " mod "...)
	b = strconv.AppendUint(b, uint64(x.Mod), 10)
	if x.Offset != 0 {
		b = append(b, " offset "...)
		b = strconv.AppendUint(b, uint64(x.Offset), 10)
	}
	return b
}

func (x *Concat) appendExpr(b []byte) []byte {
	for i, p := range x.Parts {
		if i > 0 {
			b = append(b, " . "...)
		}
		b = appendExpr(b, p)
	}
	return b
}

var binopPrec = map[string]int{"<<": 1, ">>": 1, "&": 2, "^": 3, "|": 4}

// appendBinopArg prints an operand of op, in parentheses when it binds
// less tightly (nft's binop_arg_print).
func appendBinopArg(b []byte, op string, arg Expr) []byte {
	if a, ok := arg.(*Binop); ok && binopPrec[op] != 0 && binopPrec[op] < binopPrec[a.Op] {
		b = append(b, '(')
		b = appendExpr(b, arg)
		return append(b, ')')
	}
	return appendExpr(b, arg)
}

func (x *Binop) appendExpr(b []byte) []byte {
	b = appendBinopArg(b, x.Op, x.Left)
	b = append(b, ' ')
	b = append(b, x.Op...)
	b = append(b, ' ')
	return appendBinopArg(b, x.Op, x.Right)
}

func (x *Map) appendExpr(b []byte) []byte {
	b = appendExpr(b, x.Key)
	b = append(b, " map "...)
	return appendExpr(b, x.Data)
}

func (x *Value) appendExpr(b []byte) []byte  { return append(b, x.Text...) }
func (x *SetRef) appendExpr(b []byte) []byte { return append(append(b, '@'), x.Name...) }

func (x *AnonSet) appendExpr(b []byte) []byte {
	b = append(b, "{ "...)
	for i := range x.Elements {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendElement(b, &x.Elements[i])
	}
	return append(b, " }"...)
}

func appendExpr(b []byte, e Expr) []byte {
	if e == nil {
		return b
	}
	return e.appendExpr(b)
}

// appendElement prints an element as nft does: key, counter, timeout,
// expires, comment, then " : " and the data.
func appendElement(b []byte, e *Element) []byte {
	it := e.iter()
	for i := range it.nkey {
		k, _ := it.next()
		if i > 0 {
			b = append(b, " . "...)
		}
		b = append(b, k...)
	}
	if c := e.Counter(); c != nil {
		b = append(b, ' ')
		b = c.appendStmt(b)
	}
	if t := e.Timeout(); t != 0 {
		b = append(b, " timeout "...)
		b = appendTime(b, t)
	}
	if t := e.Expires(); t != 0 {
		b = append(b, " expires "...)
		b = appendTime(b, t)
	}
	if c := e.Comment(); c != "" {
		b = append(b, " comment \""...)
		b = append(b, c...)
		b = append(b, '"')
	}
	switch {
	case e.Verdict != nil:
		b = append(b, " : "...)
		b = e.Verdict.appendStmt(b)
	case e.HasData():
		b = append(b, " : "...)
		for i := 0; ; i++ {
			d, ok := it.next()
			if !ok {
				break
			}
			if i > 0 {
				b = append(b, " . "...)
			}
			b = append(b, d...)
		}
	}
	return b
}

// flagcmp reports whether m is printed in nft's flag comparison form
// `tcp flags syn / syn,ack` and returns the masked selector and the mask.
func (x *Match) flagcmp() (Expr, Expr, bool) {
	bo, ok := x.Left.(*Binop)
	if !ok || bo.Op != "&" || (x.Op != OpEq && x.Op != OpNeq) {
		return nil, nil, false
	}
	if _, ok := bo.Right.(*Value); !ok {
		return nil, nil, false
	}
	if _, ok := x.Right.(*Value); !ok || !isBitmask(ExprType(bo.Left)) {
		return nil, nil, false
	}
	return bo.Left, bo.Right, true
}

func (x *Match) appendStmt(b []byte) []byte {
	if sel, mask, ok := x.flagcmp(); ok {
		b = appendExpr(b, sel)
		if x.Op == OpNeq {
			b = append(b, " != "...)
		} else {
			b = append(b, ' ')
		}
		b = appendExpr(b, x.Right)
		b = append(b, " / "...)
		return appendExpr(b, mask)
	}
	b = appendExpr(b, x.Left)
	switch x.Op {
	case OpIn:
		b = append(b, ' ')
	case OpEq:
		if x.mustPrintEq() {
			b = append(b, " == "...)
		} else {
			b = append(b, ' ')
		}
	default:
		b = append(b, ' ')
		b = append(b, x.Op...)
		b = append(b, ' ')
	}
	return appendExpr(b, x.Right)
}

// mustPrintEq is nft's must_print_eq_op: "==" is printed when the left
// side is a binop or the right side is a single bitmask value.
func (x *Match) mustPrintEq() bool {
	if _, ok := x.Left.(*Binop); ok {
		return true
	}
	_, isVal := x.Right.(*Value)
	return isVal && isBitmask(ExprType(x.Left))
}

func (x *Verdict) appendStmt(b []byte) []byte {
	b = append(b, x.Kind...)
	if x.Target != "" {
		b = append(b, ' ')
		b = append(b, x.Target...)
	}
	return b
}

func (x *Vmap) appendStmt(b []byte) []byte {
	b = appendExpr(b, x.Key)
	b = append(b, " vmap "...)
	return appendExpr(b, x.Data)
}

func (x *NAT) appendStmt(b []byte) []byte {
	b = append(b, x.Kind...)
	if x.Addr != nil || x.Port != nil {
		if x.Family != "" {
			b = append(b, ' ')
			b = append(b, x.Family...)
		}
		b = append(b, " to"...)
	}
	if x.Addr != nil {
		b = append(b, ' ')
		v, isVal := x.Addr.(*Value)
		if x.Port != nil && isVal && strings.Contains(v.Text, ":") {
			// IPv6 address (or range) followed by a port: bracketed.
			if lo, hi, ok := strings.Cut(v.Text, "-"); ok {
				b = append(b, '[')
				b = append(b, lo...)
				b = append(b, "]-["...)
				b = append(b, hi...)
				b = append(b, ']')
			} else {
				b = append(b, '[')
				b = append(b, v.Text...)
				b = append(b, ']')
			}
		} else {
			b = appendExpr(b, x.Addr)
		}
	}
	if x.Port != nil {
		if x.Addr == nil {
			b = append(b, ' ')
		}
		b = append(b, ':')
		b = appendExpr(b, x.Port)
	}
	if len(x.Flags) > 0 {
		b = append(b, ' ')
		b = append(b, strings.Join(x.Flags, ",")...)
	}
	return b
}

func (x *Mangle) appendStmt(b []byte) []byte {
	b = appendExpr(b, x.Key)
	b = append(b, " set "...)
	return appendExpr(b, x.Value)
}

func (x *Counter) appendStmt(b []byte) []byte {
	if x.Name != "" {
		b = append(b, "counter name \""...)
		b = append(b, x.Name...)
		return append(b, '"')
	}
	b = append(b, "counter packets "...)
	b = strconv.AppendUint(b, x.Packets, 10)
	b = append(b, " bytes "...)
	return strconv.AppendUint(b, x.Bytes, 10)
}

func (x *SetUpdate) appendStmt(b []byte) []byte {
	b = append(b, x.Op...)
	b = append(b, " @"...)
	b = append(b, x.Set...)
	b = append(b, " { "...)
	b = appendExpr(b, x.Key)
	if x.Timeout != 0 {
		b = append(b, " timeout "...)
		b = appendTime(b, x.Timeout)
	}
	return append(b, " }"...)
}

func (x *Log) appendStmt(b []byte) []byte {
	b = append(b, "log"...)
	if x.Prefix != "" {
		b = append(b, " prefix \""...)
		b = append(b, x.Prefix...)
		b = append(b, '"')
	}
	if x.Group != nil {
		b = append(b, " group "...)
		b = strconv.AppendUint(b, uint64(*x.Group), 10)
	}
	if x.Snaplen != nil {
		b = append(b, " snaplen "...)
		b = strconv.AppendUint(b, uint64(*x.Snaplen), 10)
	}
	if x.QueueThreshold != nil {
		b = append(b, " queue-threshold "...)
		b = strconv.AppendUint(b, uint64(*x.QueueThreshold), 10)
	}
	if x.Level != "" {
		b = append(b, " level "...)
		b = append(b, x.Level...)
	}
	has := map[string]bool{}
	for _, f := range x.Flags {
		has[f] = true
	}
	if has["all"] {
		return append(b, " flags all"...)
	}
	if has["tcp sequence"] || has["tcp options"] {
		b = append(b, " flags tcp"...)
		d := " "
		if has["tcp sequence"] {
			b = append(b, " sequence"...)
			d = ","
		}
		if has["tcp options"] {
			b = append(b, d...)
			b = append(b, "options"...)
		}
	}
	if has["ip options"] {
		b = append(b, " flags ip options"...)
	}
	if has["skuid"] {
		b = append(b, " flags skuid"...)
	}
	if has["ether"] {
		b = append(b, " flags ether"...)
	}
	return b
}

func (x *Limit) appendStmt(b []byte) []byte {
	b = append(b, "limit rate "...)
	if x.Over {
		b = append(b, "over "...)
	}
	b = strconv.AppendUint(b, x.Rate, 10)
	if x.Unit != "" {
		b = append(b, ' ')
		b = append(b, x.Unit...)
	}
	b = append(b, '/')
	b = append(b, x.Per...)
	if x.Burst != 0 {
		b = append(b, " burst "...)
		b = strconv.AppendUint(b, x.Burst, 10)
		b = append(b, ' ')
		if x.Unit == "" {
			b = append(b, "packets"...)
		} else {
			b = append(b, x.BurstUnit...)
		}
	}
	return b
}

func (x *Reject) appendStmt(b []byte) []byte {
	b = append(b, "reject"...)
	if x.Type != "" {
		b = append(b, " with "...)
		b = append(b, x.Type...)
		if x.Code != "" {
			b = append(b, ' ')
			b = append(b, x.Code...)
		}
	}
	return b
}

func (x *Notrack) appendStmt(b []byte) []byte { return append(b, "notrack"...) }

func (x *Unsupported) appendStmt(b []byte) []byte {
	if x.Text != "" {
		return append(b, x.Text...)
	}
	// Only JSON is known: write something nft refuses to load, so that a
	// formatted ruleset can never silently lose the statement.
	b = append(b, "unsupported-json "...)
	return append(b, x.JSON...)
}

// appendRule prints the statements and comment of r.
func appendRule(b []byte, r *Rule) []byte {
	for i, s := range r.Stmts {
		if i > 0 {
			b = append(b, ' ')
		}
		b = s.appendStmt(b)
	}
	// A rule of a comment alone keeps it even when empty (comment ""),
	// so that it prints as a rule.
	if r.Comment != "" || len(r.Stmts) == 0 {
		if len(r.Stmts) > 0 {
			b = append(b, ' ')
		}
		b = append(b, "comment \""...)
		b = append(b, r.Comment...)
		b = append(b, '"')
	}
	return b
}

// appendTime prints d as nft's time_print does: 1d2h3m4s5ms.
func appendTime(b []byte, d time.Duration) []byte {
	ms := uint64(d / time.Millisecond)
	days := ms / 86400000
	ms %= 86400000
	hours := ms / 3600000
	ms %= 3600000
	mins := ms / 60000
	ms %= 60000
	secs := ms / 1000
	ms %= 1000
	if days > 0 {
		b = append(strconv.AppendUint(b, days, 10), 'd')
	}
	if hours > 0 {
		b = append(strconv.AppendUint(b, hours, 10), 'h')
	}
	if mins > 0 {
		b = append(strconv.AppendUint(b, mins, 10), 'm')
	}
	if secs > 0 {
		b = append(strconv.AppendUint(b, secs, 10), 's')
	}
	if ms > 0 {
		b = append(strconv.AppendUint(b, ms, 10), "ms"...)
	}
	return b
}

// ExprString returns e in nft's text form (`ip daddr . meta l4proto . th dport`).
func ExprString(e Expr) string { return string(appendExpr(nil, e)) }

// StmtString returns s in nft's text form (`dnat to 10.0.0.1:80`).
func StmtString(s Stmt) string { return string(s.appendStmt(nil)) }
