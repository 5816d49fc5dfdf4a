package nft

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/google/nftables"

	"github.com/proxyscan/proxyscan/parsers"
)

// maxInput bounds the size of one listing.
const maxInput = 1 << 30

// Parse parses either form of a ruleset listing: JSON (`nft -j list
// ruleset`) when the input starts with '{', text otherwise.
func Parse(name string, data []byte) (*Ruleset, error) {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		return ParseJSON(name, data)
	}
	return ParseText(name, data)
}

type tableKey struct {
	fam  nftables.TableFamily
	name string
}

type objKey struct {
	t    *Table
	name string
}

type pseg struct {
	key string
	idx int // -1 for a member name
}

// jconv converts the items of the "nftables" array into the model.
type jconv struct {
	r      jreader
	name   string
	path   []pseg
	rs     *Ruleset
	tables map[tableKey]*Table
	chains map[objKey]*Chain
	sets   map[objKey]*Set
	prefix []byte // scratch for positions
	render []byte // scratch for Rule.Raw
	// curFamily is the family of the table of the rule being converted.
	curFamily nftables.TableFamily
	// itemLine is the line on which the item being converted starts;
	// lineOff the offset up to which lines were counted.
	itemLine, lineOff int
}

// ParseJSON parses the JSON of `nft -j list ruleset` (libnftables JSON
// schema version 1). name is the file name used in positions and errors,
// which carry JSON paths such as $.nftables[42].rule.expr[1].
func ParseJSON(name string, data []byte) (*Ruleset, error) {
	if len(data) > maxInput {
		return nil, parsers.Errorf(parsers.Pos{File: name}, "input larger than %d bytes", maxInput)
	}
	c := &jconv{
		r:      jreader{src: string(data)},
		name:   name,
		rs:     &Ruleset{},
		tables: map[tableKey]*Table{},
		chains: map[objKey]*Chain{},
		sets:   map[objKey]*Set{},
	}
	if err := c.top(); err != nil {
		var se *jsyntaxError
		if errors.As(err, &se) {
			return nil, parsers.Errorf(parsers.Pos{File: name, Line: lineAt(c.r.src, se.off), Path: c.pathString()}, "%s", se.msg)
		}
		return nil, err
	}
	return c.rs, nil
}

func lineAt(s string, off int) int {
	if off > len(s) {
		off = len(s)
	}
	return strings.Count(s[:off], "\n") + 1
}

func (c *jconv) pathString() string {
	var b strings.Builder
	b.WriteByte('$')
	for _, s := range c.path {
		if s.idx >= 0 {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.idx))
			b.WriteByte(']')
		} else {
			b.WriteByte('.')
			b.WriteString(s.key)
		}
	}
	return b.String()
}

func (c *jconv) errf(format string, args ...any) error {
	return parsers.Errorf(c.pos(), format, args...)
}

func (c *jconv) push(key string)  { c.path = append(c.path, pseg{key: key, idx: -1}) }
func (c *jconv) pushIdx(i int)    { c.path = append(c.path, pseg{idx: i}) }
func (c *jconv) pop()             { c.path = c.path[:len(c.path)-1] }
func (c *jconv) pos() parsers.Pos { return parsers.Pos{File: c.name, Path: c.pathString()} }

func (c *jconv) top() error {
	r := &c.r
	if r.peekByte() != '{' {
		return c.errf("not an nft JSON listing: expected an object")
	}
	r.i++
	found := false
	if r.peekByte() == '}' {
		r.i++
	} else {
		for {
			if r.peekByte() != '"' {
				return r.fail("expected a member name")
			}
			key, err := r.string()
			if err != nil {
				return err
			}
			if err := r.expect(':'); err != nil {
				return err
			}
			if key == "nftables" && !found {
				found = true
				c.push("nftables")
				if err := c.items(); err != nil {
					return err
				}
				c.pop()
			} else {
				r.arena = r.arena[:0]
				if _, err := r.value(); err != nil {
					return err
				}
			}
			sep := r.peekByte()
			if sep == ',' {
				r.i++
				continue
			}
			if err := r.expect('}'); err != nil {
				return err
			}
			break
		}
	}
	if r.peekByte() != 0 {
		return r.fail("unexpected data after the JSON object")
	}
	if !found {
		return c.errf("not an nft JSON listing: no \"nftables\" array")
	}
	return nil
}

func (c *jconv) items() error {
	r := &c.r
	if r.peekByte() != '[' {
		return c.errf("expected an array")
	}
	r.i++
	if r.peekByte() == ']' {
		r.i++
		return nil
	}
	for i := 0; ; i++ {
		c.pushIdx(i)
		r.arena = r.arena[:0]
		n, err := r.value()
		if err != nil {
			return err
		}
		c.countLines(int(n.off))
		if err := c.item(&n); err != nil {
			return err
		}
		c.pop()
		sep := r.peekByte()
		if sep == ',' {
			r.i++
			continue
		}
		return r.expect(']')
	}
}

func (c *jconv) typeErr(n *jnode, want string) error {
	return c.errf("expected %s, found %s", want, kindName(n.kind))
}

// field returns member key of obj, checking its kind; nil when absent.
func (c *jconv) field(obj *jnode, key string, kind byte, required bool) (*jnode, error) {
	m := c.r.member(obj, key)
	if m == nil {
		if required {
			return nil, c.errf("missing %q", key)
		}
		return nil, nil
	}
	if m.kind != kind && !(kind == jTrue && m.kind == jFalse) {
		c.push(key)
		defer c.pop()
		return nil, c.typeErr(m, kindName(kind))
	}
	return m, nil
}

