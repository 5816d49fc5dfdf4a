package trace

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/proxyscan/proxyscan/parsers/ipset"
	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// This file turns iptables chains into a form the walker evaluates
// quickly: every rule's typed reading, made once per table for all its
// readers ([iptables.Meanings]), with its jump resolved, and big chains
// indexed by destination.

// cset is an ipset indexed for lookups.
type cset struct {
	typ     string
	entries map[string]bool // canonical element keys
	nets    []setNet        // hash:net, hash:ip,port,net, hash:net,port
}

type setNet struct {
	prefix netip.Prefix
	key    string // the non-net dimensions, canonical
	first  bool   // the net is the first dimension
}

// crule is a compiled rule: its typed reading, and the chain it jumps
// to.
type crule struct {
	m     *iptables.Meaning
	jump  *iptables.Chain // the user chain jumped to, when jslot cannot name it
	jslot int32           // the number of the user chain jumped to in its table's index, -1 when none
}

// det returns the deterministic matches of cr, a rule of cc.
func (cc *cchain) det(cr *crule) []iptables.Match { return cc.rd.Det(cr.m) }

// fork returns the statistic and recent matches of cr, a rule of cc.
func (cc *cchain) fork(cr *crule) []iptables.Match { return cc.rd.Fork(cr.m) }

// ext returns the extension of m, a match of a rule of cc.
func (cc *cchain) ext(m *iptables.Match) *iptables.MatchExt { return cc.rd.Ext(m) }

// cchain is a compiled chain.
type cchain struct {
	c       *iptables.Chain
	tix     *tableIndex        // the numbering of the chain's table (jumps resolve in it)
	rd      *iptables.Meanings // the typed reading of the chain's rules
	rules   []crule
	index   *ruleIndex    // the index of a big chain
	used    atomic.Uint32 // the epoch of a walk that entered it lately (see touchEpochs)
	builtin bool
	pinned  bool // kept for good: a big chain or a built-in one
	noop    bool // no rule, and no DROP policy: entering it changes nothing
}

// ruleIndex indexes the rules of a big chain: rules whose only
// destination is one address, by that address; rules with no single
// destination but one destination port, by that port; others are the
// rest, in order.
type ruleIndex struct {
	byDst  map[netip.Addr][]int32
	byPort map[uint16][]int32
	others []int32
}

// indexThreshold is the chain size from which a chain is indexed by
// destination address.
const indexThreshold = 64

// compiled caches the compiled chains of the dumps a data plane holds.
// Chains are numbered per table ([tableIndex]), so that a compiled chain
// is found by its number, and a rule's jump is resolved to a number when
// the rule is compiled. Big chains (those indexed) and built-in chains
// are kept for good; small ones, the chains of one Service or endpoint
// that few packets walk, are kept while walks use them: when more than
// smallChains are compiled, those no walk entered in the last
// recentEpochs walks are dropped, which evicts the chains of the Services
// traced before while keeping the shared ones (KUBE-MARK-MASQ) and those
// of the packets in flight. Lookups take no lock: walkers of many packets
// read the cache at once.
type compiled struct {
	epoch  atomic.Uint32                 // counts the walks begun
	tables atomic.Pointer[[]*tableIndex] // copied on write, under mu
	stages atomic.Pointer[[]*stageTable] // copied on write, under mu

	mu    sync.Mutex
	small []chainRef // the small chains compiled and not evicted
	bigMu sync.Mutex // held while a big chain is compiled
	limit int        // the size of small that triggers an eviction

	sets     map[string]*cset // made once, by the first rule matching a set
	setsOnce sync.Once

	// readChains, for the chains of single traces (not a sweep's), reads
	// a chain alone (iptables.ReadChain) when its table's rules were not
	// all read yet: a trace of one packet meets a few chains of a table
	// of hundreds of thousands of rules.
	readChains bool
}

// chainRef names a numbered chain.
type chainRef struct {
	tix  *tableIndex
	slot int32
}

// A tableIndex numbers the chains of one table by their place in
// Table.Chains and holds their compiled forms by number.
type tableIndex struct {
	t     *iptables.Table
	names *chainNames // nil when the chains are looked up in t.Chain
	cc    []atomic.Pointer[cchain]
}

// smallChains is the number of small compiled chains above which those
// no recent walk entered are dropped.
const smallChains = 4096

// recentEpochs is how many walks back a small chain must have been
// entered to survive an eviction: enough for the packets of the Services
// being traced (a sweep hands packets out in order, a few per Service, 16
// at a time to each worker), and few enough that an eviction drops most
// chains, so that evictions, which read every chain kept, are rare.
const recentEpochs = 128

