// Package load reads analysis inputs — bundle archives (.tgz, .tar.xz,
// .tar.bz2, .tar.zst, .tar, .zip), directories and single files, in any mix — detects the kind
// of every file by its content, parses it, and assembles one
// model.Snapshot per node.
//
// Archives are untrusted: entries with absolute paths, ".." components,
// links or device nodes are refused, and the number of files and the
// decompressed size are capped; the size cap holds for all the inputs of
// a run together.
package load

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/proxyscan/proxyscan/internal/offheap"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/kube"
	"github.com/proxyscan/proxyscan/parsers/paste"
)

// Limits bound what the loader reads.
type Limits struct {
	// MaxFiles is the most files read from one archive or directory.
	MaxFiles int
	// MaxTotal is the most bytes read in a run, all arguments and
	// archive members together (decompressed; the members of an archive
	// that are skipped count too, as they are decompressed).
	MaxTotal int64
	// MaxFile is the largest single file.
	MaxFile int64
	// MaxKind is the largest file of each kind small by nature (a
	// sysctl or module listing, ...); nil stands for kindLimits.
	MaxKind map[parsers.Kind]int64
}

// DefaultLimits are generous for real bundles (a 10,000-service node is
// under 100 MB) and stop decompression bombs.
var DefaultLimits = Limits{MaxFiles: 10000, MaxTotal: 2 << 30, MaxFile: 1 << 30}

// file is one input file read into memory.
type file struct {
	// name is the path shown to users: the path inside the bundle, or the
	// path as given on the command line.
	name string
	// group is the bundle or directory the file belongs to ("" for a loose
	// file).
	group string
	// dir is, for a loose file found in a plain directory (one that is no
	// bundle), the argument that named the directory, or the candidate
	// node that holds it (see dirCandidates); orig and origDir are its
	// name and dir before nameByCandidates named it in its candidate.
	dir, orig, origDir string
	// disk is the path of a file read from disk (decompressed or decoded
	// in memory, or to be read when parsed); "" for an archive member.
	disk string
	// archive is set for files read from a bundle archive.
	archive bool
	data    []byte
	// path, when set, is where data is read from when the file is parsed
	// (files on disk are read one by one as they are parsed, not all
	// first); kind and size are then known from the file's head and its
	// size on disk.
	path string
	kind parsers.Kind
	size int64
	// det is what the file's head says it is, strictly and leniently;
	// set for files on disk when their head is read, for the others once
	// the files are grouped (see detectAll).
	det detection
	// strict says the file is read strictly: any line not understood is
	// an error (a bundle written by collect, or --strict).
	strict bool
	// parsed, for a Kubernetes export of an archive, is what it decoded
	// to as it was read (see archiveExport); kind and size are set.
	parsed *preParsed
	// named says the file was named on the command line: when it is not
	// understood, the run's verdict cannot be ok.
	named bool
	// special says the file of a directory could not be read at all (a
	// named pipe, a socket, a device, a link that leads nowhere or in a
	// loop: det.unread says which), and was never opened: as a file named
	// on the command line, it was meant to be read, whatever its name.
	special bool
	// skipped says an archive member of no known kind was skipped after
	// its head (data holds the head only; size is its size).
	skipped bool
	// decoded names the encoding the file was decoded from (UTF-16).
	decoded string
	// compressed names the compression (gzip, xz, bzip2, zstd) of a single compressed
	// file, read decompressed (see compressedFile).
	compressed string
	// zpath, for a kube-proxy log compressed alone, is the file on disk
	// whose text is decompressed again when it is parsed, rather than
	// held in data (see compressedLog); zhead is its head, which tells
	// its compression, and size the size of its text.
	zpath string
	zhead []byte
	// member, for a kube-proxy log of an archive, opens its text in the
	// archive read again (decompressed again up to it), rather than it
	// be held in data (see archiveState.member); size is its size.
	member func() (io.ReadCloser, error)
	// sum is the hex SHA-256 of an archive member, computed as it was
	// read, or of an export on disk hashed as it was decoded or to be told
	// the same as one decoded before (see Exports); other files on disk
	// are hashed when a manifest lists them.
	sum string
	// offheap reads a large file on disk into memory outside the Go heap
	// (see Options.OffHeap).
	offheap bool
	// lazy reads the rules of kube-proxy's per-Service chains of an
	// iptables dump read leniently when first asked for (see
	// Options.LazyChains).
	lazy bool
	// within, for a member of a bundle archive found in a plain
	// directory, is the archive's path in the directory: its files are a
	// bundle of their own, grouped already (see reader.dir).
	within string
	// session, for a part of a terminal's transcript of several commands
	// (see splitSessions), says which lines and commands it holds.
	session string
	// lines, for such a part, names the file's lines it holds.
	lines string
}

