package load

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"

	"github.com/proxyscan/proxyscan/parsers/kube"
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
	held *heldExport
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
// units hold files on disk of one size, large enough to share.
func NewExports(units [][]string) *Exports {
	last := map[int64]int{}
	count := map[int64]int{}
	for i, u := range units {
		sizes := map[int64]bool{}
		for _, p := range u {
			unitFileSizes(p, sizes)
		}
		for s := range sizes {
			last[s] = i
			count[s]++
		}
	}
	for s, n := range count {
		if n < 2 {
			delete(last, s)
		}
	}
	if len(last) == 0 {
		return nil
	}
	return &Exports{last: last}
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
	e.mu.Lock()
	h := e.held
	until, repeats := e.last[f.size]
	repeats = repeats && until > u.unit
	e.mu.Unlock()
	if h != nil && h.name == f.name && h.strict == f.strict && h.size == f.size {
		if s, err := fileSum(f.path); err == nil && s == h.sum {
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
	if compact {
		compacted = map[*kube.Service]*kube.Service{}
		for _, svc := range objs.Services {
			c := *svc
			compactService(&c)
			compacted[svc] = &c
		}
	}
	e.mu.Lock()
	e.held = &heldExport{name: f.name, strict: f.strict, size: size, sum: sum, value: objs, compacted: compacted, until: until}
	e.mu.Unlock()
	return objs, size, sum, compacted, nil
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
