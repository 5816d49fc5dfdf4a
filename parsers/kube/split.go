package kube

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"

	"sigs.k8s.io/yaml"

	"github.com/proxyscan/proxyscan/parsers"
)

func isJSON(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n\ufeff")
	return len(t) > 0 && (t[0] == '{' || t[0] == '[')
}

// referenceUnmarshal decodes c into v with the reference decoders, whose
// errors are the ones reported.
func referenceUnmarshal(c *chunk, v any) error {
	if c.json {
		return json.Unmarshal(c.data, v)
	}
	return yaml.Unmarshal(c.data, v)
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
// into its items (de-indented so that each item is a document of its own,
// keeping its line count so that positions stay exact). The items are
// emitted as they are in the List, and de-indented by the goroutine that
// decodes them (chunk.materialize).
func splitYAML(name string, data []byte, emit func(chunk)) error {
	var errs parsers.ErrorList
	start, num := 0, 1
	flush := func(stop int) {
		if start < stop {
			if err := yamlDocument(name, data, lineIter{data: data, off: start, stop: stop, num: num}, emit); err != nil {
				errs = append(errs, err)
			}
		}
	}
	seps := separators{data: data}
	for {
		l, next, ok := seps.next(start)
		if !ok {
			break
		}
		flush(l)
		num += bytes.Count(data[start:next], []byte("\n"))
		if next == len(data) && (next == 0 || data[next-1] != '\n') {
			num++ // the separator is the last line, without a newline
		}
		start = next
	}
	flush(len(data))
	return errs.Err()
}

// separators finds the document separator lines ("---", "--- ...",
// "...") of a YAML stream, remembering where the next candidates of each
// kind are so that each is searched for once.
type separators struct {
	data       []byte
	dash, dots int // offsets of the next "\n---" and "\n..." (-1: none), valid from ahead on
	ahead      int
	init       bool
}

// next returns the first separator line starting at or after off (a line
// start): its start and the start of the line after it.
func (s *separators) next(off int) (start, next int, ok bool) {
	for p := off; p < len(s.data); {
		if isSeparator(lineBytes(s.data, p)) {
			return p, nextLineStart(s.data, p), true
		}
		q := s.candidate(p)
		if q < 0 {
			return 0, 0, false
		}
		p = q
	}
	return 0, 0, false
}

// candidate returns the start of the first line after offset p that
// begins with "---" or "...", or -1.
func (s *separators) candidate(p int) int {
	find := func(pat string) int {
		if i := bytes.Index(s.data[p:], []byte(pat)); i >= 0 {
			return p + i
		}
		return -1
	}
	if !s.init || p > s.ahead {
		s.dash, s.dots, s.init = find("\n---"), find("\n..."), true
	} else {
		if s.dash >= 0 && s.dash < p {
			s.dash = find("\n---")
		}
		if s.dots >= 0 && s.dots < p {
			s.dots = find("\n...")
		}
	}
	s.ahead = p
	q := s.dash
	if q < 0 || s.dots >= 0 && s.dots < q {
		q = s.dots
	}
	if q < 0 {
		return -1
	}
	return q + 1
}

func isSeparator(s []byte) bool {
	return bytes.Equal(s, []byte("---")) || bytes.HasPrefix(s, []byte("--- ")) || bytes.Equal(s, []byte("..."))
}

// lineBytes returns the line starting at offset p, without its newline
// and one carriage return before it.
func lineBytes(data []byte, p int) []byte {
	e := nextLineStart(data, p)
	if e > p && data[e-1] == '\n' {
		e--
	}
	if e > p && data[e-1] == '\r' {
		e--
	}
	return data[p:e]
}

// nextLineStart returns the offset after the newline ending the line at
// p, or the end of data.
func nextLineStart(data []byte, p int) int {
	if i := bytes.IndexByte(data[p:], '\n'); i >= 0 {
		return p + i + 1
	}
	return len(data)
}

type lineSpan struct {
	start, end int32 // byte offsets, end excludes the newline (and \r)
	num        int32 // 1-based line number
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
	l := lineSpan{start: int32(off), end: int32(e), num: int32(it.num)}
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

// yamlDocument turns one YAML document, the lines of doc, into chunks.
func yamlDocument(name string, data []byte, doc lineIter, emit func(chunk)) *parsers.Error {
	first, haveFirst := firstContentLine(data, doc)
	if !haveFirst {
		return nil
	}
	itemsAt, afterItems, haveItems := itemsLine(data, doc)
	if !haveItems {
		body := data[first.start:lastLineEnd(data, doc)]
		c := chunk{data: body, line: int(first.num)}
		c.apiVersion, c.kind = topLevelKind(body)
		if c.kind == "ConfigMap" {
			c.configLines = configDataLines(body, c.line)
		}
		emit(c)
		return nil
	}
	// A List: items start at "<ind>- " lines after "items:".
	rest := bytes.TrimSpace(data[int(itemsAt.start)+len("items:") : itemsAt.end])
	if len(rest) > 0 {
		if bytes.Equal(rest, []byte("[]")) {
			return nil
		}
		return parsers.Errorf(parsers.Pos{File: name, Line: int(itemsAt.num)}, "unsupported inline items list (expected one item per block)")
	}
	ind := -1
	var cont []byte // the indentation of an item's other lines
	// The current item runs from line cur to the next item, blank and
	// comment lines included.
	var cur lineSpan
	haveCur := false
	flushItem := func(stop int) {
		if haveCur {
			haveCur = false
			emit(chunk{data: data[cur.start:stop], line: int(cur.num), rawItem: true, itemIndent: ind})
		}
	}
	for it := afterItems; ; {
		l, ok := it.next()
		if !ok {
			break
		}
		s := data[l.start:l.end]
		if ind >= 0 && bytes.HasPrefix(s, cont) {
			continue // a line of the item (or a blank one)
		}
		if isBlankOrComment(s) {
			continue
		}
		lead := len(s) - len(bytes.TrimLeft(s, " "))
		if ind < 0 {
			if !bytes.HasPrefix(s[lead:], []byte("- ")) && !bytes.Equal(s[lead:], []byte("-")) {
				return parsers.Errorf(parsers.Pos{File: name, Line: int(l.num)}, "expected a list item (\"- ...\") after items:")
			}
			ind = lead
			cont = bytes.Repeat([]byte(" "), ind+2)
		}
		switch {
		case lead == ind && (bytes.HasPrefix(s[lead:], []byte("- ")) || bytes.Equal(s[lead:], []byte("-"))):
			flushItem(int(l.start))
			cur, haveCur = l, true
		case lead >= ind+2:
		case lead == 0:
			// The List's own fields after items (kind: List, metadata: ...).
			flushItem(int(l.start))
			return nil
		default:
			return parsers.Errorf(parsers.Pos{File: name, Line: int(l.num)}, "unexpected indentation in list item")
		}
	}
	flushItem(doc.stop)
	return nil
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

// lastLineEnd returns the end of the last line of doc (before its
// newline and carriage return).
func lastLineEnd(data []byte, doc lineIter) int {
	e := doc.stop
	if e > doc.off && data[e-1] == '\n' {
		e--
	}
	if e > doc.off && data[e-1] == '\r' {
		e--
	}
	return e
}

// itemsLine finds the last top-level "items:" line of doc (that of a
// List), and the lines after it.
func itemsLine(data []byte, doc lineIter) (at lineSpan, after lineIter, ok bool) {
	lineStart, num := doc.off, doc.num // a line start before the match and its number
	for p := doc.off; p < doc.stop; {
		i := bytes.Index(data[p:doc.stop], []byte("items:"))
		if i < 0 {
			break
		}
		q := p + i
		p = q + len("items:")
		if q > doc.off && data[q-1] != '\n' {
			continue
		}
		num += bytes.Count(data[lineStart:q], []byte("\n"))
		lineStart = q
		it := lineIter{data: data, off: q, stop: doc.stop, num: num}
		l, _ := it.next()
		if r := data[q+len("items:") : l.end]; len(r) == 0 || r[0] == ' ' {
			at, after, ok = l, it, true
		}
	}
	return at, after, ok
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
				return chunk{}, parsers.Errorf(parsers.Pos{File: name, Line: int(l.num)}, "unexpected indentation in list item")
			}
			s = s[ind+2:]
		}
		buf = append(buf, s...)
		buf = append(buf, '\n')
	}
	c := chunk{data: buf, line: int(item.num)}
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
		if v, ok := bytes.CutPrefix(ln, []byte("apiVersion:")); ok {
			apiVersion = yamlScalar(v)
		} else if v, ok := bytes.CutPrefix(ln, []byte("kind:")); ok {
			kind = yamlScalar(v)
		}
		if apiVersion != "" && kind != "" {
			break
		}
	}
	return apiVersion, kind
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
	s := &jscan{data: head, r: r, name: name, line: 1, keep: -1, emit: emit}
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
	if s.blk != nil {
		s.blk.refs.Add(1)
		c.blk = s.blk
	}
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

