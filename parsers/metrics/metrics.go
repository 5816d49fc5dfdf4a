package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/proxyscan/proxyscan/parsers"
)

// Page is a parsed metrics page.
type Page struct {
	// File is the name the page was parsed from.
	File string `json:"file"`
	// StatusCode is the HTTP status code when the input was a saved HTTP
	// response, 0 otherwise.
	StatusCode int `json:"statusCode,omitempty"`
	// Families are the metric families in the order they first appear.
	Families []*Family `json:"families"`
	// Partial says that some histograms or summaries of the page were
	// cut short ([ParseLenient]); their families say which.
	Partial bool `json:"partial,omitempty"`
	// Filter, for a page pasted under a command line that pipes it
	// through a filter (curl .../metrics | grep sync), is that filter
	// ("grep sync"): a series the page does not show may be on the node's
	// page. "" otherwise.
	Filter string `json:"filter,omitempty"`

	byName  map[string]*Family
	lenient bool               // read by ParseLenient
	notes   []parsers.LineNote // what ParseLenient took of a cut page
}

// Family is one metric family: the samples sharing a name, HELP and TYPE.
type Family struct {
	// Name is the family name (for histograms and summaries, without the
	// _bucket, _sum and _count suffixes).
	Name string `json:"name"`
	// Help is the HELP text, with the stability marker removed.
	Help string `json:"help,omitempty"`
	// Stability is the stability level Kubernetes components put in front
	// of the HELP text ("[ALPHA] ..."), without brackets; empty when absent.
	Stability string `json:"stability,omitempty"`
	// Type is the metric type: counter, gauge, histogram, gaugehistogram,
	// summary or untyped.
	Type string `json:"type"`
	// Pos is the line of the family's first HELP, TYPE or sample line.
	Pos parsers.Pos `json:"pos"`
	// Metrics are the family's series in page order.
	Metrics []*Metric `json:"metrics"`
	// Partial says that some of its series were cut short: a histogram
	// without its +Inf bucket, _sum or _count, a summary without _sum or
	// _count ([ParseLenient]).
	Partial bool `json:"partial,omitempty"`
}

// Metric is one series of a family: a label set and its value, histogram
// or summary.
type Metric struct {
	// Labels are the series labels (without le or quantile).
	Labels map[string]string `json:"labels,omitempty"`
	// Value is the sample value of a counter, gauge or untyped series.
	Value *Float `json:"value,omitempty"`
	// TimestampMs is the sample timestamp when the page gave one.
	TimestampMs *int64 `json:"timestampMs,omitempty"`
	// Histogram is the histogram of a histogram series.
	Histogram *Histogram `json:"histogram,omitempty"`
	// Summary is the summary of a summary series.
	Summary *Summary `json:"summary,omitempty"`
	// Pos is the line of the series' first sample line.
	Pos parsers.Pos `json:"pos"`
	// Raw is the text of that line.
	Raw string `json:"raw"`
}

// Histogram is a classic Prometheus histogram.
type Histogram struct {
	// Count is the _count sample.
	Count Float `json:"count"`
	// Sum is the _sum sample.
	Sum Float `json:"sum"`
	// Buckets are the cumulative buckets by increasing upper bound; the
	// last one is +Inf.
	Buckets []Bucket `json:"buckets"`
	// CountPos and SumPos are the lines of the _count and _sum samples.
	CountPos parsers.Pos `json:"countPos"`
	SumPos   parsers.Pos `json:"sumPos"`
	// Partial says that the histogram was cut short ([ParseLenient]):
	// without its +Inf bucket (Count is then 0 and unknown), or without
	// its _count (Count is then the +Inf bucket's) or _sum (Sum is then 0
	// and unknown; NoSum says so).
	Partial bool `json:"partial,omitempty"`
	// NoSum says that the page did not hold the _sum sample.
	NoSum bool `json:"noSum,omitempty"`
}

// Bucket is one cumulative histogram bucket.
type Bucket struct {
	// UpperBound is the le label.
	UpperBound Float `json:"le"`
	// Count is the number of observations less than or equal to UpperBound.
	Count Float `json:"count"`
	// Pos is the line of the bucket sample.
	Pos parsers.Pos `json:"pos"`
}

