package sysctl

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/proxyscan/proxyscan/parsers"
)

// Listing is a parsed sysctl listing.
type Listing struct {
	// File is the name the listing was parsed from.
	File string `json:"file"`
	// Entries are the key/value lines in file order.
	Entries []Entry `json:"entries"`
	// Notes are the diagnostic lines sysctl prints for keys it could not
	// read ("sysctl: permission denied on key ..."), in file order.
	Notes []Note `json:"notes,omitempty"`
	// Filter, for a listing pasted under a command line that pipes it
	// through a filter (sysctl -a | grep ip_forward), is that filter
	// ("grep ip_forward"): a key the listing does not show may be set on
	// the node. "" otherwise.
	Filter string `json:"filter,omitempty"`
}

// Entry is one kernel parameter and its value.
type Entry struct {
	// Key is the canonical dotted key (see the package documentation).
	Key string `json:"key"`
	// Value is the value as printed, without surrounding blanks.
	Value string `json:"value"`
	// Pos is where the entry was read.
	Pos parsers.Pos `json:"pos"`
	// Raw is the line as it appeared in the input.
	Raw string `json:"raw"`
}

// Note is a diagnostic line of sysctl itself.
type Note struct {
	// Text is the diagnostic without the "sysctl: " prefix.
	Text string `json:"text"`
	// Pos is where the note was read.
	Pos parsers.Pos `json:"pos"`
}

// MaxLineLength is the longest line Parse accepts; longer lines are
// rejected as hostile input.
const MaxLineLength = 64 << 10

// Parse parses a sysctl listing read from the file called name. Blank lines
// and lines starting with '#' or ';' are skipped (and counted for line
// numbers). Any other line that is neither an entry nor a sysctl diagnostic
// is an error naming its line; all such errors are returned together.
func Parse(name string, data []byte) (*Listing, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	// The entries' keys, values and raw lines are substrings of one copy
	// of the text, sized for every line at once: a listing holds about
	// its text's size in entries, where a string and an entry grown by
	// appending for each line took three and a half times it.
	l := &Listing{File: name, Entries: make([]Entry, 0, bytes.Count(data, []byte("\n"))+1)}
	var errs parsers.ErrorList
	text := string(data)
	lineNo := 0
	for len(text) > 0 {
		var line string
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			line, text = text, ""
		}
		lineNo++
		pos := parsers.Pos{File: name, Line: lineNo}
		line = strings.TrimSuffix(line, "\r")
		if len(line) > MaxLineLength {
			errs.Add(pos, "line of %d bytes exceeds the limit of %d", len(line), MaxLineLength)
			continue
		}
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || trimmed[0] == '#' || trimmed[0] == ';' {
			continue
		}
		if rest, ok := strings.CutPrefix(trimmed, "sysctl: "); ok {
			l.Notes = append(l.Notes, Note{Text: rest, Pos: pos})
			continue
		}
		key, value, err := splitLine(trimmed)
		if err != nil {
			errs.Add(pos, "%v", err)
			continue
		}
		l.Entries = append(l.Entries, Entry{Key: key, Value: value, Pos: pos, Raw: line})
	}
	l.Entries = slices.Clip(l.Entries)
	if err := errs.Err(); err != nil {
		return nil, err
	}
	if len(l.Entries) == 0 && len(l.Notes) == 0 {
		return nil, parsers.Errorf(parsers.Pos{File: name}, "no sysctl entries found")
	}
	return l, nil
}

