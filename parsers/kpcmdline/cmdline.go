package kpcmdline

import (
	"bytes"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/proxyscan/proxyscan/parsers"
)

// MaxSize is the largest command line Parse accepts (Linux caps argv and
// the environment together at a few MiB; a kube-proxy command line is a few
// KiB).
const MaxSize = 1 << 20

// MaxArgs is the largest number of arguments Parse accepts.
const MaxArgs = 10000

// Cmdline is a parsed kube-proxy command line.
type Cmdline struct {
	// Pos is the file the command line was read from (line 1).
	Pos parsers.Pos `json:"pos"`
	// NUL reports that the input was NUL-separated (/proc/PID/cmdline).
	NUL bool `json:"nul,omitempty"`
	// Argv is every argument, unquoted.
	Argv []string `json:"argv"`
	// Binary is argv[0] when it is a program rather than a flag ("" when the
	// line starts with a flag). For `hyperkube kube-proxy ...` (or
	// `hyperkube proxy ...`) Binary is "hyperkube" and Subcommand the second
	// word.
	Binary     string `json:"binary,omitempty"`
	Subcommand string `json:"subcommand,omitempty"`
	// Flags are the flags in the order given.
	Flags []Flag `json:"flags"`
	// Args are the arguments that are neither the binary nor flags nor flag
	// values (kube-proxy accepts none), and everything after "--".
	Args []Arg `json:"args,omitempty"`
}

// Form is how a flag was spelled.
type Form string

// The spellings pflag accepts.
const (
	FormEquals   Form = "equals"   // --name=value, -v=2
	FormSeparate Form = "separate" // --name value, -v 2
	FormAttached Form = "attached" // -v2 (one-letter flags only)
	FormAlone    Form = "alone"    // --name (booleans, or a flag missing its value)
)

// Flag is one flag of a command line.
type Flag struct {
	// Name is the flag name without dashes ("proxy-mode", "v").
	Name string `json:"name"`
	// Dashes is 1 for a shorthand flag (-v) and 2 for a long flag.
	Dashes int `json:"dashes"`
	// Value is the value given, unquoted ("" when none was given).
	Value string `json:"value"`
	// HasValue reports whether a value was given (in any form but FormAlone).
	HasValue bool `json:"hasValue"`
	Form     Form `json:"form"`
	// Index is the index in Argv of the flag's argument; for FormSeparate the
	// value is at Index+1.
	Index int `json:"index"`
	// Pos is where the flag starts (file and line).
	Pos parsers.Pos `json:"pos"`
	// Offset is the byte offset of the flag in the input.
	Offset int `json:"offset"`
	// Raw is the flag as written in the input (with its value, quotes
	// included, for FormSeparate).
	Raw string `json:"raw"`
}

// Arg is a positional argument.
type Arg struct {
	Value  string      `json:"value"`
	Index  int         `json:"index"`
	Pos    parsers.Pos `json:"pos"`
	Offset int         `json:"offset"`
}

// BoolFlags are the boolean flags of kube-proxy 1.20–1.37 (its own, the
// klog flags it registered before 1.26 and the logging flags of 1.28+);
// pflag never lets them take the next argument as a value. Taken from
// cmd/kube-proxy/app/server.go (1.20–1.30) and options.go (1.31–1.37)
// AddFlags, component-base/logs and klog.
var BoolFlags = map[string]bool{
	"masquerade-all": true, "cleanup": true, "cleanup-ipvs": true, "ipvs-strict-arp": true,
	"bind-address-hard-fail": true, "profiling": true, "iptables-localhost-nodeports": true,
	"conntrack-tcp-be-liberal": true, "init-only": true, "windows-service": true,
	"enable-dsr": true, "log-text-split-stream": true, "log-json-split-stream": true,
	"help": true, "h": true,
	// klog flags (global flag set, removed from most components in 1.26).
	"logtostderr": true, "alsologtostderr": true, "skip-headers": true, "skip-log-headers": true,
	"add-dir-header": true, "one-output": true,
}

// optionalValueFlags take a value only with "=" (pflag NoOptDefVal), like
// booleans: --version prints the version, --version=raw prints it raw.
var optionalValueFlags = map[string]bool{"version": true}

type word struct {
	text   string
	offset int
	line   int
	raw    string
}