// touchEpochs is the age at which the epoch of a chain entered is stored
// again, below recentEpochs so that chains in use are seldom evicted (a
// chain evicted stays whole for the walks that entered it: eviction only
// drops the cache's pointer).
const touchEpochs = 64

var cacheInit sync.Mutex

func (dp *Dataplane) compiled() *compiled {
	cacheInit.Lock()
	defer cacheInit.Unlock()
	if dp.cache == nil {
		dp.cache = &compiled{readChains: true}
	}
	return dp.cache
}

// begin starts a walk: it returns the walk's epoch.
func (cp *compiled) begin() uint32 { return cp.epoch.Add(1) }

// tableIndex returns the numbering of table t, made on first use.
func (cp *compiled) tableIndex(t *iptables.Table) *tableIndex {
	if p := cp.tables.Load(); p != nil {
		for _, x := range *p {
			if x.t == t {
				return x
			}
		}
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	var list []*tableIndex
	if p := cp.tables.Load(); p != nil {
		list = *p
		for _, x := range list {
			if x.t == t {
				return x
			}
		}
	}
	tix := &tableIndex{t: t, names: newChainNames(t), cc: make([]atomic.Pointer[cchain], len(t.Chains))}
	list = append(list[:len(list):len(list)], tix)
	cp.tables.Store(&list)
	return tix
}

// slotOf returns the number of chain c of tix's table, -1 when the table
// does not list it.
func (tix *tableIndex) slotOf(c *iptables.Chain) int32 {
	if tix.names == nil {
		return -1
	}
	return tix.names.number(c)
}

// chain returns the compiled form of the chain numbered slot in tix (or,
// for slot -1, of c, compiled afresh), marked as entered in epoch; user
// says that it is a user chain (one jumped to). Small chains are compiled
// without a lock (when two walkers compile the same chain at once, the
// first stored wins), big ones by one walker (bigChain).
func (cp *compiled) chain(dp *Dataplane, tix *tableIndex, slot int32, c *iptables.Chain, epoch uint32, cx *compiler, user bool) *cchain {
	if slot < 0 {
		return cp.compileChain(tix, c, cx, user)
	}
	p := &tix.cc[slot]
	for {
		if cc := p.Load(); cc != nil {
			// Eviction asks only whether a chain was entered in the last
			// recentEpochs walks: the epoch is stored again once it is
			// touchEpochs old, which keeps walkers from writing the
			// shared chains (KUBE-MARK-MASQ) on every walk.
			if !cc.pinned && int32(epoch-cc.used.Load()) > touchEpochs {
				cc.used.Store(epoch)
			}
			return cc
		}
		c := tix.t.Chains[slot]
		if len(c.Rules) >= indexThreshold {
			return cp.bigChain(dp, tix, slot, c, cx, user)
		}
		cc := cp.compileChain(tix, c, cx, user)
		cc.used.Store(epoch)
		if p.CompareAndSwap(nil, cc) {
			if !cc.pinned {
				cx.keep(cp, chainRef{tix, slot}, epoch)
			}
			return cc
		}
		// Another walker stored it first (and an eviction may have
		// dropped it since): look again.
	}
}

// bigChain compiles a big chain (one kept for good) numbered slot in tix,
// once: walkers that need it at the same time (every walker at the start
// of a sweep, for KUBE-SERVICES) wait for the first to compile it rather
// than compile it too.
func (cp *compiled) bigChain(dp *Dataplane, tix *tableIndex, slot int32, c *iptables.Chain, cx *compiler, user bool) *cchain {
	cp.bigMu.Lock()
	defer cp.bigMu.Unlock()
	p := &tix.cc[slot]
	if cc := p.Load(); cc != nil {
		return cc
	}
	cc := cp.compileChain(tix, c, cx, user)
	p.Store(cc)
	return cc
}

// keep records a small chain a walker stored in the cache: in the
// walker's list, handed to the cache keepBatch at a time (and when the
// walker is released), so that walkers rarely take the cache's lock.
func (cx *compiler) keep(cp *compiled, r chainRef, epoch uint32) {
	if cx == nil {
		cp.keep([]chainRef{r}, epoch)
		return
	}
	if cx.kept == nil {
		cx.kept = make([]chainRef, 0, keepBatch)
	}
	cx.kept = append(cx.kept, r)
	if len(cx.kept) == keepBatch {
		cx.flush(cp, epoch)
	}
}

// flush hands the chains the walker stored to the cache.
func (cx *compiler) flush(cp *compiled, epoch uint32) {
	if len(cx.kept) > 0 {
		cp.keep(cx.kept, epoch)
		clear(cx.kept)
		cx.kept = cx.kept[:0]
	}
}

// keepBatch is the number of small chains a walker compiles before it
// records them in the cache.
const keepBatch = 64

// keep records small chains stored in the cache, evicting those no recent
// walk entered when there are too many.
func (cp *compiled) keep(rs []chainRef, epoch uint32) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.small = append(cp.small, rs...)
	if cp.limit == 0 {
		cp.limit = smallChains
	}
	if len(cp.small) <= cp.limit {
		return
	}
	kept := cp.small[:0]
	for _, r := range cp.small {
		p := &r.tix.cc[r.slot]
		cc := p.Load()
		if cc == nil {
			continue
		}
		if int32(epoch-cc.used.Load()) > recentEpochs {
			p.CompareAndSwap(cc, nil)
			continue
		}
		kept = append(kept, r)
	}
	clear(cp.small[len(kept):])
	cp.small = kept
	// When most chains are in use (a packet entering thousands of
	// chains), evictions wait until the cache has doubled.
	cp.limit = max(smallChains, 2*len(kept))
}