func (c *jconv) strField(obj *jnode, key string, required bool) (string, error) {
	m, err := c.field(obj, key, jString, required)
	if m == nil || err != nil {
		return "", err
	}
	return m.str, nil
}

func (c *jconv) uintField(obj *jnode, key string, bits int) (uint64, error) {
	m := c.r.member(obj, key)
	if m == nil {
		return 0, nil
	}
	v, err := nodeUint(m, bits)
	if err != nil {
		c.push(key)
		defer c.pop()
		return 0, c.errf("expected an unsigned %d-bit integer, found %s", bits, describe(m))
	}
	return v, nil
}

func describe(n *jnode) string {
	if n.kind == jNumber {
		return n.str
	}
	return kindName(n.kind)
}

// strList reads a member that is a string or an array of strings.
func (c *jconv) strList(obj *jnode, key string) ([]string, error) {
	m := c.r.member(obj, key)
	if m == nil {
		return nil, nil
	}
	c.push(key)
	defer c.pop()
	switch m.kind {
	case jString:
		return []string{m.str}, nil
	case jArray:
		var out []string
		for i, k := range c.r.kids(m) {
			if k.kind != jString {
				c.pushIdx(i)
				err := c.typeErr(&k, "a string")
				c.pop()
				return nil, err
			}
			out = append(out, k.str)
		}
		return out, nil
	}
	return nil, c.typeErr(m, "a string or an array of strings")
}

func (c *jconv) item(n *jnode) error {
	kv, ok := c.r.single(n)
	if !ok {
		return c.errf("expected an object with one member naming the kind of item")
	}
	c.push(kv.key)
	defer c.pop()
	if kv.key != "metainfo" && kv.kind != jObject {
		return c.typeErr(kv, "an object")
	}
	switch kv.key {
	case "metainfo":
		return c.metainfo(kv)
	case "table":
		return c.table(kv)
	case "chain":
		return c.chain(kv)
	case "set", "map":
		return c.set(kv, kv.key == "map")
	case "element":
		return c.element(kv)
	case "rule":
		return c.rule(kv)
	case "counter", "quota", "limit", "ct helper", "ct timeout", "ct expectation", "secmark", "synproxy", "flowtable":
		return c.object(kv, n)
	}
	return c.errf("unknown item kind %q", kv.key)
}

func (c *jconv) metainfo(n *jnode) error {
	if n.kind != jObject {
		return c.typeErr(n, "an object")
	}
	v := c.r.member(n, "json_schema_version")
	if v == nil {
		return nil
	}
	c.push("json_schema_version")
	defer c.pop()
	if v.kind != jNumber {
		return c.typeErr(v, "a number")
	}
	if v.str != "1" {
		return c.errf("unsupported json_schema_version %s (only 1 is known)", v.str)
	}
	return nil
}

// familyTable reads "family" and "table" and finds the table.
func (c *jconv) familyTable(n *jnode) (*Table, error) {
	fs, err := c.strField(n, "family", true)
	if err != nil {
		return nil, err
	}
	fam, ok := ParseFamily(fs)
	if !ok {
		c.push("family")
		defer c.pop()
		return nil, c.errf("unknown family %q", fs)
	}
	tn, err := c.strField(n, "table", true)
	if err != nil {
		return nil, err
	}
	t := c.tables[tableKey{fam, tn}]
	if t == nil {
		return nil, c.errf("table %s %s is not listed before", fs, tn)
	}
	return t, nil
}

func (c *jconv) table(n *jnode) error {
	fs, err := c.strField(n, "family", true)
	if err != nil {
		return err
	}
	fam, ok := ParseFamily(fs)
	if !ok {
		c.push("family")
		defer c.pop()
		return c.errf("unknown family %q", fs)
	}
	name, err := c.strField(n, "name", true)
	if err != nil {
		return err
	}
	t := &Table{Family: fam, Name: name, Pos: c.itemPos()}
	if t.Handle, err = c.uintField(n, "handle", 64); err != nil {
		return err
	}
	if t.Comment, err = c.strField(n, "comment", false); err != nil {
		return err
	}
	if t.Flags, err = c.strList(n, "flags"); err != nil {
		return err
	}
	k := tableKey{fam, name}
	if c.tables[k] != nil {
		return c.errf("table %s %s is listed twice", fs, name)
	}
	c.tables[k] = t
	c.rs.Tables = append(c.rs.Tables, t)
	return nil
}

// itemPos is the position of the current item ($.nftables[i]).
func (c *jconv) itemPos() parsers.Pos {
	return parsers.Pos{File: c.name, Path: "$.nftables[" + strconv.Itoa(c.path[1].idx) + "]"}
}

// countLines records in ItemLines the line of the input at off, where an
// item starts, counting the lines from where the last item started (items
// come in order).
func (c *jconv) countLines(off int) {
	if c.itemLine == 0 {
		c.itemLine = 1
	}
	off = min(off, len(c.r.src))
	if off > c.lineOff {
		c.itemLine += strings.Count(c.r.src[c.lineOff:off], "\n")
		c.lineOff = off
	}
	c.rs.ItemLines = append(c.rs.ItemLines, c.itemLine)
}

