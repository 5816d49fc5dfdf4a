package kube

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/bits"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"

	"sigs.k8s.io/yaml"

	"github.com/proxyscan/proxyscan/parsers"
)

// IsJSON reports whether data, an export, is JSON: its first character
// but blanks (and a byte order mark) opens an object or a list.
func IsJSON(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n\ufeff")
	return len(t) > 0 && (t[0] == '{' || t[0] == '[')
}

// referenceUnmarshal decodes c into v with the reference decoders, whose
// errors are the ones reported.
func referenceUnmarshal(c *chunk, v any) error {
	if c.json {
		return json.Unmarshal(c.data, v)
	}
	if err := duplicateKey(c.data); err != nil {
		return err
	}
	return yaml.Unmarshal(c.data, v)
}

var reDuplicateKey = regexp.MustCompile(`(?m)^\s*line (\d+): key (".*") already set in map$`)

// duplicateKey returns an error at the first key given twice in one
// mapping of a YAML object, which the decoders would otherwise read
// silently, the last one winning (the fast path refuses such objects, so
// only the objects it refused are looked at again).
func duplicateKey(data []byte) error {
	_, err := yaml.YAMLToJSONStrict(data)
	if err == nil {
		return nil
	}
	if m := reDuplicateKey.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Errorf("yaml: line %s: key %s given twice in one mapping (kubectl never prints that; the decoders would keep the last)", m[1], m[2])
	}
	return nil // a syntax error: the reference decoder reports it
}

var reYAMLLine = regexp.MustCompile(`^(?:error converting YAML to JSON: )?yaml: line (\d+): (.*)$`)

// decodeError turns a decoding error of chunk c into a positioned error.
func decodeError(name string, c *chunk, err error) *parsers.Error {
	pos := parsers.Pos{File: name, Line: c.line}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case c.json && errors.As(err, &syn):
		pos.Line += bytes.Count(c.data[:min(int(syn.Offset), len(c.data))], []byte("\n"))
		return parsers.Errorf(pos, "invalid JSON in %s: %v", describe(c), syn)
	case errors.As(err, &typ):
		if c.json {
			pos.Line += bytes.Count(c.data[:min(int(typ.Offset), len(c.data))], []byte("\n"))
		}
		field := typ.Field
		if field == "" {
			field = "(top level)"
		}
		return parsers.Errorf(pos, "%s: field %s: cannot use a JSON %s as %s", describe(c), field, typ.Value, typ.Type)
	}
	msg := err.Error()
	if m := reYAMLLine.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		pos.Line += n - 1
		return parsers.Errorf(pos, "invalid YAML in %s: %s", describe(c), m[2])
	}
	return parsers.Errorf(pos, "decoding %s: %s", describe(c), strings.TrimPrefix(msg, "error unmarshaling JSON: while decoding JSON: "))
}

func describe(c *chunk) string {
	if c.apiVersion != "" {
		return c.kind + " (" + c.apiVersion + ")"
	}
	return c.kind
}

// splitYAML splits multi-document YAML into objects, and a List document
// into its items; see splitYAMLFrom.
func splitYAML(name string, data []byte, emit func(chunk)) error {
	return splitYAMLFrom(name, data, nil, emit)
}

// splitYAMLFrom splits a YAML export whose first bytes are head and whose
// rest r reads (nil: head is all of it) into objects: every document of a
// multi-document stream, and every item of a List document. Items are
// emitted as they are in the List and de-indented by the goroutine that
// decodes them (chunk.materialize), keeping their line count so that
// positions stay exact. The export is read as it is split: only the
// document or List item being scanned and the objects emitted but not yet
// decoded are in memory, however large the List.
func splitYAMLFrom(name string, head []byte, r io.Reader, emit func(chunk)) error {
	_, err := splitYAMLCut(name, head, r, emit)
	return err
}

// splitYAMLCut is splitYAMLFrom, also returning why the export looks cut
// short inside its last object ("" when it does not; see cutWatch).
func splitYAMLCut(name string, head []byte, r io.Reader, emit func(chunk)) (string, error) {
	s := &yscan{window: window{data: head, r: r}, name: name, emit: emit, num: 1}
	if r != nil {
		s.free = make(chan []byte, 4)
		s.blk = newBlock(head, s.free)
	}
	s.split()
	s.blk.release()
	if s.rerr != nil {
		return "", s.rerr
	}
	if err := s.errs.Err(); err != nil {
		return "", err
	}
	if v := s.cut.verdict(); v != "" {
		return v, nil
	}
	switch {
	case s.kubectlList && s.trailer != trailerDone:
		return fmt.Sprintf("cut short after line %d: the List ends without the trailer kubectl prints after the items (kind: List, then metadata: with resourceVersion: \"\")", s.cut.lastNum), nil
	case s.unterminated > 0:
		return fmt.Sprintf("cut short in line %d: the export ends in the middle of a line, without the newline kubectl ends its output with", s.unterminated), nil
	}
	return "", nil
}

// States of the trailer of a kubectl List after its items (yscan.trailer).
const (
	trailerNone = iota
	trailerKind // kind: List
	trailerMeta // metadata:, and its lines
	trailerDone // its last line, resourceVersion: "" (or selfLink: "", before 1.20)
)