// A stageTable holds the compiled built-in chains of every stage in some
// dumps (the data plane's dumps of one family: its fields are public, and
// may change between traces).
type stageTable struct {
	dumps  []*iptables.Dump
	chains [numStages][]*cchain
}

// stageTable returns the built-in chains of every stage in dumps, in the
// dumps' order, compiled on first use.
func (cp *compiled) stageTable(dp *Dataplane, dumps []*iptables.Dump) *stageTable {
	if p := cp.stages.Load(); p != nil {
		for _, st := range *p {
			if slices.Equal(st.dumps, dumps) {
				return st
			}
		}
	}
	st := &stageTable{dumps: slices.Clone(dumps)}
	for id := range numStages {
		info := stageInfo[id]
		if info.table == "" {
			continue
		}
		for _, d := range dumps {
			if c := d.Chain(info.table, info.chain); c != nil {
				tix := cp.tableIndex(c.Table)
				st.chains[id] = append(st.chains[id], cp.chain(dp, tix, tix.slotOf(c), c, 0, nil, false))
			}
		}
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	var list []*stageTable
	if p := cp.stages.Load(); p != nil {
		list = *p
		for _, x := range list {
			if slices.Equal(x.dumps, dumps) {
				return x
			}
		}
	}
	list = append(list[:len(list):len(list)], st)
	cp.stages.Store(&list)
	return st
}

// compileChain compiles the rules of c and indexes a big chain. The
// rules are allocated in one block (carved from cx's blocks, for a small
// chain compiled by a sweep); their typed reading is the table's. For a
// user chain (user), the chain's name is not read: it lies apart from
// its rules, one more read that misses the processor's cache.
func (cp *compiled) compileChain(tix *tableIndex, c *iptables.Chain, cx *compiler, user bool) *cchain {
	builtin := !user && isBuiltin(c.Table.Name, c.Name)
	pinned := builtin || len(c.Rules) >= indexThreshold
	var jm *jumpMemo
	if cx != nil {
		jm = &cx.jm
		if pinned || !cx.carve {
			cx = nil
		}
	}
	var rd *iptables.Meanings
	var ms []iptables.Meaning
	if tix.names != nil && tix.t == c.Table && (!cp.readChains || c.Table.MeaningsRead()) {
		rd, ms = c.Table.Meanings().Chain(c)
	} else {
		// A table the parser did not make, or a chain a single trace
		// meets before its table's rules are read: read apart.
		rd = iptables.ReadChain(c)
		_, ms = rd.Chain(c)
	}
	cc := cx.newChain()
	cc.c, cc.tix, cc.rd, cc.builtin, cc.pinned, cc.rules = c, tix, rd, builtin, pinned, cx.newRules(len(c.Rules))
	cc.noop = len(c.Rules) == 0 && (!builtin || c.Policy() != "DROP")
	for i := range cc.rules {
		m := &ms[i]
		cr := &cc.rules[i]
		cr.m, cr.jslot = m, -1
		if m.Target != iptables.TargetOther {
			continue
		}
		if tix.names != nil && tix.t == c.Table && m.TargetIsRules() {
			// The table's jumps are resolved once for all its readers.
			cr.jslot = tix.names.jump(c, i)
		} else {
			cr.jump, cr.jslot = jm.resolve(tix, c.Table, m.TargetName())
		}
	}
	if len(cc.rules) >= indexThreshold {
		ix := &ruleIndex{byDst: map[netip.Addr][]int32{}, byPort: map[uint16][]int32{}}
		for i := range cc.rules {
			m := cc.rules[i].m
			if m.HasDst32() {
				a := rd.Dst32(m)
				ix.byDst[a] = append(ix.byDst[a], int32(i))
			} else if m.HasDport() {
				ix.byPort[m.Dport] = append(ix.byPort[m.Dport], int32(i))
			} else {
				ix.others = append(ix.others, int32(i))
			}
		}
		cc.index = ix
	}
	return cc
}

// A compiler is what a walker brings to the chains it compiles: its jump
// memo and, for a sweep's walker, the blocks its small chains are carved
// from. Chains compiled one after the other are dropped from the cache at
// about the same time, and a block is freed with its last chain; carving
// them saves allocating three objects per chain, tens of thousands of
// times a sweep.
type compiler struct {
	jm    jumpMemo
	kept  []chainRef // the small chains stored, not yet recorded by the cache
	carve bool
	ccs   []cchain
	rules []crule
}

// Block sizes of the values carved (see carveBlock).
const (
	chainBlock = 128
	ruleBlock  = 1024
)

// newChain returns a zero chain (carved when cx is not nil).
func (cx *compiler) newChain() *cchain {
	if cx == nil {
		return new(cchain)
	}
	return &carveBlock(&cx.ccs, 1, chainBlock)[0]
}

// newRules returns n zero rules (carved when cx is not nil).
func (cx *compiler) newRules(n int) []crule {
	if cx == nil {
		return make([]crule, n)
	}
	return carveBlock(&cx.rules, n, ruleBlock)
}

// carveBlock returns n zero values cut from the front of *block, which it
// refills with size new ones when they run short; more than a quarter of
// a block's worth is allocated on its own.
func carveBlock[T any](block *[]T, n, size int) []T {
	if n > size/4 {
		return make([]T, n)
	}
	if len(*block) < n {
		*block = make([]T, size)
	}
	out := (*block)[:n:n]
	*block = (*block)[n:]
	return out
}

// isBuiltin reports whether chain is a built-in chain of table, as
// iptables.IsBuiltinChain does, without its map lookup: it is asked for
// every chain compiled and every jump.
func isBuiltin(table, chain string) bool {
	switch chain {
	case "PREROUTING":
		return table == "nat" || table == "mangle" || table == "raw"
	case "INPUT", "FORWARD":
		return table == "filter" || table == "mangle" || table == "security" || chain == "INPUT" && table == "nat"
	case "OUTPUT":
		return table == "filter" || table == "nat" || table == "mangle" || table == "raw" || table == "security"
	case "POSTROUTING":
		return table == "nat" || table == "mangle"
	}
	return false
}

// appendCandidates appends to buf the indexes of the rules of cc, a big
// chain, that can match a packet to dst and dport, in order.
func (cc *cchain) appendCandidates(buf []int32, dst netip.Addr, dport uint16) []int32 {
	a, b, c := cc.index.byDst[dst], cc.index.byPort[dport], cc.index.others
	switch {
	case len(a) == 0 && len(b) == 0:
		return append(buf, c...)
	case len(b) == 0 && len(c) == 0:
		return append(buf, a...)
	case len(a) == 0 && len(c) == 0:
		return append(buf, b...)
	}
	return merge3(buf, a, b, c)
}

// merge3 appends the merge of three sorted lists to out.
func merge3(out, a, b, c []int32) []int32 {
	for len(a) > 0 || len(b) > 0 || len(c) > 0 {
		next, from := int32(1<<31-1), 0
		if len(a) > 0 && a[0] < next {
			next, from = a[0], 1
		}
		if len(b) > 0 && b[0] < next {
			next, from = b[0], 2
		}
		if len(c) > 0 && c[0] < next {
			next, from = c[0], 3
		}
		out = append(out, next)
		switch from {
		case 1:
			a = a[1:]
		case 2:
			b = b[1:]
		default:
			c = c[1:]
		}
	}
	return out
}

// A jumpMemo remembers the jump targets a walker resolved last: the
// rules of a table jump to a few chains (KUBE-MARK-MASQ) over and over,
// and a chain name is slow to look up among tens of thousands. It lives
// as long as its walker (a trace, or a sweep) and may be nil.
type jumpMemo struct {
	hit [4]jumpTarget // most used first
}

type jumpTarget struct {
	t    *iptables.Table
	name string
	c    *iptables.Chain
	slot int32
}

// resolve returns the number in tix of the user chain of table t named
// name, or, for a chain tix does not number, the chain itself (-1 and nil
// when t has no such user chain).
func (jm *jumpMemo) resolve(tix *tableIndex, t *iptables.Table, name string) (*iptables.Chain, int32) {
	if jm != nil {
		for i := range jm.hit {
			if h := jm.hit[i]; h.t == t && h.name == name {
				if i > 0 {
					// Targets met again move up; the one-off targets (an
					// endpoint chain each) take the last place in turn.
					jm.hit[i-1], jm.hit[i] = h, jm.hit[i-1]
				}
				return h.c, h.slot
			}
		}
	}
	// A chain found by number is not read: it is entered later, if ever.
	var c *iptables.Chain
	slot := int32(-1)
	switch {
	case isBuiltin(t.Name, name):
		// Not a target: iptables jumps to user chains only.
	case tix.t == t && tix.names != nil:
		slot = tix.names.lookup(name)
	default:
		if c = t.Chain(name); c != nil && isBuiltin(c.Table.Name, c.Name) {
			c = nil
		}
	}
	if jm != nil {
		jm.hit[len(jm.hit)-1] = jumpTarget{t: t, name: name, c: c, slot: slot}
	}
	return c, slot
}

// set returns the set called name among the captured ipsets, nil when
// none is.
func (cp *compiled) set(dp *Dataplane, name string) *cset {
	cp.setsOnce.Do(func() {
		cp.sets = map[string]*cset{}
		for _, d := range dp.IPSets {
			for _, s := range d.Sets {
				if _, dup := cp.sets[s.Name]; !dup {
					cp.sets[s.Name] = compileSet(s)
				}
			}
		}
	})
	return cp.sets[name]
}

func compileSet(s *ipset.Set) *cset {
	cs := &cset{typ: s.Type, entries: map[string]bool{}}
	dims := setDims(s.Type)
	for _, e := range s.Entries {
		if _, nomatch := e.Option("nomatch"); nomatch {
			continue
		}
		var parts []string
		netIdx := -1
		for i, d := range dims {
			switch d {
			case "ip":
				if i == 2 {
					parts = append(parts, e.IP2.String())
				} else {
					parts = append(parts, e.IP.String())
				}
			case "port":
				parts = append(parts, strconv.Itoa(int(e.Proto))+":"+strconv.Itoa(int(e.Port)))
			case "net":
				netIdx = i
				parts = append(parts, "")
			default:
				parts = append(parts, "?")
			}
		}
		if netIdx >= 0 {
			p := e.Net
			if !p.IsValid() && e.IP.IsValid() {
				p = netip.PrefixFrom(e.IP, e.IP.BitLen())
			}
			rest := append(append([]string(nil), parts[:netIdx]...), parts[netIdx+1:]...)
			cs.nets = append(cs.nets, setNet{prefix: p, key: strings.Join(rest, ","), first: netIdx == 0})
			continue
		}
		cs.entries[strings.Join(parts, ",")] = true
	}
	return cs
}

// setDims returns the dimensions of a set type: "hash:ip,port,net" gives
// ip, port, net; bitmap:port gives port.
func setDims(typ string) []string {
	_, d, ok := strings.Cut(typ, ":")
	if !ok {
		return nil
	}
	return strings.Split(d, ",")
}

// contains reports whether the set holds the element made of the values
// of the packet the flags pick.
func (cs *cset) contains(vals []setVal) (bool, error) {
	dims := setDims(cs.typ)
	if len(vals) < len(dims) {
		return false, fmt.Errorf("set of type %s needs %d flags, the rule gives %d", cs.typ, len(dims), len(vals))
	}
	parts := make([]string, len(dims))
	netIdx := -1
	for i, d := range dims {
		switch d {
		case "ip":
			parts[i] = vals[i].addr.String()
		case "port":
			parts[i] = strconv.Itoa(int(vals[i].proto)) + ":" + strconv.Itoa(int(vals[i].port))
		case "net":
			netIdx = i
		default:
			return false, fmt.Errorf("set type %s is not modelled", cs.typ)
		}
	}
	if strings.HasPrefix(cs.typ, "bitmap:port") {
		// bitmap:port stores the port alone.
		return cs.entries["0:"+strconv.Itoa(int(vals[0].port))] || cs.entries[parts[0]], nil
	}
	if netIdx < 0 {
		return cs.entries[strings.Join(parts, ",")], nil
	}
	rest := append(append([]string(nil), parts[:netIdx]...), parts[netIdx+1:]...)
	key := strings.Join(rest, ",")
	for _, n := range cs.nets {
		if n.key == key && n.prefix.Contains(vals[netIdx].addr) {
			return true, nil
		}
	}
	return false, nil
}

// setVal is the packet's value for one dimension of a set lookup.
type setVal struct {
	addr  netip.Addr
	proto uint8
	port  uint16
}