func (c *jconv) chain(n *jnode) error {
	t, err := c.familyTable(n)
	if err != nil {
		return err
	}
	name, err := c.strField(n, "name", true)
	if err != nil {
		return err
	}
	ch := &Chain{Name: name}
	ch.SetPos(c.itemPos())
	if ch.Handle, err = c.uintField(n, "handle", 64); err != nil {
		return err
	}
	if ch.Comment, err = c.strField(n, "comment", false); err != nil {
		return err
	}
	hook, err := c.strField(n, "hook", false)
	if err != nil {
		return err
	}
	if hook != "" {
		if _, ok := HookNum(t.Family, hook); !ok {
			c.push("hook")
			defer c.pop()
			return c.errf("unknown hook %q for family %s", hook, FamilyName(t.Family))
		}
		ch.Hook = hook
		typ, err := c.strField(n, "type", true)
		if err != nil {
			return err
		}
		switch nftables.ChainType(typ) {
		case nftables.ChainTypeFilter, nftables.ChainTypeNAT, nftables.ChainTypeRoute:
			ch.Type = nftables.ChainType(typ)
		default:
			c.push("type")
			defer c.pop()
			return c.errf("unknown chain type %q", typ)
		}
		p, err := c.field(n, "prio", jNumber, true)
		if err != nil {
			return err
		}
		v, perr := strconv.ParseInt(p.str, 10, 32)
		if perr != nil {
			c.push("prio")
			defer c.pop()
			return c.errf("expected a 32-bit integer, found %s", p.str)
		}
		ch.Priority = newPriority(t.Family, hook, int32(v))
		pol, err := c.strField(n, "policy", false)
		if err != nil {
			return err
		}
		if pol != "" {
			pp, ok := parsePolicy(pol)
			if !ok {
				c.push("policy")
				defer c.pop()
				return c.errf("unknown policy %q", pol)
			}
			ch.Policy = pp
		}
		if ch.Devices, err = c.strList(n, "dev"); err != nil {
			return err
		}
	}
	k := objKey{t, name}
	if c.chains[k] != nil {
		return c.errf("chain %s is listed twice", name)
	}
	c.chains[k] = ch
	t.Chains = append(t.Chains, ch)
	return nil
}

func (c *jconv) set(n *jnode, isMap bool) error {
	t, err := c.familyTable(n)
	if err != nil {
		return err
	}
	name, err := c.strField(n, "name", true)
	if err != nil {
		return err
	}
	s := &Set{Name: name, IsMap: isMap, Pos: c.itemPos()}
	if s.Handle, err = c.uintField(n, "handle", 64); err != nil {
		return err
	}
	if s.KeyType, err = c.strList(n, "type"); err != nil {
		return err
	}
	if len(s.KeyType) == 0 {
		return c.errf("missing \"type\"")
	}
	if isMap {
		if s.DataType, err = c.strList(n, "map"); err != nil {
			return err
		}
		if len(s.DataType) == 0 {
			return c.errf("missing \"map\"")
		}
	}
	flags, err := c.strList(n, "flags")
	if err != nil {
		return err
	}
	var unk string
	if s.Flags, unk = canonSetFlags(flags); unk != "" {
		c.push("flags")
		defer c.pop()
		return c.errf("unknown set flag %q", unk)
	}
	for _, k := range []string{"timeout", "gc-interval"} {
		v, err := c.uintField(n, k, 32)
		if err != nil {
			return err
		}
		d := time.Duration(v) * time.Second
		if k == "timeout" {
			s.Timeout = d
		} else {
			s.GCInterval = d
		}
	}
	if s.Timeout != 0 && !s.HasFlag("timeout") {
		s.Flags, _ = canonSetFlags(append(s.Flags, "timeout"))
	}
	size, err := c.uintField(n, "size", 32)
	if err != nil {
		return err
	}
	s.Size = uint32(size)
	pol, err := c.strField(n, "policy", false)
	if err != nil {
		return err
	}
	switch pol {
	case "", "performance":
	case "memory":
		s.Policy = pol
	default:
		c.push("policy")
		defer c.pop()
		return c.errf("unknown set policy %q", pol)
	}
	if am, err := c.field(n, "auto-merge", jTrue, false); err != nil {
		return err
	} else if am != nil {
		s.AutoMerge = am.kind == jTrue
	}
	if s.Comment, err = c.strField(n, "comment", false); err != nil {
		return err
	}
	if st, err := c.field(n, "stmt", jArray, false); err != nil {
		return err
	} else if st != nil {
		for _, k := range c.r.kids(st) {
			if kv, ok := c.r.single(&k); ok && kv.key == "counter" {
				s.Counter = true
			}
		}
	}
	k := objKey{t, name}
	if c.sets[k] != nil {
		return c.errf("set %s is listed twice", name)
	}
	if err := c.elems(n, s); err != nil {
		return err
	}
	c.sets[k] = s
	t.Sets = append(t.Sets, s)
	return nil
}

// element reads an "element" item (the elements of a set listed apart).
func (c *jconv) element(n *jnode) error {
	t, err := c.familyTable(n)
	if err != nil {
		return err
	}
	name, err := c.strField(n, "name", true)
	if err != nil {
		return err
	}
	s := c.sets[objKey{t, name}]
	if s == nil {
		return c.errf("set %s is not listed before its elements", name)
	}
	return c.elems(n, s)
}

