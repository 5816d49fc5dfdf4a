package trace

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/ipvs"
)

// This file walks a packet through the netfilter hooks of an iptables
// data plane (and, in IPVS mode, the IPVS hooks), forking at every random
// or state-dependent match.

// A stage of a walk: a built-in chain to run, or a decision the kernel
// makes between hooks.
type stage uint8

// Stages of a walk.
const (
	stRawPrerouting stage = iota
	stManglePrerouting
	stNatPrerouting
	stMangleInput
	stFilterInput
	stSecurityInput
	stNatInput
	stMangleForward
	stFilterForward
	stSecurityForward
	stManglePostrouting
	stNatPostrouting
	stRawOutput
	stMangleOutput
	stNatOutput
	stFilterOutput
	stSecurityOutput
	stRoute   // routing decision after PREROUTING
	stIPVSIn  // IPVS at LOCAL_IN
	stIPVSOut // IPVS at LOCAL_OUT
	stNodeOut // a locally sent packet after POSTROUTING
	stDeliver // local delivery
	stOut     // the packet leaves the node
	numStages
)

// stageInfo names the built-in chain each stage runs (none for the
// decisions).
var stageInfo = [numStages]struct{ table, chain string }{
	stRawPrerouting:     {"raw", "PREROUTING"},
	stManglePrerouting:  {"mangle", "PREROUTING"},
	stNatPrerouting:     {"nat", "PREROUTING"},
	stMangleInput:       {"mangle", "INPUT"},
	stFilterInput:       {"filter", "INPUT"},
	stSecurityInput:     {"security", "INPUT"},
	stNatInput:          {"nat", "INPUT"},
	stMangleForward:     {"mangle", "FORWARD"},
	stFilterForward:     {"filter", "FORWARD"},
	stSecurityForward:   {"security", "FORWARD"},
	stManglePostrouting: {"mangle", "POSTROUTING"},
	stNatPostrouting:    {"nat", "POSTROUTING"},
	stRawOutput:         {"raw", "OUTPUT"},
	stMangleOutput:      {"mangle", "OUTPUT"},
	stNatOutput:         {"nat", "OUTPUT"},
	stFilterOutput:      {"filter", "OUTPUT"},
	stSecurityOutput:    {"security", "OUTPUT"},
}

var (
	stagesPrerouting = []stage{stRawPrerouting, stManglePrerouting, stNatPrerouting, stRoute}
	stagesInput      = []stage{stMangleInput, stFilterInput, stSecurityInput, stIPVSIn, stNatInput, stDeliver}
	stagesForward    = []stage{stMangleForward, stFilterForward, stSecurityForward, stManglePostrouting, stNatPostrouting, stOut}
	stagesOutput     = []stage{stRawOutput, stMangleOutput, stNatOutput, stIPVSOut, stFilterOutput, stSecurityOutput, stManglePostrouting, stNatPostrouting, stNodeOut}
	// After IPVS forwarded a packet received on an interface, it sends it
	// on through LOCAL_OUT and POSTROUTING (the nat and raw OUTPUT chains
	// do not see it: the connection is IPVS's).
	stagesIPVSXmit = []stage{stMangleOutput, stFilterOutput, stSecurityOutput, stManglePostrouting, stNatPostrouting, stOut}
	// A locally sent packet to a local address comes back in on lo; its
	// NAT is settled, so the nat chains do not see it again.
	stagesLoopback = []stage{stRawPrerouting, stManglePrerouting, stMangleInput, stFilterInput, stSecurityInput, stDeliver}
	stagesLeave    = []stage{stOut}
)

// frame is one chain on the walk's call stack. It holds no pointer, so
// that forks copy the stack without the garbage collector's write
// barriers (a sweep runs while the views are built, when the collector
// is often marking).
type frame struct {
	c     int32 // the chain: walker.entered[c]
	pos   int32 // next position in the candidates (or in the rules when n < 0)
	cands int32 // where the candidate rules start in walker.cands
	n     int32 // the number of candidate rules, -1 for all the rules
}

// state is one packet on one path, mid-walk.
type state struct {
	src, dst  netip.Addr
	sport     uint16
	dport     uint16
	proto     uint8
	in, out   string
	mark      uint32
	dnat      bool
	dnatTo    netip.AddrPort
	ipvsVS    *ipvs.Service
	untracked bool
	prob      float64
	verdict   Verdict
	done      bool
	masq      bool
	snat      string
	local     bool // delivered locally
	hookEnded bool // in a call (see subwalk), ACCEPT or a NAT target left the built-in chain
	stages    []stage
	frames    []frame
	steps     []stepRef
	nstep     int // the steps in steps, with those of its segments
	conds     []string
	warnings  []string
	nsteps    int
	// hops are the hooks entered (not in summary mode), hook the last one,
	// why what the next one is entered for.
	hops      []Hop
	hook, why string
	// merged reports a state that stands for several ways through the
	// rules that reached the same state (see mergeCallEnd): its steps are
	// those of the most probable.
	merged bool
	// summary: no steps are kept; scratch stands for the last step, so
	// that notes and warnings are still set where the walk sets them (the
	// states of one walk share it: they run one at a time, and a step's
	// notes are set before the next rule is met).
	summary bool
	scratch *Step
}

