package kube

import (
	"strings"
	"testing"
)

// skipStringByte is skipString one byte at a time, as the JSON grammar
// reads a string: a backslash escapes the byte after it.
func skipStringByte(d []byte, i int) int {
	for j := i + 1; j < len(d); j++ {
		switch d[j] {
		case '"':
			return j + 1
		case '\\':
			j++
		}
	}
	return -1
}

// TestSkipString checks that skipString, which looks at eight bytes at a
// time, ends every string where a byte-by-byte reading does: quotes and
// runs of backslashes on either side of each eight-byte boundary, strings
// cut short.
func TestSkipString(t *testing.T) {
	alphabet := []string{"a", `"`, `\`, "é"}
	var texts []string
	var gen func(prefix string, n int)
	gen = func(prefix string, n int) {
		texts = append(texts, prefix)
		if n == 0 {
			return
		}
		for _, a := range alphabet {
			gen(prefix+a, n-1)
		}
	}
	gen("", 5)
	for _, text := range texts {
		for pad := 0; pad < 10; pad++ {
			d := []byte(`"` + strings.Repeat("x", pad) + text)
			if got, want := skipString(d, 0), skipStringByte(d, 0); got != want {
				t.Fatalf("skipString(%q) = %d, want %d", d, got, want)
			}
			d = append([]byte("  "), d...)
			if got, want := skipString(d, 2), skipStringByte(d, 2); got != want {
				t.Fatalf("skipString(%q, 2) = %d, want %d", d, got, want)
			}
		}
	}
}

// plainEndByte is plainEnd one byte at a time.
func plainEndByte(d []byte, j int) int {
	for ; j < len(d); j++ {
		if c := d[j]; c == '"' || c == '\\' || c < 0x20 || c >= 0x80 {
			return j
		}
	}
	return j
}

// TestPlainEnd checks that plainEnd, which looks at eight bytes at a
// time, stops where a byte-by-byte reading does: at quotes, backslashes,
// control characters and bytes of UTF-8 sequences, around every
// eight-byte boundary.
func TestPlainEnd(t *testing.T) {
	for _, c := range []byte{'"', '\\', 0, 0x1f, 0x20, 0x21, 0x7f, 0x80, 0xc3, 0xff, 'a', '!', '#', '[', ']'} {
		for pos := 0; pos < 20; pos++ {
			for start := 0; start < 3; start++ {
				d := []byte(strings.Repeat("ab", 12))
				d[pos] = c
				if got, want := plainEnd(d, start), plainEndByte(d, start); got != want {
					t.Fatalf("plainEnd(%q, %d) = %d, want %d", d, start, got, want)
				}
				// Two such bytes: the first is found.
				d[min(pos+1+start, len(d)-1)] = '"'
				if got, want := plainEnd(d, start), plainEndByte(d, start); got != want {
					t.Fatalf("plainEnd(%q, %d) = %d, want %d", d, start, got, want)
				}
			}
		}
	}
}
