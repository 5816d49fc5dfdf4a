package nft

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/proxyscan/proxyscan/parsers/internal/jsonstr"
)

// A small JSON reader: values are parsed into an arena of nodes that the
// caller resets between the items of the "nftables" array, so that a large
// listing is read without building one tree for all of it.

const (
	jNull   = 'n'
	jTrue   = 't'
	jFalse  = 'f'
	jNumber = 'd'
	jString = 's'
	jArray  = 'a'
	jObject = 'o'
)

// maxJSONDepth bounds nesting; nft's output nests a dozen levels deep.
const maxJSONDepth = 256

type jnode struct {
	kind  byte
	key   string // member name, for members of an object
	str   string // string value, or number literal
	first int32  // children are arena[first : first+n]
	n     int32
	off   int32 // byte offsets of the value in the input
	end   int32
}

type jreader struct {
	src   string
	i     int
	arena []jnode
	stack []jnode
	depth int
}

type jsyntaxError struct {
	off int
	msg string
}

func (e *jsyntaxError) Error() string { return e.msg }

func (r *jreader) fail(format string, args ...any) error {
	return &jsyntaxError{off: r.i, msg: fmt.Sprintf(format, args...)}
}

func (r *jreader) ws() {
	for r.i < len(r.src) {
		switch r.src[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// peekByte returns the next non-blank byte, or 0 at the end.
func (r *jreader) peekByte() byte {
	r.ws()
	if r.i < len(r.src) {
		return r.src[r.i]
	}
	return 0
}

func (r *jreader) expect(c byte) error {
	if r.peekByte() != c {
		if r.i >= len(r.src) {
			return r.fail("unexpected end of JSON input, expected %q", string(c))
		}
		return r.fail("expected %q, found %q", string(c), string(r.src[r.i]))
	}
	r.i++
	return nil
}

// value parses one value into a node (its children go to the arena).
func (r *jreader) value() (jnode, error) {
	c := r.peekByte()
	start := r.i
	n := jnode{off: int32(start)}
	switch {
	case c == 0:
		return n, r.fail("unexpected end of JSON input")
	case c == '{' || c == '[':
		r.depth++
		if r.depth > maxJSONDepth {
			return n, r.fail("JSON nested deeper than %d levels", maxJSONDepth)
		}
		r.i++
		mark := len(r.stack)
		closer := byte(']')
		n.kind = jArray
		if c == '{' {
			closer, n.kind = '}', jObject
		}
		if r.peekByte() == closer {
			r.i++
		} else {
			for {
				var key string
				if n.kind == jObject {
					if r.peekByte() != '"' {
						return n, r.fail("expected a member name")
					}
					k, err := r.string()
					if err != nil {
						return n, err
					}
					if err := r.expect(':'); err != nil {
						return n, err
					}
					key = k
				}
				v, err := r.value()
				if err != nil {
					return n, err
				}
				v.key = key
				r.stack = append(r.stack, v)
				sep := r.peekByte()
				if sep == ',' {
					r.i++
					continue
				}
				if sep == closer {
					r.i++
					break
				}
				if sep == 0 {
					return n, r.fail("unexpected end of JSON input")
				}
				return n, r.fail("expected ',' or %q, found %q", string(closer), string(sep))
			}
		}
		n.first = int32(len(r.arena))
		n.n = int32(len(r.stack) - mark)
		r.arena = append(r.arena, r.stack[mark:]...)
		r.stack = r.stack[:mark]
		r.depth--
	case c == '"':
		s, err := r.string()
		if err != nil {
			return n, err
		}
		n.kind, n.str = jString, s
	case c == '-' || c >= '0' && c <= '9':
		if err := r.number(); err != nil {
			return n, err
		}
		n.kind, n.str = jNumber, r.src[start:r.i]
	case strings.HasPrefix(r.src[r.i:], "null"):
		n.kind = jNull
		r.i += 4
	case strings.HasPrefix(r.src[r.i:], "true"):
		n.kind = jTrue
		r.i += 4
	case strings.HasPrefix(r.src[r.i:], "false"):
		n.kind = jFalse
		r.i += 5
	default:
		return n, r.fail("invalid character %q in JSON", string(c))
	}
	n.end = int32(r.i)
	return n, nil
}

func (r *jreader) number() error {
	s := r.src
	i := r.i
	if s[i] == '-' {
		i++
	}
	digits := func() int {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - j
	}
	if i < len(s) && s[i] == '0' {
		i++
	} else if digits() == 0 {
		r.i = i
		return r.fail("malformed JSON number")
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			r.i = i
			return r.fail("malformed JSON number")
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			r.i = i
			return r.fail("malformed JSON number")
		}
	}
	r.i = i
	return nil
}

// string reads a JSON string at r.i (which is at the opening quote).
func (r *jreader) string() (string, error) {
	s := r.src
	i := r.i + 1
	start := i
	for i < len(s) {
		c := s[i]
		if c == '"' {
			if !utf8.ValidString(s[start:i]) {
				r.i = start
				return "", r.fail("invalid UTF-8 in JSON string")
			}
			r.i = i + 1
			return s[start:i], nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			r.i = i
			return "", r.fail("control character in JSON string")
		}
		i++
	}
	b, end, p := jsonstr.Unescape([]byte(s[start:i]), s, i)
	if p != jsonstr.OK {
		r.i = end
		return "", r.fail("%s", p)
	}
	if !utf8.Valid(b) {
		r.i = start
		return "", r.fail("invalid UTF-8 in JSON string")
	}
	r.i = end
	return string(b), nil
}

// ---- node access ----

func (r *jreader) kids(n *jnode) []jnode { return r.arena[n.first : n.first+n.n] }

// member returns the member named key of object n, or nil.
func (r *jreader) member(n *jnode, key string) *jnode {
	if n.kind != jObject {
		return nil
	}
	k := r.kids(n)
	for i := range k {
		if k[i].key == key {
			return &k[i]
		}
	}
	return nil
}

// single returns the only member of an object such as {"match": {...}}.
func (r *jreader) single(n *jnode) (*jnode, bool) {
	if n.kind != jObject || n.n != 1 {
		return nil, false
	}
	return &r.arena[n.first], true
}

func (r *jreader) raw(n *jnode) string { return r.src[n.off:n.end] }

func kindName(k byte) string {
	switch k {
	case jNull:
		return "null"
	case jTrue, jFalse:
		return "a boolean"
	case jNumber:
		return "a number"
	case jString:
		return "a string"
	case jArray:
		return "an array"
	case jObject:
		return "an object"
	}
	return "nothing"
}

var errNotUint = errors.New("not an unsigned integer")

func nodeUint(n *jnode, bits int) (uint64, error) {
	if n.kind != jNumber {
		return 0, errNotUint
	}
	v, err := strconv.ParseUint(n.str, 10, bits)
	if err != nil {
		return 0, errNotUint
	}
	return v, nil
}
