package trace

import (
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/internal/fault"
)

// This file traces many packets at once, keeping only where their paths
// end ([Sweep]).

// An End is where one path of a packet ends, as a sweep keeps it: the
// fields of a [Path] that say whether the packet reached an endpoint.
type End struct {
	// Probability of the path.
	Probability float64
	// Destination is the address and port the packet leaves with: the
	// Path's Destination is its String. It is the zero AddrPort when the
	// path's address is not valid.
	Destination netip.AddrPort
	verdict     uint8
	// Conditional reports a path that depends on conditions.
	Conditional bool
	// Warned reports a path with warnings.
	Warned bool
}

// verdictCodes lists the verdicts an End stores by number; 0 is none.
var verdictCodes = [...]Verdict{"", VerdictDNAT, VerdictAccept, VerdictReject, VerdictDrop, VerdictLocal}

func verdictCode(v Verdict) uint8 {
	for i, x := range verdictCodes {
		if x == v {
			return uint8(i)
		}
	}
	return 0
}

// Verdict returns how the path ends.
func (e End) Verdict() Verdict { return verdictCodes[e.verdict] }

// A Summary is what a sweep keeps of one packet's trace: where its paths
// end, in the order of [Trace]'s paths (most probable first).
type Summary struct {
	// Ends may be shared with other summaries of the same sweep (packets
	// whose paths end alike): they are not to be modified.
	Ends []End
	// Warned reports warnings of the trace as a whole.
	Warned bool
	// Err is the error Trace returns for the packet (a mode that is not
	// traced, an invalid packet).
	Err error
}

// Reached reports whether some path of non-zero probability reaches an
// endpoint, as [Result.Reached] does.
func (s Summary) Reached() bool {
	for _, e := range s.Ends {
		if v := e.Verdict(); e.Probability > 0 && (v == VerdictDNAT || v == VerdictLocal) {
			return true
		}
	}
	return false
}

// Summarize keeps of res (and err, as Trace returns them) what a sweep
// keeps.
func Summarize(res *Result, err error) Summary {
	if err != nil {
		return Summary{Err: err}
	}
	sum := Summary{Warned: len(res.Warnings) > 0}
	if len(res.Paths) > 0 {
		sum.Ends = make([]End, len(res.Paths))
		for i, p := range res.Paths {
			sum.Ends[i] = pathEndOf(p)
		}
	}
	return sum
}

func pathEndOf(p Path) End {
	dst, err := netip.ParseAddrPort(p.Destination)
	if err != nil {
		dst = netip.AddrPort{}
	}
	return End{Probability: p.Probability, Destination: dst, verdict: verdictCode(p.Verdict),
		Conditional: len(p.Conditions) > 0, Warned: len(p.Warnings) > 0}
}

// sweepBatch is the number of consecutive packets a sweep's worker takes
// at a time: the packets of one Service are usually next to each other,
// so its chains are compiled once and its ends are shared.
const sweepBatch = 16

// Sweep traces every packet of pkts through dp in summary mode, on
// workers goroutines (at least one), and returns the summary of each, in
// the order of pkts: the same as Summarize of Trace with Options{Summary:
// true}. Packets are handed out in order, a few at a time, so that
// packets next to each other (those of one Service) are traced together.
// The chains the sweep compiles are its own, kept while packets use them
// and dropped when it returns; dp may be traced meanwhile. A worker's
// panic is returned as a [fault.Error], once the other workers are done.
func Sweep(dp *Dataplane, pkts []Packet, workers int) ([]Summary, error) {
	return StartSweep(dp, pkts, workers).Wait()
}

