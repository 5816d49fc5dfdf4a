package trace

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/google/nftables"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/internal/ahead"
	"github.com/proxyscan/proxyscan/parsers/nft"
)

// The nftables engine walks the base chains of every table of the packet's
// family (ip or ip6, and inet) hook by hook, in priority order across
// tables, the way nf_tables evaluates them for the first packet of a
// connection:
//
//   - from a pod or from outside: prerouting, then input when the
//     (DNATed) destination is local, else forward and postrouting;
//   - from the node: output and postrouting, then prerouting and input
//     when the destination is local (the loopback re-entry).
//
// nat chains run at the NAT core's place in the hook (-100 for
// prerouting and output, 100 for input and postrouting), ordered among
// themselves by priority, and only until one of them binds the
// connection; once a hook of a manipulation type (destination or source)
// has run, the nat chains of that type are not run again for the
// connection.

// natCorePriority is where the kernel's NAT hook sits in each hook.
var natCorePriority = map[string]int32{"prerouting": -100, "output": -100, "input": 100, "postrouting": 100}

// natIdx is 0 for the hooks whose nat chains rewrite the destination,
// 1 for those rewriting the source.
func natIdx(hook string) int {
	if hook == "prerouting" || hook == "output" {
		return 0
	}
	return 1
}

// nftBase is a base chain with the table it belongs to.
type nftBase struct {
	t   *nftTable
	c   *nft.Chain
	key int32 // evaluation order within the hook
	nat bool
}

// nftTable is one table the walk reads, with its lookups.
type nftTable struct {
	t      *nft.Table
	label  string // "ip kube-proxy"
	chains map[string]*nft.Chain
	sets   map[string]*nft.Set
	// dynamic holds the sets rules add to from the packet path (affinity).
	dynamic map[string]bool

	// named, anon and values are built with the table and only read
	// afterwards; the lazy maps (under mu) hold what they miss.
	named      map[*nft.Set]*setIndex
	anon       map[*nft.AnonSet]*setIndex
	values     map[*nft.Value]*part
	parts      map[string]*part // values by text, while the table is built
	mu         sync.Mutex
	lazySets   map[*nft.Set]*setIndex
	lazyAnon   map[*nft.AnonSet]*setIndex
	lazyValues map[*nft.Value]*part
}

// nftWalk is the walk of one packet.
type nftWalk struct {
	dp    *Dataplane
	ix    *nftIndex // of dp, for the packet's family
	pkt   Packet
	opts  Options
	hooks map[string][]nftBase
	done  []Path
	// warnings for the whole result.
	warnings []string
	// oneBranch and oneOut hold the last outcome of one of a statement
	// and of a rule (see one1, out1).
	oneBranch [1]branch
	oneOut    [1]ruleOut
	// arena holds the statement outcomes of the walk that fork.
	arena []branch
	outs  []ruleOut
	ends  []chainEnd
	vals  []nval
	vars  []variant
	ptrs  []*nftState // the states that pass a base chain (see hook)
	// drawBuf and mapDrawBuf are reused by every map lookup of the
	// walk (see draws, mapDraws).
	drawBuf    []draw
	mapDrawBuf []mapDraw
	// dests caches the texts of the paths' destinations (see destText).
	dests map[netip.AddrPort]string
	// nwork counts the rules evaluated, over every path; err is set when
	// it passed the bound: the walk stops.
	nwork   int
	maxWork int
	err     *WorkError
	// forkTable and forkChain name the chain of the last fork, named
	// when nwork passes maxWork.
	forkTable, forkChain string
	// memo holds the ends of the chains entered, by state, in a summary
	// (see runChainMerged).
	memo     map[memoKey]int32
	memoEnts []memoEntry
	kbuf     []byte // scratch of the states' keys
	// memoHashed is set once memo holds the entries; until then each
	// chain of enteredFew lists its entries, the last one in memoHeads
	// at the chain's place (-1 for none).
	memoHashed bool
	memoHeads  []int32
	// enteredFew, then entered, hold the chains entered (see
	// enteredBefore).
	enteredFew []*nft.Chain
	entered    map[*nft.Chain]struct{}
	// states is the chunk clones are carved from (see clone); firstFull
	// is set once the first, reused, chunk is full.
	states    []nftState
	firstFull bool
	// jumps remembers the last chains jumped to (see chain).
	jumps    [4]jumpSeen
	nextJump uint8
	// sets and values remember the last sets and constants of rules
	// read (see index, value).
	sets      [4]setSeen
	nextSet   uint8
	values    [4]valueSeen
	nextValue uint8
}

// setSeen is the set a rule's set reference names, and its index.
type setSeen struct {
	ref     *nft.SetRef
	ix      *setIndex
	set     *nft.Set
	dynamic bool // rules add to set from the packet path
}

// valueSeen is a rule's constant, read.
type valueSeen struct {
	v *nft.Value
	p *part
}

