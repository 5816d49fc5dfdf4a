package kube

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// cutWatch looks, while a YAML export is split, for signs that it was cut
// short inside its last object: a copy that stopped mid-transfer, a paste
// that lost its end. kubectl prints every mapping's keys sorted and never
// a key without a value, so
//
//   - an export whose last line is a key without a value (or a lone "-")
//     ends in the middle of a mapping;
//   - a last object that lacks top-level keys every other object of its
//     kind in the export has, keys that sort after its own last one, lost
//     them to the cut.
//
// A List cut short is told by its missing kind: line already (see
// yscan.split); this catches the Lists that print kind: first, and the
// multi-document exports.
type cutWatch struct {
	// common holds, per kind, the top-level keys every finished object of
	// that kind had; seen how many there were.
	common map[string][]string
	seen   map[string]int
	// fin is the last finished object (not yet in common: it may be the
	// export's last), cur the object being scanned.
	fin, cur *objectKeys
	// lastNum is the last content line, open whether it is a key without
	// a value or a lone dash.
	lastNum int
	open    bool
	// finished counts the finished objects, kindless those without a
	// kind: line; dropped is the line where the last object, cut before
	// its kind: line, starts (0: none was).
	finished, kindless int
	dropped            int
}

// objectKeys are the top-level keys of one object.
type objectKeys struct {
	line int // where the object starts
	kind string
	keys []string
}

// line notes a content line (not blank, not a comment) of the export.
func (w *cutWatch) line(num int, ln []byte) {
	w.lastNum = num
	t := bytes.TrimRight(ln, " \t")
	w.open = bytes.HasSuffix(t, []byte(":")) || bytes.Equal(bytes.TrimLeft(t, " "), []byte("-"))
}

// start begins a new object at line num: the current one is finished.
func (w *cutWatch) start(num int) {
	w.finish()
	w.cur = &objectKeys{line: num}
}

// discard forgets the object being scanned (the fields of a List, which
// is not an object of the export).
func (w *cutWatch) discard() { w.cur = nil }

// key notes a top-level key of the current object, ln being its line
// num from the key on ("kind: Service" gives the object's kind).
func (w *cutWatch) key(num int, ln []byte) {
	if w.cur == nil {
		w.cur = &objectKeys{line: num}
	}
	i := bytes.IndexByte(ln, ':')
	if i <= 0 || i+1 < len(ln) && ln[i+1] != ' ' {
		return
	}
	k := string(bytes.Trim(ln[:i], `"'`))
	if k == "kind" {
		w.cur.kind = string(bytes.Trim(bytes.TrimSpace(ln[i+1:]), `"'`))
	}
	w.cur.keys = append(w.cur.keys, k)
}

// finish ends the current object: the previous last one joins the
// others.
func (w *cutWatch) finish() {
	if w.cur == nil || len(w.cur.keys) == 0 {
		w.cur = nil
		return
	}
	w.finished++
	if w.cur.kind == "" {
		w.kindless++
	}
	if f := w.fin; f != nil && f.kind != "" {
		if w.common == nil {
			w.common, w.seen = map[string][]string{}, map[string]int{}
		}
		if w.seen[f.kind] == 0 {
			w.common[f.kind] = append([]string(nil), f.keys...)
		} else {
			w.common[f.kind] = intersect(w.common[f.kind], f.keys)
		}
		w.seen[f.kind]++
	}
	w.fin, w.cur = w.cur, nil
}

func intersect(a, b []string) []string {
	out := a[:0]
	for _, x := range a {
		for _, y := range b {
			if x == y {
				out = append(out, x)
				break
			}
		}
	}
	return out
}

// dropLast reports, at the end of the export, whether its last object was
// cut before its kind: line, every other object having one: it is then
// left out (it could be decoded as no kind), and verdict says so.
func (w *cutWatch) dropLast() bool {
	c := w.cur
	if c == nil || len(c.keys) == 0 || c.kind != "" || w.finished == 0 || w.kindless > 0 {
		return false
	}
	w.dropped, w.cur = c.line, nil
	return true
}

// verdict says, at the end of the export, why it looks cut short inside
// its last object ("" when it does not).
func (w *cutWatch) verdict() string {
	w.finish()
	if w.lastNum == 0 {
		return ""
	}
	if w.dropped > 0 {
		return fmt.Sprintf("cut short after line %d: the last object (from line %d) has no kind: line, which every other object of the export has; it was not read", w.lastNum, w.dropped)
	}
	if w.open {
		return fmt.Sprintf("cut short after line %d: the export ends with a key without a value, in the middle of an object (kubectl never prints one)", w.lastNum)
	}
	f := w.fin
	if f == nil || len(f.keys) == 0 {
		return ""
	}
	kind := f.kind
	common := w.common[kind]
	if kind == "" || w.seen[kind] == 0 || len(common) == 0 {
		return ""
	}
	last := f.keys[len(f.keys)-1]
	var lost []string
	for _, k := range common {
		if k > last && !slices.Contains(f.keys, k) {
			lost = append(lost, k)
		}
	}
	if len(lost) == 0 {
		return ""
	}
	sort.Strings(lost)
	return fmt.Sprintf("cut short after line %d: the last %s (from line %d) lacks %s, which every other %s of the export has",
		w.lastNum, kind, f.line, strings.Join(lost, ", "), kind)
}
