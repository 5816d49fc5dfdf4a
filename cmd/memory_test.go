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

// keepGCSettings sets a GC percent of its own, so that a change and a
// restore cannot be mistaken for leaving it alone, and puts the memory
// limit and the GC percent back when the test ends.
func keepGCSettings(t *testing.T) (limit int64, percent int) {
	const mark = 137
	limit, before := memoryLimit(), debug.SetGCPercent(mark)
	t.Cleanup(func() {
		debug.SetMemoryLimit(limit)
		debug.SetGCPercent(before)
	})
	return limit, mark
}

// TestCollectLoaded checks the settings of the checks: the GC percent
// is checksGCPercent until the analysis is over, and no memory limit is
// set.
func TestCollectLoaded(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	t.Setenv("GOGC", "")
	limit, percent := keepGCSettings(t)
	restore := collectLoaded()
	if got := gcPercent(); got != checksGCPercent {
		t.Errorf("GC percent %d during the checks, want %d", got, checksGCPercent)
	}
	if got := memoryLimit(); got != limit {
		t.Errorf("memory limit %d during the checks, want %d as before", got, limit)
	}
	restore()
	if got := gcPercent(); got != percent {
		t.Errorf("GC percent %d after the analysis, want %d as before", got, percent)
	}
}

// TestCollectLoadedEnvironment checks that GOGC or GOMEMLIMIT in the
// environment wins: the GC percent and the limit are left as they are.
func TestCollectLoadedEnvironment(t *testing.T) {
	limit, percent := keepGCSettings(t)
	for _, tc := range []struct{ gomemlimit, gogc string }{
		{"", "200"},
		{"1GiB", ""},
		{"1GiB", "off"},
	} {
		t.Setenv("GOMEMLIMIT", tc.gomemlimit)
		t.Setenv("GOGC", tc.gogc)
		restore := collectLoaded()
		if got := gcPercent(); got != percent {
			t.Errorf("GOMEMLIMIT=%q GOGC=%q: GC percent %d during the checks, want %d as set", tc.gomemlimit, tc.gogc, got, percent)
		}
		if got := memoryLimit(); got != limit {
			t.Errorf("GOMEMLIMIT=%q GOGC=%q: memory limit %d during the checks, want %d as set", tc.gomemlimit, tc.gogc, got, limit)
		}
		restore()
		if gcPercent() != percent || memoryLimit() != limit {
			t.Errorf("GOMEMLIMIT=%q GOGC=%q: GC percent or memory limit changed after the analysis", tc.gomemlimit, tc.gogc)
		}
	}
}

// TestAnalyzeRestoresGCSettings runs analyze and checks that the GC
// percent it set for the checks is gone afterwards and that it left the
// memory limit alone.
func TestAnalyzeRestoresGCSettings(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	t.Setenv("GOGC", "")
	limit, percent := keepGCSettings(t)
	f, _ := testFactory()
	if code := Run(f, []string{"analyze", testdata(t, "bundles", "iptables-mini"), "-o", "json"}); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if got := memoryLimit(); got != limit {
		t.Errorf("memory limit %d after analyze, want %d as before", got, limit)
	}
	if got := gcPercent(); got != percent {
		t.Errorf("GC percent %d after analyze, want %d as before", got, percent)
	}
}
