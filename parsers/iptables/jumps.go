package iptables

import (
	"math"
	"runtime"

	"github.com/proxyscan/proxyscan/internal/fault"
)

// Jumps holds the chain every rule of a table jumps or goes to, resolved
// once for every reader of the table (the views, the tracer, the ruleset
// validation): a large nat table has tens of thousands of chains, and
// finding a chain by name is the costly part of following a jump.
type Jumps struct {
	t *Table
	// pos is the place in t.Chains of each chain, by Chain.Index (-1 for
	// an index no listed chain has).
	pos []int32
	// start is the place in to of the first rule of each chain, by
	// Chain.Index.
	start []int32
	// to is, for each rule, the place in t.Chains of the user chain its
	// target names, -1 when none does. The rules of a chain follow each
	// other; the chains are in the order of order.
	to []int32
	// order holds the places in t.Chains in the order the passes over
	// every rule take them (see [DumpOrder]).
	order []int32
}

// Order returns the places in the table's Chains in the order their rules
// are written in the dump ([DumpOrder]), which a pass over every rule of
// the table takes to read the dump's memory in order. The slice is shared:
// it must not be changed.
func (j *Jumps) Order() []int32 { return j.order }

// DumpOrder returns the places in t.Chains (every place once) in the
// order of the chains' first rules in the dump, the chains without rules
// first, in their order. iptables-save writes the rules of each chain
// together and in the order of the chain headers, so that the order is
// that of t.Chains; a restore input as kube-proxy writes it (the chains
// declared in one order, their rules in another) is read in the order it
// is written rather than chain by chain, which takes each chain's rules,
// their options and their text from another place of memory: on the
// 10,000-Service node (benchgen) that costs the passes over every rule
// (the jumps, the meanings, the kernel's checks, the layout's traits)
// about twice their time.
func DumpOrder(t *Table) []int32 {
	out := make([]int32, len(t.Chains))
	lines := make([]uint32, len(t.Chains))
	sorted := true
	for i, c := range t.Chains {
		out[i] = int32(i)
		if len(c.Rules) > 0 {
			lines[i] = uint32(min(max(c.Rules[0].Line, 0), math.MaxUint32))
		}
		sorted = sorted && (i == 0 || lines[i-1] <= lines[i])
	}
	if !sorted {
		radixSort(out, lines)
	}
	return out
}

// radixSort orders places by their lines (lines[place]), keeping the
// order of places of equal lines: a least significant digit radix sort,
// 11 bits at a time, which takes a few passes over the places of a large
// table where a comparison sort takes tens of comparisons per place.
func radixSort(places []int32, lines []uint32) {
	const bits = 11
	tmp := make([]int32, len(places))
	var count [1 << bits]int
	for shift := 0; shift < 32; shift += bits {
		clear(count[:])
		for _, p := range places {
			count[lines[p]>>shift&(1<<bits-1)]++
		}
		sum := 0
		for d, n := range count {
			count[d], sum = sum, sum+n
		}
		for _, p := range places {
			d := lines[p] >> shift & (1<<bits - 1)
			tmp[count[d]] = p
			count[d]++
		}
		places, tmp = tmp, places
	}
	// places is the caller's slice or the scratch one, as the number of
	// passes is even or odd, and tmp the other: the caller's gets the
	// sorted places either way.
	copy(tmp, places)
}

// Jumps returns the resolved jumps of the table, made on first use. The
// table must not change afterwards (a parsed dump does not). It is safe
// for concurrent use: readers that ask while the first resolves them
// wait for its answer.
func (t *Table) Jumps() *Jumps {
	if j := t.jumps.Load(); j != nil {
		return j
	}
	t.jumpsMu.Lock()
	defer t.jumpsMu.Unlock()
	if j := t.jumps.Load(); j != nil {
		return j
	}
	j := newJumps(t)
	t.jumps.Store(j)
	return j
}

