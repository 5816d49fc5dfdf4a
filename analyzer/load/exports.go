package load

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/kube"
	"github.com/proxyscan/proxyscan/parsers/manifest"
)

// Exports lets the units of a run (see [Units] and [Plan]), loaded one
// after another, share the decoding of a Kubernetes export that several
// of them hold byte for byte: a cluster exported once and copied into
// every node's bundle, or exported on each node while the cluster did not
// change. A unit's export on disk whose name in its bundle, size and
// SHA-256 are those of the export held (for units loaded together, whose
// bytes are those of the file held: see [Exports.Together]) is given the
// objects decoded from it rather than decoded again: decoding is a
// function of the name and the bytes, so that the unit's snapshot is the
// one of decoding its own file, its positions naming its own file in its
// own bundle.
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
	// archives are the units that are bundle archives, whose members are
	// told the export held by its SHA-256 (see UnitExports.archived).
	archives map[int]bool
	// together, set by Together, is what each unit tells the units
	// loaded with it.
	together []*togetherUnit
	// oneFile maps the sizes in last whose files are all one file on disk
	// (hard links, or one path given twice: see sameFile) to it, as it
	// was when the units were listed.
	oneFile map[int64]fs.FileInfo
}

// togetherUnit is what a unit loaded together with others tells them
// (see [Exports.Together]).
type togetherUnit struct {
	// listed are the exports on disk of the unit that a later unit may
	// hold (a file of their size), once listedCh is closed.
	listed   []*listedExport
	listedCh chan struct{}
	// alike maps the path of each export on disk of the unit that is an
	// earlier unit's listed export byte for byte to it; set (under
	// Exports.mu) before compared is closed.
	alike    map[string]alikeExport
	compared chan struct{}
	// passed is closed once the unit's exports are decoded.
	passed                               chan struct{}
	listedOnce, comparedOnce, passedOnce sync.Once
	// loaded is set (under Exports.mu) once the unit is loaded.
	loaded bool
}

// listedExport is an export on disk of a unit loaded together with
// others, listed for the later units to compare theirs with.
type listedExport struct {
	unit       int
	path, name string
	strict     bool
	size       int64
}

// alikeExport is an earlier unit's export that a unit's own is byte for
// byte: from, and the two files as they were when compared.
type alikeExport struct {
	from              *listedExport
	fromInfo, ownInfo fs.FileInfo
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
	// unit and path are the unit that decoded it and its file on disk
	// ("" for an archive's member).
	unit int
	path string
	// draft is the service ports of value, drafted once for the units
	// given it (see UnitExports.draft), nil until the first asks.
	draft *model.PortsDraft
	// until is the last unit that may hold it.
	until int
	// info is the file decoded, as it was before it was read (nil when
	// not known): a unit's file that is the same file on disk, unchanged,
	// is the export held without hashing it.
	info fs.FileInfo
}

