// Package load reads analysis inputs — bundle archives (.tgz), directories
// and single files, in any mix — detects the kind of every file by its
// content, parses it, and assembles one model.Snapshot per node.
//
// Archives are untrusted: entries with absolute paths, ".." components,
// links or device nodes are refused, and the number of files and the
// decompressed size are capped.
package load

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/kube"
	"github.com/proxyscan/proxyscan/parsers/paste"
)

// Limits bound what the loader reads.
type Limits struct {
	// MaxFiles is the most files read from one archive or directory.
	MaxFiles int
	// MaxTotal is the most bytes read from one archive or directory
	// (decompressed).
	MaxTotal int64
	// MaxFile is the largest single file.
	MaxFile int64
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
}

// preParsed is a file decoded as it was read, under the name it had in its
// archive: the objects' positions and the errors are renamed once the
// file's final name is known.
type preParsed struct {
	name  string
	value *kube.Objects
	err   error
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
	det := detect(head, size, func() (io.Reader, func(), error) {
		f, err := os.Open(p)
		if err != nil {
			return nil, nil, err
		}
		return f, func() { f.Close() }, nil
	})
	return file{name: name, group: group, path: p, kind: det.kind, det: det, size: size}, head, nil
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
}

// detect returns the kinds of a file from its head, the first bytes of
// the file (of size bytes), which open reads from the start when the
// head is all comments: the lines after them are then looked at.
func detect(head []byte, size int64, open func() (io.Reader, func(), error)) detection {
	d := detection{done: true, kind: parsers.Detect(head), loose: paste.Detect(head)}
	if d.loose == parsers.KindUnknown && size > int64(len(head)) {
		if r, done, err := open(); err == nil {
			more, err := paste.Head(r, parsers.DetectSize, size)
			done()
			if err == nil {
				d.kind = parsers.Detect(more)
				d.loose = paste.Detect(more)
			}
		}
	}
	if d.loose != parsers.KindUnknown && d.loose != parsers.KindIPTablesSave {
		if len(head) > parsers.DetectSize {
			head = head[:parsers.DetectSize]
		}
		d.damaged = d.kind == parsers.KindUnknown || paste.Clean(head, paste.Options{}).Significant()
	}
	return d
}

// load returns the file's contents, reading them if they are still on
// disk.
func (f *file) load() ([]byte, error) {
	if f.path == "" {
		return f.data, nil
	}
	data, err := os.ReadFile(f.path)
	return data, pathErr(err)
}

// streamKube decodes the Kubernetes export on disk at f.path as it reads
// it, so that a large export is never in memory whole, returning the
// objects and the bytes read.
func streamKube(f *file, ko kube.Options) (any, int64, error) {
	fh, err := os.Open(f.path)
	if err != nil {
		return nil, 0, pathErr(err)
	}
	defer fh.Close()
	cr := &countingReader{r: fh}
	objs, err := kube.ParseReader(f.name, cr, ko)
	if err != nil {
		return objs, cr.n, pathErr(err)
	}
	return objs, cr.n, nil
}

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
	return detect(f.data, int64(len(f.data)), func() (io.Reader, func(), error) {
		return bytes.NewReader(f.data), func() {}, nil
	})
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
	if f.path != "" || f.parsed != nil {
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

// readPath reads one command-line argument: an archive, a directory or a
// single file.
func readPath(p string, lim Limits, ko kube.Options) ([]file, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, inputErrorf("reading %s: %v", p, errors.Unwrap(err))
	}
	if st.IsDir() {
		return readDir(p, lim)
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
	if isGzip(head) {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, inputErrorf("reading %s: %v", p, err)
		}
		return readArchive(p, data, lim, ko)
	}
	return []file{f}, nil
}

func isGzip(data []byte) bool { return len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b }