// preParsed is a file decoded as it was read, under the name it had in its
// archive: the objects' positions and the errors are renamed once the
// file's final name is known.
type preParsed struct {
	name  string
	value *kube.Objects
	err   error
	// shared, when set, is the export of another unit that the member,
	// read through rather than decoded, may be byte for byte (see
	// UnitExports.candidate); reread decodes the member when it is not.
	shared *heldExport
	reread func() (*kube.Objects, error, error)
}

// lazyFile returns the file at p, of the given size, to be read when it is
// parsed: only its head is read now, to detect its kind.
func lazyFile(name, group, p string, size int64) (file, []byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return file{}, nil, err
	}
	defer f.Close()
	head := make([]byte, min(size, parsers.DetectSize))
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return file{}, nil, err
	}
	head = head[:n]
	if order, bom, ok := utf16Order(head); ok {
		data, err := io.ReadAll(io.MultiReader(bytes.NewReader(head), f))
		if err != nil {
			return file{}, nil, err
		}
		text, enc := decodeUTF16(data, order, bom)
		return file{name: name, group: group, data: text, decoded: enc, disk: p}, head, nil
	}
	det := detect(head, size, func() (io.Reader, func(), error) {
		f, err := os.Open(p)
		if err != nil {
			return nil, nil, err
		}
		return f, func() { f.Close() }, nil
	})
	return file{name: name, group: group, path: p, disk: p, kind: det.kind, det: det, size: size}, head, nil
}

// A detection is what the head of a file says it is.
type detection struct {
	done bool
	// kind is the kind parsers.Detect sees, loose the kind paste.Detect
	// sees through paste damage (kind when that is known).
	kind, loose parsers.Kind
	// damaged says that the head holds paste damage that the parser of
	// its kind would not read (a prompt, a code fence, ...).
	damaged bool
	// unread says why a file of no known kind is not (empty, blank,
	// binary, ...); blank says the whole file is blank lines and
	// comments.
	unread string
	blank  bool
	// prefixes says that every whole line of the head is an address
	// prefix ("10.96.0.1/32"), as in the list of the addresses bound to
	// kube-ipvs0 that proxyscan expect writes.
	prefixes bool
}

// detect returns the kinds of a file from its head, the first bytes of
// the file (of size bytes), which open reads from the start when the
// head is all comments: the lines after them are then looked at.
func detect(head []byte, size int64, open func() (io.Reader, func(), error)) detection {
	d := detection{done: true, kind: parsers.Detect(head), loose: paste.Detect(head)}
	// Detect looks at the first DetectSize bytes: past them, the lines
	// after the comments are looked at (the file's or the member's whole
	// text may be in head).
	if d.loose == parsers.KindUnknown && size > int64(min(len(head), parsers.DetectSize)) {
		if r, done, err := open(); err == nil {
			more, err := paste.Head(r, parsers.DetectSize, size)
			done()
			if err == nil {
				d.kind = parsers.Detect(more)
				d.loose = paste.Detect(more)
			}
		}
	}
	d.blank = int64(len(head)) >= size && blankOrComments(head)
	if d.loose == parsers.KindUnknown {
		d.unread = unreadReason(head, size)
		d.prefixes = prefixLines(head, size)
	}
	if d.loose != parsers.KindUnknown && d.loose != parsers.KindIPTablesSave {
		if len(head) > parsers.DetectSize {
			head = head[:parsers.DetectSize]
		}
		d.damaged = d.kind == parsers.KindUnknown || paste.Clean(head, paste.Options{}).Significant() ||
			d.kind == parsers.KindKube && yamlWordsAbove(head)
	}
	return d
}

// load returns the file's contents, reading them if they are still on
// disk: outside the Go heap when the file is read so (Options.OffHeap)
// and its parsed value points into its text (kind).
func (f *file) load(kind parsers.Kind) ([]byte, error) {
	if f.zpath != "" || f.member != nil {
		rc, err := f.openText()
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return io.ReadAll(rc)
	}
	if f.path == "" {
		return f.data, nil
	}
	if f.offheap && textKept(kind) {
		if data, ok := readOffHeap(f.path); ok {
			return data, nil
		}
	}
	data, err := os.ReadFile(f.path)
	return data, pathErr(err)
}

// textKept reports whether what a file of the kind parses to points into
// its text, so that the text lives as long as it does: an iptables dump's
// rules and an nft listing's ruleset do (the parsers of the other kinds
// copy what they keep, so that their text is freed once parsed).
func textKept(kind parsers.Kind) bool {
	return kind == parsers.KindIPTablesSave || kind == parsers.KindNFTText
}

// offHeapMin is the size from which a file is read outside the Go heap
// with Options.OffHeap (tests lower it).
var offHeapMin int64 = defaultOffHeapMin

// defaultOffHeapMin is offHeapMin unless a test lowers it.
const defaultOffHeapMin = offheap.MinSize