// A SweepRun is a sweep started by [StartSweep]: its workers trace in the
// background, and a goroutine that is to wait for its summaries may trace
// beside them meanwhile ([SweepRun.Help]).
type SweepRun struct {
	// n is the number of packets, packet returns the i-th.
	n      int
	packet func(i int) Packet
	out    []Summary
	cp     *compiled
	dp     *Dataplane
	next   atomic.Int64
	// stop holds the first WorkError: a data plane whose paths multiply
	// beyond the bound for one packet does for the others too, so the
	// packets after it are not traced.
	stop atomic.Pointer[WorkError]
	g    fault.Group
	// mu guards waited, set once Wait has its workers' answer (a helper
	// that comes later has nothing to trace), and err, a helper's panic.
	mu      sync.Mutex
	waited  bool
	err     error
	helpers sync.WaitGroup
}

// StartSweep starts the sweep of [Sweep] on workers goroutines (at least
// one) and returns at once.
func StartSweep(dp *Dataplane, pkts []Packet, workers int) *SweepRun {
	return StartSweepOf(dp, len(pkts), func(i int) Packet { return pkts[i] }, workers)
}

// StartSweepOf is [StartSweep] of n packets, the i-th of which packet
// returns (called once per packet, from the sweep's workers at once): a
// caller that keeps its packets in a smaller form than [Packet] (tens of
// thousands of them while the sweep runs) makes each as it is traced.
func StartSweepOf(dp *Dataplane, n int, packet func(i int) Packet, workers int) *SweepRun {
	s := &SweepRun{n: n, packet: packet, out: make([]Summary, n), cp: &compiled{}, dp: dp, g: fault.Group{Name: "trace.Sweep"}}
	for range max(workers, 1) {
		s.g.Go(func() error {
			s.work()
			return nil
		})
	}
	return s
}

// Help traces packets of the sweep on the calling goroutine, as one more
// worker, until none is left to hand out: a goroutine about to wait for
// the summaries lends the sweep its core rather than leaving it idle. Its
// panic is returned by Wait as a worker's is.
func (s *SweepRun) Help() {
	s.mu.Lock()
	if s.waited {
		s.mu.Unlock()
		return
	}
	s.helpers.Add(1)
	s.mu.Unlock()
	defer s.helpers.Done()
	var err error
	func() {
		defer fault.Catch(&err)
		s.work()
	}()
	if err != nil {
		s.mu.Lock()
		if s.err == nil {
			s.err = err
		}
		s.mu.Unlock()
	}
}

// Wait waits for the workers and the helpers of the sweep and returns
// the summary of each packet, in the order of the packets, or the first
// panic of a worker or helper.
func (s *SweepRun) Wait() ([]Summary, error) {
	err := s.g.Wait()
	s.mu.Lock()
	s.waited = true
	s.mu.Unlock()
	s.helpers.Wait()
	// Nothing traces any more: the compiled chains, which read the
	// tables' typed reading, go with the packets.
	s.cp, s.packet = nil, nil
	if err == nil {
		s.mu.Lock()
		err = s.err
		s.mu.Unlock()
	}
	if err != nil {
		return nil, err
	}
	return s.out, nil
}

// work traces the packets it is handed out, a batch at a time, until none
// is left.
func (s *SweepRun) work() {
	sw := sweeper{dp: s.dp, cp: s.cp, w: walkerPool.Get().(*walker)}
	sw.w.cx.carve = true
	defer sw.w.release()
	defer func() {
		if sw.nft != nil {
			sw.nft.putBack()
		}
	}()
	for {
		lo := int(s.next.Add(sweepBatch)) - sweepBatch
		if lo >= s.n {
			return
		}
		var prev []End
		for i := lo; i < min(lo+sweepBatch, s.n); i++ {
			if e := s.stop.Load(); e != nil {
				s.out[i] = Summary{Err: e}
				continue
			}
			s.out[i] = sw.trace(s.packet(i), prev)
			prev = s.out[i].Ends
			if s.out[i].Err != nil {
				var we *WorkError
				if errors.As(s.out[i].Err, &we) {
					s.stop.CompareAndSwap(nil, we)
				}
			}
		}
	}
}

