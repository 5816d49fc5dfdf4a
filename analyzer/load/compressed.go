package load

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/ulikunitz/xz"
)

// A compressed file is one file compressed with gzip or xz
// (iptables-save.txt.gz, as `iptables-save | gzip` writes it, or an export
// attached as cluster.yaml.xz) rather than a compressed tar archive: it is
// decompressed and read as the file it holds, under its own name, its
// lines numbered as in the decompressed text.

// tarBlock is the size of a tar header.
const tarBlock = 512

// decompressor returns a reader of the text a gzip or xz stream r holds,
// whose first bytes are head; nil when the format is another or the
// stream's header cannot be read (the archive reader then says why, by
// name).
func decompressor(format string, head []byte, r io.Reader) io.Reader {
	switch format {
	case formatGzip:
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil
		}
		zr.Multistream(false)
		return zr
	case formatXZ:
		if dict, ok := xzDictSize(head); !ok || dict > maxXZDict {
			return nil
		}
		xr, err := xz.ReaderConfig{SingleStream: true}.NewReader(r)
		if err != nil {
			return nil
		}
		return xr
	}
	return nil
}

// isTarHeader reports whether b, the first bytes of a decompressed
// stream, starts a tar archive: a header block (the ustar magic, or the
// checksum of an old-style header) or the zero block that ends an empty
// archive.
func isTarHeader(b []byte) bool {
	if len(b) < tarBlock {
		return false
	}
	b = b[:tarBlock]
	if string(b[257:262]) == "ustar" {
		return true
	}
	zero := true
	for _, c := range b {
		zero = zero && c == 0
	}
	if zero {
		return true
	}
	want, err := strconv.ParseUint(strings.Trim(string(b[148:156]), " \x00"), 8, 32)
	if err != nil {
		return false
	}
	var sum uint64
	for i, c := range b {
		if i >= 148 && i < 156 {
			c = ' '
		}
		sum += uint64(c)
	}
	return sum == want
}

// openCompressed opens the file at p, whose head is head, when it is a
// single compressed file: r reads its decompressed text, and closing c
// closes the file. ok is false for an archive, a format other than gzip
// and xz, and a stream that breaks before its first tar block could be
// read: the archive reader reads or refuses those.
func openCompressed(p string, head []byte) (r *bufio.Reader, c io.Closer, ok bool) {
	format := archiveFormat(head)
	if format != formatGzip && format != formatXZ {
		return nil, nil, false
	}
	fh, err := os.Open(p)
	if err != nil {
		return nil, nil, false
	}
	zr := decompressor(format, head, bufio.NewReaderSize(fh, 64<<10))
	if zr == nil {
		fh.Close()
		return nil, nil, false
	}
	br := bufio.NewReaderSize(zr, 64<<10)
	block, err := br.Peek(tarBlock)
	if err != nil && err != io.EOF || isTarHeader(block) {
		fh.Close()
		return nil, nil, false
	}
	return br, fh, true
}

// compressedFile reads the file at p (shown as name, of group), whose head
// is head, when it is a single compressed file (see openCompressed),
// within the run's limits; ok is false when it is not one.
func (rd *reader) compressedFile(name, group, p string, head []byte) (f file, ok bool, err error) {
	r, c, ok := openCompressed(p, head)
	if !ok {
		return file{}, false, nil
	}
	defer c.Close()
	format := archiveFormat(head)
	data, err := io.ReadAll(io.LimitReader(r, rd.lim.MaxFile+1))
	if err != nil {
		return file{}, true, inputErrorf("reading %s: corrupt or truncated %s file after %d bytes of text: %v", p, format, len(data), err)
	}
	if int64(len(data)) > rd.lim.MaxFile {
		return file{}, true, inputErrorf("reading %s: decompresses to more than the %d-byte limit of a file", p, rd.lim.MaxFile)
	}
	if err := rd.take(int64(len(data)), p); err != nil {
		return file{}, true, err
	}
	f = file{name: name, group: group, data: data, compressed: format, disk: p}
	if order, bom, ok := utf16Order(data); ok {
		f.data, f.decoded = decodeUTF16(data, order, bom)
	}
	return f, true, nil
}

// isCompressedFile reports whether the file at p is a single compressed
// file (see openCompressed).
func isCompressedFile(p string, head []byte) bool {
	_, c, ok := openCompressed(p, head)
	if ok {
		c.Close()
	}
	return ok
}

// compressedNote is the note of an input read from a compressed file.
func compressedNote(format string) string {
	return fmt.Sprintf("decompressed from %s", format)
}