// readOffHeap reads the file at p outside the Go heap when it is large; ok
// is false when it is not, or when reading it fails, or it is not of the
// size it had when opened (the caller reads it again, on the heap, and
// reports what is wrong).
func readOffHeap(p string) (data []byte, ok bool) {
	fh, err := os.Open(p)
	if err != nil {
		return nil, false
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil || st.Size() < offHeapMin || !st.Mode().IsRegular() {
		return nil, false
	}
	data, _, err = offheap.ReadFull(fh, st.Size())
	return data, err == nil && data != nil
}

// streamKube decodes the Kubernetes export on disk at f.path as it reads
// it, so that a large export is never in memory whole, returning the
// objects and the bytes read; sum, when not nil, is written the bytes as
// they are read.
func streamKube(f *file, ko kube.Options, sum hash.Hash) (any, int64, error) {
	fh, err := openExport(f.path)
	if err != nil {
		return nil, 0, pathErr(err)
	}
	defer fh.Close()
	var r io.Reader = fh
	if sum != nil {
		r = io.TeeReader(fh, sum)
	}
	cr := &countingReader{r: r}
	objs, err := kube.ParseReader(f.name, cr, ko)
	if err != nil {
		return objs, cr.n, pathErr(err)
	}
	return objs, cr.n, nil
}

// openExport opens an export on disk to decode it as it is read (tests
// hold its reading back).
var openExport = func(p string) (io.ReadCloser, error) { return os.Open(p) }

// pathErr returns the error under a *fs.PathError: the caller names the
// file.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// detectKind returns the file's kind: what its head says, through paste
// damage unless the file is read strictly.
func (f *file) detectKind() parsers.Kind {
	if f.parsed != nil {
		return f.kind
	}
	det := f.det
	if !det.done {
		det = f.detect()
	}
	return det.kindOf(f.strict)
}

// detect returns the detection of a file read into memory.
func (f *file) detect() detection {
	return detect(f.data, int64(len(f.data)), f.open)
}

// open returns a reader of the file from its start, from disk when it is
// still there, and the function that closes it.
func (f *file) open() (io.Reader, func(), error) {
	if f.zpath != "" || f.member != nil {
		rc, err := f.openText()
		if err != nil {
			return nil, nil, err
		}
		return rc, func() { rc.Close() }, nil
	}
	if f.path == "" {
		return bytes.NewReader(f.data), func() {}, nil
	}
	fh, err := os.Open(f.path)
	if err != nil {
		return nil, nil, err
	}
	return fh, func() { fh.Close() }, nil
}

// kindOf returns the kind a file's detection gives when it is read
// strictly or not.
func (d detection) kindOf(strict bool) parsers.Kind {
	if strict {
		return d.kind
	}
	return d.loose
}

// length returns the file's size.
func (f *file) length() int64 {
	if f.path != "" || f.zpath != "" || f.member != nil || f.parsed != nil {
		return f.size
	}
	return int64(len(f.data))
}

// result returns what a pre-parsed file decoded to, its positions and
// errors naming the file as f.name.
func (f *file) result() (any, error) {
	p := f.parsed
	if p.name != f.name {
		if p.value != nil {
			p.value.SetFile(f.name)
		}
		var errs parsers.ErrorList
		var one *parsers.Error
		if errors.As(p.err, &one) {
			errs = parsers.ErrorList{one}
		} else {
			errors.As(p.err, &errs)
		}
		for _, e := range errs {
			if e.Pos.File == p.name {
				e.Pos.File = f.name
			}
		}
		p.name = f.name
	}
	return p.value, p.err
}

// errInput marks input errors that are not positioned parser errors.
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }

// IsInputError reports whether err is a problem with the inputs (exit 2)
// rather than an internal failure.
func IsInputError(err error) bool {
	var ie *inputError
	return errors.As(err, &ie) || parsers.IsInputError(err)
}

func inputErrorf(format string, args ...any) error {
	return &inputError{msg: fmt.Sprintf(format, args...)}
}

// A reader reads the arguments of one run within its limits: the bytes
// read (decompressed) count against Limits.MaxTotal across all of them.
type reader struct {
	lim Limits
	ko  kube.Options
	// read is the bytes read so far in the run.
	read int64
	// offheap reads large archive members outside the Go heap (see
	// Options.OffHeap).
	offheap bool
	// ex, when set, is the unit's view of the exports the units of the
	// run share (see Exports).
	ex *UnitExports
	// planning says the arguments are read to plan the run (see Plan):
	// a directory holding a bundle archive is not read through, dir
	// returning errArchiveInDir, as such a directory is read together
	// with the other arguments.
	planning bool
}

