package nft

import (
	"encoding/binary"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/google/nftables"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/internal/bytestr"
)

// Ruleset is a whole ruleset listing: its tables in listing order.
type Ruleset struct {
	Tables []*Table `json:"tables"`
	// ItemLines holds, for JSON input, the line on which each item of the
	// nftables array starts, by its index (1 for all of them in nft -j's
	// own output, which is one line); see [Ruleset.Line].
	ItemLines []int `json:"-"`
	// Partial, for a listing read with [ParseTextLenient], says why it
	// may not hold the whole ruleset: it was cut short ("cut short at
	// line 289: table ip kube-proxy is not closed"). What lies after the
	// cut is missing: the rest of the table that was open, and the tables
	// after it. "" for a whole listing.
	Partial string `json:"partial,omitempty"`
}

// Line returns the line of the input at p: p.Line for text input; for
// JSON input, the line on which the item of the nftables array p is in
// ($.nftables[N]...) starts; 0 when it is not known.
func (rs *Ruleset) Line(p parsers.Pos) int {
	if p.Line > 0 || !strings.HasPrefix(p.Path, "$.nftables[") {
		return p.Line
	}
	rest := p.Path[len("$.nftables["):]
	n, err := strconv.Atoi(rest[:max(strings.IndexByte(rest, ']'), 0)])
	if err != nil || n < 0 || n >= len(rs.ItemLines) {
		return 0
	}
	return rs.ItemLines[n]
}

// Table is an nftables table.
type Table struct {
	Family  nftables.TableFamily `json:"-"`
	Name    string               `json:"name"`
	Comment string               `json:"comment,omitempty"`
	Flags   []string             `json:"flags,omitempty"` // "dormant", "owner"
	Handle  uint64               `json:"handle,omitempty"`
	// Objects are the stateful objects (counters, quotas, ...) and
	// flowtables of the table, kept as raw text or JSON.
	Objects []*Object   `json:"objects,omitempty"`
	Sets    []*Set      `json:"sets,omitempty"`   // named sets and maps, in listing order
	Chains  []*Chain    `json:"chains,omitempty"` // in listing order
	Pos     parsers.Pos `json:"pos"`
	// Cut is set on the table a listing read with [ParseTextLenient] was
	// cut short in: it holds what was read of it up to the cut. A reader
	// that tells the listing holds part of the table only (one chain or
	// map listed, a filter) sets it too.
	Cut bool `json:"cut,omitempty"`
}

// Object is a table-level stateful object or flowtable. Named counters
// are modelled (Counter); of the others (quota, limit, ct helper/timeout/
// expectation, secmark, synproxy, flowtable) Body holds the lines between
// the braces (text input) and JSON the object's JSON (JSON input).
type Object struct {
	Kind    string      `json:"kind"` // "counter", "quota", "ct helper", "flowtable", ...
	Name    string      `json:"name"`
	Handle  uint64      `json:"handle,omitempty"`
	Counter *Counter    `json:"counter,omitempty"` // the values of a named counter
	Body    []string    `json:"body,omitempty"`
	JSON    string      `json:"json,omitempty"`
	Pos     parsers.Pos `json:"pos"`
}

// Chain is a chain of a table. Base chains have a Type, Hook, Priority and
// Policy; regular chains have none of them.
type Chain struct {
	Name    string             `json:"name"`
	Comment string             `json:"comment,omitempty"`
	Type    nftables.ChainType `json:"type,omitempty"`
	// Hook is the hook name as nft prints it ("prerouting", "input",
	// "ingress", ...): hook numbers depend on the family, see [HookNum].
	Hook     string                `json:"hook,omitempty"`
	Devices  []string              `json:"devices,omitempty"` // netdev/inet ingress devices
	Priority *Priority             `json:"priority,omitempty"`
	Policy   *nftables.ChainPolicy `json:"-"`
	Flags    []string              `json:"flags,omitempty"` // "offload"
	Handle   uint64                `json:"handle,omitempty"`
	Rules    []*Rule               `json:"rules,omitempty"`
	// Where is the chain's file, and its path in a JSON ruleset; Line is
	// its line in a text ruleset. A text ruleset's chains and rules share
	// one Where. See [Chain.Pos].
	Where *parsers.Pos `json:"-"`
	Line  int32        `json:"-"`
}

// Pos returns where the chain is: its file and line in a text ruleset,
// its file and path in a JSON one.
func (c *Chain) Pos() parsers.Pos { return posOf(c.Where, c.Line) }

