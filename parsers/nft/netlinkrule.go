package nft

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
)

// Rules read over netlink are lists of low-level expressions (payload and
// meta loads into registers, comparisons, lookups, immediates) that nft
// decompiles into statements. ruleConv does the same for the statements
// the model knows, hiding the protocol dependencies nft adds and hides
// (`meta l4proto tcp` before `tcp dport`, `meta nfproto ipv4` before
// `ip saddr` in inet tables).

// unsupportedPrefix starts the text of the statement that keeps netlink
// expressions the decompiler does not know; nft refuses to load it.
const unsupportedPrefix = "unsupported netlink expressions:"

// ruleConv decompiles the rules of one table.
type ruleConv struct {
	fam  nftables.TableFamily
	sets map[string]*NetlinkSet
	// learned are the key types of sets, from the lookups that use them.
	learned map[string][]string
	ifnames map[uint32]string
}

func newRuleConv(nt *NetlinkTable, ifnames map[uint32]string) *ruleConv {
	c := &ruleConv{fam: nt.Table.Family, sets: map[string]*NetlinkSet{}, learned: map[string][]string{}, ifnames: ifnames}
	for i := range nt.Sets {
		c.sets[nt.Sets[i].Set.Name] = &nt.Sets[i]
	}
	return c
}

// keyTyped returns s with its key types restored when the netlink reader
// lost them (verdict maps): from the lookups of s, else guessed from the
// key length, which it then reports.
func (c *ruleConv) keyTyped(s *nftables.Set, elems []nftables.SetElement) (*nftables.Set, bool) {
	if !s.IsMap || s.KeyType.Name != TypeVerdictName {
		return s, false
	}
	cp := *s
	cp.DataType = nftables.TypeVerdict
	if t := c.learned[s.Name]; t != nil {
		cp.KeyType = nftables.SetDatatype{Name: strings.Join(t, " . ")}
		return &cp, false
	}
	// kube-proxy's verdict maps are keyed by an address, by a protocol
	// and port, or by all three.
	n := 0
	if len(elems) > 0 {
		n = len(elems[0].Key)
	}
	t := "integer"
	switch {
	case n == 4 && c.fam != nftables.TableFamilyIPv6:
		t = "ipv4_addr"
	case n == 8:
		t = "inet_proto . inet_service"
	case n == 12:
		t = "ipv4_addr . inet_proto . inet_service"
	case n == 16:
		t = "ipv6_addr"
	case n == 24:
		t = "ipv6_addr . inet_proto . inet_service"
	}
	cp.KeyType = nftables.SetDatatype{Name: t}
	return &cp, true
}

// item is what a register holds while a rule is decompiled.
type item struct {
	e    Expr   // the expression loaded; nil for immediate data
	typ  string // datatype of the values it is compared with ("" unknown)
	size int    // bytes
	// host reports that an integer is in host byte order.
	host bool
	data []byte // immediate data
	// plen is the prefix length of an address loaded partially or masked.
	plen int
	// base and mask are set after a bitwise AND (e is then the Binop).
	base Expr
	mask []byte
	// natConcat reports map data holding an address and a port.
	natConcat bool
}

// regUnit maps a register number to its 32-bit unit: NFT_REG_1..4 are
// 16 bytes wide and overlay NFT_REG32_00..15 (8..23).
func regUnit(r uint32) uint32 {
	if r >= 1 && r <= 4 {
		return 8 + (r-1)*4
	}
	return r
}

// decomp is the state of one rule's decompilation.
type decomp struct {
	c     *ruleConv
	exprs []expr.Any
	regs  map[uint32]*item
	stmts []Stmt
	// start is the first expression not yet part of an emitted statement.
	start int
	// l3 and l4 are the network and transport protocols the rule has
	// matched, which name the header fields loaded afterwards.
	l3, l4 string
}

type errUndecompiled struct{ e expr.Any }

func (e errUndecompiled) Error() string { return exprName(e.e) }

// rule decompiles a rule; what it cannot decompile, from the first
// expression of the statement it failed on, is kept in an [Unsupported]
// statement.
func (c *ruleConv) rule(r *nftables.Rule) *Rule {
	d := &decomp{c: c, exprs: r.Exprs, regs: map[uint32]*item{}}
	switch c.fam {
	case nftables.TableFamilyIPv4:
		d.l3 = "ip"
	case nftables.TableFamilyIPv6:
		d.l3 = "ip6"
	}
	out := &Rule{Handle: r.Handle}
	for i := 0; i < len(d.exprs); i++ {
		n, err := d.step(i)
		if err != nil {
			var names []string
			for _, e := range d.exprs[d.start:] {
				names = append(names, exprName(e))
			}
			d.stmts = append(d.stmts, &Unsupported{Text: unsupportedPrefix + " " + strings.Join(names, " ")})
			out.Unsupported = true
			break
		}
		i += n
	}
	out.Stmts = d.stmts
	if cm, ok := userdata.GetString(r.UserData, userdata.TypeComment); ok {
		out.Comment = cm
	}
	out.Raw = out.String()
	return out
}

