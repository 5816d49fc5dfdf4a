package load

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/klog"
	"github.com/proxyscan/proxyscan/parsers/paste"
)

// streamLogs reads kube-proxy's logs on disk, those compressed alone and
// those of archives, as they are parsed rather than into memory first
// (tests compare both).
var streamLogs = true

// streamMemberMin is the size from which a log of an archive is read as it
// is parsed, from the archive read again (tests lower it): a smaller one is
// read into memory as the archive is read, as it costs little, rather than
// decompress the archive up to it twice.
var streamMemberMin int64 = 1 << 20

// logStreamed, when set, is called with the name of each log read as it
// was parsed (tests).
var logStreamed func(name string)

// errNotPlain ends the reading of a log as it is parsed: its text holds a
// NUL byte, or paste damage (see logCheck).
var errNotPlain = errors.New("the log is not read as it is parsed")

// readLogStreamed parses the kube-proxy log f as it reads it (see
// klog.ParseKeptReader), into r, so that the log is never in memory
// whole: what it parses to is what parsing its text read whole gives,
// strictly or leniently. It reports false, having set nothing, for a
// file it does not read so: one in memory, one whose head does not read
// as a log strictly (paste damage at its top), and one that fails to
// parse, holds a NUL byte or, read leniently, a line paste may repair
// (paste.MayBeDamaged): the caller reads those whole, and says why as it
// does, having read part of them twice.
func readLogStreamed(r *parsed, f *file, k parsers.Kind) bool {
	if !streamLogs || k != parsers.KindLog || f.det.kind != parsers.KindLog || f.det.unread != "" ||
		f.parsed != nil || f.skipped || f.path == "" && f.zpath == "" && f.member == nil {
		return false
	}
	rc, err := f.openText()
	if err != nil {
		return false
	}
	defer rc.Close()
	c := &logCheck{r: rc, lenient: !f.strict}
	l, err := klog.ParseKeptReader(f.name, c)
	if err != nil {
		return false
	}
	r.size, r.value = c.n, l
	if logStreamed != nil {
		logStreamed(f.name)
	}
	if !f.strict {
		// What readLenient adds to a log paste leaves as it is: the
		// lines cut with "…". (No prompt or command is above it: no
		// journalctl unit.)
		r.notes = truncated(l)
	}
	return true
}

// openText opens the text of the file on disk: the file at f.path, or
// what the file at f.zpath decompresses to, no more than the size it was
// counted when read (see compressedLog), or the member of an archive read
// again (see file.member).
func (f *file) openText() (io.ReadCloser, error) {
	if f.member != nil {
		return f.member()
	}
	if f.zpath != "" {
		r, c, ok := openCompressed(f.zpath, f.zhead)
		if !ok {
			return nil, fmt.Errorf("%s is no longer a file compressed alone", f.zpath)
		}
		return struct {
			io.Reader
			io.Closer
		}{io.LimitReader(r, f.size), c}, nil
	}
	fh, err := os.Open(f.path)
	if err != nil {
		return nil, err
	}
	return fh, nil
}

// logCheck reads a log's text from r, counting its bytes, and fails with
// errNotPlain at a NUL byte or, when lenient, at a line that paste's
// repairs may change (paste.MayBeDamaged): the log is then read whole.
type logCheck struct {
	r       io.Reader
	lenient bool
	n       int64
	// carry is the start of a line the reads so far cut; started says
	// the file's first line was seen.
	carry   []byte
	started bool
}

func (c *logCheck) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	b := p[:n]
	if bytes.IndexByte(b, 0) >= 0 {
		return n, errNotPlain
	}
	if c.lenient && c.damaged(b, err != nil) {
		return n, errNotPlain
	}
	return n, err
}

