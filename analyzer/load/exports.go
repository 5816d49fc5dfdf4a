package load

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/proxyscan/proxyscan/internal/fault"
	"github.com/proxyscan/proxyscan/parsers/kube"
	"github.com/proxyscan/proxyscan/parsers/manifest"
	"github.com/ulikunitz/xz"
)

// Exports lets the units of a run (see [Units] and [Plan]), loaded one
// after another, share the decoding of a Kubernetes export that several
// of them hold byte for byte: a cluster exported once and copied into
// every node's bundle, or exported on each node while the cluster did not
// change. A unit's export on disk whose name in its bundle, size and
// SHA-256 are those of the export held is given the objects decoded
// from it rather than decoded again: decoding is a function of the name
// and the bytes, so that the unit's snapshot is the one of decoding its
// own file, its positions naming its own file in its own bundle.
//
// It holds one export at a time, the last decoded that a unit still to
// load may hold (a file of its size is in it), and drops it once that
// unit is loaded: at most one cluster's objects are kept beside those
// of the units in flight. The objects held are shared by the units read
// with them, as the loose exports of [Shared] are, and never changed:
// compacting a snapshot puts a trimmed copy of each Service in its place,
// made once.
type Exports struct {
	mu sync.Mutex
	// last maps the size of each file the units hold, of a size that
	// two units or more hold, to the last unit that holds one.
	last map[int64]int
	// lastArchive is the last unit that is a bundle archive, whose
	// members' sizes are known only as it is read: it may hold a file of
	// any size (-1 when there is none).
	lastArchive int
	held        *heldExport
	// holders lists, per size in last, the units that hold a file of
	// it, in order.
	holders map[int64][]int
	// passed, set by Together, is closed for each unit once its exports
	// are decoded (by passedOnce).
	passed     []chan struct{}
	passedOnce []sync.Once
}

// heldExport is an export decoded by one unit that a later one may hold.
type heldExport struct {
	name   string
	strict bool
	size   int64
	// sum is the hex SHA-256 of the bytes decoded.
	sum       string
	value     *kube.Objects
	compacted map[*kube.Service]*kube.Service
	// until is the last unit that may hold it.
	until int
}

// minSharedExport is the size under which an export is decoded by each
// unit that holds it: its decoding costs little more than telling it is
// the same.
const minSharedExport = 64 << 10

// NewExports returns the memory of the exports of units, the arguments of
// each bundle or directory, in the order they are loaded; nil when no two
// units hold files on disk of one size, large enough to share, and no
// unit is a bundle archive beside another unit whose members' sizes are
// not known before it is read (see archiveSizes): listing them would
// decompress it twice, and such an archive may hold a file of any size.
func NewExports(units [][]string) *Exports {
	last := map[int64]int{}
	count := map[int64]int{}
	holders := map[int64][]int{}
	lastArchive, archives := -1, 0
	for i, u := range units {
		sizes := map[int64]bool{}
		archive := false
		for _, p := range u {
			if isArchive, known := archiveSizes(p, sizes); isArchive && !known {
				archive = true
			} else if !isArchive {
				unitFileSizes(p, sizes)
			}
		}
		if archive {
			lastArchive = i
			archives++
		}
		for s := range sizes {
			last[s] = i
			count[s]++
			holders[s] = append(holders[s], i)
		}
	}
	for s, n := range count {
		if n+archives < 2 {
			delete(last, s)
			delete(holders, s)
		}
	}
	if len(last) == 0 && (archives == 0 || len(units) < 2) {
		return nil
	}
	return &Exports{last: last, lastArchive: lastArchive, holders: holders}
}

// Together says that the units are loaded at once rather than one after
// another (the two sides of a diff), each by one call of [Load] with its
// [UnitExports]. A unit holding a file on disk of the size of one an
// earlier unit's directory holds then waits, before decoding it, until
// that unit's exports are decoded, and takes their objects when the files
// are alike byte for byte: it hashes its file and parses its other files
// meanwhile. Without it, a unit decodes its export when the export held is
// not yet decoded. An archive's members are not waited for: their sizes
// are known only once it is read. Together does nothing on a nil Exports,
// and is to be called before the units load.
func (e *Exports) Together() {
	if e == nil {
		return
	}
	units := 0
	for _, us := range e.holders {
		units = max(units, us[len(us)-1]+1)
	}
	e.passed = make([]chan struct{}, units)
	e.passedOnce = make([]sync.Once, units)
	for i := range e.passed {
		e.passed[i] = make(chan struct{})
	}
}

// earlier returns what unit must wait for before it decodes a file of
// size: the signals of the earlier units that hold a file of that size,
// when the units are loaded together.
func (e *Exports) earlier(unit int, size int64) []chan struct{} {
	if e.passed == nil {
		return nil
	}
	var out []chan struct{}
	for _, v := range e.holders[size] {
		if v < unit {
			out = append(out, e.passed[v])
		}
	}
	return out
}

