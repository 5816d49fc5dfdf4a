package kube

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"strings"
)

// yamlToJSON converts one YAML document in the regular shape kubectl
// prints — block mappings and sequences, plain and quoted single-line
// scalars, comments — to JSON, appending it to dst. It reports false for
// anything outside that subset (anchors, tags, flow collections other than
// {} and [], block and multi-line scalars, duplicate keys, non-ASCII text,
// scalars whose YAML 1.1 type is ambiguous such as yes, 0777 or 1.5), and
// the caller then decodes the document with sigs.k8s.io/yaml. When it
// reports true, the JSON holds the same values sigs.k8s.io/yaml's
// YAMLToJSON gives, so correctness never depends on this path.
func yamlToJSON(dst, doc []byte) ([]byte, bool) {
	var c yconv
	return c.convert(dst, doc)
}

// convert is yamlToJSON reusing c's scratch space.
func (c *yconv) convert(dst, doc []byte) ([]byte, bool) {
	c.doc, c.out, c.i, c.keys = doc, dst, 0, c.keys[:0]
	if !c.scanLines() {
		return dst, false
	}
	if len(c.lines) == 0 || c.lines[0].ind != 0 || !c.node(0) || c.i != len(c.lines) {
		return dst, false
	}
	return c.out, true
}

// yline is one non-blank, non-comment line: its indentation and the
// bounds of its content in the document (trailing spaces removed).
type yline struct {
	ind, s, e int
}

type yconv struct {
	doc   []byte
	lines []yline
	i     int
	out   []byte
	keys  [][2]int // encoded keys of the open mappings, in out
}

// scanLines splits doc into lines, refusing bytes outside printable ASCII
// (tabs, carriage returns and control characters included).
func (c *yconv) scanLines() bool {
	doc := c.doc
	c.lines = c.lines[:0]
	start := 0
	for start <= len(doc) {
		end := start
		for {
			for end+8 <= len(doc) && printable8(binary.LittleEndian.Uint64(doc[end:])) {
				end += 8
			}
			if end >= len(doc) || doc[end] == '\n' {
				break
			}
			if b := doc[end]; b < 0x20 || b > 0x7e {
				return false
			}
			end++
		}
		ind := min(skipSpaces(doc, start), end)
		e := end
		for e > ind && doc[e-1] == ' ' {
			e--
		}
		if e > ind && doc[ind] != '#' {
			c.lines = append(c.lines, yline{ind: ind - start, s: ind, e: e})
		}
		start = end + 1
	}
	return true
}

// printable8 reports whether the eight bytes of w are all printable
// ASCII (0x20 to 0x7e).
func printable8(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	below := (w - 0x20*ones) &^ w & highs // a byte under 0x20
	above := (w + ones | w) & highs       // a byte over 0x7e
	return below|above == 0
}

func (c *yconv) content(l *yline) []byte { return c.doc[l.s:l.e] }

func isSeqItem(s []byte) bool { return s[0] == '-' && (len(s) == 1 || s[1] == ' ') }

// node converts the block node whose first line is c.lines[c.i], indented
// by ind.
func (c *yconv) node(ind int) bool {
	s := c.content(&c.lines[c.i])
	if isSeqItem(s) {
		return c.sequence(ind)
	}
	if _, _, k := c.splitKey(s, false); k == keyFound {
		return c.mapping(ind)
	}
	return false // a scalar on a line of its own
}