func (c *jconv) elems(n *jnode, s *Set) error {
	el, err := c.field(n, "elem", jArray, false)
	if el == nil || err != nil {
		return err
	}
	c.push("elem")
	defer c.pop()
	prefix := append(c.prefix[:0], c.itemPos().Path...)
	prefix = append(prefix, '.')
	prefix = append(prefix, c.path[len(c.path)-2].key...)
	prefix = append(prefix, ".elem["...)
	c.prefix = prefix
	kids := c.r.kids(el)
	if len(kids) == 0 {
		return nil
	}
	if s.Elements == nil {
		s.Elements = make([]Element, 0, len(kids))
	}
	for i := range kids {
		c.pushIdx(i)
		e, err := c.elem(&kids[i], s.KeyType, s.DataType, s.IsMap)
		if err != nil {
			return err
		}
		p := strconv.AppendInt(prefix, int64(i), 10)
		e.Where = &parsers.Pos{File: c.name, Path: string(append(p, ']'))}
		s.Elements = append(s.Elements, e)
		c.pop()
	}
	return nil
}

// elem reads an element of a named or anonymous set or map.
func (c *jconv) elem(n *jnode, keyTypes, dataTypes []string, isMap bool) (Element, error) {
	var e Element
	var data []string
	key := n
	if isMap {
		if n.kind != jArray || n.n != 2 {
			return e, c.errf("expected a [key, data] pair")
		}
		kids := c.r.kids(n)
		key = &kids[0]
		c.pushIdx(1)
		if len(dataTypes) == 1 && dataTypes[0] == "verdict" {
			v, err := c.verdict(&kids[1])
			if err != nil {
				return e, err
			}
			e.Verdict = v
		} else {
			d, err := c.parts(&kids[1], dataTypes)
			if err != nil {
				return e, err
			}
			data = d
		}
		c.pop()
		c.pushIdx(0)
		defer c.pop()
	}
	if w := c.r.member(key, "elem"); w != nil && key.n == 1 {
		c.push("elem")
		defer c.pop()
		if w.kind != jObject {
			return e, c.typeErr(w, "an object")
		}
		val := c.r.member(w, "val")
		if val == nil {
			return e, c.errf("missing \"val\"")
		}
		for _, k := range []string{"timeout", "expires"} {
			v, err := c.uintField(w, k, 32)
			if err != nil {
				return e, err
			}
			if k == "timeout" {
				if v != 0 {
					e.attrs().Timeout = time.Duration(v) * time.Second
				}
			} else {
				if v != 0 {
					e.attrs().Expires = time.Duration(v) * time.Second
				}
			}
		}
		cm, err := c.strField(w, "comment", false)
		if err != nil {
			return e, err
		}
		if cm != "" {
			e.attrs().Comment = cm
		}
		if cn, err := c.field(w, "counter", jObject, false); err != nil {
			return e, err
		} else if cn != nil {
			c.push("counter")
			ctr, err := c.counterObj(cn)
			c.pop()
			if err != nil {
				return e, err
			}
			e.attrs().Counter = ctr
		}
		key = val
		c.push("val")
		defer c.pop()
	}
	k, err := c.parts(key, keyTypes)
	if err != nil {
		return e, err
	}
	e.setParts(k, data)
	return e, nil
}

// parts renders a (possibly concatenated) constant as text parts.
func (c *jconv) parts(n *jnode, types []string) ([]string, error) {
	if cc := c.r.member(n, "concat"); cc != nil && n.n == 1 {
		if cc.kind != jArray {
			return nil, c.typeErr(cc, "an array")
		}
		c.push("concat")
		defer c.pop()
		kids := c.r.kids(cc)
		out := make([]string, len(kids))
		for i := range kids {
			t := ""
			if i < len(types) {
				t = types[i]
			}
			c.pushIdx(i)
			s, err := c.constText(&kids[i], t)
			c.pop()
			if err != nil {
				return nil, err
			}
			out[i] = s
		}
		return out, nil
	}
	t := ""
	if len(types) == 1 {
		t = types[0]
	}
	s, err := c.constText(n, t)
	if err != nil {
		return nil, err
	}
	return []string{s}, nil
}

var errUnsupported = errors.New("unsupported")

// constText renders a constant as nft's text form prints a value of
// datatype t.
func (c *jconv) constText(n *jnode, t string) (string, error) {
	switch n.kind {
	case jString:
		if isQuoted(t) {
			return `"` + n.str + `"`, nil
		}
		return n.str, nil
	case jNumber:
		v, err := nodeUint(n, 64)
		if err != nil {
			return "", c.errf("expected an unsigned integer, found %s", n.str)
		}
		return formatNumber(v, t), nil
	case jArray:
		var parts []string
		for i, k := range c.r.kids(n) {
			if k.kind != jString {
				c.pushIdx(i)
				err := c.typeErr(&k, "a string")
				c.pop()
				return "", err
			}
			parts = append(parts, k.str)
		}
		if len(parts) == 0 {
			return "", c.errf("empty value list")
		}
		return strings.Join(parts, ","), nil
	case jObject:
		kv, ok := c.r.single(n)
		if !ok {
			break
		}
		c.push(kv.key)
		defer c.pop()
		switch kv.key {
		case "prefix":
			if kv.kind != jObject {
				return "", c.typeErr(kv, "an object")
			}
			a, err := c.field(kv, "addr", jString, true)
			if err != nil {
				return "", err
			}
			l, err := c.field(kv, "len", jNumber, true)
			if err != nil {
				return "", err
			}
			if _, err := nodeUint(l, 8); err != nil {
				return "", c.errf("bad prefix length %s", l.str)
			}
			return a.str + "/" + l.str, nil
		case "range":
			if kv.kind != jArray || kv.n != 2 {
				return "", c.errf("expected a [low, high] pair")
			}
			kids := c.r.kids(kv)
			var s [2]string
			for i := range kids {
				c.pushIdx(i)
				v, err := c.constText(&kids[i], t)
				c.pop()
				if err != nil {
					return "", err
				}
				s[i] = v
			}
			return s[0] + "-" + s[1], nil
		}
		return "", c.errf("unsupported constant %q", kv.key)
	}
	return "", c.typeErr(n, "a constant")
}

