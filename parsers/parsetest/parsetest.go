// Package parsetest holds the test helpers shared by the parser packages:
// txtar golden files under the repository's testdata/ with an -update flag,
// fuzz seeds taken from the same files, and JSON rendering for goldens.
//
// A golden case is a txtar archive: its comment says where the input came
// from, its "input" section (or several input sections) is what the parser
// reads, and the other sections are the expected outputs, rewritten by
// `go test ./... -update`.
package parsetest

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// Update is the -update flag: rewrite golden sections instead of comparing.
var Update = flag.Bool("update", false, "rewrite golden files with the current output")

// Root returns the repository root (the directory holding go.mod), found by
// walking up from the working directory.
func Root(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// Files returns the txtar files matching pattern, relative to the
// repository's testdata directory (e.g. "parsers/iptables/*.txtar").
func Files(tb testing.TB, pattern string) []string {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(Root(tb), "testdata", pattern))
	if err != nil {
		tb.Fatal(err)
	}
	if len(files) == 0 {
		tb.Fatalf("no golden files match testdata/%s", pattern)
	}
	sort.Strings(files)
	return files
}

// Section returns the named section of a, or nil.
func Section(a *txtar.Archive, name string) []byte {
	for _, f := range a.Files {
		if f.Name == name {
			return f.Data
		}
	}
	return nil
}

