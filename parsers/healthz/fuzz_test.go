package healthz

import (
	"testing"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// FuzzParse checks that Parse never panics and returns only positioned
// input errors.
func FuzzParse(f *testing.F) {
	parsetest.Seeds(f, "parsers/healthz/*.txtar")
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := Parse("h.json", data)
		if err != nil {
			if !parsers.IsInputError(err) {
				t.Fatalf("not an input error: %v", err)
			}
			return
		}
		h.IsHealthy()
		h.Staleness()
		if h.Shape != ShapeLegacy && h.Shape != ShapeStatus {
			t.Fatalf("shape %q", h.Shape)
		}
	})
}
