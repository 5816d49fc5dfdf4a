package modules

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/proxyscan/proxyscan/parsers"
)

// Source tells which listing a module line came from.
type Source string

// The listing forms.
const (
	SourceProc    Source = "proc-modules"    // /proc/modules
	SourceLsmod   Source = "lsmod"           // lsmod output
	SourceBuiltin Source = "modules.builtin" // modules.builtin path
)

// List is a parsed module listing.
type List struct {
	// File is the name the listing was parsed from.
	File string `json:"file"`
	// Modules are the module lines in file order.
	Modules []Module `json:"modules"`
	// Headerless is set for lsmod lines with no "Module Size Used by"
	// header above them: lsmod always prints it, so the lines were
	// filtered (lsmod | grep ip_vs).
	Headerless bool `json:"headerless,omitempty"`
	// Partial, set by a caller that knows the listing was filtered or cut,
	// says why modules it does not list may be loaded; "" when it is whole.
	Partial string `json:"partial,omitempty"`
}

// Module is one loaded or built-in kernel module.
type Module struct {
	// Name is the module name as listed (for built-in modules, the file
	// name without directory and ".ko" suffix).
	Name string `json:"name"`
	// Source is the listing form the line came from.
	Source Source `json:"source"`
	// Size is the module's memory size in bytes (0 for built-in modules).
	Size int64 `json:"size,omitempty"`
	// RefCount is the module's reference count ("Used by" count in lsmod);
	// -1 when the kernel reports "-" (module unloading not supported).
	RefCount int `json:"refCount,omitempty"`
	// Users are the modules that use this one.
	Users []string `json:"users,omitempty"`
	// State is Live, Loading or Unloading (/proc/modules only).
	State string `json:"state,omitempty"`
	// Address is the load address (/proc/modules only; all zeros when read
	// without privileges).
	Address string `json:"address,omitempty"`
	// Taints are the taint flags the kernel prints, such as "(OE)"
	// (/proc/modules only), or lsmod's "[permanent]" marker.
	Taints string `json:"taints,omitempty"`
	// Path is the modules.builtin path of a built-in module.
	Path string `json:"path,omitempty"`
	// Pos is where the module was read.
	Pos parsers.Pos `json:"pos"`
	// Raw is the line as it appeared in the input.
	Raw string `json:"raw"`
}

// Builtin reports whether m is compiled into the kernel.
func (m *Module) Builtin() bool { return m.Source == SourceBuiltin }

// MaxLineLength is the longest line Parse accepts.
const MaxLineLength = 64 << 10

// Parse parses a module listing read from the file called name. Blank lines
// and '#' comments are skipped; lsmod's "Module Size Used by" header is
// recognised wherever it appears. Any other line that fits none of the
// forms is an error naming its line.
func Parse(name string, data []byte) (*List, error) {
	l := &List{File: name, Modules: []Module{}}
	var errs parsers.ErrorList
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	lineNo := 0
	header := false
	for len(data) > 0 {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		lineNo++
		pos := parsers.Pos{File: name, Line: lineNo}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) > MaxLineLength {
			errs.Add(pos, "line of %d bytes exceeds the limit of %d", len(line), MaxLineLength)
			continue
		}
		text := string(line)
		fields := strings.Fields(text)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if len(fields) >= 3 && fields[0] == "Module" && fields[1] == "Size" && fields[2] == "Used" {
			header = true
			continue // lsmod header
		}
		m, err := parseLine(fields)
		if err != nil {
			errs.Add(pos, "%v", err)
			continue
		}
		if m.Source == SourceLsmod && !header {
			l.Headerless = true
		}
		m.Pos, m.Raw = pos, text
		l.Modules = append(l.Modules, m)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	if len(l.Modules) == 0 {
		return nil, parsers.Errorf(parsers.Pos{File: name}, "no kernel modules found")
	}
	return l, nil
}