// splitLine splits one entry line into its canonical key and value.
func splitLine(s string) (key, value string, err error) {
	var rawKey string
	switch {
	case strings.HasPrefix(s, "/proc/sys/"):
		// "/proc/sys/a/b: v", "/proc/sys/a/b:v" or "/proc/sys/a/b v".
		i := strings.IndexAny(s, ":= \t")
		if i < 0 {
			return "", "", fmt.Errorf("sysctl path %q has no value", s)
		}
		rawKey, value = s[:i], s[i+1:]
		if s[i] == ' ' || s[i] == '\t' {
			value = strings.TrimLeft(value, ":= \t")
		}
		rawKey = strings.TrimPrefix(rawKey, "/proc/sys/")
		if key, err = pathKey(rawKey); err != nil {
			return "", "", err
		}
		if err := checkKey(key); err != nil {
			return "", "", err
		}
		return key, strings.TrimSpace(value), nil
	case strings.Contains(s, " = "):
		rawKey, value, _ = strings.Cut(s, " = ")
	case strings.HasSuffix(s, " ="):
		rawKey = strings.TrimSuffix(s, " =")
	case strings.Contains(s, "="):
		rawKey, value, _ = strings.Cut(s, "=")
	default:
		return "", "", fmt.Errorf("not a sysctl entry: %q", truncate(s))
	}
	rawKey = strings.TrimSpace(rawKey)
	if rawKey == "" {
		return "", "", fmt.Errorf("empty sysctl key in %q", truncate(s))
	}
	// The separator that comes first tells the form: "net/ipv4/..." is a
	// path, "net.ipv4.conf.eth0/100.rp_filter" is sysctl's dotted form.
	if i := strings.IndexAny(rawKey, "./"); i >= 0 && rawKey[i] == '/' {
		key, err = pathKey(rawKey)
		if err != nil {
			return "", "", err
		}
	} else {
		key = rawKey
	}
	if err := checkKey(key); err != nil {
		return "", "", err
	}
	return key, strings.TrimSpace(value), nil
}

// pathKey turns a /proc/sys relative path into the dotted key.
func pathKey(p string) (string, error) {
	p = strings.Trim(p, "/")
	if p == "" {
		return "", fmt.Errorf("empty sysctl path")
	}
	parts := strings.Split(p, "/")
	for i, c := range parts {
		if c == "" {
			return "", fmt.Errorf("empty component in sysctl path %q", truncate(p))
		}
		parts[i] = strings.ReplaceAll(c, ".", "/")
	}
	return strings.Join(parts, "."), nil
}

// checkKey rejects keys with characters no kernel parameter name has.
func checkKey(key string) error {
	// Components are separated by dots; a slash inside a component stands
	// for a dot of the /proc/sys name (eth0/100), so it cannot start or end
	// one, and the top-level directory (net, kernel, ...) has none.
	for i, rest := 0, key; ; i++ {
		c, more, found := strings.Cut(rest, ".")
		if c == "" || c[0] == '/' || c[len(c)-1] == '/' || strings.Contains(c, "//") || i == 0 && strings.Contains(c, "/") {
			return fmt.Errorf("invalid sysctl key %q", truncate(key))
		}
		if !found {
			break
		}
		rest = more
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_-./@+", c) >= 0) {
			return fmt.Errorf("invalid sysctl key %q", truncate(key))
		}
	}
	return nil
}

// Path returns the /proc/sys path of a canonical dotted key: dots separate
// components and slashes inside a component stand for dots.
func Path(key string) string {
	parts := strings.Split(key, ".")
	for i, c := range parts {
		parts[i] = strings.ReplaceAll(c, "/", ".")
	}
	return "/proc/sys/" + strings.Join(parts, "/")
}

// Canonical returns the canonical dotted form of a key written in any of
// the accepted forms: dotted, slash-separated ("net/ipv4/ip_forward") or a
// /proc/sys path. It returns key unchanged when it cannot be converted.
func Canonical(key string) string {
	k := strings.TrimPrefix(key, "/proc/sys/")
	if i := strings.IndexAny(k, "./"); i >= 0 && k[i] == '/' || k != key {
		if c, err := pathKey(k); err == nil {
			return c
		}
	}
	return key
}

// Get returns the first entry for key, which may be given in any form
// [Canonical] accepts, and whether there is one.
func (l *Listing) Get(key string) (Entry, bool) {
	key = Canonical(key)
	for _, e := range l.Entries {
		if e.Key == key {
			return e, true
		}
	}
	return Entry{}, false
}

// Value returns the value of key and whether the listing has it.
func (l *Listing) Value(key string) (string, bool) {
	e, ok := l.Get(key)
	return e.Value, ok
}

// Format prints l in the form `sysctl -a` uses ("key = value"), entries
// first, then the notes as "sysctl: ..." lines. Parse(Format(l)) gives the
// same entries and notes; only positions and raw text differ.
func Format(l *Listing) []byte {
	var b bytes.Buffer
	for _, e := range l.Entries {
		b.WriteString(e.Key)
		if e.Value == "" {
			b.WriteString(" =\n")
			continue
		}
		b.WriteString(" = ")
		b.WriteString(e.Value)
		b.WriteByte('\n')
	}
	for _, n := range l.Notes {
		b.WriteString("sysctl: ")
		b.WriteString(n.Text)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