// emptyTrailerField reports whether k is the last line of a List's
// trailer: resourceVersion (or, before 1.20, selfLink) empty, quoted as
// kubectl quotes it or with single quotes, as YAML tools that re-save an
// export (PyYAML, yq) write it.
func emptyTrailerField(k []byte) bool {
	for _, f := range []string{`resourceVersion: ""`, `resourceVersion: ''`, `selfLink: ""`, `selfLink: ''`} {
		if string(k) == f {
			return true
		}
	}
	return false
}

// trail notes a content line of a kubectl List after its items.
func (s *yscan) trail(ln []byte) {
	t := bytes.TrimRight(ln, " ")
	switch {
	case bytes.Equal(t, []byte("kind: List")):
		s.trailer = trailerKind
	case s.trailer >= trailerKind && bytes.Equal(t, []byte("metadata:")):
		s.trailer = trailerMeta
	case s.trailer >= trailerMeta && len(t) > 2 && t[0] == ' ':
		s.trailer = trailerMeta
		if emptyTrailerField(bytes.TrimLeft(t, " ")) {
			s.trailer = trailerDone
		}
	default:
		s.trailer = trailerNone
	}
}

// yscan scans a YAML export line by line. Offsets count from the start of
// the export (see window).
type yscan struct {
	window
	name string
	emit func(chunk)
	pos  int // offset of the next line
	num  int // its number
	// keep is the offset of the first byte still needed (the document or
	// List item being scanned): reading more drops what is before it.
	keep int
	errs parsers.ErrorList
	// cut watches for an export cut short inside its last object.
	cut cutWatch
	// content counts the content lines, v1 says the first is
	// "apiVersion: v1"; kubectlList says the export's first document is a
	// List that starts so, then items:, as kubectl prints one, trailer
	// how far its trailer went (see trail); unterminated is the number of
	// the last line when it has no newline.
	content               int
	v1, kubectlList       bool
	trailer, unterminated int
}

// What yscan is reading in a document.
const (
	yamlHeader = iota // a document not known to be a List (yet): kept whole
	yamlItems         // the items of a List, emitted one by one
	yamlTail          // the rest of a List after its items (or after an error), skipped
)

// split emits the objects of the export, collecting errors in s.errs.
func (s *yscan) split() {
	mode := yamlHeader
	docStart, docNum := 0, 1
	// list says the document is a List (it has items:), kind that it has
	// a top-level kind: (kubectl prints a List's after its items, so a
	// List without one was cut short), last is its last line.
	list, kind, last := false, false, 0
	ind := -1       // indentation of the List's dashes (-1: no item yet)
	var cont []byte // the indentation of an item's other lines
	var cur lineSpan
	haveCur := false
	flushItem := func(stop int) {
		if haveCur {
			haveCur = false
			s.send(chunk{data: s.bytes(cur.start, stop), line: cur.num, rawItem: true, itemIndent: ind})
		}
	}
	endDocument := func(stop int) {
		if list && !kind && len(s.errs) == 0 {
			s.errs.Add(parsers.Pos{File: s.name, Line: last}, "the List ends without its kind: line (kubectl prints kind: List after the items): the export was cut short after this line")
		}
		switch mode {
		case yamlHeader:
			if docStart < stop {
				s.document(s.bytes(docStart, stop), docNum)
			}
		case yamlItems:
			flushItem(stop)
		}
	}
	fail := func(num int, format string, args ...any) {
		s.errs.Add(parsers.Pos{File: s.name, Line: num}, format, args...)
		mode = yamlTail
	}
	for {
		l, ok := s.line()
		if !ok {
			switch {
			case mode == yamlHeader:
				s.cut.lastObject(s.bytes(docStart, s.end()), docNum)
			case mode == yamlItems && haveCur:
				s.cut.lastObject(s.bytes(cur.start, s.end()), cur.num)
			}
			if mode != yamlTail && s.cut.dropLast() {
				// Cut before its kind: line: not an object to decode.
				mode, haveCur = yamlTail, false
			}
			endDocument(s.end())
			return
		}
		ln := s.bytes(l.start, l.end)
		if isSeparator(ln) {
			endDocument(l.start)
			s.cut.finish()
			mode, docStart, docNum, ind, haveCur = yamlHeader, s.pos, s.num, -1, false
			list, kind = false, false
			s.keep = s.pos
			continue
		}
		if t := bytes.TrimLeft(ln, " "); len(t) > 0 && t[0] == '\t' && len(bytes.TrimSpace(t)) > 0 {
			// YAML indents with spaces only: a line indented with a tab
			// would be read at another level, or end the List.
			fail(l.num, "a tab in the indentation (YAML indents with spaces only)")
			continue
		}
		if !isBlankOrComment(ln) {
			last = l.num
			s.cut.line(l.num, ln)
			s.content++
			if s.content == 1 {
				s.v1 = bytes.Equal(bytes.TrimRight(ln, " "), []byte("apiVersion: v1"))
			}
		} else if s.unterminated == l.num {
			s.unterminated = 0 // a blank last line: nothing was cut
		}
		if bytes.HasPrefix(ln, []byte("kind:")) {
			kind = true
		}
		switch mode {
		case yamlHeader:
			if !isItemsLine(ln) {
				if isKeyLine(ln) {
					s.cut.key(l.num, ln)
				}
				continue
			}
			list = true
			// kubectl prints a List's keys sorted: items: second.
			s.kubectlList = s.kubectlList || docNum == 1 && s.v1 && s.content == 2
			s.cut.discard()
			// A List: items start at "<ind>- " lines after "items:".
			switch rest := bytes.TrimSpace(ln[len("items:"):]); {
			case len(rest) == 0:
				mode = yamlItems
				s.keep = s.pos // the List's own fields are not needed
			case bytes.Equal(rest, []byte("[]")):
				mode = yamlTail
			default:
				fail(l.num, "unsupported inline items list (expected one item per block)")
			}
		case yamlItems:
			if ind >= 0 && bytes.HasPrefix(ln, cont) {
				if isKeyLine(ln[len(cont):]) {
					s.cut.key(l.num, ln[len(cont):])
				}
				continue // a line of the item (or a blank one)
			}
			if isBlankOrComment(ln) {
				continue
			}
			lead := len(ln) - len(bytes.TrimLeft(ln, " "))
			dash := bytes.HasPrefix(ln[lead:], []byte("- ")) || bytes.Equal(ln[lead:], []byte("-"))
			if ind < 0 {
				if !dash {
					fail(l.num, "expected a list item (\"- ...\") after items:")
					continue
				}
				ind = lead
				cont = bytes.Repeat([]byte(" "), ind+2)
			}
			switch {
			case lead == ind && dash:
				flushItem(l.start)
				cur, haveCur = l, true
				s.keep = l.start
				s.cut.start(l.num)
				if len(ln) > lead+2 && isKeyLine(ln[lead+2:]) {
					s.cut.key(l.num, ln[lead+2:])
				}
			case lead >= ind+2:
			case lead == 0:
				// The List's own fields after items (kind: List, metadata: ...).
				flushItem(l.start)
				s.cut.finish()
				mode = yamlTail
				s.keep = s.pos
			default:
				haveCur = false
				fail(l.num, "unexpected indentation in list item")
			}
		case yamlTail:
			if isItemsLine(ln) {
				fail(l.num, "duplicate items: key in List")
			}
			s.keep = s.pos
		}
		if mode == yamlTail && s.kubectlList && docNum == 1 && !isBlankOrComment(ln) {
			s.trail(ln)
		}
	}
}