// exprName names a netlink expression as nft's debug output does.
func exprName(e expr.Any) string {
	switch x := e.(type) {
	case *expr.Match:
		return "match:" + x.Name
	case *expr.Target:
		return "target:" + x.Name
	case *expr.Verdict:
		return "immediate"
	}
	return strings.ToLower(strings.TrimPrefix(fmt.Sprintf("%T", e), "*expr."))
}

func (d *decomp) emit(s Stmt, next int) {
	d.stmts = append(d.stmts, s)
	d.start = next
	clear(d.regs)
}

// hide drops a dependency nft does not print (the statement that
// follows starts at it, should it not be decompiled).
func (d *decomp) hide() { clear(d.regs) }

func (d *decomp) reg(r uint32, e expr.Any) (*item, error) {
	it := d.regs[regUnit(r)]
	if it == nil {
		return nil, errUndecompiled{e}
	}
	return it, nil
}

// concat returns the items loaded into consecutive registers from r.
func (d *decomp) concat(r uint32) []*item {
	var out []*item
	for u := regUnit(r); d.regs[u] != nil; {
		it := d.regs[u]
		out = append(out, it)
		u += uint32((max(it.size, 1) + 3) / 4)
	}
	return out
}

func concatExpr(items []*item) (Expr, bool) {
	for _, it := range items {
		if it.e == nil || it.plen != 0 {
			return nil, false
		}
	}
	if len(items) == 1 {
		return items[0].e, true
	}
	c := &Concat{}
	for _, it := range items {
		c.Parts = append(c.Parts, it.e)
	}
	return c, true
}

// next returns expression i+k, or nil.
func (d *decomp) next(i, k int) expr.Any {
	if i+k < len(d.exprs) {
		return d.exprs[i+k]
	}
	return nil
}

