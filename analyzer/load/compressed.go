package load

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/ulikunitz/xz"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/paste"
)

// A compressed file is one file compressed with gzip, xz, bzip2 or zstd
// (iptables-save.txt.gz, as `iptables-save | gzip` writes it, or an export
// attached as cluster.yaml.xz or cluster.yaml.bz2) rather than a
// compressed tar archive: it is decompressed and read as the file it
// holds, under its own name, its lines numbered as in the decompressed
// text.

// tarBlock is the size of a tar header.
const tarBlock = 512

// decompressor returns a reader of the text a compressed stream r holds
// (see openStream), whose first bytes are head; nil when the format is
// another or the stream's header cannot be read (the archive reader then
// says why, by name). Only the first stream of gzip and xz is read: what
// follows it is a tar archive's concern (see multiStream for a file
// compressed alone).
func decompressor(format string, head []byte, r io.Reader) io.Reader {
	if !compressedFormat(format) {
		return nil
	}
	zr, err := openStream(format, head, r)
	if err != nil {
		return nil
	}
	return zr
}

// multiStream returns a reader of the whole text of the compressed file
// fh, of size bytes, whose head is head: every stream it holds, one after
// the other, as zcat, xzcat, bzcat and zstdcat read them (gzip -c a >f;
// gzip -c b >>f holds two streams, as does a log rotated by appending).
// Data after the last stream that is not one (trailing garbage) is an
// error when it is reached; so is an xz stream whose LZMA2 dictionary is
// over maxXZDict, or a zstd frame whose window is over maxZstdWindow,
// before the memory is allocated. nil when the first stream's header
// cannot be read (see decompressor).
func multiStream(format string, head []byte, fh *os.File, size int64) io.Reader {
	switch format {
	case formatBzip2, formatZstd:
		// Their decoders read the streams one after another.
		return decompressor(format, head, bufio.NewReaderSize(io.NewSectionReader(fh, 0, size), 64<<10))
	case formatGzip:
		cr := &countingReader{r: fh}
		br := bufio.NewReaderSize(cr, 64<<10)
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil
		}
		zr.Multistream(false)
		return &gzipStreams{zr: zr, br: br, cr: cr}
	case formatXZ:
		first := decompressor(format, head, io.NewSectionReader(fh, 0, size))
		if first == nil {
			return nil
		}
		streams, err := xzStreams(fh, size)
		if err != nil {
			// The first stream's text, then why the rest is not read
			// (its decoder fails at what follows it, if not before).
			return io.MultiReader(&stickyErr{r: first, as: err}, &failReader{err})
		}
		rs := make([]io.Reader, 0, len(streams))
		for i, st := range streams {
			if i == 0 {
				rs = append(rs, decompressor(format, head, io.NewSectionReader(fh, st[0], st[1]-st[0])))
				continue
			}
			rs = append(rs, &xzStream{ra: fh, at: st})
		}
		return io.MultiReader(rs...)
	}
	return nil
}

// gzipStreams reads the gzip streams of a file one after the other, as
// zcat does, saying of data after the last one that is not a gzip stream
// that it is trailing garbage, where it starts. (The gzip reader reads its
// input byte by byte through br: it stops where its stream ends.)
type gzipStreams struct {
	zr *gzip.Reader
	br *bufio.Reader
	cr *countingReader
	// streams counts the streams read to their end.
	streams int
	// err is the error of what follows the last stream, kept.
	err error
}

func (g *gzipStreams) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	for {
		n, err := g.zr.Read(p)
		if err != io.EOF {
			return n, err
		}
		g.streams++
		if _, perr := g.br.Peek(1); perr == io.EOF {
			return n, io.EOF
		}
		at := g.cr.n - int64(g.br.Buffered())
		if rerr := g.zr.Reset(g.br); rerr != nil {
			g.err = fmt.Errorf("data at offset %d, after gzip stream %d, is not a gzip stream (trailing garbage: %v)", at, g.streams, rerr)
			return n, g.err
		}
		g.zr.Multistream(false)
		if n > 0 {
			return n, nil
		}
	}
}

// xzStream reads the xz stream of ra at [at[0], at[1]), refusing it when
// its dictionary is over maxXZDict; it is opened when first read.
type xzStream struct {
	ra io.ReaderAt
	at [2]int64
	r  io.Reader
}

