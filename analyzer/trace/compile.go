package trace

import (
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/proxyscan/proxyscan/parsers/ipset"
	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// This file turns iptables rules into a form the walker evaluates quickly:
// every match of a rule parsed once, big chains indexed by destination.

// mkind is the kind of a compiled match.
type mkind uint8

const (
	mSrc mkind = iota
	mDst
	mInIface
	mOutIface
	mProto
	mDport
	mSport
	mMark
	mSrcType
	mDstType
	mCtState
	mSet
	mPhysdev
	mTrue     // comment, nfacct, recent --set, limit: always true
	mFragment // -f: never for the first packet
	mSyn      // tcp flags of a SYN
	mIPVS     // -m ipvs
	mRandom   // statistic random / nth: a fork
	mRecent   // recent --rcheck / --update: a fork on state
	mUnknown  // not modelled: the rule is assumed not to match
	mNATDest  // not a match: a DNAT rule's destination, after its matches
)

// addrtype bits.
const (
	atLocal = 1 << iota
	atUnicast
	atBroadcast
	atMulticast
)

// conntrack state bits.
const (
	ctNew = 1 << iota
	ctEstablished
	ctRelated
	ctInvalid
	ctUntracked
	ctSNAT
	ctDNAT
)

type portRange struct{ lo, hi uint16 }

// setPorts sets the port ranges of a port match m: a list goes in its
// extension.
func setPorts(m *cmatch, ext *matchExt, pr []portRange) {
	if len(pr) == 1 {
		m.port[0] = pr[0]
		return
	}
	ext.ports = pr
}

// cmatch is one compiled match of a rule. It is kept small, and free of
// pointers (the garbage collector never scans the matches of a chain), as
// every rule of every chain walked has its matches compiled: what few
// matches use (interfaces, port lists, sets, ipvs options) is in the
// chain's exts.
type cmatch struct {
	kind   mkind
	neg    bool
	proto  uint8
	synMsk uint8 // --tcp-flags mask and comparison
	synCmp uint8
	bits   uint8        // the prefix length of an address match
	v6     bool         // the prefix is an IPv6 one
	ext    uint32       // 1 + the place of the match's extension in its chain's exts; 0: none
	port   [1]portRange // the port range of a port match, unless its extension has several
	value  uint32       // mark value, addrtype bits, ctstate bits
	mask   uint32
	net    [2]uint64 // the prefix's address, masked (an IPv4 one in net[1])
	prob   float64
}

// matchExt holds what only some kinds of match need.
type matchExt struct {
	iface string      // interface name; a trailing "+" is a prefix match
	ports []portRange // a port list (multiport)
	set   *setMatch
	text  string // the recent list name; the text of an ipvs match
	ipvs  *ipvsMatch
}

// setPrefix makes p (masked) the prefix of an address match.
func (m *cmatch) setPrefix(p netip.Prefix) {
	a := p.Addr()
	m.bits = uint8(p.Bits())
	if a.Is6() {
		b := a.As16()
		m.v6, m.net = true, [2]uint64{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
		return
	}
	b := a.As4()
	m.net = [2]uint64{0, uint64(binary.BigEndian.Uint32(b[:]))}
}

// contains reports whether the prefix of an address match holds a, as
// netip.Prefix.Contains does: never an address of the other family (an
// IPv4-mapped IPv6 address is IPv6), nor one with a zone.
func (m *cmatch) contains(a netip.Addr) bool {
	if !m.v6 {
		if !a.Is4() {
			return false
		}
		b := a.As4()
		mask := ^uint32(0) << (32 - m.bits)
		return uint64(binary.BigEndian.Uint32(b[:])&mask) == m.net[1]
	}
	if !a.Is6() || a.Zone() != "" {
		return false
	}
	b := a.As16()
	hi, lo := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	hiMask, loMask := ^uint64(0)<<(64-min(m.bits, 64)), uint64(0)
	if m.bits > 64 {
		loMask = ^uint64(0) << (128 - m.bits)
	}
	return hi&hiMask == m.net[0] && lo&loMask == m.net[1]
}

// singleIP returns the one address a destination match requires, if its
// prefix is a single address.
func (m *cmatch) singleIP() (netip.Addr, bool) {
	if m.v6 {
		if m.bits != 128 {
			return netip.Addr{}, false
		}
		var b [16]byte
		binary.BigEndian.PutUint64(b[:8], m.net[0])
		binary.BigEndian.PutUint64(b[8:], m.net[1])
		return netip.AddrFrom16(b), true
	}
	if m.bits != 32 {
		return netip.Addr{}, false
	}
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(m.net[1]))
	return netip.AddrFrom4(b), true
}

// ext returns the extension of m, nil when it has none.
func (cc *cchain) ext(m *cmatch) *matchExt {
	if m.ext == 0 {
		return nil
	}
	return &(*cc.exts)[m.ext-1]
}

// ports returns the port ranges of a port match.
func (cc *cchain) ports(m *cmatch) []portRange {
	if e := cc.ext(m); e != nil && e.ports != nil {
		return e.ports
	}
	return m.port[:]
}

// ipvsMatch holds the options of -m ipvs.
type ipvsMatch struct {
	property, propNeg bool
	vaddr             netip.Prefix
	vaddrNeg          bool
	vport             uint16
	vportNeg          bool
	vproto            uint8
	vprotoNeg         bool
	unknown           []string
}

// setMatch is a compiled --match-set.
type setMatch struct {
	name  string
	flags []bool // true: src, false: dst, per dimension
	set   *cset
}

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

// crule is a compiled rule, kept small for the same reason as cmatch.
type crule struct {
	r       *iptables.Rule
	jump    *iptables.Chain // the user chain jumped to, when jslot cannot name it
	unknown *[]string       // the matches not modelled, nil when none
	// ms is the place in the chain's ms of the rule's nms matches: the
	// deterministic ones (the first ndet), then the statistic and recent
	// ones, evaluated last.
	ms        uint32
	nms, ndet uint16
	// targ is the index of the first option after the target, or the
	// number of options when there is none.
	targ      int32
	jslot     int32  // the number of the user chain jumped to in its table's index, -1 when none
	dport     uint16 // the one destination port the rule requires, if hasDport
	target    tkind
	isGoto    bool
	hasDst32  bool // the rule requires one destination address
	hasDport  bool
	portMulti bool
	natDest   bool // a DNAT rule whose destination is read: it follows the rule's matches
}

// tkind is the kind of a rule's target: one the walker applies by name,
// or a chain or a target it does not model (tOther).
type tkind uint8

// Targets.
const (
	tNone tkind = iota
	tAccept
	tDrop
	tReject
	tReturn
	tDNAT
	tRedirect
	tSNAT
	tMasquerade
	tMark
	tLog // LOG, NFLOG, ULOG, TRACE, AUDIT: no effect on the path
	tNotrack
	tCT
	tQueue // QUEUE, NFQUEUE
	tOther
)

// targetKind returns the kind of target t. The targets the walker applies
// by name include iptables.StandardTargets: a rule with one of them never
// jumps to a chain of that name.
func targetKind(t string) tkind {
	switch t {
	case "":
		return tNone
	case "ACCEPT":
		return tAccept
	case "DROP":
		return tDrop
	case "REJECT":
		return tReject
	case "RETURN":
		return tReturn
	case "DNAT":
		return tDNAT
	case "REDIRECT":
		return tRedirect
	case "SNAT":
		return tSNAT
	case "MASQUERADE":
		return tMasquerade
	case "MARK":
		return tMark
	case "LOG", "NFLOG", "ULOG", "TRACE", "AUDIT":
		return tLog
	case "NOTRACK":
		return tNotrack
	case "CT":
		return tCT
	case "QUEUE", "NFQUEUE":
		return tQueue
	}
	return tOther
}

// targetName returns the target of cr as the rule writes it.
func (cr *crule) targetName() string {
	if cr.target == tNone {
		return ""
	}
	return cr.r.Arg(int(cr.targ) - 1).Value
}

// det returns the deterministic matches of cr, a rule of cc.
func (cc *cchain) det(cr *crule) []cmatch {
	return cc.ms[cr.ms : cr.ms+uint32(cr.ndet) : cr.ms+uint32(cr.ndet)]
}

// fork returns the statistic and recent matches of cr, a rule of cc.
func (cc *cchain) fork(cr *crule) []cmatch {
	return cc.ms[cr.ms+uint32(cr.ndet) : cr.ms+uint32(cr.nms) : cr.ms+uint32(cr.nms)]
}

// unknowns returns the matches of cr that are not modelled.
func (cr *crule) unknowns() []string {
	if cr.unknown == nil {
		return nil
	}
	return *cr.unknown
}

// addUnknown records a match that is not modelled.
func (cr *crule) addUnknown(text string) {
	if cr.unknown == nil {
		cr.unknown = new([]string)
	}
	*cr.unknown = append(*cr.unknown, text)
}

// dst32 returns the one destination address cr, a rule of cc, requires,
// if hasDst32.
func (cc *cchain) dst32(cr *crule) netip.Addr {
	for i := range cc.det(cr) {
		m := &cc.det(cr)[i]
		if m.kind == mDst && !m.neg {
			if a, ok := m.singleIP(); ok {
				return a
			}
		}
	}
	return netip.Addr{}
}

// natDest returns the destination of cr, a DNAT rule of cc read when it
// was compiled (natDest).
func (cc *cchain) natDest(cr *crule) netip.AddrPort {
	m := &cc.ms[cr.ms+uint32(cr.nms)]
	a, _ := m.singleIP()
	return netip.AddrPortFrom(a, m.port[0].lo)
}

// targetArg returns the value of the target option name (--to-destination,
// say) and whether the rule has it.
func (cr *crule) targetArg(name string) (string, bool) {
	for i := int(cr.targ); i < cr.r.NumArgs(); i++ {
		if a := cr.r.Arg(i); a.Name == name {
			return a.Value, true
		}
	}
	return "", false
}

// cchain is a compiled chain.
type cchain struct {
	c       *iptables.Chain
	tix     *tableIndex // the numbering of the chain's table (jumps resolve in it)
	rules   []crule
	ms      []cmatch      // the matches of the rules
	exts    *[]matchExt   // the extensions of the matches that have one, nil when none
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
		dp.cache = &compiled{}
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
		return cp.compileChain(dp, tix, c, cx, user)
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
		cc := cp.compileChain(dp, tix, c, cx, user)
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
	cc := cp.compileChain(dp, tix, c, cx, user)
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
// rules, and all their matches, are allocated in one block each (carved
// from cx's blocks, for a small chain compiled by a sweep). For a user
// chain (user), the chain's name is not read: it lies apart from its
// rules, one more read that misses the processor's cache.
func (cp *compiled) compileChain(dp *Dataplane, tix *tableIndex, c *iptables.Chain, cx *compiler, user bool) *cchain {
	builtin := !user && isBuiltin(c.Table.Name, c.Name)
	pinned := builtin || len(c.Rules) >= indexThreshold
	var jm *jumpMemo
	var sc *compileScratch
	if cx != nil {
		jm, sc = &cx.jm, &cx.sc
		if pinned || !cx.carve {
			cx = nil
		}
	} else {
		sc = scratchPool.Get().(*compileScratch)
		defer func() {
			sc.forget() // the pool keeps no dump alive
			scratchPool.Put(sc)
		}()
	}
	cc := cx.newChain()
	cc.c, cc.tix, cc.builtin, cc.pinned, cc.rules = c, tix, builtin, pinned, cx.newRules(len(c.Rules))
	cc.noop = len(c.Rules) == 0 && (!builtin || c.Policy != "DROP")
	sc.ms, sc.exts = sc.ms[:0], sc.exts[:0]
	if len(c.Rules) >= indexThreshold {
		sc.ms = slices.Grow(sc.ms, 3*len(c.Rules)) // kube-proxy's rules match a destination, a protocol and a port
	}
	for i, r := range c.Rules {
		cr := &cc.rules[i]
		cp.compileRule(dp, tix, r, i, cr, sc, jm)
	}
	cc.ms = cx.newMatches(len(sc.ms))
	copy(cc.ms, sc.ms)
	if len(sc.exts) > 0 {
		exts := slices.Clone(sc.exts)
		cc.exts = &exts
	}
	if len(cc.rules) >= indexThreshold {
		ix := &ruleIndex{byDst: map[netip.Addr][]int32{}, byPort: map[uint16][]int32{}}
		for i := range cc.rules {
			cr := &cc.rules[i]
			if cr.hasDst32 {
				a := cc.dst32(cr)
				ix.byDst[a] = append(ix.byDst[a], int32(i))
			} else if cr.hasDport {
				ix.byPort[cr.dport] = append(ix.byPort[cr.dport], int32(i))
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
	sc    compileScratch
	kept  []chainRef // the small chains stored, not yet recorded by the cache
	carve bool
	ccs   []cchain
	rules []crule
	ms    []cmatch
}

// Block sizes of the values carved (see carveBlock).
const (
	chainBlock = 128
	ruleBlock  = 1024
	matchBlock = 2048
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

// newMatches returns n zero matches (carved when cx is not nil).
func (cx *compiler) newMatches(n int) []cmatch {
	if cx == nil {
		return make([]cmatch, n)
	}
	return carveBlock(&cx.ms, n, matchBlock)
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

// compileScratch holds the matches of a chain's rules while it compiles,
// and the options of the rule being compiled.
type compileScratch struct {
	ms    []cmatch   // of the rules compiled, the deterministic ones then the others of each
	fork  []cmatch   // the statistic and recent matches of the rule being compiled
	exts  []matchExt // of the matches compiled
	opts  []iptables.Arg
	flags []iptables.Arg
	m     cmatch // the match being compiled
	ext   matchExt
}

// forget drops what the scratch refers to of the chains compiled.
func (sc *compileScratch) forget() {
	clear(sc.exts)
	sc.ext = matchExt{}
	clear(sc.opts[:cap(sc.opts)])
	clear(sc.flags[:cap(sc.flags)])
	sc.exts, sc.opts, sc.flags = sc.exts[:0], sc.opts[:0], sc.flags[:0]
}

// addExt stores the extension of a match: it returns the match's ext.
func (sc *compileScratch) addExt(e matchExt) uint32 {
	sc.exts = append(sc.exts, e)
	return uint32(len(sc.exts))
}

var scratchPool = sync.Pool{New: func() any { return new(compileScratch) }}

// compileRule compiles r, rule ri of its chain, into cr; its matches are
// gathered in the scratch's det and fork, for the caller to store.
func (cp *compiled) compileRule(dp *Dataplane, tix *tableIndex, r *iptables.Rule, ri int, cr *crule, sc *compileScratch, jm *jumpMemo) {
	n := r.NumArgs()
	// cr is zero (newly allocated or carved): only what is not zero is set.
	cr.r, cr.targ, cr.jslot = r, int32(n), -1
	target := ""
	start := len(sc.ms)
	sc.fork = sc.fork[:0]
	// The options of a recent, statistic or ipvs match, or the tcp flags,
	// are gathered in sc.opts and sc.flags and compiled together.
	module := ""
	sc.opts, sc.flags = sc.opts[:0], sc.flags[:0]
	flush := func() {
		switch module {
		case "recent":
			cp.recent(cr, sc, sc.opts)
		case "statistic":
			cp.statistic(cr, sc, sc.opts)
		case "ipvs":
			sc.ms = append(sc.ms, compileIPVS(sc, sc.opts))
		}
		if len(sc.flags) > 0 {
			sc.ms = appendTCPFlags(sc.ms, sc.flags)
			sc.flags = sc.flags[:0]
		}
		sc.opts = sc.opts[:0]
		module = ""
	}
	for i := 0; i < n; i++ {
		if module == "comment" && r.ArgName(i) == "--comment" {
			// Matches every packet (compileOpt): its text is not read.
			continue
		}
		a := r.Arg(i)
		switch a.Name {
		case "-j", "-g", "--jump", "--goto":
			flush()
			target, cr.isGoto, cr.targ = a.Value, a.Name == "-g" || a.Name == "--goto", int32(i+1)
			cr.target = targetKind(target)
			i = n
			continue
		case "-m", "--match":
			flush()
			module = a.Value
			if !knownModule(module) {
				cr.addUnknown("-m " + module)
			}
			continue
		}
		if module == "recent" || module == "statistic" || module == "ipvs" {
			sc.opts = append(sc.opts, a)
			continue
		}
		if a.Name == "--tcp-flags" || a.Name == "--syn" {
			sc.flags = append(sc.flags, a)
			continue
		}
		m, ext := &sc.m, &sc.ext // ext is zero: compileOpt fills it for the few matches that have one
		if !compileOpt(a, module, m, ext) {
			cr.addUnknown(argText(a, module))
			continue
		}
		if ext.set != nil {
			cp.resolveSet(dp, ext.set)
		}
		if m.kind == mInIface || m.kind == mOutIface || m.kind == mSet || ext.ports != nil {
			m.ext = sc.addExt(*ext)
			*ext = matchExt{}
		}
		if m.kind == mDst && !m.neg && !cr.hasDst32 {
			_, cr.hasDst32 = m.singleIP()
		}
		if m.kind == mDport && !m.neg && m.value == 0 && ext.ports == nil {
			if pr := m.port[0]; pr.lo == pr.hi {
				if cr.hasDport || cr.portMulti {
					// Several port matches: left out of the port index.
					cr.hasDport, cr.portMulti = false, true
				} else {
					cr.dport, cr.hasDport = pr.lo, true
				}
			}
		}
		if m.kind != mTrue {
			sc.ms = append(sc.ms, *m)
		}
	}
	flush()
	// The deterministic matches, then the statistic and recent ones.
	cr.ms, cr.ndet = uint32(start), uint16(len(sc.ms)-start)
	sc.ms = append(sc.ms, sc.fork...)
	cr.nms = uint16(len(sc.ms) - start)
	switch {
	case cr.target != tOther:
	case tix.names != nil && tix.t == r.Chain.Table && ri < len(r.Chain.Rules) && r.Chain.Rules[ri] == r && target == r.Target():
		// The table's jumps are resolved once for all its readers.
		cr.jslot = tix.names.jump(r.Chain, ri)
	default:
		cr.jump, cr.jslot = jm.resolve(tix, r.Chain.Table, target)
	}
	if cr.target == tDNAT {
		// kube-proxy's "ip:port" is read once here, not on every path
		// through the rule; other forms are read on the way (parseNATTo).
		if to, ok := cr.targetArg("--to-destination"); ok {
			if ap, ok := quickNATTo(to); ok && ap.Addr().Zone() == "" {
				a := ap.Addr()
				m := cmatch{kind: mNATDest}
				m.setPrefix(netip.PrefixFrom(a, a.BitLen()))
				m.port[0].lo = ap.Port()
				sc.ms = append(sc.ms, m)
				cr.natDest = true
			}
		}
	}
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

func argText(a iptables.Arg, module string) string {
	if module != "" {
		return "-m " + module + " " + a.String()
	}
	return a.String()
}

func knownModule(m string) bool {
	switch m {
	case "tcp", "udp", "sctp", "multiport", "comment", "mark", "addrtype", "conntrack", "state", "set",
		"physdev", "nfacct", "statistic", "recent", "ipvs", "icmp", "icmp6", "icmpv6", "limit":
		return true
	}
	return false
}

// compileOpt compiles one option of a rule outside recent/statistic/ipvs
// into m, and the extension of the match, if it has one, into ext (zero
// on entry); false when the option is not modelled.
func compileOpt(a iptables.Arg, module string, m *cmatch, ext *matchExt) bool {
	*m = cmatch{neg: a.Neg}
	switch a.Name {
	case "-s", "--source", "-d", "--destination":
		p, ok := parsePrefix(a.Value)
		if !ok {
			return false
		}
		m.setPrefix(p)
		m.kind = mSrc
		if a.Name == "-d" || a.Name == "--destination" {
			m.kind = mDst
		}
		return true
	case "-i", "--in-interface", "-o", "--out-interface":
		ext.iface = a.Value
		m.kind = mInIface
		if a.Name == "-o" || a.Name == "--out-interface" {
			m.kind = mOutIface
		}
		return true
	case "-p", "--protocol":
		p, ok := protoNumber(a.Value)
		if !ok {
			return false
		}
		m.kind, m.proto = mProto, p
		return true
	case "-f", "--fragment":
		m.kind = mFragment
		return true
	}
	switch module {
	case "tcp", "udp", "sctp", "multiport":
		switch a.Name {
		case "--dport", "--destination-port", "--dports", "--destination-ports":
			m.kind = mDport
		case "--sport", "--source-port", "--sports", "--source-ports":
			m.kind = mSport
		case "--ports":
			m.kind = mDport // handled as "either" below
			if !setPortList(m, ext, a.Value) {
				return false
			}
			m.value = 1 // either port
			return true
		default:
			return false
		}
		return setPortList(m, ext, a.Value)
	case "comment", "nfacct":
		m.kind = mTrue
		return true
	case "limit":
		// The first packet of a connection is within any limit's burst.
		m.kind = mTrue
		return true
	case "icmp", "icmp6", "icmpv6":
		return false
	case "mark":
		if a.Name != "--mark" {
			return false
		}
		v, mask, ok := parseMark(a.Value)
		if !ok {
			return false
		}
		m.kind, m.value, m.mask = mMark, v, mask
		return true
	case "addrtype":
		switch a.Name {
		case "--src-type", "--dst-type":
			bits, ok := parseAddrTypes(a.Value)
			if !ok {
				return false
			}
			m.kind, m.value = mSrcType, bits
			if a.Name == "--dst-type" {
				m.kind = mDstType
			}
			return true
		case "--limit-iface-in", "--limit-iface-out":
			// The node's addresses are not known per interface: LOCAL is
			// judged against all of them.
			m.kind = mTrue
			return true
		}
		return false
	case "conntrack", "state":
		if a.Name != "--ctstate" && a.Name != "--state" {
			return false
		}
		bits, ok := parseCtStates(a.Value)
		if !ok {
			return false
		}
		m.kind, m.value = mCtState, bits
		return true
	case "set":
		if a.Name != "--match-set" && a.Name != "--set" {
			return false
		}
		name, flags, ok := strings.Cut(strings.TrimSpace(a.Value), " ")
		if !ok {
			return false
		}
		sm := &setMatch{name: name}
		for _, f := range strings.Split(strings.TrimSpace(flags), ",") {
			switch f {
			case "src":
				sm.flags = append(sm.flags, true)
			case "dst":
				sm.flags = append(sm.flags, false)
			default:
				return false
			}
		}
		m.kind = mSet
		ext.set = sm
		return true
	case "physdev":
		switch a.Name {
		case "--physdev-is-in", "--physdev-is-out", "--physdev-is-bridged", "--physdev-in", "--physdev-out":
			m.kind = mPhysdev
			return true
		}
		return false
	}
	return false
}

func (cp *compiled) statistic(cr *crule, sc *compileScratch, opts []iptables.Arg) {
	mode, prob, every := "", -1.0, 0
	neg := false
	text := func() string {
		var b strings.Builder
		b.WriteString("-m statistic")
		for _, o := range opts {
			b.WriteString(" " + o.String())
		}
		return b.String()
	}
	for _, o := range opts {
		switch o.Name {
		case "--mode":
			mode = o.Value
		case "--probability":
			p, err := parseProbability(o.Value)
			if err == nil {
				prob = p
			}
			neg = neg || o.Neg
		case "--every":
			n, err := strconv.Atoi(o.Value)
			if err == nil {
				every = n
			}
			neg = neg || o.Neg
		case "--packet":
		default:
			cr.addUnknown(text())
			return
		}
	}
	m := cmatch{kind: mRandom}
	switch {
	case mode == "random" && prob >= 0 && prob <= 1:
		m.prob = kernelProbability(prob)
	case mode == "nth" && every > 0:
		m.prob = 1 / float64(every)
	default:
		cr.addUnknown(text())
		return
	}
	if neg {
		m.prob = 1 - m.prob
	}
	sc.fork = append(sc.fork, m)
}

// parseProbability reads a --probability value as strconv.ParseFloat
// does. iptables-save writes "0.16666666651": up to 15 decimals after
// "0." are read as an integer divided by a power of ten, which, both being
// exact doubles, rounds to the same double as ParseFloat; other forms go
// to ParseFloat.
func parseProbability(s string) (float64, error) {
	if len(s) > 2 && len(s) <= 17 && s[0] == '0' && s[1] == '.' {
		num := uint64(0)
		for i := 2; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return strconv.ParseFloat(s, 64)
			}
			num = num*10 + uint64(s[i]-'0')
		}
		return float64(num) / pow10[len(s)-2], nil
	}
	return strconv.ParseFloat(s, 64)
}

// pow10 holds the powers of ten parseProbability divides by.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// kernelProbability returns the probability the kernel applies for a
// statistic --probability p: it stores p as a 31-bit fraction and
// iptables-save prints that fraction back with 11 decimals, so the printed
// value is read back to the exact stored fraction.
func kernelProbability(p float64) float64 {
	stored := math.Round(p * (1 << 31))
	if stored >= 1<<31 {
		return 1
	}
	if stored <= 0 {
		return 0
	}
	// The printed value of 1/n rounds back to 1/n: keep the exact ratio
	// when it is within the kernel's resolution of one.
	inv := 1 / p
	if n := math.Round(inv); n >= 1 && math.Abs(stored-math.Round((1<<31)/n)) <= 1 {
		return 1 / n
	}
	return stored / (1 << 31)
}

func (cp *compiled) recent(cr *crule, sc *compileScratch, opts []iptables.Arg) {
	name, check := "DEFAULT", ""
	text := "-m recent"
	for _, o := range opts {
		text += " " + o.String()
		switch o.Name {
		case "--name":
			name = o.Value
		case "--rcheck", "--update", "--remove":
			check = o.Name
		case "--set":
			if check == "" {
				check = "--set"
			}
		case "--seconds", "--reap", "--hitcount", "--rttl", "--mask", "--rsource", "--rdest":
		default:
			cr.addUnknown(text)
			return
		}
	}
	if check == "--set" || check == "" {
		return // always matches; records the source
	}
	sc.fork = append(sc.fork, cmatch{kind: mRecent, ext: sc.addExt(matchExt{text: name})})
}

func compileIPVS(sc *compileScratch, opts []iptables.Arg) cmatch {
	im := &ipvsMatch{}
	text := "-m ipvs"
	for _, o := range opts {
		text += " " + o.String()
		switch o.Name {
		case "--ipvs":
			im.property, im.propNeg = true, o.Neg
		case "--vaddr":
			p, ok := parsePrefix(o.Value)
			if !ok {
				im.unknown = append(im.unknown, o.String())
				continue
			}
			im.vaddr, im.vaddrNeg = p, o.Neg
		case "--vport":
			n, err := strconv.ParseUint(o.Value, 10, 16)
			if err != nil {
				im.unknown = append(im.unknown, o.String())
				continue
			}
			im.vport, im.vportNeg = uint16(n), o.Neg
		case "--vproto":
			p, ok := protoNumber(o.Value)
			if !ok {
				im.unknown = append(im.unknown, o.String())
				continue
			}
			im.vproto, im.vprotoNeg = p, o.Neg
		default:
			im.unknown = append(im.unknown, o.String())
		}
	}
	return cmatch{kind: mIPVS, ext: sc.addExt(matchExt{ipvs: im, text: text})}
}

// appendTCPFlags appends the matches of --syn and --tcp-flags, for the
// first packet of a connection (a SYN), to out.
func appendTCPFlags(out []cmatch, opts []iptables.Arg) []cmatch {
	for _, o := range opts {
		m := cmatch{kind: mSyn, neg: o.Neg}
		if o.Name == "--syn" {
			m.synMsk, m.synCmp = tcpFIN|tcpSYN|tcpRST|tcpACK, tcpSYN
		} else {
			mask, cmp, ok := strings.Cut(o.Value, " ")
			if !ok {
				m.kind = mUnknown
			}
			m.synMsk, m.synCmp = parseTCPFlags(mask), parseTCPFlags(cmp)
		}
		out = append(out, m)
	}
	return out
}

const (
	tcpFIN = 1 << iota
	tcpSYN
	tcpRST
	tcpPSH
	tcpACK
	tcpURG
)

// tcpFlagNames are the flags of --tcp-flags (NONE is none of them).
var tcpFlagNames = map[string]uint32{"FIN": tcpFIN, "SYN": tcpSYN, "RST": tcpRST, "PSH": tcpPSH, "ACK": tcpACK, "URG": tcpURG, "ALL": 0x3f, "NONE": 0}

// parseTCPFlags reads a --tcp-flags list; names it does not know are left
// out.
func parseTCPFlags(s string) uint8 {
	bits, _ := parseFlags(s, tcpFlagNames)
	return uint8(bits)
}

func parsePrefix(s string) (netip.Prefix, bool) {
	if p, ok := parseIPv4Prefix(s); ok {
		return p, true
	}
	if addr, mask, ok := strings.Cut(s, "/"); ok {
		if p, err := netip.ParsePrefix(s); err == nil {
			return p.Masked(), true
		}
		// A dotted mask: iptables-save prints contiguous masks as lengths,
		// so only those are accepted.
		a, err1 := netip.ParseAddr(addr)
		m, err2 := netip.ParseAddr(mask)
		if err1 != nil || err2 != nil || !m.Is4() {
			return netip.Prefix{}, false
		}
		b := m.As4()
		v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
		n := 0
		for v&(1<<31) != 0 {
			n++
			v <<= 1
		}
		if v != 0 {
			return netip.Prefix{}, false
		}
		return netip.PrefixFrom(a.Unmap(), n).Masked(), true
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, false
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), true
}

// parseIPv4Prefix reads the usual form of an IPv4 prefix,
// "a.b.c.d/n" (decimal without leading zeros), as netip.ParsePrefix does
// and masked, and quickly: rules have thousands of them. It returns false
// for any other form, which ParsePrefix then reads (or refuses).
func parseIPv4Prefix(s string) (netip.Prefix, bool) {
	a, i, ok := leadingIPv4(s)
	if !ok || i >= len(s) || s[i] != '/' {
		return netip.Prefix{}, false
	}
	bits, n := leadingDecimal(s[i+1:], 2)
	if n == 0 || i+1+n != len(s) || bits > 32 {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(a, bits).Masked(), true
}

// parseIPv4AddrPort reads the usual form of an IPv4 address and port,
// "a.b.c.d:port" (decimal without leading zeros), as netip.ParseAddrPort
// does, and quickly: kube-proxy's DNAT rules write their endpoints so. It
// returns false for any other form, which ParseAddrPort then reads (or
// refuses).
func parseIPv4AddrPort(s string) (netip.AddrPort, bool) {
	a, i, ok := leadingIPv4(s)
	if !ok || i >= len(s) || s[i] != ':' {
		return netip.AddrPort{}, false
	}
	port, n := leadingDecimal(s[i+1:], 5)
	if n == 0 || i+1+n != len(s) || port > 65535 {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(a, uint16(port)), true
}

// leadingIPv4 reads the dotted IPv4 address s starts with (decimal
// without leading zeros), and its length.
func leadingIPv4(s string) (netip.Addr, int, bool) {
	var b [4]byte
	i := 0
	for k := range b {
		if k > 0 {
			if i >= len(s) || s[i] != '.' {
				return netip.Addr{}, 0, false
			}
			i++
		}
		v, n := leadingDecimal(s[i:], 3)
		if n == 0 || v > 255 {
			return netip.Addr{}, 0, false
		}
		b[k], i = byte(v), i+n
	}
	return netip.AddrFrom4(b), i, true
}

// leadingDecimal reads the decimal number s starts with, of at most max
// digits and without a leading zero (but "0"), and its length; 0 for the
// length when there is none, or it has more digits.
func leadingDecimal(s string, max int) (int, int) {
	v, n := 0, 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		if n == max || n == 1 && s[0] == '0' {
			return 0, 0
		}
		v = v*10 + int(s[n]-'0')
		n++
	}
	return v, n
}

func protoNumber(s string) (uint8, bool) {
	switch strings.ToLower(s) {
	case "tcp":
		return 6, true
	case "udp":
		return 17, true
	case "sctp":
		return 132, true
	case "icmp":
		return 1, true
	case "icmpv6", "ipv6-icmp":
		return 58, true
	case "all":
		return 0, true
	}
	n, err := strconv.ParseUint(s, 10, 8)
	return uint8(n), err == nil
}

func parsePorts(s string) ([]portRange, bool) {
	var out []portRange
	for _, part := range strings.Split(s, ",") {
		r, ok := parsePortRange(part)
		if !ok {
			return nil, false
		}
		out = append(out, r)
	}
	return out, len(out) > 0
}

// parsePortRange reads "port", "lo:hi", "lo:" or ":hi".
func parsePortRange(part string) (portRange, bool) {
	lo, hi, isRange := strings.Cut(part, ":")
	a, err := strconv.ParseUint(lo, 10, 16)
	if lo == "" {
		a, err = 0, nil
	}
	if err != nil {
		return portRange{}, false
	}
	b := a
	if isRange {
		b = 65535
		if hi != "" {
			b, err = strconv.ParseUint(hi, 10, 16)
			if err != nil {
				return portRange{}, false
			}
		}
	}
	return portRange{uint16(a), uint16(b)}, true
}

// setPortList sets the port ranges s lists ("80", "80,443", "1000:2000")
// of a port match m: a list goes in its extension. A single range, the
// usual case, is read without allocating.
func setPortList(m *cmatch, ext *matchExt, s string) bool {
	if !strings.Contains(s, ",") {
		r, ok := parsePortRange(s)
		m.port[0] = r
		return ok
	}
	pr, ok := parsePorts(s)
	if ok {
		setPorts(m, ext, pr)
	}
	return ok
}

func parseMark(s string) (uint32, uint32, bool) {
	v, m, hasMask := strings.Cut(s, "/")
	val, err := strconv.ParseUint(v, 0, 32)
	if err != nil {
		return 0, 0, false
	}
	mask := uint64(0xffffffff)
	if hasMask {
		mask, err = strconv.ParseUint(m, 0, 32)
		if err != nil {
			return 0, 0, false
		}
	}
	return uint32(val), uint32(mask), true
}

// addrTypeNames are the address types of -m addrtype the tracer models.
var addrTypeNames = map[string]uint32{"LOCAL": atLocal, "UNICAST": atUnicast, "BROADCAST": atBroadcast, "MULTICAST": atMulticast}

// ctStateNames are the states of --ctstate and --state.
var ctStateNames = map[string]uint32{"NEW": ctNew, "ESTABLISHED": ctEstablished, "RELATED": ctRelated, "INVALID": ctInvalid,
	"UNTRACKED": ctUntracked, "SNAT": ctSNAT, "DNAT": ctDNAT}

func parseAddrTypes(s string) (uint32, bool) { return parseFlags(s, addrTypeNames) }

func parseCtStates(s string) (uint32, bool) { return parseFlags(s, ctStateNames) }

// parseFlags reads a comma-separated list of names (any case) into the
// union of their bits; false when a name is not in names (the bits are
// then those of the names it knows).
func parseFlags(s string, names map[string]uint32) (uint32, bool) {
	var bits uint32
	ok := true
	for _, n := range strings.Split(s, ",") {
		b, known := names[strings.ToUpper(n)]
		bits |= b
		ok = ok && known
	}
	return bits, ok
}

// resolveSet finds the set a --match-set names among the captured ipsets.
func (cp *compiled) resolveSet(dp *Dataplane, sm *setMatch) {
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
	sm.set = cp.sets[sm.name]
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
