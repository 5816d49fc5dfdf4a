package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

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

// TestRenderers renders the same report values in every format and
// compares with the goldens of testdata/report (rewritten with -update).
func TestRenderers(t *testing.T) {
	for _, in := range []string{"single-node", "multi-node", "clean", "fleet", "inconclusive", "pasted"} {
		r := loadReport(t, in+".in.json")
		for _, format := range Formats() {
			for _, color := range []bool{false, true} {
				if color && format != "table" {
					continue
				}
				name := in + ".golden." + format
				if color {
					name = in + ".golden.color." + format
				}
				t.Run(name, func(t *testing.T) {
					var buf bytes.Buffer
					if err := Render(&buf, format, r, Options{Color: color, Width: 120}); err != nil {
						t.Fatal(err)
					}
					checkGolden(t, name, buf.Bytes())
				})
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
