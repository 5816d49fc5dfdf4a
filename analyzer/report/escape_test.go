package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/proxyscan/proxyscan/analyzer/diff"
	"github.com/proxyscan/proxyscan/analyzer/proxier"
	"github.com/proxyscan/proxyscan/analyzer/trace"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"plain -A KUBE-SERVICES \"comment\" ✓ → ×", "plain -A KUBE-SERVICES \"comment\" ✓ → ×"},
		{"two\nlines\tand a tab", "two\nlines\tand a tab"},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"over\rwrite", `over\x0dwrite`},
		{"bell\a \x00 \x7f", `bell\x07 \x00 \x7f`},
		{"\x1b]0;title\a", `\x1b]0;title\x07`},
		{"c1 \u009b31m \u0085", `c1 \u009b31m \u0085`},
		{"lone \x9b byte, cut \xe2\x86", `lone \x9b byte, cut \xe2\x86`},
	} {
		if got := Escape(tc.in); got != tc.want {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestHostileGoldens renders inputs whose texts (a rule comment, file
// and node names, notes) hold "\x1b[31m", "\r" and other control
// characters in every format of every output, and compares with the
// goldens of testdata/report: the control characters are written out
// (table, markdown), or escaped as the format escapes them (JSON, SARIF,
// JUnit, HTML).
func TestHostileGoldens(t *testing.T) {
	var rep Report
	readJSON(t, "hostile.in.json", &rep)
	for _, format := range Reports.Formats() {
		for _, color := range []bool{false, true} {
			if color && format != "table" {
				continue
			}
			name := "hostile.golden." + format
			if color {
				name = "hostile.golden.color." + format
			}
			t.Run(name, func(t *testing.T) {
				var buf bytes.Buffer
				if err := Reports.Render(&buf, format, &rep, Options{Color: color, Width: 120}); err != nil {
					t.Fatal(err)
				}
				switch format {
				case "table", "markdown":
					checkInert(t, buf.Bytes(), color)
				case "json", "sarif", "junit":
					// Escaped as JSON and XML escape them.
					if bytes.ContainsAny(buf.Bytes(), "\x1b\r\a") {
						t.Errorf("%s output holds a raw ESC, CR or BEL:\n%s", format, buf.Bytes())
					}
				}
				checkGolden(t, name, buf.Bytes())
			})
		}
	}
	var tr trace.Result
	readJSON(t, "trace-hostile.in.json", &tr)
	var df diff.Result
	readJSON(t, "diff-hostile.in.json", &df)
	var svc []*proxier.ServiceReport
	readJSON(t, "service-hostile.in.json", &svc)
	type output struct {
		name   string
		render func(w *bytes.Buffer, format string, opts Options) error
		format []string
	}
	for _, o := range []output{
		{"trace-hostile", func(w *bytes.Buffer, f string, opts Options) error {
			return Traces.Render(w, f, []*trace.Result{&tr}, opts)
		}, Traces.Formats()},
		{"diff-hostile", func(w *bytes.Buffer, f string, opts Options) error { return Diffs.Render(w, f, &df, opts) }, Diffs.Formats()},
		{"service-hostile", func(w *bytes.Buffer, f string, opts Options) error { return ServiceReports.Render(w, f, svc, opts) }, ServiceReports.Formats()},
	} {
		for _, format := range o.format {
			for _, color := range []bool{false, true} {
				if color && format != "table" {
					continue
				}
				name := o.name + ".golden." + format
				if color {
					name = o.name + ".golden.color." + format
				}
				t.Run(name, func(t *testing.T) {
					var buf bytes.Buffer
					if err := o.render(&buf, format, Options{Color: color, Width: 120}); err != nil {
						t.Fatal(err)
					}
					if format != "json" {
						checkInert(t, buf.Bytes(), color)
					}
					checkGolden(t, name, buf.Bytes())
				})
			}
		}
	}
}

// TestTextRenderersEscapeEverything poisons every string of the inputs
// of the renderer tests with control characters and checks that no text
// renderer prints one: whatever a field holds, the output cannot drive
// the terminal.
func TestTextRenderersEscapeEverything(t *testing.T) {
	const bad = "\x1b[31m\r\a\x1b]0;title\a\x9b\u009b[1m\x7f\x00"
	type render func(w *bytes.Buffer, opts Options) error
	var cases []struct {
		name string
		r    render
	}
	add := func(name string, r render) {
		cases = append(cases, struct {
			name string
			r    render
		}{name, r})
	}
	for _, in := range []string{"single-node", "multi-node", "clean", "fleet", "inconclusive", "ipvs-migration"} {
		r := loadReport(t, in+".in.json")
		poison(reflect.ValueOf(r), bad)
		for _, format := range []string{"table", "markdown"} {
			add(in+"/"+format, func(w *bytes.Buffer, opts Options) error { return Reports.Render(w, format, r, opts) })
		}
	}
	for _, in := range []string{"trace", "trace-ipvs"} {
		var res trace.Result
		readJSON(t, in+".in.json", &res)
		poison(reflect.ValueOf(&res), bad)
		add(in+"/table", func(w *bytes.Buffer, opts Options) error {
			return Traces.Render(w, "table", []*trace.Result{&res}, opts)
		})
	}
	var cmp trace.Comparison
	readJSON(t, "compare.in.json", &cmp)
	poison(reflect.ValueOf(&cmp), bad)
	add("compare/table", func(w *bytes.Buffer, opts Options) error {
		return Comparisons.Render(w, "table", []*trace.Comparison{&cmp}, opts)
	})
	for _, name := range []string{"mode-switch", "data-plane"} {
		data, err := os.ReadFile(filepath.Join(parsetest.Root(t), "testdata", "diff", name+".golden.json"))
		if err != nil {
			t.Fatal(err)
		}
		r := &diff.Result{}
		if err := json.Unmarshal(data, r); err != nil {
			t.Fatal(err)
		}
		poison(reflect.ValueOf(r), bad)
		for _, format := range []string{"table", "markdown"} {
			add("diff-"+name+"/"+format, func(w *bytes.Buffer, opts Options) error { return Diffs.Render(w, format, r, opts) })
		}
	}
	var svc []*proxier.ServiceReport
	readJSON(t, "service-hostile.in.json", &svc)
	poison(reflect.ValueOf(&svc), bad)
	add("service/table", func(w *bytes.Buffer, opts Options) error { return ServiceReports.Render(w, "table", svc, opts) })
	for _, c := range cases {
		for _, color := range []bool{false, true} {
			t.Run(c.name, func(t *testing.T) {
				var buf bytes.Buffer
				if err := c.r(&buf, Options{Color: color, Width: 120}); err != nil {
					t.Fatal(err)
				}
				checkInert(t, buf.Bytes(), color)
			})
		}
	}
}

// poison appends bad to every string v holds (through pointers, slices,
// maps and structs), map keys included; an empty list of strings gets
// one.
func poison(v reflect.Value, bad string) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			poison(v.Elem(), bad)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				poison(v.Field(i), bad)
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Len() == 0 && v.CanSet() && v.Type().Elem().Kind() == reflect.String {
			// An empty list of texts gets one, so that every list is printed.
			v.Set(reflect.Append(v, reflect.New(v.Type().Elem()).Elem()))
		}
		for i := range v.Len() {
			poison(v.Index(i), bad)
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		m := reflect.MakeMap(v.Type())
		for _, k := range v.MapKeys() {
			nk := reflect.New(k.Type()).Elem()
			nk.Set(k)
			poison(nk, bad)
			nv := reflect.New(v.Type().Elem()).Elem()
			nv.Set(v.MapIndex(k))
			poison(nv, bad)
			m.SetMapIndex(nk, nv)
		}
		v.Set(m)
	case reflect.String:
		if v.CanSet() {
			v.SetString(v.String() + bad)
		}
	}
}

// sgr matches the colour sequences proxyscan's styles write.
var sgr = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// checkInert fails when out holds a control character other than \n and
// \t (or, with colour, an ESC that does not start a colour sequence), a
// C1 control, or a byte that is not UTF-8.
func checkInert(t *testing.T, out []byte, color bool) {
	t.Helper()
	s := string(out)
	if color {
		if strings.Contains(s, "\x1b[31m") {
			t.Errorf("the input's \\x1b[31m is printed as it is:\n%s", s)
		}
		s = sgr.ReplaceAllString(s, "")
	}
	for i, r := range s {
		if r == utf8.RuneError || r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f {
			t.Fatalf("output holds %q at %d:\n%s", r, i, s)
		}
	}
}
