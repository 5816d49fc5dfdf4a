package trace

import (
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

// cmatch is one compiled match of a rule. It is kept small, as every rule
// of every chain walked has its matches compiled: what few matches use
// (interfaces, port lists, sets, ipvs options) is behind ext.
type cmatch struct {
	kind   mkind
	neg    bool
	proto  uint8
	synMsk uint8 // --tcp-flags mask and comparison
	synCmp uint8
	port   [1]portRange // the port range of a port match, unless ext has several
	value  uint32       // mark value, addrtype bits, ctstate bits
	mask   uint32
	prefix netip.Prefix
	prob   float64
	ext    *matchExt
}

// matchExt holds what only some kinds of match need.
type matchExt struct {
	iface string      // interface name; a trailing "+" is a prefix match
	ports []portRange // a port list (multiport)
	set   *setMatch
	text  string // the recent list name; the text of an ipvs match
	ipvs  *ipvsMatch
}

// ports returns the port ranges of a port match.
func (m *cmatch) ports() []portRange {
	if m.ext != nil && m.ext.ports != nil {
		return m.ext.ports
	}
	return m.port[:]
}

// setPorts sets the port ranges of a port match.
func (m *cmatch) setPorts(pr []portRange) {
	if len(pr) == 1 {
		m.port[0] = pr[0]
		return
	}
	m.extension().ports = pr
}

// extension returns m.ext, made on first use.
func (m *cmatch) extension() *matchExt {
	if m.ext == nil {
		m.ext = &matchExt{}
	}
	return m.ext
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
	r *iptables.Rule
	// ms are the deterministic matches (the first ndet), then the
	// statistic and recent ones, evaluated last.
	ms      []cmatch
	target  string
	jump    *iptables.Chain // the user chain jumped to, nil for other targets
	unknown *[]string       // the matches not modelled, nil when none
	// targ is the index of the first option after the target, or the
	// number of options when there is none.
	targ      int32
	jslot     int32 // the number of jump in its table's index, -1 when none
	ndet      uint16
	dport     uint16 // the one destination port the rule requires, if hasDport
	isGoto    bool
	hasDst32  bool // the rule requires one destination address
	hasDport  bool
	portMulti bool
}

// det returns the deterministic matches of cr.
func (cr *crule) det() []cmatch { return cr.ms[:cr.ndet] }

// fork returns the statistic and recent matches of cr.
func (cr *crule) fork() []cmatch { return cr.ms[cr.ndet:] }

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

// dst32 returns the one destination address the rule requires, if
// hasDst32.
func (cr *crule) dst32() netip.Addr {
	for _, m := range cr.det() {
		if m.kind == mDst && !m.neg && m.prefix.IsSingleIP() {
			return m.prefix.Addr()
		}
	}
	return netip.Addr{}
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
	table   string
	tix     *tableIndex // the numbering of the chain's table (jumps resolve in it)
	builtin bool
	pinned  bool          // kept for good: a big chain or a built-in one
	used    atomic.Uint32 // the epoch of the last walk that entered it
	rules   []crule
	// byDst indexes big chains: rules whose only destination is one
	// address, by that address; others are the rest, in order.
	byDst  map[netip.Addr][]int32
	byPort map[uint16][]int32 // rules with no single destination but one destination port
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
	t    *iptables.Table
	slot map[*iptables.Chain]int32 // read-only once made
	cc   []atomic.Pointer[cchain]
}

// smallChains is the number of small compiled chains above which those
// no recent walk entered are dropped.
const smallChains = 4096

// recentEpochs is how many walks back a small chain must have been
// entered to survive an eviction: enough for the packets of the Services
// being traced (a sweep hands packets out in order, a few per Service).
const recentEpochs = 512

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
	tix := &tableIndex{t: t, slot: make(map[*iptables.Chain]int32, len(t.Chains)), cc: make([]atomic.Pointer[cchain], len(t.Chains))}
	for i, c := range t.Chains {
		if _, dup := tix.slot[c]; !dup {
			tix.slot[c] = int32(i)
		}
	}
	list = append(list[:len(list):len(list)], tix)
	cp.tables.Store(&list)
	return tix
}

