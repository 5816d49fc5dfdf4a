package kube

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"unsafe"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// sameParse fails unless ParseReader reading data with a window of the
// given size gives what ParseWith gives.
func sameParse(t *testing.T, name string, data []byte, window int) {
	t.Helper()
	defer func(w int) { readWindow = w }(readWindow)
	readWindow = window
	want, werr := ParseWith(name, data, Options{})
	got, gerr := ParseReader(name, iotest.HalfReader(bytes.NewReader(data)), Options{})
	if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
		t.Fatalf("%s (window %d): ParseReader error %v, ParseWith error %v (input %q)", name, window, gerr, werr, data)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s (window %d): ParseReader and ParseWith read different objects", name, window)
	}
}

// TestParseReaderMatchesParse checks that streaming an export through the
// splitter, with windows small enough that every object and string is cut
// somewhere, reads the same objects and reports the same errors, at the
// same lines, as splitting it whole.
func TestParseReaderMatchesParse(t *testing.T) {
	for name, data := range exportInputs(t) {
		for _, window := range []int{1, 2, 5, 64, 1 << 20} {
			sameParse(t, name, data, window)
			// Cut short, the export gives errors of truncated JSON.
			if IsJSON(data) {
				sameParse(t, name, data[:len(data)*2/3], window)
			}
		}
	}
	for _, in := range []string{
		"", "  \n ", "\ufeff[]", "\ufeff{\"kind\":\"Service\",\"metadata\":{\"name\":\"a\"}}",
		`{"kind":"List","items":[{"kind":"Service","metadata":{"name":"a\"}{"}}],"metadata":{"x":[1,{"y":"]"}]}}`,
		`[{"kind":"Service"},{"kind":"Pod","metadata":{"name":"p"}}]`,
		`{"kind":"Service"}` + "\n" + `{"kind":"ConfigMap","data":{"a":"b"}}`,
		`{"kind":"List","items":[{"kind":"Service","spec":{"ports":[{"port":"x\\`,
		`{"kind":"List","items":[{"kind":"Service","spec":{"ports":[{"port":80}`,
		`{"kind":"List","items":[`, `{"kind":"List","items":[{"kind":"Service"}], "metadata": {`,
		`{"kind": 5}`, `{"kind" "Service"}`, `[1]`, `{"kind":"Service"} x`, `{"kind":"KubeProxyConfiguration","mode":"ipvs"}`,
	} {
		for _, window := range []int{1, 3, 1 << 20} {
			sameParse(t, "export.json", []byte(in), window)
		}
	}
}

// TestParseReaderReadError checks that an error reading the export is
// returned as it is.
func TestParseReaderReadError(t *testing.T) {
	defer func(w int) { readWindow = w }(readWindow)
	readWindow = 16
	boom := errors.New("boom")
	r := io.MultiReader(bytes.NewReader([]byte(`{"kind":"List","items":[{"kind":"Service"},`)), iotest.ErrReader(boom))
	if _, err := ParseReader("export.json", r, Options{}); !errors.Is(err, boom) {
		t.Fatalf("ParseReader: %v, want %v", err, boom)
	}
	if _, err := ParseReader("export.yaml", iotest.ErrReader(boom), Options{}); !errors.Is(err, boom) {
		t.Fatalf("ParseReader: %v, want %v", err, boom)
	}
}

// FuzzParseReader checks that streaming an export gives what splitting
// it whole gives.
func FuzzParseReader(f *testing.F) {
	for _, file := range parsetest.Files(f, "parsers/kube/*.txtar") {
		a, err := txtar.ParseFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, s := range a.Files {
			if strings.HasPrefix(s.Name, "input") {
				f.Add(s.Data, uint8(6))
			}
		}
	}
	f.Add([]byte(`{"kind":"List","items":[{"kind":"Service","metadata":{"name":"a\"}{"}}],"metadata":{"x":[1,{"y":"]"}]}}`), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, window uint8) {
		sameParse(t, "fuzz.json", data, int(window)+1)
	})
}

// listReader generates a YAML List of n Services as it is read, so that
// the export is never in memory as a whole.
type listReader struct {
	n, i int
	buf  []byte
}

func (r *listReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		switch {
		case r.i < 0:
			return 0, io.EOF
		case r.i == 0:
			r.buf = []byte("apiVersion: v1\nitems:\n")
		case r.i <= r.n:
			r.buf = fmt.Appendf(nil, "- apiVersion: v1\n  kind: Service\n  metadata:\n    name: svc-%d\n    namespace: shop\n  spec:\n    clusterIP: 10.96.%d.%d\n    ports:\n    - port: 80\n      protocol: TCP\n", r.i, r.i/250, r.i%250+1)
		default:
			r.buf = []byte("kind: List\nmetadata:\n  resourceVersion: \"\"\n")
			r.i = -2
		}
		r.i++
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// TestParseReaderStreamsYAML checks that a YAML List is split as it is
// read: however long the List, the buffers holding its text stay the size
// of the read window, and every item is read.
func TestParseReaderStreamsYAML(t *testing.T) {
	defer func(w int) { readWindow = w }(readWindow)
	readWindow = 4096
	const n = 20000 // about 3.5 MB of YAML
	head, rest, err := readHead(&listReader{n: n})
	if err != nil {
		t.Fatal(err)
	}
	items, largest := 0, 0
	err = splitYAMLFrom("export.yaml", head, rest, func(c chunk) {
		items++
		if c.blk == nil {
			t.Fatal("an item of a streamed export holds no block")
		}
		largest = max(largest, cap(c.blk.buf))
		c.blk.release()
	})
	if err != nil {
		t.Fatal(err)
	}
	if items != n {
		t.Errorf("%d items split, want %d", items, n)
	}
	if largest > 2*readWindow {
		t.Errorf("a buffer of %d bytes held the export, want at most %d", largest, 2*readWindow)
	}
	// Decoded, the items let go of their blocks, whose buffers the
	// scanner reads the rest into: a handful of buffers hold the whole
	// export.
	head, rest, err = readHead(&listReader{n: n})
	if err != nil {
		t.Fatal(err)
	}
	bufs := map[*byte]bool{}
	_, err = parse("export.yaml", func(emit func(chunk)) error {
		return splitYAMLFrom("export.yaml", head, rest, func(c chunk) {
			bufs[unsafe.SliceData(c.blk.buf)] = true
			emit(c)
		})
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(bufs) > 8 {
		t.Errorf("%d buffers held the export, want at most 8: blocks are not reused", len(bufs))
	}
	o, err := ParseReader("export.yaml", &listReader{n: 500}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Services) != 500 || o.Services[499].Name != "svc-500" || o.Services[499].Pos.Line != 1+1+499*10+1 {
		t.Errorf("read %d Services, the last %s at line %d", len(o.Services), o.Services[len(o.Services)-1].Name, o.Services[len(o.Services)-1].Pos.Line)
	}
}
