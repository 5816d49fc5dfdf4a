package metrics

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestGolden parses every testdata/parsers/metrics archive. A successful
// parse yields "kubeproxy.json" (the typed view) and "families.txt" (one
// line per family and series with its line); a failing one yields "error".
func TestGolden(t *testing.T) {
	parsetest.Golden(t, "parsers/metrics/*.txtar", func(t *testing.T, name string, a *txtar.Archive) map[string][]byte {
		input := parsetest.Section(a, "input")
		if input == nil {
			t.Fatal("archive has no input section")
		}
		file := "kube-proxy/metrics.txt"
		p, err := Parse(file, input)
		if err != nil {
			var pe *parsers.Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *parsers.Error", err)
			}
			if pe.Pos.File != file {
				t.Errorf("error names file %q, want %q", pe.Pos.File, file)
			}
			out := map[string][]byte{"error": []byte(err.Error() + "\n")}
			// What ParseLenient reads of it: a page cut inside a
			// histogram or summary, or in the middle of its last line.
			if lp, notes, err := ParseLenient(file, input); err == nil {
				checkLines(t, lp, input)
				out["lenient.txt"] = lenientView(t, lp, notes)
			}
			return out
		}
		if k := parsers.Detect(input); k != parsers.KindMetrics {
			t.Errorf("Detect says %q, want %q", k, parsers.KindMetrics)
		}
		checkLines(t, p, input)
		return map[string][]byte{
			"kubeproxy.json": parsetest.JSON(t, p.KubeProxy()),
			"families.txt":   families(p),
		}
	})
}

// checkLines verifies that every recorded position points at a line of the
// input that holds the sample it claims.
func checkLines(t *testing.T, p *Page, input []byte) {
	t.Helper()
	lines := strings.Split(string(input), "\n")
	at := func(pos parsers.Pos, want string) {
		t.Helper()
		if pos.Line < 1 || pos.Line > len(lines) {
			t.Errorf("position %v out of range for %s", pos, want)
			return
		}
		if !strings.HasPrefix(strings.TrimSpace(lines[pos.Line-1]), want) {
			t.Errorf("line %d is %q, want a %s sample", pos.Line, lines[pos.Line-1], want)
		}
	}
	for _, f := range p.Families {
		for _, m := range f.Metrics {
			if m.Raw != lines[m.Pos.Line-1] {
				t.Errorf("%s: raw %q is not line %d", f.Name, m.Raw, m.Pos.Line)
			}
			if h := m.Histogram; h != nil {
				for _, b := range h.Buckets {
					at(b.Pos, f.Name+"_bucket")
					if !strings.Contains(lines[b.Pos.Line-1], `le="`+formatFloat(float64(b.UpperBound))+`"`) {
						t.Errorf("line %d does not hold bucket le=%v", b.Pos.Line, b.UpperBound)
					}
				}
				// A histogram cut short lacks some of them.
				if !h.Partial || h.SumPos.Line > 0 {
					at(h.SumPos, f.Name+"_sum")
				}
				if !h.Partial || h.CountPos.Line > 0 {
					at(h.CountPos, f.Name+"_count")
				}
			} else if m.Value != nil {
				at(m.Pos, f.Name)
			}
		}
	}
}

// lenientView describes what ParseLenient read: the families (partial
// ones marked), the notes, and the kube-proxy view.
func lenientView(t *testing.T, p *Page, notes []parsers.LineNote) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "partial: %v\n", p.Partial)
	for _, f := range p.Families {
		if f.Partial {
			fmt.Fprintf(&b, "partial family: %s\n", f.Name)
		}
	}
	for _, n := range notes {
		fmt.Fprintf(&b, "note %d: %s: %s\n", n.Line, n.Reason, n.Detail)
	}
	b.Write(families(p))
	b.Write(parsetest.JSON(t, p.KubeProxy()))
	return b.Bytes()
}