// isKeyLine reports whether a line, from its indentation on, starts a
// mapping key (not a list item, a comment or a continuation).
func isKeyLine(ln []byte) bool {
	if len(ln) == 0 {
		return false
	}
	switch ln[0] {
	case ' ', '\t', '-', '#', '\r':
		return false
	}
	return true
}

// isItemsLine reports whether a line is a top-level "items:" key.
func isItemsLine(ln []byte) bool {
	return bytes.HasPrefix(ln, []byte("items:")) && (len(ln) == len("items:") || ln[len("items:")] == ' ')
}

// line returns the next line, reading more of the export as needed, or
// false at its end.
func (s *yscan) line() (lineSpan, bool) {
	from := s.pos // where the search for the newline resumes
	for {
		if i := bytes.IndexByte(s.data[from-s.base:], '\n'); i >= 0 {
			return s.take(from+i, from+i+1), true
		}
		from = s.end()
		if !s.fill(min(s.keep, s.pos)) {
			if s.pos >= s.end() {
				return lineSpan{}, false
			}
			s.unterminated = s.num
			return s.take(s.end(), s.end()), true
		}
	}
}

// take returns the line from s.pos to end, and moves to next.
func (s *yscan) take(end, next int) lineSpan {
	if end > s.pos && s.data[end-1-s.base] == '\r' {
		end--
	}
	l := lineSpan{start: s.pos, end: end, num: s.num}
	s.pos = next
	s.num++
	return l
}

// send emits c, an object of the current block.
func (s *yscan) send(c chunk) {
	s.hold(&c)
	s.emit(c)
}

// document emits the one object of a document that is not a List, the
// text doc whose first line is num.
func (s *yscan) document(doc []byte, num int) {
	first, ok := firstContentLine(doc, lineIter{data: doc, stop: len(doc), num: num})
	if !ok {
		return
	}
	e := len(doc)
	if e > 0 && doc[e-1] == '\n' {
		e--
	}
	if e > 0 && doc[e-1] == '\r' {
		e--
	}
	body := doc[first.start:e]
	c := chunk{data: body, line: first.num}
	c.apiVersion, c.kind = topLevelKind(body)
	if c.kind == "ConfigMap" {
		c.configLines = configDataLines(body, c.line)
	}
	s.send(c)
}

func isSeparator(s []byte) bool {
	return bytes.Equal(s, []byte("---")) || bytes.HasPrefix(s, []byte("--- ")) || bytes.Equal(s, []byte("..."))
}

// lineSpan is a line: its byte offsets (end excludes the newline and a
// carriage return before it) and its 1-based number.
type lineSpan struct {
	start, end int
	num        int
}

// lineIter reads the lines of data[off:stop), the first one numbered num.
// Lines are found as they are read (a copy of the iterator reads them
// again), so that a large export never holds an index of all its lines.
type lineIter struct {
	data      []byte
	off, stop int
	num       int
}