func parseLine(f []string) (Module, error) {
	if len(f) == 1 {
		p := f[0]
		base := p[strings.LastIndexByte(p, '/')+1:]
		n, ok := strings.CutSuffix(base, ".ko")
		if !ok || n == "" || !validName(n) {
			return Module{}, fmt.Errorf("not a module line: %q", truncate(p))
		}
		return Module{Name: n, Source: SourceBuiltin, Path: p}, nil
	}
	if !validName(f[0]) {
		return Module{}, fmt.Errorf("invalid module name %q", truncate(f[0]))
	}
	size, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || size < 0 {
		return Module{}, fmt.Errorf("module %s: invalid size %q", f[0], truncate(f[1]))
	}
	m := Module{Name: f[0], Size: size}
	if len(f) < 3 {
		return Module{}, fmt.Errorf("module %s: missing reference count", f[0])
	}
	switch {
	case f[2] == "-":
		m.RefCount = -1
	default:
		n, err := strconv.Atoi(f[2])
		if err != nil || n < 0 {
			return Module{}, fmt.Errorf("module %s: invalid reference count %q", f[0], truncate(f[2]))
		}
		m.RefCount = n
	}
	rest := f[3:]
	// /proc/modules: users ("-" or "a,b,"), state, address [, taints].
	if len(rest) >= 3 && isState(rest[1]) && strings.HasPrefix(rest[2], "0x") {
		m.Source = SourceProc
		if rest[0] != "-" {
			m.Users = splitUsers(rest[0])
			for _, u := range m.Users {
				// The kernel lists "[permanent]" among the users of a
				// module that cannot be unloaded.
				if !validName(u) && u != "[permanent]" {
					return Module{}, fmt.Errorf("module %s: invalid user %q", f[0], truncate(u))
				}
			}
		}
		m.State, m.Address = rest[1], rest[2]
		if len(rest) > 3 {
			m.Taints = strings.Join(rest[3:], " ")
			if !strings.HasPrefix(m.Taints, "(") || !strings.HasSuffix(m.Taints, ")") || len(rest) > 4 {
				return Module{}, fmt.Errorf("module %s: unexpected trailing fields %q", f[0], truncate(m.Taints))
			}
		}
		return m, nil
	}
	// lsmod: count, then optional comma-separated users, then an optional
	// [permanent] marker.
	m.Source = SourceLsmod
	if len(rest) > 0 && strings.HasPrefix(rest[len(rest)-1], "[") {
		m.Taints, rest = rest[len(rest)-1], rest[:len(rest)-1]
		if !strings.HasSuffix(m.Taints, "]") {
			return Module{}, fmt.Errorf("module %s: malformed marker %q", f[0], truncate(m.Taints))
		}
	}
	switch len(rest) {
	case 0:
	case 1:
		m.Users = splitUsers(rest[0])
		if len(m.Users) == 0 {
			return Module{}, fmt.Errorf("module %s: malformed users %q", f[0], truncate(rest[0]))
		}
		for _, u := range m.Users {
			// Users are module names; one in brackets would read as the
			// marker once printed.
			if !validName(u) {
				return Module{}, fmt.Errorf("module %s: invalid user %q", f[0], truncate(u))
			}
		}
	default:
		return Module{}, fmt.Errorf("module %s: unexpected fields %q", f[0], truncate(strings.Join(rest, " ")))
	}
	if m.RefCount < 0 {
		return Module{}, fmt.Errorf("module %s: lsmod line with reference count \"-\"", f[0])
	}
	return m, nil
}

func isState(s string) bool { return s == "Live" || s == "Loading" || s == "Unloading" }

func splitUsers(s string) []string {
	var users []string
	for _, u := range strings.Split(s, ",") {
		if u != "" {
			users = append(users, u)
		}
	}
	return users
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Normalize returns the kernel's canonical form of a module name, with
// every '-' replaced by '_'.
func Normalize(name string) string { return strings.ReplaceAll(name, "-", "_") }

// Get returns the first module called name (compared after [Normalize]),
// loaded or built in, and whether there is one.
func (l *List) Get(name string) (*Module, bool) {
	name = Normalize(name)
	for i := range l.Modules {
		if Normalize(l.Modules[i].Name) == name {
			return &l.Modules[i], true
		}
	}
	return nil, false
}

// Has reports whether module name is loaded or built into the kernel.
// A /proc/modules entry that is still loading or already unloading does not
// count as loaded.
func (l *List) Has(name string) bool {
	name = Normalize(name)
	for i := range l.Modules {
		m := &l.Modules[i]
		if Normalize(m.Name) == name && (m.State == "" || m.State == "Live") {
			return true
		}
	}
	return false
}

// Format prints l, each module in the form it was read in: /proc/modules
// lines, lsmod lines (after an lsmod header, printed before each run of
// lsmod lines) and modules.builtin paths. Parse(Format(l)) gives the same
// modules; only positions and raw text differ.
func Format(l *List) []byte {
	var b bytes.Buffer
	prev := Source("")
	for _, m := range l.Modules {
		switch m.Source {
		case SourceBuiltin:
			b.WriteString(m.Path)
		case SourceProc:
			fmt.Fprintf(&b, "%s %d %s ", m.Name, m.Size, refCount(m.RefCount))
			if len(m.Users) == 0 {
				b.WriteString("-")
			} else {
				b.WriteString(strings.Join(m.Users, ",") + ",")
			}
			fmt.Fprintf(&b, " %s %s", m.State, m.Address)
			if m.Taints != "" {
				b.WriteString(" " + m.Taints)
			}
		default:
			if prev != SourceLsmod {
				b.WriteString("Module                  Size  Used by\n")
			}
			fmt.Fprintf(&b, "%-19s %8d  %d", m.Name, m.Size, m.RefCount)
			if len(m.Users) > 0 {
				b.WriteString(" " + strings.Join(m.Users, ","))
			}
			if m.Taints != "" {
				b.WriteString(" " + m.Taints)
			}
		}
		b.WriteByte('\n')
		prev = m.Source
	}
	return b.Bytes()
}

func refCount(n int) string {
	if n < 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