// SetPos sets where the chain is.
func (c *Chain) SetPos(p parsers.Pos) { c.Where, c.Line = splitPos(p) }

// posOf returns the position of a file (and path) and a line.
func posOf(where *parsers.Pos, line int32) parsers.Pos {
	var p parsers.Pos
	if where != nil {
		p = *where
	}
	if line != 0 {
		p.Line = int(line)
	}
	return p
}

// splitPos returns p as a file (and path) and a line, nil for the zero
// position; a line that does not fit an int32 is kept in the file's.
func splitPos(p parsers.Pos) (*parsers.Pos, int32) {
	if p == (parsers.Pos{}) {
		return nil, 0
	}
	if p.Line > 0 && p.Line <= 1<<31-1 {
		line := int32(p.Line)
		p.Line = 0
		return &p, line
	}
	return &p, 0
}

// IsBase reports whether c is a base chain (attached to a hook).
func (c *Chain) IsBase() bool { return c.Hook != "" }

// Priority is a base chain priority: its numeric value and the form nft
// prints for it ("dstnat - 10", "filter", "-110"), which depends on the
// family and the hook.
type Priority struct {
	Value nftables.ChainPriority `json:"value"`
	Text  string                 `json:"text"`
}

// Set is a named set or map. Maps have IsMap set and a DataType; verdict
// maps have the DataType "verdict".
type Set struct {
	Name  string `json:"name"`
	IsMap bool   `json:"map,omitempty"`
	// KeyType holds the key datatype names, one per concatenated part
	// ("ipv4_addr", "inet_proto", "inet_service").
	KeyType []string `json:"keyType,omitempty"`
	// Typeof is the key expression when the set was declared with typeof
	// (text input only); KeyType then holds the datatypes derived from it
	// when they are known.
	Typeof string `json:"typeof,omitempty"`
	// DataType holds the map data datatype names ("verdict", "ipv4_addr",
	// or the parts of a concatenation).
	DataType     []string `json:"dataType,omitempty"`
	DataTypeof   string   `json:"dataTypeof,omitempty"`
	DataInterval bool     `json:"dataInterval,omitempty"` // "type K : interval D"
	// Flags are the set flags in nft's order: constant, dynamic, interval,
	// timeout. A set with a default timeout always has the timeout flag.
	Flags      []string      `json:"flags,omitempty"`
	Policy     string        `json:"policy,omitempty"` // "memory"; empty for the default
	Size       uint32        `json:"size,omitempty"`
	Timeout    time.Duration `json:"timeout,omitempty"`
	GCInterval time.Duration `json:"gcInterval,omitempty"`
	AutoMerge  bool          `json:"autoMerge,omitempty"`
	Counter    bool          `json:"counter,omitempty"` // elements carry counters
	Comment    string        `json:"comment,omitempty"`
	Handle     uint64        `json:"handle,omitempty"`
	Elements   []Element     `json:"elements,omitempty"`
	Pos        parsers.Pos   `json:"pos"`
}

// HasFlag reports whether s has the flag f ("interval", "timeout", ...).
func (s *Set) HasFlag(f string) bool {
	for _, x := range s.Flags {
		if x == f {
			return true
		}
	}
	return false
}

// IsVerdictMap reports whether s is a verdict map.
func (s *Set) IsVerdictMap() bool {
	return s.IsMap && len(s.DataType) == 1 && s.DataType[0] == "verdict"
}

// KeyDatatypes returns the github.com/google/nftables datatypes of the key
// parts, and false when one of them is not known to that package.
func (s *Set) KeyDatatypes() ([]nftables.SetDatatype, bool) {
	return datatypes(s.KeyType)
}

// DataDatatypes returns the github.com/google/nftables datatypes of the
// map data parts, and false when one of them is not known to that package.
func (s *Set) DataDatatypes() ([]nftables.SetDatatype, bool) {
	return datatypes(s.DataType)
}