// next returns the next line, or false at the end.
func (it *lineIter) next() (lineSpan, bool) {
	if it.off >= it.stop {
		return lineSpan{}, false
	}
	off := it.off
	end := bytes.IndexByte(it.data[off:it.stop], '\n')
	next := 0
	if end < 0 {
		end = it.stop
		next = it.stop
	} else {
		end += off
		next = end + 1
	}
	e := end
	if e > off && it.data[e-1] == '\r' {
		e--
	}
	l := lineSpan{start: off, end: e, num: it.num}
	it.off = next
	it.num++
	return l, true
}

func allSpaces(s []byte) bool {
	for len(s) >= 8 {
		if binary.LittleEndian.Uint64(s) != 0x2020202020202020 {
			return false
		}
		s = s[8:]
	}
	for _, b := range s {
		if b != ' ' {
			return false
		}
	}
	return true
}

func isBlankOrComment(s []byte) bool {
	t := bytes.TrimLeft(s, " \t")
	return len(t) == 0 || t[0] == '#'
}

// firstContentLine returns the first line of doc that is neither blank
// nor a comment.
func firstContentLine(data []byte, doc lineIter) (lineSpan, bool) {
	for it := doc; ; {
		l, ok := it.next()
		if !ok {
			return lineSpan{}, false
		}
		if !isBlankOrComment(data[l.start:l.end]) {
			return l, true
		}
	}
}

// listItem de-indents one List item, the lines of item, by ind+2
// columns, keeping one output line per input line, into buf (or a new
// buffer when buf is too small).
func listItem(name string, data []byte, item lineIter, ind int, buf []byte) (chunk, *parsers.Error) {
	// The text only shrinks: lines lose their indentation (and carriage
	// return); a newline is added to the last line if it has none.
	if size := item.stop - item.off + 1; cap(buf) < size {
		buf = make([]byte, 0, size)
	}
	buf = buf[:0]
	cont := ind + 2
	for i, it := 0, item; ; i++ {
		l, ok := it.next()
		if !ok {
			break
		}
		s := data[l.start:l.end]
		switch {
		case i > 0 && len(s) >= cont && allSpaces(s[:cont]):
			s = s[cont:] // the common case, as below
		case i == 0:
			s = s[ind+1:] // drop "<ind>-"
			if len(s) > 0 && s[0] == ' ' {
				s = s[1:]
			}
		case isBlankOrComment(s) && len(s)-len(bytes.TrimLeft(s, " ")) < ind+2:
			s = nil
		default:
			if len(s) < ind+2 {
				return chunk{}, parsers.Errorf(parsers.Pos{File: name, Line: l.num}, "unexpected indentation in list item")
			}
			s = s[ind+2:]
		}
		buf = append(buf, s...)
		buf = append(buf, '\n')
	}
	c := chunk{data: buf, line: item.num}
	c.apiVersion, c.kind = topLevelKind(buf)
	if c.kind == "ConfigMap" {
		c.configLines = configDataLines(buf, c.line)
	}
	return c, nil
}

// topLevelKind finds the top-level apiVersion and kind of a YAML object.
func topLevelKind(doc []byte) (apiVersion, kind string) {
	for len(doc) > 0 {
		var ln []byte
		if i := bytes.IndexByte(doc, '\n'); i >= 0 {
			ln, doc = doc[:i], doc[i+1:]
		} else {
			ln, doc = doc, nil
		}
		if kindLine(ln, &apiVersion, &kind) {
			break
		}
	}
	return apiVersion, kind
}

// kindLine reads a YAML object's top-level line, when it is its
// apiVersion or kind, into them, and reports whether both are known.
func kindLine(ln []byte, apiVersion, kind *string) bool {
	if v, ok := bytes.CutPrefix(ln, []byte("apiVersion:")); ok {
		*apiVersion = yamlScalar(v)
	} else if v, ok := bytes.CutPrefix(ln, []byte("kind:")); ok {
		*kind = yamlScalar(v)
	}
	return *apiVersion != "" && *kind != ""
}

func yamlScalar(v []byte) string {
	s := bytes.TrimSpace(v)
	if i := bytes.Index(s, []byte(" #")); i >= 0 {
		s = bytes.TrimSpace(s[:i])
	}
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		s = s[1 : len(s)-1]
	}
	return knownName(s)
}

// knownName returns s as a string, without a copy for the kinds and API
// versions that most exports are made of.
func knownName(s []byte) string {
	switch string(s) {
	case "v1":
		return "v1"
	case "discovery.k8s.io/v1":
		return "discovery.k8s.io/v1"
	case "apps/v1":
		return "apps/v1"
	case "Service":
		return "Service"
	case "EndpointSlice":
		return "EndpointSlice"
	case "Endpoints":
		return "Endpoints"
	case "Pod":
		return "Pod"
	case "ConfigMap":
		return "ConfigMap"
	}
	return string(s)
}

// configDataLines maps the keys of a ConfigMap's top-level data: block to
// the file line where their value starts (the line after "key: |").
func configDataLines(doc []byte, firstLine int) map[string]int {
	out := map[string]int{}
	inData := false
	for n, ln := range bytes.Split(doc, []byte("\n")) {
		if len(ln) > 0 && ln[0] != ' ' {
			inData = bytes.Equal(bytes.TrimSpace(ln), []byte("data:"))
			continue
		}
		if !inData || !bytes.HasPrefix(ln, []byte("  ")) || len(ln) > 2 && ln[2] == ' ' {
			continue
		}
		key, val, ok := bytes.Cut(bytes.TrimSpace(ln), []byte(":"))
		if !ok {
			continue
		}
		k := yamlScalar(key)
		v := bytes.TrimSpace(val)
		if len(v) > 0 && (v[0] == '|' || v[0] == '>') {
			out[k] = firstLine + n + 1
		} else {
			out[k] = firstLine + n
		}
	}
	return out
}