// Summary is a Prometheus summary.
type Summary struct {
	// Count and Sum are the _count and _sum samples.
	Count Float `json:"count"`
	Sum   Float `json:"sum"`
	// Quantiles are the precomputed quantiles in page order.
	Quantiles []QuantileVal `json:"quantiles"`
	// Partial says that the summary's _count or _sum were cut off
	// ([ParseLenient]); they are then 0 and unknown.
	Partial bool `json:"partial,omitempty"`
}

// QuantileVal is one precomputed quantile of a summary.
type QuantileVal struct {
	// Quantile is the quantile label; Value the estimate for it.
	Quantile Float `json:"quantile"`
	Value    Float `json:"value"`
	// Pos is the line of the quantile sample.
	Pos parsers.Pos `json:"pos"`
}

// Float is a sample value. It marshals to JSON as a number, or as the
// strings "+Inf", "-Inf" and "NaN", which JSON numbers cannot express.
type Float float64

// MarshalJSON implements json.Marshaler.
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	switch {
	case math.IsInf(v, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-Inf"`), nil
	case math.IsNaN(v):
		return []byte(`"NaN"`), nil
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (f *Float) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return err
		}
		*f = Float(v)
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = Float(v)
	return nil
}

// MaxSize is the largest page Parse accepts.
const MaxSize = 64 << 20

// Parse parses a metrics page read from the file called name. The text
// must be valid Prometheus text exposition format; parser errors are
// returned as a *parsers.Error naming the line. Beyond the text parser,
// Parse rejects duplicate series and histograms or summaries without their
// +Inf bucket, _sum or _count line, which is how a page cut short at a line
// boundary shows.
func Parse(name string, data []byte) (*Page, error) {
	p, _, err := parse(name, data, false)
	return p, err
}

// ReasonCut is the reason of the notes of [ParseLenient]: a histogram or
// summary cut short (its Detail says which, and what it lacks), or a last
// line cut in the middle.
const ReasonCut = "metrics cut short"

// ParseLenient parses a metrics page as a paste or a grep leaves it: a
// histogram or summary cut short (buckets without their +Inf bucket,
// _sum or _count) is read as far as it goes, marked Partial, its family
// and the page too, and noted; a last line cut in the middle is skipped
// and noted. Anything else is refused as by [Parse].
func ParseLenient(name string, data []byte) (*Page, []parsers.LineNote, error) {
	return parse(name, data, true)
}

// parse is Parse, and ParseLenient when lenient is set.
func parse(name string, data []byte, lenient bool) (*Page, []parsers.LineNote, error) {
	p, notes, err := parseOnce(name, data, lenient)
	var e *parsers.Error
	if err == nil || !lenient || !errors.As(err, &e) || e.Pos.Line == 0 {
		return p, notes, err
	}
	// A last line cut in the middle: read the page without it.
	lines := bytes.SplitAfter(data, []byte("\n"))
	last := len(lines)
	for last > 0 && len(bytes.TrimSpace(lines[last-1])) == 0 {
		last--
	}
	if e.Pos.Line != last || last < 2 {
		return nil, nil, err
	}
	cut := bytes.Join(lines[:last-1], nil)
	p, notes, err2 := parseOnce(name, cut, lenient)
	if err2 != nil {
		return nil, nil, err
	}
	notes = append(notes, parsers.LineNote{Line: last, Reason: ReasonCut, Skipped: true, Detail: "the last line, cut in the middle: " + e.Msg})
	return p, notes, nil
}

// parseOnce is parse without its retry.
func parseOnce(name string, data []byte, lenient bool) (*Page, []parsers.LineNote, error) {
	p, err := parsePage(name, data, lenient)
	if err != nil {
		return nil, nil, err
	}
	notes := p.notes
	p.notes = nil
	sort.SliceStable(notes, func(i, j int) bool { return notes[i].Line < notes[j].Line })
	return p, notes, nil
}

