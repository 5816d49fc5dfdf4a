package fault

import (
	"errors"
	"strings"
	"testing"
)

func TestGroupRecoversAPanic(t *testing.T) {
	g := Group{Name: "test"}
	for i := range 4 {
		g.Go(func() error {
			if i == 2 {
				var m map[string]int
				//lint:ignore SA5000 the panic is what is tested
				m["x"] = 1 // a runtime error
			}
			return nil
		})
	}
	err := g.Wait()
	var fe *Error
	if !errors.As(err, &fe) {
		t.Fatalf("Wait() = %v, want an *Error", err)
	}
	if !strings.HasPrefix(fe.Error(), "panic: assignment to entry in nil map") {
		t.Errorf("message %q", fe.Error())
	}
	if !strings.Contains(string(fe.Stack), "fault_test.go") {
		t.Errorf("the stack does not show where the panic happened:\n%s", fe.Stack)
	}
	if Recovered(fe) != fe {
		t.Error("a re-raised *Error is not kept as it is")
	}
}

func TestGroupReturnsErrors(t *testing.T) {
	g := Group{Name: "test"}
	want := errors.New("no")
	g.Go(func() error { return want })
	if err := g.Wait(); err != want || Is(err) {
		t.Errorf("Wait() = %v, want the goroutine's error, not an *Error", err)
	}
}

func TestTestHook(t *testing.T) {
	TestHook = func(pool string) {
		if pool == "hooked" {
			panic("injected")
		}
	}
	defer func() { TestHook = nil }()
	other := Group{Name: "other"}
	other.Go(func() error { return nil })
	if err := other.Wait(); err != nil {
		t.Errorf("another pool: %v", err)
	}
	g := Group{Name: "hooked"}
	jobs := make(chan int)
	GoDraining(&g, jobs, func() error {
		for range jobs {
		}
		return nil
	})
	for i := range 3 {
		jobs <- i // the worker panicked: its drain takes them
	}
	close(jobs)
	if err := g.Wait(); !Is(err) || err.Error() != "panic: injected" {
		t.Errorf("Wait() = %v, want the injected panic", err)
	}
}

func TestErrorf(t *testing.T) {
	inner := errors.New("inner")
	err := Errorf("generating: %w", inner)
	if !Is(err) || !errors.Is(err, inner) || err.Error() != "generating: inner" {
		t.Errorf("Errorf = %v", err)
	}
}