// value returns the constant v of a rule of t, read ([nftTable.valuePart]):
// the last few are remembered, as every endpoint's state after the DNAT
// meets the same rules.
func (w *nftWalk) value(t *nftTable, v *nft.Value) *part {
	for i := range w.values {
		if w.values[i].v == v {
			return w.values[i].p
		}
	}
	p := t.valuePart(v)
	w.values[w.nextValue%uint8(len(w.values))] = valueSeen{v: v, p: p}
	w.nextValue++
	return p
}

// jumpSeen is a chain a walk jumped to, by its table and name.
type jumpSeen struct {
	t    *nftTable
	name string
	c    *nft.Chain
}

// chain returns the chain of t called name, nil for none. A packet jumps
// to a few chains over and over (each endpoint's state meets the same
// filter and masquerading chains after the DNAT, from the same rules):
// the last few found are looked at first, their names compared, which
// for the name of the same rule is a comparison of pointers.
func (w *nftWalk) chain(t *nftTable, name string) *nft.Chain {
	for i := range w.jumps {
		if j := &w.jumps[i]; j.t == t && j.name == name {
			return j.c
		}
	}
	c := t.chains[name]
	w.jumps[w.nextJump%uint8(len(w.jumps))] = jumpSeen{t: t, name: name, c: c}
	w.nextJump++
	return c
}

// clone returns a copy of s carved from the walk's state arena: nothing
// of the walk's result points to a state (paths copy what they keep).
func (w *nftWalk) clone(s *nftState) *nftState {
	c := w.newState(s)
	s.cloneInto(c)
	return c
}

// newState returns a shallow copy of s carved from the walk's state
// arena, starting a new chunk when the current one is full.
func (w *nftWalk) newState(s *nftState) *nftState {
	if len(w.states) == cap(w.states) {
		w.states, w.firstFull = make([]nftState, 0, nftStateChunk), true
	}
	w.states = append(w.states, *s)
	return &w.states[len(w.states)-1]
}

// snapshot returns a copy of s, carved from the walk's state arena,
// that keeps what [nftState.same] compares (not its steps or hops).
func (w *nftWalk) snapshot(s *nftState) *nftState {
	c := w.newState(s)
	c.steps, c.hops = nil, nil
	c.conds = s.conds[:len(s.conds):len(s.conds)]
	c.warnings = s.warnings[:len(s.warnings):len(s.warnings)]
	if s.updated != nil {
		c.updated = make(map[string]bool, len(s.updated))
		for k, v := range s.updated {
			c.updated[k] = v
		}
	}
	return c
}

// nftScratch is the first chunk of a walk's arenas, reused by the next
// walk: nothing of a walk's result points into them.
type nftScratch struct {
	arena  []branch
	outs   []ruleOut
	ends   []chainEnd
	vals   []nval
	vars   []variant
	ptrs   []*nftState
	states []nftState
	// memo and memoEnts are the walk's memo (see runChainMerged), kept
	// for the next walk when they stayed small.
	memo     map[memoKey]int32
	memoEnts []memoEntry
	kbuf     []byte
	// enteredFew is the walk's, cleared, and memoHeads the walk's.
	enteredFew []*nft.Chain
	memoHeads  []int32
	// drawBuf and mapDrawBuf are the walk's.
	drawBuf    []draw
	mapDrawBuf []mapDraw
	// dests is the walks' cache of destinations' texts (see destText).
	dests map[netip.AddrPort]string
}

// maxPooledMemo is the most entries of a walk's memo the next walk
// reuses: a map does not shrink, and is cleared bucket by bucket.
const maxPooledMemo = 1024

// nftStateChunk is how many states a chunk of the walk's state arena
// holds: the first chunk is reused by the next walk, and a summary's walk
// of a kube-proxy ruleset clones about 80 states.
const nftStateChunk = 256

var nftScratchPool = sync.Pool{New: func() any {
	// Sized for a summary's walk of a kube-proxy ruleset (a Service of
	// five endpoints): each chain it enters takes room for eight ends.
	return &nftScratch{arena: make([]branch, 0, 256), outs: make([]ruleOut, 0, 256), ends: make([]chainEnd, 0, 1024), vals: make([]nval, 0, 256),
		vars: make([]variant, 0, 128), ptrs: make([]*nftState, 0, 256), states: make([]nftState, 0, nftStateChunk)}
}}

// release clears the chunks (they hold states) and returns them to the
// pool with w's memo; states is how many of the first state chunk the
// walk used.
func (sc *nftScratch) release(states int, w *nftWalk) {
	sc.memo, sc.memoEnts, sc.kbuf, sc.dests = nil, nil, w.kbuf, w.dests
	clear(w.enteredFew)
	sc.enteredFew, sc.memoHeads = w.enteredFew[:0], w.memoHeads[:0]
	if len(w.memoEnts) <= maxPooledMemo {
		clear(w.memo)
		clear(w.memoEnts)
		sc.memo, sc.memoEnts = w.memo, w.memoEnts[:0]
	}
	clearUsed(sc.arena, w.arena)
	clearUsed(sc.outs, w.outs)
	clearUsed(sc.ends, w.ends)
	clearUsed(sc.vals, w.vals)
	clearUsed(sc.vars, w.vars)
	clearUsed(sc.ptrs, w.ptrs)
	sc.drawBuf, sc.mapDrawBuf = w.drawBuf[:0], w.mapDrawBuf[:0]
	clear(sc.mapDrawBuf[:cap(sc.mapDrawBuf)])
	clear(sc.drawBuf[:cap(sc.drawBuf)])
	clear(sc.states[:states])
	nftScratchPool.Put(sc)
}