// newJumps resolves the jumps of t.
func newJumps(t *Table) *Jumps {
	n := int(t.nchains)
	for _, c := range t.Chains {
		n = max(n, c.Index()+1)
	}
	j := &Jumps{t: t, pos: make([]int32, n), start: make([]int32, n)}
	for i := range j.pos {
		j.pos[i] = -1
	}
	for i, c := range t.Chains {
		if ix := c.Index(); ix >= 0 && j.pos[ix] < 0 {
			j.pos[ix] = int32(i)
		}
	}
	j.order = DumpOrder(t)
	total := 0
	for _, i := range j.order {
		c := t.Chains[i]
		if ix := c.Index(); ix >= 0 && j.pos[ix] == i {
			j.start[ix] = int32(total)
			total += len(c.Rules)
		}
	}
	j.to = make([]int32, total)
	workers := runtime.GOMAXPROCS(0)
	if workers < 2 || total < parallelJumps {
		j.resolve(j.order)
		return j
	}
	// The chains in order, cut where each worker's share of the rules
	// ends: the rules are resolved on every core.
	g := fault.Group{Name: "iptables.jumps"}
	from, rules, parts := 0, 0, 0
	for k, i := range j.order {
		rules += len(t.Chains[i].Rules)
		if rules*workers >= total*(parts+1) || k == len(j.order)-1 {
			part := j.order[from : k+1]
			g.Go(func() error {
				j.resolve(part)
				return nil
			})
			from, parts = k+1, parts+1
		}
	}
	if err := g.Wait(); err != nil {
		panic(err) // a worker's panic, raised again here
	}
	return j
}

// parallelJumps is the number of rules from which a table's jumps are
// resolved on every core (a variable for tests).
var parallelJumps = 20000

// resolve resolves the jumps of the rules of the chains of order (places
// in the table's chains), writing each to its place in j.to.
func (j *Jumps) resolve(order []int32) {
	// Rules jump to a few chains over and over, alternating with a
	// target extension (a KUBE-SEP chain's KUBE-MARK-MASQ then DNAT): the
	// last two targets found are remembered.
	var last [2]string
	lastTo := [2]int32{-1, -1}
	for _, i := range order {
		c := j.t.Chains[i]
		ix := c.Index()
		if ix < 0 || j.pos[ix] != i {
			continue
		}
		to := j.to[j.start[ix]:]
		for k, r := range c.Rules {
			name := r.Target()
			switch name {
			case last[0]:
			case last[1]:
				last[0], last[1] = last[1], last[0]
				lastTo[0], lastTo[1] = lastTo[1], lastTo[0]
			default:
				last[1], lastTo[1] = last[0], lastTo[0]
				last[0], lastTo[0] = name, j.lookup(name)
			}
			to[k] = lastTo[0]
		}
	}
}

// place returns the place of chain c in the table's chains, -1 when the
// table does not list it.
func (j *Jumps) place(c *Chain) int32 {
	if c == nil || c.Table != j.t || c.Index() < 0 || c.Index() >= len(j.pos) {
		return -1
	}
	if p := j.pos[c.Index()]; p >= 0 && j.t.Chains[p] == c {
		return p
	}
	return -1
}

// lookup returns the place in the table's chains of the user chain called
// name, -1 for none.
func (j *Jumps) lookup(name string) int32 {
	if name == "" || IsBuiltinChain(j.t.Name, name) {
		return -1
	}
	return j.place(j.t.Chain(name))
}

// Target returns the place in the table's Chains of the user chain that
// rule i of chain c jumps or goes to ([Rule.Target]), and whether there
// is one: false for a verdict, a target extension, a built-in chain's
// name and a chain the table does not list.
func (j *Jumps) Target(c *Chain, i int) (int, bool) {
	if i < 0 || i >= len(c.Rules) {
		return -1, false
	}
	p := int32(-1)
	if j.place(c) >= 0 {
		p = j.to[int(j.start[c.Index()])+i]
	} else {
		p = j.lookup(c.Rules[i].Target()) // a chain apart from the table's list
	}
	return int(p), p >= 0
}

// TargetChain returns the user chain that rule i of chain c jumps or goes
// to (see [Jumps.Target]), nil for none.
func (j *Jumps) TargetChain(c *Chain, i int) *Chain {
	if p, ok := j.Target(c, i); ok {
		return j.t.Chains[p]
	}
	return nil
}

// Place returns the place of chain c in the table's Chains, and whether
// the table lists it.
func (j *Jumps) Place(c *Chain) (int, bool) {
	p := j.place(c)
	return int(p), p >= 0
}