// step decompiles expression i and returns how many more it consumed.
func (d *decomp) step(i int) (int, error) {
	e := d.exprs[i]
	switch x := e.(type) {
	case *expr.Meta:
		name, ok := metaKeys[x.Key]
		if !ok {
			return 0, errUndecompiled{e}
		}
		if x.SourceRegister {
			v, err := d.value(x.Register, metaTypes[name], e)
			if err != nil {
				return 0, err
			}
			d.emit(&Mangle{Key: &Meta{Key: name}, Value: v}, i+1)
			return 0, nil
		}
		typ := metaTypes[name]
		d.regs[regUnit(x.Register)] = &item{e: &Meta{Key: name}, typ: typ, size: sizeOf(typ, 4), host: true}
	case *expr.Ct:
		name, ok := ctKeys[x.Key]
		if !ok || x.Register == 0 || x.SourceRegister {
			// github.com/google/nftables v0.3.0 does not read the source
			// register of `ct mark set ...`: it comes as a load into
			// register 0.
			return 0, errUndecompiled{e}
		}
		typ := ctTypes[name]
		d.regs[regUnit(x.Register)] = &item{e: &Ct{Key: name}, typ: typ, size: sizeOf(typ, 4), host: true}
	case *expr.Payload:
		if x.OperationType != expr.PayloadLoad {
			return 0, errUndecompiled{e}
		}
		it := d.payload(x)
		if it == nil {
			return 0, errUndecompiled{e}
		}
		d.regs[regUnit(x.DestRegister)] = it
	case *expr.Fib:
		f := &Fib{}
		for _, fl := range []struct {
			on   bool
			name string
		}{{x.FlagSADDR, "saddr"}, {x.FlagDADDR, "daddr"}, {x.FlagMARK, "mark"}, {x.FlagIIF, "iif"}, {x.FlagOIF, "oif"}} {
			if fl.on {
				f.Flags = append(f.Flags, fl.name)
			}
		}
		switch {
		case x.FlagPRESENT:
			return 0, errUndecompiled{e}
		case x.ResultADDRTYPE:
			f.Result = "type"
		case x.ResultOIF:
			f.Result = "oif"
		case x.ResultOIFNAME:
			f.Result = "oifname"
		default:
			return 0, errUndecompiled{e}
		}
		typ := ExprType(f)
		d.regs[regUnit(x.Register)] = &item{e: f, typ: typ, size: sizeOf(typ, 4), host: true}
	case *expr.Numgen:
		mode := "inc"
		switch x.Type {
		case 0:
		case 1:
			mode = "random"
		default:
			return 0, errUndecompiled{e}
		}
		d.regs[regUnit(x.Register)] = &item{e: &Numgen{Mode: mode, Mod: x.Modulus, Offset: x.Offset}, typ: "integer", size: 4, host: true}
	case *expr.Immediate:
		d.regs[regUnit(x.Register)] = &item{data: x.Data, size: len(x.Data)}
	case *expr.Bitwise:
		return 0, d.bitwise(x)
	case *expr.Cmp:
		return d.cmp(i, x)
	case *expr.Range:
		it, err := d.reg(x.Register, e)
		if err != nil || it.e == nil || it.base != nil || it.plen != 0 {
			return 0, errUndecompiled{e}
		}
		lo, err1 := d.constant(it, x.FromData)
		hi, err2 := d.constant(it, x.ToData)
		if err1 != nil || err2 != nil || (x.Op != expr.CmpOpEq && x.Op != expr.CmpOpNeq) {
			return 0, errUndecompiled{e}
		}
		d.emit(&Match{Left: it.e, Op: cmpOps[x.Op], Right: &Value{Text: lo + "-" + hi}}, i+1)
	case *expr.Lookup:
		return 0, d.lookup(i, x)
	case *expr.Dynset:
		if x.SrcRegData != 0 || len(x.Exprs) > 0 || x.Invert || x.Operation > 2 {
			return 0, errUndecompiled{e}
		}
		key, ok := concatExpr(d.concat(x.SrcRegKey))
		if !ok {
			return 0, errUndecompiled{e}
		}
		d.emit(&SetUpdate{Op: []string{"add", "update", "delete"}[x.Operation], Set: x.SetName, Key: key, Timeout: x.Timeout}, i+1)
	case *expr.Counter:
		d.emit(&Counter{Packets: x.Packets, Bytes: x.Bytes}, i+1)
	case *expr.Objref:
		if x.Type != 1 { // NFT_OBJECT_COUNTER
			return 0, errUndecompiled{e}
		}
		d.emit(&Counter{Name: x.Name}, i+1)
	case *expr.Verdict:
		v, err := verdictOf(x)
		if err != nil {
			return 0, errUndecompiled{e}
		}
		d.emit(v, i+1)
	case *expr.Notrack:
		d.emit(&Notrack{}, i+1)
	case *expr.Limit:
		l := d.limit(x)
		if l == nil {
			return 0, errUndecompiled{e}
		}
		d.emit(l, i+1)
	case *expr.Log:
		d.emit(logStmt(x), i+1)
	case *expr.Reject:
		r := d.reject(x)
		if r == nil {
			return 0, errUndecompiled{e}
		}
		d.emit(r, i+1)
	case *expr.Masq:
		n := &NAT{Kind: "masquerade", Flags: natFlags(x.Random, x.FullyRandom, x.Persistent)}
		if x.ToPorts {
			p, err := d.portRange(x.RegProtoMin, x.RegProtoMax, e)
			if err != nil {
				return 0, err
			}
			n.Port = p
		}
		d.emit(n, i+1)
	case *expr.Redir:
		n := &NAT{Kind: "redirect", Flags: natFlags(x.Flags&0x4 != 0, x.Flags&0x10 != 0, x.Flags&0x8 != 0)}
		if x.RegisterProtoMin != 0 {
			p, err := d.portRange(x.RegisterProtoMin, x.RegisterProtoMax, e)
			if err != nil {
				return 0, err
			}
			n.Port = p
		}
		d.emit(n, i+1)
	case *expr.NAT:
		n, err := d.nat(x)
		if err != nil {
			return 0, err
		}
		d.emit(n, i+1)
	default:
		return 0, errUndecompiled{e}
	}
	return 0, nil
}

// metaKeys are the names of the meta keys (NFT_META_*).
var metaKeys = map[expr.MetaKey]string{
	expr.MetaKeyLEN: "length", expr.MetaKeyPROTOCOL: "protocol", expr.MetaKeyPRIORITY: "priority",
	expr.MetaKeyMARK: "mark", expr.MetaKeyIIF: "iif", expr.MetaKeyOIF: "oif", expr.MetaKeyIIFNAME: "iifname",
	expr.MetaKeyOIFNAME: "oifname", expr.MetaKeyIIFTYPE: "iiftype", expr.MetaKeyOIFTYPE: "oiftype",
	expr.MetaKeySKUID: "skuid", expr.MetaKeySKGID: "skgid",
	expr.MetaKeyRTCLASSID: "rtclassid", expr.MetaKeyNFPROTO: "nfproto", expr.MetaKeyL4PROTO: "l4proto",
	expr.MetaKeyBRIIIFNAME: "ibrname", expr.MetaKeyBRIOIFNAME: "obrname", expr.MetaKeyPKTTYPE: "pkttype",
	expr.MetaKeyCPU: "cpu", expr.MetaKeyIIFGROUP: "iifgroup", expr.MetaKeyOIFGROUP: "oifgroup",
	expr.MetaKeyCGROUP: "cgroup", expr.MetaKeyPRANDOM: "random",
}