func (c *jconv) counterObj(n *jnode) (*Counter, error) {
	ctr := &Counter{}
	var err error
	if ctr.Packets, err = c.uintField(n, "packets", 64); err != nil {
		return nil, err
	}
	if ctr.Bytes, err = c.uintField(n, "bytes", 64); err != nil {
		return nil, err
	}
	return ctr, nil
}

// verdict reads {"accept": null}, {"jump": {"target": "x"}}, ...
func (c *jconv) verdict(n *jnode) (*Verdict, error) {
	kv, ok := c.r.single(n)
	if !ok || !verdictKinds[kv.key] {
		return nil, c.errf("expected a verdict")
	}
	c.push(kv.key)
	defer c.pop()
	return c.verdictKV(kv)
}

func (c *jconv) verdictKV(kv *jnode) (*Verdict, error) {
	v := &Verdict{Kind: kv.key}
	if kv.key == "jump" || kv.key == "goto" {
		if kv.kind != jObject {
			return nil, c.typeErr(kv, "an object")
		}
		tg, err := c.strField(kv, "target", true)
		if err != nil {
			return nil, err
		}
		v.Target = tg
	} else if kv.kind != jNull {
		return nil, c.typeErr(kv, "null")
	}
	return v, nil
}

func (c *jconv) object(kv, item *jnode) error {
	t, err := c.familyTable(kv)
	if err != nil {
		return err
	}
	name, err := c.strField(kv, "name", true)
	if err != nil {
		return err
	}
	o := &Object{Kind: kv.key, Name: name, JSON: c.r.raw(item), Pos: c.itemPos()}
	if o.Handle, err = c.uintField(kv, "handle", 64); err != nil {
		return err
	}
	if kv.key == "counter" {
		plain := true
		for _, m := range c.r.kids(kv) {
			switch m.key {
			case "family", "name", "table", "handle", "packets", "bytes":
			default:
				plain = false
			}
		}
		if plain {
			if o.Counter, err = c.counterObj(kv); err != nil {
				return err
			}
			o.JSON = ""
		}
	}
	t.Objects = append(t.Objects, o)
	return nil
}

func (c *jconv) rule(n *jnode) error {
	t, err := c.familyTable(n)
	if err != nil {
		return err
	}
	cn, err := c.strField(n, "chain", true)
	if err != nil {
		return err
	}
	ch := c.chains[objKey{t, cn}]
	if ch == nil {
		return c.errf("chain %s is not listed before its rules", cn)
	}
	r := &Rule{}
	r.SetPos(c.itemPos())
	c.curFamily = t.Family
	if r.Handle, err = c.uintField(n, "handle", 64); err != nil {
		return err
	}
	if r.Comment, err = c.strField(n, "comment", false); err != nil {
		return err
	}
	ex, err := c.field(n, "expr", jArray, true)
	if err != nil {
		return err
	}
	c.push("expr")
	r.Stmts = make([]Stmt, 0, ex.n)
	depth := len(c.path)
	for i, k := range c.r.kids(ex) {
		c.pushIdx(i)
		s, err := c.stmt(&k, t.Family)
		c.path = c.path[:depth+1] // an unsupported statement leaves the path as it was
		if errors.Is(err, errUnsupported) {
			s, err = &Unsupported{JSON: c.r.raw(&k)}, nil
			r.Unsupported = true
		}
		if err != nil {
			return err
		}
		r.Stmts = append(r.Stmts, s)
		c.pop()
	}
	c.pop()
	c.render = appendRule(c.render[:0], r)
	r.Raw = string(c.render)
	ch.Rules = append(ch.Rules, r)
	return nil
}

// stmt converts a statement; errUnsupported means the statement is kept
// as JSON.
func (c *jconv) stmt(n *jnode, fam nftables.TableFamily) (Stmt, error) {
	kv, ok := c.r.single(n)
	if !ok {
		return nil, c.errf("expected an object with one member naming the statement")
	}
	c.push(kv.key)
	s, err := c.stmtKV(kv, n, fam)
	c.pop()
	return s, err
}

