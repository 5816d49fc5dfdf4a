package nft

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/google/nftables"

	"github.com/proxyscan/proxyscan/parsers"
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
	// cut short in: it holds what was read of it up to the cut.
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
	Pos      parsers.Pos           `json:"pos"`
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
// and data parts are in one list (Parts, see [Element.Key] and
// [Element.Data]): a large ruleset has a hundred thousand elements,
// which are kept small.
type Element struct {
	// Parts holds the key's concatenated parts as nft prints them
	// (addresses, prefixes "10.0.0.0/8", ranges "80-90", protocol names,
	// ports, marks, quoted strings), then the parts of a map element's
	// data when it is not a verdict. NKey is the number of key parts.
	Parts []string `json:"-"`
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
	Line  int32        `json:"-"`
	NKey  int32        `json:"-"`
}

// NewElement returns an element of key and data parts (data nil for a
// set's element or a verdict map's).
func NewElement(key, data []string) Element {
	if len(data) == 0 {
		return Element{Parts: key, NKey: int32(len(key))}
	}
	parts := make([]string, 0, len(key)+len(data))
	return Element{Parts: append(append(parts, key...), data...), NKey: int32(len(key))}
}

// setParts sets the element's key and data parts.
func (e *Element) setParts(key, data []string) {
	n := NewElement(key, data)
	e.Parts, e.NKey = n.Parts, n.NKey
}

// Key returns the element's key parts. The slice is the element's: the
// caller must not modify it or append to it.
func (e *Element) Key() []string {
	n := min(max(int(e.NKey), 0), len(e.Parts))
	return e.Parts[:n:n]
}

// Data returns the parts of a map element's data when it is not a
// verdict, nil when it has none. The slice is the element's: the caller
// must not modify it.
func (e *Element) Data() []string {
	n := min(max(int(e.NKey), 0), len(e.Parts))
	if n == len(e.Parts) {
		return nil
	}
	return e.Parts[n:len(e.Parts):len(e.Parts)]
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
	Unsupported bool        `json:"unsupported,omitempty"`
	Pos         parsers.Pos `json:"pos"`
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
		Policy string `json:"policy,omitempty"`
	}{(*plain)(c), pol})
}
