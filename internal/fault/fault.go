// Package fault marks failures of proxyscan itself, as opposed to
// problems with its inputs: a panic, recovered in whichever goroutine it
// happens, and an error no input can cause. The commands exit with code 3
// on either and ask for a report.
//
// The worker pools run their goroutines in a [Group], which recovers a
// worker's panic and returns it from Wait; the pool's caller returns it as
// an error, or re-raises it (panic(err)) in its own goroutine when it has
// no error to return, and the command recovers it there.
package fault

import (
	"errors"
	"fmt"
	"runtime/debug"

	"golang.org/x/sync/errgroup"
)

// Error is a failure of proxyscan itself.
type Error struct {
	// Err is the error; nil for a panic.
	Err error
	// Value is what the recovered panic was called with, Stack the stack
	// of the goroutine that panicked.
	Value any
	Stack []byte
}

// Error implements the error interface: the error, or "panic: " and the
// panic's value.
func (e *Error) Error() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return fmt.Sprintf("panic: %v", e.Value)
}

// Unwrap returns the error, or the panic's value when it is an error.
func (e *Error) Unwrap() error {
	if e.Err != nil {
		return e.Err
	}
	err, _ := e.Value.(error)
	return err
}

// Errorf returns an *Error for a failure no input can cause, such as the
// reference proxier's own output failing to parse. %w wraps as in
// fmt.Errorf; whatever it wraps, the error is proxyscan's.
func Errorf(format string, args ...any) error {
	return &Error{Err: fmt.Errorf(format, args...)}
}

// Is reports whether err is, or wraps, an *Error.
func Is(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// Recovered returns the *Error of a value recover returned: the value
// itself when it is one (a worker's panic re-raised by the pool's caller
// keeps the worker's stack), else the value with the stack of the current
// goroutine, which recovers while its stack still holds the panic. It
// returns nil for nil.
func Recovered(v any) *Error {
	switch e := v.(type) {
	case nil:
		return nil
	case *Error:
		return e
	}
	return &Error{Value: v, Stack: debug.Stack()}
}

// Catch, deferred, recovers a panic of the function that defers it into
// *errp, as an *Error.
func Catch(errp *error) {
	if v := recover(); v != nil {
		*errp = Recovered(v)
	}
}

// TestHook, when tests set it, is called with the pool's name by every
// goroutine a [Group] starts, before its function: a test makes a worker
// panic with it. It is nil otherwise, and must not be changed while a
// pool runs.
var TestHook func(pool string)

// A Group is an errgroup.Group whose goroutines recover their panics:
// Wait returns the first error of its goroutines, a panic as an *Error.
// The zero value, with a name, is ready to use.
type Group struct {
	// Name names the pool (for [TestHook]).
	Name string
	g    errgroup.Group
}

// Go runs f in a new goroutine of the group.
func (g *Group) Go(f func() error) {
	g.g.Go(func() (err error) {
		defer Catch(&err)
		if TestHook != nil {
			TestHook(g.Name)
		}
		return f()
	})
}

// GoDraining runs f, a worker that takes jobs from ch, in a new goroutine
// of g. When f ends, by a panic or otherwise, the goroutine takes what is
// left in ch until it is closed, so that the sender is not left waiting
// for a worker that a panic ended.
func GoDraining[T any](g *Group, ch <-chan T, f func() error) {
	g.g.Go(func() (err error) {
		defer Catch(&err)
		defer func() {
			for range ch {
			}
		}()
		if TestHook != nil {
			TestHook(g.Name)
		}
		return f()
	})
}

// SetLimit limits the goroutines running at once, as errgroup's does.
func (g *Group) SetLimit(n int) { g.g.SetLimit(n) }

// Wait waits for the goroutines and returns the first error, or panic, of
// theirs.
func (g *Group) Wait() error { return g.g.Wait() }