// nodeReportBeside says why a node report found in a plain directory,
// beside a node's files, is not read.
const nodeReportBeside = "a node report (collect --analyze), which is merged with bundles and other node reports, not read with a node's loose files: give it in a run without them"

// errArchiveInDir is the error of reading, to plan the run, a directory
// that holds a bundle archive outside its bundles.
var errArchiveInDir = errors.New("a bundle archive in a plain directory")

// take counts n more bytes read for what (an archive, a directory, a
// file), refusing them past the run's limit.
func (rd *reader) take(n int64, what string) error {
	if rd.read+n > rd.lim.MaxTotal || n < 0 {
		return inputErrorf("%s: the inputs of this run hold more than %d bytes (the limit of a run, all arguments and archive members together)", what, rd.lim.MaxTotal)
	}
	rd.read += n
	return nil
}

// readPath reads one command-line argument: an archive, a directory or a
// single file.
func readPath(p string, lim Limits, ko kube.Options) ([]file, error) {
	rd := &reader{lim: lim, ko: ko}
	return rd.path(p)
}

// path reads one command-line argument: an archive, a directory or a
// single file.
func (rd *reader) path(p string) ([]file, error) {
	lim := rd.lim
	st, err := os.Stat(p)
	if err != nil {
		return nil, inputErrorf("reading %s: %v", p, errors.Unwrap(err))
	}
	if st.IsDir() {
		return rd.dir(p)
	}
	if !st.Mode().IsRegular() {
		return nil, inputErrorf("reading %s: not a regular file", p)
	}
	if st.Size() > lim.MaxFile {
		return nil, inputErrorf("reading %s: file is %d bytes, over the %d-byte limit", p, st.Size(), lim.MaxFile)
	}
	f, head, err := lazyFile(p, "", p, st.Size())
	if err != nil {
		return nil, inputErrorf("reading %s: %v", p, err)
	}
	if why := overKind(f.det.loose, st.Size(), lim); why != "" {
		return nil, inputErrorf("reading %s: %s", p, why)
	}
	if IsNodeReport(head) {
		return nil, inputErrorf("%s is a node report: it is merged with bundles and other node reports, not read with loose dump files (give the bundles, or the dumps of one node)", p)
	}
	if cf, ok, err := rd.compressedFile(p, "", p, head); ok {
		if err != nil {
			return nil, err
		}
		cf.named = true
		return []file{cf}, nil
	}
	if archiveFormat(head) != "" {
		return rd.archiveFile(p, st.Size(), head)
	}
	if err := rd.take(st.Size(), p); err != nil {
		return nil, err
	}
	f.named = true
	return []file{f}, nil
}

// archiveFile reads the bundle archive on disk at p, of size bytes, whose
// first bytes are head, from the file as it is decompressed, never held
// whole (see [reader.archive]); its files are of the group p.
func (rd *reader) archiveFile(p string, size int64, head []byte) ([]file, error) {
	fh, err := os.Open(p)
	if err != nil {
		return nil, inputErrorf("reading %s: %v", p, errors.Unwrap(err))
	}
	defer fh.Close()
	reopen := func() (io.ReaderAt, func(), error) {
		fh, err := os.Open(p)
		if err != nil {
			return nil, nil, err
		}
		return fh, func() { fh.Close() }, nil
	}
	return rd.archive(p, fh, size, head, reopen)
}

// Archive formats, by their magic numbers.
const (
	formatGzip  = "gzip"
	formatXZ    = "xz"
	formatZip   = "zip"
	formatTar   = "tar"
	formatBzip2 = "bzip2"
	formatZstd  = "zstd"
)

// archiveFormat returns the archive format data starts with, or "".
func archiveFormat(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte{0x1f, 0x8b}):
		return formatGzip
	case bytes.HasPrefix(data, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		return formatXZ
	case bytes.HasPrefix(data, []byte("PK\x03\x04")), bytes.HasPrefix(data, []byte("PK\x05\x06")):
		return formatZip
	case bytes.HasPrefix(data, []byte("BZh")) && len(data) > 3 && data[3] >= '1' && data[3] <= '9':
		return formatBzip2
	case bytes.HasPrefix(data, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return formatZstd
	case len(data) >= 262 && string(data[257:262]) == "ustar":
		return formatTar
	}
	return ""
}

// maxXZDict is the largest LZMA2 dictionary of an xz archive that is
// read: the decoder allocates it whole, whatever the archive's size.
const maxXZDict = 64 << 20