// keep takes back w's buffers and memo for the next walk, as release
// does, without clearing what they hold (the memo is emptied).
func (sc *nftScratch) keep(w *nftWalk) {
	sc.kbuf, sc.dests = w.kbuf, w.dests
	sc.enteredFew, sc.memoHeads = w.enteredFew[:0], w.memoHeads[:0]
	sc.memo, sc.memoEnts = nil, nil
	if len(w.memoEnts) <= maxPooledMemo {
		clear(w.memo)
		sc.memo, sc.memoEnts = w.memo, w.memoEnts[:0]
	}
	sc.drawBuf, sc.mapDrawBuf = w.drawBuf[:0], w.mapDrawBuf[:0]
}

// putBack clears every chunk of sc (kept by walks that did not clear
// them, see keep) and returns it to the pool.
func (sc *nftScratch) putBack() {
	clear(sc.arena[:cap(sc.arena)])
	clear(sc.outs[:cap(sc.outs)])
	clear(sc.ends[:cap(sc.ends)])
	clear(sc.vals[:cap(sc.vals)])
	clear(sc.vars[:cap(sc.vars)])
	clear(sc.ptrs[:cap(sc.ptrs)])
	clear(sc.states[:cap(sc.states)])
	clear(sc.memoEnts[:cap(sc.memoEnts)])
	clear(sc.enteredFew[:cap(sc.enteredFew)])
	clear(sc.drawBuf[:cap(sc.drawBuf)])
	clear(sc.mapDrawBuf[:cap(sc.mapDrawBuf)])
	nftScratchPool.Put(sc)
}

// clearUsed clears what a walk used of first, the first chunk of one of
// its arenas, whose last chunk is last: the part it carved when last is
// first, else all of it.
func clearUsed[T any](first, last []T) {
	if cap(first) > 0 && cap(last) > 0 && &first[:1][0] == &last[:1][0] {
		clear(first[:len(last)])
		return
	}
	clear(first[:cap(first)])
}

// nftState is one branch of the walk: the packet as the rules see it.
type nftState struct {
	prob     float64
	src, dst netip.Addr
	mark     uint32
	ctmark   uint32
	nsteps   int // rules met (steps are not kept for a summary)
	dport    uint16
	natDone  [2]bool // by natIdx: destination, source
	masq     bool
	// merged reports a state that stands for several ways through the
	// rules that reached the same state (see mergeState): its steps are
	// those of the most probable.
	merged   bool
	proto    string
	iif, oif string
	dnat     netip.AddrPort // destination after DNAT (not valid when none)
	snat     string
	hook     string
	conds    []string
	steps    []Step
	warnings []string
	updated  map[string]bool
	// hops are the hooks entered (not in a summary), why what the next
	// one is entered for.
	hops []Hop
	why  string
}

// cloneInto makes c, a copy of s, share nothing with s that either may
// change in place.
func (s *nftState) cloneInto(c *nftState) {
	c.conds = s.conds[:len(s.conds):len(s.conds)]
	if s.steps != nil {
		c.steps = make([]Step, len(s.steps), len(s.steps)+12)
		copy(c.steps, s.steps)
	}
	c.warnings = s.warnings[:len(s.warnings):len(s.warnings)]
	c.hops = s.hops[:len(s.hops):len(s.hops)]
	if s.updated != nil {
		c.updated = map[string]bool{}
		for k, v := range s.updated {
			c.updated[k] = v
		}
	}
}

func (s *nftState) warn(msg string) {
	for _, w := range s.warnings {
		if w == msg {
			return
		}
	}
	s.warnings = append(s.warnings, msg)
}

// is4 reports whether the packet is IPv4.
func (s *nftState) is4() bool { return s.dst.Is4() }

// kernel verdict kinds of one chain run.
const (
	vFall   = iota // end of chain reached (or return): back to the caller, policy in a base chain
	vAccept        // accept (or a NAT statement): ends the base chain
	vDrop
	vReject
)

// chainEnd is one way a chain run ends.
type chainEnd struct {
	st   *nftState
	kind int
}

// nftTables returns the tables of the packet's family, one per family and
// name: of several listings of the same table, the text one (with line
// numbers) before the JSON one.
func nftTables(dp *Dataplane, v4 bool) []*nftTable {
	type key struct {
		f    nftables.TableFamily
		name string
	}
	rulesets := append([]*nft.Ruleset(nil), dp.NFT...)
	sort.SliceStable(rulesets, func(i, j int) bool { return !isJSONRuleset(rulesets[i]) && isJSONRuleset(rulesets[j]) })
	seen := map[key]bool{}
	var out []*nftTable
	for _, rs := range rulesets {
		for _, t := range rs.Tables {
			switch t.Family {
			case nftables.TableFamilyINet:
			case nftables.TableFamilyIPv4:
				if !v4 {
					continue
				}
			case nftables.TableFamilyIPv6:
				if v4 {
					continue
				}
			default:
				continue
			}
			k := key{t.Family, t.Name}
			if seen[k] {
				continue
			}
			seen[k] = true
			if nt, ok := readNFT.Take(t); ok {
				out = append(out, nt)
			} else {
				out = append(out, newNFTTable(t))
			}
		}
	}
	return out
}

