package trace

import (
	"fmt"
	"slices"
)

// This file walks the user chains of an iptables data plane once per
// state of the packet: a jump (or a goto) walks the chain alone, as a
// call, and keeps how it can end, by the state the packet enters it in;
// entered again in that state, the chain is not walked again. Its ends
// that reach the same state are merged, with their probabilities added
// (a trace with steps keeps those of the most probable way to the end,
// and says that paths were merged). Chains that call the same chains on
// every branch then cost what their rules do, not what their paths do.

// callAfter is the number of rules a trace evaluates walking chains as
// the kernel does before it walks them as calls: a packet through
// kube-proxy's rules evaluates far fewer, and is traced without the cost
// of the calls' keys, every path with its own steps.
var callAfter = 2048

// callKey is the key of a call's ends: the chain and the packet's state.
type callKey struct {
	cc    *cchain
	state string
}

// Ends of a call.
const (
	callReturned  = iota // the chain returned: the caller goes on
	callHookEnded        // ACCEPT or a NAT target: the built-in chain is left
	callDone             // DROP, REJECT, or a loop cut: the path ends
)

// callEnd is one way a call ends: the packet's state then, with the
// probability of that end among the call's, and its steps (with steps).
type callEnd struct {
	s    *state
	kind int
	seg  *segment
}

// call enters chain cc for s, in a summary: its ends are applied to s
// (the first) and to copies of s queued on the walk (the others).
func (w *walker) call(s *state, cc *cchain) {
	if cc.noop {
		return
	}
	if slices.Contains(w.active, cc) {
		// A jump loop (the kernel refuses it): the walk would go round
		// until it is cut.
		s.warn(fmt.Sprintf("chain %s is entered again while it runs: a jump loop; the walk was cut", cc.c.Name))
		s.verdict, s.done = VerdictDrop, true
		return
	}
	k := callKey{cc: cc, state: s.key()}
	ends, ok := w.calls[k]
	if !ok {
		w.active = append(w.active, cc)
		ends = w.subwalk(s, cc)
		w.active = w.active[:len(w.active)-1]
		if w.calls == nil {
			w.calls = map[callKey][]callEnd{}
		}
		w.calls[k] = ends
	}
	if w.err != nil {
		return
	}
	if len(ends) == 0 {
		// Every path of the call was cut (the bound of paths).
		s.done, s.verdict = true, VerdictDrop
		return
	}
	base := w.clone(s)
	for i, e := range ends {
		t := s
		if i > 0 {
			t = w.clone(base)
			w.work = append(w.work, t)
		}
		prob, nsteps, frames, stages := base.prob, base.nsteps, t.frames, t.stages
		steps, nstep, hops, hook, why, merged := t.steps, t.nstep, t.hops, t.hook, t.why, base.merged
		*t = *e.s
		t.prob, t.nsteps = prob*e.s.prob, nsteps+e.s.nsteps
		t.frames, t.stages, t.steps, t.nstep = frames, stages, steps, nstep
		t.hops, t.hook, t.why, t.merged = hops, hook, why, merged || e.s.merged
		if e.seg != nil {
			// The caller's steps, then the call's, shared with every
			// caller.
			t.steps = append(slices.Clip(steps), stepRef{seg: e.seg})
			t.nstep += e.seg.n
		}
		t.conds = slices.Clip(e.s.conds)
		t.warnings = slices.Clip(e.s.warnings)
		switch e.kind {
		case callHookEnded:
			t.hookEnded = false
			w.endHook(t)
		case callDone:
			t.done = true
		}
	}
	w.free = append(w.free, base)
	w.nwork += len(ends)
}