// xzDictSize returns the LZMA2 dictionary size of the first block of an
// xz stream (the header of a block says it); ok is false when the block
// is not a single LZMA2 filter.
func xzDictSize(data []byte) (size int64, ok bool) {
	const streamHeader = 12
	if len(data) < streamHeader+2 {
		return 0, false
	}
	b := data[streamHeader:]
	hsize := (int(b[0]) + 1) * 4
	if b[0] == 0 || len(b) < hsize {
		return 0, false
	}
	h := b[1:hsize]
	flags := h[0]
	if flags&0x03 != 0 { // more than one filter
		return 0, false
	}
	i := 1
	varint := func() (uint64, bool) {
		var v uint64
		for shift := 0; i < len(h) && shift < 63; shift += 7 {
			c := h[i]
			i++
			v |= uint64(c&0x7f) << shift
			if c&0x80 == 0 {
				return v, true
			}
		}
		return 0, false
	}
	for _, present := range []bool{flags&0x40 != 0, flags&0x80 != 0} { // compressed, uncompressed sizes
		if !present {
			continue
		}
		if _, ok := varint(); !ok {
			return 0, false
		}
	}
	id, ok1 := varint()
	n, ok2 := varint()
	if !ok1 || !ok2 || id != 0x21 || n != 1 || i >= len(h) {
		return 0, false
	}
	p := h[i]
	switch {
	case p > 40:
		return 0, false
	case p == 40:
		return 1<<32 - 1, true
	}
	return int64(2|p&1) << (p/2 + 11), true
}

// readArchive reads a bundle archive held in data (see [reader.archive]).
func readArchive(name string, data []byte, lim Limits, ko kube.Options) ([]file, error) {
	rd := &reader{lim: lim, ko: ko}
	reopen := func() (io.ReaderAt, func(), error) { return bytes.NewReader(data), func() {}, nil }
	return rd.archive(name, bytes.NewReader(data), int64(len(data)), data, reopen)
}

// archive reads a bundle archive: a tar archive, compressed with gzip,
// xz, bzip2 or zstd or not, or a zip archive. Its Kubernetes exports are decoded as they
// are read (archiveExport); its other files of a known kind are read into
// memory, and those of no known kind are skipped after their head.
// A member that may be an export another unit decoded (see
// UnitExports.candidate) is read through, and decoded from the archive
// opened again by reopen when it is not.
func (rd *reader) archive(name string, ra io.ReaderAt, size int64, head []byte, reopen func() (io.ReaderAt, func(), error)) ([]file, error) {
	a := &archiveState{rd: rd, name: name, seen: map[string]bool{}}
	a.text = func(clean string, n int64) (io.ReadCloser, error) {
		return memberText(name, clean, n, size, head, reopen)
	}
	a.reread = func(clean string) (*kube.Objects, error, error) {
		ra, done, err := reopen()
		if err != nil {
			return nil, nil, inputErrorf("%s: reading archive entry %q again: %v", name, clean, err)
		}
		defer done()
		again := &archiveState{rd: &reader{lim: rd.lim, ko: rd.ko}, name: name, seen: map[string]bool{}, want: clean}
		if err := again.read(ra, size, head); err != nil && err != errFound {
			return nil, nil, err
		}
		if again.found == nil {
			return nil, nil, inputErrorf("%s: archive entry %q is gone when read again", name, clean)
		}
		return again.found.value, again.found.err, nil
	}
	if err := a.read(ra, size, head); err != nil {
		return nil, err
	}
	if len(a.out) == 0 {
		return nil, inputErrorf("%s: archive holds no files", name)
	}
	return a.out, nil
}

// errFound stops reading an archive again once its member is found.
var errFound = errors.New("found")

// read reads the members of the archive ra, of size bytes, starting with
// head.
func (a *archiveState) read(ra io.ReaderAt, size int64, head []byte) error {
	name := a.name
	r := bufio.NewReaderSize(io.NewSectionReader(ra, 0, size), 64<<10)
	var err error
	switch format := archiveFormat(head); {
	case compressedFormat(format):
		zr, zerr := openStream(format, head, r)
		if zerr != nil {
			return inputErrorf("%s: %v", name, zerr)
		}
		err = a.tar(zr)
	case format == formatTar:
		err = a.tar(r)
	case format == formatZip:
		err = a.zip(ra, size)
	default:
		return inputErrorf("%s: not an archive proxyscan reads", name)
	}
	return err
}

// archiveState is an archive being read.
type archiveState struct {
	rd   *reader
	name string
	out  []file
	seen map[string]bool
	// reread decodes the export named clean in the archive, read again:
	// its objects, its decoding error, and the error reading it.
	reread func(clean string) (*kube.Objects, error, error)
	// want, when set, names the one member to decode (the archive read
	// again); found is what it decoded to.
	want  string
	found *preParsed
	// text opens the text of the member named clean, of size bytes, in
	// the archive read again (see memberText); nil when it cannot be.
	text func(clean string, size int64) (io.ReadCloser, error)
}

