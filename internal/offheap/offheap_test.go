package offheap

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
)

// heapAlloc returns the bytes of the Go heap's live objects after a
// collection.
func heapAlloc() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestMakeIsOffHeap checks that a buffer from Make is not on the Go heap:
// it does not count in its live bytes, and so not in the collector's heap
// goal.
func TestMakeIsOffHeap(t *testing.T) {
	const n = 64 << 20
	before, was := heapAlloc(), Mapped()
	b := Make(n)
	if got := Mapped() - was; got != n {
		t.Errorf("Mapped grew by %d bytes for a buffer of %d", got, n)
	}
	for i := 0; i < n; i += 4096 {
		b[i] = 1
	}
	after := heapAlloc()
	if after > before+n/8 {
		t.Errorf("the Go heap grew by %d bytes for a buffer of %d", after-before, n)
	}
	runtime.KeepAlive(b)
}

// errAfter is a reader that fails after its text.
type errAfter struct{ r io.Reader }

func (e *errAfter) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		err = errors.New("disk on fire")
	}
	return n, err
}

func TestReadFull(t *testing.T) {
	text := strings.Repeat("-A KUBE-SERVICES -j ACCEPT\n", 1000)
	for _, tc := range []struct {
		name    string
		r       io.Reader
		n       int64
		want    string
		read    int64
		wantErr string
	}{
		{name: "exact", r: strings.NewReader(text), n: int64(len(text)), want: text, read: int64(len(text))},
		{name: "short", r: strings.NewReader(text[:100]), n: int64(len(text)), read: 100},
		{name: "long", r: strings.NewReader(text + "x"), n: int64(len(text)), read: int64(len(text)) + 1},
		{name: "empty", r: strings.NewReader(""), n: 0, want: "", read: 0},
		{name: "failing", r: &errAfter{bytes.NewReader([]byte(text))}, n: int64(len(text)) + 5, read: int64(len(text)), wantErr: "disk on fire"},
		{name: "negative", r: strings.NewReader(text), n: -1, wantErr: "a buffer of -1 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			was := Mapped()
			b, read, err := ReadFull(tc.r, tc.n)
			if kept := Mapped() - was; kept != int64(len(b)) {
				t.Errorf("Mapped grew by %d bytes for a buffer of %d", kept, len(b))
			}
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if read != tc.read {
				t.Errorf("read %d, want %d", read, tc.read)
			}
			if tc.want == "" && tc.n != 0 {
				if b != nil {
					t.Errorf("a buffer of %d bytes, want none", len(b))
				}
				return
			}
			if string(b) != tc.want {
				t.Errorf("read %d bytes unlike the text", len(b))
			}
		})
	}
}
