package iptables

import "math/bits"

// A chainIndex finds a table's chains by name, as its dump is parsed (the
// parser adds each chain as it makes it) and afterwards, in the room of a
// few bytes per chain (a large nat table has tens of
// thousands of chains, which a map keeps in about 50 bytes each): an
// open-addressing table of 1 + the chains' places in Table.Chains (0 for
// an empty slot), its size a power of two at least half again their
// number. The bits of a slot above the place hold the top bits of its
// chain's hash (its tag), so that a probe of another chain's slot is
// mostly told apart without reading that chain's name: a lookup then
// reads about one chain, not the two or three its probes meet.
// The hash is FNV-1a, fixed: two parses of one dump are alike.
type chainIndex struct {
	slots []uint32
	shift uint8 // the bits of a slot that hold the place
	// room is the number of chains the index holds at most: its slots
	// and the bits of a place are sized for it.
	room int
}

// hashName returns the FNV-1a hash of name.
func hashName(name string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	return h
}

// indexWithRoom indexes chains, whose names differ, in an index with room
// for room chains (at least len(chains)), which [chainIndex.put] fills.
func indexWithRoom(chains []*Chain, room int) *chainIndex {
	room = max(room, len(chains))
	n := 8
	for n < room+room/2 {
		n *= 2
	}
	ix := &chainIndex{slots: make([]uint32, n), shift: uint8(bits.Len(uint(room))), room: room}
	for i, c := range chains {
		ix.put(c.Name, i)
	}
	return ix
}

// put indexes the chain called name at place i of the chains indexed; the
// index holds no chain of that name, and has room for place i.
func (ix *chainIndex) put(name string, i int) {
	mask := uint64(len(ix.slots) - 1)
	hash := hashName(name)
	h := hash & mask
	for ix.slots[h] != 0 {
		h = (h + 1) & mask
	}
	ix.slots[h] = ix.tag(hash) | uint32(i+1)
}

// tag returns the bits of a slot above the place for a chain of the given
// hash: its top bits (none when the places take every bit).
func (ix *chainIndex) tag(hash uint64) uint32 {
	if ix.shift >= 32 {
		return 0
	}
	return uint32(hash>>(32+ix.shift)) << ix.shift
}

// find returns the chain of chains (those indexed) called name, or nil.
func (ix *chainIndex) find(chains []*Chain, name string) *Chain {
	mask := uint64(len(ix.slots) - 1)
	hash := hashName(name)
	tag := ix.tag(hash)
	place := uint32(1)<<ix.shift - 1
	if ix.shift >= 32 {
		place = ^uint32(0)
	}
	for h := hash & mask; ix.slots[h] != 0; h = (h + 1) & mask {
		s := ix.slots[h]
		if s&^place != tag {
			continue
		}
		if c := chains[s&place-1]; c.Name == name {
			return c
		}
	}
	return nil
}

// addChain indexes c, the last of the table's Chains, which holds no
// other chain of its name: in the index the table has (see Table.Chain),
// made again with twice the room when it is full.
func (t *Table) addChain(c *Chain) {
	i := len(t.Chains) - 1
	if t.index == nil || i >= t.index.room {
		t.index = indexWithRoom(t.Chains, 2*len(t.Chains))
		return
	}
	t.index.put(c.Name, i)
}

// reindexChains indexes the table's chains again, once their places in
// Chains moved (a chain deleted).
func (t *Table) reindexChains() {
	room := len(t.Chains)
	if t.index != nil {
		room = t.index.room
	}
	t.index = indexWithRoom(t.Chains, room)
}