// parsePage parses a page, noting what ParseLenient takes of a cut one.
func parsePage(name string, data []byte, lenient bool) (*Page, error) {
	whole := parsers.Pos{File: name}
	if len(data) > MaxSize {
		return nil, parsers.Errorf(whole, "metrics page of %d bytes exceeds the limit of %d", len(data), MaxSize)
	}
	p := &Page{File: name, byName: map[string]*Family{}, lenient: lenient}
	text := bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	var err error
	if text, err = blankHTTP(name, text, p); err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(text)) == 0 {
		return nil, parsers.Errorf(whole, "empty metrics page")
	}
	fams, err := decode(text)
	if err != nil {
		var pe expfmt.ParseError
		if errors.As(err, &pe) {
			return nil, parsers.Errorf(parsers.Pos{File: name, Line: pe.Line}, "invalid metrics text: %s", pe.Msg)
		}
		return nil, parsers.Errorf(whole, "invalid metrics text: %v", err)
	}
	idx, heads, err := indexLines(name, text)
	if err != nil {
		return nil, err
	}
	if err := p.build(name, fams, idx, heads); err != nil {
		return nil, err
	}
	return p, nil
}

// decode runs the Prometheus text parser. A panic inside it is turned into
// an error so that hostile input cannot crash the caller.
func decode(text []byte) (fams map[string]*dto.MetricFamily, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("text parser failed: %v", r)
		}
	}()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	return parser.TextToMetricFamilies(bytes.NewReader(text))
}

// blankHTTP replaces an HTTP status line and headers at the start of text
// by empty lines, so that line numbers stay those of the file.
func blankHTTP(name string, text []byte, p *Page) ([]byte, error) {
	if !bytes.HasPrefix(text, []byte("HTTP/")) {
		return text, nil
	}
	out := bytes.Clone(text)
	line, off := 0, 0
	for off < len(out) {
		line++
		end := bytes.IndexByte(out[off:], '\n')
		if end < 0 {
			return nil, parsers.Errorf(parsers.Pos{File: name, Line: line}, "HTTP response has no body (truncated after the headers)")
		}
		l := bytes.TrimSuffix(out[off:off+end], []byte("\r"))
		if line == 1 {
			f := strings.Fields(string(l))
			if len(f) < 2 {
				return nil, parsers.Errorf(parsers.Pos{File: name, Line: 1}, "malformed HTTP status line")
			}
			code, err := strconv.Atoi(f[1])
			if err != nil || code < 100 || code > 599 {
				return nil, parsers.Errorf(parsers.Pos{File: name, Line: 1}, "malformed HTTP status code %q", f[1])
			}
			p.StatusCode = code
		}
		empty := len(l) == 0
		for i := off; i < off+end; i++ {
			out[i] = ' '
		}
		off += end + 1
		if empty && line > 1 {
			return out, nil
		}
	}
	return nil, parsers.Errorf(parsers.Pos{File: name, Line: line}, "HTTP response has no body (truncated after the headers)")
}

// lineInfo is where a sample was found.
type lineInfo struct {
	line int
	raw  string
}

// sampleKey is the identity of one sample line: its name and sorted labels,
// with le and quantile values in canonical float form.
func sampleKey(name string, labels [][2]string) string {
	sort.Slice(labels, func(i, j int) bool { return labels[i][0] < labels[j][0] })
	var b strings.Builder
	b.WriteString(name)
	for _, l := range labels {
		b.WriteByte(0xff)
		b.WriteString(l[0])
		b.WriteByte('=')
		v := l[1]
		if l[0] == model.BucketLabel || l[0] == model.QuantileLabel {
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				v = formatFloat(f)
			}
		}
		b.WriteString(v)
	}
	return b.String()
}

func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case math.IsNaN(f):
		return "NaN"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// indexLines finds the line of every sample in text, which the text parser