func (c *jconv) stmtKV(kv, n *jnode, fam nftables.TableFamily) (Stmt, error) {
	switch kv.key {
	case "accept", "drop", "continue", "return", "jump", "goto":
		return c.verdictKV(kv)
	case "match":
		return c.match(kv)
	case "vmap":
		if kv.kind != jObject {
			return nil, c.typeErr(kv, "an object")
		}
		key, err := c.exprField(kv, "key", "")
		if err != nil {
			return nil, err
		}
		data, err := c.mapData(kv, ExprTypes(key), nil, true)
		if err != nil {
			return nil, err
		}
		return &Vmap{Key: key, Data: data}, nil
	case "mangle":
		if kv.kind != jObject {
			return nil, c.typeErr(kv, "an object")
		}
		key, err := c.exprField(kv, "key", "")
		if err != nil {
			return nil, err
		}
		val, err := c.exprField(kv, "value", ExprType(key))
		if err != nil {
			return nil, err
		}
		return &Mangle{Key: key, Value: val}, nil
	case "counter":
		switch kv.kind {
		case jNull:
			return &Counter{}, nil
		case jString:
			return &Counter{Name: kv.str}, nil
		case jObject:
			return c.counterObj(kv)
		}
		return nil, c.typeErr(kv, "an object")
	case "notrack":
		return &Notrack{}, nil
	case "reject":
		r := &Reject{}
		if kv.kind == jObject {
			var err error
			if r.Type, err = c.strField(kv, "type", false); err != nil {
				return nil, err
			}
			if r.Code, err = c.strField(kv, "expr", false); err != nil {
				return nil, err
			}
		} else if kv.kind != jNull {
			return nil, c.typeErr(kv, "an object")
		}
		switch r.Type {
		case "", "tcp reset":
			if r.Code != "" {
				return nil, errUnsupported
			}
		case "icmp", "icmpv6", "icmpx":
			if !validRejectCode(r.Type, r.Code) {
				return nil, errUnsupported
			}
		default:
			return nil, errUnsupported
		}
		canonReject(r, fam)
		return r, nil
	case "snat", "dnat", "masquerade", "redirect":
		return c.nat(kv)
	case "log":
		return c.log(kv)
	case "limit":
		return c.limit(kv)
	case "set":
		return c.setUpdate(kv)
	}
	return nil, errUnsupported
}

func (c *jconv) exprField(obj *jnode, key, hint string) (Expr, error) {
	m := c.r.member(obj, key)
	if m == nil {
		return nil, c.errf("missing %q", key)
	}
	c.push(key)
	e, err := c.expr(m, hint, nil)
	c.pop()
	return e, err
}

func (c *jconv) match(kv *jnode) (Stmt, error) {
	if kv.kind != jObject {
		return nil, c.typeErr(kv, "an object")
	}
	op, err := c.strField(kv, "op", true)
	if err != nil {
		return nil, err
	}
	left, err := c.exprField(kv, "left", "")
	if err != nil {
		return nil, err
	}
	rn := c.r.member(kv, "right")
	if rn == nil {
		return nil, c.errf("missing \"right\"")
	}
	c.push("right")
	right, err := c.expr(rn, ExprType(left), ExprTypes(left))
	c.pop()
	if err != nil {
		return nil, err
	}
	m := &Match{Left: left, Right: right}
	switch Op(op) {
	case OpEq, OpNeq, OpLt, OpGt, OpLte, OpGte:
		m.Op = Op(op)
	case OpIn:
		m.Op = OpEq
		if _, ok := right.(*Value); ok && isBitmask(ExprType(left)) {
			m.Op = OpIn
		}
	default:
		c.push("op")
		defer c.pop()
		return nil, c.errf("unknown operator %q", op)
	}
	return m, nil
}

// mapData reads the "data" of a vmap or map: "@name" or {"set": [...]}.
func (c *jconv) mapData(obj *jnode, keyTypes, dataTypes []string, verdict bool) (Expr, error) {
	d := c.r.member(obj, "data")
	if d == nil {
		return nil, c.errf("missing \"data\"")
	}
	c.push("data")
	defer c.pop()
	if d.kind == jString && strings.HasPrefix(d.str, "@") {
		return &SetRef{Name: d.str[1:]}, nil
	}
	s, ok := c.r.single(d)
	if !ok || s.key != "set" {
		return nil, errUnsupported
	}
	c.push("set")
	defer c.pop()
	if s.kind != jArray {
		return nil, c.typeErr(s, "an array")
	}
	if verdict {
		dataTypes = []string{"verdict"}
	}
	as := &AnonSet{}
	for i, k := range c.r.kids(s) {
		c.pushIdx(i)
		e, err := c.elem(&k, keyTypes, dataTypes, true)
		c.pop()
		if err != nil {
			return nil, err
		}
		as.Elements = append(as.Elements, e)
	}
	if len(as.Elements) == 0 {
		return nil, c.errf("empty anonymous map")
	}
	return as, nil
}

// expr converts an expression. hint is the datatype constants are
// rendered for; parts holds the datatypes of concatenated parts.
func (c *jconv) expr(n *jnode, hint string, parts []string) (Expr, error) {
	switch n.kind {
	case jString:
		if strings.HasPrefix(n.str, "@") && len(n.str) > 1 {
			return &SetRef{Name: n.str[1:]}, nil
		}
		fallthrough
	case jNumber, jArray:
		s, err := c.constText(n, hint)
		if err != nil {
			return nil, err
		}
		return &Value{Text: s}, nil
	case jObject:
	default:
		return nil, c.typeErr(n, "an expression")
	}
	kv, ok := c.r.single(n)
	if !ok {
		return nil, c.errf("expected an object with one member naming the expression")
	}
	c.push(kv.key)
	e, err := c.exprKV(kv, n, hint, parts)
	c.pop()
	return e, err
}

