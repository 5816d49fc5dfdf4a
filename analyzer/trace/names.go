package trace

import (
	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// chainNames numbers the chains of a table by their place in
// Table.Chains: a chain is found by name in the table's map, and its
// place through its index (Chain.Index), which the table numbers for the
// parser's lifetime.
type chainNames struct {
	t   *iptables.Table
	pos []int32 // the place in t.Chains by Chain.Index, -1 for none
}

// newChainNames numbers the chains of t; nil when t's map does not list
// its chains or they have no distinct indexes (a table not made by the
// parser, whose chains are then looked up in t.Chain).
func newChainNames(t *iptables.Table) *chainNames {
	n := t.ChainIndexes()
	if len(t.Chains) == 0 || n < len(t.Chains) || t.Chain(t.Chains[0].Name) != t.Chains[0] {
		return nil
	}
	cn := &chainNames{t: t, pos: make([]int32, n)}
	for i := range cn.pos {
		cn.pos[i] = -1
	}
	for i, c := range t.Chains {
		ix := c.Index()
		if ix >= n || cn.pos[ix] >= 0 {
			return nil
		}
		cn.pos[ix] = int32(i)
	}
	return cn
}

// lookup returns the number of the chain named name, -1 when none is.
func (cn *chainNames) lookup(name string) int32 {
	c := cn.t.Chain(name)
	if c == nil {
		return -1
	}
	return cn.number(c)
}

// number returns the number of chain c, -1 when it is not one of the
// table's chains.
func (cn *chainNames) number(c *iptables.Chain) int32 {
	if c.Table != cn.t || c.Index() >= len(cn.pos) {
		return -1
	}
	if i := cn.pos[c.Index()]; i >= 0 && cn.t.Chains[i] == c {
		return i
	}
	return -1
}
