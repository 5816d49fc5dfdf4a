package checks

import (
	"encoding/binary"
	"hash/maphash"
	"slices"
	"sort"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/view"
	"github.com/proxyscan/proxyscan/parsers"
)

// shared holds what the prints of nodes that agree keep once beyond their
// service ports: the lines of a port's evidence, a node's whole list of
// ports and of lines, its configuration and its views' anchors. A fleet of
// nodes alike then takes, per node, little more than its name. Its maps are
// keyed by a hash of the value, with the values of that hash listed.
type shared struct {
	lines     map[uint64][][]int32
	lineLists map[uint64][][][]int32
	portLists map[uint64][][]*portPrint
	// fields holds, per set of configuration fields, the values of the
	// first node that had them.
	fields    map[string]map[string]string
	positions map[string]map[string]parsers.Pos
	anchors   map[string]map[view.Kind]model.Evidence
	// key is the encoding of the map being interned.
	key []byte
}

// lines returns the stored lines equal to l, storing a copy when there
// are none, and their hash.
func (ps *Prints) lines(l []int32) ([]int32, uint64) {
	h := hashLines(ps.seed, l)
	for _, x := range ps.shared.lines[h] {
		if slices.Equal(x, l) {
			return x, h
		}
	}
	c := slices.Clone(l)
	if c == nil {
		c = []int32{}
	}
	ps.shared.lines[h] = append(ps.shared.lines[h], c)
	return c, h
}

// lineList returns the stored list of lines equal to lines, whose lines
// are stored ones (see [Prints.lines]) of those hashes, storing it when
// there is none.
func (ps *Prints) lineList(lines [][]int32, hashes []uint64) [][]int32 {
	var all maphash.Hash
	all.SetSeed(ps.seed)
	var b [8]byte
	for _, h := range hashes {
		binary.LittleEndian.PutUint64(b[:], h)
		all.Write(b[:])
	}
	return internIn(ps.shared.lineLists, all.Sum64(), lines, func(a, b [][]int32) bool { return slices.EqualFunc(a, b, slices.Equal[[]int32]) })
}

// portList returns the stored list of service ports equal to ports, whose
// prints are stored ones, storing it when there is none.
func (ps *Prints) portList(ports []*portPrint) []*portPrint {
	var h maphash.Hash
	h.SetSeed(ps.seed)
	for _, pp := range ports {
		maphash.WriteComparable(&h, pp)
	}
	return internIn(ps.shared.portLists, h.Sum64(), ports, slices.Equal[[]*portPrint])
}

func hashLines(seed maphash.Seed, l []int32) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	var b [4]byte
	for _, x := range l {
		binary.LittleEndian.PutUint32(b[:], uint32(x))
		h.Write(b[:])
	}
	return h.Sum64()
}

// internIn returns the value of m under h equal to v, adding v when there
// is none.
func internIn[T any](m map[uint64][]T, h uint64, v T, equal func(a, b T) bool) T {
	for _, x := range m[h] {
		if equal(x, v) {
			return x
		}
	}
	m[h] = append(m[h], v)
	return v
}

// internMap returns the stored map equal to m (by its encoding with enc,
// in the order of its sorted keys), storing m when there is none. A nil
// map stays nil.
func internMap[K ~string, V any](ps *Prints, store map[string]map[K]V, m map[K]V, enc func(b []byte, v V) []byte) map[K]V {
	if m == nil {
		return nil
	}
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool { return keys[a] < keys[b] })
	b := ps.shared.key[:0]
	for _, k := range keys {
		b = enc(encodeStr(b, string(k)), m[k])
	}
	ps.shared.key = b
	if x, ok := store[string(b)]; ok {
		return x
	}
	store[string(b)] = m
	return m
}

// encodeStr appends a string with its length.
func encodeStr(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// encodePos appends every field of a position.
func encodePos(b []byte, p parsers.Pos) []byte {
	return encodeStr(binary.AppendVarint(encodeStr(b, p.File), int64(p.Line)), p.Path)
}

// encodeEvidence appends every field of an evidence.
func encodeEvidence(b []byte, e model.Evidence) []byte {
	return encodeStr(encodePos(b, parsers.Pos{File: e.File, Line: e.Line, Path: e.Path}), e.Text)
}

// statusLists keeps each list of check statuses once: nodes alike have the
// same, their reasons and notes written alike.
type statusLists struct {
	lists map[string][]Status
	key   []byte
}

// intern returns the stored list equal to list, storing list when there
// is none. A caller must not change a list it gave or got.
func (sl *statusLists) intern(list []Status) []Status {
	if sl.lists == nil {
		sl.lists = map[string][]Status{}
	}
	b := binary.AppendUvarint(sl.key[:0], uint64(len(list)))
	for _, st := range list {
		b = encodeStr(encodeStr(encodeStr(b, st.ID), st.State), st.Reason)
		b = binary.AppendVarint(b, int64(st.Findings))
		b = binary.AppendUvarint(b, uint64(len(st.Notes)))
		for _, n := range st.Notes {
			b = encodeStr(b, n)
		}
		if st.NotApplicable {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	sl.key = b
	if x, ok := sl.lists[string(b)]; ok {
		return x
	}
	sl.lists[string(b)] = list
	return list
}

// configValues returns the values of a node's configuration as a map
// shared with the first node of the same fields, and those of its values
// that differ from that node's (nil when none do). When most differ, the
// node's own map is returned.
func (ps *Prints) configValues(vals map[string]string) (shared, own map[string]string) {
	if vals == nil {
		return nil, nil
	}
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b := ps.shared.key[:0]
	for _, k := range keys {
		b = encodeStr(b, k)
	}
	ps.shared.key = b
	base, ok := ps.shared.fields[string(b)]
	if !ok {
		ps.shared.fields[string(b)] = vals
		return vals, nil
	}
	for _, k := range keys {
		if v := vals[k]; v != base[k] {
			if own == nil {
				own = map[string]string{}
			}
			own[k] = v
		}
	}
	if 2*len(own) > len(vals) {
		return vals, nil
	}
	return base, own
}
