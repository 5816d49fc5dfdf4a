// Package offheap holds large byte buffers outside the Go heap, in
// anonymous private memory mappings, so that they count once in a
// process's memory instead of also growing the collector's heap goal.
//
// A buffer is never unmapped: strings and slices may point into it for as
// long as the process runs. It is for processes that end with what they
// read (a single-node analyze, trace, expect, diff), not for long-running
// ones that read input after input.
package offheap

import (
	"fmt"
	"io"
	"sync/atomic"
)

// mapped is the bytes of the buffers mapped and kept.
var mapped atomic.Int64

// Mapped returns the bytes of the buffers mapped so far, outside the Go
// heap, that are kept (all of them but those ReadFull gave back).
func Mapped() int64 { return mapped.Load() }

// MinSize is the smallest buffer worth a mapping of its own, for callers
// to tell: a mapping costs a system call and a page at least, and small
// inputs weigh little in the heap goal.
const MinSize = 1 << 20

// Make returns a zeroed buffer of n bytes: outside the Go heap when the
// system maps anonymous memory, else on the heap. It is never freed when
// mapped.
func Make(n int) []byte {
	b, _ := alloc(n)
	return b
}

// alloc is Make, saying whether the buffer is mapped.
func alloc(n int) ([]byte, bool) {
	if n > 0 {
		if b, err := mmap(n); err == nil {
			mapped.Add(int64(n))
			return b, true
		}
	}
	return make([]byte, n), false
}

// ReadFull reads n bytes from r into a buffer from Make, and one more to
// tell whether r holds more. It returns the buffer when r holds exactly n
// bytes, else nil; read is how many bytes it read (up to n+1) and err the
// error reading them other than io.EOF.
func ReadFull(r io.Reader, n int64) (b []byte, read int64, err error) {
	if n < 0 || int64(int(n)) != n {
		return nil, 0, fmt.Errorf("a buffer of %d bytes", n)
	}
	b, isMapped := alloc(int(n))
	var one [1]byte
	for err == nil && read <= n {
		// Past n, one byte more tells whether r holds more.
		into := b[read:]
		if read == n {
			into = one[:]
		}
		var m int
		m, err = r.Read(into)
		read += int64(m)
	}
	if err == io.EOF {
		err = nil
	}
	if err != nil || read != n {
		if isMapped && munmap(b) == nil { // nothing points into it yet
			mapped.Add(-n)
		}
		return nil, read, err
	}
	return b, read, nil
}