// mapping converts a block mapping at indentation ind.
func (c *yconv) mapping(ind int) bool {
	c.out = append(c.out, '{')
	base := len(c.keys)
	defer func() { c.keys = c.keys[:base] }()
	for c.i < len(c.lines) {
		l := &c.lines[c.i]
		if l.ind < ind {
			break
		}
		if l.ind > ind {
			return false
		}
		s := c.content(l)
		if isSeqItem(s) {
			return false
		}
		if len(c.keys) > base {
			c.out = append(c.out, ',')
		}
		k0 := len(c.out)
		rest, ok, _ := c.splitKey(s, true)
		if !ok {
			return false
		}
		key := c.out[k0:]
		for _, k := range c.keys[base:] {
			// Keys are ASCII: only keys of the same length fold alike.
			if k[1]-k[0] == len(key) && bytes.EqualFold(c.out[k[0]:k[1]], key) {
				return false // a duplicate key: the last one would win
			}
		}
		c.keys = append(c.keys, [2]int{k0, len(c.out)})
		c.out = append(c.out, ':')
		c.i++
		if len(rest) == 0 {
			if c.i < len(c.lines) {
				n := &c.lines[c.i]
				if n.ind > ind {
					if !c.node(n.ind) {
						return false
					}
					continue
				}
				if n.ind == ind && isSeqItem(c.content(n)) {
					if !c.sequence(ind) {
						return false
					}
					continue
				}
			}
			c.out = append(c.out, "null"...)
			continue
		}
		if !c.scalar(rest) || c.i < len(c.lines) && c.lines[c.i].ind > ind {
			return false
		}
	}
	c.out = append(c.out, '}')
	return true
}

// sequence converts a block sequence whose "- " items are at indentation
// ind.
func (c *yconv) sequence(ind int) bool {
	c.out = append(c.out, '[')
	first := true
	for c.i < len(c.lines) {
		l := &c.lines[c.i]
		if l.ind < ind {
			break
		}
		if l.ind > ind {
			return false
		}
		s := c.content(l)
		if !isSeqItem(s) {
			break // the enclosing mapping goes on
		}
		if !first {
			c.out = append(c.out, ',')
		}
		first = false
		rest := bytes.TrimLeft(s[1:], " ")
		if len(rest) == 0 || rest[0] == '#' {
			c.i++
			if c.i < len(c.lines) && c.lines[c.i].ind > ind {
				if !c.node(c.lines[c.i].ind) {
					return false
				}
				continue
			}
			c.out = append(c.out, "null"...)
			continue
		}
		if _, _, k := c.splitKey(rest, false); k == keyFound || isSeqItem(rest) {
			// "- key: value" or "- - item": a node starting in this line's
			// column after the dash.
			l.ind += len(s) - len(rest)
			l.s = l.e - len(rest)
			if !c.node(l.ind) {
				return false
			}
			continue
		}
		if !c.scalar(rest) {
			return false
		}
		c.i++
		if c.i < len(c.lines) && c.lines[c.i].ind > ind {
			return false
		}
	}
	c.out = append(c.out, ']')
	return true
}

// maxKey is the longest key (up to its colon) the converter takes: go-yaml
// rejects an implicit key longer than 1024 characters.
const maxKey = 1000

const (
	keyNone  = iota // not a "key: value" line
	keyFound        // a key
	keyBad          // outside the subset
)

// splitKey reads "key: rest" or "key:" in s. With emit, the key is
// appended to c.out as a JSON string. It returns the rest (comments
// removed), whether s is a usable key line, and its kind.
func (c *yconv) splitKey(s []byte, emit bool) (rest []byte, ok bool, kind int) {
	var after []byte
	switch s[0] {
	case '"', '\'':
		val, n, good := quoted(s, nil)
		if !good {
			return nil, false, keyBad
		}
		after = s[n:]
		if len(after) == 0 || after[0] != ':' || len(after) > 1 && after[1] != ' ' {
			return nil, false, keyNone
		}
		if n > maxKey {
			return nil, false, keyBad
		}
		if emit {
			c.out = appendJSONString(c.out, val)
		}
		after = after[1:]
	default:
		if indicator(s) || docMarker(s) {
			return nil, false, keyBad
		}
		i := 0
		for ; i < len(s); i++ {
			if s[i] == ':' && (i+1 == len(s) || s[i+1] == ' ') {
				break
			}
		}
		if i == len(s) {
			return nil, false, keyNone
		}
		if i > maxKey {
			return nil, false, keyBad
		}
		key := bytes.TrimRight(s[:i], " ")
		if indexPair(key, ' ', '#') >= 0 || resolvePlain(key) != 's' {
			return nil, false, keyBad
		}
		if emit {
			c.out = appendJSONString(c.out, key)
		}
		after = s[i+1:]
	}
	after = bytes.TrimLeft(after, " ")
	if len(after) > 0 && after[0] == '#' {
		after = nil
	}
	return after, true, keyFound
}

