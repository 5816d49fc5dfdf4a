package load

import (
	"bytes"
	"os"
)

// NodeReportKind is the "kind" a node report (the analysis of one node
// that collect --analyze writes into its bundle, see docs/contract.md)
// starts with.
const NodeReportKind = "proxyscan-node-report"

// NodeReportFile is the name of a node report in a bundle.
const NodeReportFile = "node-report.json"

// IsNodeReport reports whether a file whose first bytes are head is a node
// report: a JSON object whose first field is "kind" with the value
// [NodeReportKind]. A node report is not a dump: bundles and directories
// are read without it, and [Units] makes each one a unit of its own.
func IsNodeReport(head []byte) bool {
	rest, ok := skipPrefix(head, "{")
	if !ok {
		return false
	}
	if rest, ok = skipPrefix(rest, `"kind"`); !ok {
		return false
	}
	if rest, ok = skipPrefix(rest, ":"); !ok {
		return false
	}
	_, ok = skipPrefix(rest, `"`+NodeReportKind+`"`)
	return ok
}

// skipPrefix skips JSON white space, then p.
func skipPrefix(b []byte, p string) ([]byte, bool) {
	b = bytes.TrimLeft(b, " \t\r\n")
	if !bytes.HasPrefix(b, []byte(p)) {
		return nil, false
	}
	return b[len(p):], true
}

// IsNodeReportFile reports whether p is a regular file that is a node
// report.
func IsNodeReportFile(p string) bool {
	st, err := os.Stat(p)
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	return IsNodeReport(fileHead(p, 64))
}

// InputError marks err as a problem with the inputs (see [IsInputError]).
func InputError(err error) error { return &inputError{msg: err.Error()} }
