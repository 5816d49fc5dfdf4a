package cmd

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/internal/fault"
	"github.com/proxyscan/proxyscan/parsers"
)

// Exit codes of the contract.
const (
	exitOK       = 0 // no finding at or above --fail-on
	exitFindings = 1 // findings at or above --fail-on
	exitInput    = 2 // usage or input error
	exitInternal = 3 // proxyscan itself failed
)

// FlagError is a usage error: bad flags or arguments.
type FlagError struct{ Err error }

func (e *FlagError) Error() string { return e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

func flagErrorf(format string, args ...any) error {
	return &FlagError{Err: fmt.Errorf(format, args...)}
}

// errFindings reports findings at or above --fail-on; the report has been
// written already, so it prints nothing more.
var errFindings = errors.New("findings at or above the --fail-on severity")

// exitCode maps an error to the contract's exit codes, in one place.
// proxyscan's own failures come first: whatever they wrap (a parse error
// of the reference proxier's own output, say), they are not the input's.
func exitCode(err error) int {
	switch {
	case err == nil:
		return exitOK
	case fault.Is(err):
		return exitInternal
	case errors.Is(err, errFindings):
		return exitFindings
	}
	var fe *FlagError
	if errors.As(err, &fe) || parsers.IsInputError(err) || load.IsInputError(err) {
		return exitInput
	}
	return exitInternal
}

// requirePaths is the Args check of the commands that read inputs: at
// least one PATH.
func requirePaths(command string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) == 0 {
			return flagErrorf("%s needs at least one PATH", command)
		}
		return nil
	}
}