// has already accepted, and the line of the first HELP or TYPE comment of
// every family. A series given twice is an error at its second line.
func indexLines(name string, text []byte) (map[string]lineInfo, map[string]int, error) {
	idx := map[string]lineInfo{}
	heads := map[string]int{}
	lineNo := 0
	for len(text) > 0 {
		var line []byte
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			line, text = text, nil
		}
		lineNo++
		s := strings.TrimLeft(string(line), " \t")
		if s == "" {
			continue
		}
		if s[0] == '#' {
			f := strings.Fields(s)
			if len(f) >= 3 && f[0] == "#" && (f[1] == "HELP" || f[1] == "TYPE") {
				if _, ok := heads[f[2]]; !ok {
					heads[f[2]] = lineNo
				}
			}
			continue
		}
		if quotedName(s) {
			return nil, nil, parsers.Errorf(parsers.Pos{File: name, Line: lineNo},
				"metric or label name in braces or quotes (the UTF-8 names of text format 1.0.0): kube-proxy serves format 0.0.4, whose names are bare")
		}
		n, labels, ok := scanSample(s)
		if !ok {
			continue
		}
		k := sampleKey(n, labels)
		if prev, dup := idx[k]; dup {
			return nil, nil, parsers.Errorf(parsers.Pos{File: name, Line: lineNo}, "duplicate sample %s (first at line %d)", describe(n, labels), prev.line)
		}
		idx[k] = lineInfo{line: lineNo, raw: strings.TrimRight(string(line), "\r")}
	}
	return idx, heads, nil
}

func describe(name string, labels [][2]string) string {
	if len(labels) == 0 {
		return name
	}
	parts := make([]string, len(labels))
	for i, l := range labels {
		parts[i] = l[0] + "=" + strconv.Quote(l[1])
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

// quotedName reports whether a sample line, which the text parser
// accepted, uses the UTF-8 name syntax of text format 1.0.0: the metric
// name inside the braces, or a metric or label name with quotes. The text
// parser reads it; scanSample does not, and the sample would have no
// line.
func quotedName(s string) bool {
	if s[0] == '{' {
		return true
	}
	i := strings.IndexAny(s, "{ \t")
	if i < 0 {
		return strings.Contains(s, `"`)
	}
	if strings.Contains(s[:i], `"`) {
		return true
	}
	if s[i] != '{' {
		return false
	}
	// A label name starts after '{' or ',' (and blanks); its value, in
	// quotes, after '='.
	for i++; i < len(s); {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i >= len(s) || s[i] == '}' {
			return false
		}
		j := strings.IndexAny(s[i:], `="`)
		if j < 0 || s[i+j] == '"' {
			return true
		}
		i += j + 1
		// Skip the quoted value.
		for i < len(s) && s[i] != '"' {
			i++
		}
		for i++; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' {
				i++
			}
		}
		for i++; i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == ','); i++ {
		}
	}
	return false
}

// scanSample reads the name and labels of a sample line in legacy text
// format (already validated by the text parser).
func scanSample(s string) (string, [][2]string, bool) {
	// The name ends where a byte that cannot be in it starts the labels,
	// blanks or the value ("name+1" is name with the value +1).
	i := 0
	for i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || s[i] == '_' || s[i] == ':' || i > 0 && s[i] >= '0' && s[i] <= '9') {
		i++
	}
	name := s[:i]
	if name == "" {
		return "", nil, false
	}
	var labels [][2]string
	// The text parser takes blanks between the name and its labels.
	j := i
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	if j < len(s) && s[j] == '{' {
		i = j + 1
		for {
			for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
				i++
			}
			if i >= len(s) {
				return "", nil, false
			}
			if s[i] == '}' {
				break
			}
			j := strings.IndexByte(s[i:], '=')
			if j < 0 {
				return "", nil, false
			}
			lname := strings.TrimRight(s[i:i+j], " \t")
			i += j + 1
			for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
				i++
			}
			if i >= len(s) || s[i] != '"' {
				return "", nil, false
			}
			i++
			var v strings.Builder
			closed := false
			for i < len(s) {
				c := s[i]
				if c == '\\' && i+1 < len(s) {
					switch s[i+1] {
					case 'n':
						v.WriteByte('\n')
					default:
						v.WriteByte(s[i+1])
					}
					i += 2
					continue
				}
				if c == '"' {
					closed = true
					i++
					break
				}
				v.WriteByte(c)
				i++
			}
			if !closed {
				return "", nil, false
			}
			labels = append(labels, [2]string{lname, v.String()})
			for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
				i++
			}
			if i < len(s) && s[i] == ',' {
				i++
			}
		}
	}
	return name, labels, true
}

