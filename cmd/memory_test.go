package cmd

import (
	"runtime/debug"
	"testing"
)

// memoryLimit returns the soft memory limit without changing it.
func memoryLimit() int64 { return debug.SetMemoryLimit(-1) }

// gcPercent returns the GC percent without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

func TestMemoryBudget(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	t.Setenv("GOGC", "")
	before, gcBefore := memoryLimit(), gcPercent()
	defer debug.SetMemoryLimit(before)
	defer debug.SetGCPercent(gcBefore)
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
			b.apply(int64(budgetPerLive * float64(tc.live)))
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
	before, gcBefore := memoryLimit(), gcPercent()
	defer debug.SetMemoryLimit(before)
	defer debug.SetGCPercent(gcBefore)
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
	before, gcBefore := memoryLimit(), gcPercent()
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
