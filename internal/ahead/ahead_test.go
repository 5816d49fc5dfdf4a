package ahead

import (
	"sync/atomic"
	"testing"
)

// TestResults: a value started is taken once, after its end; a second
// start of a key not taken yet does not compute again; a panic gives no
// value; Wait finds what is held; a key forgotten or never started
// gives none.
func TestResults(t *testing.T) {
	var r Results[string, int]
	var runs atomic.Int32
	release := make(chan struct{})
	r.Start("a", func() int { runs.Add(1); <-release; return 7 })
	r.Start("a", func() int { runs.Add(1); return 8 })
	close(release)
	if v, ok := r.Take("a"); !ok || v != 7 {
		t.Errorf("Take(a) = %d, %v; want 7, true", v, ok)
	}
	if _, ok := r.Take("a"); ok {
		t.Error("a value was taken twice")
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("%d computations of a, want 1", n)
	}
	r.Start("p", func() int { panic("boom") })
	if _, ok := r.Take("p"); ok {
		t.Error("a computation that panicked gave a value")
	}
	r.Start("f", func() int { return 1 })
	if !r.Wait("f") {
		t.Error("Wait found no computation of f")
	}
	r.Forget("f")
	if r.Wait("f") {
		t.Error("Wait found f forgotten")
	}
	if _, ok := r.Take("f"); ok {
		t.Error("a forgotten value was taken")
	}
	if _, ok := r.Take("never"); ok {
		t.Error("a value never started was taken")
	}
}