// tar reads the members of a tar archive.
func (a *archiveState) tar(r io.Reader) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return inputErrorf("%s: corrupt or truncated archive after %d files: %v", a.name, len(a.out), err)
		}
		clean, err := entryName(h.Name)
		if err != nil {
			return inputErrorf("%s: refusing archive entry %q: %v", a.name, h.Name, err)
		}
		switch h.Typeflag {
		case tar.TypeDir, tar.TypeXGlobalHeader:
			continue
		case tar.TypeReg: // the reader gives the legacy TypeRegA as TypeReg
		case tar.TypeSymlink, tar.TypeLink:
			return inputErrorf("%s: refusing archive entry %q: links are not allowed in a bundle", a.name, h.Name)
		default:
			return inputErrorf("%s: refusing archive entry %q: type %q is not a regular file", a.name, h.Name, string(h.Typeflag))
		}
		if err := a.member(clean, h.Size, tr); err != nil {
			return err
		}
	}
}

// zip reads the members of a zip archive.
func (a *archiveState) zip(ra io.ReaderAt, size int64) error {
	zr, err := zip.NewReader(ra, size)
	if err != nil {
		return inputErrorf("%s: not a valid zip archive: %v", a.name, err)
	}
	for _, zf := range zr.File {
		clean, err := entryName(zf.Name)
		if err != nil {
			return inputErrorf("%s: refusing archive entry %q: %v", a.name, zf.Name, err)
		}
		mode := zf.Mode()
		switch {
		case mode.IsDir():
			continue
		case mode&fs.ModeSymlink != 0:
			return inputErrorf("%s: refusing archive entry %q: links are not allowed in a bundle", a.name, zf.Name)
		case !mode.IsRegular():
			return inputErrorf("%s: refusing archive entry %q: mode %v is not a regular file", a.name, zf.Name, mode)
		}
		size := int64(zf.UncompressedSize64)
		if zf.UncompressedSize64 > uint64(a.rd.lim.MaxFile) {
			size = -1 // refused by member
		}
		if err := a.zipMember(zf, clean, size); err != nil {
			return err
		}
	}
	return nil
}

// zipMember reads one member of a zip archive.
func (a *archiveState) zipMember(zf *zip.File, clean string, size int64) error {
	if size < 0 {
		return inputErrorf("%s: archive entry %q claims %d bytes, over the %d-byte limit", a.name, clean, zf.UncompressedSize64, a.rd.lim.MaxFile)
	}
	r, err := zf.Open()
	if err != nil {
		return inputErrorf("%s: reading archive entry %q: %v", a.name, clean, err)
	}
	defer r.Close()
	return a.member(clean, size, r)
}