func (x *xzStream) Read(p []byte) (int, error) {
	if x.r == nil {
		head := make([]byte, 64)
		n, _ := x.ra.ReadAt(head, x.at[0])
		dict, ok := xzDictSize(head[:n])
		if !ok {
			return 0, fmt.Errorf("the xz stream at offset %d has no LZMA2 block proxyscan reads", x.at[0])
		}
		if dict > maxXZDict {
			return 0, fmt.Errorf("the xz stream at offset %d has an LZMA2 dictionary of %d bytes, over the %d-byte limit", x.at[0], dict, maxXZDict)
		}
		xr, err := xz.ReaderConfig{SingleStream: true}.NewReader(io.NewSectionReader(x.ra, x.at[0], x.at[1]-x.at[0]))
		if err != nil {
			return 0, err
		}
		x.r = xr
	}
	return x.r.Read(p)
}

// stickyErr reads r until it fails other than at its end; from then on
// it fails with as.
type stickyErr struct {
	r      io.Reader
	as     error
	failed bool
}

func (s *stickyErr) Read(p []byte) (int, error) {
	if s.failed {
		return 0, s.as
	}
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		s.failed = true
		err = s.as
	}
	return n, err
}

// failReader fails with err.
type failReader struct{ err error }

func (f *failReader) Read([]byte) (int, error) { return 0, f.err }

// maxXZIndex is the largest xz index read to find where a stream starts
// (a real one holds some 10 bytes a block).
const maxXZIndex = 16 << 20

// xzStreams returns where each xz stream of the file ra, of size bytes,
// starts and ends, in order, read from the end as xz --list reads them:
// each stream's footer gives the size of its index, whose records give
// the size of its blocks. Stream padding (zero bytes, a multiple of 4)
// between and after the streams is passed over. The error says the file
// does not end as an xz stream does: data after the last stream that is
// not one, or a stream cut short.
func xzStreams(ra io.ReaderAt, size int64) ([][2]int64, error) {
	const hdr = 12
	errEnd := errors.New("the file does not end as an xz stream does: data after the last xz stream that is not one (trailing garbage), or a stream cut short")
	var out [][2]int64
	end := size
	for end > 0 {
		var w [4]byte
		if end%4 == 0 && end >= 4 {
			if _, err := ra.ReadAt(w[:], end-4); err != nil {
				return nil, err
			}
			if w == [4]byte{} {
				end -= 4 // stream padding
				continue
			}
		}
		if end%4 != 0 || end < 2*hdr {
			return nil, errEnd
		}
		var foot [hdr]byte
		if _, err := ra.ReadAt(foot[:], end-hdr); err != nil {
			return nil, err
		}
		if string(foot[10:]) != "YZ" {
			return nil, errEnd
		}
		isize := (int64(binary.LittleEndian.Uint32(foot[4:8])) + 1) * 4
		istart := end - hdr - isize
		if isize > maxXZIndex || istart < hdr {
			return nil, errEnd
		}
		index := make([]byte, isize)
		if _, err := ra.ReadAt(index, istart); err != nil {
			return nil, err
		}
		blocks, ok := xzIndexBlocks(index)
		start := istart - blocks - hdr
		if !ok || start < 0 {
			return nil, errEnd
		}
		var head [6]byte
		if _, err := ra.ReadAt(head[:], start); err != nil {
			return nil, err
		}
		if string(head[:]) != "\xfd7zXZ\x00" {
			return nil, errEnd
		}
		out = append(out, [2]int64{start, end})
		end = start
	}
	if len(out) == 0 {
		return nil, errEnd
	}
	slices.Reverse(out)
	return out, nil
}

