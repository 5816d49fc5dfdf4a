package klog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/proxyscan/proxyscan/parsers"
)

// Format is the logging format of an entry.
type Format string

// The entry formats.
const (
	FormatKlog Format = "klog" // klog text header
	FormatJSON Format = "json" // component-base JSON
	FormatText Format = "text" // a line in no known log format
	FormatNFT  Format = "nft"  // nft's own error output ("/dev/stdin:12:1-80: Error: ..."), with the command and marks under it
)

// Wrapper is what carried an entry's line.
type Wrapper string

// The wrappers.
const (
	WrapperNone       Wrapper = ""           // the bare log line
	WrapperCRI        Wrapper = "cri"        // CRI log file (/var/log/pods)
	WrapperTimestamps Wrapper = "timestamps" // kubectl logs --timestamps
	WrapperJournal    Wrapper = "journal"    // journalctl or systemctl status ("Feb 17 11:12:14 host kube-proxy[9234]: ")
)

// Severity is a log severity.
type Severity string

// The severities.
const (
	Info    Severity = "info"
	Warning Severity = "warning"
	Error   Severity = "error"
	Fatal   Severity = "fatal"
)

// Log is a parsed kube-proxy log.
type Log struct {
	// File is the name the log was parsed from.
	File string `json:"file"`
	// Entries are the log entries in file order.
	Entries []*Entry `json:"entries"`
	// Lines is the number of lines in the file.
	Lines int `json:"lines"`
	// Unrecognized counts the entries of format FormatText.
	Unrecognized int `json:"unrecognized"`
	// kept: read by ParseKept, which keeps only some entries.
	kept bool
}

// Entry is one log entry, possibly spanning several lines.
type Entry struct {
	// Pos is the entry's first line; EndLine its last.
	Pos     parsers.Pos `json:"pos"`
	EndLine int         `json:"endLine"`
	// Raw is the entry's lines as in the file, joined by "\n".
	Raw string `json:"raw"`
	// Format is the logging format.
	Format Format `json:"format"`
	// Wrapper is what carried the line; Stream the CRI stream (stdout or
	// stderr); Partial is true when a CRI entry ends with a partial record
	// (the file was cut).
	Wrapper Wrapper `json:"wrapper,omitempty"`
	Stream  string  `json:"stream,omitempty"`
	Partial bool    `json:"partial,omitempty"`
	// Host is the host the journal's prefix names (WrapperJournal).
	Host string `json:"host,omitempty"`
	// Pod and Container are the pod and container kubectl logs --prefix
	// names before the line ("[pod/kube-proxy-7xk2p/kube-proxy] ").
	Pod       string `json:"pod,omitempty"`
	Container string `json:"container,omitempty"`
	// Truncated is true when a line of the entry was cut by whatever
	// printed it, ending in "…" (systemctl status shortens log lines to
	// the terminal's width): the rest of that line is not known.
	Truncated bool `json:"truncated,omitempty"`
	// Time is the full time of the entry when known: the CRI or kubectl
	// timestamp, or the JSON ts. Zero for bare klog lines, whose header has
	// no year; see [Entry.When].
	Time time.Time `json:"time,omitzero"`
	// Header is the klog header time as printed ("0302 08:15:00.123456").
	Header string `json:"header,omitempty"`
	// Severity is the entry's severity (empty for FormatText).
	Severity Severity `json:"severity,omitempty"`
	// Verbosity is the JSON "v" field.
	Verbosity *int `json:"v,omitempty"`
	// PID is the klog thread id field (the process id in containers).
	PID int `json:"pid,omitempty"`
	// Source is the source location, "server.go:650" (klog) or the JSON
	// caller "app/server.go:650".
	Source string `json:"source,omitempty"`
	// Logger is the JSON "logger" name or the klog logger="..." value.
	Logger string `json:"logger,omitempty"`
	// Message is the log message (unquoted for structured entries).
	Message string `json:"message"`
	// Structured is true for InfoS/ErrorS style entries: a quoted message
	// followed by key/value pairs.
	Structured bool `json:"structured,omitempty"`
	// KV are the key/value pairs in order; values are unquoted strings or
	// the JSON text of non-string values.
	KV []KV `json:"kv,omitempty"`
	// Text is the entry's payload after the header: what the patterns of
	// [Known] are matched against. For JSON entries, the message and the
	// key/values rendered the klog way.
	Text string `json:"-"`
}

