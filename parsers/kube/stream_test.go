package kube

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// sameParse fails unless ParseReader reading data with a window of the
// given size gives what ParseWith gives.
func sameParse(t *testing.T, name string, data []byte, window int) {
	t.Helper()
	defer func(w int) { jsonWindow = w }(jsonWindow)
	jsonWindow = window
	want, werr := ParseWith(name, data, Options{})
	got, gerr := ParseReader(name, iotest.HalfReader(bytes.NewReader(data)), Options{})
	if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
		t.Fatalf("%s (window %d): ParseReader error %v, ParseWith error %v", name, window, gerr, werr)
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
			if isJSON(data) {
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
	defer func(w int) { jsonWindow = w }(jsonWindow)
	jsonWindow = 16
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
