package kpconfig

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/kpcmdline"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// FuzzParse: never panics; errors are positioned input errors; a parsed
// configuration formats and parses back to itself, and defaulting,
// validation and flag handling never panic on it.
func FuzzParse(f *testing.F) {
	parsetest.Seeds(f, "parsers/kpconfig/*.txtar")
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, lenient := range []bool{false, true} {
			c, err := Decode("fuzz.yaml", data, Options{Lenient: lenient})
			if err != nil {
				if !parsers.IsInputError(err) {
					t.Fatalf("not an input error: %v", err)
				}
				continue
			}
			text, err := Format(c)
			if err != nil {
				t.Fatalf("Format: %v", err)
			}
			back, err := Parse("formatted.yaml", text)
			if err != nil {
				t.Fatalf("Parse(Format(x)): %v\n%s", err, text)
			}
			want := c.Config
			want.APIVersion, want.Kind = APIVersion, Kind
			if !equality.Semantic.DeepEqual(want, back.Config) {
				t.Fatalf("round trip differs:\n%s", text)
			}
			for _, m := range []int{20, 25, 28, 30, 31, 37} {
				Validate(c, kpversion.V(m))
				UnknownIn(c, kpversion.V(m))
			}
		}
		if _, err := ParseConfigMap("fuzz-cm.yaml", data, true); err != nil && !parsers.IsInputError(err) {
			t.Fatalf("ParseConfigMap: not an input error: %v", err)
		}
		if cl, err := kpcmdline.Parse("fuzz-cmdline", data); err == nil {
			for _, m := range []int{20, 30, 37} {
				fl, err := ParseFlags(cl, kpversion.V(m))
				if err != nil {
					continue
				}
				if eff, err := Effective(fl, nil); err == nil {
					Validate(eff, kpversion.V(m))
				}
			}
		}
	})
}
