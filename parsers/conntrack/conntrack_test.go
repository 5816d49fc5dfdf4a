package conntrack

import (
	"bytes"
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

// parseAny parses a section by its name: input-stats is conntrack -S.
func parseAny(sec string, data []byte) (any, []byte, error) {
	if strings.HasSuffix(sec, "stats") {
		s, err := ParseStats(sec, data)
		if err != nil {
			return nil, nil, err
		}
		return s, FormatStats(s), nil
	}
	d, err := Parse(sec, data)
	if err != nil {
		return nil, nil, err
	}
	return d, Format(d), nil
}

func TestGolden(t *testing.T) {
	parsetest.Golden(t, "parsers/conntrack/*.txtar", func(t *testing.T, name string, a *txtar.Archive) map[string][]byte {
		got := map[string][]byte{}
		for _, f := range a.Files {
			if !strings.HasPrefix(f.Name, "input") {
				continue
			}
			suffix := strings.TrimPrefix(f.Name, "input")
			v, out, err := parseAny(f.Name, f.Data)
			if err != nil {
				if !parsers.IsInputError(err) {
					t.Errorf("not an input error: %v", err)
				}
				got["want"+suffix+".error"] = parsetest.ErrorText(err)
				continue
			}
			got["want"+suffix+".json"] = parsetest.JSON(t, v)
			if !bytes.Equal(out, f.Data) {
				t.Errorf("%s: Format(Parse(input)) differs from the input:\n%s", f.Name, parsetest.Diff(f.Data, out))
			}
			v2, _, err := parseAny(f.Name, out)
			if err != nil {
				t.Fatalf("reparse: %v", err)
			}
			if diff := cmp.Diff(v, v2, ignorePos); diff != "" {
				t.Errorf("Parse(Format(x)) != x:\n%s", diff)
			}
		}
		return got
	})
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
			v, out, err := parseAny(sec, data)
			if err != nil {
				if !parsers.IsInputError(err) {
					t.Fatalf("not an input error: %v", err)
				}
				continue
			}
			v2, _, err := parseAny(sec, out)
			if err != nil {
				t.Fatalf("reparse: %v\n%q\n%q", err, data, out)
			}
			if diff := cmp.Diff(v, v2, ignorePos); diff != "" {
				t.Fatalf("Parse(Format(x)) != x:\n%s\n%q\n%q", diff, data, out)
			}
		}
	})
}
