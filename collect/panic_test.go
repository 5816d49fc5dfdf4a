package collect

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/internal/fault"
)

// TestSourcePanic checks that a panic while a worker reads a source ends
// the collection with a *fault.Error carrying the panic, once the other
// sources are read, and leaves no bundle behind.
func TestSourcePanic(t *testing.T) {
	root := fakeNode(t, "", "")
	dir := filepath.Join(t.TempDir(), "b")
	var read []string
	sources := []Source{
		{Name: "boom", File: "node/boom.txt", Method: "file", Read: func(ctx context.Context, e *env, s *Source, w *Writer) {
			panic("reading boom")
		}},
		{Name: "fine", File: "node/fine.txt", Method: "file", Read: func(ctx context.Context, e *env, s *Source, w *Writer) {
			read = append(read, s.Name)
			_, _ = w.Write([]byte("fine\n"))
		}},
	}
	res, err := Run(context.Background(), Options{Root: root, Dir: dir, Sources: sources, Parallel: 1})
	var fe *fault.Error
	if res != nil || !fault.Is(err) || !strings.Contains(err.Error(), "panic: reading boom") {
		t.Fatalf("Run() = %v, %v; want the panic as a *fault.Error", res, err)
	}
	if errors.As(err, &fe); !strings.Contains(string(fe.Stack), "panic_test.go") {
		t.Errorf("the stack does not show the panic:\n%s", fe.Stack)
	}
	if len(read) != 1 {
		t.Errorf("the other source was not read: %v", read)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a bundle was left in %s: %v", dir, err)
	}
}
