// Package jsonstr decodes the escapes of JSON strings as encoding/json
// does, for the hand-written JSON readers of the parsers.
package jsonstr

import (
	"unicode/utf16"
	"unicode/utf8"
)

// A Problem says why a JSON string could not be read.
type Problem uint8

// Problems.
const (
	OK           Problem = iota
	Control              // a control character (below U+0020) inside the string
	BadEscape            // a backslash followed by a character JSON does not define
	BadUnicode           // a \u escape without four hexadecimal digits
	Unterminated         // the input ends inside the string
)

// String says what the problem is, as an error message would.
func (p Problem) String() string {
	switch p {
	case Control:
		return "control character in JSON string"
	case BadEscape:
		return "malformed escape in JSON string"
	case BadUnicode:
		return "malformed \\u escape in JSON string"
	case Unterminated:
		return "unexpected end of JSON input in a string"
	}
	return ""
}

// Unescape reads the rest of a JSON string from s[i] (inside the string,
// after its opening quote), appending its value to dst. It returns the
// value and the offset after the closing quote; or, when the string is
// malformed, the problem and the offset it is at (after the two
// characters of a bad escape, at the digits of a bad \u escape, at the end
// of s for an unterminated string).
//
// As in encoding/json, a \u escape of a UTF-16 surrogate pair gives the
// character it encodes and a lone surrogate gives U+FFFD. The value is not
// checked to be valid UTF-8.
func Unescape[S ~string | ~[]byte](dst []byte, s S, i int) (val []byte, end int, p Problem) {
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			return dst, i + 1, OK
		case c < 0x20:
			return nil, i, Control
		case c != '\\':
			dst = append(dst, c)
			i++
			continue
		}
		if i+1 >= len(s) {
			break
		}
		e := s[i+1]
		i += 2
		switch e {
		case '"', '\\', '/':
			dst = append(dst, e)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(s, i)
			if !ok {
				return nil, i, BadUnicode
			}
			i += 4
			if utf16.IsSurrogate(r) && i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
				if lo, ok := hex4(s, i+2); ok {
					if d := utf16.DecodeRune(r, lo); d != utf8.RuneError {
						r = d
						i += 6
					}
				}
			}
			dst = utf8.AppendRune(dst, r) // U+FFFD for a lone surrogate
		default:
			return nil, i, BadEscape
		}
	}
	return nil, len(s), Unterminated
}

// hex4 reads the four hexadecimal digits at s[i:].
func hex4[S ~string | ~[]byte](s S, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for k := i; k < i+4; k++ {
		c := s[k]
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
