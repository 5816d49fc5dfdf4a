package cmd

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Memory budget of an analysis. The checks of a large node hold the dumps,
// the model and the views at once, and the garbage collector's default
// pacing lets the heap reach twice what is live. analyze gives itself a
// budget proportional to its input instead, as a soft memory limit
// (runtime/debug.SetMemoryLimit), and turns the GC percent off: the
// collector runs only when the heap nears the budget, which on a large
// node is a few times per run. The budget gives way to an input that
// needs more (see thrashCollections). GOMEMLIMIT, when set, wins (and the
// GC percent is left alone); so does GOGC.
const (
	// budgetPerByte is the budget per byte of input.
	budgetPerByte = 2.5
	// budgetPerLive is the budget per byte of the heap the loaded input
	// holds, for inputs whose parsed form is unusually large for their
	// size: the views and traces of the checks add up to three quarters
	// of it again.
	budgetPerLive = 1.75
	// minBudget is the least budget.
	minBudget = 64 << 20
)

// thrashCollections is how many collections may leave less than a tenth
// of the live heap to spare before the budget gives way: an input whose
// parsed form and views are much larger than its text (an nftables
// ruleset) would otherwise keep the collector running back to back. A
// large iptables node nears the budget for four to eight collections,
// all of them after loading. Collections that leave little to spare while
// the input is still being loaded say that the budget is too small for
// it sooner: the checks will need more than the loaded input.
const (
	thrashCollections  = 12
	thrashWhileLoading = 4
)

// memoryBudget sets the soft memory limit and the GC percent of one
// analysis, and puts the previous ones back when it is over.
type memoryBudget struct {
	manage bool  // GOMEMLIMIT is not set: the budget is the limit
	limit  int64 // the limit before
	gc     int   // the GC percent before, noGC when untouched

	mu       sync.Mutex
	input    int64 // the size of the input
	least    int64 // what the budget was raised to (loaded heap, collections back to back)
	set      bool  // the budget is in force and watched
	loading  bool  // the input is being loaded
	finished bool
	tight    int // collections that left less than a tenth of the live heap to spare
	watched  int // collections seen
}

const noGC = math.MinInt

func newMemoryBudget() *memoryBudget {
	b := &memoryBudget{manage: os.Getenv("GOMEMLIMIT") == "", gc: noGC}
	if b.manage {
		b.limit = debug.SetMemoryLimit(-1)
	}
	return b
}

// sized sets the budget from the size of the input files, before they
// are parsed, and starts watching the collections.
func (b *memoryBudget) sized(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.manage || b.finished {
		return
	}
	b.input = n
	b.applyLocked()
	if b.gc == noGC && os.Getenv("GOGC") == "" {
		b.gc = debug.SetGCPercent(-1)
	}
	if !b.set {
		b.set, b.loading = true, true
		b.arm()
	}
}

// loaded collects the garbage the loading left and raises the budget, if
// need be, to what the loaded input holds.
func (b *memoryBudget) loaded() {
	runtime.GC()
	live, _ := heapLiveGoal()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.loading = false
	b.least = max(b.least, int64(budgetPerLive*float64(live)))
	b.applyLocked()
}

// budget returns the budget in bytes.
func (b *memoryBudget) budget() int64 {
	return max(minBudget, int64(budgetPerByte*float64(b.input)), b.least)
}

func (b *memoryBudget) applyLocked() {
	if b.manage && !b.finished {
		debug.SetMemoryLimit(b.budget())
	}
}

// gcSentinel is an object whose cleanup runs after the collection that
// finds it unreachable.
type gcSentinel struct{ _ *byte }

// arm makes the next collection call collected.
func (b *memoryBudget) arm() {
	runtime.AddCleanup(new(gcSentinel), (*memoryBudget).collected, b)
}

// collected runs after each collection while the budget is in force.
func (b *memoryBudget) collected() {
	live, goal := heapLiveGoal()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.finished {
		return
	}
	b.watched++
	if b.observe(live, goal) {
		// Twice the live heap to spare: the heap grows while the views
		// are built, and each time the budget gives way costs
		// thrashCollections collections.
		b.least = max(b.least, b.budget()+2*int64(min(live, math.MaxInt64/8)))
		b.applyLocked()
	}
	b.arm()
}

// observe counts a collection after which the heap could grow to goal with
// live bytes live, and reports whether the budget should give way.
func (b *memoryBudget) observe(live, goal uint64) bool {
	if goal >= live+live/10 {
		return false
	}
	n := thrashCollections
	if b.loading {
		n = thrashWhileLoading
	}
	if b.tight++; b.tight < n {
		return false
	}
	b.tight = 0
	return true
}

// heapLiveGoal returns the heap live after the last collection and the
// heap size at which the next one starts.
func heapLiveGoal() (live, goal uint64) {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		live = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		goal = s[1].Value.Uint64()
	}
	return live, goal
}

// done puts the GC percent and the limit back as they were.
func (b *memoryBudget) done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.finished = true
	if b.gc != noGC {
		debug.SetGCPercent(b.gc)
		b.gc = noGC
	}
	if b.manage {
		debug.SetMemoryLimit(b.limit)
	}
}