// Parse parses a command line: NUL-separated when data contains a NUL byte,
// otherwise one shell-quoted line (blank lines and a trailing newline are
// allowed; backslash-newline continues the line).
func Parse(name string, data []byte) (*Cmdline, error) {
	if len(data) > MaxSize {
		return nil, parsers.Errorf(parsers.Pos{File: name}, "command line too large (%d bytes, limit %d)", len(data), MaxSize)
	}
	if !utf8.Valid(data) {
		return nil, parsers.Errorf(parsers.Pos{File: name, Line: 1}, "command line is not valid UTF-8")
	}
	var (
		words []word
		err   error
		nul   = bytes.IndexByte(data, 0) >= 0
	)
	if nul {
		words, err = splitNUL(name, data)
	} else {
		words, err = splitShell(name, data)
	}
	if err != nil {
		return nil, err
	}
	if len(words) == 0 {
		return nil, parsers.Errorf(parsers.Pos{File: name, Line: 1}, "empty command line")
	}
	if len(words) > MaxArgs {
		return nil, parsers.Errorf(parsers.Pos{File: name, Line: 1}, "too many arguments (%d, limit %d)", len(words), MaxArgs)
	}
	c := &Cmdline{Pos: parsers.Pos{File: name, Line: 1}, NUL: nul, Argv: make([]string, len(words))}
	for i, w := range words {
		c.Argv[i] = w.text
	}
	start := 0
	if !strings.HasPrefix(words[0].text, "-") {
		c.Binary = words[0].text
		start = 1
		if path.Base(c.Binary) == "hyperkube" && len(words) > 1 && (words[1].text == "kube-proxy" || words[1].text == "proxy") {
			c.Subcommand = words[1].text
			start = 2
		}
	}
	pos := func(w word) parsers.Pos { return parsers.Pos{File: name, Line: w.line} }
	for i := start; i < len(words); i++ {
		w := words[i]
		t := w.text
		switch {
		case t == "--":
			for j := i + 1; j < len(words); j++ {
				c.Args = append(c.Args, Arg{Value: words[j].text, Index: j, Pos: pos(words[j]), Offset: words[j].offset})
			}
			i = len(words)
		case strings.HasPrefix(t, "--") || strings.HasPrefix(t, "-") && len(t) > 1:
			f := Flag{Index: i, Pos: pos(w), Offset: w.offset, Raw: w.raw}
			body := t[1:]
			f.Dashes = 1
			if strings.HasPrefix(t, "--") {
				body = t[2:]
				f.Dashes = 2
			}
			if body == "" || strings.HasPrefix(body, "-") || strings.HasPrefix(body, "=") {
				return nil, parsers.Errorf(pos(w), "bad flag syntax: %s", t)
			}
			if n, v, ok := strings.Cut(body, "="); ok {
				f.Name, f.Value, f.HasValue, f.Form = n, v, true, FormEquals
			} else if f.Dashes == 1 && len(body) > 1 {
				// pflag shorthand: -v2 is -v with value 2.
				f.Name, f.Value, f.HasValue, f.Form = body[:1], body[1:], true, FormAttached
			} else {
				f.Name, f.Form = body, FormAlone
				if !BoolFlags[f.Name] && !optionalValueFlags[f.Name] && i+1 < len(words) {
					next := words[i+1]
					f.Value, f.HasValue, f.Form = next.text, true, FormSeparate
					f.Raw = w.raw + " " + next.raw
					if nul {
						f.Raw = w.raw + "\x00" + next.raw
					}
					i++
				}
			}
			c.Flags = append(c.Flags, f)
		default:
			c.Args = append(c.Args, Arg{Value: t, Index: i, Pos: pos(w), Offset: w.offset})
		}
	}
	return c, nil
}

// FromArgv parses a command line given as its arguments (a container's
// command and args), as Parse does a NUL-separated /proc/PID/cmdline.
func FromArgv(name string, argv []string) (*Cmdline, error) {
	if len(argv) == 0 {
		return nil, parsers.Errorf(parsers.Pos{File: name, Line: 1}, "empty command line")
	}
	return Parse(name, []byte(strings.Join(argv, "\x00")+"\x00"))
}

// Flag returns the value of the last occurrence of the named flag (pflag
// lets a later flag override an earlier one) and whether it was given. A
// boolean flag given alone has the value "true".
func (c *Cmdline) Flag(name string) (string, bool) {
	for i := len(c.Flags) - 1; i >= 0; i-- {
		f := c.Flags[i]
		if f.Name == name {
			if !f.HasValue && (BoolFlags[name] || optionalValueFlags[name]) {
				return "true", true
			}
			return f.Value, true
		}
	}
	return "", false
}

// Lookup returns every occurrence of the named flag, in order.
func (c *Cmdline) Lookup(name string) []Flag {
	var out []Flag
	for _, f := range c.Flags {
		if f.Name == name {
			out = append(out, f)
		}
	}
	return out
}

