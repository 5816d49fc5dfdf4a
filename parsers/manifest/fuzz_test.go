package manifest

import (
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// FuzzParse checks that Parse never panics, that every error is a
// positioned input error naming the file, and that a parsed manifest
// survives Format and Parse unchanged.
func FuzzParse(f *testing.F) {
	parsetest.Seeds(f, "parsers/manifest/*.txtar")
	f.Add([]byte(`{"schema":1,"collected_at":"2026-01-01T00:00:00Z","sources":[{"name":"a","method":"exec","status":"ok","file":"a","sha256":"` + strings.Repeat("0", 64) + `"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse("fuzz.json", data)
		if err != nil {
			if !parsers.IsInputError(err) {
				t.Fatalf("not an input error: %v", err)
			}
			if !strings.HasPrefix(err.Error(), "fuzz.json") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		checkRoundTrip(t, m)
	})
}