// xzIndexBlocks returns the bytes the blocks of an xz stream take, from
// its index: the sum of their unpadded sizes, each padded to 4 bytes.
func xzIndexBlocks(index []byte) (int64, bool) {
	if len(index) < 8 || index[0] != 0 {
		return 0, false
	}
	i := 1
	varint := func() (uint64, bool) {
		v, n := binary.Uvarint(index[i:])
		if n <= 0 {
			return 0, false
		}
		i += n
		return v, true
	}
	n, ok := varint()
	if !ok || n > uint64(len(index)) {
		return 0, false
	}
	var total int64
	for range n {
		unpadded, ok := varint()
		if !ok || unpadded > 1<<62 {
			return 0, false
		}
		if _, ok := varint(); !ok {
			return 0, false
		}
		total += (int64(unpadded) + 3) &^ 3
		if total < 0 {
			return 0, false
		}
	}
	return total, i <= len(index)-4
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
// closes the file. ok is false for an archive, a format that is no
// compression (tar, zip), and a stream that breaks before a byte of it could be read: the
// archive reader reads or refuses those. (A text shorter than a tar block
// whose stream is followed by a broken one is a compressed file: reading
// it says what is wrong, by name.)
func openCompressed(p string, head []byte) (r *bufio.Reader, c io.Closer, ok bool) {
	format := archiveFormat(head)
	if !compressedFormat(format) {
		return nil, nil, false
	}
	fh, err := os.Open(p)
	if err != nil {
		return nil, nil, false
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, nil, false
	}
	zr := multiStream(format, head, fh, st.Size())
	if zr == nil {
		fh.Close()
		return nil, nil, false
	}
	br := bufio.NewReaderSize(zr, 64<<10)
	block, err := br.Peek(tarBlock)
	if err != nil && err != io.EOF && len(block) == 0 || isTarHeader(block) {
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
	// The text's head tells its kind, and so the most of it that is
	// read (see kindLimits).
	text, _ := r.Peek(parsers.DetectSize)
	kind := paste.Detect(text)
	limit := kindLimit(kind, rd.lim)
	if kind == parsers.KindLog && streamLogs {
		if f, ok, err := rd.compressedLog(name, group, p, head, r, text, limit); ok {
			return f, true, err
		}
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return file{}, true, inputErrorf("reading %s: corrupt or truncated %s file after %d bytes of text: %v", p, format, len(data), err)
	}
	if int64(len(data)) > limit {
		if limit < rd.lim.MaxFile {
			return file{}, true, inputErrorf("reading %s: %s", p, kindOver(kind, fmt.Sprintf("it decompresses to more than %d bytes", limit), limit))
		}
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

// compressedLog reads the kube-proxy log compressed alone at p (shown as
// name, of group), whose head is head, from r, its text, whose head is
// text, within limit, the most of it read: its text is counted and left
// on disk, to be decompressed again as it is parsed (see readLogStreamed),
// when its head reads as a log strictly. ok is false, having read nothing
// of r, for a text decoded from UTF-16; the other texts read as that of
// a file compressed alone read whole.
func (rd *reader) compressedLog(name, group, p string, head []byte, r io.Reader, text []byte, limit int64) (f file, ok bool, err error) {
	if _, _, utf16 := utf16Order(text); utf16 {
		return file{}, false, nil
	}
	format := archiveFormat(head)
	text = slices.Clone(text)
	n, err := io.Copy(io.Discard, io.LimitReader(r, limit+1))
	if err != nil {
		return file{}, true, inputErrorf("reading %s: corrupt or truncated %s file after %d bytes of text: %v", p, format, n, err)
	}
	if n > limit {
		if limit < rd.lim.MaxFile {
			return file{}, true, inputErrorf("reading %s: %s", p, kindOver(parsers.KindLog, fmt.Sprintf("it decompresses to more than %d bytes", limit), limit))
		}
		return file{}, true, inputErrorf("reading %s: decompresses to more than the %d-byte limit of a file", p, rd.lim.MaxFile)
	}
	if err := rd.take(n, p); err != nil {
		return file{}, true, err
	}
	fl := file{name: name, group: group, compressed: format, disk: p, zpath: p, zhead: slices.Clone(head), size: n}
	fl.det = detect(text, n, fl.open)
	if d := fl.det; d.kind != parsers.KindLog || d.loose != parsers.KindLog || d.damaged || d.unread != "" {
		// Read whole, as its text is read leniently (paste damage
		// at its head).
		data, err := fl.load(parsers.KindLog)
		if err != nil {
			return file{}, true, inputErrorf("reading %s: corrupt or truncated %s file: %v", p, format, err)
		}
		fl.zpath, fl.zhead, fl.data, fl.det = "", nil, data, detection{}
	}
	return fl, true, nil
}
