package healthz

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/proxyscan/proxyscan/parsers"
)

// Shape tells which body format a response used.
type Shape string

// The body shapes.
const (
	// ShapeLegacy is the hand-written body of kube-proxy up to 1.32, with
	// Go time.String() times.
	ShapeLegacy Shape = "legacy"
	// ShapeStatus is the json.Marshal body of 1.33 and later, with RFC
	// 3339 times and per-family status.
	ShapeStatus Shape = "status"
)

// Health is a parsed health response.
type Health struct {
	// File is the name the response was parsed from.
	File string `json:"file"`
	// Shape is the body format.
	Shape Shape `json:"shape"`
	// StatusCode is the HTTP status code when the input carried the HTTP
	// status line, 0 otherwise.
	StatusCode int `json:"statusCode,omitempty"`
	// StatusLine is that HTTP status line, e.g. "HTTP/1.1 503 Service Unavailable".
	StatusLine string `json:"statusLine,omitempty"`
	// Headers are the HTTP response headers, in input order.
	Headers []Header `json:"headers,omitempty"`
	// LastUpdated is the body's lastUpdated time. A healthy kube-proxy
	// reports the current time here; an unhealthy one the time of its last
	// successful sync (the zero time when it never synced).
	LastUpdated Time `json:"lastUpdated"`
	// CurrentTime is the body's currentTime.
	CurrentTime Time `json:"currentTime"`
	// NodeEligible is the body's nodeEligible, nil when absent (/livez, and
	// /healthz before 1.28).
	NodeEligible *bool `json:"nodeEligible,omitempty"`
	// Healthy is the body's overall healthy field (1.33+), nil when absent.
	Healthy *bool `json:"healthy,omitempty"`
	// Families is the per-IP-family status (1.33+), sorted by family.
	Families []Family `json:"families,omitempty"`
	// Body is the JSON body as read.
	Body string `json:"body"`
	// BodyLine is the 1-based line where the body starts.
	BodyLine int `json:"bodyLine"`
}

// Header is one HTTP response header.
type Header struct {
	// Name is the header name as sent; Value its value without blanks
	// around it.
	Name  string `json:"name"`
	Value string `json:"value"`
	// Pos is the header's line.
	Pos parsers.Pos `json:"pos"`
}

// Family is the health of the proxier of one IP family (1.33+).
type Family struct {
	// Family is "IPv4" or "IPv6" (the key in the body's status object).
	Family string `json:"family"`
	// LastUpdated is the last time that proxier synced successfully.
	LastUpdated Time `json:"lastUpdated"`
	// Healthy is that proxier's health.
	Healthy bool `json:"healthy"`
	// Pos is the JSON path of the family's entry.
	Pos parsers.Pos `json:"pos"`
}

// Time is a time read from a health body: the parsed instant, the text as
// printed and, for Go time.String() values, the monotonic clock reading
// ("m=+202.631797660"), which is the process uptime in seconds.
type Time struct {
	// Time is the parsed instant; the zero time when the body said so
	// ("0001-01-01 00:00:00 +0000 UTC" or "0001-01-01T00:00:00Z").
	Time time.Time `json:"time"`
	// Text is the value as it appeared in the body.
	Text string `json:"text"`
	// Monotonic is the monotonic clock reading in seconds, when present.
	Monotonic *float64 `json:"monotonic,omitempty"`
	// Pos is the JSON path of the value.
	Pos parsers.Pos `json:"pos"`
}

// IsZero reports whether t is the zero time (a proxier that never synced).
func (t Time) IsZero() bool { return t.Time.IsZero() }

// MaxSize is the largest input Parse accepts; a health response is a few
// hundred bytes.
const MaxSize = 1 << 20

