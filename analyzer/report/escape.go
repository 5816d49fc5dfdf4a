package report

import (
	"strings"
	"unicode/utf8"
)

// Escape returns s with the characters a terminal acts on written out, so
// that text from the inputs (rule comments, file and archive member names,
// object names) cannot drive the terminal it is printed to: move the
// cursor, rewrite a line (\r), ring the bell, set the window title or the
// colours (ESC sequences). C0 controls but \n and \t, DEL and bytes that
// are not UTF-8 become \xHH; C1 controls (U+0080 to U+009F, which some
// terminals read as ESC sequences) become \u00HH. \n and \t, which the
// text formats print as line breaks and content, are kept. Every text
// renderer passes what it prints of the inputs through Escape before it
// styles it; s is returned as it is when there is nothing to escape.
func Escape(s string) string {
	i := 0
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if isControl(c) {
				break
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || r >= 0x80 && r <= 0x9f {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if isControl(c) {
				writeHex(&b, `\x`, c)
			} else {
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			writeHex(&b, `\x`, c)
		case r >= 0x80 && r <= 0x9f:
			writeHex(&b, `\u00`, byte(r))
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// isControl reports whether an ASCII byte is a control character Escape
// writes out: C0 but \n and \t, and DEL.
func isControl(c byte) bool {
	return c < 0x20 && c != '\n' && c != '\t' || c == 0x7f
}

func writeHex(b *strings.Builder, prefix string, c byte) {
	const digits = "0123456789abcdef"
	b.WriteString(prefix)
	b.WriteByte(digits[c>>4])
	b.WriteByte(digits[c&0xf])
}