// Element is an element of a set or map (named or anonymous). Its key
// and data parts are kept as one string (see [Element.Part]): a large
// ruleset has a hundred thousand elements, which are kept small.
type Element struct {
	// Verdict is the verdict of a verdict map element.
	Verdict *Verdict `json:"verdict,omitempty"`
	// Attrs holds the element's comment, timeout, expiry and counter, nil
	// when it has none (kube-proxy's elements have none): a large ruleset
	// has a hundred thousand elements, which are kept small.
	Attrs *ElementAttrs `json:"-"`
	// Where is the element's file, and its path in a JSON ruleset; nil
	// when not known (an anonymous set's element in a text ruleset). Line
	// is its line in a text ruleset. See [Element.Pos].
	Where *parsers.Pos `json:"-"`
	// parts holds the key's concatenated parts as nft prints them
	// (addresses, prefixes "10.0.0.0/8", ranges "80-90", protocol names,
	// ports, marks, quoted strings), then the parts of a map element's
	// data when it is not a verdict: joined as nft prints them (the key's
	// parts separated by " . ", then " : " and the data's parts separated
	// by " . "), which in a text listing is the element's own text, not
	// copied; or, when parts holding a separator would not split back so
	// (n is encoded), the counts of key parts and of parts then each part's
	// length, as uvarints, each length followed by its part.
	parts string
	Line  int32 `json:"-"`
	// nkey is the number of key parts, n of parts (key and data).
	nkey, n uint16
}

// encoded is the n of an element whose parts are encoded.
const encoded = 1<<16 - 1

// NewElement returns an element of key and data parts (data nil for a
// set's element or a verdict map's).
func NewElement(key, data []string) Element {
	var e Element
	e.setParts(key, data)
	return e
}

// setParts sets the element's key and data parts.
func (e *Element) setParts(key, data []string) {
	var b []byte
	var ok bool
	if b, ok = joinParts(nil, key, data); ok {
		e.parts, e.nkey, e.n = string(b), uint16(len(key)), uint16(len(key)+len(data))
		return
	}
	e.parts, e.nkey, e.n = string(encodeParts(b[:0], key, data)), 0, encoded
}

// joinParts appends to b the parts of key and data as nft prints them,
// and reports whether they split back so, and are few enough to count in
// an element's n.
func joinParts(b []byte, key, data []string) ([]byte, bool) {
	start := len(b)
	for i, k := range key {
		if i > 0 {
			b = append(b, " . "...)
		}
		b = append(b, k...)
	}
	for i, d := range data {
		if i == 0 {
			b = append(b, " : "...)
		} else {
			b = append(b, " . "...)
		}
		b = append(b, d...)
	}
	// The text is read in place: splitsBack keeps none of it.
	return b, len(key)+len(data) < encoded && splitsBack(bytestr.Of(b[start:]), key, data)
}

// splitsBack reports whether text, the parts of key and data joined,
// splits into them again: no part holds a separator where the split
// would see one.
func splitsBack(text string, key, data []string) bool {
	it := (&Element{parts: text, nkey: uint16(len(key)), n: uint16(len(key) + len(data))}).iter()
	for _, list := range [2][]string{key, data} {
		for _, want := range list {
			if p, ok := it.next(); !ok || p != want {
				return false
			}
		}
	}
	_, more := it.next()
	return !more
}

// encodeParts appends to b the encoded parts of key and data (see
// Element.parts).
func encodeParts(b []byte, key, data []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = binary.AppendUvarint(b, uint64(len(key)+len(data)))
	for _, list := range [2][]string{key, data} {
		for _, p := range list {
			b = append(binary.AppendUvarint(b, uint64(len(p))), p...)
		}
	}
	return b
}

// uvarint reads a uvarint at the start of s and returns it and its
// width, 0 when there is none.
func uvarint(s string) (uint64, int) {
	var x uint64
	for i := 0; i < len(s) && i < binary.MaxVarintLen64; i++ {
		c := s[i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				return 0, 0
			}
			return x | uint64(c)<<(7*i), i + 1
		}
		x |= uint64(c&0x7f) << (7 * i)
	}
	return 0, 0
}

// counts returns the number of key parts and of parts.
func (e *Element) counts() (nkey, n int) {
	if e.n != encoded {
		return int(e.nkey), int(e.n)
	}
	k, w := uvarint(e.parts)
	if w == 0 {
		return 0, 0
	}
	m, w2 := uvarint(e.parts[w:])
	if w2 == 0 || m > uint64(len(e.parts)) {
		return 0, 0
	}
	return int(min(k, m)), int(m)
}

// partIter reads the parts of an element one after the other.
type partIter struct {
	s       string
	k       int // parts read
	n, nkey int
	enc     bool
}

// iter returns an iterator over the element's parts, key then data.
func (e *Element) iter() partIter {
	it := partIter{s: e.parts, n: int(e.n), nkey: int(e.nkey)}
	if e.n == encoded {
		it.enc = true
		it.nkey, it.n = e.counts()
		for range 2 {
			_, w := uvarint(it.s)
			it.s = it.s[w:]
		}
	}
	return it
}

