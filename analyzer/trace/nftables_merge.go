package trace

import (
	"encoding/binary"
	"hash/maphash"
	"net/netip"
	"slices"
	"strconv"
	"unsafe"

	"github.com/proxyscan/proxyscan/parsers/nft"
)

// This file walks the chains of an nftables data plane for a summary
// (Options.Summary), and for a trace with steps once it has met callAfter
// rules: the branches of a chain that reach the same rule in the same
// state go on as one, with their probabilities added (and the steps of
// the more probable), and a chain entered again in a state it was
// entered in before is not walked again: its ends are those of the first
// time, scaled. The work of a trace then grows with the rules and the
// states the packet can be in, not with the number of its paths.

// memoKey is what a chain's ends are found by: the hash of the chain,
// the depth it was entered at and the packet's state (see
// [nftState.appendKey]). The entries under one key are compared (see
// [nftState.same]), so that a collision of hashes is only a longer list.
type memoKey uint64

// memoEntry is the ends of chain c entered at depth in state st; next is
// the entry of the same key (of the same chain, while the memo lists the
// entries by chain) entered before, or -1.
type memoEntry struct {
	c     *nft.Chain
	depth int
	st    *nftState
	ends  []chainEnd
	next  int32
}

// memoSeed seeds the hashes of the states.
var memoSeed = maphash.MakeSeed()

// runChainMerged is runChain for a summary.
func (w *nftWalk) runChainMerged(st *nftState, t *nftTable, c *nft.Chain, depth int) []chainEnd {
	slot, before := w.enteredBefore(c)
	if !before {
		// A chain entered once is not kept: the walk of a packet to a
		// Service enters a few chains once per endpoint, each in
		// another state, and the memo spares the walks whose paths
		// multiply, which enter chains again and again.
		return w.walkFresh(st, t, c, depth, nil)
	}
	var ends []chainEnd
	found := false
	if slot >= 0 && !w.memoHashed {
		// The entries of a chain of a walk that entered few chains, few
		// times, are listed by chain (see memoHeads): the state is
		// compared with each rather than hashed.
		n := 0
		for i := w.memoHeads[slot]; i >= 0; i = w.memoEnts[i].next {
			if e := &w.memoEnts[i]; e.depth == depth && e.st.same(st) {
				ends, found = e.ends, true
				break
			}
			n++
		}
		if !found {
			e := memoEntry{c: c, depth: depth, st: w.snapshot(st)}
			out := w.walkFresh(st, t, c, depth, &e.ends)
			w.addMemo(e, slot)
			if n >= maxMemoList {
				w.hashMemo()
			}
			return out
		}
	} else {
		if !w.memoHashed {
			w.hashMemo()
		}
		k := w.memoKeyOf(c, depth, st)
		head, ok := w.memo[k]
		if ok {
			for i := head; i >= 0; i = w.memoEnts[i].next {
				if e := &w.memoEnts[i]; e.c == c && e.depth == depth && e.st.same(st) {
					ends, found = e.ends, true
					break
				}
			}
		} else {
			head = -1
		}
		if !found {
			// The state the chain is entered in, kept to tell the entries
			// of a key apart: the walk changes st in place.
			e := memoEntry{c: c, depth: depth, st: w.snapshot(st), next: head}
			out := w.walkFresh(st, t, c, depth, &e.ends)
			w.memo[k] = int32(len(w.memoEnts))
			w.memoEnts = append(w.memoEnts, e)
			return out
		}
	}
	out := w.endBuf(len(ends))[:len(ends)]
	for i, e := range ends {
		s := w.clone(e.st)
		w.scale(s, st)
		out[i] = chainEnd{st: s, kind: e.kind}
	}
	w.nwork += len(out)
	return out
}

// walkFresh walks chain c from st itself, made fresh (with the
// probability 1, no rules met and, with steps, none of its own), and
// returns the chain's ends scaled in place by what st was: nothing of
// the caller reads st after the call. When memo is not nil, it is set to
// copies of the ends as the chain gave them, before they are scaled.
func (w *nftWalk) walkFresh(st *nftState, t *nftTable, c *nft.Chain, depth int, memo *[]chainEnd) []chainEnd {
	caller := *st
	st.prob, st.nsteps = 1, 0
	if st.steps != nil {
		st.steps = make([]Step, 0, 8)
	}
	ends := w.runMerged(st, t, c, depth)
	if memo != nil && len(ends) > 0 {
		kept := w.endBuf(len(ends))[:len(ends)]
		for i, e := range ends {
			kept[i] = chainEnd{st: w.clone(e.st), kind: e.kind}
		}
		*memo = kept
	}
	for _, e := range ends {
		w.scale(e.st, &caller)
	}
	w.nwork += len(ends)
	return ends
}

// maxMemoList is the most entries of one chain the memo lists before it
// hashes the states of every entry.
const maxMemoList = 16