func isJSONRuleset(rs *nft.Ruleset) bool {
	return len(rs.Tables) > 0 && strings.HasPrefix(rs.Tables[0].Pos.Path, "$")
}

// readNFT holds the readings of tables [ReadNFTAhead] started, by table:
// one whose reading panicked gives none, and the table is read again
// where it is asked, so that the panic is raised there.
var readNFT ahead.Results[*nft.Table, *nftTable]

// ReadNFTAhead starts reading in the background what the engine reads of
// the tables of rulesets (their chains and sets indexed, their constants
// and anonymous sets compiled) and finding the rulesets' problems (see
// ValidateNFT), as soon as they are parsed, so that it
// runs while the rest of a node's inputs are decoded and assembled: the
// first trace or sweep of a data plane holding a table takes its reading,
// waiting for its end, rather than reading the table then, and the first
// validation of a ruleset its problems. The rulesets must not change
// afterwards.
func ReadNFTAhead(rulesets []*nft.Ruleset) {
	for _, rs := range rulesets {
		prevalidatedNFT.Start(rs, func() []Problem { return validateRuleset(rs) })
		for _, t := range rs.Tables {
			switch t.Family {
			case nftables.TableFamilyINet, nftables.TableFamilyIPv4, nftables.TableFamilyIPv6:
				readNFT.Start(t, func() *nftTable { return newNFTTable(t) })
			}
		}
	}
}

// ForgetNFT drops the readings and validations [ReadNFTAhead] started of
// rulesets that no trace or validation took, so that they do not keep the tables
// alive; one still running ends unread.
func ForgetNFT(rulesets []*nft.Ruleset) {
	for _, rs := range rulesets {
		prevalidatedNFT.Forget(rs)
		for _, t := range rs.Tables {
			readNFT.Forget(t)
		}
	}
}

func newNFTTable(t *nft.Table) *nftTable {
	nt := &nftTable{t: t, label: nft.FamilyName(t.Family) + " " + t.Name,
		chains: make(map[string]*nft.Chain, len(t.Chains)), sets: make(map[string]*nft.Set, len(t.Sets)), dynamic: map[string]bool{},
		named: map[*nft.Set]*setIndex{}, anon: map[*nft.AnonSet]*setIndex{}, values: map[*nft.Value]*part{},
		lazySets: map[*nft.Set]*setIndex{}, lazyAnon: map[*nft.AnonSet]*setIndex{}, lazyValues: map[*nft.Value]*part{}}
	for _, c := range t.Chains {
		nt.chains[c.Name] = c
		for _, r := range c.Rules {
			for _, s := range r.Stmts {
				if u, ok := s.(*nft.SetUpdate); ok {
					nt.dynamic[u.Set] = true
				}
				nt.precompile(s)
			}
		}
	}
	for _, s := range t.Sets {
		nt.sets[s.Name] = s
		nt.named[s] = newSetIndex(s.Elements)
		if s.HasFlag("dynamic") {
			nt.dynamic[s.Name] = true
		}
	}
	nt.parts = nil
	return nt
}

// nftHooks orders the filter, nat and route base chains of tables by hook.
func nftHooks(tables []*nftTable) (map[string][]nftBase, []string) {
	hooks := map[string][]nftBase{}
	var warns []string
	for _, t := range tables {
		for _, c := range t.t.Chains {
			if !c.IsBase() {
				continue
			}
			switch c.Hook {
			case "prerouting", "input", "forward", "output", "postrouting":
			default:
				warns = append(warns, fmt.Sprintf("%s chain %s at hook %s is not traced", t.label, c.Name, c.Hook))
				continue
			}
			var prio int32
			if c.Priority != nil {
				prio = int32(c.Priority.Value)
			}
			b := nftBase{t: t, c: c, key: prio}
			if c.Type == nftables.ChainTypeNAT {
				b.nat = true
				b.key = natCorePriority[c.Hook]
			}
			hooks[c.Hook] = append(hooks[c.Hook], b)
		}
	}
	for h, bs := range hooks {
		sort.SliceStable(bs, func(i, j int) bool {
			if bs[i].key != bs[j].key {
				return bs[i].key < bs[j].key
			}
			if bs[i].nat && bs[j].nat {
				return chainPrio(bs[i].c) < chainPrio(bs[j].c)
			}
			return false
		})
		hooks[h] = bs
	}
	return hooks, warns
}

func chainPrio(c *nft.Chain) int32 {
	if c.Priority == nil {
		return 0
	}
	return int32(c.Priority.Value)
}

