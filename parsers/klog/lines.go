package klog

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"unsafe"
)

// A lineSource yields the physical lines of a log, without their "\n".
type lineSource interface {
	// next returns the next line and true, or false at the end of the
	// log or with err. A line longer than MaxLineLength is not returned:
	// over is then its length.
	next() (line string, over int, ok bool, err error)
	// onOverwrite sets what is called before the text of the lines
	// returned so far is overwritten by that of the lines that follow.
	onOverwrite(func())
}

// textLines are the lines of a text in memory, which is never
// overwritten.
type textLines struct{ text string }

func (t *textLines) next() (string, int, bool, error) {
	if len(t.text) == 0 {
		return "", 0, false, nil
	}
	var b string
	if i := strings.IndexByte(t.text, '\n'); i >= 0 {
		b, t.text = t.text[:i], t.text[i+1:]
	} else {
		b, t.text = t.text, ""
	}
	if len(b) > MaxLineLength {
		return "", len(b), true, nil
	}
	return b, 0, true, nil
}

func (t *textLines) onOverwrite(func()) {}

// readerBuffer is the size of the buffer readerLines reads into at first;
// it grows to hold a line of MaxLineLength.
const readerBuffer = 64 << 10

// bom is the UTF-8 byte order mark a log may start with.
const bom = "\xef\xbb\xbf"

// readerLines are the lines of a reader, read into one buffer: a line
// returned is valid until the buffer is read into again, which calls
// overwrite first.
type readerLines struct {
	r         io.Reader
	buf       []byte
	pos, end  int // the bytes of buf not yet returned
	eof       bool
	err       error
	started   bool // the byte order mark was looked for
	overwrite func()
}

func (lr *readerLines) onOverwrite(f func()) { lr.overwrite = f }

func (lr *readerLines) next() (string, int, bool, error) {
	for {
		if !lr.started && (lr.end-lr.pos >= len(bom) || lr.eof) {
			lr.started = true
			if bytes.HasPrefix(lr.buf[lr.pos:lr.end], []byte(bom)) {
				lr.pos += len(bom)
			}
		}
		if lr.started {
			rest := lr.buf[lr.pos:lr.end]
			if i := bytes.IndexByte(rest, '\n'); i >= 0 {
				lr.pos += i + 1
				return lr.line(rest[:i])
			}
			if len(rest) > MaxLineLength {
				return lr.skipLine()
			}
			if lr.eof {
				if lr.err != nil {
					return "", 0, false, lr.err
				}
				if len(rest) == 0 {
					return "", 0, false, nil
				}
				lr.pos = lr.end
				return lr.line(rest)
			}
		}
		lr.fill()
	}
}

// line returns b, a line of the buffer.
func (lr *readerLines) line(b []byte) (string, int, bool, error) {
	if len(b) > MaxLineLength {
		return "", len(b), true, nil
	}
	return unsafe.String(unsafe.SliceData(b), len(b)), 0, true, nil
}

// skipLine reads past the rest of a line longer than MaxLineLength,
// returning its length.
func (lr *readerLines) skipLine() (string, int, bool, error) {
	n := lr.end - lr.pos
	if lr.overwrite != nil {
		lr.overwrite()
	}
	lr.pos, lr.end = 0, 0
	for !lr.eof {
		lr.fill()
		if i := bytes.IndexByte(lr.buf[lr.pos:lr.end], '\n'); i >= 0 {
			n += i
			lr.pos += i + 1
			return "", n, true, nil
		}
		n += lr.end - lr.pos
		lr.pos = lr.end
	}
	if lr.err != nil {
		return "", 0, false, lr.err
	}
	return "", n, true, nil
}

// fill reads more of the reader into the buffer, after the bytes not yet
// returned. A full buffer has them moved to its start (calling overwrite
// first), or, when they fill it, is replaced by one twice its size.
func (lr *readerLines) fill() {
	if lr.end == len(lr.buf) {
		if lr.pos > 0 {
			if lr.overwrite != nil {
				lr.overwrite()
			}
			n := copy(lr.buf, lr.buf[lr.pos:lr.end])
			lr.pos, lr.end = 0, n
		} else {
			// A line longer than the buffer: the lines returned
			// before stay in the old one, which is not overwritten.
			buf := make([]byte, 2*len(lr.buf))
			copy(buf, lr.buf[:lr.end])
			lr.buf = buf
		}
	}
	n, err := lr.r.Read(lr.buf[lr.end:])
	lr.end += n
	switch {
	case errors.Is(err, io.EOF):
		lr.eof = true
	case err != nil:
		lr.eof, lr.err = true, err
	}
}