// jsonWindow is how much of a streamed export is read at a time (a
// variable for tests).
var jsonWindow = 1 << 20

// jscan scans a JSON export. Offsets (i, off, keep) count from the start
// of the export; data holds its bytes from offset base on, up to what was
// read so far.
type jscan struct {
	data []byte
	base int
	r    io.Reader // the rest of the export, nil once read
	rerr error     // the error reading it, other than its end
	name string
	i    int
	line int // line of offset off
	off  int
	// keep is the start of the outermost object being scanned whose
	// text is kept (-1: none): reading more drops what is before it.
	keep int
	emit func(chunk)
	// blk holds data, for a streamed export; free has the buffers of
	// blocks let go of.
	blk  *block
	free chan []byte
	// names interns kinds and API versions.
	names map[string]string
}

// has reports whether the byte at offset i is there, reading more of the
// export when it was not read yet.
func (s *jscan) has(i int) bool {
	for i-s.base >= len(s.data) {
		if !s.fill() {
			return false
		}
	}
	return true
}

// at returns the byte at offset i, which has reported there.
func (s *jscan) at(i int) byte { return s.data[i-s.base] }

// bytes returns the bytes from offset from to offset to, which are there.
func (s *jscan) bytes(from, to int) []byte { return s.data[from-s.base : to-s.base] }