func splitNUL(name string, data []byte) ([]word, error) {
	var words []word
	off := 0
	parts := bytes.Split(data, []byte{0})
	for i, p := range parts {
		if i == len(parts)-1 && len(p) == 0 {
			break // the trailing NUL
		}
		if bytes.IndexByte(p, '\n') >= 0 && i == len(parts)-1 && len(bytes.TrimSpace(p)) == 0 {
			break // a newline appended after the last NUL
		}
		words = append(words, word{text: string(p), offset: off, line: 1, raw: string(p)})
		off += len(p) + 1
	}
	_ = name
	return words, nil
}

// splitShell splits a line the way a POSIX shell splits words: blanks
// separate words, '...' quotes literally, "..." quotes with \ escaping
// \ " $ ` and newline, and \ outside quotes escapes the next character
// (backslash-newline is a continuation).
func splitShell(name string, data []byte) ([]word, error) {
	s := string(data)
	var (
		words   []word
		logical []int // logical line of each word
		cur     strings.Builder
		inWord  bool
		start   int
		line    = 1
		wline   = 1
		lline   = 0
	)
	flush := func(end int) {
		if inWord {
			words = append(words, word{text: cur.String(), offset: start, line: wline, raw: s[start:end]})
			logical = append(logical, lline)
			cur.Reset()
			inWord = false
		}
	}
	begin := func(i int) {
		if !inWord {
			inWord, start, wline = true, i, line
		}
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch ch {
		case '\\':
			if i+1 >= len(s) {
				return nil, parsers.Errorf(parsers.Pos{File: name, Line: line}, "trailing backslash")
			}
			if s[i+1] == '\n' {
				i++
				line++
				continue
			}
			begin(i)
			i++
			cur.WriteByte(s[i])
		case '\'':
			begin(i)
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, parsers.Errorf(parsers.Pos{File: name, Line: line}, "unterminated single quote")
			}
			q := s[i+1 : i+1+j]
			cur.WriteString(q)
			line += strings.Count(q, "\n")
			i += j + 1
		case '"':
			begin(i)
			qline := line
			closed := false
			for i++; i < len(s); i++ {
				c := s[i]
				if c == '"' {
					closed = true
					break
				}
				if c == '\\' && i+1 < len(s) && strings.IndexByte("\\\"$`\n", s[i+1]) >= 0 {
					i++
					if s[i] == '\n' {
						line++
						continue
					}
					cur.WriteByte(s[i])
					continue
				}
				if c == '\n' {
					line++
				}
				cur.WriteByte(c)
			}
			if !closed {
				return nil, parsers.Errorf(parsers.Pos{File: name, Line: qline}, "unterminated double quote")
			}
		case ' ', '\t', '\r':
			flush(i)
		case '\n':
			flush(i)
			line++
			lline++
		default:
			begin(i)
			cur.WriteByte(ch)
		}
	}
	flush(len(s))
	for i := 1; i < len(words); i++ {
		if logical[i] != logical[0] {
			return nil, parsers.Errorf(parsers.Pos{File: name, Line: words[i].line}, "more than one command line (a second one starts here)")
		}
	}
	return words, nil
}

// Format writes c back: NUL-separated with a trailing NUL when c.NUL, or as
// one shell-quoted line ending in a newline. Parse reads it back to the same
// argv and flags.
func Format(c *Cmdline) []byte {
	var b bytes.Buffer
	for i, a := range c.Argv {
		if c.NUL {
			b.WriteString(a)
			b.WriteByte(0)
			continue
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(Quote(a))
	}
	if !c.NUL {
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// Quote returns s quoted for a POSIX shell, unchanged when it needs no
// quoting.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_=/.,:@%+^", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// String returns the command line as one shell-quoted line.
func (c *Cmdline) String() string {
	cc := *c
	cc.NUL = false
	return strings.TrimSuffix(string(Format(&cc)), "\n")
}

// Validate reports arguments that kube-proxy itself would reject at start:
// positional arguments and flags without a value that need one.
func (c *Cmdline) Validate() parsers.ErrorList {
	var errs parsers.ErrorList
	for _, a := range c.Args {
		if a.Value != "" {
			errs.Add(a.Pos, "kube-proxy takes no arguments, got %q", a.Value)
		}
	}
	for _, f := range c.Flags {
		if !f.HasValue && !BoolFlags[f.Name] && !optionalValueFlags[f.Name] {
			errs.Add(f.Pos, "flag needs an argument: %s", dashes(f)+f.Name)
		}
	}
	return errs
}

func dashes(f Flag) string { return strings.Repeat("-", f.Dashes) }

// Spelling returns the flag as pflag would print it: --name or -n.
func (f Flag) Spelling() string { return fmt.Sprintf("%s%s", dashes(f), f.Name) }
