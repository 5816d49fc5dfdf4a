package report

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/proxyscan/proxyscan/analyzer/checks"
)

// Options are what renderers may vary on.
type Options struct {
	// Color enables ANSI colour (the caller decides: a terminal, NO_COLOR
	// unset, no --no-color).
	Color bool
	// Width is the terminal width for the table (0: 120 columns).
	Width int
	// FailOn is the lowest severity whose findings are failures in formats
	// that have the notion (JUnit); 0 counts every finding, [NeverFail]
	// none (the --fail-on flag).
	FailOn checks.Severity
}

// NeverFail is the FailOn of --fail-on never.
const NeverFail = checks.Error + 1

// A Renderer writes a report in one format.
type Renderer func(w io.Writer, r *Report, opts Options) error

// renderers maps format names to renderers.
var renderers = map[string]Renderer{
	"table":    RenderTable,
	"json":     RenderJSON,
	"sarif":    RenderSARIF,
	"junit":    RenderJUnit,
	"markdown": RenderMarkdown,
	"html":     RenderHTML,
}

// Formats returns the known format names, sorted.
func Formats() []string {
	out := make([]string, 0, len(renderers))
	for k := range renderers {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Render writes r in the named format.
func Render(w io.Writer, format string, r *Report, opts Options) error {
	fn, ok := renderers[format]
	if !ok {
		return fmt.Errorf("unknown output format %q (want one of %v)", format, Formats())
	}
	return fn(w, r, opts)
}

// RenderJSON writes the report as indented JSON (the contract's shape).
func RenderJSON(w io.Writer, r *Report, _ Options) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}
