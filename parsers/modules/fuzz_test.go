package modules

import (
	"testing"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// FuzzParse checks that Parse never panics, returns only input errors, and
// that Parse(Format(x)) has the same modules as x.
func FuzzParse(f *testing.F) {
	parsetest.Seeds(f, "parsers/modules/*.txtar")
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := Parse("m", data)
		if err != nil {
			if !parsers.IsInputError(err) {
				t.Fatalf("not an input error: %v", err)
			}
			return
		}
		checkRoundTrip(t, l)
	})
}
