package manifest

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestGolden parses every testdata/parsers/manifest case: "input" gives
// either "want.json" (the manifest as parsed, with the line of every
// source) or "want.err" (the errors, one per line).
func TestGolden(t *testing.T) {
	parsetest.Golden(t, "parsers/manifest/*.txtar", func(t *testing.T, name string, a *txtar.Archive) map[string][]byte {
		in := parsetest.Section(a, "input")
		m, err := Parse("manifest.json", in)
		if err != nil {
			if !parsers.IsInputError(err) {
				t.Fatalf("error is not an input error: %v", err)
			}
			return map[string][]byte{"want.err": []byte(errLines(err))}
		}
		checkRoundTrip(t, m)
		type line struct {
			Source string
			Pos    string
		}
		var lines []line
		for _, s := range m.Sources {
			lines = append(lines, line{s.Name, s.Pos.String()})
		}
		return map[string][]byte{"want.json": parsetest.JSON(t, struct {
			Manifest *Manifest
			Lines    []line
		}{m, lines})}
	})
}

func errLines(err error) string {
	if l, ok := err.(parsers.ErrorList); ok {
		var b strings.Builder
		for _, e := range l {
			b.WriteString(e.Error() + "\n")
		}
		return b.String()
	}
	return err.Error() + "\n"
}

var ignorePos = cmp.Options{cmpopts.IgnoreFields(Source{}, "Pos"), cmpopts.IgnoreFields(Manifest{}, "Pos")}

func checkRoundTrip(t *testing.T, m *Manifest) {
	t.Helper()
	out := Format(m)
	m2, err := Parse("manifest.json", out)
	if err != nil {
		t.Fatalf("Parse(Format(m)): %v\n%s", err, out)
	}
	if d := cmp.Diff(m, m2, ignorePos, cmpopts.EquateEmpty(), cmpopts.EquateComparable(netip.Addr{})); d != "" {
		t.Fatalf("Parse(Format(m)) differs (-m +m2):\n%s", d)
	}
	if again := Format(m2); string(again) != string(out) {
		t.Fatalf("Format is not stable:\n%s\n---\n%s", out, again)
	}
}

func TestFormatShape(t *testing.T) {
	zero := 0
	m := &Manifest{
		Schema: Schema, Tool: Tool{Name: "proxyscan", Version: "v0.1.0"}, Host: "node-1",
		CollectedAt: time.Date(2026, 3, 2, 8, 15, 0, 0, time.UTC),
		Sources: []Source{{
			Name: "iptables-nft-save", Method: MethodExec, Command: []string{"iptables-nft-save", "-c"},
			File: "node/iptables-save.txt", Status: StatusOK, ExitStatus: &zero, DurationMS: 12, Bytes: 3,
			SHA256: strings.Repeat("ab", 32),
		}},
	}
	got := string(Format(m))
	for _, want := range []string{`"schema": 1`, `"collected_at": "2026-03-02T08:15:00Z"`, `"node_ips": []`,
		`"exit_status": 0`, `"duration_ms": 12`, `"sha256": "abab`, `"command": [`} {
		if !strings.Contains(got, want) {
			t.Errorf("Format output lacks %s:\n%s", want, got)
		}
	}
	if parsers.Detect([]byte(got)) != parsers.KindManifest {
		t.Errorf("Detect does not recognise Format's output as a manifest")
	}
	checkRoundTrip(t, m)
}

func TestLookup(t *testing.T) {
	m := &Manifest{Sources: []Source{{Name: "a", File: "node/a.txt"}, {Name: "b"}}}
	if s := m.Source("b"); s == nil || s.Name != "b" {
		t.Errorf("Source(b) = %v", s)
	}
	if s := m.ByFile("node/a.txt"); s == nil || s.Name != "a" {
		t.Errorf("ByFile = %v", s)
	}
	if m.Source("c") != nil || m.ByFile("x") != nil {
		t.Errorf("lookups of absent entries are not nil")
	}
}

func TestHostileSizes(t *testing.T) {
	big := make([]byte, MaxSize+1)
	if _, err := Parse("m.json", big); err == nil || !strings.Contains(err.Error(), "m.json:1: manifest too large") {
		t.Errorf("oversized manifest: %v", err)
	}
	var b strings.Builder
	b.WriteString(`{"schema":1,"collected_at":"2026-01-01T00:00:00Z","sources":[`)
	for i := 0; i <= MaxSources; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"name":"s%d","method":"file","status":"skipped","error":"x"}`, i)
	}
	b.WriteString("]}")
	if _, err := Parse("m.json", []byte(b.String())); err == nil || !strings.Contains(err.Error(), "sources, over the limit") {
		t.Errorf("too many sources: %v", err)
	}
}
