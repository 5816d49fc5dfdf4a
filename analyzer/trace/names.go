package trace

import (
	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// chainNames numbers the chains of a table by their place in
// Table.Chains, and its rules' jumps by the place of the chain they
// enter: both are the table's [iptables.Jumps], resolved once for every
// reader of the table (the views and the ruleset validation too).
type chainNames struct {
	t *iptables.Table
	j *iptables.Jumps
}

// newChainNames numbers the chains of t; nil when t's map does not list
// its chains (a table not made by the parser, whose chains are then
// looked up in t.Chain).
func newChainNames(t *iptables.Table) *chainNames {
	if len(t.Chains) == 0 || t.ChainIndexes() < len(t.Chains) || t.Chain(t.Chains[0].Name) != t.Chains[0] {
		return nil
	}
	return &chainNames{t: t, j: t.Jumps()}
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
	if p, ok := cn.j.Place(c); ok {
		return int32(p)
	}
	return -1
}

// jump returns the number of the user chain that rule i of chain c (a
// chain of the table) jumps or goes to, -1 for none.
func (cn *chainNames) jump(c *iptables.Chain, i int) int32 {
	if p, ok := cn.j.Target(c, i); ok {
		return int32(p)
	}
	return -1
}
