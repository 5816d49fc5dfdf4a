package trace

import (
	"hash/maphash"

	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// chainNames finds the chains of a table by name. A big table's own map
// (Table.Chain) is slow to probe at random: tens of thousands of entries
// whose names lie scattered through the dump. chainNames is an
// open-addressing table that holds each name with the chain's number, so
// that resolving a jump reads one place in memory.
type chainNames struct {
	seed maphash.Seed
	tab  []nameEntry
}

// nameEntry is a place of chainNames: a chain's name and number.
type nameEntry struct {
	meta uint32 // 1 + the chain's number (low 24 bits), the length of its name (high 8); 0 for a free place
	name [maxChainName]byte
}

// maxChainName is the longest chain name iptables accepts (and the parser).
const maxChainName = 28

// newChainNames indexes the chains of t by name, as t.Chain finds them;
// nil when t's map does not list its chains (a table not made by the
// parser, whose names are then looked up in t.Chain), or the table is
// too big for the index.
func newChainNames(t *iptables.Table) *chainNames {
	if len(t.Chains) == 0 || len(t.Chains) >= 1<<24-1 || t.Chain(t.Chains[0].Name) != t.Chains[0] {
		return nil
	}
	for _, c := range t.Chains {
		if len(c.Name) > maxChainName {
			return nil
		}
	}
	n := 16
	for 2*n < 3*len(t.Chains) { // at most two thirds full
		n *= 2
	}
	cn := &chainNames{seed: maphash.MakeSeed(), tab: make([]nameEntry, n)}
	for i, c := range t.Chains {
		// Were a name listed twice, the first would be found first: it
		// comes first on the probe sequence.
		j := maphash.String(cn.seed, c.Name) & uint64(n-1)
		for cn.tab[j].meta != 0 {
			j = (j + 1) & uint64(n-1)
		}
		e := &cn.tab[j]
		e.meta = uint32(len(c.Name))<<24 | uint32(i+1)
		copy(e.name[:], c.Name)
	}
	return cn
}

// lookup returns the number of the chain named name, -1 when none is.
func (cn *chainNames) lookup(name string) int32 {
	if len(name) > maxChainName {
		return -1
	}
	mask := uint64(len(cn.tab) - 1)
	for j := maphash.String(cn.seed, name) & mask; ; j = (j + 1) & mask {
		e := &cn.tab[j]
		if e.meta == 0 {
			return -1
		}
		if int(e.meta>>24) == len(name) && string(e.name[:len(name)]) == name {
			return int32(e.meta&(1<<24-1)) - 1
		}
	}
}
