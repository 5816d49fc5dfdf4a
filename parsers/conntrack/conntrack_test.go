package conntrack

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
	"github.com/rogpeppe/go-internal/txtar"
)

var ignorePos = cmp.Options{
	cmpopts.IgnoreFields(Flow{}, "Pos", "Raw"),
	cmpopts.IgnoreFields(CPUStats{}, "Pos", "Raw"),
	cmpopts.EquateComparable(netip.Addr{}),
	cmpopts.EquateEmpty(),
}

// parseAny parses a section as conntrack -S output when its name ends in
// "stats", else as conntrack -L output.
func parseAny(sec string, data []byte) (any, error) {
	if strings.HasSuffix(sec, "stats") {
		return ParseStats(sec, data)
	}
	return Parse(sec, data)
}

// formatAny prints what parseAny returned.
func formatAny(v any) []byte {
	if s, ok := v.(*Stats); ok {
		return FormatStats(s)
	}
	return Format(v.(*Dump))
}

func TestGolden(t *testing.T) {
	parsetest.Golden(t, "parsers/conntrack/*.txtar", parsetest.RoundTrip(parsetest.Codec[any]{
		Parse: parseAny, Format: formatAny, Exact: true, InputError: parsers.IsInputError,
		Diff: func(x, y any) string { return cmp.Diff(x, y, ignorePos) },
	}))
}

func TestNAT(t *testing.T) {
	a, err := txtar.ParseFile(parsetest.Root(t) + "/testdata/parsers/conntrack/list.txtar")
	if err != nil {
		t.Fatal(err)
	}
	d, err := Parse("list", parsetest.Section(a, "input"))
	if err != nil {
		t.Fatal(err)
	}
	nat := map[string]string{}
	for _, f := range d.NATed() {
		nat[f.OrigDst().String()] = f.ReplySrc().String()
	}
	want := map[string]string{"10.96.0.10:53": "10.0.0.2:5353", "10.96.0.1:443": "10.0.0.2:8443", "[fd00:10:96::a]:53": "[fd00:ab::2]:5353"}
	if diff := cmp.Diff(want, nat); diff != "" {
		t.Errorf("NATed flows (-want +got):\n%s", diff)
	}
	for _, f := range d.Flows {
		if f.Orig.Dst.String() == "10.0.0.2" && f.IsDNAT() {
			t.Errorf("%s: a flow to the server's own address is not DNAT", f.Raw)
		}
		if f.IsSNAT() {
			t.Errorf("%s: no flow of the capture is masqueraded", f.Raw)
		}
	}
	var unreplied, zoned int
	for _, f := range d.Flows {
		if f.Unreplied {
			unreplied++
		}
		if f.HasZone && f.Zone == 7 && f.Mark == 42 {
			zoned++
		}
	}
	if unreplied != 3 || zoned != 1 {
		t.Errorf("%d unreplied flows (want 3), %d in zone 7 with mark 42 (want 1)", unreplied, zoned)
	}
}

func FuzzParse(f *testing.F) {
	parsetest.Seeds(f, "parsers/conntrack/*.txtar")
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, sec := range []string{"input", "input-stats"} {
			v, err := parseAny(sec, data)
			if err != nil {
				if !parsers.IsInputError(err) {
					t.Fatalf("not an input error: %v", err)
				}
				continue
			}
			out := formatAny(v)
			v2, err := parseAny(sec, out)
			if err != nil {
				t.Fatalf("reparse: %v\n%q\n%q", err, data, out)
			}
			if diff := cmp.Diff(v, v2, ignorePos); diff != "" {
				t.Fatalf("Parse(Format(x)) != x:\n%s\n%q\n%q", diff, data, out)
			}
		}
	})
}