// stepRef is a step during the walk: a matched rule, turned into a Step
// when the path ends, or a Step already made (with a note, or not a rule).
type stepRef struct {
	cr   *crule
	full *Step
	seg  *segment // the steps of a call (see call), when cr and full are nil
}

// segment is the steps of one way through a call, shared by the paths
// that make it: n is their number once every segment in them is expanded.
type segment struct {
	refs []stepRef
	n    int
}

// add appends a made step.
func (s *state) add(st Step) {
	if s.summary {
		*s.scratch = st
		return
	}
	s.steps = append(s.steps, stepRef{full: &st})
	s.nstep++
}

// addRule appends a matched rule, with a note if any.
func (s *state) addRule(cr *crule, note string) {
	if s.summary {
		// Notes are joined to the last step's (REDIRECT, NOTRACK): the
		// scratch starts each rule without one. The other fields are
		// only read back after they are set.
		if s.scratch.Note != "" {
			s.scratch.Note = ""
		}
		return
	}
	if note == "" {
		s.steps = append(s.steps, stepRef{cr: cr})
		s.nstep++
		return
	}
	st := ruleStep(cr)
	st.Note = note
	s.add(st)
}

// last returns the last step for a note or warning. The walk forks only
// before appending a rule's step, so the last step is never shared with
// another path.
func (s *state) last() *Step {
	if s.summary {
		return s.scratch
	}
	r := &s.steps[len(s.steps)-1]
	if r.full == nil {
		st := ruleStep(r.cr)
		r.full, r.cr = &st, nil
	}
	return r.full
}

// materialize returns the steps of s, at most limit of them (a path cut
// as a loop may hold the calls of many more).
func (s *state) materialize(limit int) []Step {
	return appendSteps(make([]Step, 0, min(s.nstep, limit)), s.steps, limit)
}

// appendSteps appends the steps of refs to out, expanding the segments,
// until out holds limit steps.
func appendSteps(out []Step, refs []stepRef, limit int) []Step {
	for _, r := range refs {
		if len(out) >= limit {
			break
		}
		switch {
		case r.full != nil:
			out = append(out, *r.full)
		case r.seg != nil:
			out = appendSteps(out, r.seg.refs, limit)
		default:
			out = append(out, ruleStep(r.cr))
		}
	}
	return out
}

// clone returns a copy of s, in a state of an ended path if there is one
// (its frames are reused: no other state shares them).
func (w *walker) clone(s *state) *state {
	var c *state
	if n := len(w.free); n > 0 {
		c, w.free = w.free[n-1], w.free[:n-1]
	} else {
		c = new(state)
	}
	frames := c.frames[:0]
	*c = *s
	c.frames = append(frames, s.frames...)
	c.steps = s.steps[:len(s.steps):len(s.steps)]
	c.conds = s.conds[:len(s.conds):len(s.conds)]
	c.warnings = s.warnings[:len(s.warnings):len(s.warnings)]
	c.hops = s.hops[:len(s.hops):len(s.hops)]
	return c
}

// enter records s entering hook, unless it is there already, with the
// reason set for it, or the hook's usual one.
func (w *walker) enter(s *state, hook string) {
	if s.summary || hook == s.hook {
		return
	}
	why := s.why
	if why == "" {
		why = usualWhy(hook, w.dp.outIface(s.dst))
	}
	s.hook, s.why = hook, ""
	s.hops = append(s.hops, Hop{Step: s.nstep, Hook: hook, Why: why})
}

func (s *state) warn(w string) {
	for _, x := range s.warnings {
		if x == w {
			return
		}
	}
	s.warnings = append(s.warnings, w)
}

// walker holds what one trace needs.
type walker struct {
	dp       *Dataplane
	cp       *compiled
	epoch    uint32           // of the walk, for the cache's eviction
	dumps    []*iptables.Dump // the dumps of the packet's family
	pkt      Packet           // the packet walked, its source and interface chosen
	stages   *stageTable      // their built-in chains
	ipvsMode bool
	opts     Options
	work     []*state
	free     []*state // states of ended paths, for reuse
	paths    []Path
	ends     []pathEnd // the paths, in summary mode
	cands    []int32   // the candidate rules of the frames of big chains
	entered  []*cchain // the chains of the frames
	cut      bool
	warnings []string
	scratch  Step                  // the last step of every state, in summary mode
	destText []byte                // the destinations of ends, formatted to sort them
	endKeys  []endOrder            // the order of the ends
	cx       compiler              // kept from one walk to the next (a sweep's)
	nwork    int                   // rules evaluated, over every path
	maxWork  int                   // the bound of nwork
	forkAt   *iptables.Chain       // the chain of the last fork, named when nwork passes maxWork
	calls    map[callKey][]callEnd // the ends of the calls, see call
	merged   bool                  // some paths were merged (see mergeCallEnd)
	outcomes []outcome             // the ends of the paths once merged, see keepOutcome
	active   []*cchain             // the chains of the calls under way
	err      error                 // set when nwork passed the bound: the walk stops
}

// pathEnd is where a path ends, in summary mode: a Path without steps,
// whose destination is not formatted.
type pathEnd struct {
	prob     float64
	verdict  Verdict
	dst      netip.AddrPort
	masq     bool
	snat     string
	conds    []string
	warnings []string
}