func traceNFT(dp *Dataplane, pkt Packet, opts Options) (*Result, error) {
	res := &Result{}
	if err := walkNFT(dp, pkt, opts, res); err != nil {
		return nil, err
	}
	return res, nil
}

// walkNFT is traceNFT writing into res, whose paths' room it reuses (a
// sweep's worker reads the result before its next packet).
func walkNFT(dp *Dataplane, pkt Packet, opts Options, res *Result) error {
	return walkNFTWith(dp, pkt, opts, res, nftScratchPool.Get().(*nftScratch), true, nil)
}

// walkNFTWith is walkNFT walking with the arenas of sc, which the walk
// hands back to sc when it ends: cleared and put back in the pool when
// pool is set, else kept as they are for the next walk of the same
// goroutine (a sweep's worker, which drops sc when it is done): nothing
// of a walk's result points into them, and clearing them for each of
// tens of thousands of packets cost the collector's write barriers while
// it marks. ixs, when not nil, is the caller's room for dp's indexes by
// family (see nftIndexOf; [1] for IPv4), kept from one walk to the next.
func walkNFTWith(dp *Dataplane, pkt Packet, opts Options, res *Result, sc *nftScratch, pool bool, ixs *[2]*nftIndex) error {
	dst := pkt.Dst.Addr().Unmap()
	v4 := dst.Is4()
	if len(dp.NFT) == 0 {
		return fmt.Errorf("trace: no nftables ruleset captured")
	}
	var ix *nftIndex
	fam := 0
	if v4 {
		fam = 1
	}
	if ixs != nil {
		ix = ixs[fam]
	}
	if ix == nil {
		ix = nftIndexOf(dp, v4)
		if ixs != nil {
			ixs[fam] = ix
		}
	}
	tables := ix.tables
	done := res.Paths[:0]
	if done == nil {
		done = make([]Path, 0, 8)
	}
	w := &nftWalk{dp: dp, opts: opts, ix: ix, hooks: ix.hooks, arena: sc.arena[:0], outs: sc.outs[:0], ends: sc.ends[:0], vals: sc.vals[:0], vars: sc.vars[:0], ptrs: sc.ptrs[:0],
		drawBuf: sc.drawBuf, mapDrawBuf: sc.mapDrawBuf, dests: sc.dests,
		states: sc.states[:0], memo: sc.memo, memoEnts: sc.memoEnts, kbuf: sc.kbuf, enteredFew: sc.enteredFew, memoHeads: sc.memoHeads, done: done, maxWork: opts.maxWork(dp)}
	defer func() {
		if !pool {
			sc.keep(w)
			return
		}
		used := len(w.states)
		if w.firstFull {
			used = cap(sc.states)
		}
		sc.release(used, w)
	}()
	w.warnings = append(w.warnings, ix.warns...)
	if len(tables) == 0 {
		w.warnings = append(w.warnings, fmt.Sprintf("no nftables table of the %s family in the ruleset", familyWord(v4)))
	}
	pkt = w.choose(pkt, tables, v4)
	w.pkt = pkt
	st := w.clone(&nftState{prob: 1, src: pkt.Src.Unmap(), dst: dst, dport: pkt.Dst.Port(), proto: pkt.Proto,
		iif: pkt.InIface})
	if !opts.Summary {
		st.steps = make([]Step, 0, 16)
		st.why = arrivalWhy(pkt)
	}
	switch pkt.From {
	case model.FromNode:
		for _, s := range w.hook([]*nftState{st}, "output") {
			for _, s := range w.hook([]*nftState{s}, "postrouting") {
				if dp.IsLocal(s.dst) {
					s.iif = "lo"
					if !opts.Summary {
						s.why = dp.loopbackWhy(s.dst)
					}
					w.finish(w.hook(w.hook([]*nftState{s}, "prerouting"), "input"))
				} else {
					w.finish([]*nftState{s})
				}
			}
		}
	default:
		for _, s := range w.hook([]*nftState{st}, "prerouting") {
			if !opts.Summary {
				s.why = dp.routeWhy(s.dst, s.dnat.IsValid())
			}
			if dp.IsLocal(s.dst) {
				w.finish(w.hook([]*nftState{s}, "input"))
			} else {
				w.finish(w.hook(w.hook([]*nftState{s}, "forward"), "postrouting"))
			}
		}
	}
	lastWork.Store(int64(w.nwork))
	if w.err != nil {
		return w.err
	}
	res.Packet = pkt
	res.Paths = w.done
	if max := opts.maxPaths(); len(res.Paths) > max {
		res.Paths = Merge(res.Paths)
		if len(res.Paths) > max {
			w.warnings = append(w.warnings, fmt.Sprintf("%d paths, only the %d most probable are kept", len(res.Paths), max))
			res.Paths = res.Paths[:max]
		}
	}
	if len(res.Paths) > 0 {
		res.Paths = merge(res.Paths, res.Paths[:0]) // the walk's paths are the trace's own
	}
	if !opts.Summary && slices.ContainsFunc(res.Paths, func(p Path) bool { return p.Merged }) {
		res.Paths = mergeOutcomes(res.Paths)
		w.warnings = append(w.warnings, mergedWarning)
	}
	res.Warnings = w.warnings
	return nil
}