// sweeper is one worker of a sweep.
type sweeper struct {
	dp    *Dataplane
	cp    *compiled
	w     *walker
	arena []End  // where the ends of the next summaries go
	res   Result // the last result of an nftables walk
	// nft holds the arenas of the worker's nftables walks, kept from one
	// walk to the next without being cleared (see walkNFTWith), and
	// nftIx the data plane's indexes, by family, once the walks read them.
	nft   *nftScratch
	nftIx [2]*nftIndex
	// problemsRead and hasProblems cache whether the data plane has
	// problems (Dataplane.validate), which every summary tells.
	problemsRead, hasProblems bool
}

// problems reports whether the sweep's data plane has problems
// (Dataplane.validate), read once per worker.
func (sw *sweeper) problems() bool {
	if !sw.problemsRead {
		sw.problemsRead, sw.hasProblems = true, len(sw.dp.validate()) > 0
	}
	return sw.hasProblems
}

// sweepArena is the number of ends a sweeper allocates at a time.
const sweepArena = 1024

// trace returns the summary of pkt; its ends are prev's when they are
// the same.
func (sw *sweeper) trace(pkt Packet, prev []End) Summary {
	pkt, e, err := prepare(sw.dp, pkt)
	if err != nil {
		return Summary{Err: err}
	}
	opts := Options{Summary: true}
	if sw.dp.Mode != model.ModeIPTables && sw.dp.Mode != model.ModeIPVS {
		var res *Result
		if sw.dp.Mode == model.ModeNFTables {
			// The result's room is the sweeper's: its ends are read
			// before the next packet, whose walk writes its paths over
			// the last ones (they are not cleared first: see
			// walkNFTWith).
			sw.res = Result{Paths: sw.res.Paths[:0]}
			if sw.nft == nil {
				sw.nft = nftScratchPool.Get().(*nftScratch)
			}
			if err := walkNFTWith(sw.dp, pkt, opts, &sw.res, sw.nft, false, &sw.nftIx); err != nil {
				return Summary{Err: err}
			}
			res = &sw.res
		} else if res, err = e(sw.dp, pkt, opts); err != nil {
			return Summary{Err: err}
		}
		out := sw.ends(len(res.Paths))
		for i, p := range res.Paths {
			out[i] = pathEndOf(p)
		}
		return Summary{Ends: sw.keep(out, prev), Warned: len(res.Warnings) > 0 || sw.problems()}
	}
	ipvsMode := sw.dp.Mode == model.ModeIPVS
	w := sw.w
	w.walk(sw.dp, sw.cp, pkt, opts, ipvsMode)
	if w.err != nil {
		err := w.err
		w.reset()
		return Summary{Err: err}
	}
	ends, order := mergeEnds(w.ends, w)
	out := sw.ends(len(ends))
	for i, k := range order {
		out[i] = ends[k.i].end()
	}
	// traceIPVS adds a warning of its own.
	sum := Summary{Ends: sw.keep(out, prev), Warned: len(w.warnings) > 0 || ipvsMode && len(sw.dp.IPVS) == 0 || sw.problems()}
	w.reset()
	return sum
}

// ends returns room for n ends, from the sweeper's arena (nil for none).
func (sw *sweeper) ends(n int) []End {
	if n == 0 {
		return nil
	}
	if len(sw.arena) < n {
		sw.arena = make([]End, max(sweepArena, n))
	}
	return sw.arena[:n:n]
}

// keep returns the ends of a summary: prev when they are the same, else
// ends, whose room is taken from the arena.
func (sw *sweeper) keep(ends, prev []End) []End {
	if len(ends) == 0 {
		return nil
	}
	if slicesEqual(ends, prev) {
		return prev
	}
	sw.arena = sw.arena[len(ends):]
	return ends
}

func slicesEqual(a, b []End) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// end returns what a sweep keeps of e.
func (e *pathEnd) end() End {
	return End{Probability: e.prob, Destination: e.dst, verdict: verdictCode(e.verdict),
		Conditional: len(e.conds) > 0, Warned: len(e.warnings) > 0}
}
