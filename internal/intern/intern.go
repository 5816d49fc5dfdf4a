// Package intern keeps one copy of strings met many times, such as the
// names and paths that every node of a fleet repeats.
package intern

import "strings"

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