// ctKeys are the names of the ct keys whose netlink form carries no
// direction (NFT_CT_*).
var ctKeys = map[expr.CtKey]string{
	expr.CtKeySTATE: "state", expr.CtKeyDIRECTION: "direction", expr.CtKeySTATUS: "status",
	expr.CtKeyMARK: "mark", expr.CtKeyL3PROTOCOL: "l3proto", expr.CtKeyPROTOCOL: "protocol",
}

var cmpOps = map[expr.CmpOp]Op{
	expr.CmpOpEq: OpEq, expr.CmpOpNeq: OpNeq, expr.CmpOpLt: OpLt, expr.CmpOpLte: OpLte,
	expr.CmpOpGt: OpGt, expr.CmpOpGte: OpGte,
}

// sizeOf returns the byte size of datatype t, or def.
func sizeOf(t string, def int) int {
	if n, ok := typeSize(t); ok {
		return n
	}
	return def
}

// transportFields name the transport header fields by protocol, offset
// and length.
var transportFields = map[string]map[[2]uint32]string{
	"tcp": {{0, 2}: "sport", {2, 2}: "dport", {4, 4}: "sequence", {8, 4}: "ackseq", {13, 1}: "flags",
		{14, 2}: "window", {16, 2}: "checksum", {18, 2}: "urgptr"},
	"udp":     {{0, 2}: "sport", {2, 2}: "dport", {4, 2}: "length", {6, 2}: "checksum"},
	"udplite": {{0, 2}: "sport", {2, 2}: "dport", {4, 2}: "csumcov", {6, 2}: "checksum"},
	"sctp":    {{0, 2}: "sport", {2, 2}: "dport", {4, 4}: "vtag", {8, 4}: "checksum"},
	"dccp":    {{0, 2}: "sport", {2, 2}: "dport"},
	"icmp":    {{0, 1}: "type", {1, 1}: "code", {2, 2}: "checksum", {4, 2}: "id", {6, 2}: "sequence", {4, 4}: "gateway"},
	"icmpv6":  {{0, 1}: "type", {1, 1}: "code", {2, 2}: "checksum", {4, 2}: "id", {6, 2}: "sequence"},
	"th":      {{0, 2}: "sport", {2, 2}: "dport"},
}

// networkFields name the IPv4 and IPv6 header fields by offset and
// length; addresses may be loaded partially (a prefix).
var networkFields = map[string]map[[2]uint32]string{
	"ip": {{2, 2}: "length", {4, 2}: "id", {6, 2}: "frag-off", {8, 1}: "ttl", {9, 1}: "protocol",
		{10, 2}: "checksum", {12, 4}: "saddr", {16, 4}: "daddr"},
	"ip6": {{4, 2}: "length", {6, 1}: "nexthdr", {7, 1}: "hoplimit", {8, 16}: "saddr", {24, 16}: "daddr"},
}

// l4Names are the transport protocols whose header fields nft names, by
// the inet_proto name of the protocol.
var l4Names = map[string]string{"tcp": "tcp", "udp": "udp", "udplite": "udplite", "sctp": "sctp", "dccp": "dccp",
	"icmp": "icmp", "ipv6-icmp": "icmpv6"}

// payload names a header field load.
func (d *decomp) payload(p *expr.Payload) *item {
	switch p.Base {
	case expr.PayloadBaseNetworkHeader:
		fields := networkFields[d.l3]
		if fields == nil {
			return nil
		}
		// A prefix match loads only the bytes it needs: `ip daddr
		// 127.0.0.0/8` is a one-byte load.
		full := uint32(4)
		if d.l3 == "ip6" {
			full = 16
		}
		if name, ok := fields[[2]uint32{p.Offset, full}]; ok && p.Len < full && p.Len > 0 && strings.HasSuffix(name, "addr") {
			pl := &Payload{Proto: d.l3, Field: name}
			return &item{e: pl, typ: ExprType(pl), size: int(full), plen: int(p.Len) * 8}
		}
		name, ok := fields[[2]uint32{p.Offset, p.Len}]
		if !ok {
			return nil
		}
		pl := &Payload{Proto: d.l3, Field: name}
		return &item{e: pl, typ: ExprType(pl), size: int(p.Len)}
	case expr.PayloadBaseTransportHeader:
		proto := "th"
		if n, ok := l4Names[d.l4]; ok {
			proto = n
		}
		name, ok := transportFields[proto][[2]uint32{p.Offset, p.Len}]
		if !ok && proto != "th" {
			proto = "th"
			name, ok = transportFields[proto][[2]uint32{p.Offset, p.Len}]
		}
		if !ok {
			return nil
		}
		pl := &Payload{Proto: proto, Field: name}
		return &item{e: pl, typ: ExprType(pl), size: int(p.Len)}
	}
	return nil
}

