package metrics

import (
	"bytes"
	"testing"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// FuzzParse checks that Parse never panics, that every error it returns is
// positioned, and that every position of a parsed page lies in the input.
func FuzzParse(f *testing.F) {
	parsetest.Seeds(f, "parsers/metrics/*.txtar")
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("m.txt", data)
		if err != nil {
			if !parsers.IsInputError(err) {
				t.Fatalf("error is not an input error: %v", err)
			}
			return
		}
		n := 1
		for _, c := range data {
			if c == '\n' {
				n++
			}
		}
		for _, fam := range p.Families {
			for _, m := range fam.Metrics {
				if m.Pos.Line < 1 || m.Pos.Line > n {
					t.Fatalf("%s: line %d outside the input (%d lines)", fam.Name, m.Pos.Line, n)
				}
			}
		}
		v := p.KubeProxy()
		for _, fv := range v.Families {
			if fv.SyncDuration != nil {
				fv.SyncDuration.Quantile(0.99)
			}
		}
	})
}

// FuzzParseLenient checks that ParseLenient never panics, that its errors
// are positioned, that it reads every page Parse reads the same way and
// without notes, and that its notes and series lie in the input.
func FuzzParseLenient(f *testing.F) {
	parsetest.Seeds(f, "parsers/metrics/*.txtar")
	f.Fuzz(func(t *testing.T, data []byte) {
		p, notes, err := ParseLenient("m.txt", data)
		strict, serr := Parse("m.txt", data)
		if err != nil {
			if !parsers.IsInputError(err) {
				t.Fatalf("error is not an input error: %v", err)
			}
			if serr == nil {
				t.Fatalf("ParseLenient refuses what Parse reads: %v", err)
			}
			return
		}
		if serr == nil && (len(notes) > 0 || p.Partial || len(p.Families) != len(strict.Families)) {
			t.Fatalf("a page Parse reads: %d notes, partial %v, %d families (Parse: %d)", len(notes), p.Partial, len(p.Families), len(strict.Families))
		}
		n := bytes.Count(data, []byte("\n")) + 1
		for _, no := range notes {
			if no.Line < 1 || no.Line > n {
				t.Fatalf("note %+v outside the input (%d lines)", no, n)
			}
		}
		for _, fam := range p.Families {
			for _, m := range fam.Metrics {
				if m.Pos.Line < 1 || m.Pos.Line > n {
					t.Fatalf("%s: line %d outside the input (%d lines)", fam.Name, m.Pos.Line, n)
				}
			}
		}
		for _, fv := range p.KubeProxy().Families {
			if fv.SyncDuration != nil {
				fv.SyncDuration.Quantile(0.99)
			}
		}
	})
}