// splitJSON splits a JSON export (one object, a List, an array of objects
// or several concatenated values) into objects, without decoding them.
func splitJSON(name string, data []byte, emit func(chunk)) error {
	return splitJSONFrom(name, data, nil, emit)
}

// splitJSONFrom is splitJSON for an export whose first bytes are head and
// whose rest r reads (nil: head is all of it). The export is read as it
// is split: only the object being scanned and the objects emitted but not
// yet decoded are in memory.
func splitJSONFrom(name string, head []byte, r io.Reader, emit func(chunk)) error {
	s := &jscan{window: window{data: head, r: r}, name: name, line: 1, keep: -1, emit: emit}
	if r != nil {
		s.free = make(chan []byte, 4)
		s.blk = newBlock(head, s.free)
	}
	err := s.split()
	s.blk.release()
	if s.rerr != nil {
		return s.rerr
	}
	return err
}

// A block is a buffer of a streamed export, which the scanner and the
// objects emitted from it hold: once all have let go of it, it goes back
// to the free list the scanner takes buffers from.
type block struct {
	buf  []byte
	refs atomic.Int32
	free chan []byte
}

// newBlock returns a block of buf, held once (by the scanner).
func newBlock(buf []byte, free chan []byte) *block {
	b := &block{buf: buf, free: free}
	b.refs.Store(1)
	return b
}

// release lets go of the block (nil: one not streamed).
func (b *block) release() {
	if b != nil && b.refs.Add(-1) == 0 {
		select {
		case b.free <- b.buf[:0]:
		default:
		}
	}
}

// send emits c, an object of the current block.
func (s *jscan) send(c chunk) {
	s.hold(&c)
	s.emit(c)
}

func (s *jscan) split() error {
	for {
		s.ws()
		if !s.has(s.i) {
			break
		}
		switch c := s.at(s.i); c {
		case '[':
			s.i++
			for {
				s.ws()
				if s.has(s.i) && s.at(s.i) == ']' {
					s.i++
					break
				}
				c, err := s.object(false)
				if err != nil {
					return err
				}
				s.send(c.chunk)
				s.ws()
				if s.has(s.i) && s.at(s.i) == ',' {
					s.i++
				}
			}
		case '{':
			c, err := s.object(true)
			if err != nil {
				return err
			}
			if !c.list {
				s.send(c.chunk)
			}
		default:
			return s.errorf("expected a JSON object or array, found %q", c)
		}
	}
	return nil
}

// readWindow is how much of a streamed export is read at a time (a
// variable for tests).
var readWindow = 1 << 20

// A window holds what is needed of a streamed export, read as it is
// scanned. Offsets count from the start of the export; data holds its
// bytes from offset base on, up to what was read so far. An export that
// is not streamed (r nil from the start) is all in data, without blocks.
type window struct {
	data []byte
	base int
	r    io.Reader // the rest of the export, nil once read
	rerr error     // the error reading it, other than its end
	// blk holds data, for a streamed export; free has the buffers of
	// blocks let go of.
	blk  *block
	free chan []byte
}

// bytes returns the bytes from offset from to offset to, which are there.
func (w *window) bytes(from, to int) []byte { return w.data[from-w.base : to-w.base] }

// end returns the offset after the last byte read.
func (w *window) end() int { return w.base + len(w.data) }

// hold makes c, an object of the current block, hold the block until it
// is decoded.
func (w *window) hold(c *chunk) {
	if w.blk != nil {
		w.blk.refs.Add(1)
		c.blk = w.blk
	}
}

// fill reads more of the export into another buffer (the old one may hold
// objects emitted and not yet decoded: it is reused once they are),
// dropping what is before offset keep. It reports whether it read
// anything.
func (w *window) fill(keep int) bool {
	if w.r == nil {
		return false
	}
	drop := min(keep-w.base, len(w.data))
	n := len(w.data) - drop
	var buf []byte
	select {
	case b := <-w.free:
		if cap(b) >= max(2*n, readWindow) {
			buf = b[:n]
		}
	default:
	}
	if buf == nil {
		buf = make([]byte, n, max(2*n, readWindow))
	}
	copy(buf, w.data[drop:])
	old := w.blk
	w.blk = newBlock(buf, w.free)
	old.release()
	m, err := io.ReadFull(w.r, buf[n:cap(buf)])
	w.data, w.base = buf[:n+m], w.base+drop
	if err != nil {
		w.r = nil
		if err != io.EOF && err != io.ErrUnexpectedEOF {
			w.rerr = err
		}
	}
	return m > 0
}

// jscan scans a JSON export (see window for offsets).
type jscan struct {
	window
	name string
	i    int
	line int // line of offset off
	off  int
	// keep is the start of the outermost object being scanned whose
	// text is kept (-1: none): reading more drops what is before it.
	keep int
	emit func(chunk)
	// names interns kinds and API versions.
	names map[string]string
}