func (w *walker) warnOnce(msg string) {
	for _, x := range w.warnings {
		if x == msg {
			return
		}
	}
	w.warnings = append(w.warnings, msg)
}

// walk traces pkt through the iptables dumps of dp (and IPVS when ipvsMode).
func walk(dp *Dataplane, pkt Packet, opts Options, ipvsMode bool) (*Result, error) {
	w := walkerPool.Get().(*walker)
	defer w.release()
	pkt = w.walk(dp, dp.compiled(), pkt, opts, ipvsMode)
	lastWork.Store(int64(w.nwork))
	if w.err != nil {
		return nil, w.err
	}
	res := &Result{Packet: pkt, Warnings: w.warnings}
	if opts.Summary {
		res.Paths = endPaths(mergeEnds(w.ends, w))
		return res, nil
	}
	// w.paths is the walker's, reused: the result gets a merged copy.
	if len(w.paths) > 0 {
		res.Paths = merge(w.paths, make([]Path, 0, len(w.paths)))
	}
	if w.merged {
		for _, o := range w.outcomes {
			res.Paths = append(res.Paths, w.path(&o.s, o.verdict))
		}
		res.Paths = mergeOutcomes(res.Paths)
		res.Warnings = append(res.Warnings, mergedWarning)
	}
	return res, nil
}

// walk traces pkt with the chains of cp, leaving its paths in w.paths (in
// summary mode, w.ends) and its warnings in w.warnings; it returns the
// packet with the source and interface chosen. w must be reset before it
// walks again.
func (w *walker) walk(dp *Dataplane, cp *compiled, pkt Packet, opts Options, ipvsMode bool) Packet {
	dst := pkt.Dst.Addr().Unmap()
	fam := iptables.IPv4
	if dst.Is6() {
		fam = iptables.IPv6
	}
	w.dp, w.cp, w.ipvsMode, w.opts = dp, cp, ipvsMode, opts
	w.maxWork = opts.maxWork(dp)
	w.epoch = cp.begin()
	for _, d := range dp.IPTables {
		if d.Family == fam || d.Family == iptables.FamilyUnknown {
			w.dumps = append(w.dumps, d)
		}
	}
	if len(w.dumps) == 0 {
		w.warnOnce(fmt.Sprintf("no %s iptables dump was captured: no rules were walked", fam))
	} else if len(w.dumps) > 1 {
		w.warnOnce(fmt.Sprintf("%d %s iptables dumps (several backends or files): the chains of each are walked in turn, in input order", len(w.dumps), fam))
	}
	w.stages = cp.stageTable(dp, w.dumps)
	pkt = w.choosePacket(pkt)
	w.pkt = pkt
	s := w.newState()
	*s = state{
		src: pkt.Src.Unmap(), dst: dst, dport: pkt.Dst.Port(), sport: defaultSourcePort,
		in: pkt.InIface, prob: 1, summary: opts.Summary, scratch: &w.scratch, frames: s.frames[:0],
	}
	if !opts.Summary {
		s.why = arrivalWhy(pkt)
	}
	if !opts.Summary {
		s.steps = make([]stepRef, 0, 24)
	}
	s.proto, _ = iptables.ProtocolNumber(pkt.Proto)
	if pkt.From == model.FromNode {
		s.stages = stagesOutput
	} else {
		s.stages = stagesPrerouting
	}
	w.work = append(w.work, s)
	for len(w.work) > 0 && w.err == nil {
		s := w.work[len(w.work)-1]
		w.work = w.work[:len(w.work)-1]
		w.run(s)
		w.free = append(w.free, s)
	}
	if w.cut {
		w.warnOnce(fmt.Sprintf("more than %d paths: the walk stopped forking; the paths listed do not cover every case", w.opts.maxPaths()))
	}
	return pkt
}

// walkerPool holds walkers between traces, with their states.
var walkerPool = sync.Pool{New: func() any { return new(walker) }}

// newState returns a state to fill, reused if one is free.
func (w *walker) newState() *state {
	if n := len(w.free); n > 0 {
		s := w.free[n-1]
		w.free = w.free[:n-1]
		return s
	}
	return &state{frames: make([]frame, 0, 8)}
}

// reset forgets the trace (the result keeps its paths, ends and
// warnings), keeping the walker's buffers and jump memo for the next.
func (w *walker) reset() {
	for _, s := range w.free {
		*s = state{frames: s.frames[:0]}
	}
	clear(w.work[:cap(w.work)])
	clear(w.dumps[:cap(w.dumps)])
	clear(w.paths[:cap(w.paths)])
	clear(w.ends) // those of a longer walk were cleared after it
	clear(w.entered)
	*w = walker{work: w.work[:0], free: w.free, dumps: w.dumps[:0], paths: w.paths[:0], ends: w.ends[:0],
		cands: w.cands[:0], entered: w.entered[:0], destText: w.destText[:0], endKeys: w.endKeys[:0], cx: w.cx}
}