// Parse parses a kube-proxy /healthz or /livez response read from the file
// called name: a JSON body, optionally preceded by an HTTP status line and
// headers. Errors name the line, or the JSON path of a bad field.
func Parse(name string, data []byte) (*Health, error) {
	whole := parsers.Pos{File: name}
	if len(data) > MaxSize {
		return nil, parsers.Errorf(whole, "health response of %d bytes exceeds the limit of %d", len(data), MaxSize)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	h := &Health{File: name}
	body, bodyLine, err := splitHTTP(name, data, h)
	if err != nil {
		return nil, err
	}
	h.BodyLine = bodyLine
	h.Body = strings.TrimRight(string(body), "\r\n")
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, parsers.Errorf(parsers.Pos{File: name, Line: bodyLine}, "empty health response body")
	}
	if trimmed[0] != '{' {
		return nil, parsers.Errorf(parsers.Pos{File: name, Line: bodyLine}, "health response body is not a JSON object")
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if err := dec.Decode(&raw); err != nil {
		return nil, jsonError(name, body, bodyLine, trimmed, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, parsers.Errorf(parsers.Pos{File: name, Line: bodyLine + lineOf(body, trimmed, int(dec.InputOffset()))}, "unexpected data after the health response object")
	}
	if err := h.fill(name, raw); err != nil {
		return nil, err
	}
	return h, nil
}

// splitHTTP removes an HTTP status line and headers from data, recording
// them in h, and returns the body and the 1-based line it starts on.
func splitHTTP(name string, data []byte, h *Health) ([]byte, int, error) {
	if !bytes.HasPrefix(data, []byte("HTTP/")) {
		return data, 1, nil
	}
	line := 0
	for {
		line++
		var l []byte
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			l, data = data, nil
		} else {
			l, data = data[:i], data[i+1:]
		}
		l = bytes.TrimSuffix(l, []byte("\r"))
		pos := parsers.Pos{File: name, Line: line}
		if line == 1 {
			parts := strings.Fields(string(l))
			if len(parts) < 2 {
				return nil, 0, parsers.Errorf(pos, "malformed HTTP status line %q", truncate(string(l)))
			}
			code, err := strconv.Atoi(parts[1])
			if err != nil || code < 100 || code > 599 {
				return nil, 0, parsers.Errorf(pos, "malformed HTTP status code %q", truncate(parts[1]))
			}
			h.StatusCode, h.StatusLine = code, string(l)
		} else if len(l) == 0 {
			return data, line + 1, nil
		} else {
			k, v, ok := strings.Cut(string(l), ":")
			if !ok || strings.TrimSpace(k) == "" || strings.ContainsAny(k, " \t") {
				return nil, 0, parsers.Errorf(pos, "malformed HTTP header %q", truncate(string(l)))
			}
			h.Headers = append(h.Headers, Header{Name: k, Value: strings.TrimSpace(v), Pos: pos})
		}
		if data == nil {
			return nil, 0, parsers.Errorf(parsers.Pos{File: name, Line: line}, "HTTP response has no body (truncated after the headers)")
		}
	}
}

func (h *Health) fill(name string, raw map[string]json.RawMessage) error {
	path := func(p string) parsers.Pos { return parsers.Pos{File: name, Path: p} }
	known := map[string]bool{"lastUpdated": true, "currentTime": true, "nodeEligible": true, "healthy": true, "status": true}
	var unknown []string
	for k := range raw {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return parsers.Errorf(path("$."+unknown[0]), "unknown field %q in health response", unknown[0])
	}
	for _, k := range []string{"lastUpdated", "currentTime"} {
		if _, ok := raw[k]; !ok {
			return parsers.Errorf(path("$"), "health response has no %q field", k)
		}
	}
	var err error
	if h.LastUpdated, err = parseTime(raw["lastUpdated"], path("$.lastUpdated")); err != nil {
		return err
	}
	if h.CurrentTime, err = parseTime(raw["currentTime"], path("$.currentTime")); err != nil {
		return err
	}
	if v, ok := raw["nodeEligible"]; ok {
		b, err := parseBool(v, path("$.nodeEligible"))
		if err != nil {
			return err
		}
		h.NodeEligible = &b
	}
	if v, ok := raw["healthy"]; ok {
		b, err := parseBool(v, path("$.healthy"))
		if err != nil {
			return err
		}
		h.Healthy = &b
	}
	h.Shape = ShapeLegacy
	if h.Healthy != nil || raw["status"] != nil || isRFC3339(h.CurrentTime.Text) {
		h.Shape = ShapeStatus
	}
	if v, ok := raw["status"]; ok {
		var fams map[string]map[string]json.RawMessage
		if err := json.Unmarshal(v, &fams); err != nil {
			return parsers.Errorf(path("$.status"), "status is not an object of per-family objects")
		}
		names := make([]string, 0, len(fams))
		for f := range fams {
			names = append(names, f)
		}
		sort.Strings(names)
		for _, f := range names {
			p := "$.status." + f
			if fams[f] == nil {
				return parsers.Errorf(path(p), "status of %s is null", f)
			}
			for k := range fams[f] {
				if k != "lastUpdated" && k != "healthy" {
					return parsers.Errorf(path(p+"."+k), "unknown field %q in status of %s", k, f)
				}
			}
			fam := Family{Family: f, Pos: path(p)}
			lu, ok := fams[f]["lastUpdated"]
			if !ok {
				return parsers.Errorf(path(p), "status of %s has no \"lastUpdated\" field", f)
			}
			if fam.LastUpdated, err = parseTime(lu, path(p+".lastUpdated")); err != nil {
				return err
			}
			hv, ok := fams[f]["healthy"]
			if !ok {
				return parsers.Errorf(path(p), "status of %s has no \"healthy\" field", f)
			}
			if fam.Healthy, err = parseBool(hv, path(p+".healthy")); err != nil {
				return err
			}
			h.Families = append(h.Families, fam)
		}
	}
	return nil
}

// IsHealthy reports whether the response says kube-proxy is healthy: the
// HTTP status code when known, else the body's healthy field (1.33+), else
// the legacy rule that a healthy kube-proxy reports lastUpdated equal to
// currentTime. For /healthz, an ineligible node makes the response
// unhealthy, as kube-proxy itself does.
func (h *Health) IsHealthy() bool {
	switch {
	case h.StatusCode != 0:
		return h.StatusCode == 200
	case h.Healthy != nil:
		return *h.Healthy && (h.NodeEligible == nil || *h.NodeEligible)
	}
	return h.LastUpdated.Time.Equal(h.CurrentTime.Time) && (h.NodeEligible == nil || *h.NodeEligible)
}

// Unhealthy returns the IP families whose proxier reports unhealthy
// (1.33+ bodies only).
func (h *Health) Unhealthy() []string {
	var out []string
	for _, f := range h.Families {
		if !f.Healthy {
			out = append(out, f.Family)
		}
	}
	return out
}

// Staleness returns how far lastUpdated lags currentTime; 0 for a healthy
// body, and -1 when kube-proxy never synced (lastUpdated is the zero time).
func (h *Health) Staleness() time.Duration {
	if h.LastUpdated.IsZero() {
		return -1
	}
	return h.CurrentTime.Time.Sub(h.LastUpdated.Time)
}

// goTimeLayout is the layout of time.Time.String() without the monotonic
// clock reading.
const goTimeLayout = "2006-01-02 15:04:05.999999999 -0700 MST"

func parseTime(v json.RawMessage, pos parsers.Pos) (Time, error) {
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return Time{}, parsers.Errorf(pos, "time is not a string: %s", truncate(string(v)))
	}
	t := Time{Text: s, Pos: pos}
	text := s
	if i := strings.Index(text, " m="); i >= 0 {
		m, err := strconv.ParseFloat(text[i+3:], 64)
		if err != nil || (text[i+3] != '+' && text[i+3] != '-') {
			return Time{}, parsers.Errorf(pos, "malformed monotonic clock reading in %q", truncate(s))
		}
		t.Monotonic = &m
		text = text[:i]
	}
	var err error
	if isRFC3339(text) {
		t.Time, err = time.Parse(time.RFC3339Nano, text)
	} else {
		t.Time, err = time.Parse(goTimeLayout, text)
		if err != nil {
			// Locations without an abbreviation print the offset twice
			// ("+0530 +0530").
			t.Time, err = time.Parse("2006-01-02 15:04:05.999999999 -0700 -0700", text)
		}
	}
	if err != nil {
		return Time{}, parsers.Errorf(pos, "malformed time %q: want RFC 3339 or Go time.String() form", truncate(s))
	}
	return t, nil
}