// build turns the text parser's families into the page, attaching lines.
func (p *Page) build(name string, fams map[string]*dto.MetricFamily, idx map[string]lineInfo, heads map[string]int) error {
	// Of several errors, the first of the page, whatever the order of
	// fams.
	var firstErr error
	keep := func(err error) {
		var a, b *parsers.Error
		if firstErr == nil || errors.As(err, &a) && errors.As(firstErr, &b) && a.Pos.Line < b.Pos.Line {
			firstErr = err
		}
	}
	for _, mf := range fams {
		f := &Family{Name: mf.GetName(), Type: typeName(mf.GetType())}
		f.Help, f.Stability = splitStability(mf.GetHelp())
		first := 0
		for _, m := range mf.GetMetric() {
			met, line, err := buildMetric(name, f, m, idx)
			if err != nil {
				var cut *cutError
				if !errors.As(err, &cut) {
					keep(err)
					continue
				}
				if !p.lenient {
					keep(cut.pe)
					continue
				}
				met, line = cut.met, cut.line
				f.Partial, p.Partial = true, true
				p.notes = append(p.notes, parsers.LineNote{Line: cut.at, Reason: ReasonCut, Detail: cut.err.Error()})
			}
			if first == 0 || (line > 0 && line < first) {
				first = line
			}
			f.Metrics = append(f.Metrics, met)
		}
		sort.SliceStable(f.Metrics, func(i, j int) bool { return f.Metrics[i].Pos.Line < f.Metrics[j].Pos.Line })
		if h, ok := heads[f.Name]; ok && (first == 0 || h < first) {
			first = h
		}
		f.Pos = parsers.Pos{File: name, Line: first}
		p.Families = append(p.Families, f)
		p.byName[f.Name] = f
	}
	if firstErr != nil {
		return firstErr
	}
	sort.SliceStable(p.Families, func(i, j int) bool {
		a, b := p.Families[i], p.Families[j]
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line < b.Pos.Line
		}
		return a.Name < b.Name
	})
	return nil
}

func typeName(t dto.MetricType) string {
	switch t {
	case dto.MetricType_COUNTER:
		return "counter"
	case dto.MetricType_GAUGE:
		return "gauge"
	case dto.MetricType_HISTOGRAM:
		return "histogram"
	case dto.MetricType_GAUGE_HISTOGRAM:
		return "gaugehistogram"
	case dto.MetricType_SUMMARY:
		return "summary"
	}
	return "untyped"
}

// splitStability removes the "[ALPHA] " style marker Kubernetes components
// put in front of HELP texts.
func splitStability(help string) (string, string) {
	if strings.HasPrefix(help, "[") {
		if i := strings.Index(help, "] "); i > 1 {
			level := help[1:i]
			if strings.ToUpper(level) == level && !strings.ContainsAny(level, " []") {
				return help[i+2:], level
			}
		}
	}
	return help, ""
}

func labelPairs(m *dto.Metric) ([][2]string, map[string]string) {
	var pairs [][2]string
	var lm map[string]string
	for _, lp := range m.GetLabel() {
		if lm == nil {
			lm = map[string]string{}
		}
		pairs = append(pairs, [2]string{lp.GetName(), lp.GetValue()})
		lm[lp.GetName()] = lp.GetValue()
	}
	return pairs, lm
}

func withLabel(pairs [][2]string, k, v string) [][2]string {
	out := make([][2]string, 0, len(pairs)+1)
	out = append(out, pairs...)
	return append(out, [2]string{k, v})
}