// end returns the offset after the last byte read.
func (s *jscan) end() int { return s.base + len(s.data) }

// fill reads more of the export into another buffer (the old one may hold
// objects emitted and not yet decoded: it is reused once they are),
// dropping what is before the scanner's position, its line mark and the
// kept object. It reports whether it read anything.
func (s *jscan) fill() bool {
	if s.r == nil {
		return false
	}
	drop := min(s.i, s.off)
	if s.keep >= 0 {
		drop = min(drop, s.keep)
	}
	drop = min(drop-s.base, len(s.data))
	n := len(s.data) - drop
	var buf []byte
	select {
	case b := <-s.free:
		if cap(b) >= max(2*n, jsonWindow) {
			buf = b[:n]
		}
	default:
	}
	if buf == nil {
		buf = make([]byte, n, max(2*n, jsonWindow))
	}
	copy(buf, s.data[drop:])
	old := s.blk
	s.blk = newBlock(buf, s.free)
	old.release()
	m, err := io.ReadFull(s.r, buf[n:cap(buf)])
	s.data, s.base = buf[:n+m], s.base+drop
	if err != nil {
		s.r = nil
		if err != io.EOF && err != io.ErrUnexpectedEOF {
			s.rerr = err
		}
	}
	return m > 0
}

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
			if !s.fill() {
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
// (a quote), or -1 when it is not closed.
func skipString(d []byte, i int) int {
	for j := i + 1; ; {
		k := bytes.IndexByte(d[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		bs := 0
		for bs < j-i-1 && d[j-1-bs] == '\\' {
			bs++
		}
		j++
		if bs%2 == 0 {
			return j
		}
	}
}

// portLines finds the spec.ports items of a YAML Service (block style, as
// kubectl prints it) and the line of each.
func portLines(doc []byte, firstLine int) []LineText {
	var out []LineText
	inSpec, inPorts := false, false
	portsIndent := -1
	cur := -1
	for n, rest := 0, doc; rest != nil; n++ {
		var ln []byte
		ln, rest = nextLine(rest)
		t := bytes.TrimLeft(ln, " ")
		if len(t) == 0 || t[0] == '#' {
			continue
		}
		indent := len(ln) - len(t)
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
func nextLine(s []byte) (line, rest []byte) {
	if i := bytes.IndexByte(s, '\n'); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, nil
}
