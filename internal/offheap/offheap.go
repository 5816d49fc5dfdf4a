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
)

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
	b, mapped := alloc(int(n))
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
		if mapped {
			_ = munmap(b) // nothing points into it yet
		}
		return nil, read, err
	}
	return b, read, nil
}