// addMemo adds e, the ends of the chain listed at slot of enteredFew, to
// the memo: to the chain's list, or hashed when the walk that made them
// turned the memo to hashing (see hashMemo).
func (w *nftWalk) addMemo(e memoEntry, slot int) {
	i := int32(len(w.memoEnts))
	if w.memoHashed {
		k := w.memoKeyOf(e.c, e.depth, e.st)
		head, ok := w.memo[k]
		if !ok {
			head = -1
		}
		e.next = head
		w.memo[k] = i
	} else {
		e.next = w.memoHeads[slot]
		w.memoHeads[slot] = i
	}
	w.memoEnts = append(w.memoEnts, e)
}

// hashMemo turns the memo from lists by chain to a hash of the states:
// each entry is chained to the entry of its key entered before it.
func (w *nftWalk) hashMemo() {
	w.memoHashed = true
	if w.memo == nil {
		w.memo = map[memoKey]int32{}
	}
	for i := range w.memoEnts {
		e := &w.memoEnts[i]
		k := w.memoKeyOf(e.c, e.depth, e.st)
		head, ok := w.memo[k]
		if !ok {
			head = -1
		}
		e.next = head
		w.memo[k] = int32(i)
	}
}

// memoKeyOf returns the key of chain c entered at depth in state st.
func (w *nftWalk) memoKeyOf(c *nft.Chain, depth int, st *nftState) memoKey {
	w.kbuf = st.appendKey(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint32(w.kbuf[:0], uint32(depth)),
		uint64(uintptr(unsafe.Pointer(c)))))
	return memoKey(maphash.Bytes(memoSeed, w.kbuf))
}

// enteredBefore reports whether the walk entered c before, and records
// that it did; slot is where c is listed in enteredFew (and its memo
// entries' list in memoHeads), -1 once the walk entered too many chains
// to list them.
func (w *nftWalk) enteredBefore(c *nft.Chain) (slot int, before bool) {
	if w.entered == nil {
		// The few chains of a packet's walk are listed, the many of a
		// walk whose paths multiply hashed.
		if i := slices.Index(w.enteredFew, c); i >= 0 {
			return i, true
		}
		if len(w.enteredFew) < maxEnteredFew {
			w.enteredFew = append(w.enteredFew, c)
			w.memoHeads = append(w.memoHeads, -1)
			return len(w.enteredFew) - 1, false
		}
		w.entered = make(map[*nft.Chain]struct{}, 2*maxEnteredFew)
		for _, x := range w.enteredFew {
			w.entered[x] = struct{}{}
		}
	}
	if _, ok := w.entered[c]; ok {
		return -1, true
	}
	w.entered[c] = struct{}{}
	return -1, false
}

// maxEnteredFew is the most chains enteredBefore lists.
const maxEnteredFew = 32

// scale applies s, an end of a chain walked from st made fresh (with
// the probability 1, no rules met and, with steps, none of its own), to
// st: the probabilities multiplied, the rules met and the steps added.
func (w *nftWalk) scale(s, st *nftState) {
	s.prob *= st.prob
	s.nsteps += st.nsteps
	if st.steps != nil {
		s.steps = append(slices.Clip(st.steps), s.steps...)
		s.hops, s.why, s.merged = st.hops, st.why, st.merged || s.merged
		w.nwork += len(s.steps) - len(st.steps)
	}
}

// runMerged runs the rules of c for st, the states that reach the same
// rule merged.
func (w *nftWalk) runMerged(st *nftState, t *nftTable, c *nft.Chain, depth int) []chainEnd {
	out := w.endBuf(8)
	// live and next take turns in two small buffers of the frame: most
	// rules leave one state, a few two or three.
	var bufs [2][4]*nftState
	bufs[0][0] = st
	live := bufs[0][:1]
	for i := 0; i < len(c.Rules) && len(live) > 0; i++ {
		r := c.Rules[i]
		next := bufs[(i+1)%2][:0]
		for _, s := range live {
			if w.nwork++; w.nwork > w.maxWork || w.err != nil {
				if w.err == nil {
					w.err = &WorkError{Limit: w.maxWork, Table: t.label, Chain: c.Name}
				}
				return nil
			}
			if s.nsteps >= w.opts.maxSteps() {
				s.warn("more than " + strconv.Itoa(w.opts.maxSteps()) + " rules met: path cut as a loop")
				out = mergeEnd(out, chainEnd{s, vDrop})
				continue
			}
			for _, o := range w.evalRule(s, t, c, r) {
				switch o.kind {
				case rNoMatch, rContinue:
					next = mergeState(next, o.st)
				case rAccept:
					out = mergeEnd(out, chainEnd{o.st, vAccept})
				case rDrop:
					out = mergeEnd(out, chainEnd{o.st, vDrop})
				case rReject:
					out = mergeEnd(out, chainEnd{o.st, vReject})
				case rReturn:
					out = mergeEnd(out, chainEnd{o.st, vFall})
				case rJump, rGoto:
					target := w.chain(t, o.target)
					if target == nil {
						o.st.warn(t.label + " chain " + c.Name + ": " + o.kindName() + " to unknown chain " + o.target)
						out = mergeEnd(out, chainEnd{o.st, vDrop})
						continue
					}
					if depth+1 > maxJumps {
						o.st.warn(t.label + " chain " + c.Name + ": more than " + strconv.Itoa(maxJumps) + " nested jumps")
						out = mergeEnd(out, chainEnd{o.st, vDrop})
						continue
					}
					for _, e := range w.runChainMerged(o.st, t, target, depth+1) {
						if e.kind == vFall && o.kind == rJump {
							next = mergeState(next, e.st)
							continue
						}
						out = mergeEnd(out, e)
					}
				}
			}
		}
		if len(live) > 1 || len(next) > 1 {
			w.forkTable, w.forkChain = t.label, c.Name
		}
		live = next
	}
	for _, s := range live {
		out = mergeEnd(out, chainEnd{s, vFall})
	}
	return out
}

