package iptables

import (
	"encoding/binary"
	"math"
	"net/netip"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// A MatchKind is the kind of a typed match of a rule.
type MatchKind uint8

// Match kinds.
const (
	MatchSource         MatchKind = iota // -s: Prefix
	MatchDestination                     // -d: Prefix
	MatchInInterface                     // -i: the extension's Iface
	MatchOutInterface                    // -o: the extension's Iface
	MatchProtocol                        // -p: Proto (0 for all)
	MatchDestPort                        // --dport, --dports, --ports (Either): Ports
	MatchSourcePort                      // --sport, --sports: Ports
	MatchMark                            // -m mark --mark: Value/Mask
	MatchSrcType                         // -m addrtype --src-type: Value (AddrType bits)
	MatchDstType                         // -m addrtype --dst-type: Value (AddrType bits)
	MatchCtState                         // --ctstate, --state: Value (CtState bits)
	MatchSet                             // -m set --match-set: the extension's Set
	MatchPhysdev                         // -m physdev
	MatchFragment                        // -f: never the first packet of a connection
	MatchTCPFlags                        // --syn, --tcp-flags: TCPMask and TCPComp
	MatchIPVS                            // -m ipvs: the extension's IPVS
	MatchStatistic                       // -m statistic: Prob, Value (the mode)
	MatchRecent                          // -m recent --rcheck/--update/--remove: the extension's Text (the list)
	MatchUnknown                         // a --tcp-flags not understood
	MatchNATDestination                  // not a match: a DNAT rule's --to-destination, after its matches
)

// AddrType bits of MatchSrcType and MatchDstType.
const (
	AddrLocal = 1 << iota
	AddrUnicast
	AddrBroadcast
	AddrMulticast
)

// CtState bits of MatchCtState.
const (
	CtNew = 1 << iota
	CtEstablished
	CtRelated
	CtInvalid
	CtUntracked
	CtSNAT
	CtDNAT
)

// TCP flag bits of MatchTCPFlags.
const (
	TCPFIN = 1 << iota
	TCPSYN
	TCPRST
	TCPPSH
	TCPACK
	TCPURG
)

// Statistic modes, the Value of a MatchStatistic.
const (
	StatisticOther  = iota // no mode, or another one
	StatisticRandom        // --mode random with a --probability
	StatisticNth           // --mode nth with an --every
)

// Recent checks, the Mask of a MatchRecent.
const (
	RecentRcheck = 1 + iota
	RecentUpdate
	RecentRemove
)

// A PortRange is an inclusive range of ports.
type PortRange struct{ Lo, Hi uint16 }

// A Match is one typed match of a rule, read from its options once. It
// is kept small (24 bytes, the 285,002 matches of a 10,000-Service nat
// table are 6.8 MB), and free of pointers: the few matches that need more
// (interfaces, port lists, sets, ipvs and recent options) have an
// extension in the table's reading ([Meanings.Ext]). What only some
// kinds hold shares the words of w (see [Match.Port], [Match.TCPMask]).
type Match struct {
	Kind MatchKind
	// Neg is set for a match negated with "!".
	Neg bool
	// Proto is the protocol number of a MatchProtocol, 0 for all.
	Proto uint8
	bits  uint8 // the prefix length of an address match
	v6    bool  // the prefix is an IPv6 one
	// Either is set for a --ports match: the source or the destination
	// port.
	Either bool
	// aux holds the flags of a MatchTCPFlags (the mask in its low byte,
	// the flags compared in its high one), the port of a
	// MatchNATDestination.
	aux uint16
	// w holds the match's values, by kind (see [Match.Value],
	// [Match.Mask], [Match.Prefix], [Match.Prob], [Match.Port]): the
	// value and mask in w[0]; the masked address of an address match in
	// w[1] (IPv4), or in w[0] and w[1] (IPv6); the bits of the
	// probability of a MatchStatistic in w[1]; the range of a port match
	// in w[0]. The kinds that may have an extension keep 1 + its place
	// in the reading's exts in the high half of w[1] (see [Match.ext]).
	w [2]uint64
}

// Value returns the mark of a MatchMark, the bits of an address type or
// conntrack state, the mode of a MatchStatistic, the --seconds of a
// MatchRecent (an int32).
func (x *Match) Value() uint32 { return uint32(x.w[0]) }

// Mask returns the mask of a MatchMark, the check of a MatchRecent.
func (x *Match) Mask() uint32 { return uint32(x.w[0] >> 32) }

// setValue sets the value and mask of x.
func (x *Match) setValue(value, mask uint32) { x.w[0] = uint64(mask)<<32 | uint64(value) }

// Port returns the range of a port match (MatchDestPort,
// MatchSourcePort), unless its extension lists several (see
// [Meanings.Ports]): then, and for other kinds, the zero range; for a
// MatchNATDestination, its port is Lo.
func (x *Match) Port() PortRange {
	switch x.Kind {
	case MatchDestPort, MatchSourcePort:
		return PortRange{Lo: uint16(x.w[0]), Hi: uint16(x.w[0] >> 16)}
	case MatchNATDestination:
		return PortRange{Lo: x.aux}
	}
	return PortRange{}
}

// setPort sets the range of a port match.
func (x *Match) setPort(r PortRange) { x.w[0] = uint64(r.Hi)<<16 | uint64(r.Lo) }

// TCPMask returns the flags a MatchTCPFlags examines (--syn is
// FIN,SYN,RST,ACK).
func (x *Match) TCPMask() uint8 {
	if x.Kind != MatchTCPFlags && x.Kind != MatchUnknown {
		return 0
	}
	return uint8(x.aux)
}

// TCPComp returns the flags of those a MatchTCPFlags examines that must
// be set (--syn is SYN).
func (x *Match) TCPComp() uint8 {
	if x.Kind != MatchTCPFlags && x.Kind != MatchUnknown {
		return 0
	}
	return uint8(x.aux >> 8)
}

// extSlot reports whether x keeps an extension's place in w: every kind
// but those whose w[1] holds an address or a probability, which never
// have an extension.
func (x *Match) extSlot() bool {
	switch x.Kind {
	case MatchSource, MatchDestination, MatchNATDestination, MatchStatistic:
		return false
	}
	return true
}

// ext returns 1 + the place of x's extension in the reading's exts, 0
// when it has none.
func (x *Match) ext() uint32 {
	if !x.extSlot() {
		return 0
	}
	return uint32(x.w[1] >> 32)
}

// setExt sets the place of x's extension (1 + its index); x's kind must
// be one that keeps one (see [Match.extSlot]).
func (x *Match) setExt(e uint32) { x.w[1] = uint64(e)<<32 | x.w[1]&(1<<32-1) }

// A MatchExt holds what only some kinds of match need.
type MatchExt struct {
	// Iface is the interface of -i or -o; a trailing "+" is a prefix.
	Iface string
	// Ports is the list of a multiport match.
	Ports []PortRange
	// Set is the set of a MatchSet.
	Set *SetMatch
	// Text is the list of a MatchRecent; the options of a MatchIPVS.
	Text string
	// IPVS holds the options of a MatchIPVS.
	IPVS *IPVSMatch
}

// A SetMatch is a --match-set: the set's name, and for each dimension
// whether the packet's source (true) or destination gives its value.
type SetMatch struct {
	Name string
	Src  []bool
}

// An IPVSMatch holds the options of -m ipvs.
type IPVSMatch struct {
	Property, PropertyNeg bool
	VAddr                 netip.Prefix
	VAddrNeg              bool
	VPort                 uint16
	VPortNeg              bool
	VProto                uint8
	VProtoNeg             bool
	// Unknown lists the options not understood.
	Unknown []string
}

// A TargetKind is the kind of a rule's target: one applied by name, or
// a chain or a target not modelled (TargetOther).
type TargetKind uint8

// Targets.
const (
	TargetNone TargetKind = iota
	TargetAccept
	TargetDrop
	TargetReject
	TargetReturn
	TargetDNAT
	TargetRedirect
	TargetSNAT
	TargetMasquerade
	TargetMark
	TargetLog // LOG, NFLOG, ULOG, TRACE, AUDIT: no effect on the path
	TargetNotrack
	TargetCT
	TargetQueue // QUEUE, NFQUEUE
	TargetOther
)

// A Meaning is the typed reading of one rule: its matches (in the
// table's [Meanings]), its target, and what indexes it.
type Meaning struct {
	// Rule is the rule read.
	Rule *Rule
	// first is the place in the reading's ms of the rule's nms matches:
	// the deterministic ones (the first ndet), then the statistic and
	// recent ones.
	first     uint32
	nms, ndet uint16
	targ      uint16 // the index of the first option after the target, NumArgs when none
	comment   uint16 // 1 + the index of the first --comment, 0 for none
	// Dport is the one destination port the rule requires, if HasDport.
	Dport uint16
	// Target is the kind of the rule's target.
	Target TargetKind
	flags  uint8
}

// Meaning flags.
const (
	mGoto       = 1 << iota // the target is a goto
	mDst32                  // the rule requires one destination address
	mDport                  // the rule requires one destination port (Dport)
	mPortMulti              // several port matches
	mNATDest                // a DNAT rule whose destination was read
	mRecentSet              // -m recent --set
	mRuleTarget             // the target read is the rule's Target (a rule has one -j or -g)
	mUnknown                // the rule has matches not modelled (Meanings.Unknown)
)

// IsGoto reports whether the rule's target is a goto (-g).
func (m *Meaning) IsGoto() bool { return m.flags&mGoto != 0 }

// HasDst32 reports whether the rule requires one destination address.
func (m *Meaning) HasDst32() bool { return m.flags&mDst32 != 0 }

// HasDport reports whether the rule requires one destination port,
// Dport, and has no other port match.
func (m *Meaning) HasDport() bool { return m.flags&mDport != 0 }

// TargetIsRules reports whether the target read (the first -j or -g)
// is the rule's [Rule.Target] (the last), which [Jumps] resolves: a rule
// has one.
func (m *Meaning) TargetIsRules() bool { return m.flags&mRuleTarget != 0 }

// RecentSet reports whether the rule records its source in a recent
// list (-m recent --set).
func (m *Meaning) RecentSet() bool { return m.flags&mRecentSet != 0 }

// Unknown returns the matches of m, a rule of the reading, that are not
// modelled, as written; nil when every match is. Few rules have any: they
// are kept beside the rules' meanings, which stay small.
func (rd *Meanings) Unknown(m *Meaning) []string {
	if m.flags&mUnknown == 0 {
		return nil
	}
	return rd.unknown[m]
}

// addUnknown records a match of m that is not modelled.
func (rd *Meanings) addUnknown(m *Meaning, text string) {
	if rd.unknown == nil {
		rd.unknown = map[*Meaning][]string{}
	}
	m.flags |= mUnknown
	rd.unknown[m] = append(rd.unknown[m], text)
}

// Comment returns the value of the rule's first --comment, "" for none.
func (m *Meaning) Comment() string {
	if m.comment == 0 {
		return ""
	}
	return m.Rule.Arg(int(m.comment) - 1).Value
}

// TargetName returns the target as the rule writes it.
func (m *Meaning) TargetName() string {
	if m.Target == TargetNone {
		return ""
	}
	return m.Rule.Arg(int(m.targ) - 1).Value
}

// TargetArg returns the value of the target option name
// (--to-destination, say) and whether the rule has it.
func (m *Meaning) TargetArg(name string) (string, bool) {
	for i := int(m.targ); i < m.Rule.NumArgs(); i++ {
		if m.Rule.ArgName(i) == name {
			return m.Rule.Arg(i).Value, true
		}
	}
	return "", false
}

// TargetArgs returns the index of the first option after the target
// (the number of options when there is none).
func (m *Meaning) TargetArgs() int { return int(m.targ) }

// Meanings is the typed reading of every rule of a table, made once for
// every reader (the views, the tracer): the rules' matches parsed from
// their options, their targets classified.
type Meanings struct {
	t     *Table
	j     *Jumps // places the table's rules: the rules of a chain follow each other as in j
	only  *Chain // the chain of a reading of one chain (ReadChain), whose rules are rules
	rules []Meaning
	ms    []Match
	exts  []MatchExt
	// unknown holds the matches not modelled of the rules that have any
	// (flag mUnknown).
	unknown map[*Meaning][]string
}

// Meanings returns the typed reading of the table's rules, made on first
// use. The table must not change afterwards (a parsed dump does not). It
// is safe for concurrent use.
func (t *Table) Meanings() *Meanings {
	if m := t.meanings.Load(); m != nil {
		return m
	}
	t.meaningsMu.Lock()
	defer t.meaningsMu.Unlock()
	if m := t.meanings.Load(); m != nil {
		return m
	}
	j := t.Jumps()
	rd := t.readMeanings(j, len(j.to) >= splitRead && runtime.GOMAXPROCS(0) >= 2)
	t.meanings.Store(rd)
	return rd
}

// readMeanings reads the rules of the table, whose jumps are j, in two
// halves at once when split is set.
func (t *Table) readMeanings(j *Jumps, split bool) *Meanings {
	rd := &Meanings{t: t, j: j, rules: make([]Meaning, len(j.to))}
	listed := func(i int32, c *Chain) bool { ix := c.Index(); return ix >= 0 && j.pos[ix] == i }
	// The chains are taken in the order of their rules in the dump
	// (Jumps.Order), as the rules' places are.
	// bound[k] bounds the matches of the chains of j.order[:k].
	bound := make([]int, len(j.order)+1)
	for k, i := range j.order {
		bound[k+1] = bound[k]
		if c := t.Chains[i]; listed(i, c) {
			for _, r := range c.Rules {
				bound[k+1] += maxMatches(r)
			}
		}
	}
	n := bound[len(j.order)]
	all := make([]Match, 0, n)
	rd.ms = all
	readChains := func(rd *Meanings, order []int32) {
		var sc readScratch
		for _, i := range order {
			if c := t.Chains[i]; listed(i, c) {
				start := int(j.start[c.Index()])
				for k, r := range c.Rules {
					rd.read(r, &rd.rules[start+k], &sc)
				}
			}
		}
	}
	if !split {
		readChains(rd, j.order)
		return rd
	}
	// A large table (the nat table of tens of thousands of Services) is
	// read in two halves at once, the chains of the second into the
	// same block of matches after the bound of the first's, then moved
	// down: the reading is the one a single pass makes.
	half := sort.SearchInts(bound, n/2)
	second := &Meanings{t: t, j: j, rules: rd.rules, ms: all[bound[half]:bound[half]:n]}
	rd.ms = all[:0:bound[half]]
	var wg sync.WaitGroup
	wg.Go(func() { readChains(second, j.order[half:]) })
	readChains(rd, j.order[:half])
	wg.Wait()
	rd.mergeSecond(second, j.order[half:], all)
	return rd
}

// splitRead is the number of rules from which [Table.Meanings] reads a
// table in two halves at once.
const splitRead = 8192

// mergeSecond appends to rd the reading of the chains of order, made
// into second after rd's: their rules' matches and extensions follow
// rd's, as a single pass over both would have placed them.
// all is the block both were read into, the first half's at its start.
func (rd *Meanings) mergeSecond(second *Meanings, order []int32, all []Match) {
	base, extBase := uint32(len(rd.ms)), uint32(len(rd.exts))
	j := rd.j
	for _, i := range order {
		if c := rd.t.Chains[i]; c.Index() >= 0 && j.pos[c.Index()] == i {
			start := int(j.start[c.Index()])
			for k := range c.Rules {
				rd.rules[start+k].first += base
			}
		}
	}
	if extBase > 0 {
		for k := range second.ms {
			if x := &second.ms[k]; x.ext() != 0 {
				x.setExt(x.ext() + extBase)
			}
		}
	}
	if n := len(rd.ms) + len(second.ms); n <= cap(all) && cap(rd.ms) > 0 && &rd.ms[:1][0] == &all[:1][0] {
		// The first half's matches are where the block starts: the
		// second's move down after them (copy moves overlapping ones).
		copy(all[len(rd.ms):n], second.ms)
		rd.ms = all[:n]
	} else {
		rd.ms = append(rd.ms[:len(rd.ms):len(rd.ms)], second.ms...)
	}
	rd.exts = append(rd.exts, second.exts...)
	for m, texts := range second.unknown {
		if rd.unknown == nil {
			rd.unknown = map[*Meaning][]string{}
		}
		rd.unknown[m] = texts
	}
}

// DropMeanings forgets the typed reading of the table's rules made by
// [Table.Meanings], so that it is freed once the readers holding it let
// it go; a later call of Meanings reads the rules again. It is for the
// owner of a large table once its whole-table readers are done: the
// reading of a 10,000-Service nat table is about 11 MB.
func (t *Table) DropMeanings() {
	t.meaningsMu.Lock()
	defer t.meaningsMu.Unlock()
	t.meanings.Store(nil)
}

// MeaningsRead reports whether the table's rules were read already
// (Meanings returns at once).
func (t *Table) MeaningsRead() bool { return t.meanings.Load() != nil }

// maxMatches returns a bound of the number of matches r is read into,
// from its options' names: the matches are stored in one block per
// table, sized once.
func maxMatches(r *Rule) int {
	n, grouped := 0, false
	for i := range r.NumArgs() {
		switch r.ArgName(i) {
		case "-m", "--match":
			// The options of these modules make one match.
			switch r.Arg(i).Value {
			case "statistic", "recent", "ipvs":
				n, grouped = n+1, true
			default:
				grouped = false
			}
		case "--comment":
		case "-j", "-g", "--jump", "--goto":
			if r.Arg(i).Value == "DNAT" {
				n++ // its destination
			}
			return n
		default:
			if !grouped {
				n++
			}
		}
	}
	return n
}

// ReadChain returns the typed reading of the rules of c alone, made
// afresh: for a chain its table does not list, or a table the parser did
// not make.
func ReadChain(c *Chain) *Meanings {
	rd := &Meanings{only: c, rules: make([]Meaning, len(c.Rules))}
	var sc readScratch
	for i, r := range c.Rules {
		rd.read(r, &rd.rules[i], &sc)
	}
	return rd
}

// Chain returns the meanings of the rules of c, in order, and the
// reading that holds them (whose Det, Fork and Ext read them): rd for a
// chain its table lists, else a reading of c alone made afresh
// ([ReadChain]).
func (rd *Meanings) Chain(c *Chain) (*Meanings, []Meaning) {
	if rd.only != nil && c == rd.only {
		return rd, rd.rules
	}
	if rd.t != nil && rd.j.place(c) >= 0 {
		start := int(rd.j.start[c.Index()])
		return rd, rd.rules[start : start+len(c.Rules) : start+len(c.Rules)]
	}
	rc := ReadChain(c)
	return rc, rc.rules
}

// Det returns the deterministic matches of m, a rule of the reading, in
// the order written.
func (rd *Meanings) Det(m *Meaning) []Match {
	return rd.ms[m.first : m.first+uint32(m.ndet) : m.first+uint32(m.ndet)]
}

// Fork returns the statistic and recent matches of m, a rule of the
// reading: they decide last.
func (rd *Meanings) Fork(m *Meaning) []Match {
	return rd.ms[m.first+uint32(m.ndet) : m.first+uint32(m.nms) : m.first+uint32(m.nms)]
}

// Ext returns the extension of x, a match of the reading, nil when it
// has none.
func (rd *Meanings) Ext(x *Match) *MatchExt {
	e := x.ext()
	if e == 0 {
		return nil
	}
	return &rd.exts[e-1]
}

// PortsContain reports whether port p is in the ranges of x, a port
// match of the reading.
func (rd *Meanings) PortsContain(x *Match, p uint16) bool {
	if e := rd.Ext(x); e != nil && e.Ports != nil {
		for _, r := range e.Ports {
			if r.Lo <= p && p <= r.Hi {
				return true
			}
		}
		return false
	}
	r := x.Port()
	return r.Lo <= p && p <= r.Hi
}

// NATDestination returns the --to-destination of m, a DNAT rule of the
// reading, when it is one address and port (kube-proxy's "ip:port" and
// "[ip6]:port", unmapped, without a zone); other forms are left to the
// reader ([Meaning.TargetArg]).
func (rd *Meanings) NATDestination(m *Meaning) (netip.AddrPort, bool) {
	if m.flags&mNATDest == 0 {
		return netip.AddrPort{}, false
	}
	x := &rd.ms[m.first+uint32(m.nms)]
	a, _ := x.SingleIP()
	return netip.AddrPortFrom(a, x.aux), true
}

// Dst32 returns the one destination address m, a rule of the reading,
// requires, if it HasDst32.
func (rd *Meanings) Dst32(m *Meaning) netip.Addr {
	det := rd.Det(m)
	for i := range det {
		if x := &det[i]; x.Kind == MatchDestination && !x.Neg {
			if a, ok := x.SingleIP(); ok {
				return a
			}
		}
	}
	return netip.Addr{}
}

// First returns the first deterministic match of m of the given kind.
func (rd *Meanings) First(m *Meaning, kind MatchKind) (*Match, bool) {
	return firstOfKind(rd.Det(m), kind)
}

// FirstFork returns the first statistic or recent match of m of the
// given kind.
func (rd *Meanings) FirstFork(m *Meaning, kind MatchKind) (*Match, bool) {
	return firstOfKind(rd.Fork(m), kind)
}

// firstOfKind returns the first of ms of the given kind.
func firstOfKind(ms []Match, kind MatchKind) (*Match, bool) {
	for i := range ms {
		if ms[i].Kind == kind {
			return &ms[i], true
		}
	}
	return nil, false
}

// setPrefix makes p (masked) the prefix of an address match.
func (x *Match) setPrefix(p netip.Prefix) {
	a := p.Addr()
	x.bits = uint8(p.Bits())
	if a.Is6() {
		b := a.As16()
		x.v6, x.w = true, [2]uint64{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
		return
	}
	b := a.As4()
	x.w = [2]uint64{0, uint64(binary.BigEndian.Uint32(b[:]))}
}

// Prefix returns the prefix of an address match (or the address of a
// MatchNATDestination), masked.
func (x *Match) Prefix() netip.Prefix {
	if x.v6 {
		var b [16]byte
		binary.BigEndian.PutUint64(b[:8], x.w[0])
		binary.BigEndian.PutUint64(b[8:], x.w[1])
		return netip.PrefixFrom(netip.AddrFrom16(b), int(x.bits))
	}
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(x.w[1]))
	return netip.PrefixFrom(netip.AddrFrom4(b), int(x.bits))
}

// Contains reports whether the prefix of an address match holds a, as
// netip.Prefix.Contains does: never an address of the other family (an
// IPv4-mapped IPv6 address is IPv6), nor one with a zone.
func (x *Match) Contains(a netip.Addr) bool {
	if !x.v6 {
		if !a.Is4() {
			return false
		}
		b := a.As4()
		mask := ^uint32(0) << (32 - x.bits)
		return uint64(binary.BigEndian.Uint32(b[:])&mask) == x.w[1]
	}
	if !a.Is6() || a.Zone() != "" {
		return false
	}
	b := a.As16()
	hi, lo := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	hiMask, loMask := ^uint64(0)<<(64-min(x.bits, 64)), uint64(0)
	if x.bits > 64 {
		loMask = ^uint64(0) << (128 - x.bits)
	}
	return hi&hiMask == x.w[0] && lo&loMask == x.w[1]
}

// SingleIP returns the one address an address match requires, if its
// prefix is a single address.
func (x *Match) SingleIP() (netip.Addr, bool) {
	if x.bits != 32 && !x.v6 || x.bits != 128 && x.v6 {
		return netip.Addr{}, false
	}
	return x.Prefix().Addr(), true
}

// Prob returns the probability of a MatchStatistic before negation:
// the one the kernel applies for --probability (see KernelProbability;
// a value outside [0, 1] as written, NaN for one that is not a number),
// 1/n for --every n.
func (x *Match) Prob() float64 { return math.Float64frombits(x.w[1]) }

// setProb sets the probability of a MatchStatistic.
func (x *Match) setProb(p float64) { x.w[1] = math.Float64bits(p) }

// Probability returns the probability that a MatchStatistic matches,
// negation applied.
func (x *Match) Probability() float64 {
	if x.Neg {
		return 1 - x.Prob()
	}
	return x.Prob()
}

// targetKind returns the kind of target t. The targets applied by name
// include StandardTargets: a rule with one of them never jumps to a
// chain of that name.
func targetKind(t string) TargetKind {
	switch t {
	case "":
		return TargetNone
	case "ACCEPT":
		return TargetAccept
	case "DROP":
		return TargetDrop
	case "REJECT":
		return TargetReject
	case "RETURN":
		return TargetReturn
	case "DNAT":
		return TargetDNAT
	case "REDIRECT":
		return TargetRedirect
	case "SNAT":
		return TargetSNAT
	case "MASQUERADE":
		return TargetMasquerade
	case "MARK":
		return TargetMark
	case "LOG", "NFLOG", "ULOG", "TRACE", "AUDIT":
		return TargetLog
	case "NOTRACK":
		return TargetNotrack
	case "CT":
		return TargetCT
	case "QUEUE", "NFQUEUE":
		return TargetQueue
	}
	return TargetOther
}

// readScratch holds the options of the rule being read.
type readScratch struct {
	fork  []Match // the statistic and recent matches of the rule
	opts  []Arg
	flags []Arg
	m     Match
	ext   MatchExt
}

// addExt stores the extension of a match: it returns the match's ext.
func (rd *Meanings) addExt(e MatchExt) uint32 {
	rd.exts = append(rd.exts, e)
	return uint32(len(rd.exts))
}

// read reads r into m; its matches go to the end of rd.ms.
func (rd *Meanings) read(r *Rule, m *Meaning, sc *readScratch) {
	n := r.NumArgs()
	m.Rule, m.targ = r, uint16(n)
	start := len(rd.ms)
	sc.fork = sc.fork[:0]
	// The options of a recent, statistic or ipvs match, or the tcp flags,
	// are gathered in sc.opts and sc.flags and read together.
	module := ""
	sc.opts, sc.flags = sc.opts[:0], sc.flags[:0]
	flush := func() {
		switch module {
		case "recent":
			rd.recent(m, sc, sc.opts)
		case "statistic":
			rd.statistic(m, sc, sc.opts)
		case "ipvs":
			rd.ms = append(rd.ms, rd.readIPVS(sc.opts))
		}
		if len(sc.flags) > 0 {
			rd.ms = appendTCPFlags(rd.ms, sc.flags)
			sc.flags = sc.flags[:0]
		}
		sc.opts = sc.opts[:0]
		module = ""
	}
	for i := 0; i < n; i++ {
		if module == "comment" && r.ArgName(i) == "--comment" {
			// Matches every packet: its text is read on demand.
			if m.comment == 0 {
				m.comment = uint16(i + 1)
			}
			continue
		}
		a := r.Arg(i)
		switch a.Name {
		case "-j", "-g", "--jump", "--goto":
			flush()
			m.Target, m.targ = targetKind(a.Value), uint16(i+1)
			if a.Name == "-g" || a.Name == "--goto" {
				m.flags |= mGoto
			}
			if i == r.targIndex() {
				m.flags |= mRuleTarget
			}
			i = n
			continue
		case "-m", "--match":
			flush()
			module = a.Value
			if !knownModule(module) {
				rd.addUnknown(m, "-m "+module)
			}
			continue
		case "--comment":
			if m.comment == 0 {
				m.comment = uint16(i + 1)
			}
		}
		if module == "recent" || module == "statistic" || module == "ipvs" {
			sc.opts = append(sc.opts, a)
			continue
		}
		if a.Name == "--tcp-flags" || a.Name == "--syn" {
			sc.flags = append(sc.flags, a)
			continue
		}
		x, ext := &sc.m, &sc.ext // ext is zero: readOpt fills it for the few matches that have one
		if !readOpt(a, module, x, ext) {
			rd.addUnknown(m, argText(a, module))
			continue
		}
		if x.Kind == MatchInInterface || x.Kind == MatchOutInterface || x.Kind == MatchSet || ext.Ports != nil {
			x.setExt(rd.addExt(*ext))
			*ext = MatchExt{}
		}
		if x.Kind == MatchDestination && !x.Neg && m.flags&mDst32 == 0 {
			if _, ok := x.SingleIP(); ok {
				m.flags |= mDst32
			}
		}
		if x.Kind == MatchDestPort && !x.Neg && !x.Either && x.ext() == 0 {
			if pr := x.Port(); pr.Lo == pr.Hi {
				if m.flags&(mDport|mPortMulti) != 0 {
					// Several port matches: no one port.
					m.flags, m.Dport = m.flags&^mDport|mPortMulti, 0
				} else {
					m.Dport, m.flags = pr.Lo, m.flags|mDport
				}
			}
		}
		if x.Kind != matchAlways {
			rd.ms = append(rd.ms, *x)
		}
	}
	flush()
	// The deterministic matches, then the statistic and recent ones.
	m.first, m.ndet = uint32(start), uint16(len(rd.ms)-start)
	rd.ms = append(rd.ms, sc.fork...)
	m.nms = uint16(len(rd.ms) - start)
	if m.Target == TargetDNAT {
		// kube-proxy's "ip:port" is read once here; other forms are left
		// to the reader.
		if to, ok := m.TargetArg("--to-destination"); ok {
			if ap, ok := ParseAddrPort(to); ok && ap.Addr().Zone() == "" {
				a := ap.Addr()
				x := Match{Kind: MatchNATDestination}
				x.setPrefix(netip.PrefixFrom(a, a.BitLen()))
				x.aux = ap.Port()
				rd.ms = append(rd.ms, x)
				m.flags |= mNATDest
			}
		}
	}
}

// matchAlways is the kind of a match read and not stored: it matches
// every packet (comment, nfacct, limit, addrtype --limit-iface-*).
const matchAlways MatchKind = 255

func argText(a Arg, module string) string {
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

// readOpt reads one option of a rule outside recent/statistic/ipvs into
// x, and the extension of the match, if it has one, into ext (zero on
// entry); false when the option is not modelled.
func readOpt(a Arg, module string, x *Match, ext *MatchExt) bool {
	*x = Match{Neg: a.Neg}
	switch a.Name {
	case "-s", "--source", "-d", "--destination":
		p, ok := ParsePrefix(a.Value)
		if !ok {
			return false
		}
		x.setPrefix(p)
		x.Kind = MatchSource
		if a.Name == "-d" || a.Name == "--destination" {
			x.Kind = MatchDestination
		}
		return true
	case "-i", "--in-interface", "-o", "--out-interface":
		ext.Iface = a.Value
		x.Kind = MatchInInterface
		if a.Name == "-o" || a.Name == "--out-interface" {
			x.Kind = MatchOutInterface
		}
		return true
	case "-p", "--protocol":
		p, ok := ProtocolNumber(a.Value)
		if !ok {
			return false
		}
		x.Kind, x.Proto = MatchProtocol, p
		return true
	case "-f", "--fragment":
		x.Kind = MatchFragment
		return true
	}
	switch module {
	case "tcp", "udp", "sctp", "multiport":
		switch a.Name {
		case "--dport", "--destination-port", "--dports", "--destination-ports":
			x.Kind = MatchDestPort
		case "--sport", "--source-port", "--sports", "--source-ports":
			x.Kind = MatchSourcePort
		case "--ports":
			x.Kind, x.Either = MatchDestPort, true
		default:
			return false
		}
		return setPortList(x, ext, a.Value)
	case "comment", "nfacct":
		x.Kind = matchAlways
		return true
	case "limit":
		// The first packet of a connection is within any limit's burst.
		x.Kind = matchAlways
		return true
	case "icmp", "icmp6", "icmpv6":
		return false
	case "mark":
		if a.Name != "--mark" {
			return false
		}
		v, mask, ok := ParseMark(a.Value)
		if !ok {
			return false
		}
		x.Kind = MatchMark
		x.setValue(v, mask)
		return true
	case "addrtype":
		switch a.Name {
		case "--src-type", "--dst-type":
			bits, ok := parseFlags(a.Value, addrTypeNames)
			if !ok {
				return false
			}
			x.Kind = MatchSrcType
			x.setValue(bits, 0)
			if a.Name == "--dst-type" {
				x.Kind = MatchDstType
			}
			return true
		case "--limit-iface-in", "--limit-iface-out":
			// The node's addresses are not known per interface: LOCAL is
			// judged against all of them.
			x.Kind = matchAlways
			return true
		}
		return false
	case "conntrack", "state":
		if a.Name != "--ctstate" && a.Name != "--state" {
			return false
		}
		bits, ok := parseFlags(a.Value, ctStateNames)
		if !ok {
			return false
		}
		x.Kind = MatchCtState
		x.setValue(bits, 0)
		return true
	case "set":
		if a.Name != "--match-set" && a.Name != "--set" {
			return false
		}
		name, flags, ok := strings.Cut(strings.TrimSpace(a.Value), " ")
		if !ok {
			return false
		}
		sm := &SetMatch{Name: name}
		for _, f := range strings.Split(strings.TrimSpace(flags), ",") {
			switch f {
			case "src":
				sm.Src = append(sm.Src, true)
			case "dst":
				sm.Src = append(sm.Src, false)
			default:
				return false
			}
		}
		x.Kind = MatchSet
		ext.Set = sm
		return true
	case "physdev":
		switch a.Name {
		case "--physdev-is-in", "--physdev-is-out", "--physdev-is-bridged", "--physdev-in", "--physdev-out":
			x.Kind = MatchPhysdev
			return true
		}
		return false
	}
	return false
}

// statistic reads the options of -m statistic into a MatchStatistic of
// the rule's fork matches; options it does not model make the rule's
// match unknown.
func (rd *Meanings) statistic(m *Meaning, sc *readScratch, opts []Arg) {
	mode, every := "", 0
	prob, hasProb := math.NaN(), false
	neg, known := false, true
	for _, o := range opts {
		switch o.Name {
		case "--mode":
			mode = o.Value
		case "--probability":
			if p, err := parseProbability(o.Value); err == nil {
				prob = p
			}
			hasProb, neg = true, neg || o.Neg
		case "--every":
			if n, err := strconv.Atoi(o.Value); err == nil {
				every = n
			}
			neg = neg || o.Neg
		case "--packet":
		default:
			known = false
		}
	}
	x := Match{Kind: MatchStatistic, Neg: neg}
	x.setProb(prob)
	switch {
	case mode == "random" && hasProb:
		x.setValue(StatisticRandom, 0)
		if prob >= 0 && prob <= 1 {
			x.setProb(KernelProbability(prob))
		} else {
			known = false
		}
	case mode == "nth" && every > 0:
		x.setValue(StatisticNth, 0)
		x.setProb(1 / float64(every))
	default:
		known = false
	}
	if !known {
		var b strings.Builder
		b.WriteString("-m statistic")
		for _, o := range opts {
			b.WriteString(" " + o.String())
		}
		rd.addUnknown(m, b.String())
	}
	sc.fork = append(sc.fork, x)
}

// recent reads the options of -m recent: --rcheck, --update and
// --remove make a MatchRecent of the rule's fork matches, --set marks
// the rule (RecentSet).
func (rd *Meanings) recent(m *Meaning, sc *readScratch, opts []Arg) {
	name, check, set := "DEFAULT", uint32(0), false
	seconds, hasSeconds := 0, false
	text, unknown := "-m recent", ""
	for _, o := range opts {
		text += " " + o.String()
		switch o.Name {
		case "--name":
			name = o.Value
		case "--rcheck":
			check = RecentRcheck
		case "--update":
			check = RecentUpdate
		case "--remove":
			check = RecentRemove
		case "--set":
			set = true
		case "--seconds":
			if !hasSeconds {
				seconds, _ = strconv.Atoi(o.Value)
				hasSeconds = true
			}
		case "--reap", "--hitcount", "--rttl", "--mask", "--rsource", "--rdest":
		default:
			if unknown == "" {
				unknown = text // the options up to the first not modelled
			}
		}
	}
	if set {
		m.flags |= mRecentSet
	}
	if unknown != "" {
		rd.addUnknown(m, unknown)
	}
	if check == 0 {
		return // --set: always matches; records the source
	}
	x := Match{Kind: MatchRecent}
	x.setValue(uint32(int32(seconds)), check)
	x.setExt(rd.addExt(MatchExt{Text: name}))
	sc.fork = append(sc.fork, x)
}

func (rd *Meanings) readIPVS(opts []Arg) Match {
	im := &IPVSMatch{}
	text := "-m ipvs"
	for _, o := range opts {
		text += " " + o.String()
		switch o.Name {
		case "--ipvs":
			im.Property, im.PropertyNeg = true, o.Neg
		case "--vaddr":
			p, ok := ParsePrefix(o.Value)
			if !ok {
				im.Unknown = append(im.Unknown, o.String())
				continue
			}
			im.VAddr, im.VAddrNeg = p, o.Neg
		case "--vport":
			n, err := strconv.ParseUint(o.Value, 10, 16)
			if err != nil {
				im.Unknown = append(im.Unknown, o.String())
				continue
			}
			im.VPort, im.VPortNeg = uint16(n), o.Neg
		case "--vproto":
			p, ok := ProtocolNumber(o.Value)
			if !ok {
				im.Unknown = append(im.Unknown, o.String())
				continue
			}
			im.VProto, im.VProtoNeg = p, o.Neg
		default:
			im.Unknown = append(im.Unknown, o.String())
		}
	}
	x := Match{Kind: MatchIPVS}
	x.setExt(rd.addExt(MatchExt{IPVS: im, Text: text}))
	return x
}

// appendTCPFlags appends the matches of --syn and --tcp-flags to out.
func appendTCPFlags(out []Match, opts []Arg) []Match {
	for _, o := range opts {
		x := Match{Kind: MatchTCPFlags, Neg: o.Neg}
		if o.Name == "--syn" {
			x.aux = tcpFlagsAux(TCPFIN|TCPSYN|TCPRST|TCPACK, TCPSYN)
		} else {
			mask, cmp, ok := strings.Cut(o.Value, " ")
			if !ok {
				x.Kind = MatchUnknown
			}
			x.aux = tcpFlagsAux(parseTCPFlags(mask), parseTCPFlags(cmp))
		}
		out = append(out, x)
	}
	return out
}

// tcpFlagsAux returns the aux of a MatchTCPFlags examining the flags of mask
// and requiring those of comp among them.
func tcpFlagsAux(mask, comp uint8) uint16 { return uint16(comp)<<8 | uint16(mask) }