// buildMetric converts one series and returns it with its first line.
func buildMetric(file string, f *Family, m *dto.Metric, idx map[string]lineInfo) (*Metric, int, error) {
	pairs, lm := labelPairs(m)
	met := &Metric{Labels: lm}
	if m.TimestampMs != nil {
		ts := m.GetTimestampMs()
		met.TimestampMs = &ts
	}
	at := func(sample string, ps [][2]string) (lineInfo, parsers.Pos) {
		li := idx[sampleKey(sample, append([][2]string(nil), ps...))]
		return li, parsers.Pos{File: file, Line: li.line}
	}
	first, last := lineInfo{}, lineInfo{}
	note := func(li lineInfo) {
		if li.line == 0 {
			return
		}
		if first.line == 0 || li.line < first.line {
			first = li
		}
		if li.line > last.line {
			last = li
		}
	}
	series := describe(f.Name, pairs)
	switch {
	case m.Histogram != nil:
		h := m.GetHistogram()
		hist := &Histogram{Count: Float(h.GetSampleCountFloat())}
		if h.SampleCount != nil {
			hist.Count = Float(h.GetSampleCount())
		}
		hist.Sum = Float(h.GetSampleSum())
		for _, b := range h.GetBucket() {
			li, pos := at(f.Name+"_bucket", withLabel(pairs, model.BucketLabel, formatFloat(b.GetUpperBound())))
			note(li)
			c := Float(b.GetCumulativeCountFloat())
			if b.CumulativeCount != nil {
				c = Float(b.GetCumulativeCount())
			}
			hist.Buckets = append(hist.Buckets, Bucket{UpperBound: Float(b.GetUpperBound()), Count: c, Pos: pos})
		}
		sort.SliceStable(hist.Buckets, func(i, j int) bool { return hist.Buckets[i].UpperBound < hist.Buckets[j].UpperBound })
		var li lineInfo
		li, hist.CountPos = at(f.Name+"_count", pairs)
		note(li)
		hasCount := li.line > 0
		li, hist.SumPos = at(f.Name+"_sum", pairs)
		note(li)
		hasSum := li.line > 0
		pos := parsers.Pos{File: file, Line: last.line}
		for i := 1; i < len(hist.Buckets); i++ {
			if hist.Buckets[i].Count < hist.Buckets[i-1].Count {
				return nil, 0, parsers.Errorf(hist.Buckets[i].Pos, "histogram %s: bucket le=%s has fewer observations than le=%s", series, formatFloat(float64(hist.Buckets[i].UpperBound)), formatFloat(float64(hist.Buckets[i-1].UpperBound)))
			}
		}
		var lacks []string
		n := len(hist.Buckets)
		hasInf := n > 0 && math.IsInf(float64(hist.Buckets[n-1].UpperBound), 1)
		if !hasInf {
			lacks = append(lacks, "+Inf bucket")
		}
		if !hasCount {
			lacks = append(lacks, "_count")
		}
		if !hasSum {
			lacks = append(lacks, "_sum")
		}
		met.Histogram = hist
		if len(lacks) > 0 {
			err := parsers.Errorf(pos, "histogram %s has no %s (truncated page?)", series, map[string]string{"+Inf bucket": "+Inf bucket", "_count": "_count sample", "_sum": "_sum sample"}[lacks[0]])
			if first.line == 0 {
				return nil, 0, err // no line of it found: nothing to keep
			}
			hist.Partial, hist.NoSum = true, !hasSum
			switch {
			case !hasInf:
				hist.Count = 0
			case !hasCount:
				hist.Count = hist.Buckets[n-1].Count
			}
			if !hasSum {
				hist.Sum = 0
			}
			met.Pos, met.Raw = parsers.Pos{File: file, Line: first.line}, first.raw
			return nil, 0, &cutError{err: fmt.Errorf("histogram %s lacks its %s: read as far as it goes", series, andList(lacks)), pe: err, met: met, line: first.line, at: max(last.line, 1)}
		}
	case m.Summary != nil:
		s := m.GetSummary()
		sum := &Summary{Count: Float(s.GetSampleCount()), Sum: Float(s.GetSampleSum())}
		for _, q := range s.GetQuantile() {
			li, pos := at(f.Name, withLabel(pairs, model.QuantileLabel, formatFloat(q.GetQuantile())))
			note(li)
			sum.Quantiles = append(sum.Quantiles, QuantileVal{Quantile: Float(q.GetQuantile()), Value: Float(q.GetValue()), Pos: pos})
		}
		li, _ := at(f.Name+"_count", pairs)
		note(li)
		hasCount := li.line > 0
		li, _ = at(f.Name+"_sum", pairs)
		note(li)
		met.Summary = sum
		if !hasCount || li.line == 0 {
			err := parsers.Errorf(parsers.Pos{File: file, Line: last.line}, "summary %s lacks its _count or _sum sample (truncated page?)", series)
			if first.line == 0 {
				return nil, 0, err
			}
			sum.Partial = true
			sum.Count, sum.Sum = 0, 0
			met.Pos, met.Raw = parsers.Pos{File: file, Line: first.line}, first.raw
			return nil, 0, &cutError{err: fmt.Errorf("summary %s lacks its _count or _sum sample: read as far as it goes", series), pe: err, met: met, line: first.line, at: max(last.line, 1)}
		}
	default:
		var v float64
		switch {
		case m.Counter != nil:
			v = m.GetCounter().GetValue()
		case m.Gauge != nil:
			v = m.GetGauge().GetValue()
		default:
			v = m.GetUntyped().GetValue()
		}
		fv := Float(v)
		met.Value = &fv
		li, _ := at(f.Name, pairs)
		note(li)
	}
	met.Pos = parsers.Pos{File: file, Line: first.line}
	met.Raw = first.raw
	return met, first.line, nil
}

