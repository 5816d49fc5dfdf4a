package report

import (
	"encoding/binary"
	"math"
	"reflect"
	"slices"
	"sort"
	"sync"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/internal/intern"
)

// Shared keeps once the values that the summaries of a fleet's nodes have
// alike: strings, lists of inputs, notes and checklist items, coverage and,
// once the cross-node checks ran, whole results. Values are keyed by their
// content, every field of them encoded. A node that is alike to another in
// everything but its name then keeps little more than its name and its
// pointers to what is shared. Its methods are safe for concurrent use.
// Shared values must not be changed: a list given back by it has no room
// to grow in place, so that appending to it copies it.
type Shared struct {
	mu   sync.Mutex
	strs intern.Strings
	vals map[string]any
	key  []byte
}

// NewShared returns an empty store of shared values.
func NewShared() *Shared {
	return &Shared{strs: intern.New(), vals: map[string]any{}}
}

// Node makes the values of a node's summary those of the nodes before it
// that are equal, storing the others. Its result is not shared as a whole,
// only its parts: the cross-node checks add to it (see [Shared.Results]).
// Inputs that all name one bundle are kept once without it, in Bundle.
func (sh *Shared) Node(n *Node) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	n.Name = sh.str(n.Name)
	n.Version, n.VersionSource = sh.str(n.Version), sh.str(n.VersionSource)
	if n.Bundle == "" && len(n.Inputs) > 0 && n.Inputs[0].Bundle != "" {
		b := n.Inputs[0].Bundle
		if !slices.ContainsFunc(n.Inputs, func(in model.Input) bool { return in.Bundle != b }) {
			ins := slices.Clone(n.Inputs)
			for i := range ins {
				ins[i].Bundle = ""
			}
			n.Inputs, n.Bundle = ins, sh.str(b)
		}
	}
	n.Inputs = shareList(sh, "inputs", n.Inputs)
	n.Notes = shareList(sh, "notes", n.Notes)
	n.Checklist = shareList(sh, "checklist", n.Checklist)
	if r := n.Result; r != nil {
		r.Mode, r.ModeSource, r.ModeOrigin = sh.str(r.Mode), sh.str(r.ModeSource), sh.str(r.ModeOrigin)
		r.Programmed = shareList(sh, "programmed", r.Programmed)
		r.Coverage.Gaps = shareList(sh, "gaps", r.Coverage.Gaps)
		r.Coverage.Needs = shareList(sh, "needs", r.Coverage.Needs)
		if r.Migration != nil {
			r.Migration = share(sh, "migration", r.Migration)
		}
	}
}

// Results makes the results of nodes, once the cross-node checks ran, the
// results of the nodes before them that are equal; the findings of the
// others keep their lists of evidence, objects and checks once. Nothing
// may change a result afterwards.
func (sh *Shared) Results(nodes []*Node) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for _, n := range nodes {
		if n.Result == nil {
			continue
		}
		r := n.Result
		r.Findings = slices.Clip(r.Findings)
		r.Statuses = slices.Clip(r.Statuses)
		if x := share(sh, "result", r); x != r {
			n.Result = x
			continue
		}
		for i := range r.Findings {
			f := &r.Findings[i]
			f.Check, f.Node, f.Service = sh.str(f.Check), sh.str(f.Node), sh.str(f.Service)
			f.Protocol, f.Endpoint = sh.str(f.Protocol), sh.str(f.Endpoint)
			f.Message, f.Advice = sh.str(f.Message), sh.str(f.Advice)
			f.Evidence = shareList(sh, "evidence", f.Evidence)
			f.Objects = shareList(sh, "objects", f.Objects)
			f.Checks = shareList(sh, "checks", f.Checks)
			f.Nodes = shareList(sh, "nodes", f.Nodes)
		}
	}
}

// InputList returns the node's inputs, each naming its bundle.
func (n *Node) InputList() []model.Input {
	if n.Bundle == "" {
		return n.Inputs
	}
	out := slices.Clone(n.Inputs)
	for i := range out {
		if out[i].Bundle == "" {
			out[i].Bundle = n.Bundle
		}
	}
	return out
}

// BundlePath returns the bundle the node was read from: that of every
// input, or else the first bundle among its inputs (loose files given
// beside the bundles, which every node reads, come first); "" for a node
// of loose files only.
func (n *Node) BundlePath() string {
	if n.Bundle != "" {
		return n.Bundle
	}
	for _, in := range n.Inputs {
		if in.Bundle != "" {
			return in.Bundle
		}
	}
	return ""
}

// str returns the stored string equal to s.
func (sh *Shared) str(s string) string { return sh.strs.Str(s) }

// shareList is [share] for a list: nil and empty lists stay as they are.
func shareList[T any](sh *Shared, kind string, list []T) []T {
	if len(list) == 0 {
		return list
	}
	return share(sh, kind, slices.Clip(list))
}

// share returns the stored value of a kind equal to v, storing v when
// there is none.
func share[T any](sh *Shared, kind string, v T) T {
	b := appendKey(encodeString(sh.key[:0], kind), reflect.ValueOf(v))
	sh.key = b
	if x, ok := sh.vals[string(b)]; ok {
		return x.(T)
	}
	sh.vals[string(b)] = v
	return v
}

// encodeString appends a string with its length.
func encodeString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// appendKey appends the encoding of every part of v: values are equal
// when their encodings are. Maps are encoded in the order of their keys'
// encodings; a pointer by what it points to.
func appendKey(b []byte, v reflect.Value) []byte {
	switch v.Kind() {
	case reflect.String:
		return encodeString(b, v.String())
	case reflect.Bool:
		if v.Bool() {
			return append(b, 1)
		}
		return append(b, 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return binary.AppendVarint(b, v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return binary.AppendUvarint(b, v.Uint())
	case reflect.Float32, reflect.Float64:
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(v.Float()))
	case reflect.Complex64, reflect.Complex128:
		c := v.Complex()
		return binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(b, math.Float64bits(real(c))), math.Float64bits(imag(c)))
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return append(b, 0)
		}
		b = binary.AppendUvarint(append(b, 1), uint64(v.Len()))
		for i := 0; i < v.Len(); i++ {
			b = appendKey(b, v.Index(i))
		}
		return b
	case reflect.Map:
		if v.IsNil() {
			return append(b, 0)
		}
		entries := make([]string, 0, v.Len())
		for it := v.MapRange(); it.Next(); {
			entries = append(entries, string(appendKey(appendKey(nil, it.Key()), it.Value())))
		}
		sort.Strings(entries)
		b = binary.AppendUvarint(append(b, 1), uint64(len(entries)))
		for _, e := range entries {
			b = append(b, e...)
		}
		return b
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return append(b, 0)
		}
		if v.Kind() == reflect.Interface {
			b = encodeString(b, v.Elem().Type().String())
		}
		return appendKey(append(b, 1), v.Elem())
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			b = appendKey(b, v.Field(i))
		}
		return b
	}
	// Functions, channels and the like are not values to compare: each is
	// its own.
	return encodeString(b, v.Type().String()+"@"+string(binary.AppendUvarint(nil, uint64(v.Pointer()))))
}
