package cmd

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// Memory budget of an analysis. The checks of a large node hold the dumps,
// the model and the views at once, and the garbage collector's default
// pacing lets the heap reach twice what is live. analyze gives itself a
// budget proportional to its input instead, as a soft memory limit
// (runtime/debug.SetMemoryLimit), and turns the GC percent off: the
// collector runs only when the heap nears the budget, which on a large
// node is a few times per run. GOMEMLIMIT, when set, wins (and the GC
// percent is left alone); so does GOGC.
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

// memoryBudget sets the soft memory limit and the GC percent of one
// analysis, and puts the previous ones back when it is over.
type memoryBudget struct {
	input  int64
	manage bool  // GOMEMLIMIT is not set: the budget is the limit
	limit  int64 // the limit before
	gc     int   // the GC percent before, noGC when untouched
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
// are parsed.
func (b *memoryBudget) sized(n int64) {
	b.input = n
	b.apply(0)
	if b.manage && b.gc == noGC && os.Getenv("GOGC") == "" {
		b.gc = debug.SetGCPercent(-1)
	}
}

// loaded collects the garbage the loading left and raises the budget, if
// need be, to what the loaded input holds.
func (b *memoryBudget) loaded() {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	live := int64(0)
	if s[0].Value.Kind() == metrics.KindUint64 {
		live = int64(min(s[0].Value.Uint64(), math.MaxInt64/4))
	}
	b.apply(int64(budgetPerLive * float64(live)))
}

func (b *memoryBudget) apply(least int64) {
	if b.manage {
		debug.SetMemoryLimit(max(minBudget, int64(budgetPerByte*float64(b.input)), least))
	}
}

// done puts the GC percent and the limit back as they were.
func (b *memoryBudget) done() {
	if b.gc != noGC {
		debug.SetGCPercent(b.gc)
		b.gc = noGC
	}
	if b.manage {
		debug.SetMemoryLimit(b.limit)
	}
}