func transportLoad(e expr.Any) bool { return isLoad(e, expr.PayloadBaseTransportHeader) }
func networkLoad(e expr.Any) bool   { return isLoad(e, expr.PayloadBaseNetworkHeader) }

// isLoad reports whether e loads a header field of base b.
func isLoad(e expr.Any, b expr.PayloadBase) bool {
	p, ok := e.(*expr.Payload)
	return ok && p.OperationType == expr.PayloadLoad && p.Base == b
}

// loadsAhead reports whether one of the loads into registers from
// expression i on (those of the next statement: `ip daddr . tcp dport`
// loads the address first) satisfies pred.
func (d *decomp) loadsAhead(i int, pred func(expr.Any) bool) bool {
	for ; i < len(d.exprs); i++ {
		switch x := d.exprs[i].(type) {
		case *expr.Payload:
			if x.OperationType != expr.PayloadLoad {
				return false
			}
		case *expr.Meta:
			if x.SourceRegister {
				return false
			}
		case *expr.Ct, *expr.Fib, *expr.Numgen, *expr.Immediate, *expr.Bitwise:
		default:
			return false
		}
		if pred(d.exprs[i]) {
			return true
		}
	}
	return false
}

func isMetaLoad(e expr.Any, k expr.MetaKey) bool {
	m, ok := e.(*expr.Meta)
	return ok && !m.SourceRegister && m.Key == k
}

// familyProto reports whether e matches a transport protocol of one
// network protocol (icmp, igmp, ipv6-icmp), which nft makes depend on
// `meta nfproto` in inet tables.
func familyProto(e expr.Any) bool {
	c, ok := e.(*expr.Cmp)
	return ok && c.Op == expr.CmpOpEq && len(c.Data) == 1 && (c.Data[0] == 1 || c.Data[0] == 2 || c.Data[0] == 58)
}

// constant renders data compared with (or set into) it.
func (d *decomp) constant(it *item, data []byte) (string, error) {
	switch it.typ {
	case "", "integer", "time":
		n, ok := uintOf(data, it.host)
		if !ok {
			return "", fmt.Errorf("%d-byte integer", len(data))
		}
		return strconv.FormatUint(n, 10), nil
	case "iface_index":
		if n, ok := uintOf(data, true); ok && d.c.ifnames[uint32(n)] != "" {
			return `"` + d.c.ifnames[uint32(n)] + `"`, nil
		}
	case "ifname", "string":
		if len(data) < it.size && (len(data) == 0 || data[len(data)-1] != 0) {
			return `"` + string(data) + `*"`, nil // a prefix match: `iifname "veth*"`
		}
	}
	return valueText(data, it.typ)
}

// value returns what register r holds as the value of a mangle or NAT
// statement of datatype typ.
func (d *decomp) value(r uint32, typ string, e expr.Any) (Expr, error) {
	it, err := d.reg(r, e)
	if err != nil {
		return nil, err
	}
	if it.e != nil {
		if it.plen != 0 {
			return nil, errUndecompiled{e}
		}
		return it.e, nil
	}
	t, err := d.constant(&item{typ: typ, size: it.size, host: true}, it.data)
	if err != nil {
		return nil, errUndecompiled{e}
	}
	return &Value{Text: t}, nil
}

func isZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

func isOnes(b []byte) bool {
	for _, x := range b {
		if x != 0xff {
			return false
		}
	}
	return len(b) > 0
}

// maskLen returns the length of a network mask, -1 when it is not one.
func maskLen(mask []byte) int {
	n, done := 0, false
	for _, b := range mask {
		for bit := 7; bit >= 0; bit-- {
			switch set := b&(1<<bit) != 0; {
			case set && done:
				return -1
			case set:
				n++
			default:
				done = true
			}
		}
	}
	return n
}