func (c *jconv) exprKV(kv, n *jnode, hint string, parts []string) (Expr, error) {
	obj := func() error {
		if kv.kind != jObject {
			return c.typeErr(kv, "an object")
		}
		return nil
	}
	switch kv.key {
	case "payload":
		if err := obj(); err != nil {
			return nil, err
		}
		if c.r.member(kv, "protocol") == nil {
			return nil, errUnsupported // raw payload (base, offset, len)
		}
		proto, err := c.strField(kv, "protocol", true)
		if err != nil {
			return nil, err
		}
		field, err := c.strField(kv, "field", true)
		if err != nil {
			return nil, err
		}
		if !isPayloadField(proto, field) {
			return nil, errUnsupported
		}
		return &Payload{Proto: proto, Field: field}, nil
	case "meta":
		if err := obj(); err != nil {
			return nil, err
		}
		k, err := c.strField(kv, "key", true)
		if err != nil {
			return nil, err
		}
		if _, ok := metaTypes[k]; !ok {
			return nil, errUnsupported
		}
		return &Meta{Key: k}, nil
	case "ct":
		if err := obj(); err != nil {
			return nil, err
		}
		ct := &Ct{}
		var err error
		if ct.Key, err = c.strField(kv, "key", true); err != nil {
			return nil, err
		}
		if _, ok := ctTypes[ct.Key]; !ok {
			return nil, errUnsupported
		}
		if ct.Dir, err = c.strField(kv, "dir", false); err != nil {
			return nil, err
		}
		if ct.Family, err = c.strField(kv, "family", false); err != nil {
			return nil, err
		}
		if ct.Dir != "" && ct.Dir != "original" && ct.Dir != "reply" {
			return nil, errUnsupported
		}
		if ct.Family == "" && ct.Dir != "" && (ct.Key == "saddr" || ct.Key == "daddr") {
			// nft's JSON leaves out the family that its text prints
			// from the table.
			f := c.curFamily
			if f == nftables.TableFamilyIPv4 || f == nftables.TableFamilyIPv6 {
				ct.Family = FamilyName(f)
			}
		}
		return ct, nil
	case "fib":
		if err := obj(); err != nil {
			return nil, err
		}
		f := &Fib{}
		var err error
		if f.Result, err = c.strField(kv, "result", true); err != nil {
			return nil, err
		}
		if f.Flags, err = c.strList(kv, "flags"); err != nil {
			return nil, err
		}
		if len(f.Flags) == 0 {
			return nil, errUnsupported
		}
		return f, nil
	case "numgen":
		if err := obj(); err != nil {
			return nil, err
		}
		g := &Numgen{}
		var err error
		if g.Mode, err = c.strField(kv, "mode", true); err != nil {
			return nil, err
		}
		if g.Mode != "random" && g.Mode != "inc" {
			return nil, errUnsupported
		}
		mod, err := c.uintField(kv, "mod", 32)
		if err != nil {
			return nil, err
		}
		off, err := c.uintField(kv, "offset", 32)
		if err != nil {
			return nil, err
		}
		g.Mod, g.Offset = uint32(mod), uint32(off)
		return g, nil
	case "concat":
		if kv.kind != jArray {
			return nil, c.typeErr(kv, "an array")
		}
		cc := &Concat{}
		for i, k := range c.r.kids(kv) {
			t := ""
			if i < len(parts) {
				t = parts[i]
			}
			c.pushIdx(i)
			e, err := c.expr(&k, t, nil)
			c.pop()
			if err != nil {
				return nil, err
			}
			cc.Parts = append(cc.Parts, e)
		}
		if len(cc.Parts) < 2 {
			return nil, errUnsupported
		}
		return cc, nil
	case "&", "|", "^", "<<", ">>":
		if kv.kind != jArray || kv.n != 2 {
			return nil, c.errf("expected a [left, right] pair")
		}
		kids := c.r.kids(kv)
		c.pushIdx(0)
		l, err := c.expr(&kids[0], hint, nil)
		c.pop()
		if err != nil {
			return nil, err
		}
		c.pushIdx(1)
		rt := ExprType(l)
		if rt == "" {
			rt = hint
		}
		r, err := c.expr(&kids[1], rt, nil)
		c.pop()
		if err != nil {
			return nil, err
		}
		return &Binop{Op: kv.key, Left: l, Right: r}, nil
	case "map":
		if err := obj(); err != nil {
			return nil, err
		}
		key, err := c.exprField(kv, "key", "")
		if err != nil {
			return nil, err
		}
		dt := parts
		if dt == nil && hint != "" {
			dt = []string{hint}
		}
		data, err := c.mapData(kv, ExprTypes(key), dt, false)
		if err != nil {
			return nil, err
		}
		return &Map{Key: key, Data: data}, nil
	case "set":
		if kv.kind != jArray {
			return nil, c.typeErr(kv, "an array")
		}
		as := &AnonSet{}
		types := parts
		if types == nil {
			types = []string{hint}
		}
		for i, k := range c.r.kids(kv) {
			c.pushIdx(i)
			e, err := c.elem(&k, types, nil, false)
			c.pop()
			if err != nil {
				return nil, err
			}
			as.Elements = append(as.Elements, e)
		}
		if len(as.Elements) == 0 {
			return nil, c.errf("empty anonymous set")
		}
		return as, nil
	case "prefix", "range":
		s, err := c.constText(n, hint)
		if err != nil {
			return nil, err
		}
		return &Value{Text: s}, nil
	}
	return nil, errUnsupported
}

