package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/proxyscan/proxyscan/parsers"
)

var reSHA256 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Parse reads a manifest.json. Every problem is a *parsers.Error naming
// name, the line and the JSON path ($.sources[3].sha256); several are
// returned as a parsers.ErrorList. Fields unknown to this schema version
// are ignored (fields are only ever added within a version).
func Parse(name string, data []byte) (*Manifest, error) {
	file := parsers.Pos{File: name, Line: 1}
	if len(data) > MaxSize {
		return nil, parsers.Errorf(file, "manifest too large (%d bytes, limit %d)", len(data), MaxSize)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, parsers.Errorf(file, "empty manifest")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, syntaxError(name, data, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		off := int(dec.InputOffset())
		return nil, parsers.Errorf(parsers.Pos{File: name, Line: lineAt(data, off)}, "data after the manifest object")
	}
	p := &parser{name: name, lines: indexLines(data)}
	m := p.manifest(tree)
	if len(p.errs) > 0 {
		p.errs.Sort()
		return nil, p.errs
	}
	m.Pos = file
	return m, nil
}

type parser struct {
	name  string
	lines map[string]int
	errs  parsers.ErrorList
}

func (p *parser) pos(jpath string) parsers.Pos {
	// A missing field is reported at the object that lacks it.
	l, at := 0, jpath
	for l == 0 && at != "" {
		l = p.lines[at]
		if i := strings.LastIndexAny(at, ".["); i > 0 && l == 0 {
			at = at[:i]
		} else if l == 0 {
			break
		}
	}
	if l == 0 {
		l = 1
	}
	return parsers.Pos{File: p.name, Line: l, Path: jpath}
}

func (p *parser) errorf(jpath, format string, args ...any) {
	if len(p.errs) < 100 {
		p.errs = append(p.errs, parsers.Errorf(p.pos(jpath), format, args...))
	}
}

func (p *parser) manifest(tree any) *Manifest {
	obj, ok := tree.(map[string]any)
	if !ok {
		p.errorf("$", "want a JSON object, got %s", typeName(tree))
		return nil
	}
	m := &Manifest{}
	sv, ok := obj["schema"]
	if !ok {
		p.errorf("$", "missing schema: not a proxyscan bundle manifest")
		return nil
	}
	schema, ok := p.int(sv, "$.schema", 0, 1<<31)
	if !ok {
		return nil
	}
	if schema != Schema {
		if schema > Schema {
			p.errorf("$.schema", "bundle schema %d is newer than this proxyscan reads (%d): upgrade proxyscan", schema, Schema)
		} else {
			p.errorf("$.schema", "unknown bundle schema %d (want %d)", schema, Schema)
		}
		return nil
	}
	m.Schema = int(schema)
	if t, ok := obj["tool"]; ok {
		if to, ok := p.object(t, "$.tool"); ok {
			m.Tool.Name = p.optString(to, "name", "$.tool")
			m.Tool.Version = p.optString(to, "version", "$.tool")
		}
	}
	m.Host = p.optString(obj, "host", "$")
	m.Kernel = p.optString(obj, "kernel", "$")
	if v, ok := obj["node_ips"]; ok && v != nil {
		if arr, ok := p.array(v, "$.node_ips"); ok {
			m.NodeIPs = []netip.Addr{}
			for i, e := range arr {
				jp := fmt.Sprintf("$.node_ips[%d]", i)
				s, ok := p.string(e, jp)
				if !ok {
					continue
				}
				a, err := netip.ParseAddr(s)
				if err != nil {
					p.errorf(jp, "invalid IP address %q", s)
					continue
				}
				m.NodeIPs = append(m.NodeIPs, a)
			}
		}
	}
	if v, ok := obj["collected_at"]; !ok {
		p.errorf("$", "missing collected_at")
	} else if s, ok := p.string(v, "$.collected_at"); ok {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			p.errorf("$.collected_at", "collected_at %q is not an RFC 3339 time", s)
		}
		m.CollectedAt = t
	}
	if v, ok := obj["redacted"]; ok {
		if b, ok := v.(bool); ok {
			m.Redacted = b
		} else {
			p.errorf("$.redacted", "want true or false, got %s", typeName(v))
		}
	}
	v, ok := obj["sources"]
	if !ok {
		p.errorf("$", "missing sources")
		return m
	}
	arr, ok := p.array(v, "$.sources")
	if !ok {
		return m
	}
	if len(arr) > MaxSources {
		p.errorf("$.sources", "%d sources, over the limit of %d", len(arr), MaxSources)
		return m
	}
	m.Sources = []Source{}
	names := map[string]int{}
	files := map[string]int{}
	for i, e := range arr {
		jp := fmt.Sprintf("$.sources[%d]", i)
		s, ok := p.source(e, jp)
		if !ok {
			continue
		}
		if j, dup := names[s.Name]; dup {
			p.errorf(jp+".name", "source %q is listed twice (also $.sources[%d])", s.Name, j)
		}
		names[s.Name] = i
		if s.File != "" {
			if j, dup := files[s.File]; dup {
				p.errorf(jp+".file", "file %q is written by two sources (also $.sources[%d])", s.File, j)
			}
			files[s.File] = i
		}
		m.Sources = append(m.Sources, s)
	}
	return m
}