func (d *decomp) bitwise(x *expr.Bitwise) error {
	src, err := d.reg(x.SourceRegister, x)
	if err != nil || src.e == nil || src.base != nil || len(x.Mask) != len(x.Xor) {
		return errUndecompiled{x}
	}
	addr := src.typ == "ipv4_addr" || src.typ == "ipv6_addr"
	if src.plen != 0 && !(addr && isZero(x.Xor) && maskLen(x.Mask) >= 0) {
		return errUndecompiled{x}
	}
	val := func(b []byte) (Expr, error) {
		t, err := d.constant(src, b)
		return &Value{Text: t}, err
	}
	out := *src
	switch {
	case addr && isZero(x.Xor) && maskLen(x.Mask) >= 0:
		// A prefix not on a byte boundary: `ip saddr 10.0.0.0/20`.
		out.plen = maskLen(x.Mask)
	case isZero(x.Xor):
		m, err := val(x.Mask)
		if err != nil {
			return errUndecompiled{x}
		}
		out.e, out.base, out.mask = &Binop{Op: "&", Left: src.e, Right: m}, src.e, x.Mask
	case isOnes(x.Mask):
		v, err := val(x.Xor)
		if err != nil {
			return errUndecompiled{x}
		}
		out.e = &Binop{Op: "^", Left: src.e, Right: v}
	default:
		or := true
		for k := range x.Mask {
			or = or && x.Mask[k] == ^x.Xor[k]
		}
		if !or {
			return errUndecompiled{x}
		}
		v, err := val(x.Xor)
		if err != nil {
			return errUndecompiled{x}
		}
		out.e = &Binop{Op: "|", Left: src.e, Right: v}
	}
	d.regs[regUnit(x.DestRegister)] = &out
	return nil
}

func (d *decomp) cmp(i int, x *expr.Cmp) (int, error) {
	it, err := d.reg(x.Register, x)
	if err != nil || it.e == nil {
		return 0, errUndecompiled{x}
	}
	// The dependencies nft adds and hides: `meta l4proto tcp` before a
	// transport header field, `meta nfproto ipv4` before a network header
	// field (or a hidden l4proto dependency) in inet tables.
	if m, ok := it.e.(*Meta); ok && x.Op == expr.CmpOpEq && it.base == nil {
		switch m.Key {
		case "l4proto":
			if d.loadsAhead(i+1, transportLoad) {
				if p, err := valueText(x.Data, "inet_proto"); err == nil && l4Names[p] != "" {
					d.l4 = p
					d.hide()
					return 0, nil
				}
			}
		case "nfproto":
			p, _ := valueText(x.Data, "nf_proto")
			l3 := map[string]string{"ipv4": "ip", "ipv6": "ip6"}[p]
			if l3 != "" && (d.loadsAhead(i+1, networkLoad) ||
				isMetaLoad(d.next(i, 1), expr.MetaKeyL4PROTO) && familyProto(d.next(i, 2)) && d.loadsAhead(i+3, transportLoad)) {
				d.l3 = l3
				d.hide()
				return 0, nil
			}
		}
	}
	op := cmpOps[x.Op]
	data := x.Data
	consumed := 0
	var right string
	switch {
	case it.base != nil && isBitmask(it.typ) && x.Op == expr.CmpOpNeq && isZero(data):
		// A flag test: `ct state established,related`.
		m, err := d.constant(it, it.mask)
		if err != nil {
			return 0, errUndecompiled{x}
		}
		d.emit(&Match{Left: it.base, Op: OpIn, Right: &Value{Text: m}}, i+1)
		return 0, nil
	case it.plen != 0:
		full := append(append([]byte(nil), data...), make([]byte, max(it.size-len(data), 0))...)
		t, err := valueText(full, it.typ)
		if err != nil {
			return 0, errUndecompiled{x}
		}
		right = t
		if it.plen < it.size*8 {
			right += "/" + strconv.Itoa(it.plen)
		}
	default:
		t, err := d.constant(it, data)
		if err != nil {
			return 0, errUndecompiled{x}
		}
		right = t
		// A range: `tcp dport 1000-2000`.
		if next, ok := d.next(i, 1).(*expr.Cmp); ok && x.Op == expr.CmpOpGte && next.Op == expr.CmpOpLte && next.Register == x.Register {
			hi, err := d.constant(it, next.Data)
			if err != nil {
				return 0, errUndecompiled{x}
			}
			right, op, consumed = t+"-"+hi, OpEq, 1
		}
	}
	st := &Match{Left: it.e, Op: op, Right: &Value{Text: right}}
	if op == OpEq && it.base == nil {
		d.noteProto(it.e, right)
	}
	d.emit(st, i+1+consumed)
	return consumed, nil
}

// noteProto remembers the protocol a match selects, which names the
// header fields loaded after it.
func (d *decomp) noteProto(e Expr, v string) {
	switch x := e.(type) {
	case *Meta:
		if x.Key == "l4proto" {
			d.l4 = v
		}
		if x.Key == "nfproto" {
			if l3 := map[string]string{"ipv4": "ip", "ipv6": "ip6"}[v]; l3 != "" {
				d.l3 = l3
			}
		}
	case *Payload:
		if x.Proto == "ip" && x.Field == "protocol" || x.Proto == "ip6" && x.Field == "nexthdr" {
			d.l4 = v
		}
	}
}