// mergeState adds s to sts, or its probability to the state of sts it is
// the same as.
func mergeState(sts []*nftState, s *nftState) []*nftState {
	for _, x := range sts {
		if x.same(s) {
			x.absorb(s)
			return sts
		}
	}
	return append(sts, s)
}

// mergeEnd adds e to ends, or its probability to the end of ends it is
// the same as.
func mergeEnd(ends []chainEnd, e chainEnd) []chainEnd {
	for _, x := range ends {
		if x.kind == e.kind && x.st.same(e.st) {
			x.st.absorb(e.st)
			return ends
		}
	}
	return append(ends, e)
}

// absorb merges o, a state the same as s, into s: their probabilities
// added, with steps those of the more probable.
func (s *nftState) absorb(o *nftState) {
	if s.steps != nil {
		if o.prob > s.prob {
			s.steps = o.steps
		}
		s.merged = true
	}
	s.prob += o.prob
	s.nsteps = max(s.nsteps, o.nsteps)
}

// same reports whether s and o are the packet in the same state, with
// the same conditions and warnings (their probabilities, steps and hops
// aside: within a hook, the hops are the same).
func (s *nftState) same(o *nftState) bool {
	if s.src != o.src || s.dst != o.dst || s.dport != o.dport || s.proto != o.proto || s.iif != o.iif || s.oif != o.oif ||
		s.mark != o.mark || s.ctmark != o.ctmark || s.dnat != o.dnat || s.masq != o.masq || s.snat != o.snat ||
		s.natDone != o.natDone || s.hook != o.hook || len(s.updated) != len(o.updated) ||
		!slices.Equal(s.conds, o.conds) || !slices.Equal(s.warnings, o.warnings) {
		return false
	}
	for k, v := range s.updated {
		if o.updated[k] != v {
			return false
		}
	}
	return true
}

// appendKey appends the state of s to b: equal for states that are the
// same.
func (s *nftState) appendKey(b []byte) []byte {
	b = appendAddr(b, s.src)
	b = appendAddr(b, s.dst)
	b = binary.LittleEndian.AppendUint16(b, s.dport)
	b = binary.LittleEndian.AppendUint32(b, s.mark)
	b = binary.LittleEndian.AppendUint32(b, s.ctmark)
	var flags byte
	for i, f := range [...]bool{s.masq, s.natDone[0], s.natDone[1]} {
		if f {
			flags |= 1 << i
		}
	}
	b = append(b, flags)
	if s.dnat.IsValid() {
		b = appendAddr(append(b, 1), s.dnat.Addr())
		b = binary.LittleEndian.AppendUint16(b, s.dnat.Port())
	} else {
		b = append(b, 0)
	}
	for _, f := range [...]string{s.proto, s.iif, s.oif, s.snat, s.hook} {
		b = appendStr(b, f)
	}
	for _, list := range [...][]string{s.conds, s.warnings} {
		b = binary.AppendUvarint(b, uint64(len(list)))
		for _, x := range list {
			b = appendStr(b, x)
		}
	}
	if len(s.updated) > 0 {
		keys := make([]string, 0, len(s.updated))
		for k := range s.updated {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			b = appendStr(b, k)
			if s.updated[k] {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
		}
	}
	return b
}

// appendStr appends x to b, its length first.
func appendStr(b []byte, x string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(x))), x...)
}

// appendAddr appends a to b, its length first (a zone makes it longer).
func appendAddr(b []byte, a netip.Addr) []byte {
	n := len(b)
	b, _ = a.AppendBinary(append(b, 0))
	b[n] = byte(len(b) - n - 1) // at most 16 bytes and a zone: only the length of a collision
	return b
}
