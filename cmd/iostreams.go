package cmd

import (
	"bytes"
	"io"
	"os"
	"strconv"

	"golang.org/x/term"
)

// IOStreams are the standard streams of a command and what is known about
// the terminal.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// OutTTY and ErrTTY report whether stdout and stderr are terminals.
	OutTTY, ErrTTY bool
	// Width is the terminal width (0 when unknown).
	Width int
	// NoColorEnv reports NO_COLOR set to a value other than the empty
	// string in the environment.
	NoColorEnv bool
}

// System returns the process's streams.
func System() *IOStreams {
	s := &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	s.OutTTY = term.IsTerminal(int(os.Stdout.Fd()))
	s.ErrTTY = term.IsTerminal(int(os.Stderr.Fd()))
	if s.OutTTY {
		if w, _, err := term.GetSize(int(os.Stdout.Fd())); err == nil {
			s.Width = w
		}
	} else if c, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil {
		s.Width = c
	}
	s.NoColorEnv = noColorEnv(os.Getenv("NO_COLOR"))
	return s
}

// noColorEnv reports whether a value of NO_COLOR turns colour off: any
// value but the empty string does (no-color.org), so that NO_COLOR= left
// empty by a script does not.
func noColorEnv(v string) bool { return v != "" }

// Test returns streams backed by buffers, not terminals.
func Test() (*IOStreams, *bytes.Buffer, *bytes.Buffer) {
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: &bytes.Buffer{}, Out: out, ErrOut: errOut}, out, errOut
}

// ColorEnabled reports whether stdout gets colour: a terminal, NO_COLOR
// unset and no --no-color.
func (s *IOStreams) ColorEnabled(noColorFlag bool) bool {
	return s.OutTTY && !s.NoColorEnv && !noColorFlag
}
