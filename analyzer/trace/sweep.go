package trace

import (
	"errors"
	"net/netip"
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
	out := make([]Summary, len(pkts))
	cp := &compiled{}
	var next atomic.Int64
	// stop holds the first WorkError: a data plane whose paths multiply
	// beyond the bound for one packet does for the others too, so the
	// packets after it are not traced.
	var stop atomic.Pointer[WorkError]
	g := fault.Group{Name: "trace.Sweep"}
	for range max(workers, 1) {
		g.Go(func() error {
			sw := sweeper{dp: dp, cp: cp, w: walkerPool.Get().(*walker)}
			sw.w.cx.carve = true
			defer sw.w.release()
			for {
				lo := int(next.Add(sweepBatch)) - sweepBatch
				if lo >= len(pkts) {
					return nil
				}
				var prev []End
				for i := lo; i < min(lo+sweepBatch, len(pkts)); i++ {
					if e := stop.Load(); e != nil {
						out[i] = Summary{Err: e}
						continue
					}
					out[i] = sw.trace(pkts[i], prev)
					prev = out[i].Ends
					if out[i].Err != nil {
						var we *WorkError
						if errors.As(out[i].Err, &we) {
							stop.CompareAndSwap(nil, we)
						}
					}
				}
			}
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// sweeper is one worker of a sweep.
type sweeper struct {
	dp    *Dataplane
	cp    *compiled
	w     *walker
	arena []End  // where the ends of the next summaries go
	res   Result // the last result of an nftables walk
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
			// before the next packet.
			clear(sw.res.Paths[:cap(sw.res.Paths)])
			sw.res = Result{Paths: sw.res.Paths[:0]}
			if err := walkNFT(sw.dp, pkt, opts, &sw.res); err != nil {
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