// isRFC3339 tells the RFC 3339 form ("2006-01-02T15:04:05Z") from Go's
// time.String() form ("2006-01-02 15:04:05 +0000 UTC").
func isRFC3339(s string) bool { return len(s) > 10 && s[10] == 'T' }

func parseBool(v json.RawMessage, pos parsers.Pos) (bool, error) {
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		return false, parsers.Errorf(pos, "not a boolean: %s", truncate(string(v)))
	}
	return b, nil
}

// jsonError turns a decoding error into a positioned error on the line of
// the offending byte.
func jsonError(name string, body []byte, bodyLine int, trimmed []byte, err error) error {
	off := -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = int(se.Offset)
	case errors.As(err, &te):
		off = int(te.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		off = len(trimmed)
	}
	line := bodyLine
	if off >= 0 {
		line += lineOf(body, trimmed, off)
	}
	msg := err.Error()
	if errors.Is(err, io.ErrUnexpectedEOF) {
		msg = "unexpected end of input (truncated response)"
	}
	return parsers.Errorf(parsers.Pos{File: name, Line: line}, "invalid health response JSON: %s", msg)
}

// lineOf returns how many newlines precede offset off of trimmed, a
// sub-slice of body.
func lineOf(body, trimmed []byte, off int) int {
	start := len(body) - len(bytes.TrimLeft(body, " \t\r\n"))
	end := start + off
	if end > len(body) {
		end = len(body)
	}
	if end > 0 && end <= len(body) && off > 0 {
		end-- // the offset points just past the offending byte
	}
	return bytes.Count(body[:end], []byte("\n"))
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