// damaged reports whether a line of b, the next bytes of the text, with
// the line the bytes before cut, may be paste damage; end says b ends the
// text.
func (c *logCheck) damaged(b []byte, end bool) bool {
	if len(c.carry) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			c.carry = append(c.carry, b...)
			if len(c.carry) > klog.MaxLineLength {
				return true // too long for the parser: read whole, it says so
			}
			if end {
				return c.lines(c.carry)
			}
			return false
		}
		c.carry = append(c.carry, b[:i]...)
		if c.lines(c.carry) {
			return true
		}
		c.carry, b = c.carry[:0], b[i+1:]
	}
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		if c.lines(b[:i]) {
			return true
		}
		b = b[i+1:]
	}
	c.carry = append(c.carry, b...)
	if end && len(c.carry) > 0 {
		return c.lines(c.carry)
	}
	return false
}

// lines reports whether a line of ls, whole lines of the text, may be
// paste damage.
func (c *logCheck) lines(ls []byte) bool {
	first := !c.started
	c.started = true
	if !first && bytes.HasPrefix(ls, []byte("\ufeff")) {
		// paste.MayBeDamaged reads a byte order mark at its first
		// line only as the file's: one further on, read whole.
		return true
	}
	return paste.MayBeDamaged(ls, paste.Options{})
}

// plainLog reports whether an archive member whose head is head, of size
// bytes, reads as a kube-proxy log as it is: strictly, with no paste
// damage at its head, and not in UTF-16 (see readLogStreamed).
func plainLog(head []byte, size int64) bool {
	if _, _, ok := utf16Order(head); ok || paste.Detect(head) != parsers.KindLog {
		return false
	}
	d := detect(head, size, func() (io.Reader, func(), error) { return nil, nil, errNotPlain })
	return d.kind == parsers.KindLog && d.loose == parsers.KindLog && !d.damaged && d.unread == ""
}

// memberText opens the text of the member clean, of n bytes, of the
// archive name, of size bytes, whose first bytes are head, opened again
// by reopen: the archive is read (decompressed) again up to the member,
// whose text is read no further than the n bytes it was counted when the
// archive was first read. Closing it closes the archive.
func memberText(name, clean string, n, size int64, head []byte, reopen func() (io.ReaderAt, func(), error)) (io.ReadCloser, error) {
	ra, done, err := reopen()
	if err != nil {
		return nil, fmt.Errorf("%s: reading archive entry %q again: %v", name, clean, err)
	}
	r, c, err := findMember(ra, size, head, clean)
	if err != nil {
		done()
		return nil, fmt.Errorf("%s: reading archive entry %q again: %v", name, clean, err)
	}
	return &memberReader{r: io.LimitReader(r, n), close: func() {
		if c != nil {
			c.Close()
		}
		done()
	}}, nil
}

// errGone is the error of a member not found when its archive is read
// again.
var errGone = errors.New("the entry is gone")

// findMember returns a reader of the member clean of the archive ra, of
// size bytes, whose first bytes are head, and what closes it (nil when
// nothing needs to).
func findMember(ra io.ReaderAt, size int64, head []byte, clean string) (io.Reader, io.Closer, error) {
	format := archiveFormat(head)
	if format == formatZip {
		zr, err := zip.NewReader(ra, size)
		if err != nil {
			return nil, nil, err
		}
		for _, zf := range zr.File {
			if c, err := entryName(zf.Name); err == nil && c == clean && zf.Mode().IsRegular() {
				rc, err := zf.Open()
				if err != nil {
					return nil, nil, err
				}
				return rc, rc, nil
			}
		}
		return nil, nil, errGone
	}
	var r io.Reader = bufio.NewReaderSize(io.NewSectionReader(ra, 0, size), 64<<10)
	switch {
	case compressedFormat(format):
		zr, err := openStream(format, head, r)
		if err != nil {
			return nil, nil, err
		}
		r = zr
	case format != formatTar:
		return nil, nil, errGone
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, nil, errGone
		}
		if err != nil {
			return nil, nil, err
		}
		if c, err := entryName(h.Name); err == nil && c == clean && h.Typeflag == tar.TypeReg {
			return tr, nil, nil
		}
	}
}

// memberReader reads an archive's member read again, and close closes
// the archive.
type memberReader struct {
	r     io.Reader
	close func()
}

func (m *memberReader) Read(p []byte) (int, error) { return m.r.Read(p) }

func (m *memberReader) Close() error {
	m.close()
	return nil
}
