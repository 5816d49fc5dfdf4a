// Package ahead computes values in the background, ahead of the code that
// asks for them: a caller starts the computation of a key's value as soon
// as its input is ready, and whoever needs the value later takes it,
// waiting for its end, instead of computing it then.
package ahead

import "sync"

// Results holds the computations started, by key, until they are taken or
// forgotten. The zero value is ready to use; a Results must not be copied.
type Results[K comparable, V any] struct {
	m sync.Map // K → *result[V]
}

type result[V any] struct {
	done chan struct{}
	ok   bool // ended without a panic
	v    V
}

// Start computes f in the background as the value of k, unless one was
// already started for k and is not taken yet. A panic in f is not raised
// there: Take then reports no value, so that the caller computes it
// itself, where the panic is raised again.
func (r *Results[K, V]) Start(k K, f func() V) {
	res := &result[V]{done: make(chan struct{})}
	if _, loaded := r.m.LoadOrStore(k, res); loaded {
		return
	}
	go func() {
		defer close(res.done)
		defer func() {
			if recover() != nil {
				res.ok = false
			}
		}()
		res.v = f()
		res.ok = true
	}()
}

// Take returns the value started for k, waiting for its end, and forgets
// it; ok is false when none was started or its computation panicked.
func (r *Results[K, V]) Take(k K) (v V, ok bool) {
	x, found := r.m.LoadAndDelete(k)
	if !found {
		return v, false
	}
	res := x.(*result[V])
	<-res.done
	return res.v, res.ok
}

// Forget drops what was started for k and not taken, so that it does not
// keep k alive; a computation still running ends unread.
func (r *Results[K, V]) Forget(k K) {
	r.m.Delete(k)
}

// Wait waits for the end of the computation held for k, if any, without
// taking it; it reports whether one is held.
func (r *Results[K, V]) Wait(k K) bool {
	x, found := r.m.Load(k)
	if found {
		<-x.(*result[V]).done
	}
	return found
}