// setRef returns the reference to set name for a lookup with key types
// types: @name, or the elements of an anonymous set.
func (d *decomp) setRef(name string, types []string, mapData bool) (Expr, *NetlinkSet, error) {
	ns := d.c.sets[name]
	if ns == nil {
		return nil, nil, fmt.Errorf("set %s not found", name)
	}
	for _, t := range types {
		if t == "" {
			types = nil
		}
	}
	if types != nil {
		d.c.learned[name] = types
	}
	if !ns.Set.Anonymous {
		return &SetRef{Name: name}, ns, nil
	}
	s := *ns.Set
	if s.KeyType.Name == TypeVerdictName || s.KeyType.Name == "" {
		if types == nil {
			return nil, nil, fmt.Errorf("key types of anonymous set %s unknown", name)
		}
		s.KeyType = nftables.SetDatatype{Name: strings.Join(types, " . ")}
		if s.IsMap && !mapData {
			s.DataType = nftables.TypeVerdict
		}
	}
	ms, err := FromSet(&s, ns.Elements)
	if err != nil {
		return nil, nil, err
	}
	return &AnonSet{Elements: ms.Elements}, ns, nil
}

func (d *decomp) lookup(i int, x *expr.Lookup) error {
	items := d.concat(x.SourceRegister)
	key, ok := concatExpr(items)
	if !ok {
		return errUndecompiled{x}
	}
	mapData := x.IsDestRegSet && x.DestRegister != 0
	ref, ns, err := d.setRef(x.SetName, ExprTypes(key), mapData)
	if err != nil {
		return errUndecompiled{x}
	}
	switch {
	case x.IsDestRegSet && x.DestRegister == 0:
		d.emit(&Vmap{Key: key, Data: ref}, i+1)
	case x.IsDestRegSet:
		clear(d.regs)
		dt := typeNames(ns.Set.DataType)
		it := &item{e: &Map{Key: key, Data: ref}, typ: strings.Join(dt, " . "), size: int(ns.Set.DataType.Bytes)}
		if len(dt) == 2 && (dt[0] == "ipv4_addr" || dt[0] == "ipv6_addr") && dt[1] == "inet_service" {
			it.natConcat = true
		}
		d.regs[regUnit(x.DestRegister)] = it
	case x.Invert:
		d.emit(&Match{Left: key, Op: OpNeq, Right: ref}, i+1)
	default:
		d.emit(&Match{Left: key, Op: OpEq, Right: ref}, i+1)
	}
	return nil
}

// portRange returns the port (or port range) of a NAT statement.
func (d *decomp) portRange(lo, hi uint32, e expr.Any) (Expr, error) {
	p, err := d.value(lo, "inet_service", e)
	if err != nil || hi == 0 || hi == lo {
		return p, err
	}
	q, err := d.value(hi, "inet_service", e)
	if err != nil {
		return nil, err
	}
	pv, ok1 := p.(*Value)
	qv, ok2 := q.(*Value)
	if !ok1 || !ok2 {
		return nil, errUndecompiled{e}
	}
	if pv.Text == qv.Text {
		return pv, nil
	}
	return &Value{Text: pv.Text + "-" + qv.Text}, nil
}

func natFlags(random, fully, persistent bool) []string {
	var out []string
	if random {
		out = append(out, "random")
	}
	if fully {
		out = append(out, "fully-random")
	}
	if persistent {
		out = append(out, "persistent")
	}
	return out
}

func (d *decomp) nat(x *expr.NAT) (*NAT, error) {
	if x.Prefix {
		return nil, errUndecompiled{x}
	}
	n := &NAT{Kind: "dnat", Flags: natFlags(x.Random, x.FullyRandom, x.Persistent)}
	if x.Type == expr.NATTypeSourceNAT {
		n.Kind = "snat"
	}
	addrType, fam := "ipv4_addr", "ip"
	if x.Family == uint32(nftables.TableFamilyIPv6) {
		addrType, fam = "ipv6_addr", "ip6"
	}
	if d.c.fam == nftables.TableFamilyINet {
		n.Family = fam
	}
	if x.RegAddrMin != 0 {
		a, err := d.reg(x.RegAddrMin, x)
		if err != nil {
			return nil, err
		}
		switch {
		case a.e != nil && a.natConcat:
			// `dnat ip to numgen random mod 2 map { 0 : 10.0.0.1 . 80, ... }`
			n.Family, n.Addr = fam, a.e
			return n, nil
		case a.e != nil:
			if a.plen != 0 {
				return nil, errUndecompiled{x}
			}
			n.Addr = a.e
		default:
			lo := a.data
			hi := lo
			if x.RegAddrMax != 0 && x.RegAddrMax != x.RegAddrMin {
				b, err := d.reg(x.RegAddrMax, x)
				if err != nil || b.data == nil {
					return nil, errUndecompiled{x}
				}
				hi = b.data
			}
			t, err := rangeText(lo, hi, addrType)
			if err != nil {
				return nil, errUndecompiled{x}
			}
			n.Addr = &Value{Text: t}
		}
	}
	if x.RegProtoMin != 0 {
		p, err := d.portRange(x.RegProtoMin, x.RegProtoMax, x)
		if err != nil {
			return nil, err
		}
		n.Port = p
	}
	return n, nil
}