// slotOf returns the number of chain c of tix's table, -1 when the table
// does not list it.
func (tix *tableIndex) slotOf(c *iptables.Chain) int32 {
	if i, ok := tix.slot[c]; ok {
		return i
	}
	return -1
}

// chain returns the compiled form of chain c, numbered slot in tix (-1:
// not numbered, compiled afresh), marked as entered in epoch. Chains are
// compiled without a lock; when two walkers compile the same chain at
// once, the first stored wins.
func (cp *compiled) chain(dp *Dataplane, tix *tableIndex, slot int32, c *iptables.Chain, epoch uint32, jm *jumpMemo) *cchain {
	if slot < 0 {
		return cp.compileChain(dp, tix, c, jm)
	}
	p := &tix.cc[slot]
	for {
		if cc := p.Load(); cc != nil {
			if !cc.pinned && cc.used.Load() != epoch {
				cc.used.Store(epoch)
			}
			return cc
		}
		cc := cp.compileChain(dp, tix, c, jm)
		cc.used.Store(epoch)
		if p.CompareAndSwap(nil, cc) {
			if !cc.pinned {
				cp.keep(chainRef{tix, slot}, epoch)
			}
			return cc
		}
		// Another walker stored it first (and an eviction may have
		// dropped it since): look again.
	}
}