// andList joins words with commas and "and".
func andList(w []string) string {
	if len(w) < 2 {
		return strings.Join(w, "")
	}
	return strings.Join(w[:len(w)-1], ", ") + " and " + w[len(w)-1]
}

// cutError is the error of a histogram or summary cut short: Parse
// returns pe, ParseLenient keeps met (its first line line) and notes err
// on line at.
type cutError struct {
	err  error
	pe   error
	met  *Metric
	line int
	at   int
}

func (e *cutError) Error() string { return e.pe.Error() }
func (e *cutError) Unwrap() error { return e.pe }

// Family returns the family called name, or nil.
func (p *Page) Family(name string) *Family {
	if p.byName == nil {
		p.byName = map[string]*Family{}
		for _, f := range p.Families {
			p.byName[f.Name] = f
		}
	}
	return p.byName[name]
}

// Quantile estimates the q-quantile (0 ≤ q ≤ 1) of the observations in
// cumulative buckets the way PromQL's histogram_quantile does: find the
// bucket holding the rank q·count and interpolate linearly inside it,
// taking 0 as the lower bound of the first bucket when its upper bound is
// positive. A quantile falling in the +Inf bucket is the upper bound of the
// last finite bucket. ok is false when the estimate is undefined: fewer than
// two buckets, no +Inf bucket, no observations, or q outside [0, 1]
// (histogram_quantile returns NaN or ±Inf there).
func Quantile(q float64, buckets []Bucket) (v float64, ok bool) {
	n := len(buckets)
	if n < 2 || math.IsNaN(q) || q < 0 || q > 1 || !math.IsInf(float64(buckets[n-1].UpperBound), 1) {
		return 0, false
	}
	// histogram_quantile tolerates non-monotonic counts by raising each to
	// the running maximum.
	counts := make([]float64, n)
	max := 0.0
	for i, b := range buckets {
		c := float64(b.Count)
		if c > max {
			max = c
		}
		counts[i] = max
	}
	total := counts[n-1]
	if total == 0 || math.IsNaN(total) {
		return 0, false
	}
	rank := q * total
	b := sort.SearchFloat64s(counts, rank)
	if b >= n {
		b = n - 1
	}
	if b == n-1 {
		return float64(buckets[n-2].UpperBound), true
	}
	if b == 0 && float64(buckets[0].UpperBound) <= 0 {
		return float64(buckets[0].UpperBound), true
	}
	start, end := 0.0, float64(buckets[b].UpperBound)
	count := counts[b]
	if b > 0 {
		start = float64(buckets[b-1].UpperBound)
		count -= counts[b-1]
		rank -= counts[b-1]
	}
	if count == 0 {
		return end, true
	}
	return start + (end-start)*(rank/count), true
}
