package load

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestWrappedErrorsStayPositioned: a parser's positioned error that a
// wrapper gives context to (fmt.Errorf("...: %w")), and an error with no
// position, come out of Load as positioned errors naming the member in
// their bundle, the context in the message: renaming the file in place
// (as the command does to put the bundle's name first) renames it in the
// whole text.
func TestWrappedErrorsStayPositioned(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parse parseFunc
		want  string
	}{
		{"wrapped", func(n string, d []byte) (any, error) {
			return nil, fmt.Errorf("reading the version: %w", parsers.Errorf(parsers.Pos{File: n, Line: 1}, "bad"))
		}, "B/kube-proxy/version.txt:1: reading the version: bad"},
		{"wrapped twice, a list", func(n string, d []byte) (any, error) {
			var l parsers.ErrorList
			l.Add(parsers.Pos{File: n, Line: 1}, "bad")
			l.Add(parsers.Pos{File: n, Line: 2}, "worse")
			return nil, fmt.Errorf("outer: %w", fmt.Errorf("inner: %w", l))
		}, "B/kube-proxy/version.txt:1: outer: inner: bad (and 1 more errors)"},
		{"no position", func(n string, d []byte) (any, error) {
			return nil, errors.New("unreadable")
		}, "B/kube-proxy/version.txt: unreadable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saved := parsersByKind[parsers.KindVersion]
			parsersByKind[parsers.KindVersion] = tc.parse
			defer func() { parsersByKind[parsers.KindVersion] = saved }()
			dir := filepath.Join(t.TempDir(), "b")
			if err := os.CopyFS(dir, os.DirFS(filepath.Join(parsetest.Root(t), "testdata", "bundles", "iptables-mini"))); err != nil {
				t.Fatal(err)
			}
			_, err := Load([]string{dir}, Options{Strict: true})
			if err == nil {
				t.Fatal("no error")
			}
			if !IsInputError(err) {
				t.Errorf("not an input error: %v", err)
			}
			var pe *parsers.Error
			if !errors.As(err, &pe) || pe.Pos.File != "kube-proxy/version.txt" {
				t.Fatalf("%v (%T): not a positioned error of kube-proxy/version.txt", err, err)
			}
			var all []*parsers.Error
			var walk func(error)
			walk = func(e error) {
				if p, ok := e.(*parsers.Error); ok {
					all = append(all, p)
				}
				switch u := e.(type) {
				case interface{ Unwrap() error }:
					walk(u.Unwrap())
				case interface{ Unwrap() []error }:
					for _, x := range u.Unwrap() {
						walk(x)
					}
				}
			}
			walk(err)
			for _, p := range all {
				p.Pos.File = "B/" + p.Pos.File
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("renamed: %q, want %q", got, tc.want)
			}
		})
	}
}
