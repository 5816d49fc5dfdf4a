package iptables

// A chainIndex finds a table's chains by name once its dump is parsed, in
// the room of a few bytes per chain (a large nat table has tens of
// thousands of chains, which a map keeps in about 50 bytes each): an
// open-addressing table of 1 + the chains' places in Table.Chains (0 for
// an empty slot), its size a power of two at least half again their
// number.
// The hash is FNV-1a, fixed: two parses of one dump are alike.
type chainIndex struct {
	slots []int32
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

// newChainIndex indexes chains, whose names differ.
func newChainIndex(chains []*Chain) *chainIndex {
	n := 8
	for n < len(chains)+len(chains)/2 {
		n *= 2
	}
	ix := &chainIndex{slots: make([]int32, n)}
	mask := uint64(n - 1)
	for i, c := range chains {
		h := hashName(c.Name) & mask
		for ix.slots[h] != 0 {
			h = (h + 1) & mask
		}
		ix.slots[h] = int32(i + 1)
	}
	return ix
}

// find returns the chain of chains (those indexed) called name, or nil.
func (ix *chainIndex) find(chains []*Chain, name string) *Chain {
	mask := uint64(len(ix.slots) - 1)
	for h := hashName(name) & mask; ix.slots[h] != 0; h = (h + 1) & mask {
		if c := chains[ix.slots[h]-1]; c.Name == name {
			return c
		}
	}
	return nil
}

// indexChains replaces the map of the table's chains, which the parser
// fills, with a chainIndex of Chains, when they are the same chains.
func (t *Table) indexChains() {
	if len(t.chains) != len(t.Chains) {
		return
	}
	for _, c := range t.Chains {
		if t.chains[c.Name] != c {
			return
		}
	}
	t.index, t.chains = newChainIndex(t.Chains), nil
}
