package kube

import (
	"bytes"
	"errors"
	"net/netip"
	"strconv"
	"sync"
)

// Only selects, from their text and before they are decoded, the Services
// and EndpointSlices that a reader of one destination's Service port needs
// ([Options.Only]); the others are counted in [Objects.SkippedServices]
// and [Objects.SkippedSlices] and not
// decoded, and an error in one of them is not found. What it keeps is a
// superset, whatever the spelling of the export:
//
//   - the first Service met, whatever it is (an export whose every
//     Service was left out would read as one that holds none);
//   - a Service whose text holds the destination's address or "ffff:" (an
//     IPv4-mapped address; every Service of an IPv6 destination is kept),
//     a key "nodePort" in any case whose value is the destination's port
//     or not plainly a decimal number, or a backslash (an escape);
//   - an EndpointSlice whose text holds the namespace of a Service kept
//     (a namespace whose slices the export holds: a Service of it without
//     any has no endpoints), or whose kubernetes.io/service-name label is
//     found in the text of a Service kept, those of the Service kubernetes
//     (an export of the whole cluster), those whose label is not found
//     plainly once, those holding a backslash, and every slice once a
//     Service kept has no namespace found plainly;
//   - every object of another kind, and every YAML object holding '*' or
//     '&' (an alias or an anchor).
//
// A slice is decided when the splitter meets it, from the Services kept
// so far: kubectl lists every Service before the first slice. When a
// Service is kept after a slice was left out, the parse fails with
// [ErrOnlyOrder], and the caller reads the exports whole. The exports of
// each node are read with the Only of their scope ([Only.In]), those of
// one scope one after the other; an Only is not to be reused.
type Only struct {
	// Addr and Port are the destination's address and port.
	Addr netip.Addr
	Port uint16

	root  *Only  // the Only In was called on; nil for itself
	scope string // see In

	once sync.Once
	addr []byte // the text of Addr; nil: every Service is kept

	mu       sync.Mutex
	scopes   map[string]*onlyScope
	services int // the Services left out
	broken   bool
}

// onlyScope is what an Only found in the exports of one scope (see In).
type onlyScope struct {
	kept   [][]byte // copies of the text of the Services kept
	nss    [][]byte // the namespaces of the Services kept
	allNS  bool     // a Service kept has no namespace found plainly
	slices int      // the slices left out
}

// In returns the Only of the exports of one scope (a node's bundle, or
// "" for exports shared by every node) that share o's counts: the slices
// of a scope are decided from the Services of the scope and of "", those
// of "" from the Services of every scope.
func (o *Only) In(scope string) *Only {
	r := o.top()
	return &Only{Addr: r.Addr, Port: r.Port, root: r, scope: scope}
}

// top returns the Only that holds the state.
func (o *Only) top() *Only {
	if o.root != nil {
		return o.root
	}
	return o
}

// in returns the state of scope s (o.mu held).
func (o *Only) in(s string) *onlyScope {
	if o.scopes == nil {
		o.scopes = map[string]*onlyScope{}
	}
	sc := o.scopes[s]
	if sc == nil {
		sc = &onlyScope{}
		o.scopes[s] = sc
	}
	return sc
}

// ErrOnlyOrder is the error of a parse with [Options.Only] that kept a
// Service after leaving out a slice, which may be one of its own or of
// its namespace (an export whose slices come before their Services): the
// objects kept may not be all those needed.
var ErrOnlyOrder = errors.New("a Service kept after an EndpointSlice was left out")

// init sets the address text.
func (o *Only) init() {
	o.once.Do(func() {
		if a := o.Addr.Unmap(); a.Is4() {
			o.addr = []byte(a.String())
		}
	})
}

// keep reports whether the object of chunk c is to be decoded, and
// whether it is a Service.
func (o *Only) keep(c *chunk) (keep, service bool) {
	apiVersion, kind := c.apiVersion, c.kind
	if c.rawItem {
		apiVersion, kind = itemKind(c.data, c.itemIndent)
	}
	if !c.json && bytes.ContainsAny(c.data, "*&") {
		// A YAML alias or anchor: decoded, so that one naming an anchor
		// of another object is refused as before.
		return true, false
	}
	group, version := splitAPIVersion(apiVersion)
	switch {
	case kind == "Service" && (apiVersion == "" || apiVersion == "v1"):
		return o.keepService(c.data), true
	case kind == "EndpointSlice" && group == "discovery.k8s.io" && (version == "v1" || version == "v1beta1"):
		return o.keepSlice(c.data), false
	}
	return true, false
}

// itemKind finds the apiVersion and kind of a YAML List item whose dash
// is in column ind, from its lines of keys ("" when it does not find
// them plainly).
func itemKind(data []byte, ind int) (apiVersion, kind string) {
	for first := true; len(data) > 0; first = false {
		var ln []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			ln, data = data[:i], data[i+1:]
		} else {
			ln, data = data, nil
		}
		switch {
		case first:
			if len(ln) < ind+2 || ln[ind] != '-' || ln[ind+1] != ' ' {
				return "", ""
			}
			ln = ln[ind+2:]
		case len(ln) > ind+2 && allSpaces(ln[:ind+2]) && ln[ind+2] != ' ':
			ln = ln[ind+2:]
		default:
			continue
		}
		if kindLine(ln, &apiVersion, &kind) {
			break
		}
	}
	return apiVersion, kind
}