// subwalk walks chain cc alone for a copy of s of probability 1 and
// returns how it ends, the ends in the same state merged.
func (w *walker) subwalk(s *state, cc *cchain) []callEnd {
	saved := w.work
	w.work = nil
	s0 := w.clone(s)
	s0.prob, s0.nsteps = 1, 0
	s0.frames = s0.frames[:0:0]
	// The call's own steps: its ends are applied to the caller's.
	s0.steps, s0.nstep = s0.steps[:0:0], 0
	w.pushCompiled(s0, cc)
	w.work = append(w.work, s0)
	var ends []callEnd
	for len(w.work) > 0 && w.err == nil {
		x := w.work[len(w.work)-1]
		w.work = w.work[:len(w.work)-1]
		for !x.done && !x.hookEnded && len(x.frames) > 0 && w.err == nil {
			if x.nsteps > w.opts.maxSteps() {
				x.warn(fmt.Sprintf("more than %d rules on one path: the walk was cut (a loop?)", w.opts.maxSteps()))
				x.verdict, x.done = VerdictDrop, true
				break
			}
			w.step(x)
		}
		kind := callReturned
		switch {
		case x.done:
			kind = callDone
		case x.hookEnded:
			kind = callHookEnded
		}
		ends = w.mergeCallEnd(ends, callEnd{s: x, kind: kind})
	}
	w.work = saved
	for i := range ends {
		if e := &ends[i]; len(e.s.steps) > 0 {
			e.seg = &segment{refs: e.s.steps, n: e.s.nstep}
		}
	}
	return ends
}

// mergeCallEnd adds e to ends, or its probability to the end of ends in
// the same state; with steps, the merged end keeps those of the more
// probable.
func (w *walker) mergeCallEnd(ends []callEnd, e callEnd) []callEnd {
	for _, x := range ends {
		if x.kind == e.kind && x.s.same(e.s) {
			if !x.s.summary {
				if e.s.prob > x.s.prob {
					x.s.steps, x.s.nstep = e.s.steps, e.s.nstep
				}
				x.s.merged, w.merged = true, true
			}
			x.s.prob += e.s.prob
			x.s.nsteps = max(x.s.nsteps, e.s.nsteps)
			return ends
		}
	}
	return append(ends, e)
}

// same reports whether s and o are the packet in the same state (their
// probabilities, steps and frames aside).
func (s *state) same(o *state) bool {
	return s.src == o.src && s.dst == o.dst && s.sport == o.sport && s.dport == o.dport && s.proto == o.proto &&
		s.in == o.in && s.out == o.out && s.mark == o.mark && s.dnat == o.dnat && s.dnatTo == o.dnatTo &&
		s.ipvsVS == o.ipvsVS && s.untracked == o.untracked && s.verdict == o.verdict && s.done == o.done &&
		s.masq == o.masq && s.snat == o.snat && s.local == o.local && s.hookEnded == o.hookEnded &&
		slices.Equal(s.conds, o.conds) && slices.Equal(s.warnings, o.warnings)
}

// key returns the state of the packet of s as a string, equal for states
// that are the same (see same; verdict and done aside: a state that is
// walked has neither).
func (s *state) key() string {
	return fmt.Sprintf("%v|%v|%d|%d|%d|%s|%s|%x|%v|%v|%p|%v|%v|%s|%v|%q|%q",
		s.src, s.dst, s.sport, s.dport, s.proto, s.in, s.out, s.mark, s.dnat, s.dnatTo, s.ipvsVS, s.untracked,
		s.masq, s.snat, s.local, s.conds, s.warnings)
}

// outcome is the ended states of a walk that merged paths (see
// keepOutcome) that end alike: the most probable of them, with their
// probabilities added.
type outcome struct {
	s       state
	verdict Verdict
}

// keepOutcome keeps s, a state ended with verdict in a walk that merged
// paths, as an outcome of the walk, or merges it into the outcome that
// ends alike (see endKey): a path's steps are made only for the outcomes,
// not for every way through the rules.
func (w *walker) keepOutcome(s *state, verdict Verdict) {
	for i := range w.outcomes {
		o := &w.outcomes[i]
		if o.verdict != verdict || o.s.dst != s.dst || o.s.dport != s.dport || o.s.masq != s.masq || o.s.snat != s.snat ||
			!slices.Equal(o.s.conds, s.conds) {
			continue
		}
		prob, warnings := o.s.prob+s.prob, o.s.warnings
		if s.prob > o.s.prob {
			o.s = *s
		}
		o.s.prob, o.s.merged = prob, true
		o.s.warnings = slices.Clip(o.s.warnings)
		for _, wn := range append(slices.Clip(warnings), s.warnings...) {
			if !slices.Contains(o.s.warnings, wn) {
				o.s.warnings = append(o.s.warnings, wn)
			}
		}
		return
	}
	c := *s
	c.frames, c.stages = nil, nil
	w.outcomes = append(w.outcomes, outcome{s: c, verdict: verdict})
}