func (p *parser) source(v any, jp string) (Source, bool) {
	obj, ok := p.object(v, jp)
	if !ok {
		return Source{}, false
	}
	s := Source{Pos: p.pos(jp)}
	s.Name = p.optString(obj, "name", jp)
	if s.Name == "" {
		p.errorf(jp, "source without a name")
	}
	s.Method = p.optString(obj, "method", jp)
	if !methods[s.Method] {
		p.errorf(jp+".method", "unknown method %q (want exec, netlink, file, http or kube-api)", s.Method)
	}
	s.Status = p.optString(obj, "status", jp)
	if !statuses[s.Status] {
		p.errorf(jp+".status", "unknown status %q (want ok, partial, skipped or failed)", s.Status)
	}
	if c, ok := obj["command"]; ok && c != nil {
		if arr, ok := p.array(c, jp+".command"); ok {
			for i, a := range arr {
				if str, ok := p.string(a, fmt.Sprintf("%s.command[%d]", jp, i)); ok {
					s.Command = append(s.Command, str)
				}
			}
		}
	}
	s.Path = p.optString(obj, "path", jp)
	s.File = p.optString(obj, "file", jp)
	if s.File != "" {
		if err := checkFile(s.File); err != nil {
			p.errorf(jp+".file", "file %q: %v", s.File, err)
		}
	}
	if e, ok := obj["exit_status"]; ok && e != nil {
		if n, ok := p.int(e, jp+".exit_status", -1, 255); ok {
			x := int(n)
			s.ExitStatus = &x
		}
	}
	if h, ok := obj["http_status"]; ok && h != nil {
		if n, ok := p.int(h, jp+".http_status", 0, 999); ok {
			s.HTTPStatus = int(n)
		}
	}
	s.Error = p.optString(obj, "error", jp)
	if n, ok := obj["notes"]; ok && n != nil {
		if arr, ok := p.array(n, jp+".notes"); ok {
			for i, a := range arr {
				if str, ok := p.string(a, fmt.Sprintf("%s.notes[%d]", jp, i)); ok {
					s.Notes = append(s.Notes, str)
				}
			}
		}
	}
	if d, ok := obj["duration_ms"]; ok {
		if n, ok := p.int(d, jp+".duration_ms", 0, 1<<53); ok {
			s.DurationMS = n
		}
	}
	if b, ok := obj["bytes"]; ok {
		if n, ok := p.int(b, jp+".bytes", 0, 1<<53); ok {
			s.Bytes = n
		}
	}
	s.SHA256 = p.optString(obj, "sha256", jp)
	if s.SHA256 != "" && !reSHA256.MatchString(s.SHA256) {
		p.errorf(jp+".sha256", "sha256 %q is not 64 lower-case hex digits", s.SHA256)
	}
	switch {
	case s.File == "" && (s.Bytes != 0 || s.SHA256 != ""):
		p.errorf(jp, "source %q has bytes or sha256 but no file", s.Name)
	case s.File != "" && s.SHA256 == "":
		p.errorf(jp, "source %q wrote %s but has no sha256", s.Name, s.File)
	case s.File != "" && s.Status != StatusOK && s.Status != StatusPartial:
		p.errorf(jp+".status", "source %q is %s but wrote %s", s.Name, s.Status, s.File)
	case (s.Status == StatusSkipped || s.Status == StatusFailed) && s.Error == "":
		p.errorf(jp+".error", "source %q is %s without an error saying why", s.Name, s.Status)
	}
	return s, true
}