// next returns the next part, false when there is none.
func (it *partIter) next() (string, bool) {
	if it.k >= it.n {
		return "", false
	}
	it.k++
	if it.enc {
		l, w := uvarint(it.s)
		if w == 0 || l > uint64(len(it.s)-w) {
			it.k = it.n
			return "", false
		}
		p := it.s[w : w+int(l)]
		it.s = it.s[w+int(l):]
		return p, true
	}
	if it.k == it.n {
		p := it.s
		it.s = ""
		return p, true
	}
	sep := " . "
	if it.k == it.nkey {
		sep = " : "
	}
	j := strings.Index(it.s, sep)
	if j < 0 {
		p := it.s
		it.s, it.k = "", it.n
		return p, true
	}
	p := it.s[:j]
	it.s = it.s[j+len(sep):]
	return p, true
}

// NumParts returns the number of the element's parts, key and data.
func (e *Element) NumParts() int {
	_, n := e.counts()
	return n
}

// NumKey returns the number of the element's key parts.
func (e *Element) NumKey() int {
	k, _ := e.counts()
	return k
}

// Part returns the element's part i (the key's parts, then the data's),
// "" when it has none.
func (e *Element) Part(i int) string {
	it := e.iter()
	for k := 0; ; k++ {
		p, ok := it.next()
		if !ok || k == i {
			return p
		}
	}
}

// AppendKey appends the element's key parts to dst and returns the
// extended slice: into a caller's buffer, it allocates nothing.
func (e *Element) AppendKey(dst []string) []string {
	it := e.iter()
	for range it.nkey {
		p, ok := it.next()
		if !ok {
			break
		}
		dst = append(dst, p)
	}
	return dst
}

// AppendData appends the parts of the element's data to dst and returns
// the extended slice (see [Element.Data]).
func (e *Element) AppendData(dst []string) []string {
	it := e.iter()
	for k := 0; ; k++ {
		p, ok := it.next()
		if !ok {
			return dst
		}
		if k >= it.nkey {
			dst = append(dst, p)
		}
	}
}

// Key returns the element's key parts, in a slice of its own.
func (e *Element) Key() []string {
	nkey, n := e.counts()
	if n == 0 {
		return nil
	}
	return e.AppendKey(make([]string, 0, nkey))
}

// Data returns the parts of a map element's data when it is not a
// verdict, in a slice of its own; nil when it has none.
func (e *Element) Data() []string {
	nkey, n := e.counts()
	if n == nkey {
		return nil
	}
	return e.AppendData(make([]string, 0, n-nkey))
}

// HasData reports whether the element has data parts (a map element
// whose data is not a verdict).
func (e *Element) HasData() bool {
	nkey, n := e.counts()
	return n > nkey
}

// MarshalJSON renders the element with its attributes and position as
// fields of its own (timeout, expires, counter, pos).
func (e *Element) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Key     []string      `json:"key"`
		Data    []string      `json:"data,omitempty"`
		Verdict *Verdict      `json:"verdict,omitempty"`
		Comment string        `json:"comment,omitempty"`
		Timeout time.Duration `json:"timeout,omitempty"`
		Expires time.Duration `json:"expires,omitempty"`
		Counter *Counter      `json:"counter,omitempty"`
		Pos     parsers.Pos   `json:"pos"`
	}{e.Key(), e.Data(), e.Verdict, e.Comment(), e.Timeout(), e.Expires(), e.Counter(), e.Pos()})
}

// ElementAttrs are the attributes of an element that few have.
type ElementAttrs struct {
	Comment string        `json:"comment,omitempty"`
	Timeout time.Duration `json:"timeout,omitempty"`
	// Expires is the remaining lifetime when the element has a timeout.
	Expires time.Duration `json:"expires,omitempty"`
	Counter *Counter      `json:"counter,omitempty"`
}

// Comment returns the element's comment, "" for none.
func (e *Element) Comment() string {
	if e.Attrs == nil {
		return ""
	}
	return e.Attrs.Comment
}

// Timeout returns the element's timeout, 0 for none.
func (e *Element) Timeout() time.Duration {
	if e.Attrs == nil {
		return 0
	}
	return e.Attrs.Timeout
}

// Expires returns the element's remaining lifetime, 0 for none.
func (e *Element) Expires() time.Duration {
	if e.Attrs == nil {
		return 0
	}
	return e.Attrs.Expires
}

// Counter returns the element's counter, nil for none.
func (e *Element) Counter() *Counter {
	if e.Attrs == nil {
		return nil
	}
	return e.Attrs.Counter
}