func (c *jconv) nat(kv *jnode) (Stmt, error) {
	n := &NAT{Kind: kv.key}
	if kv.kind == jNull {
		return n, nil
	}
	if kv.kind != jObject {
		return nil, c.typeErr(kv, "an object")
	}
	for _, m := range c.r.kids(kv) {
		switch m.key {
		case "family", "addr", "port", "flags":
		default:
			return nil, errUnsupported
		}
	}
	var err error
	if n.Family, err = c.strField(kv, "family", false); err != nil {
		return nil, err
	}
	if n.Family != "" && n.Family != "ip" && n.Family != "ip6" {
		return nil, errUnsupported
	}
	addrType := "ipv4_addr"
	if n.Family == "ip6" || c.curFamily == nftables.TableFamilyIPv6 {
		addrType = "ipv6_addr"
	}
	if c.r.member(kv, "addr") != nil {
		if n.Kind == "masquerade" || n.Kind == "redirect" {
			return nil, errUnsupported
		}
		if n.Addr, err = c.exprField(kv, "addr", addrType); err != nil {
			return nil, err
		}
	}
	if c.r.member(kv, "port") != nil {
		if n.Port, err = c.exprField(kv, "port", "inet_service"); err != nil {
			return nil, err
		}
	}
	flags, err := c.strList(kv, "flags")
	if err != nil {
		return nil, err
	}
	var unk string
	if n.Flags, unk = canonNATFlags(flags); unk != "" {
		return nil, errUnsupported
	}
	return n, nil
}

func (c *jconv) log(kv *jnode) (Stmt, error) {
	l := &Log{}
	if kv.kind == jNull {
		return l, nil
	}
	if kv.kind != jObject {
		return nil, c.typeErr(kv, "an object")
	}
	var err error
	if l.Prefix, err = c.strField(kv, "prefix", false); err != nil {
		return nil, err
	}
	opt := func(key string) (*uint32, error) {
		if c.r.member(kv, key) == nil {
			return nil, nil
		}
		v, err := c.uintField(kv, key, 32)
		u := uint32(v)
		return &u, err
	}
	if l.Group, err = opt("group"); err != nil {
		return nil, err
	}
	if l.Snaplen, err = opt("snaplen"); err != nil {
		return nil, err
	}
	if l.QueueThreshold, err = opt("queue-threshold"); err != nil {
		return nil, err
	}
	if l.Level, err = c.strField(kv, "level", false); err != nil {
		return nil, err
	}
	if l.Level != "" && !isLogLevel(l.Level) {
		return nil, errUnsupported
	}
	if l.Level == "warn" {
		l.Level = ""
	}
	flags, err := c.strList(kv, "flags")
	if err != nil {
		return nil, err
	}
	if flags != nil {
		var unk string
		if l.Flags, unk = canonLogFlags(flags); unk != "" {
			return nil, errUnsupported
		}
	}
	return l, nil
}

func (c *jconv) limit(kv *jnode) (Stmt, error) {
	if kv.kind != jObject {
		return nil, c.typeErr(kv, "an object")
	}
	l := &Limit{}
	var err error
	if l.Rate, err = c.uintField(kv, "rate", 64); err != nil {
		return nil, err
	}
	if l.Burst, err = c.uintField(kv, "burst", 64); err != nil {
		return nil, err
	}
	if l.Per, err = c.strField(kv, "per", true); err != nil {
		return nil, err
	}
	if !limitUnits[l.Per] {
		return nil, errUnsupported
	}
	if inv, err := c.field(kv, "inv", jTrue, false); err != nil {
		return nil, err
	} else if inv != nil {
		l.Over = inv.kind == jTrue
	}
	unit, err := c.strField(kv, "rate_unit", false)
	if err != nil {
		return nil, err
	}
	bunit, err := c.strField(kv, "burst_unit", false)
	if err != nil {
		return nil, err
	}
	switch {
	case unit == "" || unit == "packets":
		if l.Burst == 5 {
			l.Burst = 0
		}
	case byteUnits[unit]:
		l.Unit = unit
		if l.Burst != 0 {
			if !byteUnits[bunit] {
				return nil, errUnsupported
			}
			l.BurstUnit = bunit
		}
	default:
		return nil, errUnsupported
	}
	return l, nil
}

func (c *jconv) setUpdate(kv *jnode) (Stmt, error) {
	if kv.kind != jObject {
		return nil, c.typeErr(kv, "an object")
	}
	u := &SetUpdate{}
	var err error
	if u.Op, err = c.strField(kv, "op", true); err != nil {
		return nil, err
	}
	switch u.Op {
	case "add", "update", "delete":
	default:
		return nil, errUnsupported
	}
	set, err := c.strField(kv, "set", true)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(set, "@") || len(set) < 2 {
		c.push("set")
		defer c.pop()
		return nil, c.errf("expected a set reference, found %q", set)
	}
	u.Set = set[1:]
	el := c.r.member(kv, "elem")
	if el == nil {
		return nil, c.errf("missing \"elem\"")
	}
	c.push("elem")
	defer c.pop()
	if w := c.r.member(el, "elem"); w != nil && el.n == 1 {
		c.push("elem")
		defer c.pop()
		if w.kind != jObject {
			return nil, c.typeErr(w, "an object")
		}
		for _, m := range c.r.kids(w) {
			if m.key != "val" && m.key != "timeout" {
				return nil, errUnsupported
			}
		}
		t, err := c.uintField(w, "timeout", 32)
		if err != nil {
			return nil, err
		}
		u.Timeout = time.Duration(t) * time.Second
		if u.Key, err = c.exprField(w, "val", ""); err != nil {
			return nil, err
		}
		return u, nil
	}
	if u.Key, err = c.expr(el, "", nil); err != nil {
		return nil, err
	}
	return u, nil
}
