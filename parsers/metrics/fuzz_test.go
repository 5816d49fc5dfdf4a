package metrics

import (
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