// member reads one regular member of an archive, of the size its header
// claims, from r.
func (a *archiveState) member(clean string, size int64, r io.Reader) error {
	name, lim := a.name, a.rd.lim
	if clean == "" {
		return nil
	}
	if a.seen[clean] {
		return inputErrorf("%s: archive entry %q appears twice", name, clean)
	}
	a.seen[clean] = true
	if a.want != "" {
		return a.wanted(clean, size, r)
	}
	if len(a.out) >= lim.MaxFiles {
		return inputErrorf("%s: more than %d files in archive", name, lim.MaxFiles)
	}
	if size > lim.MaxFile || size < 0 {
		return inputErrorf("%s: archive entry %q is %d bytes, over the %d-byte limit", name, clean, size, lim.MaxFile)
	}
	if a.rd.read+size > lim.MaxTotal {
		return inputErrorf("%s: archive decompresses to more than %d bytes (the limit of a run, all arguments and archive members together)", name, lim.MaxTotal)
	}
	// The entry's head tells its kind: a Kubernetes export is decoded as
	// it is read rather than held whole, a member of no known kind is
	// skipped. Every byte is hashed, for the manifest's SHA-256.
	h := sha256.New()
	r = io.TeeReader(r, h)
	head := make([]byte, min(size, parsers.DetectSize))
	hn, err := io.ReadFull(r, head)
	head = head[:hn]
	var f file
	var n int64
	whole := int64(hn) == min(size, parsers.DetectSize)
	if whole {
		if why := overKind(paste.Detect(head), size, lim); why != "" {
			return inputErrorf("%s: archive entry %q: %s", name, clean, why)
		}
	}
	switch {
	case err != nil && err != io.ErrUnexpectedEOF && err != io.EOF:
	case IsNodeReport(head):
		// An analysis, not a dump: read through and left out.
		n, err = io.Copy(io.Discard, io.LimitReader(r, size+1-int64(hn)))
		n += int64(hn)
		if err == nil && n == size {
			return a.rd.take(n, name)
		}
	case streamExports && whole && parsers.Detect(head) == parsers.KindKube &&
		!paste.Clean(head, paste.Options{}).Significant():
		if held := a.rd.ex.candidate(clean, size); held != nil {
			// Hashed as it is read through; told the held export's
			// once its name in the bundle is known.
			n, err = io.Copy(io.Discard, io.LimitReader(r, size+1-int64(hn)))
			n += int64(hn)
			f = file{kind: parsers.KindKube, size: n, parsed: &preParsed{name: clean, shared: held, reread: func() (*kube.Objects, error, error) { return a.reread(clean) }}}
			break
		}
		f, n, err = archiveExport(clean, head, r, size, a.rd.ko)
	case whole && skippable(head, size):
		// Never held whole: read through, so that the archive's size
		// is checked, and dropped.
		n, err = io.Copy(io.Discard, io.LimitReader(r, size+1-int64(hn)))
		n += int64(hn)
		f = file{data: head, skipped: true, size: size}
		f.det = detection{done: true, kind: parsers.KindUnknown, loose: parsers.KindUnknown, unread: unreadReason(head, size)}
	case streamLogs && a.text != nil && size >= streamMemberMin && whole && plainLog(head, size):
		// A kube-proxy log, which is parsed as it is read (see
		// readLogStreamed): read through, so that the archive's size is
		// checked and the log hashed, and read again from the archive
		// when it is parsed, never held whole.
		n, err = io.Copy(io.Discard, io.LimitReader(r, size+1-int64(hn)))
		n += int64(hn)
		text := a.text
		f = file{size: size, member: func() (io.ReadCloser, error) { return text(clean, size) }}
		f.det = detect(head, size, f.open)
	case a.rd.offheap && size >= offHeapMin && whole && textKept(paste.Detect(head)):
		var data []byte
		data, n, err = offheap.ReadFull(io.MultiReader(bytes.NewReader(head), r), size)
		f = file{data: data}
		if order, bom, ok := utf16Order(head); ok {
			f.data, f.decoded = decodeUTF16(f.data, order, bom)
		}
	default:
		buf := make([]byte, hn, size)
		copy(buf, head)
		w := bytes.NewBuffer(buf)
		n, err = io.Copy(w, io.LimitReader(r, size+1-int64(hn)))
		n += int64(hn)
		f = file{data: w.Bytes()}
		if order, bom, ok := utf16Order(head); ok {
			f.data, f.decoded = decodeUTF16(f.data, order, bom)
		}
	}
	if err != nil {
		return inputErrorf("%s: reading archive entry %q: %v", name, clean, err)
	}
	if n > size {
		return inputErrorf("%s: archive entry %q holds more than the %d bytes its header says", name, clean, size)
	}
	if n != size {
		return inputErrorf("%s: archive entry %q is truncated (%d of %d bytes)", name, clean, n, size)
	}
	if err := a.rd.take(n, name); err != nil {
		return err
	}
	f.name, f.group, f.archive = clean, name, true
	f.sum = hex.EncodeToString(h.Sum(nil))
	a.out = append(a.out, f)
	return nil
}

// wanted reads one member of an archive read again for the member a.want:
// skipped when it is another, decoded when it is the one.
func (a *archiveState) wanted(clean string, size int64, r io.Reader) error {
	if clean != a.want {
		_, err := io.Copy(io.Discard, r)
		return err
	}
	head := make([]byte, min(size, parsers.DetectSize))
	hn, err := io.ReadFull(r, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return inputErrorf("%s: reading archive entry %q: %v", a.name, clean, err)
	}
	f, _, err := archiveExport(clean, head[:hn], r, size, a.rd.ko)
	if err != nil {
		return inputErrorf("%s: reading archive entry %q: %v", a.name, clean, err)
	}
	a.found = f.parsed
	return errFound
}

