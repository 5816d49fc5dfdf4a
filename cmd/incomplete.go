package cmd

import (
	"fmt"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/report"
	"github.com/proxyscan/proxyscan/analyzer/trace"
	"github.com/proxyscan/proxyscan/parsers"
)

// incompleteInputs says, for each input of s that was to be read and was
// not ("PATH was not read: REASON") or was read only in part ("PATH is
// partial: REASON"), what is missing, and returns the unread ones.
func incompleteInputs(s *model.Snapshot) (lines []string, unread []model.Input) {
	for _, in := range s.Inputs {
		switch {
		case in.Unread != "":
			lines = append(lines, fmt.Sprintf("%s was not read: %s", inputName(in), in.Unread))
			unread = append(unread, in)
		case in.Partial != "":
			lines = append(lines, fmt.Sprintf("%s is partial: %s", inputName(in), in.Partial))
		}
	}
	return lines, unread
}

// inputName names an input for messages: its bundle and path in it.
func inputName(in model.Input) string {
	if in.Bundle == "" {
		return in.Path
	}
	return in.Bundle + ": " + in.Path
}

// warnIncomplete writes one warning line per incomplete input of a
// command's result to stderr.
func warnIncomplete(io *IOStreams, command string, lines []string) {
	for _, l := range lines {
		fmt.Fprintf(io.ErrOut, "proxyscan: warning: %s: %s; the result is based on incomplete inputs\n", command, report.Escape(l))
	}
}

// Kinds of input a result rests on (see restsOnUnread).
const (
	needRules    = "rule dump"
	needServices = "Service export"
)

// restsOnUnread returns an input error (exit 2) when a command's result
// would rest on an unread input: one was not read and the snapshot holds
// no input of what the result needs (a rule dump for a trace of the
// captured rules, a Service export for the expected rules), so that the
// unread file was the one it needed.
func restsOnUnread(command string, s *model.Snapshot, unread []model.Input, need string) error {
	if len(unread) == 0 {
		return nil
	}
	has := len(s.IPTables)+len(s.NFT)+len(s.IPVS) > 0
	if need == needServices {
		has = len(s.Objects.Services) > 0
	}
	if has {
		return nil
	}
	in := unread[0]
	return parsers.Errorf(parsers.Pos{File: inputName(in)}, "not read (%s), and the result of %s rests on it: no other %s of node %s was read",
		in.Unread, command, need, nodeLabel(s))
}

// incompleteFor warns on stderr about the incomplete inputs of node s and
// returns them, or the error of a result that rests on an unread input of
// one of the kinds it needs.
func incompleteFor(io *IOStreams, command string, s *model.Snapshot, needs ...string) ([]string, error) {
	lines, unread := incompleteInputs(s)
	for _, need := range needs {
		if err := restsOnUnread(command, s, unread, need); err != nil {
			return nil, err
		}
	}
	warnIncomplete(io, command, lines)
	return lines, nil
}

// markIncomplete records in a trace that it is based on incomplete
// inputs: in its IncompleteInputs, and among its warnings, which every
// output format shows.
func markIncomplete(r *trace.Result, lines []string) {
	if len(lines) == 0 {
		return
	}
	r.IncompleteInputs = lines
	for _, l := range lines {
		r.Warnings = append(r.Warnings, "based on incomplete inputs: "+l)
	}
}