// has reports whether the byte at offset i is there, reading more of the
// export when it was not read yet.
func (s *jscan) has(i int) bool {
	for i-s.base >= len(s.data) {
		if !s.fill(s.keepFrom()) {
			return false
		}
	}
	return true
}

// keepFrom returns the first offset the scanner still needs: its
// position, its line mark and the kept object.
func (s *jscan) keepFrom() int {
	k := min(s.i, s.off)
	if s.keep >= 0 {
		k = min(k, s.keep)
	}
	return k
}

// at returns the byte at offset i, which has reported there.
func (s *jscan) at(i int) byte { return s.data[i-s.base] }

func (s *jscan) lineAt(off int) int {
	if off < s.off {
		return s.line - bytes.Count(s.bytes(off, s.off), []byte("\n"))
	}
	s.line += bytes.Count(s.bytes(s.off, off), []byte("\n"))
	s.off = off
	return s.line
}

func (s *jscan) errorf(format string, args ...any) error {
	return parsers.ErrorList{parsers.Errorf(parsers.Pos{File: s.name, Line: s.lineAt(min(s.i, s.end()))}, format, args...)}
}

func (s *jscan) ws() {
	for s.has(s.i) {
		switch j := s.i - s.base; s.data[j] {
		case ' ', '\n':
			s.i = s.base + skipSpaces(s.data, j+1)
		case '\t', '\r':
			s.i++
		default:
			if s.i == 0 && s.has(2) && bytes.HasPrefix(s.data, []byte("\ufeff")) {
				s.i += 3
				continue
			}
			return
		}
	}
}

type jobject struct {
	chunk
	list bool // the object has an "items" array (a List), whose items were emitted
}

// object scans the object at s.i; with top, an "items" array is split.
func (s *jscan) object(top bool) (jobject, error) {
	start := s.i
	startLine := s.lineAt(start)
	var o jobject
	if !s.has(s.i) || s.at(s.i) != '{' {
		return o, s.errorf("expected a JSON object")
	}
	outer := s.keep
	if outer < 0 {
		s.keep = start
		defer func() { s.keep = -1 }()
	}
	s.i++
	for {
		s.ws()
		if !s.has(s.i) {
			return o, parsers.ErrorList{parsers.Errorf(parsers.Pos{File: s.name, Line: startLine}, "truncated JSON: object starting here is not closed")}
		}
		if c := s.at(s.i); c == '}' {
			s.i++
			break
		} else if c == ',' {
			s.i++
			continue
		}
		key, err := s.strBytes()
		if err != nil {
			return o, err
		}
		s.ws()
		if !s.has(s.i) || s.at(s.i) != ':' {
			return o, s.errorf("expected ':' after object key %q", key)
		}
		s.i++
		s.ws()
		switch {
		case top && string(key) == "items" && s.has(s.i) && s.at(s.i) == '[':
			s.i++
			o.list = true
			// The List's own text is not needed: each item is kept
			// while it is scanned.
			s.keep = -1
			for {
				s.ws()
				if !s.has(s.i) {
					return o, parsers.ErrorList{parsers.Errorf(parsers.Pos{File: s.name, Line: startLine}, "truncated JSON: items array is not closed")}
				}
				if c := s.at(s.i); c == ']' {
					s.i++
					break
				} else if c == ',' {
					s.i++
					continue
				}
				it, err := s.object(false)
				if err != nil {
					return o, err
				}
				s.send(it.chunk)
			}
		case (string(key) == "kind" || string(key) == "apiVersion") && s.has(s.i) && s.at(s.i) == '"':
			isKind := string(key) == "kind"
			b, err := s.strBytes()
			if err != nil {
				return o, err
			}
			v := s.interned(b)
			if isKind {
				o.kind = v
			} else {
				o.apiVersion = v
			}
		default:
			if err := s.skip(); err != nil {
				return o, err
			}
		}
	}
	if !o.list {
		o.data = s.bytes(start, s.i)
	}
	o.line = startLine
	o.json = true
	return o, nil
}

// strBytes reads a JSON string at s.i, returning its value (a slice of
// the input when it has no escapes).
func (s *jscan) strBytes() ([]byte, error) {
	if !s.has(s.i) || s.at(s.i) != '"' {
		return nil, s.errorf("expected a JSON string")
	}
	start := s.i
	s.i++
	escaped := false
	for s.has(s.i) {
		switch s.at(s.i) {
		case '\\':
			escaped = true
			s.i += 2
			continue
		case '"':
			s.i++
			raw := s.bytes(start, s.i)
			if !escaped {
				return raw[1 : len(raw)-1], nil
			}
			var v string
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, s.errorf("invalid JSON string: %v", err)
			}
			return []byte(v), nil
		}
		s.i++
	}
	return nil, s.errorf("truncated JSON: unterminated string")
}

// interned returns b as a string, the same string for the same bytes
// (kinds and API versions repeat in every item).
func (s *jscan) interned(b []byte) string {
	if v, ok := s.names[string(b)]; ok {
		return v
	}
	v := string(b)
	if s.names == nil {
		s.names = map[string]string{}
	}
	if len(s.names) < 256 {
		s.names[v] = v
	}
	return v
}