// KV is a key/value pair of a structured entry.
type KV struct {
	// Key is the key as printed (kube-proxy has keys with a space, such
	// as "primary ipFamily").
	Key string `json:"key"`
	// Value is the unquoted value; multi-line values are joined by "\n".
	Value string `json:"value"`
}

// Get returns the value of key and whether the entry has it.
func (e *Entry) Get(key string) (string, bool) {
	for _, kv := range e.KV {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return "", false
}

// When returns the entry's time: Time when known, else the klog header
// time in the given year (UTC, which is what kube-proxy containers log
// in), else the zero time.
func (e *Entry) When(year int) time.Time {
	if !e.Time.IsZero() || e.Header == "" {
		return e.Time
	}
	t, err := time.Parse("0102 15:04:05.000000", e.Header)
	if err != nil {
		return time.Time{}
	}
	return t.AddDate(year-t.Year(), 0, 0)
}

// MaxLineLength is the longest line Parse accepts.
const MaxLineLength = 1 << 20

// logical is one log line after unwrapping: a physical line, or CRI
// partial records joined.
type logical struct {
	line, end int
	raw       []string
	wrapper   Wrapper
	stream    string
	time      time.Time
	partial   bool
	content   string
	host      string
	pod, ctr  string
}

// Parse parses a kube-proxy log read from the file called name. Lines in no
// known format become FormatText entries (counted in Unrecognized), except
// that lines following a klog entry are its continuation lines; the log is
// rejected only when no line at all is a kube-proxy log line, or a line is
// longer than [MaxLineLength].
func Parse(name string, data []byte) (*Log, error) { return parse(name, data, false) }

// ParseKept parses a log as [Parse] does, but keeps of its entries only
// those a reading of the log looks at (see [Log.Kept]): those that match a
// pattern of [Known] and the three that follow each ([Log.CauseAt] reads
// them), the start-up lines (kube-proxy's version, the proxier it uses,
// the command line k3s logs), the lines cut short with "…", and the first
// entry of each host, of each pod's container kubectl logs --prefix names,
// of each journal identifier and without the journal's prefix
// ([Log.Hosts], [Log.Pods], [Log.Identifiers]). Lines and Unrecognized count
// every line and entry, as Parse does. The kept entries hold copies of
// their text, not data: a log of hundreds of megabytes leaves a few
// kilobytes, where Parse keeps several times its size.
func ParseKept(name string, data []byte) (*Log, error) { return parse(name, data, true) }

// Kept reports whether l was read by [ParseKept].
func (l *Log) Kept() bool { return l.kept }

func parse(name string, data []byte, keep bool) (*Log, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	var text string
	if keep {
		// The kept entries are detached (see keeper.add): nothing of
		// the lines outlives the parse.
		text = unsafe.String(unsafe.SliceData(data), len(data))
	} else {
		text = string(data)
	}
	return parseLines(name, &textLines{text: text}, keep)
}

// ParseKeptReader is [ParseKept] reading the log from r as it parses it:
// one buffer of lines is held at a time (the kept entries are copied out
// of it), not the whole text, so that a log of hundreds of megabytes, or
// a stream decompressing to that, is read in a few hundred kilobytes. An
// error of r ends the parse and is returned, wrapped.
func ParseKeptReader(name string, r io.Reader) (*Log, error) {
	return parseKeptReader(name, r, readerBuffer)
}

// parseKeptReader is ParseKeptReader reading into a buffer of size bytes
// at first (tests make it small).
func parseKeptReader(name string, r io.Reader, size int) (*Log, error) {
	return parseLines(name, &readerLines{r: r, buf: make([]byte, max(size, 1))}, true)
}

// parseLines parses the lines src yields; keep is ParseKept's.
func parseLines(name string, src lineSource, keep bool) (*Log, error) {
	l := &Log{File: name, Entries: []*Entry{}, kept: keep}
	var k *keeper
	if keep {
		k = &keeper{}
	}
	// spare is an entry ParseKept did not keep, whose memory the next
	// klog entry takes.
	var spare *Entry
	add := func(e *Entry) {
		if k == nil {
			l.Entries = append(l.Entries, e)
			return
		}
		if k.add(e) {
			l.Entries = append(l.Entries, e)
		} else {
			spare = e
		}
	}
	var cur *Entry
	var curLines []string
	// kvs is the buffer of the key/values of the klog entries ParseKept
	// reads (detach copies those of the entries kept).
	var kvs *[]KV
	if keep {
		kvs = new([]KV)
	}
	flush := func() {
		if cur == nil {
			return
		}
		switch cur.Format {
		case FormatKlog:
			finishKlog(cur, curLines, kvs)
		case FormatNFT:
			cur.Text = strings.Join(curLines, "\n")
		}
		add(cur)
		cur, curLines = nil, curLines[:0]
	}
	known := 0
	handle := func(ln *logical) {
		if spare == nil {
			spare = new(Entry)
		}
		if payload, ok := klogHeaderInto(ln.content, spare); ok {
			e := spare
			spare = nil
			flush()
			e.setWrap(name, ln)
			cur, curLines = e, append(curLines[:0], payload)
			known++
			return
		}
		if e, ok := jsonEntry(ln.content); ok {
			flush()
			e.setWrap(name, ln)
			add(e)
			known++
			return
		}
		if msg, ok := nftError(ln.content); ok {
			flush()
			cur = &Entry{Format: FormatNFT, Severity: Error, Message: msg}
			cur.setWrap(name, ln)
			curLines = append(curLines[:0], ln.content)
			known++
			return
		}
		if cur != nil && (cur.Format == FormatKlog || cur.Format == FormatNFT) && ln.wrapper == cur.Wrapper &&
			ln.pod == cur.Pod && ln.ctr == cur.Container {
			// Continuation of a multi-line klog entry.
			cur.EndLine = ln.end
			cur.Raw += "\n" + strings.Join(ln.raw, "\n")
			cur.Partial = cur.Partial || ln.partial
			cur.Truncated = cur.Truncated || strings.HasSuffix(ln.content, "…")
			curLines = append(curLines, ln.content)
			return
		}
		flush()
		if strings.TrimSpace(ln.content) == "" {
			return
		}
		e := &Entry{Format: FormatText, Message: ln.content, Text: ln.content}
		e.setWrap(name, ln)
		add(e)
		l.Unrecognized++
	}
	// hold copies what the entry being read holds of the lines, before
	// a reader's buffer takes the lines that follow.
	hold := func() {
		if cur == nil {
			return
		}
		cur.detach()
		for i := range curLines {
			curLines[i] = strings.Clone(curLines[i])
		}
	}
	if err := unwrap(name, src, &l.Lines, handle, hold); err != nil {
		return nil, err
	}
	flush()
	if known == 0 {
		return nil, parsers.Errorf(parsers.Pos{File: name, Line: 1}, "no kube-proxy log lines found (want klog, CRI, kubectl --timestamps or JSON log lines)")
	}
	return l, nil
}

func (e *Entry) setWrap(name string, ln *logical) {
	e.Truncated = strings.HasSuffix(ln.content, "…")
	e.Pos = parsers.Pos{File: name, Line: ln.line}
	e.EndLine = ln.end
	e.Raw = strings.Join(ln.raw, "\n")
	e.Wrapper, e.Stream, e.Partial, e.Host = ln.wrapper, ln.stream, ln.partial, ln.host
	e.Pod, e.Container = ln.pod, ln.ctr
	if !ln.time.IsZero() {
		e.Time = ln.time
	}
}

// unwrap splits the lines of src into logical lines, removing CRI and
// kubectl timestamp prefixes and joining CRI partial records, and hands
// each to emit in turn, which must not keep it (one line at a time is
// held, not every line of a log of hundreds of megabytes). hold is called
// before the lines emitted so far are overwritten (see [lineSource]): what
// the caller keeps of them past emit it copies then.
//
// The lines are substrings of src's text: what the entries keep of them
// (their raw lines, messages, values) points into it rather than into a
// string made for each line.
func unwrap(name string, src lineSource, count *int, emit func(*logical), hold func()) error {
	// part is the CRI record being joined, when its last part is still
	// to come; next is the logical line made of the next lines (part
	// when it is set).
	var part *logical
	var next logical
	src.onOverwrite(func() {
		if part != nil {
			for i := range part.raw {
				part.raw[i] = strings.Clone(part.raw[i])
			}
			part.content = strings.Clone(part.content)
		}
		hold()
	})
	lineNo := 0
	for {
		b, over, ok, err := src.next()
		if err != nil {
			return fmt.Errorf("reading %s after line %d: %w", name, lineNo, err)
		}
		if !ok {
			break
		}
		lineNo++
		if over > 0 {
			return parsers.Errorf(parsers.Pos{File: name, Line: lineNo}, "line of %d bytes exceeds the limit of %d", over, MaxLineLength)
		}
		raw := strings.TrimSuffix(b, "\r")
		if ts, stream, tag, content, ok := criLine(raw); ok {
			if part != nil && part.stream == stream {
				part.end = lineNo
				part.raw = append(part.raw, raw)
				part.content += content
			} else {
				if part != nil {
					part.partial = true
					emit(part)
				}
				// emit keeps no logical line: one is reused.
				next = logical{line: lineNo, end: lineNo, raw: append(next.raw[:0], raw), wrapper: WrapperCRI, stream: stream, time: ts, content: content}
				part = &next
			}
			if tag == 'F' {
				emit(part)
				part = nil
			}
			continue
		}
		if part != nil {
			part.partial = true
			emit(part)
			part = nil
		}
		ln := &next
		*ln = logical{line: lineNo, end: lineNo, raw: append(next.raw[:0], raw), content: raw}
		if pod, ctr, content, ok := kubectlPrefix(raw); ok {
			ln.pod, ln.ctr, ln.content = pod, ctr, content
		}
		if ts, content, ok := timestampLine(ln.content); ok {
			ln.wrapper, ln.time, ln.content = WrapperTimestamps, ts, content
		} else if content, ok := JournalLine(raw); ok && ln.pod == "" {
			ln.wrapper, ln.content, ln.host = WrapperJournal, content, journalHost(raw[:len(raw)-len(content)])
		}
		emit(ln)
	}
	if part != nil {
		part.partial = true
		emit(part)
	}
	*count = lineNo
	return nil
}

// parseTimestamp parses an RFC 3339 timestamp as CRI and kubectl print it.
func parseTimestamp(s string) (time.Time, bool) {
	if len(s) < 20 || s[4] != '-' || s[10] != 'T' {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

// criLine splits "TIMESTAMP STREAM TAG CONTENT".
func criLine(s string) (time.Time, string, byte, string, bool) {
	i := strings.IndexByte(s, ' ')
	if i < 0 {
		return time.Time{}, "", 0, "", false
	}
	ts, ok := parseTimestamp(s[:i])
	if !ok {
		return time.Time{}, "", 0, "", false
	}
	rest := s[i+1:]
	var stream string
	switch {
	case strings.HasPrefix(rest, "stdout "):
		stream, rest = "stdout", rest[7:]
	case strings.HasPrefix(rest, "stderr "):
		stream, rest = "stderr", rest[7:]
	default:
		return time.Time{}, "", 0, "", false
	}
	if len(rest) < 1 || rest[0] != 'F' && rest[0] != 'P' {
		return time.Time{}, "", 0, "", false
	}
	tag := rest[0]
	// The tag may carry more flags separated by ':' (F:x); the content
	// follows one space. An empty F record ends with the tag.
	j := strings.IndexByte(rest, ' ')
	if j < 0 {
		return ts, stream, tag, "", len(rest) == 1
	}
	if j > 1 && rest[1] != ':' {
		return time.Time{}, "", 0, "", false
	}
	return ts, stream, tag, rest[j+1:], true
}

// reNFTError matches an error nft prints: "/dev/stdin:12:1-80: Error:
// ...", "netlink: Error: ...", "Error: ...".
var reNFTError = regexp.MustCompile(`^(?:(?:/dev/stdin|\S+\.nft|<cmdline>):\d+:\d+(?:-\d+)?: |netlink: )?Error: (.+)$`)

// nftError returns the message of a line of nft's error output.
func nftError(s string) (string, bool) {
	if !strings.Contains(s, "Error: ") {
		return "", false
	}
	m := reNFTError.FindStringSubmatch(s)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// reJournal matches the prefix journalctl (short and short-iso output)
// and systemctl status put before each line a service logged: the time,
// the host, the identifier and its process id.
var reJournal = regexp.MustCompile("^" + parsers.JournalPrefix)

// JournalLine returns what follows the journal's prefix of a line
// ("Feb 17 11:12:14 node-a kube-proxy[9234]: E0217 ..."), and whether it
// has one.
func JournalLine(s string) (string, bool) {
	if len(s) < 16 {
		return "", false
	}
	m := reJournal.FindStringIndex(s)
	if m == nil {
		return "", false
	}
	return s[m[1]:], true
}

// journalHost returns the host of a journal line's prefix ("Feb 17
// 11:12:14 node-a kube-proxy[9234]: "): the field before the identifier.
func journalHost(prefix string) string {
	f := strings.Fields(prefix)
	if len(f) < 3 {
		return ""
	}
	return f[len(f)-2]
}

// Identifiers returns the identifiers (the unit's program, without its
// process id: "kube-proxy", "kubelet") the journal's prefixes of the log's
// entries name, once each, in the order of their first entry, and the
// number of entries that have no such prefix.
func (l *Log) Identifiers() (ids []string, bare int) {
	for _, e := range l.Entries {
		if e.Wrapper != WrapperJournal {
			bare++
			continue
		}
		line, _, _ := strings.Cut(e.Raw, "\n")
		m := reJournal.FindString(line)
		if id := journalIdentifier(m); id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids, bare
}

// journalIdentifier returns the identifier of a journal line's prefix
// ("Feb 17 11:12:14 node-a kube-proxy[9234]: "): its last field, without
// the colon and the process id.
func journalIdentifier(prefix string) string {
	f := strings.Fields(prefix)
	if len(f) == 0 {
		return ""
	}
	id := strings.TrimSuffix(f[len(f)-1], ":")
	if i := strings.IndexByte(id, '['); i >= 0 {
		id = id[:i]
	}
	return id
}

// Hosts returns the hosts the journal's prefixes of the log's lines name,
// once each, in the order of their first line, with that line.
func (l *Log) Hosts() (hosts []string, lines []int) {
	for _, e := range l.Entries {
		if e.Host != "" && !slices.Contains(hosts, e.Host) {
			hosts, lines = append(hosts, e.Host), append(lines, e.Pos.Line)
		}
	}
	return hosts, lines
}

// kubectlPrefix splits the "[pod/NAME/CONTAINER] " prefix kubectl logs
// --prefix writes before each line.
func kubectlPrefix(s string) (pod, container, rest string, ok bool) {
	if !strings.HasPrefix(s, "[pod/") {
		return "", "", "", false
	}
	end := strings.Index(s, "] ")
	if end < 0 {
		if !strings.HasSuffix(s, "]") {
			return "", "", "", false
		}
		end = len(s) - 1 // an empty line
	}
	pod, container, ok = strings.Cut(s[len("[pod/"):end], "/")
	if !ok || pod == "" || container == "" || strings.ContainsAny(pod+container, "/[] \t") {
		return "", "", "", false
	}
	return pod, container, s[min(len(s), end+2):], true
}

// Pods returns the pods and containers kubectl logs --prefix names before
// the log's lines ("kube-proxy-7xk2p/kube-proxy"), once each, in the order
// of their first line, with that line.
func (l *Log) Pods() (pods []string, lines []int) {
	for _, e := range l.Entries {
		if e.Pod == "" {
			continue
		}
		if p := e.Pod + "/" + e.Container; !slices.Contains(pods, p) {
			pods, lines = append(pods, p), append(lines, e.Pos.Line)
		}
	}
	return pods, lines
}

// timestampLine splits the "TIMESTAMP " prefix of kubectl logs --timestamps.
func timestampLine(s string) (time.Time, string, bool) {
	i := strings.IndexByte(s, ' ')
	if i < 0 {
		return time.Time{}, "", false
	}
	ts, ok := parseTimestamp(s[:i])
	if !ok {
		return time.Time{}, "", false
	}
	return ts, s[i+1:], true
}

// klogHeaderInto parses "Lmmdd hh:mm:ss.uuuuuu threadid file:line]
// payload" into e, which it overwrites whole when s has a klog header and
// leaves alone otherwise, and returns the payload.
func klogHeaderInto(s string, e *Entry) (string, bool) {
	// Minimal header: "I0302 08:15:00.123456 1 a.go:1]" is 32 bytes.
	if len(s) < 30 {
		return "", false
	}
	var sev Severity
	switch s[0] {
	case 'I':
		sev = Info
	case 'W':
		sev = Warning
	case 'E':
		sev = Error
	case 'F':
		sev = Fatal
	default:
		return "", false
	}
	if !digits(s[1:5]) || s[5] != ' ' || !digits(s[6:8]) || s[8] != ':' || !digits(s[9:11]) || s[11] != ':' || !digits(s[12:14]) || s[14] != '.' {
		return "", false
	}
	i := 15
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 15 || i >= len(s) || s[i] != ' ' {
		return "", false
	}
	header := s[1:i]
	for i < len(s) && s[i] == ' ' {
		i++
	}
	j := i
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j == i || j >= len(s) || s[j] != ' ' {
		return "", false
	}
	pid, err := strconv.Atoi(s[i:j])
	if err != nil {
		return "", false
	}
	k := strings.IndexByte(s[j+1:], ']')
	if k < 0 {
		return "", false
	}
	src := s[j+1 : j+1+k]
	colon := strings.LastIndexByte(src, ':')
	if colon <= 0 || !digits(src[colon+1:]) || strings.ContainsAny(src, " \t") {
		return "", false
	}
	payload := s[j+1+k+1:]
	payload = strings.TrimPrefix(payload, " ")
	*e = Entry{Format: FormatKlog, Severity: sev, Header: header, PID: pid, Source: src}
	return payload, true
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// finishKlog fills message, key/values and text from the payload lines.
// The key/values are appended to (*kvs)[:0] when kvs is not nil (a
// buffer reused while the entries not kept are dropped: a kept entry
// copies them), else to a slice of their own.
func finishKlog(e *Entry, lines []string, kvs *[]KV) {
	text := strings.Join(lines, "\n")
	e.Text = text
	if strings.HasPrefix(text, `"`) {
		if q, err := strconv.QuotedPrefix(text); err == nil {
			if msg, err := strconv.Unquote(q); err == nil {
				rest := text[len(q):]
				if rest == "" || rest[0] == ' ' || rest[0] == '\n' {
					e.Message, e.Structured = msg, true
					if kvs == nil {
						e.KV = parseKVs(nil, rest)
					} else if *kvs = parseKVs((*kvs)[:0], rest); len(*kvs) > 0 {
						e.KV = *kvs
					}
					if v, ok := e.Get("logger"); ok {
						e.Logger = v
					}
					return
				}
			}
		}
	}
	e.Message = text
}

// parseKVs parses klog's " key=value key2=<\n\tline\n > key3=[...]" form.
// Parsing stops at the first token that is not a key/value pair. The
// pairs are appended to kvs.
func parseKVs(kvs []KV, s string) []KV {
	for {
		s = strings.TrimLeft(s, " ")
		if s == "" {
			return kvs
		}
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return kvs
		}
		key := s[:eq]
		if strings.ContainsAny(key, "\"\n\t=<>") {
			return kvs
		}
		s = s[eq+1:]
		var val string
		switch {
		case strings.HasPrefix(s, `"`):
			q, err := strconv.QuotedPrefix(s)
			if err != nil {
				return kvs
			}
			val, _ = strconv.Unquote(q)
			s = s[len(q):]
		case strings.HasPrefix(s, "<\n"):
			// Multi-line value: tab-indented lines up to a " >" line.
			s = s[2:]
			var vl []string
			closed := false
			for s != "" {
				line := s
				rest := ""
				if i := strings.IndexByte(s, '\n'); i >= 0 {
					line, rest = s[:i], s[i+1:]
				}
				if strings.HasPrefix(line, " >") {
					s = line[2:]
					if rest != "" {
						s += "\n" + rest
					}
					closed = true
					break
				}
				vl = append(vl, strings.TrimPrefix(line, "\t"))
				s = rest
			}
			val = strings.Join(vl, "\n")
			if !closed {
				kvs = append(kvs, KV{Key: key, Value: val})
				return kvs
			}
		case strings.HasPrefix(s, "[") || strings.HasPrefix(s, "{"):
			n := balanced(s)
			if n < 0 {
				return kvs
			}
			val, s = s[:n], s[n:]
		default:
			n := strings.IndexAny(s, " \n")
			if n < 0 {
				n = len(s)
			}
			val, s = s[:n], s[n:]
		}
		kvs = append(kvs, KV{Key: key, Value: val})
		s = strings.TrimPrefix(s, "\n")
	}
}

// balanced returns the length of the JSON-like bracketed value at the
// start of s, or -1.
func balanced(s string) int {
	depth := 0
	inStr := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inStr {
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth == 0 {
				return i + 1
			}
		case '\n':
			return -1
		}
	}
	return -1
}

// jsonEntry parses one component-base JSON log line.
func jsonEntry(s string) (*Entry, bool) {
	t := strings.TrimSpace(s)
	if len(t) < 2 || t[0] != '{' || t[len(t)-1] != '}' {
		return nil, false
	}
	dec := json.NewDecoder(strings.NewReader(t))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	e := &Entry{Format: FormatJSON, Severity: Error}
	hasMsg := false
	var text strings.Builder
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, ok := tok.(string)
		if !ok {
			return nil, false
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, false
		}
		var str string
		isStr := json.Unmarshal(raw, &str) == nil
		switch key {
		case "ts":
			f, err := strconv.ParseFloat(string(raw), 64)
			if err != nil || f < 0 || f > 1e15 {
				return nil, false
			}
			if f < 1e11 { // seconds, not milliseconds
				f *= 1000
			}
			ms := int64(f)
			e.Time = time.UnixMilli(ms).Add(time.Duration((f - float64(ms)) * float64(time.Millisecond))).UTC()
			continue
		case "msg":
			if !isStr {
				return nil, false
			}
			e.Message, hasMsg = str, true
			continue
		case "caller":
			if isStr {
				e.Source = str
				continue
			}
		case "v":
			if v, err := strconv.Atoi(string(raw)); err == nil {
				e.Verbosity = &v
				e.Severity = Info
				continue
			}
		case "logger":
			if isStr {
				e.Logger = str
			}
		}
		val := string(raw)
		if isStr {
			val = str
		} else {
			var b bytes.Buffer
			if json.Compact(&b, raw) == nil {
				val = b.String()
			}
		}
		e.KV = append(e.KV, KV{Key: key, Value: val})
		text.WriteByte(' ')
		text.WriteString(key)
		text.WriteByte('=')
		if isStr {
			text.WriteString(strconv.Quote(str))
		} else {
			text.WriteString(val)
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false
	}
	if !hasMsg {
		return nil, false
	}
	e.Structured = true
	e.Text = strconv.Quote(e.Message) + text.String()
	return e, true
}