// checkFile validates a bundle-relative file name.
func checkFile(f string) error {
	switch {
	case strings.ContainsRune(f, 0) || strings.Contains(f, "\\"):
		return errors.New("invalid characters")
	case strings.HasPrefix(f, "/"):
		return errors.New("absolute path")
	case path.Clean(f) != f || f == "." || strings.HasPrefix(f, "../") || f == "..":
		return errors.New("not a clean path inside the bundle")
	}
	return nil
}

func (p *parser) object(v any, jp string) (map[string]any, bool) {
	o, ok := v.(map[string]any)
	if !ok {
		p.errorf(jp, "want an object, got %s", typeName(v))
	}
	return o, ok
}

func (p *parser) array(v any, jp string) ([]any, bool) {
	a, ok := v.([]any)
	if !ok {
		p.errorf(jp, "want an array, got %s", typeName(v))
	}
	return a, ok
}

func (p *parser) string(v any, jp string) (string, bool) {
	s, ok := v.(string)
	if !ok {
		p.errorf(jp, "want a string, got %s", typeName(v))
	}
	return s, ok
}

// optString returns obj[key] as a string ("" when absent or null).
func (p *parser) optString(obj map[string]any, key, jp string) string {
	v, ok := obj[key]
	if !ok || v == nil {
		return ""
	}
	s, _ := p.string(v, jp+"."+key)
	return s
}

func (p *parser) int(v any, jp string, min, max int64) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		p.errorf(jp, "want an integer, got %s", typeName(v))
		return 0, false
	}
	i, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil {
		p.errorf(jp, "want an integer, got %s", n)
		return 0, false
	}
	if i < min && min == 0 {
		p.errorf(jp, "want a non-negative integer, got %d", i)
		return 0, false
	}
	if i < min || i > max {
		p.errorf(jp, "%d is out of range [%d, %d]", i, min, max)
		return 0, false
	}
	return i, true
}

func typeName(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string " + strconv.Quote(truncate(x, 40))
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func syntaxError(name string, data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	off := len(data)
	switch {
	case errors.As(err, &se):
		off = int(se.Offset)
	case errors.As(err, &te):
		off = int(te.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return parsers.Errorf(parsers.Pos{File: name, Line: lineAt(data, len(data))}, "truncated manifest: unexpected end of JSON")
	}
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "json: ")
	return parsers.Errorf(parsers.Pos{File: name, Line: lineAt(data, off)}, "invalid JSON: %s", msg)
}

// lineAt returns the 1-based line of byte offset off.
func lineAt(data []byte, off int) int {
	if off > len(data) {
		off = len(data)
	}
	if off < 0 {
		off = 0
	}
	return 1 + bytes.Count(data[:off], []byte("\n"))
}

// frame is an open object or array while indexing lines.
type frame struct {
	array   bool
	index   int
	key     string
	base    string
	wantKey bool // inside an object, the next token is a key
}

// afterValue advances the innermost container past one value.
func afterValue(stack []*frame) {
	if len(stack) == 0 {
		return
	}
	f := stack[len(stack)-1]
	if f.array {
		f.index++
	} else {
		f.wantKey = true
	}
}

// indexLines maps the JSON path of every value in data to the line it
// starts on. data is valid JSON (it decoded).
func indexLines(data []byte) map[string]int {
	out := map[string]int{}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []*frame
	cur := func() string {
		if len(stack) == 0 {
			return "$"
		}
		f := stack[len(stack)-1]
		if f.array {
			return f.base + "[" + strconv.Itoa(f.index) + "]"
		}
		return f.base + "." + f.key
	}
	valueStart := func(before int64) int {
		i := int(before)
		for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n' || data[i] == ':' || data[i] == ',') {
			i++
		}
		return lineAt(data, i)
	}
	for {
		before := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		if len(stack) > 0 {
			f := stack[len(stack)-1]
			if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
				stack = stack[:len(stack)-1]
				afterValue(stack)
				continue
			}
			if !f.array && f.wantKey {
				f.key, _ = tok.(string)
				f.wantKey = false
				continue
			}
		}
		jp := cur()
		out[jp] = valueStart(before)
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{base: jp, wantKey: true})
		case json.Delim('['):
			stack = append(stack, &frame{base: jp, array: true})
		default:
			afterValue(stack)
		}
	}
}