func familyWord(v4 bool) string {
	if v4 {
		return "IPv4"
	}
	return "IPv6"
}

// choose fills in the source address and interface the packet leaves
// unset.
func (w *nftWalk) choose(pkt Packet, tables []*nftTable, v4 bool) Packet {
	if !pkt.Src.IsValid() {
		switch pkt.From {
		case model.FromNode:
			pkt.Src = nodeSource(w.dp, v4)
		case model.FromExternal:
			if v4 {
				pkt.Src = netip.MustParseAddr("198.51.100.77")
			} else {
				pkt.Src = netip.MustParseAddr("2001:db8:ffff::77")
			}
		default:
			pkt.Src = w.podSource(tables, v4)
		}
		if !pkt.Src.IsValid() {
			w.warnings = append(w.warnings, "no source address known for a packet from "+pkt.From.String())
			if v4 {
				pkt.Src = netip.MustParseAddr("192.0.2.1")
			} else {
				pkt.Src = netip.MustParseAddr("2001:db8::1")
			}
		}
	}
	if pkt.InIface == "" {
		switch pkt.From {
		case model.FromPod:
			pkt.InIface = defaultPodIface
		case model.FromExternal:
			pkt.InIface = defaultExternalIface
		}
	}
	return pkt
}

// podSource returns the pod source address of the family, chosen once per
// data plane.
func (w *nftWalk) podSource(tables []*nftTable, v4 bool) netip.Addr {
	ix := w.ix
	ix.podSrcOnce.Do(func() { ix.podSrc = podSource(w.dp, tables, v4) })
	return ix.podSrc
}

// nodeSource is the node's first address of the family that is neither
// loopback nor link-local.
func nodeSource(dp *Dataplane, v4 bool) netip.Addr {
	for _, a := range dp.Local {
		if a.Is4() == v4 && !a.IsLoopback() && !a.IsLinkLocalUnicast() && !inPrefixes(a, dp.PodCIDRs) {
			return a
		}
	}
	for _, a := range dp.Local {
		if a.Is4() == v4 && !a.IsLoopback() && !a.IsLinkLocalUnicast() {
			return a
		}
	}
	return netip.Addr{}
}