// rejectTypes are the names of reject types (NFT_REJECT_*) and the
// datatypes of their codes; type 0 depends on the network protocol.
func (d *decomp) reject(x *expr.Reject) *Reject {
	r := &Reject{}
	var codes string
	switch x.Type {
	case 0: // NFT_REJECT_ICMP_UNREACH
		switch d.l3 {
		case "ip":
			r.Type, codes = "icmp", "icmp_code"
		case "ip6":
			r.Type, codes = "icmpv6", "icmpv6_code"
		default:
			return nil
		}
	case 1: // NFT_REJECT_TCP_RST
		r.Type = "tcp reset"
	case 2: // NFT_REJECT_ICMPX_UNREACH
		r.Type, codes = "icmpx", "icmpx_code"
	default:
		return nil
	}
	if codes != "" {
		c, err := valueText([]byte{x.Code}, codes)
		if err != nil {
			return nil
		}
		r.Code = c
	}
	canonReject(r, d.c.fam)
	return r
}

var limitPer = map[expr.LimitTime]string{expr.LimitTimeSecond: "second", expr.LimitTimeMinute: "minute",
	expr.LimitTimeHour: "hour", expr.LimitTimeDay: "day", expr.LimitTimeWeek: "week"}

// byteRate splits a byte count as nft prints it (get_rate): bytes,
// kbytes or mbytes.
func byteRate(n uint64) (uint64, string) {
	units := []string{"bytes", "kbytes", "mbytes"}
	i := 0
	for ; i < len(units)-1 && n%1024 == 0 && n > 0; i++ {
		n /= 1024
	}
	return n, units[i]
}

func (d *decomp) limit(x *expr.Limit) *Limit {
	per, ok := limitPer[x.Unit]
	if !ok {
		return nil
	}
	l := &Limit{Over: x.Over, Rate: x.Rate, Per: per}
	switch x.Type {
	case expr.LimitTypePkts:
		if x.Burst != 5 {
			l.Burst = uint64(x.Burst)
		}
	case expr.LimitTypePktBytes:
		l.Rate, l.Unit = byteRate(x.Rate)
		if x.Burst != 0 {
			l.Burst, l.BurstUnit = byteRate(uint64(x.Burst))
		}
	default:
		return nil
	}
	return l
}

func logStmt(x *expr.Log) *Log {
	l := &Log{}
	has := func(attr uint32) bool { return x.Key&(1<<attr) != 0 }
	if has(2) { // NFTA_LOG_PREFIX
		l.Prefix = string(bytes.TrimRight(x.Data, "\x00"))
	}
	if has(1) { // NFTA_LOG_GROUP
		g := uint32(x.Group)
		l.Group = &g
	}
	if has(3) { // NFTA_LOG_SNAPLEN
		s := x.Snaplen
		l.Snaplen = &s
	}
	if has(4) { // NFTA_LOG_QTHRESHOLD
		q := uint32(x.QThreshold)
		l.QueueThreshold = &q
	}
	if has(5) && x.Level != expr.LogLevelWarning && int(x.Level) < len(logLevels) {
		l.Level = logLevels[x.Level]
	}
	if has(6) {
		var fl []string
		if x.Flags&expr.LogFlagsMask == expr.LogFlagsMask {
			fl = []string{"all"}
		} else {
			for _, f := range []struct {
				bit  expr.LogFlags
				name string
			}{{expr.LogFlagsTCPSeq, "tcp sequence"}, {expr.LogFlagsTCPOpt, "tcp options"}, {expr.LogFlagsIPOpt, "ip options"},
				{expr.LogFlagsUID, "skuid"}, {expr.LogFlagsMACDecode, "ether"}} {
				if x.Flags&f.bit != 0 {
					fl = append(fl, f.name)
				}
			}
		}
		l.Flags, _ = canonLogFlags(fl)
	}
	return l
}