// readArchive reads a gzip-compressed tar archive (a bundle). Its
// Kubernetes exports are decoded as they are read (archiveExport); its
// other files are read into memory.
func readArchive(name string, data []byte, lim Limits, ko kube.Options) ([]file, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, inputErrorf("%s: not a valid gzip archive: %v", name, err)
	}
	zr.Multistream(false)
	tr := tar.NewReader(zr)
	var out []file
	var total int64
	seen := map[string]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, inputErrorf("%s: corrupt or truncated archive after %d files: %v", name, len(out), err)
		}
		clean, err := entryName(h.Name)
		if err != nil {
			return nil, inputErrorf("%s: refusing archive entry %q: %v", name, h.Name, err)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			continue
		case tar.TypeReg: // the reader gives the legacy TypeRegA as TypeReg
		case tar.TypeSymlink, tar.TypeLink:
			return nil, inputErrorf("%s: refusing archive entry %q: links are not allowed in a bundle", name, h.Name)
		case tar.TypeXGlobalHeader:
			continue
		default:
			return nil, inputErrorf("%s: refusing archive entry %q: type %q is not a regular file", name, h.Name, string(h.Typeflag))
		}
		if clean == "" {
			continue
		}
		if seen[clean] {
			return nil, inputErrorf("%s: archive entry %q appears twice", name, clean)
		}
		seen[clean] = true
		if len(out) >= lim.MaxFiles {
			return nil, inputErrorf("%s: more than %d files in archive", name, lim.MaxFiles)
		}
		if h.Size > lim.MaxFile || h.Size < 0 {
			return nil, inputErrorf("%s: archive entry %q is %d bytes, over the %d-byte limit", name, clean, h.Size, lim.MaxFile)
		}
		if total+h.Size > lim.MaxTotal {
			return nil, inputErrorf("%s: archive decompresses to more than %d bytes", name, lim.MaxTotal)
		}
		// The entry's head tells a Kubernetes export, which is decoded
		// as it is read rather than held whole.
		head := make([]byte, min(h.Size, parsers.DetectSize))
		hn, err := io.ReadFull(tr, head)
		head = head[:hn]
		var f file
		var n int64
		switch {
		case err != nil && err != io.ErrUnexpectedEOF && err != io.EOF:
		case streamExports && int64(hn) == min(h.Size, parsers.DetectSize) && parsers.Detect(head) == parsers.KindKube &&
			!paste.Clean(head, paste.Options{}).Significant():
			f, n, err = archiveExport(clean, head, tr, h.Size, ko)
		default:
			buf := make([]byte, hn, h.Size)
			copy(buf, head)
			w := bytes.NewBuffer(buf)
			n, err = io.Copy(w, io.LimitReader(tr, h.Size+1-int64(hn)))
			n += int64(hn)
			f = file{data: w.Bytes()}
		}
		if err != nil {
			return nil, inputErrorf("%s: reading archive entry %q: %v", name, clean, err)
		}
		if n != h.Size {
			return nil, inputErrorf("%s: archive entry %q is truncated (%d of %d bytes)", name, clean, n, h.Size)
		}
		total += n
		f.name, f.group, f.archive = clean, name, true
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, inputErrorf("%s: archive holds no files", name)
	}
	return out, nil
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

// readDir reads every regular file below dir (links are not followed).
func readDir(dir string, lim Limits) ([]file, error) {
	var out []file
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return inputErrorf("reading %s: %v", p, err)
		}
		if d.IsDir() {
			if p != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			return nil
		}
		if !d.Type().IsRegular() {
			return nil // links, sockets, devices: never followed
		}
		info, err := d.Info()
		if err != nil {
			return inputErrorf("reading %s: %v", p, err)
		}
		if len(out) >= lim.MaxFiles {
			return inputErrorf("%s: more than %d files", dir, lim.MaxFiles)
		}
		if info.Size() > lim.MaxFile {
			return inputErrorf("reading %s: file is %d bytes, over the %d-byte limit", p, info.Size(), lim.MaxFile)
		}
		if total += info.Size(); total > lim.MaxTotal {
			return inputErrorf("%s: more than %d bytes of files", dir, lim.MaxTotal)
		}
		rel, _ := filepath.Rel(dir, p)
		f, _, err := lazyFile(filepath.ToSlash(rel), dir, p, info.Size())
		if err != nil {
			return inputErrorf("reading %s: %v", p, err)
		}
		out = append(out, f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}
