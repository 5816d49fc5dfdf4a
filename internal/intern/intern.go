// Package intern keeps one copy of strings met many times, such as the
// names and paths that every node of a fleet repeats.
package intern

import (
	"strings"
	"unsafe"
)

// Strings holds one copy of each string stored. The zero value is not
// usable: make it with [New].
type Strings map[string]string

// New returns an empty store.
func New() Strings { return Strings{} }

// Str returns the stored string equal to s, storing a copy of s (which
// may share the memory of a larger string) when there is none.
func (m Strings) Str(s string) string {
	if s == "" {
		return ""
	}
	if x, ok := m[s]; ok {
		return x
	}
	s = strings.Clone(s)
	m[s] = s
	return s
}

// arenaBlock is the size of an [Arena]'s blocks.
const arenaBlock = 8 << 10

// An Arena copies strings into large blocks of bytes: a copy costs its
// bytes only, not an allocation of its own, and the collector has no
// pointer to follow in a block. A block stays alive while any string of
// it is: keep in one arena strings that live as long as each other. The
// zero value is ready to use.
type Arena struct {
	buf []byte
}

// Str returns a copy of s in the arena.
func (a *Arena) Str(s string) string {
	return a.Bytes(unsafe.Slice(unsafe.StringData(s), len(s)))
}

// Bytes returns a copy of b in the arena, as a string: a caller builds a
// string in a buffer of its own and keeps the copy.
func (a *Arena) Bytes(s []byte) string {
	if len(s) == 0 {
		return ""
	}
	if len(s) > arenaBlock/8 {
		return string(s)
	}
	if len(a.buf)+len(s) > cap(a.buf) {
		a.buf = make([]byte, 0, arenaBlock)
	}
	n := len(a.buf)
	a.buf = append(a.buf, s...)
	// The bytes up to len(a.buf) are never written again.
	return unsafe.String(&a.buf[n], len(s))
}