// indexPair returns the index of the first a followed by b in s, or -1
// (bytes.Index for the short scalars of a line, without its set-up).
func indexPair(s []byte, a, b byte) int {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == a && s[i+1] == b {
			return i
		}
	}
	return -1
}

// indicator reports whether a plain scalar cannot start s.
func indicator(s []byte) bool {
	switch s[0] {
	case '[', ']', '{', '}', ',', '#', '&', '*', '!', '|', '>', '%', '@', '`', '"', '\'':
		return true
	case '-', '?', ':':
		return len(s) == 1 || s[1] == ' '
	}
	return false
}

// docMarker reports whether s starts with "---" or "...", which at the
// start of a line mark a document's start or end rather than a key.
func docMarker(s []byte) bool {
	return len(s) >= 3 && (string(s[:3]) == "---" || string(s[:3]) == "...") && (len(s) == 3 || s[3] == ' ' || s[3] == '\t')
}

// scalar converts the value s, the rest of a line.
func (c *yconv) scalar(s []byte) bool {
	switch s[0] {
	case '"', '\'':
		val, n, ok := quoted(s, nil)
		if !ok {
			return false
		}
		if t := bytes.TrimLeft(s[n:], " "); len(t) > 0 && (t[0] != '#' || len(t) == len(s[n:])) {
			return false
		}
		c.out = appendJSONString(c.out, val)
		return true
	}
	if i := indexPair(s, ' ', '#'); i >= 0 {
		s = bytes.TrimRight(s[:i], " ")
	}
	if string(s) == "{}" || string(s) == "[]" {
		c.out = append(c.out, s...)
		return true
	}
	if indicator(s) || indexPair(s, ':', ' ') >= 0 || s[len(s)-1] == ':' {
		return false
	}
	switch resolvePlain(s) {
	case 'n':
		c.out = append(c.out, "null"...)
	case 't':
		c.out = append(c.out, "true"...)
	case 'f':
		c.out = append(c.out, "false"...)
	case 'i':
		c.out = append(c.out, s...)
	case 's':
		c.out = appendJSONString(c.out, s)
	default:
		return false
	}
	return true
}

// quoted reads the single- or double-quoted scalar at the start of s,
// closed on the same line, returning its value (appended to buf) and the
// length it took. Double-quoted escapes other than \" \\ \n \t \r are
// refused.
func quoted(s, buf []byte) (val []byte, n int, ok bool) {
	q := s[0]
	i := 1
	if bytes.IndexByte(s[1:], '\\') < 0 {
		// Fast path: no escapes (in single quotes, '' still is one).
		j := bytes.IndexByte(s[1:], q)
		if j < 0 {
			return nil, 0, false
		}
		if q == '"' || j+2 >= len(s) || s[j+2] != '\'' {
			return s[1 : j+1], j + 2, true
		}
	}
	val = buf[:0]
	for i < len(s) {
		b := s[i]
		switch {
		case b == q && q == '\'' && i+1 < len(s) && s[i+1] == '\'':
			val = append(val, '\'')
			i += 2
		case b == q:
			return val, i + 1, true
		case b == '\\' && q == '"':
			if i+1 >= len(s) {
				return nil, 0, false
			}
			switch s[i+1] {
			case '"', '\\':
				val = append(val, s[i+1])
			case 'n':
				val = append(val, '\n')
			case 't':
				val = append(val, '\t')
			case 'r':
				val = append(val, '\r')
			default:
				return nil, 0, false
			}
			i += 2
		default:
			val = append(val, b)
			i++
		}
	}
	return nil, 0, false
}

