package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

func loadReport(t *testing.T, name string) *Report {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(parsetest.Root(t), "testdata", "report", name))
	if err != nil {
		t.Fatal(err)
	}
	r := &Report{}
	if err := json.Unmarshal(data, r); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r
}

// goldenInputs are the report values of testdata/report that the
// renderer goldens are made from.
var goldenInputs = []string{"single-node", "multi-node", "clean", "fleet", "fleet-shared", "inconclusive", "pasted"}

// TestRenderers renders the same report values in every format and
// compares with the goldens of testdata/report (rewritten with -update):
// the table at 80 and 160 columns, in colour at 80, and with --verbose.
func TestRenderers(t *testing.T) {
	for _, in := range goldenInputs {
		r := loadReport(t, in+".in.json")
		for _, format := range Formats() {
			type variant struct {
				name string
				opts Options
			}
			variants := []variant{{in + ".golden." + format, Options{Width: 120}}}
			if format == "table" {
				variants = []variant{
					{in + ".golden.80.table", Options{Width: 80}},
					{in + ".golden.160.table", Options{Width: 160}},
					{in + ".golden.color.80.table", Options{Width: 80, Color: true}},
					{in + ".golden.verbose.80.table", Options{Width: 80, Verbose: true}},
				}
			}
			for _, v := range variants {
				t.Run(v.name, func(t *testing.T) {
					var buf bytes.Buffer
					if err := Render(&buf, format, r, v.opts); err != nil {
						t.Fatal(err)
					}
					checkGolden(t, v.name, buf.Bytes())
				})
			}
		}
	}
}

// ansiEscape matches the colour sequences of the table.
var ansiEscape = regexp.MustCompile("\x1b\\[[0-9;]*m")

// TestTableWidth renders every report of testdata/report as a table at
// several widths, with and without colour and --verbose, and checks that
// no line is wider than the terminal.
func TestTableWidth(t *testing.T) {
	ins, _ := filepath.Glob(filepath.Join(parsetest.Root(t), "testdata", "report", "*.in.json"))
	reports := map[string]*Report{}
	for _, p := range ins {
		name := strings.TrimSuffix(filepath.Base(p), ".in.json")
		var probe map[string]any
		data, _ := os.ReadFile(p)
		if json.Unmarshal(data, &probe) != nil || probe["schemaVersion"] == nil {
			continue // a trace or a comparison
		}
		reports[name] = loadReport(t, name+".in.json")
	}
	for _, name := range goldenInputs {
		if reports[name] == nil {
			t.Fatalf("no report %s.in.json", name)
		}
	}
	mig := reports["ipvs-migration"]
	reports["ipvs-migration-multi"] = &Report{SchemaVersion: mig.SchemaVersion, Tool: mig.Tool, Inputs: mig.Inputs, Findings: mig.Findings, Summary: mig.Summary,
		Nodes: []NodeReport{{Node: "node-a", Mode: "ipvs", Summary: mig.Summary, Migration: mig.Migration}, {Node: "node-b", Mode: "iptables"}}}
	for name, r := range reports {
		for _, width := range []int{60, 80, 100, 160} {
			for _, opts := range []Options{{Width: width}, {Width: width, Color: true}, {Width: width, Verbose: true}} {
				var buf bytes.Buffer
				if err := RenderTable(&buf, r, opts); err != nil {
					t.Fatal(err)
				}
				for i, line := range strings.Split(buf.String(), "\n") {
					plain := ansiEscape.ReplaceAllString(line, "")
					if n := utf8.RuneCountInString(plain); n > width {
						t.Errorf("%s at %d columns (colour %v, verbose %v), line %d is %d wide:\n%s", name, width, opts.Color, opts.Verbose, i+1, n, plain)
					}
				}
			}
		}
	}
}

// TestJSONRoundTrip checks that the JSON report decodes into the same value.
func TestJSONRoundTrip(t *testing.T) {
	r := loadReport(t, "single-node.in.json")
	var buf bytes.Buffer
	if err := RenderJSON(&buf, r, Options{}); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := RenderJSON(&again, &back, Options{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Errorf("JSON report does not round-trip:\n%s", parsetest.Diff(buf.Bytes(), again.Bytes()))
	}
}