// sameFile reports whether a and b are one file on disk, unchanged
// between the two: the same device and inode, size and time of
// modification.
func sameFile(a, b fs.FileInfo) bool {
	return a != nil && b != nil && os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
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
	isArchive := map[int]bool{}
	// files holds, per size, the file of that size when every file on
	// disk of it is that one (nil once two differ).
	files := map[int64]fs.FileInfo{}
	for i, u := range units {
		sizes := map[int64]bool{}
		archive := false
		for _, p := range u {
			if archived, known := archiveSizes(p, sizes); archived && !known {
				archive = true
				isArchive[i] = true
			} else if !archived {
				unitFileSizes(p, sizes, files)
			} else {
				isArchive[i] = true
				// The members of an archive are no file on disk.
				for s := range sizes {
					files[s] = nil
				}
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
	oneFile := map[int64]fs.FileInfo{}
	for s := range last {
		if fi := files[s]; fi != nil && archives == 0 {
			oneFile[s] = fi
		}
	}
	return &Exports{last: last, lastArchive: lastArchive, holders: holders, archives: isArchive, oneFile: oneFile}
}

// Together says that the units are loaded at once rather than one after
// another (the two sides of a diff), each by one call of [Load] with its
// [UnitExports]. A unit lists, as it starts parsing, its exports on disk
// that a later unit's directory holds a file of the size of; a later unit
// compares, beside its other files' parsing, each of its own exports of
// such a size with the earlier units' listed ones of its name in its
// bundle and strictness, byte for byte up to the first difference (one
// file on disk is not read). An export alike waits until that unit's
// exports are decoded and takes their objects; one that differs is
// decoded at once, and the earlier unit does not keep its own for it
// (nor hashes either: two exports of a node before and after a change
// most often differ early, and are told apart by reading a little of
// each). An archive's members are not waited for: their sizes are known
// only once it is read; the export a later bundle archive may hold (see
// [UnitExports.archived]) is hashed as it is decoded. Without Together, a
// unit decodes its export when the export held is not yet decoded.
// Together does nothing on a nil Exports, and is to be called before the
// units load.
func (e *Exports) Together() {
	if e == nil {
		return
	}
	units := 0
	for _, us := range e.holders {
		units = max(units, us[len(us)-1]+1)
	}
	e.together = make([]*togetherUnit, units)
	for i := range e.together {
		e.together[i] = &togetherUnit{listedCh: make(chan struct{}), compared: make(chan struct{}), passed: make(chan struct{})}
	}
}

// laterHolds reports whether a unit after unit holds a file of size.
func (e *Exports) laterHolds(unit int, size int64) bool {
	us := e.holders[size]
	return len(us) > 0 && us[len(us)-1] > unit
}

// earlierHolds reports whether a unit before unit holds a file of size.
func (e *Exports) earlierHolds(unit int, size int64) bool {
	us := e.holders[size]
	return len(us) > 0 && us[0] < unit
}

// laterArchive reports whether a bundle archive after unit holds a file
// of size (its manifest or directory says so).
func (e *Exports) laterArchive(unit int, size int64) bool {
	for _, v := range e.holders[size] {
		if v > unit && e.archives[v] {
			return true
		}
	}
	return false
}

// listAhead, for a unit loaded together with others, lists the exports of
// files (those listed in kube, which it decodes as a stream) that a later
// unit may hold, and starts comparing, beside its decoding, those that an
// earlier unit may hold with that unit's listed exports (see
// [Exports.Together]).
func (u *UnitExports) listAhead(files []file, kube []int) {
	if u == nil || u.unit >= len(u.e.together) {
		return
	}
	e, t := u.e, u.e.together[u.unit]
	var mine, theirs []*listedExport
	for _, i := range kube {
		f := &files[i]
		if !streamed(f) || f.size < minSharedExport {
			continue
		}
		x := &listedExport{unit: u.unit, path: f.path, name: f.name, strict: f.strict, size: f.size}
		if e.laterHolds(u.unit, f.size) {
			mine = append(mine, x)
		}
		if e.earlierHolds(u.unit, f.size) {
			theirs = append(theirs, x)
		}
	}
	t.listed = mine
	t.listedOnce.Do(func() { close(t.listedCh) })
	if len(theirs) == 0 {
		t.comparedOnce.Do(func() { close(t.compared) })
		return
	}
	go func() {
		defer t.comparedOnce.Do(func() { close(t.compared) })
		alike := map[string]alikeExport{}
		for _, x := range theirs {
			if a, ok := e.alikeEarlier(x); ok {
				alike[x.path] = a
			}
		}
		e.mu.Lock()
		t.alike = alike
		e.mu.Unlock()
	}()
}

// alikeEarlier returns the first export listed by a unit before x's that
// x is byte for byte, of its name, strictness and size, waiting for
// those units' lists.
func (e *Exports) alikeEarlier(x *listedExport) (alikeExport, bool) {
	for _, v := range e.holders[x.size] {
		if v >= x.unit {
			break
		}
		w := e.together[v]
		<-w.listedCh
		for _, y := range w.listed {
			if y.name != x.name || y.strict != x.strict || y.size != x.size {
				continue
			}
			if same, yi, xi := sameBytes(y.path, x.path); same {
				return alikeExport{from: y, fromInfo: yi, ownInfo: xi}, true
			}
		}
	}
	return alikeExport{}, false
}

// compares counts the pairs of files compared byte for byte, and holds
// the exports held for later units (tests read them).
var compares, holds atomic.Int64

// sameBytes reports whether the files at a and b hold the same bytes,
// reading them side by side up to the first difference, and returns them
// as they were when compared: a file that changed meanwhile is not the
// other. One file on disk is not read.
func sameBytes(a, b string) (same bool, ai, bi fs.FileInfo) {
	fa, err := os.Open(a)
	if err != nil {
		return false, nil, nil
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return false, nil, nil
	}
	defer fb.Close()
	if ai, err = fa.Stat(); err != nil {
		return false, nil, nil
	}
	if bi, err = fb.Stat(); err != nil || ai.Size() != bi.Size() {
		return false, nil, nil
	}
	if sameFile(ai, bi) {
		return true, ai, bi
	}
	compares.Add(1)
	const chunk = 256 << 10
	buf := make([]byte, 2*chunk)
	ba, bb := buf[:chunk], buf[chunk:]
	for {
		na, errA := io.ReadFull(fa, ba)
		nb, errB := io.ReadFull(fb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false, nil, nil
		}
		endA, endB := errA == io.EOF || errA == io.ErrUnexpectedEOF, errB == io.EOF || errB == io.ErrUnexpectedEOF
		if endA && endB {
			break
		}
		if errA != nil || errB != nil {
			return false, nil, nil
		}
	}
	// Changed as they were read: the bytes compared are no file's.
	if after, err := os.Stat(a); err != nil || !sameFile(ai, after) {
		return false, nil, nil
	}
	if after, err := os.Stat(b); err != nil || !sameFile(bi, after) {
		return false, nil, nil
	}
	return true, ai, bi
}

// alike returns, for a unit loaded together with others, the earlier
// unit's export that its file f is byte for byte (see listAhead), once
// its comparisons are done; ok is false when there is none (or the units
// are not loaded together).
func (u *UnitExports) alike(f *file) (a alikeExport, ok bool) {
	e := u.e
	if u.unit >= len(e.together) || !e.earlierHolds(u.unit, f.size) {
		return alikeExport{}, false
	}
	t := e.together[u.unit]
	<-t.compared
	e.mu.Lock()
	a, ok = t.alike[f.path]
	e.mu.Unlock()
	return a, ok
}

// takenLater reports, for a unit loaded together with others, whether a
// later unit may take its export on disk at p, of size bytes: one that
// has not yet compared its own exports with it, or found one alike, or a
// bundle archive.
func (u *UnitExports) takenLater(p string, size int64) bool {
	e := u.e
	for _, v := range e.holders[size] {
		if v <= u.unit {
			continue
		}
		if e.archives[v] || v >= len(e.together) {
			return true
		}
		t := e.together[v]
		select {
		case <-t.compared:
		default:
			return true
		}
		e.mu.Lock()
		taken := false
		for _, a := range t.alike {
			taken = taken || a.from.unit == u.unit && a.from.path == p
		}
		e.mu.Unlock()
		if taken {
			return true
		}
	}
	return false
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
	case formatGzip, formatXZ, formatBzip2, formatZstd:
		zr, err := openStream(format, head, r)
		if err != nil {
			return true, false
		}
		r = zr
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
// minSharedExport bytes or more, to sizes; files maps each size to its
// file while every file of it seen is that one, to nil once two differ.
func unitFileSizes(p string, sizes map[int64]bool, files map[int64]fs.FileInfo) {
	WalkFiles(p, func(_ string, info fs.FileInfo) {
		s := info.Size()
		if s < minSharedExport {
			return
		}
		sizes[s] = true
		if fi, seen := files[s]; !seen {
			files[s] = info
		} else if !sameFile(fi, info) {
			files[s] = nil
		}
	})
}

// WalkFiles calls fn with each regular file at or below p, hidden ones
// aside and through symbolic links, as the loader reads them (see
// walkTree); what cannot be read is passed over (the loader says what is
// wrong with it).
func WalkFiles(p string, fn func(path string, info fs.FileInfo)) {
	if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
		fn(p, st)
		return
	}
	_ = walkTree(p, func(q string, t treeFile) error {
		if t.info != nil {
			fn(q, t.info)
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
	if u == nil || u.unit >= len(u.e.together) {
		return
	}
	t := u.e.together[u.unit]
	t.listedOnce.Do(func() { close(t.listedCh) })
	t.comparedOnce.Do(func() { close(t.compared) })
	t.passedOnce.Do(func() { close(t.passed) })
}

// decode decodes an export on disk read as a stream (see streamKube), or
// gives the objects held when the file is theirs byte for byte; sum is
// then the file's hex SHA-256 when it is known (it was hashed as it was
// decoded, or to be told the held export's), and compacted the trimmed copies of the objects' Services, which the
// objects are shared with other units.
func (u *UnitExports) decode(f *file, ko kube.Options, compact bool) (value any, size int64, sum string, compacted map[*kube.Service]*kube.Service, err error) {
	if u == nil || f.size < minSharedExport {
		value, size, err = streamKube(f, ko, nil)
		return value, size, "", nil, err
	}
	e := u.e
	// Loaded together, a unit waits for an earlier unit's export alike
	// its own to be decoded.
	a, alike := u.alike(f)
	if alike {
		<-e.together[a.from.unit].passed
	}
	together := u.unit < len(e.together)
	e.mu.Lock()
	h := e.held
	until, repeats := e.until(f.size, u.unit)
	one := e.oneFile[f.size]
	e.mu.Unlock()
	// The file as it is before it is read: when it is the file of the
	// export held, unchanged, it is that export without hashing it.
	info, _ := os.Stat(f.path)
	if h != nil && h.name == f.name && h.strict == f.strict && h.size == f.size {
		if sameFile(h.info, info) {
			return h.value, h.size, h.sum, h.compacted, nil
		}
		// Loaded together, the file was compared with the earlier
		// units' exports on disk: the export held is the one it is
		// alike, unchanged since it was decoded and compared.
		if alike && h.unit == a.from.unit && h.path == a.from.path && sameFile(h.info, a.fromInfo) && sameFile(a.ownInfo, info) {
			return h.value, h.size, h.sum, h.compacted, nil
		}
		if h.sum != "" && (!together || h.path == "") {
			if s, err := fileSum(f.path); err == nil && s == h.sum {
				return h.value, h.size, s, h.compacted, nil
			}
		}
	}
	if !repeats {
		value, size, err = streamKube(f, ko, nil)
		return value, size, "", nil, err
	}
	// Loaded one after another, a unit hashes its file as it decodes it,
	// but when every file of its size in the run is this one: the units
	// after it tell theirs is the export held without its sum. Loaded
	// together, it does for a later bundle archive only (the later units'
	// files on disk were compared with it).
	var tee hash.Hash
	if !together && !sameFile(one, info) || together && e.laterArchive(u.unit, f.size) {
		tee = sha256.New()
		hashes.Add(1)
	}
	value, size, err = streamKube(f, ko, tee)
	objs, ok := value.(*kube.Objects)
	if err != nil || !ok || objs == nil || size != f.size {
		return value, size, "", nil, err
	}
	if tee != nil {
		sum = hex.EncodeToString(tee.Sum(nil))
	}
	if after, err := os.Stat(f.path); err != nil || !sameFile(info, after) {
		// Changed as it was read: it is no file a later unit can be
		// told is the same.
		info = nil
		if sum == "" {
			return objs, size, "", nil, nil
		}
	}
	if together && sum == "" && !u.takenLater(f.path, f.size) {
		// No later unit takes it: every one's export of its size
		// differs.
		return objs, size, "", nil, nil
	}
	compacted = u.holdFrom(f.name, f.path, f.strict, size, sum, info, objs, compact, until)
	return objs, size, sum, compacted, nil
}

// hold keeps objs, decoded from a file of the unit named name, for the
// units up to until; it returns the trimmed copies of their Services
// when compact.
func (u *UnitExports) hold(name string, strict bool, size int64, sum string, info fs.FileInfo, objs *kube.Objects, compact bool, until int) map[*kube.Service]*kube.Service {
	return u.holdFrom(name, "", strict, size, sum, info, objs, compact, until)
}

// holdFrom is hold of an export decoded from the file on disk at p ("" for
// an archive's member).
func (u *UnitExports) holdFrom(name, p string, strict bool, size int64, sum string, info fs.FileInfo, objs *kube.Objects, compact bool, until int) map[*kube.Service]*kube.Service {
	var compacted map[*kube.Service]*kube.Service
	if compact {
		compacted = trimmedCopies(objs.Services, map[*kube.Service]*kube.Service{})
	}
	u.e.mu.Lock()
	if !u.e.allLoaded(u.unit, until) {
		u.e.held = &heldExport{name: name, strict: strict, size: size, sum: sum, info: info, value: objs, compacted: compacted, until: until, unit: u.unit, path: p}
		holds.Add(1)
	}
	u.e.mu.Unlock()
	return compacted
}

// allLoaded reports whether the units after unit, up to until, are all
// loaded already: units loaded together may be done before an earlier
// one's export is decoded (theirs differed). Called with mu held.
func (e *Exports) allLoaded(unit, until int) bool {
	if e.together == nil {
		return false
	}
	for v := unit + 1; v <= until; v++ {
		if v >= len(e.together) || !e.together[v].loaded {
			return false
		}
	}
	return true
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
	return p.value, u.hold(f.name, f.strict, f.size, f.sum, nil, p.value, compact, until), nil
}

// draft returns the draft of the service ports of objs, decoded from one
// of the unit's exports: when they are the objects of the export held,
// which the units alike share, a share of its draft, built once for them
// all (see model.PortsDraft.Share); otherwise a draft of the unit's own.
// Either is built on one core, beside the rest of the unit's files.
func (u *UnitExports) draft(objs *kube.Objects) *model.PortsDraft {
	if u == nil {
		return draftPorts(objs)
	}
	u.e.mu.Lock()
	defer u.e.mu.Unlock()
	h := u.e.held
	if h == nil || h.value != objs {
		return draftPorts(objs)
	}
	if h.draft == nil {
		h.draft = draftPorts(objs)
	}
	return h.draft.Share()
}

// portDrafts counts the drafts of service ports started (tests read it).
var portDrafts atomic.Int64

// draftPorts starts a draft of the service ports of objs on one core (see
// model.DraftPortsAhead).
func draftPorts(objs *kube.Objects) *model.PortsDraft {
	portDrafts.Add(1)
	return model.DraftPortsAhead(objs)
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
	if u.unit < len(u.e.together) {
		u.e.together[u.unit].loaded = true
	}
	u.e.mu.Unlock()
}