// resolvePlain types a plain scalar as YAML 1.1 (go-yaml v2) does: 'n'
// null, 't' true, 'f' false, 'i' a decimal integer, 's' a string, 0 for
// anything else (other booleans, floats, octal and hex integers,
// timestamps, merge keys).
func resolvePlain(s []byte) byte {
	if len(s) == 0 {
		return 'n'
	}
	switch string(s) {
	case "~", "null", "Null", "NULL":
		return 'n'
	case "true", "True", "TRUE":
		return 't'
	case "false", "False", "FALSE":
		return 'f'
	case "y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "n", "N", "no", "No", "NO", "off", "Off", "OFF",
		".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", "<<":
		return 0
	}
	switch b := s[0]; {
	case b == '.':
		if _, err := strconv.ParseFloat(string(s), 64); err == nil {
			return 0
		}
	case b == '+' || b == '-' || b >= '0' && b <= '9':
		if canonicalInt(s) {
			return 'i'
		}
		digits := 0
		for digits < len(s) && s[digits] >= '0' && s[digits] <= '9' {
			digits++
		}
		if digits == 4 && len(s) > 4 && s[4] == '-' {
			return 0 // maybe a timestamp
		}
		if !numberLike(s) || !decimalLike(s) {
			return 's'
		}
		plain := string(s)
		if bytes.IndexByte(s, '_') >= 0 {
			plain = strings.ReplaceAll(plain, "_", "")
		}
		if _, err := strconv.ParseInt(plain, 0, 64); err == nil {
			return 0
		}
		if _, err := strconv.ParseUint(plain, 0, 64); err == nil {
			return 0
		}
		if _, err := strconv.ParseFloat(plain, 64); err == nil {
			return 0
		}
		// go-yaml reads 0b and -0b binary integers itself.
		if bin, ok := strings.CutPrefix(plain, "0b"); ok && isBinary(bin) {
			return 0
		}
		if bin, ok := strings.CutPrefix(plain, "-0b"); ok && isBinary(bin) {
			return 0
		}
	}
	return 's'
}

func isBinary(s string) bool {
	if s == "" {
		return false
	}
	for _, b := range []byte(s) {
		if b != '0' && b != '1' {
			return false
		}
	}
	return true
}

// numberLike reports whether strconv might read s as a number (in any
// base, with underscores, or as inf or nan): it has at most one dot and
// only letters, digits, signs and underscores otherwise. Addresses such
// as 10.0.0.1 or 10.0.0.0/8 are not.
func numberLike(s []byte) bool {
	dots := 0
	for _, b := range s {
		switch {
		case b == '.':
			dots++
		case b >= '0' && b <= '9', b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b == '_', b == '+', b == '-':
		default:
			return false
		}
	}
	return dots <= 1
}

// decimalLike is false for s, which starts with a sign or a digit, when
// strconv reads no number from it (with its underscores removed) for a
// reason seen without parsing: after its sign it starts with a digit,
// without a base prefix (0x, 0o, 0b, in either case, underscores aside: it
// is then no hex float, inf or nan either), and then it has a byte other
// than digits, dots, underscores and exponents, or a sign not right after
// an exponent. Strings such as uids and pod names, those starting with 0
// included, are then resolved without three failed parses, each
// allocating its error.
func decimalLike(s []byte) bool {
	if s[0] == '+' || s[0] == '-' {
		s = s[1:]
	}
	if len(s) == 0 || s[0] < '0' || s[0] > '9' {
		return true
	}
	if s[0] == '0' {
		rest := bytes.TrimLeft(s[1:], "_")
		if len(rest) > 0 {
			switch rest[0] {
			case 'x', 'X', 'o', 'O', 'b', 'B':
				return true
			}
		}
	}
	prev := s[0] // the previous byte other than an underscore
	for _, b := range s[1:] {
		switch {
		case b >= '0' && b <= '9', b == '.', b == 'e', b == 'E':
		case b == '_':
			continue
		case (b == '+' || b == '-') && (prev == 'e' || prev == 'E'):
		default:
			return false
		}
		prev = b
	}
	return true
}

// canonicalInt reports whether s is a decimal integer without sign or
// leading zeros (or with a minus sign), short enough for int64.
func canonicalInt(s []byte) bool {
	if s[0] == '-' {
		s = s[1:]
		if len(s) == 0 || s[0] == '0' {
			return false
		}
	}
	if len(s) == 0 || len(s) > 18 || s[0] == '0' && len(s) > 1 {
		return false
	}
	for _, b := range s {
		if b < '0' || b > '9' {
			return false
		}
	}
	return true
}

// appendJSONString appends s as a JSON string.
func appendJSONString(dst, s []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i, b := range s {
		if b >= 0x20 && b != '"' && b != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch b {
		case '"', '\\':
			dst = append(dst, '\\', b)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\r':
			dst = append(dst, '\\', 'r')
		default:
			const hex = "0123456789abcdef"
			dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