func inPrefixes(a netip.Addr, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// podSource is an address of the node's pod range (the 250th, or the
// last but one of a smaller range), or
// of the pod range the rules name (`ip saddr != CIDR` in a masquerade
// rule) when the node's ranges are not known.
func podSource(dp *Dataplane, tables []*nftTable, v4 bool) netip.Addr {
	for _, p := range dp.PodCIDRs {
		if p.Addr().Is4() == v4 {
			return podAddr(p.Masked())
		}
	}
	for _, t := range tables {
		for _, c := range t.t.Chains {
			for _, r := range c.Rules {
				for _, s := range r.Stmts {
					m, ok := s.(*nft.Match)
					if !ok {
						continue
					}
					pl, ok := m.Left.(*nft.Payload)
					v, ok2 := m.Right.(*nft.Value)
					if !ok || !ok2 || pl.Field != "saddr" {
						continue
					}
					if p, err := netip.ParsePrefix(v.Text); err == nil && p.Addr().Is4() == v4 && p.Bits() < p.Addr().BitLen() {
						return podAddr(p.Masked())
					}
				}
			}
		}
	}
	return netip.Addr{}
}

// podAddr returns the 250th address of p, or the last but one when p is
// smaller.
func podAddr(p netip.Prefix) netip.Addr {
	if p.Addr().BitLen()-p.Bits() >= 8 {
		a := p.Addr()
		for i := 0; i < 250; i++ {
			a = a.Next()
		}
		return a
	}
	return lastButOne(p)
}

// lastButOne returns the address before the last of p.
func lastButOne(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a.Prev()
}

// hook runs the base chains of one hook for every state and returns the
// states that pass it; the others end their paths.
func (w *nftWalk) hook(in []*nftState, hook string) []*nftState {
	if !w.opts.Summary {
		name := strings.ToUpper(hook)
		for _, st := range in {
			why := st.why
			if why == "" {
				why = usualWhy(name, w.dp.outIface(st.dst))
			}
			st.hops = append(st.hops, Hop{Step: len(st.steps), Hook: name, Why: why})
			st.why = ""
		}
	}
	cur := in
	for _, b := range w.hooks[hook] {
		next := carve(&w.ptrs, max(8, 2*len(cur)))
		for _, st := range cur {
			if b.nat && st.natDone[natIdx(hook)] {
				next = append(next, st)
				continue
			}
			st.hook = hook
			for _, e := range w.runChain(st, b.t, b.c, 0) {
				switch e.kind {
				case vFall:
					if b.c.Policy != nil && *b.c.Policy == nftables.ChainPolicyDrop {
						e.st.steps = append(e.st.steps, Step{Table: b.t.label, Chain: b.c.Name, Rule: "policy drop",
							File: b.c.Pos().File, Line: b.c.Pos().Line, Path: b.c.Pos().Path, Note: "chain policy DROP"})
						w.end(e.st, VerdictDrop)
						continue
					}
					next = append(next, e.st)
				case vAccept:
					next = append(next, e.st)
				case vDrop:
					w.end(e.st, VerdictDrop)
				case vReject:
					w.end(e.st, VerdictReject)
				}
			}
		}
		cur = next
	}
	for _, st := range cur {
		if hook != "forward" { // a hook of the NAT core (see natCorePriority)
			st.natDone[natIdx(hook)] = true
		}
	}
	return cur
}

// finish ends the paths of states that passed every hook.
func (w *nftWalk) finish(sts []*nftState) {
	for _, st := range sts {
		switch {
		case st.dnat.IsValid():
			w.end(st, VerdictDNAT)
		case w.dp.IsLocal(st.dst):
			w.end(st, VerdictLocal)
		default:
			w.end(st, VerdictAccept)
		}
	}
}

func (w *nftWalk) end(st *nftState, v Verdict) {
	p := Path{Probability: st.prob, Verdict: v, Masquerade: st.masq, SNAT: st.snat,
		Conditions: st.conds, Steps: st.steps, Warnings: st.warnings, Hops: st.hops, Merged: st.merged}
	if st.dnat.IsValid() {
		p.Destination = w.destText(st.dnat)
	} else {
		p.Destination = w.destText(netip.AddrPortFrom(st.dst, st.dport))
	}
	if p.Steps == nil {
		p.Steps = []Step{}
	}
	noteUnmasqueraded(&p, w.pkt, st.mark)
	w.done = append(w.done, p)
}

// maxDests is the most destinations' texts the walks of a scratch keep.
const maxDests = 1024

// destText returns the text of a path's destination, from the cache the
// walks of a scratch share: a sweep traces the packets of a service port
// one after the other (from a pod, from the node), whose paths end at the
// same endpoints, and the text of each was a string made for every path.
func (w *nftWalk) destText(ap netip.AddrPort) string {
	if s, ok := w.dests[ap]; ok {
		return s
	}
	s := ap.String()
	if w.dests == nil {
		w.dests = make(map[netip.AddrPort]string, 64)
	} else if len(w.dests) >= maxDests {
		clear(w.dests)
	}
	w.dests[ap] = s
	return s
}

// maxJumps is the kernel's jump stack depth (NFT_JUMP_STACK_SIZE).
const maxJumps = 16

// runChain runs the rules of chain c from the top for st.
func (w *nftWalk) runChain(st *nftState, t *nftTable, c *nft.Chain, depth int) []chainEnd {
	if w.opts.Summary || w.nwork > callAfter {
		return w.runChainMerged(st, t, c, depth)
	}
	return w.runRules(st, t, c, 0, depth)
}

// runRules runs the rules of c from rule i on.
func (w *nftWalk) runRules(st *nftState, t *nftTable, c *nft.Chain, i, depth int) []chainEnd {
	var out []chainEnd
	for ; i < len(c.Rules); i++ {
		r := c.Rules[i]
		if w.nwork++; w.nwork > w.maxWork || w.err != nil {
			if w.err == nil {
				w.err = &WorkError{Limit: w.maxWork, Table: t.label, Chain: c.Name}
				if w.forkChain != "" {
					w.err.Table, w.err.Chain = w.forkTable, w.forkChain
				}
			}
			return nil
		}
		if st.nsteps >= w.opts.maxSteps() {
			st.warn(fmt.Sprintf("more than %d rules met: path cut as a loop", w.opts.maxSteps()))
			return w.addEnd(out, chainEnd{st, vDrop})
		}
		outs := w.evalRule(st, t, c, r)
		if len(outs) > 1 {
			// Each branch holds a copy of the steps: they count as work.
			w.nwork += len(outs) * len(st.steps)
			w.forkTable, w.forkChain = t.label, c.Name
		}
		if len(outs) == 1 && outs[0].kind == rNoMatch {
			st = outs[0].st
			continue
		}
		var cont *nftState
		for k, o := range outs {
			switch o.kind {
			case rNoMatch, rContinue:
				if k == len(outs)-1 {
					cont = o.st // the last branch goes on in this loop
					continue
				}
				out = catEnds(out, w.runRules(o.st, t, c, i+1, depth))
			case rAccept:
				out = w.addEnd(out, chainEnd{o.st, vAccept})
			case rDrop:
				out = w.addEnd(out, chainEnd{o.st, vDrop})
			case rReject:
				out = w.addEnd(out, chainEnd{o.st, vReject})
			case rReturn:
				out = w.addEnd(out, chainEnd{o.st, vFall})
			case rJump, rGoto:
				target := w.chain(t, o.target)
				if target == nil {
					o.st.warn(fmt.Sprintf("%s chain %s: %s to unknown chain %s", t.label, c.Name, o.kindName(), o.target))
					out = w.addEnd(out, chainEnd{o.st, vDrop})
					continue
				}
				if depth+1 > maxJumps {
					o.st.warn(fmt.Sprintf("%s chain %s: more than %d nested jumps", t.label, c.Name, maxJumps))
					out = w.addEnd(out, chainEnd{o.st, vDrop})
					continue
				}
				for _, e := range w.runChain(o.st, t, target, depth+1) {
					if e.kind == vFall && o.kind == rJump {
						out = catEnds(out, w.runRules(e.st, t, c, i+1, depth))
						continue
					}
					out = w.addEnd(out, e)
				}
			}
		}
		if cont == nil {
			return out
		}
		st = cont
	}
	return w.addEnd(out, chainEnd{st, vFall})
}

// addEnd appends e to out; a first end is carved from the walk's arena
// (capacity one: a second append copies it out).
func (w *nftWalk) addEnd(out []chainEnd, e chainEnd) []chainEnd {
	w.nwork++ // every end is a path the hooks after it go on with
	if len(out) > 0 {
		return append(out, e)
	}
	return carveOne(&w.ends, e)
}

// endBuf returns an empty slice of capacity n carved from the walk's
// arena of ends (appending past n copies it out).
func (w *nftWalk) endBuf(n int) []chainEnd { return carve(&w.ends, n) }

// catEnds appends the ends of more to out (taking more itself when out is
// empty: nothing else holds it).
func catEnds(out, more []chainEnd) []chainEnd {
	if len(out) == 0 {
		return more
	}
	return append(out, more...)
}

// setIndex returns the index of a named set.
func (t *nftTable) setIndex(s *nft.Set) *setIndex {
	return cached(&t.mu, t.named, t.lazySets, s, func() *setIndex { return newSetIndex(s.Elements) })
}

// anonIndex returns the index of an anonymous set of a rule.
func (t *nftTable) anonIndex(a *nft.AnonSet) *setIndex {
	return cached(&t.mu, t.anon, t.lazyAnon, a, func() *setIndex { return newSetIndex(a.Elements) })
}

// valuePart returns the constant v of a rule, read once.
func (t *nftTable) valuePart(v *nft.Value) *part {
	return cached(&t.mu, t.values, t.lazyValues, v, func() *part { p := compilePart(v.Text); return &p })
}

// cached returns built[k], made with the table and read without the lock,
// else lazy[k], made by mk on first use under mu.
func cached[K comparable, V any](mu *sync.Mutex, built, lazy map[K]*V, k K, mk func() *V) *V {
	if v := built[k]; v != nil {
		return v
	}
	mu.Lock()
	defer mu.Unlock()
	if v := lazy[k]; v != nil {
		return v
	}
	v := mk()
	lazy[k] = v
	return v
}

// precompile reads the constants and anonymous sets of an expression.
func (t *nftTable) precompile(e any) {
	switch e := e.(type) {
	case *nft.Match:
		t.precompile(e.Left)
		t.precompile(e.Right)
	case *nft.Vmap:
		t.precompile(e.Key)
		t.precompile(e.Data)
	case *nft.NAT:
		t.precompile(e.Addr)
		t.precompile(e.Port)
	case *nft.Mangle:
		t.precompile(e.Key)
		t.precompile(e.Value)
	case *nft.Map:
		t.precompile(e.Key)
		t.precompile(e.Data)
	case *nft.Concat:
		for _, p := range e.Parts {
			t.precompile(p)
		}
	case *nft.Binop:
		t.precompile(e.Left)
		t.precompile(e.Right)
	case *nft.AnonSet:
		if t.anon[e] == nil {
			t.anon[e] = newSetIndex(e.Elements)
		}
	case *nft.Value:
		if t.values[e] == nil {
			t.values[e] = t.partOf(e.Text)
		}
	}
}

// partOf returns the constant text compiled, shared by the rules that
// spell it alike (a port, a protocol, the pod range): a large ruleset
// holds the same few constants in thousands of rules. It is used while
// the table is built, before the table is shared.
func (t *nftTable) partOf(text string) *part {
	if p := t.parts[text]; p != nil {
		return p
	}
	p := compilePart(text)
	if t.parts == nil {
		t.parts = map[string]*part{}
	}
	t.parts[text] = &p
	return &p
}

// nftIndex is what the engine reads of a data plane's rulesets, built once
// per data plane and family.
type nftIndex struct {
	tables []*nftTable
	hooks  map[string][]nftBase
	warns  []string
	// podSrc is the pod source address chosen for the family, once.
	podSrc     netip.Addr
	podSrcOnce sync.Once
}

var nftIndexMu sync.Mutex

// nftIndexOf returns the index of dp for the family.
func nftIndexOf(dp *Dataplane, v4 bool) *nftIndex {
	nftIndexMu.Lock()
	defer nftIndexMu.Unlock()
	if dp.nftIdx == nil {
		dp.nftIdx = map[bool]*nftIndex{}
	}
	if ix := dp.nftIdx[v4]; ix != nil {
		return ix
	}
	ix := &nftIndex{tables: nftTables(dp, v4)}
	ix.hooks, ix.warns = nftHooks(ix.tables)
	dp.nftIdx[v4] = ix
	return ix
}