// archiveSizes adds to sizes those of the members of the archive at p, of
// minSharedExport bytes or more, when they are known without decompressing
// it: from a zip archive's directory, or from the manifest.json that
// collect writes first in its archives (the size of each file of the
// bundle). isArchive says p is an archive, known that its sizes were
// added.
func archiveSizes(p string, sizes map[int64]bool) (isArchive, known bool) {
	f, err := os.Open(p)
	if err != nil {
		return false, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return false, false
	}
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	format := archiveFormat(head)
	var r io.Reader = bufio.NewReaderSize(io.NewSectionReader(f, 0, st.Size()), 64<<10)
	switch format {
	case "":
		return false, false
	case formatZip:
		zr, err := zip.NewReader(f, st.Size())
		if err != nil {
			return true, false
		}
		for _, zf := range zr.File {
			if s := int64(zf.UncompressedSize64); s >= minSharedExport && zf.UncompressedSize64 < 1<<62 {
				sizes[s] = true
			}
		}
		return true, true
	case formatGzip:
		zr, err := gzip.NewReader(r)
		if err != nil {
			return true, false
		}
		zr.Multistream(false)
		r = zr
	case formatXZ:
		if dict, ok := xzDictSize(head); !ok || dict > maxXZDict {
			return true, false
		}
		xr, err := xz.ReaderConfig{SingleStream: true}.NewReader(r)
		if err != nil {
			return true, false
		}
		r = xr
	case formatTar:
	default:
		return true, false
	}
	m := firstManifest(tar.NewReader(r))
	if m == nil {
		return true, false
	}
	for _, src := range m.Sources {
		if src.File != "" && src.Bytes >= minSharedExport {
			sizes[src.Bytes] = true
		}
	}
	return true, true
}

// firstManifest returns the manifest that is the first file of a bundle
// archive (under its top directory or none), or nil.
func firstManifest(tr *tar.Reader) *manifest.Manifest {
	for {
		h, err := tr.Next()
		if err != nil {
			return nil
		}
		if h.Typeflag == tar.TypeDir || h.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		clean, err := entryName(h.Name)
		if err != nil || h.Typeflag != tar.TypeReg || h.Size > 1<<20 || path.Base(clean) != "manifest.json" || strings.Count(clean, "/") > 1 {
			return nil
		}
		data, err := io.ReadAll(io.LimitReader(tr, h.Size))
		if err != nil {
			return nil
		}
		m, err := manifest.Parse(clean, data)
		if err != nil {
			return nil
		}
		return m
	}
}

// until returns the last unit that may hold a file of size, and whether
// it is after unit.
func (e *Exports) until(size int64, unit int) (int, bool) {
	until, ok := e.last[size]
	if !ok || e.lastArchive > until {
		until = e.lastArchive
	}
	return until, until > unit
}

// unitFileSizes adds the sizes of the regular files at or below p, of
// minSharedExport bytes or more, to sizes.
func unitFileSizes(p string, sizes map[int64]bool) {
	WalkFiles(p, func(_ string, info fs.FileInfo) {
		if info.Size() >= minSharedExport {
			sizes[info.Size()] = true
		}
	})
}

// WalkFiles calls fn with each regular file at or below p, hidden ones
// aside as the loader reads them; what cannot be read is passed over (the
// loader says what is wrong with it).
func WalkFiles(p string, fn func(path string, info fs.FileInfo)) {
	_ = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return nil
		case d.IsDir() && q != p && strings.HasPrefix(d.Name(), "."):
			return filepath.SkipDir
		case d.IsDir() || strings.HasPrefix(d.Name(), ".") && q != p:
			return nil
		}
		if info, err := d.Info(); err == nil && info.Mode().IsRegular() {
			fn(q, info)
		}
		return nil
	})
}

// Of returns the memory as unit i of the run (in the order of the units
// given to NewExports) sees it, for [Options.Exports]; nil when e is nil.
func (e *Exports) Of(i int) *UnitExports {
	if e == nil {
		return nil
	}
	return &UnitExports{e: e, unit: i}
}

// UnitExports is [Exports] as one unit sees it.
type UnitExports struct {
	e    *Exports
	unit int
}

// decoded says that the unit's exports are decoded (or will not be): the
// units loaded together with it that wait for them go on.
func (u *UnitExports) decoded() {
	if u == nil || u.unit >= len(u.e.passed) {
		return
	}
	u.e.passedOnce[u.unit].Do(func() { close(u.e.passed[u.unit]) })
}

