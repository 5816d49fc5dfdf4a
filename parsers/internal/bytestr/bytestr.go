// Package bytestr views a byte slice as a string without copying it, for
// the parsers whose results point into the text they read (which a large
// input's loader may hold outside the Go heap).
package bytestr

import "unsafe"

// Of returns b as a string without copying it: the string shares b's
// memory, so b must not be modified while the string, or any part of it,
// is in use.
func Of(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
