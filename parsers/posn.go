package parsers

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
)

// Pos is a position in an input file. Line is 1-based; 0 means the position
// is the whole file. Path is a JSON path (for JSON inputs such as
// `nft -j list ruleset`), empty for line-oriented inputs.
type Pos struct {
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
	Path string `json:"path,omitempty"`
}

// String formats p as file:line (or file, or file:$.json.path).
func (p Pos) String() string {
	s := p.File
	if s == "" {
		s = "<input>"
	}
	if p.Line > 0 {
		s += ":" + strconv.Itoa(p.Line)
	}
	if p.Path != "" {
		s += ":" + p.Path
	}
	return s
}

// IsValid reports whether p names a file.
func (p Pos) IsValid() bool { return p.File != "" }

// Error is an input error at a position: a malformed, truncated or hostile
// input. It prints as "file:line: message".
type Error struct {
	Pos Pos
	Msg string
}

// Error implements the error interface.
func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

// Errorf returns an *Error at pos with a formatted message. Messages are
// lower-case and carry no trailing punctuation.
func Errorf(pos Pos, format string, args ...any) *Error {
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// ErrorList collects input errors. The zero value is an empty list.
type ErrorList []*Error

// Add appends an error at pos.
func (l *ErrorList) Add(pos Pos, format string, args ...any) {
	*l = append(*l, Errorf(pos, format, args...))
}

// Sort orders the list by file, then line.
func (l ErrorList) Sort() {
	sort.SliceStable(l, func(i, j int) bool {
		if l[i].Pos.File != l[j].Pos.File {
			return l[i].Pos.File < l[j].Pos.File
		}
		return l[i].Pos.Line < l[j].Pos.Line
	})
}

// Error implements the error interface: the first error, and how many more.
func (l ErrorList) Error() string {
	switch len(l) {
	case 0:
		return "no errors"
	case 1:
		return l[0].Error()
	}
	return fmt.Sprintf("%s (and %d more errors)", l[0].Error(), len(l)-1)
}

// Unwrap returns the errors of the list, so errors.Is and errors.As see
// each of them.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// Err returns nil for an empty list and the list itself otherwise.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// IsInputError reports whether err is (or wraps) an *Error or an ErrorList:
// a problem with the user's input rather than with proxyscan.
func IsInputError(err error) bool {
	var e *Error
	var l ErrorList
	return errors.As(err, &e) || errors.As(err, &l)
}
