package healthz

import (
	"errors"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// summary is the golden view of a response: the parsed fields plus the
// derived answers.
type summary struct {
	*Health
	IsHealthy bool     `json:"isHealthy"`
	Unhealthy []string `json:"unhealthyFamilies,omitempty"`
	Staleness string   `json:"staleness"`
}

func TestGolden(t *testing.T) {
	parsetest.Golden(t, "parsers/healthz/*.txtar", func(t *testing.T, name string, a *txtar.Archive) map[string][]byte {
		file := "kube-proxy/healthz.json"
		h, err := Parse(file, parsetest.Section(a, "input"))
		if err != nil {
			var pe *parsers.Error
			if !errors.As(err, &pe) || pe.Pos.File != file {
				t.Fatalf("error %v is not a *parsers.Error naming %s", err, file)
			}
			return map[string][]byte{"error": []byte(err.Error() + "\n")}
		}
		if k := parsers.Detect(parsetest.Section(a, "input")); k != parsers.KindHealthz {
			t.Errorf("Detect says %q, want %q", k, parsers.KindHealthz)
		}
		return map[string][]byte{"want.json": parsetest.JSON(t, summary{h, h.IsHealthy(), h.Unhealthy(), h.Staleness().String()})}
	})
}

func TestTimes(t *testing.T) {
	tests := []struct {
		in   string
		want time.Time
		mono bool
	}{
		{"2020-06-03 23:59:53.688063083 +0000 UTC m=+202.631797660", time.Date(2020, 6, 3, 23, 59, 53, 688063083, time.UTC), true},
		{"2020-06-03 23:59:53 +0000 UTC", time.Date(2020, 6, 3, 23, 59, 53, 0, time.UTC), false},
		{"2020-06-04 01:59:53.5 +0200 CEST m=-1.5", time.Date(2020, 6, 3, 23, 59, 53, 500000000, time.UTC), true},
		{"2020-06-04 05:29:53.5 +0530 +0530", time.Date(2020, 6, 3, 23, 59, 53, 500000000, time.UTC), false},
		{"2026-03-02T08:15:31.002213977Z", time.Date(2026, 3, 2, 8, 15, 31, 2213977, time.UTC), false},
		{"0001-01-01T00:00:00Z", time.Time{}, false},
	}
	for _, tc := range tests {
		got, err := parseTime([]byte(`"`+tc.in+`"`), parsers.Pos{File: "f", Path: "$.x"})
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if !got.Time.Equal(tc.want) || (got.Monotonic != nil) != tc.mono || got.Text != tc.in {
			t.Errorf("%q: got %v (mono %v), want %v", tc.in, got.Time, got.Monotonic, tc.want)
		}
	}
	for _, bad := range []string{"", "2020-06-03", "2020-06-03 23:59:53 +0000 UTC m=x", "2020-06-03 23:59:53 +0000 UTC m=", "12:00"} {
		if _, err := parseTime([]byte(`"`+bad+`"`), parsers.Pos{File: "f"}); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestHealthRules(t *testing.T) {
	parse := func(s string) *Health {
		t.Helper()
		h, err := Parse("h", []byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	legacyStale := parse(`{"lastUpdated": "2025-03-02 08:14:00 +0000 UTC m=+1.0","currentTime": "2025-03-02 08:15:00 +0000 UTC m=+61.0"}`)
	if legacyStale.IsHealthy() || legacyStale.Staleness() != time.Minute || legacyStale.Shape != ShapeLegacy {
		t.Errorf("legacy body with old lastUpdated: healthy=%v staleness=%v shape=%v", legacyStale.IsHealthy(), legacyStale.Staleness(), legacyStale.Shape)
	}
	ineligible := parse(`{"lastUpdated":"2026-03-02T08:15:31Z","currentTime":"2026-03-02T08:15:31Z","nodeEligible":false,"healthy":true}`)
	if ineligible.IsHealthy() || ineligible.Shape != ShapeStatus {
		t.Error("an ineligible node reports healthy")
	}
}