// Golden runs fn for every txtar archive matching pattern (see [Files]),
// each in a subtest named after the file. fn returns the sections it
// produced; each is compared with the archive's section of the same name,
// and with -update the archive is rewritten with the new sections (sections
// fn did not return are kept).
func Golden(t *testing.T, pattern string, fn func(t *testing.T, name string, a *txtar.Archive) map[string][]byte) {
	t.Helper()
	for _, file := range Files(t, pattern) {
		name := strings.TrimSuffix(filepath.Base(file), ".txtar")
		t.Run(name, func(t *testing.T) {
			a, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			got := fn(t, name, a)
			if t.Failed() && !*Update {
				return
			}
			rewrite := false
			for _, sec := range sortedKeys(got) {
				want := Section(a, sec)
				if bytes.Equal(want, got[sec]) {
					continue
				}
				if *Update {
					setSection(a, sec, got[sec])
					rewrite = true
					continue
				}
				t.Errorf("section %q differs from %s (run go test -update to accept):\n%s", sec, file, Diff(want, got[sec]))
			}
			if rewrite {
				if err := os.WriteFile(file, txtar.Format(a), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// Seeds adds every section named "input" (or starting with "input") of the
// archives matching pattern to the fuzz corpus of f.
func Seeds(f *testing.F, pattern string) {
	f.Helper()
	for _, file := range Files(f, pattern) {
		a, err := txtar.ParseFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, s := range a.Files {
			if strings.HasPrefix(s.Name, "input") {
				f.Add(s.Data)
			}
		}
	}
}

// ErrorText renders a parse error for a golden's want.error section: one
// line per error of a list (a parsers.ErrorList, or any error whose
// Unwrap returns several), else the error's text.
func ErrorText(err error) []byte {
	var b bytes.Buffer
	if l, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range l.Unwrap() {
			b.WriteString(e.Error() + "\n")
		}
		return b.Bytes()
	}
	return []byte(err.Error() + "\n")
}

// JSON renders v as indented JSON with a trailing newline, for goldens.
func JSON(tb testing.TB, v any) []byte {
	tb.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// GoldenFile compares got with the golden file at path or, with -update,
// writes got there (making its directory).
func GoldenFile(tb testing.TB, path string, got []byte) {
	tb.Helper()
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(want, got) {
		tb.Errorf("%s differs (run go test -update to accept):\n%s", path, Diff(want, got))
	}
}

// Diff returns a short line diff of want and got: the first differing line
// with a little context.
func Diff(want, got []byte) string {
	wl := strings.Split(string(want), "\n")
	gl := strings.Split(string(got), "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g || i >= len(wl) || i >= len(gl) {
			return "line " + strconv.Itoa(i+1) + ":\n  want: " + w + "\n  got:  " + g
		}
	}
	return "(equal)"
}

func setSection(a *txtar.Archive, name string, data []byte) {
	for i := range a.Files {
		if a.Files[i].Name == name {
			a.Files[i].Data = data
			return
		}
	}
	a.Files = append(a.Files, txtar.File{Name: name, Data: data})
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// A Codec is a parser with its formatter, for [RoundTrip].
type Codec[T any] struct {
	// Parse parses one input section.
	Parse func(name string, data []byte) (T, error)
	// Format prints a parsed value back in the input's form.
	Format func(T) []byte
	// Exact requires Format(Parse(input)) to equal the input byte for
	// byte; otherwise a formatted text that differs is kept in a
	// "formatted<suffix>" section of the golden.
	Exact bool
	// Diff compares a value with the parse of its formatted text: "" when
	// they are the same.
	Diff func(x, reparsed T) string
	// InputError tells an error about the input (parsers.IsInputError)
	// from a failure of the parser; every parse error must be the former.
	InputError func(error) bool
}

// RoundTrip returns a [Golden] callback for a parser with a formatter.
// Every "input<suffix>" section is parsed: an error, which must be an
// input error, is kept in "want<suffix>.error", a value as JSON in
// "want<suffix>.json"; the value is then formatted and parsed again, which
// must give the same value.
func RoundTrip[T any](c Codec[T]) func(t *testing.T, name string, a *txtar.Archive) map[string][]byte {
	return func(t *testing.T, name string, a *txtar.Archive) map[string][]byte {
		got := map[string][]byte{}
		for _, f := range a.Files {
			suffix, ok := strings.CutPrefix(f.Name, "input")
			if !ok {
				continue
			}
			v, err := c.Parse(f.Name, f.Data)
			if err != nil {
				if !c.InputError(err) {
					t.Errorf("%s: not an input error: %v", f.Name, err)
				}
				got["want"+suffix+".error"] = ErrorText(err)
				continue
			}
			got["want"+suffix+".json"] = JSON(t, v)
			out := c.Format(v)
			switch {
			case c.Exact && !bytes.Equal(out, f.Data):
				t.Errorf("%s: Format(Parse(input)) differs from the input:\n%s", f.Name, Diff(f.Data, out))
			case !c.Exact && (!bytes.Equal(out, f.Data) || Section(a, "formatted"+suffix) != nil):
				got["formatted"+suffix] = out
			}
			v2, err := c.Parse(f.Name, out)
			if err != nil {
				t.Errorf("%s: reparse of the formatted text: %v", f.Name, err)
				continue
			}
			if diff := c.Diff(v, v2); diff != "" {
				t.Errorf("%s: Parse(Format(x)) != x (-x +reparsed):\n%s", f.Name, diff)
			}
		}
		return got
	}
}

// CopyTree copies the directory from into to (created if need be), the
// files keep accepts only (all when keep is nil; rel is the file's slash
// path below from).
func CopyTree(tb testing.TB, from, to string, keep func(rel string, data []byte) bool) {
	tb.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if keep != nil && !keep(filepath.ToSlash(rel), data) {
			return nil
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		tb.Fatalf("copying %s: %v", from, err)
	}
}

// BenchLive runs parse b.N times, each between two collections, on a text
// of n bytes, and reports as live-B/text-B what the value it returns holds
// on the heap for each byte of the text, once the text is dropped.
func BenchLive(b *testing.B, n int, parse func() (any, error)) {
	b.Helper()
	b.SetBytes(int64(n))
	b.ReportAllocs()
	var live float64
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		v, err := parse()
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		live = float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
		runtime.KeepAlive(v)
	}
	b.ReportMetric(live, "live-B/text-B")
}