// release resets w, forgets its jump memo and its blocks (keeping its
// buffers) and returns it to the pool.
func (w *walker) release() {
	if w.cp != nil {
		w.cx.flush(w.cp, w.epoch)
	}
	w.reset()
	// A pooled walker outlives the cache it walked: its buffers must not
	// keep the cache's chains (and with them a sweep's cache) alive.
	clear(w.cx.kept[:cap(w.cx.kept)])
	w.cx = compiler{kept: w.cx.kept[:0]}
	walkerPool.Put(w)
}

// maxStepsSlack is the steps a path may hold beyond Options.MaxSteps: a
// path cut as a loop lists the first steps it met, and those the walk
// added after it (a policy, IPVS, NAT in the hooks after the cut).
const maxStepsSlack = 16

// defaultSourcePort is the source port of the traced packet.
const defaultSourcePort = 40000

// Interfaces a packet arrives on when the trace does not say: a pod's veth
// (FromPod) or the node's uplink (FromExternal). Every engine uses these.
const (
	defaultPodIface      = "vethpod0"
	defaultExternalIface = "eth0"
)

// choosePacket fills in the source and interface the packet left open.
func (w *walker) choosePacket(pkt Packet) Packet {
	dst := pkt.Dst.Addr().Unmap()
	pkt.Dst = netip.AddrPortFrom(dst, pkt.Dst.Port())
	if !pkt.Src.IsValid() {
		switch pkt.From {
		case model.FromPod:
			for _, p := range w.dp.PodCIDRs {
				if p.Addr().Is4() == dst.Is4() {
					pkt.Src = p.Masked().Addr().Next()
					break
				}
			}
			if !pkt.Src.IsValid() {
				w.warnOnce("the node's pod CIDR is not known: the pod source address is made up")
				if dst.Is4() {
					pkt.Src = netip.MustParseAddr("10.244.0.2")
				} else {
					pkt.Src = netip.MustParseAddr("fd00:10:244::2")
				}
			}
		case model.FromNode:
			pkt.Src = w.nodeSource(dst)
			if !pkt.Src.IsValid() {
				w.warnOnce("no address of the node is known: the node source address is made up")
				if dst.Is4() {
					pkt.Src = netip.MustParseAddr("192.168.0.1")
				} else {
					pkt.Src = netip.MustParseAddr("fd00::1")
				}
			}
		case model.FromExternal:
			if dst.Is4() {
				pkt.Src = netip.MustParseAddr("192.0.2.200")
			} else {
				pkt.Src = netip.MustParseAddr("2001:db8:ff::200")
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

// nodeSource returns the address a packet to dst leaves the node from:
// one of the node's own addresses of dst's family, else one of its local
// addresses that IPVS does not serve on kube-ipvs0 (not loopback or
// link-local); the zero Addr when there is none.
func (w *walker) nodeSource(dst netip.Addr) netip.Addr {
	usable := func(a netip.Addr) bool { return a.Is4() == dst.Is4() && !a.IsLoopback() && !a.IsLinkLocalUnicast() }
	for _, a := range w.dp.NodeAddrs {
		if usable(a) {
			return a
		}
	}
	for _, a := range w.dp.Local {
		if usable(a) && !w.isVIP(a) {
			return a
		}
	}
	return netip.Addr{}
}

// isVIP reports an address IPVS serves bound on kube-ipvs0: a virtual
// server's address that is not one of the node's own (a node port's
// virtual servers are on those).
func (w *walker) isVIP(a netip.Addr) bool {
	return w.ipvsMode && w.dp.isVirtualServer(a) && !slices.Contains(w.dp.NodeAddrs, a)
}

// run advances s until it ends, forking onto w.work.
func (w *walker) run(s *state) {
	for !s.done && w.err == nil {
		if s.nsteps > w.opts.maxSteps() {
			s.warn(fmt.Sprintf("more than %d rules on one path: the walk was cut (a loop?)", w.opts.maxSteps()))
			s.verdict = VerdictDrop
			break
		}
		if len(s.frames) == 0 {
			w.nextStage(s)
			continue
		}
		w.step(s)
	}
	w.finish(s)
}

// fork queues a copy of s with probability p of the current one (the
// current one keeps 1-p) and returns it.
func (w *walker) fork(s *state, p float64) *state {
	if len(w.paths)+len(w.work)+1 >= w.opts.maxPaths() {
		w.cut = true
		return nil
	}
	// A fork's steps are copied as the two paths go on: they count as
	// work.
	w.nwork += len(s.steps)
	c := w.clone(s)
	c.prob = s.prob * p
	s.prob *= 1 - p
	w.work = append(w.work, c)
	return c
}

// nextStage runs the next stage of s.
func (w *walker) nextStage(s *state) {
	if len(s.stages) == 0 {
		s.done = true
		return
	}
	st := s.stages[0]
	s.stages = s.stages[1:]
	switch st {
	case stRoute:
		if !s.summary {
			s.why = w.dp.routeWhy(s.dst, s.dnat)
		}
		if w.isLocal(s.dst) {
			s.stages = stagesInput
		} else {
			s.out = w.outIface(s.dst)
			s.stages = stagesForward
		}
		return
	case stIPVSIn, stIPVSOut:
		if w.ipvsMode {
			w.ipvs(s, st == stIPVSIn)
		}
		return
	case stNodeOut:
		if w.isLocal(s.dst) {
			if !s.summary {
				s.why = w.dp.loopbackWhy(s.dst)
			}
			s.in = "lo"
			s.stages = stagesLoopback
		} else {
			s.stages = stagesLeave
		}
		return
	case stDeliver:
		s.local = true
		s.done = true
		return
	case stOut:
		s.done = true
		return
	}
	if stageInfo[st].chain == "OUTPUT" && s.out == "" {
		s.out = w.outIface(s.dst)
	}
	w.enter(s, stageInfo[st].chain)
	// frames is a stack: the first dump's chain is pushed last, so that
	// it runs first and the next dump's chain runs when it ends.
	ccs := w.stages.chains[st]
	for i := len(ccs) - 1; i >= 0; i-- {
		w.pushCompiled(s, ccs[i])
	}
}

// push enters the chain cr jumps to, from chain from.
func (w *walker) push(s *state, from *cchain, cr *crule) {
	w.pushCompiled(s, w.cp.chain(w.dp, from.tix, cr.jslot, cr.jump, w.epoch, &w.cx, true))
}

// pushCompiled enters the compiled chain cc. A chain that would end as
// soon as entered, without a step (no rule, and no DROP policy), is not
// entered at all.
func (w *walker) pushCompiled(s *state, cc *cchain) {
	if cc.noop {
		return
	}
	f := frame{c: int32(len(w.entered)), n: -1}
	w.entered = append(w.entered, cc)
	if cc.index != nil {
		f.cands = int32(len(w.cands))
		w.cands = cc.appendCandidates(w.cands, s.dst, s.dport)
		f.n = int32(len(w.cands)) - f.cands
	}
	s.frames = append(s.frames, f)
}

// isLocal reports whether a is an address of the node (or bound for IPVS).
func (w *walker) isLocal(a netip.Addr) bool { return w.dp.IsLocal(a) }

// outIface guesses the interface a packet to dst leaves on: lo for a local
// address, "" (unknown) for an address in the node's pod range (a pod's
// veth), else the node's external interface.
func (w *walker) outIface(dst netip.Addr) string { return w.dp.outIface(dst) }

// step evaluates the next rule of the innermost chain of s.
func (w *walker) step(s *state) {
	f := &s.frames[len(s.frames)-1]
	cc := w.entered[f.c]
	var idx int
	if f.n >= 0 {
		if f.pos >= f.n {
			w.chainEnd(s)
			return
		}
		idx = int(w.cands[f.cands+f.pos])
	} else {
		if int(f.pos) >= len(cc.rules) {
			w.chainEnd(s)
			return
		}
		idx = int(f.pos)
	}
	f.pos++
	cr := &cc.rules[idx]
	s.nsteps++
	if w.nwork++; w.nwork > w.maxWork {
		at := cc.c
		if w.forkAt != nil {
			at = w.forkAt
		}
		w.err = &WorkError{Limit: w.maxWork, Table: at.Table.Name, Chain: at.Name}
		return
	}
	if cc.rd.Unknown(cr.m) != nil {
		// Decide the modelled matches first: a rule that fails them does
		// not match whatever the others say.
		if ok, _ := w.matchDet(s, cc, cr); !ok {
			return
		}
		st := ruleStep(cr)
		st.Note = "rule skipped: not modelled, assumed not to match"
		st.Warning = "match not modelled: " + strings.Join(cc.rd.Unknown(cr.m), "; ")
		s.add(st)
		s.warn(fmt.Sprintf("%s:%d: %s", st.File, st.Line, st.Warning))
		return
	}
	ok, note := w.matchDet(s, cc, cr)
	if !ok {
		return
	}
	for _, m := range cc.fork(cr) {
		switch m.Kind {
		case iptables.MatchStatistic:
			// Fork: the copy is the branch where the rule does not match.
			p := m.Probability()
			if p >= 1 {
				continue
			}
			if p <= 0 {
				return
			}
			// Steps list matched rules only: the branch where the
			// statistic fails goes on with the next rule.
			w.forkAt = cc.c
			w.fork(s, 1-p)
			if !s.summary {
				note = joinNote(note, "statistic: taken, probability "+formatProb(p))
			}
		case iptables.MatchRecent:
			// The first connection of a client finds no entry, so the rule
			// does not match; a client with an entry is a separate case,
			// of probability 0, with the entry as its condition.
			cond := "affinity entry for the source in recent list " + cc.ext(&m).Text
			if c := w.fork(s, 0); c != nil {
				c.conds = append(c.conds, cond)
				c.addRule(cr, cond)
				w.target(c, cc, cr)
			}
			return
		}
	}
	s.addRule(cr, note)
	w.target(s, cc, cr)
}

func joinNote(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

func formatProb(p float64) string {
	for n := 2.0; n <= 1000; n++ {
		for k := 1.0; k < n; k++ {
			if abs(p-k/n) < 1e-9 {
				return fmt.Sprintf("%g/%g", k, n)
			}
		}
		if n > 20 {
			break
		}
	}
	return strconv.FormatFloat(p, 'g', 6, 64)
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func ruleStep(cr *crule) Step {
	r := cr.m.Rule
	p := r.Pos()
	return Step{Table: r.Chain.Table.Name, Chain: r.Chain.Name, Rule: r.Raw, File: p.File, Line: p.Line}
}

// chainEnd handles falling off the end of the innermost chain: a user
// chain returns, a built-in chain applies its policy.
func (w *walker) chainEnd(s *state) {
	cc := w.entered[s.frames[len(s.frames)-1].c]
	s.frames = s.frames[:len(s.frames)-1]
	if cc.builtin {
		w.policy(s, cc.c)
	}
}

// policy applies the policy of built-in chain c.
func (w *walker) policy(s *state, c *iptables.Chain) {
	switch c.Policy() {
	case "DROP":
		p := c.Pos()
		s.add(Step{Table: c.Table.Name, Chain: c.Name, Rule: "-P " + c.Name + " DROP", File: p.File, Line: p.Line, Note: "chain policy DROP"})
		s.verdict = VerdictDrop
		s.done = true
	}
}

// endHook leaves the current built-in chain (ACCEPT, or a NAT target):
// the frames of this chain's dump are dropped; another dump's chain of
// the same hook, if any, still runs.
func (w *walker) endHook(s *state) {
	// The bottom-most frame of this table's call chain is the built-in
	// chain; frames below it belong to other dumps of the same hook.
	for len(s.frames) > 0 {
		top := s.frames[len(s.frames)-1]
		s.frames = s.frames[:len(s.frames)-1]
		if w.entered[top.c].builtin {
			return
		}
	}
	// In a call (see subwalk), the built-in chain is the caller's.
	s.hookEnded = true
}

// target applies the target of a matched rule cr of chain cc.
func (w *walker) target(s *state, cc *cchain, cr *crule) {
	switch cr.m.Target {
	case iptables.TargetNone:
		return
	case iptables.TargetAccept:
		w.endHook(s)
		return
	case iptables.TargetDrop:
		s.verdict, s.done = VerdictDrop, true
		return
	case iptables.TargetReject:
		s.verdict, s.done = VerdictReject, true
		return
	case iptables.TargetReturn:
		top := w.entered[s.frames[len(s.frames)-1].c]
		s.frames = s.frames[:len(s.frames)-1]
		if top.builtin {
			w.policy(s, top.c)
		}
		return
	case iptables.TargetDNAT:
		var to, warn string
		ap, ok := cc.rd.NATDestination(cr.m)
		if !ok {
			to = targetValue(cr, "--to-destination")
			ap, warn = parseNATTo(to, s.dport)
		}
		if !ap.IsValid() {
			s.last().Warning = "DNAT target not understood: " + to + "; the packet is assumed unchanged"
			s.warn(s.last().Warning)
			w.endHook(s)
			return
		}
		if warn != "" {
			s.last().Warning = warn
			s.warn(warn)
		}
		s.dst, s.dport = ap.Addr(), ap.Port()
		s.dnat, s.dnatTo = true, ap
		if !s.summary {
			s.last().Note = joinNote(s.last().Note, "DNAT to "+ap.String())
		}
		w.endHook(s)
		return
	case iptables.TargetRedirect:
		port := s.dport
		if v := targetValue(cr, "--to-ports"); v != "" {
			if n, err := strconv.ParseUint(strings.SplitN(v, "-", 2)[0], 10, 16); err == nil {
				port = uint16(n)
			}
		}
		s.dnat = true
		s.dport = port
		s.dnatTo = netip.AddrPortFrom(s.dst, port)
		s.last().Note = joinNote(s.last().Note, "REDIRECT to a local port "+strconv.Itoa(int(port)))
		s.local = true
		w.endHook(s)
		return
	case iptables.TargetSNAT:
		s.snat = targetValue(cr, "--to-source")
		w.endHook(s)
		return
	case iptables.TargetMasquerade:
		s.masq = true
		if !s.summary {
			s.last().Note = joinNote(s.last().Note, masqueradeNote)
		}
		w.endHook(s)
		return
	case iptables.TargetMark:
		w.mark(s, cr)
		return
	case iptables.TargetLog:
		return
	case iptables.TargetNotrack:
		s.untracked = true
		s.last().Note = joinNote(s.last().Note, "the packet is not tracked: NAT does not apply to it")
		return
	case iptables.TargetCT:
		if _, ok := cr.m.TargetArg("--notrack"); ok {
			s.untracked = true
			s.last().Note = joinNote(s.last().Note, "the packet is not tracked: NAT does not apply to it")
			return
		}
		s.last().Note = joinNote(s.last().Note, "conntrack template set; no effect on the path")
		return
	case iptables.TargetQueue:
		s.last().Warning = cr.m.TargetName() + " hands the packet to a user-space program: its verdict is not known; assumed ACCEPT"
		s.warn(s.last().Warning)
		w.endHook(s)
		return
	}
	if cr.jslot >= 0 || cr.jump != nil {
		if cr.m.IsGoto() {
			// A goto replaces the current chain: on return the walk goes
			// back to the chain that called it.
			top := &s.frames[len(s.frames)-1]
			if !w.entered[top.c].builtin {
				s.frames = s.frames[:len(s.frames)-1]
			} else {
				// goto from a built-in chain: returning from the target
				// applies the built-in chain's policy.
				top.pos = 1 << 30
				if top.n >= 0 {
					top.pos = top.n
				}
			}
		}
		if w.nwork > callAfter {
			w.call(s, w.cp.chain(w.dp, cc.tix, cr.jslot, cr.jump, w.epoch, &w.cx, true))
			return
		}
		w.push(s, cc, cr)
		return
	}
	s.last().Warning = "target " + cr.m.TargetName() + " is not modelled: the walk continues with the next rule, as the kernel does for a non-terminal target"
	s.warn(s.last().Warning)
}

func targetValue(cr *crule, name string) string {
	v, _ := cr.m.TargetArg(name)
	return v
}

// parseNATTo reads a --to-destination value: "ip", "ip:port",
// "[ip6]:port", ranges ("ip1-ip2:p1-p2", of which the first is taken).
func parseNATTo(v string, port uint16) (netip.AddrPort, string) {
	if ap, ok := iptables.ParseAddrPort(v); ok {
		return ap, ""
	}
	return parseNATRange(v, port)
}

// parseNATRange is parseNATTo for every form of the value.
func parseNATRange(v string, port uint16) (netip.AddrPort, string) {
	warn := ""
	host, ports := v, ""
	switch {
	case strings.HasPrefix(v, "["):
		end := strings.Index(v, "]")
		if end < 0 {
			return netip.AddrPort{}, ""
		}
		host = v[1:end]
		ports = strings.TrimPrefix(v[end+1:], ":")
	case strings.Count(v, ":") == 1:
		host, ports, _ = strings.Cut(v, ":")
	}
	if lo, _, ok := strings.Cut(host, "-"); ok {
		host = lo
		warn = "DNAT to an address range: the kernel picks one; the first is shown"
	}
	if ports != "" {
		lo, _, ok := strings.Cut(ports, "-")
		if ok {
			warn = "DNAT to a port range: the kernel picks one; the first is shown"
		}
		n, err := strconv.ParseUint(lo, 10, 16)
		if err != nil {
			return netip.AddrPort{}, ""
		}
		port = uint16(n)
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.AddrPort{}, ""
	}
	return netip.AddrPortFrom(a.Unmap(), port), warn
}

// mark applies a MARK target.
func (w *walker) mark(s *state, cr *crule) {
	before := s.mark
	for i := cr.m.TargetArgs(); i < cr.m.Rule.NumArgs(); i++ {
		a := cr.m.Rule.Arg(i)
		v, m, ok := iptables.ParseMark(a.Value)
		if !ok {
			continue
		}
		switch a.Name {
		case "--set-xmark":
			s.mark = (s.mark &^ m) ^ v
		case "--set-mark":
			if !strings.Contains(a.Value, "/") {
				m = 0xffffffff
			}
			s.mark = (s.mark &^ m) | v
		case "--or-mark":
			s.mark |= v
		case "--and-mark":
			s.mark &= v
		case "--xor-mark":
			s.mark ^= v
		default:
			s.last().Warning = "MARK option " + a.Name + " is not modelled"
			s.warn(s.last().Warning)
		}
	}
	if s.summary {
		return
	}
	s.last().Note = joinNote(s.last().Note, markNote(before, s.mark))
}

// matchDet evaluates the deterministic matches of cr, a rule of cc.
func (w *walker) matchDet(s *state, cc *cchain, cr *crule) (bool, string) {
	note := ""
	det := cc.det(cr)
	for i := range det {
		m := &det[i]
		ok, n := w.match(s, cc, m)
		if n != "" {
			note = joinNote(note, n)
		}
		selfNeg := m.Kind == iptables.MatchSet || m.Kind == iptables.MatchIPVS || m.Kind == iptables.MatchPhysdev
		if ok == m.Neg && !selfNeg {
			return false, ""
		}
		if selfNeg && !ok {
			return false, ""
		}
	}
	return true, note
}

// match evaluates one match of a rule of cc before negation (sets, ipvs
// and physdev apply their negation themselves).
func (w *walker) match(s *state, cc *cchain, m *iptables.Match) (bool, string) {
	switch m.Kind {
	case iptables.MatchSource:
		return m.Contains(s.src), ""
	case iptables.MatchDestination:
		return m.Contains(s.dst), ""
	case iptables.MatchInInterface:
		return ifaceMatch(cc.ext(m).Iface, s.in), ""
	case iptables.MatchOutInterface:
		return ifaceMatch(cc.ext(m).Iface, s.out), ""
	case iptables.MatchProtocol:
		return m.Proto == 0 || m.Proto == s.proto, ""
	case iptables.MatchDestPort, iptables.MatchSourcePort:
		if m.Either {
			return cc.rd.PortsContain(m, s.dport) || cc.rd.PortsContain(m, s.sport), ""
		}
		if m.Kind == iptables.MatchDestPort {
			return cc.rd.PortsContain(m, s.dport), ""
		}
		return cc.rd.PortsContain(m, s.sport), ""
	case iptables.MatchMark:
		return s.mark&m.Mask() == m.Value()&m.Mask(), ""
	case iptables.MatchSrcType:
		return w.addrType(s.src)&m.Value() != 0, ""
	case iptables.MatchDstType:
		return w.addrType(s.dst)&m.Value() != 0, ""
	case iptables.MatchCtState:
		st := uint32(iptables.CtNew)
		if s.untracked {
			st = iptables.CtUntracked
		}
		if s.dnat {
			st |= iptables.CtDNAT
		}
		if s.masq || s.snat != "" {
			st |= iptables.CtSNAT
		}
		return st&m.Value() != 0, ""
	case iptables.MatchFragment:
		return false, ""
	case iptables.MatchTCPFlags:
		if s.proto != 6 {
			return false, ""
		}
		return iptables.TCPSYN&m.TCPMask() == m.TCPComp(), ""
	case iptables.MatchPhysdev:
		// The packet is routed, not bridged: physdev options fail unless
		// negated.
		return m.Neg, ""
	case iptables.MatchSet:
		ok, note := w.setMatch(s, cc.ext(m).Set)
		return ok != m.Neg, note
	case iptables.MatchIPVS:
		return w.ipvsMatch(s, cc.ext(m).IPVS), ""
	}
	return false, ""
}

func ifaceMatch(pattern, iface string) bool {
	if iface == "" {
		return false
	}
	if p, ok := strings.CutSuffix(pattern, "+"); ok {
		return strings.HasPrefix(iface, p)
	}
	return pattern == iface
}

func (w *walker) addrType(a netip.Addr) uint32 {
	switch {
	case w.isLocal(a):
		return iptables.AddrLocal
	case a.IsMulticast():
		return iptables.AddrMulticast
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return iptables.AddrBroadcast
	}
	return iptables.AddrUnicast
}

func (w *walker) setMatch(s *state, sm *iptables.SetMatch) (bool, string) {
	set := w.cp.set(w.dp, sm.Name)
	if set == nil {
		s.warn(fmt.Sprintf("ipset %s is not in the captured ipsets: --match-set %s assumed not to match", sm.Name, sm.Name))
		return false, "ipset " + sm.Name + " not captured"
	}
	vals := make([]setVal, len(sm.Src))
	for i, src := range sm.Src {
		if src {
			vals[i] = setVal{addr: s.src, proto: s.proto, port: s.sport}
		} else {
			vals[i] = setVal{addr: s.dst, proto: s.proto, port: s.dport}
		}
	}
	ok, err := set.contains(vals)
	if err != nil {
		s.warn(fmt.Sprintf("ipset %s: %v: assumed not to match", sm.Name, err))
		return false, ""
	}
	return ok, ""
}

func (w *walker) ipvsMatch(s *state, im *iptables.IPVSMatch) bool {
	if len(im.Unknown) > 0 {
		s.warn("-m ipvs options not modelled: " + strings.Join(im.Unknown, " ") + ": assumed not to match")
		return false
	}
	vs := s.ipvsVS
	if im.Property && (vs != nil) == im.PropertyNeg {
		return false
	}
	if vs == nil {
		// Without IPVS property the v* options cannot match unless negated.
		return (!im.VAddr.IsValid() || im.VAddrNeg) && (im.VPort == 0 || im.VPortNeg) && (im.VProto == 0 || im.VProtoNeg)
	}
	if im.VAddr.IsValid() {
		a, _ := netip.AddrFromSlice(vs.Address)
		if im.VAddr.Contains(a.Unmap()) == im.VAddrNeg {
			return false
		}
	}
	if im.VPort != 0 && (vs.Port == im.VPort) == im.VPortNeg {
		return false
	}
	if im.VProto != 0 && (uint8(vs.Protocol) == im.VProto) == im.VProtoNeg {
		return false
	}
	return true
}

// finish turns an ended state into a path.
func (w *walker) finish(s *state) {
	verdict := s.verdict
	if verdict == "" {
		switch {
		case s.dnat || s.ipvsVS != nil:
			verdict = VerdictDNAT
		case s.local:
			verdict = VerdictLocal
		default:
			verdict = VerdictAccept
		}
	}
	if w.opts.Summary {
		dst := netip.AddrPortFrom(s.dst, s.dport)
		if !s.dst.IsValid() {
			// Its Destination is "invalid AddrPort" whatever the port.
			dst = netip.AddrPort{}
		}
		w.ends = append(w.ends, pathEnd{prob: s.prob, verdict: verdict, dst: dst,
			masq: s.masq, snat: s.snat, conds: s.conds, warnings: s.warnings})
		return
	}
	if w.merged {
		// Paths are merged: the ends of the same outcome are kept as one
		// state, and made a path once the walk is over.
		w.keepOutcome(s, verdict)
		return
	}
	w.paths = append(w.paths, w.path(s, verdict))
}

// path returns the path of an ended state s.
func (w *walker) path(s *state, verdict Verdict) Path {
	p := Path{
		Probability: s.prob,
		Verdict:     verdict,
		Destination: netip.AddrPortFrom(s.dst, s.dport).String(),
		Masquerade:  s.masq,
		SNAT:        s.snat,
		Conditions:  s.conds,
		Steps:       s.materialize(w.opts.maxSteps() + maxStepsSlack),
		Warnings:    s.warnings,
		Hops:        s.hops,
		Merged:      s.merged,
	}
	noteUnmasqueraded(&p, w.pkt, s.mark)
	return p
}