// skip moves past one JSON value of any type. Strings inside objects
// and arrays are skipped, not decoded: the decoder checks them.
func (s *jscan) skip() error {
	if !s.has(s.i) {
		return s.errorf("truncated JSON: missing value")
	}
	switch s.at(s.i) {
	case '"':
		_, err := s.strBytes()
		return err
	case '{', '[':
		depth := 0
		// i is where scanning resumes once more is read: s.i stays at
		// the value's start, so that it is kept.
		for i := s.i; ; {
			d := s.data
			j := i - s.base
			inString := false
		scan:
			for ; j < len(d); j++ {
				switch d[j] {
				case ' ', '\n':
					j = skipSpaces(d, j+1) - 1
				case '"':
					end := skipString(d, j)
					if end < 0 {
						inString = true
						break scan
					}
					j = end - 1
				case '{', '[':
					depth++
				case '}', ']':
					depth--
					if depth == 0 {
						s.i = s.base + j + 1
						return nil
					}
				}
			}
			i = s.base + j
			if !s.fill(s.keepFrom()) {
				if inString {
					s.i = s.end()
					return s.errorf("truncated JSON: unterminated string")
				}
				return parsers.ErrorList{parsers.Errorf(parsers.Pos{File: s.name, Line: s.lineAt(s.i)}, "truncated JSON: value starting here is not closed")}
			}
		}
	default:
		for s.has(s.i) {
			switch s.at(s.i) {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return nil
			}
			s.i++
		}
		return nil
	}
}

// skipSpaces returns the offset of the first byte from i on in d that is
// not a space, looking at eight bytes at a time: most of pretty-printed
// JSON is indentation.
func skipSpaces(d []byte, i int) int {
	for i+8 <= len(d) && binary.LittleEndian.Uint64(d[i:]) == 0x2020202020202020 {
		i += 8
	}
	for i < len(d) && d[i] == ' ' {
		i++
	}
	return i
}

// skipString returns the offset after the JSON string starting at d[i]
// (a quote), or -1 when it is not closed. It looks at eight bytes at a
// time for a quote or a backslash.
func skipString(d []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	j := i + 1
	for {
		for j+8 <= len(d) {
			x := binary.LittleEndian.Uint64(d[j:])
			q, b := x^('"'*ones), x^('\\'*ones)
			// The high bit of each byte of q (b) that is zero, and of
			// none before the first: its lowest one is the first.
			if m := ((q-ones)&^q | (b-ones)&^b) & highs; m != 0 {
				j += bits.TrailingZeros64(m) / 8
				break
			}
			j += 8
		}
		for ; j < len(d) && d[j] != '"' && d[j] != '\\'; j++ {
		}
		switch {
		case j >= len(d):
			return -1
		case d[j] == '"':
			return j + 1
		}
		j += 2 // an escape: the byte after the backslash is not a quote that ends the string
	}
}

// portLines finds the spec.ports items of a YAML Service (block style, as
// kubectl prints it) and the line of each.
func portLines(doc []byte, firstLine int) []LineText {
	var out []LineText
	inSpec, inPorts := false, false
	portsIndent := -1
	cur := -1
	for n, l := range blockLines(doc) {
		t, indent := l.text, l.indent
		if indent == 0 {
			inSpec = bytes.HasPrefix(t, []byte("spec:"))
			inPorts = false
			continue
		}
		if !inSpec {
			continue
		}
		if indent == 2 && !bytes.HasPrefix(t, []byte("- ")) {
			inPorts = bytes.Equal(bytes.TrimSpace(t), []byte("ports:"))
			portsIndent = -1
			continue
		}
		if !inPorts {
			continue
		}
		if bytes.HasPrefix(t, []byte("- ")) && (portsIndent < 0 || indent == portsIndent) {
			portsIndent = indent
			out = append(out, LineText{Line: firstLine + n, Text: string(bytes.TrimSpace(t))})
			cur = len(out) - 1
			t = t[2:]
		}
		if cur < 0 {
			continue
		}
		key, val, ok := bytes.Cut(t, []byte(":"))
		if !ok {
			continue
		}
		switch string(bytes.TrimSpace(key)) {
		case "name":
			out[cur].Name = yamlScalar(val)
		case "port":
			if p, err := strconv.Atoi(yamlScalar(val)); err == nil {
				out[cur].Port = int32(p)
			}
		}
	}
	return out
}

// nextLine returns the first line of s (without its newline) and the rest,
// nil after the last line.
// blockLine is a line of a YAML document in block style that holds a key
// or an item: its text from its first character, and its indent.
type blockLine struct {
	text   []byte
	indent int
}

// blockLines yields the lines of a YAML document in block style that hold
// a key or an item, with their number from 0: blank and comment lines are
// skipped.
func blockLines(doc []byte) iter.Seq2[int, blockLine] {
	return func(yield func(int, blockLine) bool) {
		for n, rest := 0, doc; rest != nil; n++ {
			var ln []byte
			ln, rest = nextLine(rest)
			t := bytes.TrimLeft(ln, " ")
			if len(t) == 0 || t[0] == '#' {
				continue
			}
			if !yield(n, blockLine{t, len(ln) - len(t)}) {
				return
			}
		}
	}
}

func nextLine(s []byte) (line, rest []byte) {
	if i := bytes.IndexByte(s, '\n'); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, nil
}