// skippable reports whether an archive member, whose head is head, is of
// no kind proxyscan reads, so that the rest of it need not be held: its
// head is not UTF-16 and is recognised as no kind, through paste damage
// too, and it is not all comments (the lines after them may say what it
// is).
func skippable(head []byte, size int64) bool {
	if _, _, ok := utf16Order(head); ok {
		return false
	}
	if paste.Detect(head) != parsers.KindUnknown {
		return false
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	if i := bytes.LastIndexByte(head, '\n'); i >= 0 && int64(len(head)) < size && commentsOnly(head[:i+1]) {
		return false
	}
	return true
}

// archiveExport decodes the Kubernetes export of an archive entry, whose
// first bytes are head and whose rest tr reads, as it reads it. It returns
// the file, the bytes read (all of the entry's, so that the caller checks
// it is whole) and the error reading them.
func archiveExport(name string, head []byte, tr io.Reader, size int64, ko kube.Options) (file, int64, error) {
	cr := &countingReader{r: io.LimitReader(tr, size+1-int64(len(head)))}
	r := &errReader{r: io.MultiReader(bytes.NewReader(head), cr)}
	objs, perr := kube.ParseReader(name, r, ko)
	// What the decoder did not read (after an error) is read all the
	// same, as it would be were the entry read whole.
	if _, err := io.Copy(io.Discard, r); err != nil {
		r.err = err
	}
	if r.err != nil {
		return file{}, 0, r.err
	}
	f := file{kind: parsers.KindKube, size: int64(len(head)) + cr.n, parsed: &preParsed{name: name, value: objs, err: perr}}
	return f, f.size, nil
}

// errReader keeps the first error other than io.EOF that reading r, an
// archive entry, gave.
type errReader struct {
	r   io.Reader
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF && e.err == nil {
		e.err = err
	}
	return n, err
}

// entryName validates an archive entry name and returns it cleaned, with a
// single leading directory of the bundle (proxyscan-host-time/) removed.
func entryName(n string) (string, error) {
	if strings.ContainsRune(n, 0) {
		return "", errors.New("NUL byte in name")
	}
	n = strings.ReplaceAll(n, "\\", "/")
	if strings.HasPrefix(n, "/") || len(n) > 1 && n[1] == ':' {
		return "", errors.New("absolute path")
	}
	for _, part := range strings.Split(n, "/") {
		if part == ".." {
			return "", errors.New("path escapes the bundle (\"..\")")
		}
	}
	clean := path.Clean(n)
	if clean == "." {
		return "", nil
	}
	return clean, nil
}

// dir reads every regular file below dir, through symbolic links (see
// walkTree), in the order of their paths. A file it does not read — a
// named pipe, a socket, a device, a link that leads nowhere or in a loop —
// is listed, unread, with why (see file.special). A bundle archive in it
// that is not the file of a bundle directory (one holding manifest.json
// or node/) is read as the bundle it is, as when given on the command
// line: its files are grouped under its path (see regroup), where it
// stands in that order.
func (rd *reader) dir(dir string) ([]file, error) {
	lim := rd.lim
	// Each file found, or each archive's files, in the order of paths.
	type found struct {
		rel string
		fs  []file
	}
	var out []found
	n := 0
	err := walkTree(dir, func(p string, t treeFile) error {
		if n >= lim.MaxFiles {
			return inputErrorf("%s: more than %d files", dir, lim.MaxFiles)
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if t.info == nil {
			n++
			out = append(out, found{rel, []file{unreadFile(rel, dir, p, t.unread)}})
			return nil
		}
		info := t.info
		n++
		if info.Size() > lim.MaxFile {
			return inputErrorf("reading %s: file is %d bytes, over the %d-byte limit", p, info.Size(), lim.MaxFile)
		}
		if rd.read+info.Size() > lim.MaxTotal {
			return inputErrorf("%s: more than %d bytes of files (the limit of a run, all arguments and archive members together)", dir, lim.MaxTotal)
		}
		f, head, err := lazyFile(rel, dir, p, info.Size())
		if err != nil {
			return inputErrorf("reading %s: %v", p, err)
		}
		if why := overKind(f.det.loose, info.Size(), lim); why != "" {
			return inputErrorf("reading %s: %s", p, why)
		}
		if IsNodeReport(head) {
			if inBundleDir(dir, p) {
				return nil // the bundle's analysis, not a dump
			}
			// Another node's analysis beside loose files (a node
			// report is read as such only with bundles and reports):
			// listed, saying so, not dropped without a word.
			f.det.unread = nodeReportBeside
		}
		if cf, ok, err := rd.compressedFile(f.name, dir, p, head); ok {
			if err == nil {
				out = append(out, found{rel, []file{cf}})
			}
			return err
		}
		if archiveFormat(head) != "" && !inBundleDir(dir, p) {
			if rd.planning {
				return errArchiveInDir
			}
			members, err := rd.archiveFile(p, info.Size(), head)
			if err != nil {
				return err
			}
			members = regroup(p, members)
			for i := range members {
				members[i].within = rel
			}
			out = append(out, found{rel, members})
			return nil
		}
		rd.read += info.Size()
		out = append(out, found{rel, []file{f}})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].rel < out[j].rel })
	var files []file
	for _, f := range out {
		files = append(files, f.fs...)
	}
	return files, nil
}

// unreadFile returns the file of the directory dir at p, named rel, that
// is not read, for the reason why (see walkTree): listed, unread, and
// never opened.
func unreadFile(rel, dir, p, why string) file {
	return file{name: rel, group: dir, disk: p, kind: parsers.KindUnknown, skipped: true, special: true,
		det: detection{done: true, kind: parsers.KindUnknown, loose: parsers.KindUnknown, unread: why}}
}

// inBundleDir reports whether the file at p, below the directory dir
// given, is in a bundle directory: its directory, or one between it and
// dir, holds manifest.json or node/.
func inBundleDir(dir, p string) bool {
	dir = filepath.Clean(dir)
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		if isBundleDir(d) {
			return true
		}
		if d == dir || d == filepath.Dir(d) || len(d) < len(dir) {
			return false
		}
	}
}
