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
//     them to the cut;
//   - so did the last item of a list of mappings in the last object (its
//     last port, say) that lacks keys every earlier item of that list has.
//
// A List cut short is told by its missing kind: line already (see
// yscan.split); this catches the Lists that print kind: first, and the
// multi-document exports. Only the last object is scanned for its lists,
// once the export has ended; the keys of the others are interned, so that
// watching costs no allocation per object.
type cutWatch struct {
	// common holds, per kind, the top-level keys every finished object of
	// that kind had; seen how many there were.
	common map[string][]string
	seen   map[string]int
	// fin is the last finished object (not yet in common: it may be the
	// export's last), cur the object being scanned.
	fin, cur objectKeys
	// lastNum is the last content line, open whether it is a key without
	// a value or a lone dash.
	lastNum int
	open    bool
	// finished counts the finished objects, kindless those without a
	// kind: line; dropped is the line where the last object, cut before
	// its kind: line, starts (0: none was).
	finished, kindless int
	dropped            int
	// item says how the last object's last list item lacks keys (see
	// lastObject).
	item string
	// names interns keys and kinds.
	names map[string]string
}

// objectKeys are the top-level keys of one object (none: no object).
type objectKeys struct {
	line int // where the object starts
	kind string
	keys []string
}

// name returns b as an interned string.
func (w *cutWatch) name(b []byte) string {
	if s, ok := w.names[string(b)]; ok {
		return s
	}
	if w.names == nil {
		w.names = map[string]string{}
	}
	s := string(b)
	w.names[s] = s
	return s
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
	w.cur.line = num
}

// discard forgets the object being scanned (the fields of a List, which
// is not an object of the export).
func (w *cutWatch) discard() { w.cur.kind, w.cur.keys, w.cur.line = "", w.cur.keys[:0], 0 }

// key notes a top-level key of the current object, ln being its line
// num from the key on ("kind: Service" gives the object's kind).
func (w *cutWatch) key(num int, ln []byte) {
	i := bytes.IndexByte(ln, ':')
	if i <= 0 || i+1 < len(ln) && ln[i+1] != ' ' {
		return
	}
	if len(w.cur.keys) == 0 && w.cur.line == 0 {
		w.cur.line = num
	}
	k := w.name(bytes.Trim(ln[:i], `"'`))
	if k == "kind" {
		w.cur.kind = w.name(bytes.Trim(bytes.TrimSpace(ln[i+1:]), `"'`))
	}
	w.cur.keys = append(w.cur.keys, k)
}

// finish ends the current object: the previous last one joins the
// others.
func (w *cutWatch) finish() {
	if len(w.cur.keys) == 0 {
		w.discard()
		return
	}
	w.finished++
	if w.cur.kind == "" {
		w.kindless++
	}
	if f := &w.fin; len(f.keys) > 0 && f.kind != "" {
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
	w.fin, w.cur = w.cur, w.fin
	w.discard()
}

func intersect(a, b []string) []string {
	out := a[:0]
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// dropLast reports, at the end of the export, whether its last object was
// cut before its kind: line, every other object having one: it is then
// left out (it could be decoded as no kind), and verdict says so.
func (w *cutWatch) dropLast() bool {
	c := &w.cur
	if len(c.keys) == 0 || c.kind != "" || w.finished == 0 || w.kindless > 0 {
		return false
	}
	w.dropped = c.line
	w.discard()
	return true
}

// lastObject scans the text of the export's last object, whose first line
// is num, once the export has ended: the last item of a list of mappings
// that the export's last line is in may lack keys every earlier item of
// its list has. kubectl prints the items of a list with the dash at the
// indentation of its key, the item's keys two columns further.
func (w *cutWatch) lastObject(text []byte, num int) {
	type list struct {
		lead         int
		line         int // where the current item starts
		keys, common []string
		earlier      int
	}
	var lists []list // those the current line is in, outermost first
	for it := (lineIter{data: text, stop: len(text), num: num}); ; {
		l, ok := it.next()
		if !ok {
			break
		}
		ln := text[l.start:l.end]
		if isBlankOrComment(ln) {
			continue
		}
		body := bytes.TrimLeft(ln, " ")
		lead := len(ln) - len(body)
		dash := bytes.HasPrefix(body, []byte("- "))
		for len(lists) > 0 {
			x := &lists[len(lists)-1]
			if x.lead < lead || x.lead == lead && dash {
				break
			}
			lists = lists[:len(lists)-1]
		}
		if dash {
			if n := len(lists); n == 0 || lists[n-1].lead != lead {
				lists = append(lists, list{lead: lead})
			}
			x := &lists[len(lists)-1]
			if x.line > 0 {
				if x.earlier == 0 {
					x.common = append(x.common[:0], x.keys...)
				} else {
					x.common = intersect(x.common, x.keys)
				}
				x.earlier++
			}
			x.line, x.keys = l.num, nil
			body, lead = body[2:], lead+2
		}
		if n := len(lists); n > 0 && lists[n-1].lead+2 == lead {
			if i := bytes.IndexByte(body, ':'); i > 0 && (i+1 == len(body) || body[i+1] == ' ') {
				lists[n-1].keys = append(lists[n-1].keys, string(body[:i]))
			}
		}
	}
	for i := len(lists) - 1; i >= 0; i-- {
		x := lists[i]
		if x.earlier == 0 || len(x.keys) == 0 {
			continue
		}
		if lost := lostKeys(x.common, x.keys); len(lost) > 0 {
			w.item = fmt.Sprintf("the last item of a list (from line %d) lacks %s, which every other item of that list has", x.line, strings.Join(lost, ", "))
			return
		}
	}
}

// lostKeys returns, sorted, the keys of common that keys lacks and that
// sort after its last one: what a cut after that key lost.
func lostKeys(common, keys []string) []string {
	last := keys[len(keys)-1]
	var lost []string
	for _, k := range common {
		if k > last && !slices.Contains(keys, k) {
			lost = append(lost, k)
		}
	}
	sort.Strings(lost)
	return lost
}

// verdict says, at the end of the export, why it looks cut short inside
// its last object ("" when it does not).
func (w *cutWatch) verdict() string {
	w.finish()
	switch {
	case w.lastNum == 0:
		return ""
	case w.dropped > 0:
		return fmt.Sprintf("cut short after line %d: the last object (from line %d) has no kind: line, which every other object of the export has; it was not read", w.lastNum, w.dropped)
	case w.open:
		return fmt.Sprintf("cut short after line %d: the export ends with a key without a value, in the middle of an object (kubectl never prints one)", w.lastNum)
	}
	if f := &w.fin; len(f.keys) > 0 && f.kind != "" && w.seen[f.kind] > 0 {
		if lost := lostKeys(w.common[f.kind], f.keys); len(lost) > 0 {
			return fmt.Sprintf("cut short after line %d: the last %s (from line %d) lacks %s, which every other %s of the export has",
				w.lastNum, f.kind, f.line, strings.Join(lost, ", "), f.kind)
		}
	}
	if w.item != "" {
		return fmt.Sprintf("cut short after line %d: %s", w.lastNum, w.item)
	}
	return ""
}