// SetExpires sets the element's remaining lifetime (0: none), leaving
// Attrs nil when the element has no attribute left.
func (e *Element) SetExpires(d time.Duration) {
	if e.Attrs == nil && d == 0 {
		return
	}
	a := *e.attrs()
	a.Expires = d
	if a == (ElementAttrs{}) {
		e.Attrs = nil
		return
	}
	e.Attrs = &a
}

// attrs returns the element's attributes, made on first use.
func (e *Element) attrs() *ElementAttrs {
	if e.Attrs == nil {
		e.Attrs = new(ElementAttrs)
	}
	return e.Attrs
}

// Pos returns where the element is: its file and line in a text
// ruleset, its file and path in a JSON one.
func (e *Element) Pos() parsers.Pos {
	var p parsers.Pos
	if e.Where != nil {
		p = *e.Where
	}
	if e.Line != 0 {
		p.Line = int(e.Line)
	}
	return p
}

// Rule is a rule of a chain.
type Rule struct {
	// Raw is the rule as nft lists it, without indentation and without the
	// `# handle N` annotation; for JSON input, the text rendering of the
	// rule.
	Raw string `json:"raw"`
	// Stmts are the rule's statements. Rules read from text share the
	// short statements they repeat (the same *Match, *Verdict...): a
	// statement is not to be modified once read.
	Stmts   []Stmt `json:"stmts"`
	Comment string `json:"comment,omitempty"`
	Handle  uint64 `json:"handle,omitempty"`
	// Unsupported reports that the rule holds an [Unsupported] statement.
	Unsupported bool `json:"unsupported,omitempty"`
	// Line is the rule's line in a text ruleset.
	Line int32 `json:"-"`
	// Where is the rule's file, and its path in a JSON ruleset, shared
	// by the rules and chains of a text ruleset. See [Rule.Pos].
	Where *parsers.Pos `json:"-"`
}

// Pos returns where the rule is: its file and line in a text ruleset,
// its file and path in a JSON one.
func (r *Rule) Pos() parsers.Pos { return posOf(r.Where, r.Line) }

// SetPos sets where the rule is.
func (r *Rule) SetPos(p parsers.Pos) { r.Where, r.Line = splitPos(p) }

// MarshalJSON renders the rule with its position.
func (r *Rule) MarshalJSON() ([]byte, error) {
	type plain Rule
	return json.Marshal(struct {
		*plain
		Pos parsers.Pos `json:"pos"`
	}{(*plain)(r), r.Pos()})
}

// Counter returns the rule's first anonymous counter statement, or nil.
func (r *Rule) Counter() *Counter {
	for _, s := range r.Stmts {
		if c, ok := s.(*Counter); ok && c.Name == "" {
			return c
		}
	}
	return nil
}

// Verdict returns the rule's verdict statement (its last statement when
// that is a verdict), or nil.
func (r *Rule) Verdict() *Verdict {
	if len(r.Stmts) == 0 {
		return nil
	}
	v, _ := r.Stmts[len(r.Stmts)-1].(*Verdict)
	return v
}

// String returns the rule in nft's text form.
func (r *Rule) String() string { return string(appendRule(nil, r)) }

// Table returns the table of the given family and name, or nil.
func (rs *Ruleset) Table(family nftables.TableFamily, name string) *Table {
	for _, t := range rs.Tables {
		if t.Family == family && t.Name == name {
			return t
		}
	}
	return nil
}

// Chain returns the chain of the given name, or nil.
func (t *Table) Chain(name string) *Chain {
	for _, c := range t.Chains {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Set returns the set or map of the given name, or nil.
func (t *Table) Set(name string) *Set {
	for _, s := range t.Sets {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// MarshalJSON renders the table with its family spelled as nft spells it.
func (t *Table) MarshalJSON() ([]byte, error) {
	type plain Table
	return json.Marshal(struct {
		Family string `json:"family"`
		*plain
	}{FamilyName(t.Family), (*plain)(t)})
}

// MarshalJSON renders the chain with its policy spelled as nft spells it.
func (c *Chain) MarshalJSON() ([]byte, error) {
	type plain Chain
	pol := ""
	if c.Policy != nil {
		pol = PolicyName(*c.Policy)
	}
	return json.Marshal(struct {
		*plain
		Pos    parsers.Pos `json:"pos"`
		Policy string      `json:"policy,omitempty"`
	}{(*plain)(c), c.Pos(), pol})
}
