package cmd

import (
	"encoding/binary"
	"io/fs"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"

	"github.com/proxyscan/proxyscan/analyzer/load"
)

// processEnds says the process ends with the command it runs (Main, not
// a test calling a command again and again): the commands that load one
// node (or the nodes of one unit, or the two sides of a diff) then read
// the dumps' text outside the Go heap, never freed (load.Options.OffHeap),
// so that it counts once in the process's peak memory rather than also
// in the collector's heap goal.
var processEnds bool

// offHeap returns lo reading the dumps' text outside the Go heap when the
// process ends with the run.
func offHeap(lo load.Options) load.Options {
	lo.OffHeap = processEnds
	return lo
}

// checksGCPercent is the GC percent analyze loads its nodes at, and
// checks those of a fleet at (one unit's checks run at
// unitChecksGCPercent): after each collection the heap may grow by half
// of what the collection left live before the next one starts. A 10,000-Service
// iptables node holds about 75 MiB once loaded, whatever the spelling of
// its export (the export's objects are trimmed to what the checks read
// as the node is assembled), and about 120 MiB at the checks' busiest,
// which is the run's peak; an nftables node holds 50 MiB growing to
// about 120 MiB. A GC percent sizes the heap's room from what is live, so
// the collector's work stays proportional to what is allocated, whatever
// the input: there is no memory limit for the live heap to reach, and so
// no run of collections back to back (the nftables node's checks, which
// allocate about 1 GB, take about 40 collections).
const checksGCPercent = 50

// unitChecksGCPercent is the GC percent of the checks of one unit, from
// the moment its node is loaded (see checksStart): the heap is then at
// its largest (the node, its views and the sweep of its packets), the
// checks allocate little more than they keep, and the room over what is
// live is what the peak adds to it. On a 10,000-Service iptables node a
// quarter instead of a half takes one or two collections more and about
// 10 MB off the peak.
const unitChecksGCPercent = 25

// droppedCollectMin is the size of a unit's node-level files (its dumps,
// see loaded.own) from which a fleet collects as soon as the unit is
// analysed and dropped. The heap's goal was set by the last collection,
// while the node was live and at its largest (its snapshot, views and
// sweep: a 10,000-Service iptables node of a 29 MB dump holds about 120
// MiB then), and without a collection the next node would load into the
// room the dropped one left plus the GC percent of it: four bundles of
// that node peaked at 400-440 MB, against 370-385 MB collecting after
// each, for about 0.05 CPU-s more per node (the collection marks what the
// next node loaded so far and what the fleet keeps). Under this size a
// node's share of the heap is too small for a collection to pay: a fleet
// of small nodes is paced by its room (see fleetRoom).
var droppedCollectMin int64 = 16 << 20 // tests lower it

// collectAside starts a collection in the background (tests count them).
var collectAside = func() { go runtime.GC() }

// collectDropped collects, in the background, once a fleet's unit whose
// node-level files are own bytes is analysed and dropped, when that is
// droppedCollectMin or more and the run paces its heap (not with GOGC or
// GOMEMLIMIT set in the environment, which say how the collector runs).
func collectDropped(own int64) {
	if own >= droppedCollectMin && activePacer.Load() != nil {
		collectAside()
	}
}

// activePacer is the pacer collectLoaded started, until its restore.
var activePacer atomic.Pointer[floorPacer]

// checksStart is called once a node is loaded, before its views and
// checks: the pacer of one unit's analysis (one with a floor) then keeps
// unitChecksGCPercent as its base; a fleet's pacer, or none, is left as
// it is.
func checksStart() {
	if p := activePacer.Load(); p != nil && p.floor > 0 {
		p.setBase(unitChecksGCPercent)
	}
}

// collectLoaded is called before the first unit of the input is loaded:
// it collects what the command allocated so far and sets the GC percent
// of the loading and the checks; the function it returns puts the GC
// percent back. With floor above zero the heap may also grow to floor
// bytes before a collection, whatever is live, and with room above zero
// to room bytes over what the last collection left live (see
// floorPacer). With GOGC
// or GOMEMLIMIT set in the environment it does neither: the collector
// runs as they say, as for any Go program. analyze sets no memory limit.
func collectLoaded(floor, room int64) (restore func()) {
	return collectLoadedAt(floor, room, checksGCPercent)
}

// collectLoadedAt is [collectLoaded] at a GC percent of base.
func collectLoadedAt(floor, room int64, base int) (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	runtime.GC()
	before := debug.SetGCPercent(base)
	p := startFloorPacer(floor, room, base)
	activePacer.Store(p)
	return func() {
		activePacer.CompareAndSwap(p, nil)
		p.stop()
		debug.SetGCPercent(before)
	}
}