// keepService reports whether a Service of this text is kept, remembering
// its text and namespaces when it is.
func (o *Only) keepService(data []byte) bool {
	r := o.top()
	r.init()
	r.mu.Lock()
	defer r.mu.Unlock()
	sc := r.in(o.scope)
	// The first Service of a scope is kept whatever it is: an export
	// whose every Service is left out would be read as one without
	// Services.
	if len(sc.kept) > 0 && r.addr != nil && bytes.IndexByte(data, '\\') < 0 && !bytes.Contains(data, r.addr) &&
		indexFold(data, "ffff:") < 0 && !r.nodePortIn(data) {
		r.services++
		return false
	}
	sc.kept = append(sc.kept, bytes.Clone(data))
	if nss, ok := namespaceValues(data); ok {
		for _, ns := range nss {
			sc.nss = append(sc.nss, []byte(ns))
		}
	} else {
		sc.allNS = true
	}
	// A slice left out before may be this Service's, or of its
	// namespace.
	for name, other := range r.scopes {
		if other.slices > 0 && (name == o.scope || name == "" || o.scope == "") {
			r.broken = true
		}
	}
	return true
}

// keepSlice reports whether an EndpointSlice of this text is kept.
func (o *Only) keepSlice(data []byte) bool {
	if bytes.IndexByte(data, '\\') >= 0 {
		return true
	}
	svc, ok := labelValue(data, []byte("kubernetes.io/service-name"))
	if !ok || svc == "kubernetes" {
		return true
	}
	r := o.top()
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, sc := range r.scopes {
		if name != o.scope && name != "" && o.scope != "" {
			continue
		}
		if sc.keeps(data, svc) {
			return true
		}
	}
	r.in(o.scope).slices++
	return false
}

// keeps reports whether the Services kept in the scope keep a slice of
// this text, labelled for Service svc.
func (sc *onlyScope) keeps(data []byte, svc string) bool {
	if sc.allNS {
		return true
	}
	for _, text := range sc.kept {
		if bytes.Contains(text, []byte(svc)) {
			return true
		}
	}
	for _, ns := range sc.nss {
		if bytes.Contains(data, ns) {
			return true
		}
	}
	return false
}

// SkippedServices returns the number of Services left out so far, in
// every scope.
func (o *Only) SkippedServices() int {
	r := o.top()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.services
}

// err returns ErrOnlyOrder when a Service kept came after a slice it may
// own was left out.
func (o *Only) err() error {
	r := o.top()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.broken {
		return ErrOnlyOrder
	}
	return nil
}

// nodePortIn reports whether data may hold a node port equal to o.Port:
// a key that is "nodeport" in any case (a word followed by a colon),
// followed by that number or by a value that is not plainly a decimal
// number.
func (o *Only) nodePortIn(data []byte) bool {
	want := strconv.Itoa(int(o.Port))
	for i := 0; ; {
		j := indexFold(data[i:], "nodeport")
		if j < 0 {
			return false
		}
		i += j + len("nodeport")
		v, key, ok := plainValue(data[i:])
		if key && (!ok || !allDigits(v) || len(v) > 1 && v[0] == '0' || string(v) == want) {
			return true
		}
	}
}

// labelValue returns the value that follows the only occurrence of key
// in data, when it is plain (see plainValue).
func labelValue(data, key []byte) (string, bool) {
	i := bytes.Index(data, key)
	if i < 0 || bytes.Contains(data[i+len(key):], key) {
		return "", false
	}
	v, isKey, ok := plainValue(data[i+len(key):])
	if !isKey || !ok {
		return "", false
	}
	return string(v), true
}

// namespaceValues returns the values of every key "namespace" (in any
// case) of data, when there is one and each is plain.
func namespaceValues(data []byte) ([]string, bool) {
	var out []string
	for i := 0; ; {
		j := indexFold(data[i:], "namespace")
		if j < 0 {
			return out, len(out) > 0
		}
		i += j + len("namespace")
		if i < len(data) && isNameByte(data[i]) {
			continue // namespaced, namespaces: another word
		}
		v, key, ok := plainValue(data[i:])
		if !key {
			continue
		}
		if !ok {
			return nil, false
		}
		out = append(out, string(v))
	}
}

// plainValue reads, after a word, its closing quote, the colon and white
// space, the value up to its end: a quote, a comma, a brace, a bracket,
// white space or the end of the line. key is false when no colon follows
// the word (it is no key); ok is false when the value is not plain.
func plainValue(d []byte) (v []byte, key, ok bool) {
	i := 0
	if i < len(d) && (d[i] == '"' || d[i] == '\'') {
		i++
	}
	for i < len(d) && (d[i] == ' ' || d[i] == '\t') {
		i++
	}
	if i >= len(d) || d[i] != ':' {
		return nil, false, true
	}
	i++
	for i < len(d) && (d[i] == ' ' || d[i] == '\t') {
		i++
	}
	if i < len(d) && (d[i] == '"' || d[i] == '\'') {
		i++
	}
	start := i
	for i < len(d) {
		switch d[i] {
		case '"', '\'', ',', '}', ']', ' ', '\t', '\r', '\n':
			return d[start:i], true, i > start
		case '{', '[', '&', '*', '!', '|', '>', '#':
			return nil, true, false
		}
		i++
	}
	return d[start:i], true, i > start
}

// indexFold returns the index of the first instance of the lower-case
// ASCII word in data, in any case, or -1.
func indexFold(data []byte, word string) int {
	lo, up := word[0], word[0]-'a'+'A'
	for i := 0; i+len(word) <= len(data); i++ {
		if c := data[i]; (c == lo || c == up) && equalFoldLower(data[i:i+len(word)], word) {
			return i
		}
	}
	return -1
}

// equalFoldLower reports whether b is the lower-case ASCII word w in any
// case.
func equalFoldLower(b []byte, w string) bool {
	for i := range len(w) {
		if b[i]|0x20 != w[i] {
			return false
		}
	}
	return true
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}