// keep records a small chain stored in the cache, evicting those no
// recent walk entered when there are too many.
func (cp *compiled) keep(r chainRef, epoch uint32) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.small = append(cp.small, r)
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
				st.chains[id] = append(st.chains[id], cp.chain(dp, tix, tix.slotOf(c), c, 0, nil))
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
// rules, and all their matches, are allocated in one block each.
func (cp *compiled) compileChain(dp *Dataplane, tix *tableIndex, c *iptables.Chain, jm *jumpMemo) *cchain {
	builtin := isBuiltin(c.Table.Name, c.Name)
	cc := &cchain{c: c, table: c.Table.Name, tix: tix, builtin: builtin, rules: make([]crule, len(c.Rules)),
		pinned: builtin || len(c.Rules) >= indexThreshold}
	sc := scratchPool.Get().(*compileScratch)
	defer scratchPool.Put(sc)
	sc.all, sc.ends = sc.all[:0], sc.ends[:0]
	for i, r := range c.Rules {
		cr := &cc.rules[i]
		cp.compileRule(dp, tix, r, cr, sc, jm)
		cr.ndet = uint16(len(sc.det))
		sc.all = append(sc.all, sc.det...)
		sc.all = append(sc.all, sc.fork...)
		sc.ends = append(sc.ends, int32(len(sc.all)))
	}
	sc.forget()
	slab := make([]cmatch, len(sc.all))
	copy(slab, sc.all)
	clear(sc.all) // drop the pointers the pool would keep alive
	start := int32(0)
	for i := range cc.rules {
		if end := sc.ends[i]; end > start {
			cc.rules[i].ms = slab[start:end:end]
		}
		start = sc.ends[i]
	}
	if len(cc.rules) >= indexThreshold {
		cc.byDst = map[netip.Addr][]int32{}
		cc.byPort = map[uint16][]int32{}
		for i := range cc.rules {
			cr := &cc.rules[i]
			if cr.hasDst32 {
				a := cr.dst32()
				cc.byDst[a] = append(cc.byDst[a], int32(i))
			} else if cr.hasDport {
				cc.byPort[cr.dport] = append(cc.byPort[cr.dport], int32(i))
			} else {
				cc.others = append(cc.others, int32(i))
			}
		}
	}
	return cc
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

// candidates returns the indexes of the rules of cc that can match a
// packet to dst and dport, in order; nil means all of them. The slice may
// be shared: callers do not modify it. When several index lists apply,
// they are merged at the end of buf, which is returned (grown) too.
func (cc *cchain) candidates(dst netip.Addr, dport uint16, buf []int32) ([]int32, []int32) {
	if cc.byDst == nil {
		return nil, buf
	}
	a, b, c := cc.byDst[dst], cc.byPort[dport], cc.others
	switch {
	case len(a) == 0 && len(b) == 0:
		if c == nil {
			return []int32{}, buf
		}
		return c, buf
	case len(b) == 0 && len(c) == 0:
		return a, buf
	case len(a) == 0 && len(c) == 0:
		return b, buf
	}
	start := len(buf)
	buf = merge3(buf, a, b, c)
	return buf[start:len(buf):len(buf)], buf
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
	det, fork []cmatch // of the rule being compiled
	all       []cmatch // of the rules compiled, det then fork of each
	ends      []int32  // the end of each rule's matches in all
	opts      []iptables.Arg
	flags     []iptables.Arg
}

// forget drops what the scratch refers to of the chain compiled, so that
// the pool keeps no dump alive.
func (sc *compileScratch) forget() {
	clear(sc.opts[:cap(sc.opts)])
	clear(sc.flags[:cap(sc.flags)])
	sc.opts, sc.flags = sc.opts[:0], sc.flags[:0]
}

var scratchPool = sync.Pool{New: func() any { return new(compileScratch) }}

// compileRule compiles r into cr; its matches are gathered in the
// scratch's det and fork, for the caller to store.
func (cp *compiled) compileRule(dp *Dataplane, tix *tableIndex, r *iptables.Rule, cr *crule, sc *compileScratch, jm *jumpMemo) {
	n := r.NumArgs()
	*cr = crule{r: r, targ: int32(n), jslot: -1}
	sc.det, sc.fork = sc.det[:0], sc.fork[:0]
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
			sc.det = append(sc.det, compileIPVS(sc.opts))
		}
		if len(sc.flags) > 0 {
			sc.det = appendTCPFlags(sc.det, sc.flags)
			sc.flags = sc.flags[:0]
		}
		sc.opts = sc.opts[:0]
		module = ""
	}
	for i := 0; i < n; i++ {
		a := r.Arg(i)
		switch a.Name {
		case "-j", "-g", "--jump", "--goto":
			flush()
			cr.target, cr.isGoto, cr.targ = a.Value, a.Name == "-g" || a.Name == "--goto", int32(i+1)
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
		m, ok := compileArg(a, module)
		if !ok {
			cr.addUnknown(argText(a, module))
			continue
		}
		if m.kind == mSet {
			cp.resolveSet(dp, &m)
		}
		if m.kind == mDst && !m.neg && m.prefix.IsSingleIP() && !cr.hasDst32 {
			cr.hasDst32 = true
		}
		if m.kind == mDport && !m.neg && m.value == 0 {
			if pr := m.ports(); len(pr) == 1 && pr[0].lo == pr[0].hi {
				if cr.hasDport || cr.portMulti {
					// Several port matches: left out of the port index.
					cr.hasDport, cr.portMulti = false, true
				} else {
					cr.dport, cr.hasDport = pr[0].lo, true
				}
			}
		}
		if m.kind != mTrue {
			sc.det = append(sc.det, m)
		}
	}
	flush()
	if cr.target != "" && !walkedTarget(cr.target) {
		cr.jump, cr.jslot = jm.resolve(tix, r.Chain.Table, cr.target)
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

// resolve returns the user chain of table t named name, and its number in
// tix (nil when t has no such user chain).
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
	c, slot := t.Chain(name), int32(-1)
	if c != nil && isBuiltin(c.Table.Name, c.Name) {
		c = nil
	}
	if c != nil && tix.t == t {
		slot = tix.slotOf(c)
	}
	if jm != nil {
		jm.hit[len(jm.hit)-1] = jumpTarget{t: t, name: name, c: c, slot: slot}
	}
	return c, slot
}

// walkedTarget reports the targets the walker applies by name (see
// walker.target), iptables.StandardTargets among them: a rule with one of
// them never jumps to a chain of that name, so none is looked up.
func walkedTarget(t string) bool {
	switch t {
	case "ACCEPT", "DROP", "REJECT", "RETURN", "DNAT", "REDIRECT", "SNAT", "MASQUERADE", "MARK",
		"LOG", "NFLOG", "ULOG", "TRACE", "AUDIT", "NOTRACK", "CT", "QUEUE", "NFQUEUE":
		return true
	}
	return false
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

// compileArg compiles one option of a rule outside recent/statistic/ipvs.
func compileArg(a iptables.Arg, module string) (cmatch, bool) {
	m := cmatch{neg: a.Neg}
	switch a.Name {
	case "-s", "--source", "-d", "--destination":
		p, ok := parsePrefix(a.Value)
		if !ok {
			return m, false
		}
		m.prefix = p
		m.kind = mSrc
		if a.Name == "-d" || a.Name == "--destination" {
			m.kind = mDst
		}
		return m, true
	case "-i", "--in-interface", "-o", "--out-interface":
		m.extension().iface = a.Value
		m.kind = mInIface
		if a.Name == "-o" || a.Name == "--out-interface" {
			m.kind = mOutIface
		}
		return m, true
	case "-p", "--protocol":
		p, ok := protoNumber(a.Value)
		if !ok {
			return m, false
		}
		m.kind, m.proto = mProto, p
		return m, true
	case "-f", "--fragment":
		m.kind = mFragment
		return m, true
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
			pr, ok := parsePorts(a.Value)
			if !ok {
				return m, false
			}
			m.setPorts(pr)
			m.value = 1 // either port
			return m, true
		default:
			return m, false
		}
		pr, ok := parsePorts(a.Value)
		if !ok {
			return m, false
		}
		m.setPorts(pr)
		return m, true
	case "comment", "nfacct":
		m.kind = mTrue
		return m, true
	case "limit":
		// The first packet of a connection is within any limit's burst.
		m.kind = mTrue
		return m, true
	case "icmp", "icmp6", "icmpv6":
		return m, false
	case "mark":
		if a.Name != "--mark" {
			return m, false
		}
		v, mask, ok := parseMark(a.Value)
		if !ok {
			return m, false
		}
		m.kind, m.value, m.mask = mMark, v, mask
		return m, true
	case "addrtype":
		switch a.Name {
		case "--src-type", "--dst-type":
			bits, ok := parseAddrTypes(a.Value)
			if !ok {
				return m, false
			}
			m.kind, m.value = mSrcType, bits
			if a.Name == "--dst-type" {
				m.kind = mDstType
			}
			return m, true
		case "--limit-iface-in", "--limit-iface-out":
			// The node's addresses are not known per interface: LOCAL is
			// judged against all of them.
			m.kind = mTrue
			return m, true
		}
		return m, false
	case "conntrack", "state":
		if a.Name != "--ctstate" && a.Name != "--state" {
			return m, false
		}
		bits, ok := parseCtStates(a.Value)
		if !ok {
			return m, false
		}
		m.kind, m.value = mCtState, bits
		return m, true
	case "set":
		if a.Name != "--match-set" && a.Name != "--set" {
			return m, false
		}
		name, flags, ok := strings.Cut(strings.TrimSpace(a.Value), " ")
		if !ok {
			return m, false
		}
		sm := &setMatch{name: name}
		for _, f := range strings.Split(strings.TrimSpace(flags), ",") {
			switch f {
			case "src":
				sm.flags = append(sm.flags, true)
			case "dst":
				sm.flags = append(sm.flags, false)
			default:
				return m, false
			}
		}
		m.kind = mSet
		m.extension().set = sm
		return m, true
	case "physdev":
		switch a.Name {
		case "--physdev-is-in", "--physdev-is-out", "--physdev-is-bridged", "--physdev-in", "--physdev-out":
			m.kind = mPhysdev
			return m, true
		}
		return m, false
	}
	return m, false
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
			p, err := strconv.ParseFloat(o.Value, 64)
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
	sc.fork = append(sc.fork, cmatch{kind: mRecent, ext: &matchExt{text: name}})
}

func compileIPVS(opts []iptables.Arg) cmatch {
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
	return cmatch{kind: mIPVS, ext: &matchExt{ipvs: im, text: text}}
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
		lo, hi, isRange := strings.Cut(part, ":")
		a, err := strconv.ParseUint(lo, 10, 16)
		if lo == "" {
			a, err = 0, nil
		}
		if err != nil {
			return nil, false
		}
		b := a
		if isRange {
			b = 65535
			if hi != "" {
				b, err = strconv.ParseUint(hi, 10, 16)
				if err != nil {
					return nil, false
				}
			}
		}
		out = append(out, portRange{uint16(a), uint16(b)})
	}
	return out, len(out) > 0
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
func (cp *compiled) resolveSet(dp *Dataplane, m *cmatch) {
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
	m.ext.set.set = cp.sets[m.ext.set.name]
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
