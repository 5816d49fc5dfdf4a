package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/trace"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

func readJSON(t *testing.T, name string, v any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(parsetest.Root(t), "testdata", "report", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// checkGolden compares got with testdata/report/name (see
// parsetest.GoldenFile).
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	parsetest.GoldenFile(t, filepath.Join(parsetest.Root(t), "testdata", "report", name), got)
}

// TestTraceRenderers renders traces of the example bundles (an iptables
// trace with affinity conditions, an IPVS trace without endpoints) and a
// diverging comparison, in every format, with and without colour.
func TestTraceRenderers(t *testing.T) {
	for _, in := range []string{"trace", "trace-ipvs"} {
		var res trace.Result
		readJSON(t, in+".in.json", &res)
		for _, format := range TraceFormats {
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
					if err := RenderTrace(&buf, format, []*trace.Result{&res}, Options{Color: color, Width: 120}); err != nil {
						t.Fatal(err)
					}
					checkGolden(t, name, buf.Bytes())
				})
			}
		}
	}
	var cmp trace.Comparison
	readJSON(t, "compare.in.json", &cmp)
	for _, format := range TraceFormats {
		name := "compare.golden." + format
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := RenderCompare(&buf, format, []*trace.Comparison{&cmp}, Options{Width: 120}); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, name, buf.Bytes())
		})
	}
	if err := RenderTrace(&bytes.Buffer{}, "sarif", nil, Options{}); err == nil {
		t.Error("an unknown trace format is an error")
	}
}

// TestTraceJSONShape checks the contract's Trace JSON: the JSON of one
// result is the object itself, its fields named as the contract says,
// and it decodes back to the same value.
func TestTraceJSONShape(t *testing.T) {
	var res trace.Result
	readJSON(t, "trace.in.json", &res)
	var buf bytes.Buffer
	if err := RenderTraceJSON(&buf, []*trace.Result{&res}); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	pkt := m["packet"].(map[string]any)
	for _, k := range []string{"src", "dst", "proto", "from"} {
		if _, ok := pkt[k]; !ok {
			t.Errorf("packet lacks %q", k)
		}
	}
	p0 := m["paths"].([]any)[0].(map[string]any)
	for _, k := range []string{"probability", "verdict", "destination", "masquerade", "steps"} {
		if _, ok := p0[k]; !ok {
			t.Errorf("path lacks %q", k)
		}
	}
	s0 := p0["steps"].([]any)[0].(map[string]any)
	for _, k := range []string{"table", "chain", "rule", "file", "line"} {
		if _, ok := s0[k]; !ok {
			t.Errorf("step lacks %q", k)
		}
	}
	var back trace.Result
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Paths) != len(res.Paths) || back.Packet != res.Packet {
		t.Errorf("round trip changed the result")
	}
	if got := FormatProbability(1.0 / 3); got != "1/3 (33.3%)" {
		t.Errorf("FormatProbability(1/3) = %q", got)
	}
	if got := FormatProbability(0.123456); got != "12.3%" {
		t.Errorf("FormatProbability(0.123456) = %q", got)
	}
}