// chunkAddressLines returns the line of each endpoint's first address of
// the EndpointSlice chunk c (see addressLines and jsonAddressLines).
func chunkAddressLines(c *chunk) []int32 {
	if c.json {
		return jsonAddressLines(c.data, c.line)
	}
	return addressLines(c.data, c.line)
}

// jsonAddressLines returns, for each object of the top-level endpoints
// array of an EndpointSlice in JSON, the line of the first string of its
// addresses array (0 when it has none). A slice written on one line
// (compact JSON, kubectl's -o json piped through jq -c) returns nil: every
// address is on the object's line, which its position already gives.
func jsonAddressLines(doc []byte, firstLine int) []int32 {
	if bytes.IndexByte(doc, '\n') < 0 {
		return nil
	}
	var out []int32
	line := firstLine
	depth := 0
	endpoints, addrs := -1, -1 // the depth inside the endpoints array, inside the current addresses array
	var str, key []byte        // the last string read, the last key
	for i := 0; i < len(doc); i++ {
		switch doc[i] {
		case '\n':
			line++
		case '"':
			j := i + 1
			for j < len(doc) && doc[j] != '"' {
				if doc[j] == '\\' {
					j++
				}
				j++
			}
			str = doc[i+1 : min(j, len(doc))]
			if addrs >= 0 && depth == addrs && len(out) > 0 && out[len(out)-1] == 0 {
				out[len(out)-1] = int32(line)
			}
			i = j
		case ':':
			key = str
		case '{', '[':
			depth++
			switch {
			case doc[i] == '[' && depth == 2 && string(key) == "endpoints":
				endpoints = depth
			case doc[i] == '{' && endpoints >= 0 && depth == endpoints+1:
				out = append(out, 0)
			case doc[i] == '[' && endpoints >= 0 && depth == endpoints+2 && string(key) == "addresses":
				addrs = depth
			}
			key = nil
		case '}', ']':
			if depth == addrs {
				addrs = -1
			}
			if depth == endpoints {
				endpoints = -1
			}
			depth--
		}
	}
	return out
}

// addressLines returns, for each item of the top-level endpoints list of
// an EndpointSlice document, the line of its first address: the first
// item under its addresses key, or the key's own line when the addresses
// are written inline (0 when the item has none).
func addressLines(doc []byte, firstLine int) []int32 {
	var out []int32
	inEndpoints := false
	itemIndent := -1
	addrIndent := -1 // the indent of the current item's addresses key, while its list is read
	for n, l := range blockLines(doc) {
		t, indent := l.text, l.indent
		item := bytes.HasPrefix(t, []byte("- "))
		if indent == 0 && !item {
			inEndpoints = bytes.Equal(bytes.TrimSpace(t), []byte("endpoints:"))
			itemIndent, addrIndent = -1, -1
			continue
		}
		if !inEndpoints {
			continue
		}
		if item && (itemIndent < 0 || indent == itemIndent) {
			itemIndent, addrIndent = indent, -1
			out = append(out, 0)
			t, indent = t[2:], indent+2
		} else if addrIndent >= 0 {
			if item && indent >= addrIndent && out[len(out)-1] == 0 {
				out[len(out)-1] = int32(firstLine + n)
			}
			if indent > addrIndent || item && indent == addrIndent {
				continue
			}
			addrIndent = -1
		}
		if len(out) == 0 || out[len(out)-1] != 0 {
			continue
		}
		key, val, ok := bytes.Cut(t, []byte(":"))
		if !ok || !bytes.Equal(bytes.TrimSpace(key), []byte("addresses")) {
			continue
		}
		if v := bytes.TrimSpace(val); len(v) > 0 {
			out[len(out)-1] = int32(firstLine + n)
		} else {
			addrIndent = indent
		}
	}
	return out
}

// podCIDRLine returns the line of the spec.podCIDRs key of a Node
// document (else of spec.podCIDR), 0 when it has neither: in YAML the key
// one level below the top-level spec key, in JSON the first key so named
// (a string holding the name escapes its quotes).
func podCIDRLine(doc []byte, firstLine int, isJSON bool) int {
	if isJSON {
		for _, key := range []string{`"podCIDRs"`, `"podCIDR"`} {
			for from := 0; ; {
				i := bytes.Index(doc[from:], []byte(key))
				if i < 0 {
					break
				}
				i += from
				if i > 0 && doc[i-1] == '\\' {
					from = i + len(key)
					continue
				}
				return firstLine + bytes.Count(doc[:i], []byte("\n"))
			}
		}
		return 0
	}
	single, plural := 0, 0
	inSpec := false
	keyIndent := -1
	for n, l := range blockLines(doc) {
		t, indent := l.text, l.indent
		if indent == 0 {
			inSpec = bytes.Equal(bytes.TrimSpace(t), []byte("spec:"))
			keyIndent = -1
			continue
		}
		if !inSpec {
			continue
		}
		if keyIndent < 0 {
			keyIndent = indent
		}
		if indent != keyIndent {
			continue
		}
		switch key, _, _ := bytes.Cut(t, []byte(":")); string(bytes.TrimSpace(key)) {
		case "podCIDRs":
			plural = firstLine + n
		case "podCIDR":
			single = firstLine + n
		}
	}
	if plural > 0 {
		return plural
	}
	return single
}