// decode decodes an export on disk read as a stream (see streamKube), or
// gives the objects held when the file is theirs byte for byte; sum is
// then the file's hex SHA-256 (and when it was hashed as it was decoded),
// and compacted the trimmed copies of the objects' Services, which the
// objects are shared with other units.
func (u *UnitExports) decode(f *file, ko kube.Options, compact bool) (value any, size int64, sum string, compacted map[*kube.Service]*kube.Service, err error) {
	if u == nil || f.size < minSharedExport {
		value, size, err = streamKube(f, ko, nil)
		return value, size, "", nil, err
	}
	e := u.e
	// Loaded together, a unit hashes its file while the earlier units
	// that may hold it decode theirs.
	var own string
	var ownErr error
	if waits := e.earlier(u.unit, f.size); len(waits) > 0 {
		g := fault.Group{Name: "load.exports"}
		g.Go(func() error { own, ownErr = fileSum(f.path); return nil })
		for _, c := range waits {
			<-c
		}
		if err := g.Wait(); err != nil {
			return nil, 0, "", nil, err
		}
		if ownErr != nil {
			own = ""
		}
	}
	e.mu.Lock()
	h := e.held
	until, repeats := e.until(f.size, u.unit)
	e.mu.Unlock()
	if h != nil && h.name == f.name && h.strict == f.strict && h.size == f.size {
		s, err := own, ownErr
		if s == "" && err == nil {
			s, err = fileSum(f.path)
		}
		if err == nil && s == h.sum {
			return h.value, h.size, s, h.compacted, nil
		}
	}
	if !repeats {
		value, size, err = streamKube(f, ko, nil)
		return value, size, "", nil, err
	}
	hash := sha256.New()
	value, size, err = streamKube(f, ko, hash)
	objs, ok := value.(*kube.Objects)
	if err != nil || !ok || objs == nil || size != f.size {
		return value, size, "", nil, err
	}
	sum = hex.EncodeToString(hash.Sum(nil))
	compacted = u.hold(f.name, f.strict, size, sum, objs, compact, until)
	return objs, size, sum, compacted, nil
}

// hold keeps objs, decoded from a file of the unit named name, for the
// units up to until; it returns the trimmed copies of their Services
// when compact.
func (u *UnitExports) hold(name string, strict bool, size int64, sum string, objs *kube.Objects, compact bool, until int) map[*kube.Service]*kube.Service {
	var compacted map[*kube.Service]*kube.Service
	if compact {
		compacted = trimmedCopies(objs.Services, map[*kube.Service]*kube.Service{})
	}
	u.e.mu.Lock()
	u.e.held = &heldExport{name: name, strict: strict, size: size, sum: sum, value: objs, compacted: compacted, until: until}
	u.e.mu.Unlock()
	return compacted
}

// candidate returns the export held when an archive member, named clean
// in its archive, of size bytes, may be it byte for byte: its name in the
// bundle is not known yet (the archive's top directory is dropped once
// every member is read), nor its SHA-256. Such a member is read through
// rather than decoded, and told the held export's or decoded after all
// once its name and sum are known (see archived).
func (u *UnitExports) candidate(clean string, size int64) *heldExport {
	if u == nil || size < minSharedExport {
		return nil
	}
	u.e.mu.Lock()
	h := u.e.held
	u.e.mu.Unlock()
	if h == nil || h.size != size || clean != h.name && !strings.HasSuffix(clean, "/"+h.name) {
		return nil
	}
	return h
}

// archived returns what the Kubernetes export of an archive, read as the
// archive was (see archiveExport), decodes to: the held export's objects
// when the member is it byte for byte, with the trimmed copies of their
// Services; the member decoded otherwise, kept when a later unit may hold
// it.
func (u *UnitExports) archived(f *file, compact bool) (value any, compacted map[*kube.Service]*kube.Service, err error) {
	p := f.parsed
	if u == nil {
		value, err = f.result()
		return value, nil, err
	}
	if h := p.shared; h != nil {
		if h.name == f.name && h.strict == f.strict && h.size == f.size && h.sum == f.sum {
			return h.value, h.compacted, nil
		}
		// Read through on a guess that did not hold: decoded now, from
		// the archive read again.
		p.shared = nil
		if p.value, p.err, err = p.reread(); err != nil {
			return nil, nil, err
		}
		p.reread = nil
	}
	value, err = f.result()
	if u == nil || err != nil || p.value == nil || f.size < minSharedExport {
		return value, nil, err
	}
	u.e.mu.Lock()
	until, repeats := u.e.until(f.size, u.unit)
	u.e.mu.Unlock()
	if !repeats {
		return value, nil, nil
	}
	return p.value, u.hold(f.name, f.strict, f.size, f.sum, p.value, compact, until), nil
}

// loaded drops the export held once the last unit that may hold it is
// loaded.
func (u *UnitExports) loaded() {
	if u == nil {
		return
	}
	u.e.mu.Lock()
	if h := u.e.held; h != nil && h.until <= u.unit {
		u.e.held = nil
	}
	u.e.mu.Unlock()
}