// A floorPacer gives the heap a goal of at least floor bytes: after each
// collection it raises the GC percent above its base (checksGCPercent for
// analyze) as far as the floor asks. The room is never less than at the
// base, so the
// collections never come back to back as under a memory limit; it is
// larger only while what is live is under two thirds of the floor, early
// in the loading, when collections find little to free and the heap is
// well under its peak. analyze of one unit sets the floor to the unit's
// size: a 10,000-Service node's heap peaks at about twice its input, at
// its checks' busiest. With the dump's text out of the heap
// (load.Options.OffHeap) the loading's room shrank and its collections
// came more often (12 to 15 instead of 9 to 10, 3 to 7% more CPU); with
// the floor they are 6 to 8. trace, which runs at the GC percent of the
// environment (100 by default), has a floor of its inputs' size too.
// analyze of a fleet sets no floor but a room (see fleetRoom): the goal
// is then what is live plus the room, which matters while half of what
// is live is less than the room, for a fleet of small nodes. A fleet has
// no floor: the GC percent a floor asks for while little is live is high
// (up to floor/4 MiB times 100), and until the finalizer that follows
// the next collection lowers it, it applies to whatever that collection
// found live, which in a fleet of large nodes with loose files can be
// much more (one run of BenchmarkFleetLoose10k in ten with a floor of
// the units in flight peaked at 907 MB of heap instead of 375).
type floorPacer struct {
	floor uint64
	// room, when not zero, raises the floor to what the last collection
	// left live and room bytes more.
	room    uint64
	base    int
	mu      sync.Mutex
	stopped bool
	// samples are the live heap and the stacks and globals, which
	// the GC percent applies to as well.
	samples [3]metrics.Sample
}

// gcSentinel is an object whose finalizer tells a pacer that a collection
// ended; it holds a pointer so that it is not one of the tiny objects
// finalizers may never run for.
type gcSentinel struct {
	_ *int
	_ [2]uintptr
}

// startFloorPacer sets the GC percent for a heap goal of floor bytes at
// least, and of room bytes over what is live at least (none when both are
// zero or less), and never under base, again after every collection until
// stop.
func startFloorPacer(floor, room int64, base int) *floorPacer {
	p := &floorPacer{floor: uint64(max(floor, 0)), room: uint64(max(room, 0)), base: base}
	p.samples[0].Name = "/gc/heap/live:bytes"
	p.samples[1].Name = "/gc/scan/stack:bytes"
	p.samples[2].Name = "/gc/scan/globals:bytes"
	if p.floor == 0 && p.room == 0 {
		p.stopped = true
		return p
	}
	p.collected()
	return p
}

// collected sets the GC percent from what the last collection left live
// and waits for the next collection.
func (p *floorPacer) collected() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.pace()
	runtime.SetFinalizer(&gcSentinel{}, func(*gcSentinel) { p.collected() })
}

// pace sets the GC percent from what the last collection left live; p.mu
// is held.
func (p *floorPacer) pace() {
	metrics.Read(p.samples[:])
	live, roots := p.samples[0].Value.Uint64(), p.samples[1].Value.Uint64()+p.samples[2].Value.Uint64()
	debug.SetGCPercent(floorGCPercent(live, roots, p.floorAt(live), p.base))
}

// setBase makes base the GC percent the pacer never goes under, from
// now on, not from the next collection.
func (p *floorPacer) setBase(base int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.base = base
	if !p.stopped {
		p.pace()
	}
}

// floorAt returns the floor of the heap's goal once a collection left
// live bytes: the floor, or live and the room when that is more.
func (p *floorPacer) floorAt(live uint64) uint64 {
	if p.room == 0 {
		return p.floor
	}
	return max(p.floor, live+p.room)
}

// floorGCPercent is the GC percent that gives a heap of live bytes, with
// roots bytes of stacks and globals, a goal of floor bytes, and never
// less than base: the room the percent gives is a share of the live heap
// and the roots together, and the runtime's least heap goal, 4 MiB at a
// GC percent of 100, grows with the percent.
func floorGCPercent(live, roots, floor uint64, base int) int {
	const leastGoal = 4 << 20
	scanned := max(live+roots, 1)
	if floor <= live+scanned*uint64(base)/100 {
		return base
	}
	return max(base, int(min((floor-live)*100/scanned, floor*100/leastGoal)))
}

// heapFloor gives the heap of a command that loads the files at paths a
// goal of at least their size (see floorPacer), at the GC percent it has;
// the function it returns ends it. With GOGC or GOMEMLIMIT set in the
// environment it does nothing.
func heapFloor(paths []string) (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	base := debug.SetGCPercent(-1)
	debug.SetGCPercent(base)
	if base < 0 {
		return func() {}
	}
	p := startFloorPacer(inputSize(paths), 0, base)
	return func() {
		p.stop()
		debug.SetGCPercent(base)
	}
}

// stop ends the pacing: the GC percent is the caller's again.
func (p *floorPacer) stop() {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
}

// inputSize returns the bytes of the files at paths, the regular files
// below a directory included (hidden ones aside, as the loader reads
// them), a gzip file counted as what it decompresses to (see
// gunzippedSize), as the floor of the heap's goal: a path that cannot be
// read counts nothing (the loader says what is wrong).
func inputSize(paths []string) int64 {
	var n int64
	for _, p := range paths {
		load.WalkFiles(p, func(q string, info fs.FileInfo) {
			n += max(info.Size(), gunzippedSize(q, info.Size()))
		})
	}
	return n
}

// gunzippedSize returns the size the gzip file at p, of size bytes, says
// its last member decompresses to (modulo 4 GiB: the whole file's for a
// bundle archive, of one member), or 0 when p is not a gzip file.
func gunzippedSize(p string, size int64) int64 {
	const header, trailer = 10, 8
	if size < header+trailer {
		return 0
	}
	f, err := os.Open(p)
	if err != nil {
		return 0
	}
	defer f.Close()
	var magic [2]byte
	var isize [4]byte
	if _, err := f.ReadAt(magic[:], 0); err != nil || magic != [2]byte{0x1f, 0x8b} {
		return 0
	}
	if _, err := f.ReadAt(isize[:], size-4); err != nil {
		return 0
	}
	return int64(binary.LittleEndian.Uint32(isize[:]))
}
