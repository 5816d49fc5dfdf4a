package cmd

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// memoryLimit returns the soft memory limit without changing it.
func memoryLimit() int64 { return debug.SetMemoryLimit(-1) }

// gcPercent returns the GC percent without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// keepGCSettings returns the memory limit and the GC percent, and puts
// them back when the test ends.
func keepGCSettings(t *testing.T) (limit int64, percent int) {
	limit, percent = memoryLimit(), gcPercent()
	t.Cleanup(func() {
		debug.SetMemoryLimit(limit)
		debug.SetGCPercent(percent)
	})
	return limit, percent
}

func TestMemoryBudget(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	t.Setenv("GOGC", "")
	before, gcBefore := keepGCSettings(t)
	for _, tc := range []struct {
		name        string
		input, live int64
		want        int64
	}{
		{"small input", 1 << 20, 0, minBudget},
		{"large input", 100 << 20, 0, 250 << 20},
		{"large heap", 100 << 20, 200 << 20, 350 << 20},
		{"heap below the input's budget", 100 << 20, 100 << 20, 250 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newMemoryBudget()
			b.sized(tc.input)
			b.mu.Lock()
			b.least = int64(budgetPerLive * float64(tc.live))
			b.applyLocked()
			b.mu.Unlock()
			if got := memoryLimit(); got != tc.want {
				t.Errorf("limit %d MiB, want %d MiB", got>>20, tc.want>>20)
			}
			if got := gcPercent(); got != -1 {
				t.Errorf("GC percent %d during the analysis, want -1 (off)", got)
			}
			b.done()
			if got := memoryLimit(); got != before {
				t.Errorf("limit %d after the analysis, want %d as before", got, before)
			}
			if got := gcPercent(); got != gcBefore {
				t.Errorf("GC percent %d after the analysis, want %d as before", got, gcBefore)
			}
		})
	}
}

// TestMemoryBudgetEnvironment checks that a limit or a GC percent the
// user set wins: GOMEMLIMIT leaves both alone, GOGC the GC percent.
func TestMemoryBudgetEnvironment(t *testing.T) {
	before, gcBefore := keepGCSettings(t)
	for _, tc := range []struct {
		gomemlimit, gogc string
		limitSet, gcOff  bool
	}{
		{"1GiB", "", false, false},
		{"", "100", true, false},
		{"", "", true, true},
	} {
		t.Setenv("GOMEMLIMIT", tc.gomemlimit)
		t.Setenv("GOGC", tc.gogc)
		b := newMemoryBudget()
		b.sized(100 << 20)
		b.loaded()
		if got := memoryLimit() != before; got != tc.limitSet {
			t.Errorf("GOMEMLIMIT=%q GOGC=%q: limit set %v, want %v", tc.gomemlimit, tc.gogc, got, tc.limitSet)
		}
		if got := gcPercent() == -1; got != tc.gcOff {
			t.Errorf("GOMEMLIMIT=%q GOGC=%q: GC percent off %v, want %v", tc.gomemlimit, tc.gogc, got, tc.gcOff)
		}
		b.done()
		if memoryLimit() != before || gcPercent() != gcBefore {
			t.Errorf("GOMEMLIMIT=%q GOGC=%q: limit or GC percent not restored", tc.gomemlimit, tc.gogc)
		}
	}
}

// TestAnalyzeRestoresMemoryLimit runs analyze and checks that the limit
// it set for the analysis is gone afterwards.
func TestAnalyzeRestoresMemoryLimit(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	t.Setenv("GOGC", "")
	before, gcBefore := keepGCSettings(t)
	f, _ := testFactory()
	if code := Run(f, []string{"analyze", testdata(t, "bundles", "iptables-mini"), "-o", "json"}); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if got := memoryLimit(); got != before {
		t.Errorf("limit %d after analyze, want %d as before", got, before)
	}
	if got := gcPercent(); got != gcBefore {
		t.Errorf("GC percent %d after analyze, want %d as before", got, gcBefore)
	}
}

// TestMemoryBudgetGivesWay checks the count of collections that leave
// little to spare: the budget gives way after thrashCollections of them,
// whatever collections with room to spare came between, and the count
// starts again.
func TestMemoryBudgetGivesWay(t *testing.T) {
	const live = 100 << 20
	tight, roomy := uint64(live+live/20), uint64(2*live)
	b := &memoryBudget{}
	for i := 1; i < thrashCollections; i++ {
		if b.observe(live, tight) {
			t.Fatalf("gave way after %d tight collections, want %d", i, thrashCollections)
		}
		if b.observe(live, roomy) {
			t.Fatal("gave way after a collection with room to spare")
		}
	}
	if !b.observe(live, tight) {
		t.Fatalf("did not give way after %d tight collections", thrashCollections)
	}
	for i := 1; i < thrashCollections; i++ {
		if b.observe(live, tight) {
			t.Fatalf("gave way again after %d tight collections, want %d", i, thrashCollections)
		}
	}
	// While the input is loaded, fewer are enough.
	b = &memoryBudget{loading: true}
	for i := 1; i < thrashWhileLoading; i++ {
		if b.observe(live, tight) {
			t.Fatalf("gave way after %d tight collections while loading, want %d", i, thrashWhileLoading)
		}
	}
	if !b.observe(live, tight) {
		t.Fatalf("did not give way after %d tight collections while loading", thrashWhileLoading)
	}
}

// TestMemoryBudgetWatches checks that the budget sees the collections
// while it is in force, and no longer once the analysis is over.
func TestMemoryBudgetWatches(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	t.Setenv("GOGC", "")
	keepGCSettings(t)
	b := newMemoryBudget()
	b.sized(1 << 20)
	watched := func() int {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.watched
	}
	deadline := time.Now().Add(10 * time.Second)
	for watched() < 3 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if n := watched(); n < 3 {
		t.Fatalf("%d collections seen, want 3 or more", n)
	}
	b.done()
	n := watched()
	for range 3 {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if m := watched(); m != n {
		t.Errorf("%d collections seen after the analysis, want none", m-n)
	}
}