func families(p *Page) []byte {
	var b bytes.Buffer
	for _, f := range p.Families {
		fmt.Fprintf(&b, "%d %s %s %s %q\n", f.Pos.Line, f.Name, f.Type, f.Stability, f.Help)
		for _, m := range f.Metrics {
			keys := make([]string, 0, len(m.Labels))
			for k := range m.Labels {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var ls []string
			for _, k := range keys {
				ls = append(ls, k+"="+m.Labels[k])
			}
			switch {
			case m.Histogram != nil:
				fmt.Fprintf(&b, "  %d {%s} buckets=%d count=%v sum=%v\n", m.Pos.Line, strings.Join(ls, ","), len(m.Histogram.Buckets), m.Histogram.Count, m.Histogram.Sum)
			case m.Summary != nil:
				fmt.Fprintf(&b, "  %d {%s} quantiles=%d count=%v\n", m.Pos.Line, strings.Join(ls, ","), len(m.Summary.Quantiles), m.Summary.Count)
			default:
				fmt.Fprintf(&b, "  %d {%s} %v\n", m.Pos.Line, strings.Join(ls, ","), *m.Value)
			}
		}
	}
	return b.Bytes()
}

func TestQuantile(t *testing.T) {
	inf := Float(math.Inf(1))
	bk := func(pairs ...float64) []Bucket {
		var out []Bucket
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, Bucket{UpperBound: Float(pairs[i]), Count: Float(pairs[i+1])})
		}
		return out
	}
	sync := bk(0.001, 0, 0.002, 10, 0.004, 50, 0.008, 90, 0.016, 100, math.Inf(1), 100)
	tests := []struct {
		name    string
		q       float64
		buckets []Bucket
		want    float64
		ok      bool
	}{
		// Rank 50 is the last of the 40 observations of (0.002, 0.004]:
		// its upper bound.
		{"median interpolates inside its bucket", 0.5, sync, 0.004, true},
		{"p90 at a bucket boundary", 0.9, sync, 0.008, true},
		{"p99 interpolates in the last finite bucket", 0.99, sync, 0.008 + 0.008*(9.0/10.0), true},
		// Rank 10 is the last of the 10 observations of (0.001, 0.002].
		{"p10 in the second bucket", 0.1, sync, 0.002, true},
		{"first bucket uses 0 as lower bound", 0.5, bk(1, 10, math.Inf(1), 10), 0.5, true},
		{"rank in the +Inf bucket gives the last finite bound", 0.99, bk(1, 10, 2, 50, math.Inf(1), 100), 2, true},
		{"non-positive first bound is returned as is", 0.1, bk(-1, 5, 1, 10, math.Inf(1), 10), -1, true},
		{"q=0", 0, sync, 0.001, true},
		{"q=1 lands in the last finite bucket", 1, sync, 0.016, true},
		{"non-monotonic counts are raised to the running maximum", 0.5, bk(1, 10, 2, 4, 4, 20, math.Inf(1), 20), 1, true},
		{"no observations", 0.5, bk(1, 0, math.Inf(1), 0), 0, false},
		{"no +Inf bucket", 0.5, bk(1, 5, 2, 10), 0, false},
		{"single bucket", 0.5, []Bucket{{UpperBound: inf, Count: 3}}, 0, false},
		{"q above 1", 1.5, sync, 0, false},
		{"q below 0", -0.1, sync, 0, false},
		{"q NaN", math.NaN(), sync, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Quantile(tc.q, tc.buckets)
			if ok != tc.ok || ok && math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("Quantile(%v) = %v, %v; want %v, %v", tc.q, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestFloatJSON(t *testing.T) {
	for _, v := range []float64{0, 1.5, -2, 1e-9, 1.7402471032541828e+09, math.Inf(1), math.Inf(-1), math.NaN()} {
		b, err := Float(v).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var f Float
		if err := f.UnmarshalJSON(b); err != nil {
			t.Fatalf("unmarshal %s: %v", b, err)
		}
		if !(float64(f) == v || math.IsNaN(v) && math.IsNaN(float64(f))) {
			t.Errorf("%v -> %s -> %v", v, b, f)
		}
	}
}

func TestAbsentIsNotZero(t *testing.T) {
	page := "# TYPE kubeproxy_sync_proxy_rules_iptables_restore_failures_total counter\n" +
		"kubeproxy_sync_proxy_rules_iptables_restore_failures_total 0\n"
	p, err := Parse("m", []byte(page))
	if err != nil {
		t.Fatal(err)
	}
	v := p.KubeProxy()
	f := v.Family("")
	if f == nil || f.IPTablesRestoreFailures == nil || f.IPTablesRestoreFailures.Value != 0 {
		t.Fatalf("restore failures: want present with 0, got %+v", f)
	}
	if f.NFTablesSyncFailures != nil || f.SyncDuration != nil || f.LastSync != nil || v.EndpointChangesPending != nil {
		t.Errorf("metrics absent from the page are not nil: %+v", f)
	}
	if _, ok := f.SyncLag(); ok {
		t.Error("SyncLag is defined without timestamps")
	}
}

func TestLabelEscapesAndOrder(t *testing.T) {
	// Labels in another order than the text parser keeps them, escaped
	// quotes and backslashes, blanks after commas, a trailing comma.
	page := "# TYPE x counter\n" +
		"x{b=\"2\", a=\"q\\\"uo\\\\te\",} 1\n" +
		"x{a=\"plain\",b=\"2\"} 2 1700000000000\n"
	p, err := Parse("m", []byte(page))
	if err != nil {
		t.Fatal(err)
	}
	f := p.Family("x")
	if len(f.Metrics) != 2 || f.Metrics[0].Pos.Line != 2 || f.Metrics[1].Pos.Line != 3 {
		t.Fatalf("lines not found: %+v", f.Metrics)
	}
	if f.Metrics[0].Labels["a"] != `q"uo\te` || *f.Metrics[1].TimestampMs != 1700000000000 {
		t.Errorf("labels or timestamp wrong: %+v %+v", f.Metrics[0], f.Metrics[1])
	}
}

// TestLatencyMicroseconds reads the sync latency of kube-proxy before
// 1.14, in microseconds, as the duration in seconds of later releases.
func TestLatencyMicroseconds(t *testing.T) {
	page := "# TYPE kubeproxy_sync_proxy_rules_latency_microseconds histogram\n" +
		"kubeproxy_sync_proxy_rules_latency_microseconds_bucket{le=\"1000\"} 1\n" +
		"kubeproxy_sync_proxy_rules_latency_microseconds_bucket{le=\"2000\"} 4\n" +
		"kubeproxy_sync_proxy_rules_latency_microseconds_bucket{le=\"+Inf\"} 4\n" +
		"kubeproxy_sync_proxy_rules_latency_microseconds_sum 6000\n" +
		"kubeproxy_sync_proxy_rules_latency_microseconds_count 4\n"
	p, err := Parse("m", []byte(page))
	if err != nil {
		t.Fatal(err)
	}
	f := p.KubeProxy().Family("")
	if f == nil || f.SyncDuration == nil {
		t.Fatal("no sync duration")
	}
	d := f.SyncDuration
	if d.Count != 4 || d.Sum != 0.006 || d.Mean == nil || *d.Mean != 0.0015 || d.Buckets[1].UpperBound != 0.002 {
		t.Errorf("sync duration %+v", d)
	}
	both := strings.ReplaceAll(page, "latency_microseconds", "duration_seconds") + page
	p, err = Parse("m", []byte(both))
	if err != nil {
		t.Fatal(err)
	}
	if d := p.KubeProxy().Family("").SyncDuration; d.Sum != 6000 {
		t.Errorf("with both, the seconds histogram is not the one read: sum %v", d.Sum)
	}
}
