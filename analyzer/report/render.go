package report

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/diff"
	"github.com/proxyscan/proxyscan/analyzer/proxier"
	"github.com/proxyscan/proxyscan/analyzer/trace"
)

// Options are what renderers may vary on.
type Options struct {
	// Color enables ANSI colour (the caller decides: a terminal, NO_COLOR
	// unset, no --no-color).
	Color bool
	// Width is the terminal width for the table (0: 120 columns); no
	// line of the table is wider.
	Width int
	// Verbose lists, in the table, every check that did not run with the
	// reason, those that cannot apply to the node included (the --verbose
	// flag); in a trace's table it prints every rule in full, and with
	// --compare both walks.
	Verbose bool
	// FailOn is the lowest severity whose findings are failures in formats
	// that have the notion (JUnit); 0 counts every finding, [NeverFail]
	// none (the --fail-on flag).
	FailOn checks.Severity
	// FailInconclusive makes an inconclusive verdict a failure in formats
	// that have the notion (JUnit), as --fail-on inconclusive makes it
	// exit 1.
	FailInconclusive bool
}

// NeverFail is the FailOn of --fail-on never.
const NeverFail = checks.Error + 1

// A Renderer writes a value in one format.
type Renderer[T any] func(w io.Writer, v T, opts Options) error

// A Registry holds the formats one kind of output can be written in: every
// command's output goes through one.
type Registry[T any] struct {
	// What names the output in errors ("report", "trace").
	What      string
	renderers map[string]Renderer[T]
}

// Formats returns the format names, sorted.
func (g Registry[T]) Formats() []string {
	out := make([]string, 0, len(g.renderers))
	for k := range g.renderers {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Render writes v in the named format.
func (g Registry[T]) Render(w io.Writer, format string, v T, opts Options) error {
	fn, ok := g.renderers[format]
	if !ok {
		return fmt.Errorf("unknown output format %q for the %s (want one of %s)", format, g.What, strings.Join(g.Formats(), ", "))
	}
	return fn(w, v, opts)
}

// The registries of proxyscan's outputs.
var (
	// Reports are analyze's reports.
	Reports = Registry[*Report]{What: "report", renderers: map[string]Renderer[*Report]{
		"table":    RenderTable,
		"json":     RenderJSON,
		"sarif":    RenderSARIF,
		"junit":    RenderJUnit,
		"markdown": RenderMarkdown,
		"html":     RenderHTML,
	}}
	// Traces are trace's results, one per node.
	Traces = Registry[[]*trace.Result]{What: "trace", renderers: map[string]Renderer[[]*trace.Result]{
		"table": RenderTraceTable,
		"json":  jsonOneOrMany[*trace.Result],
	}}
	// Comparisons are trace --compare's, one per node.
	Comparisons = Registry[[]*trace.Comparison]{What: "comparison", renderers: map[string]Renderer[[]*trace.Comparison]{
		"table": RenderCompareTable,
		"json":  jsonOneOrMany[*trace.Comparison],
	}}
	// Diffs are diff's results.
	Diffs = Registry[*diff.Result]{What: "diff", renderers: map[string]Renderer[*diff.Result]{
		"table":    RenderDiffTable,
		"json":     jsonValue[*diff.Result],
		"markdown": RenderDiffMarkdown,
	}}
	// ServiceReports are analyze --service's comparisons, one per node.
	ServiceReports = Registry[[]*proxier.ServiceReport]{What: "Service comparison", renderers: map[string]Renderer[[]*proxier.ServiceReport]{
		"table": RenderServiceTable,
		"json":  jsonValue[[]*proxier.ServiceReport],
	}}
)

// Formats returns the formats of analyze's report, sorted.
func Formats() []string { return Reports.Formats() }

// Render writes an analyze report in the named format.
func Render(w io.Writer, format string, r *Report, opts Options) error {
	return Reports.Render(w, format, r, opts)
}

// RenderJSON writes the report as indented JSON (the contract's shape),
// a field and a list element at a time.
func RenderJSON(w io.Writer, r *Report, _ Options) error { return streamJSON(w, r) }

// jsonValue writes v as indented JSON, HTML characters unescaped.
func jsonValue[T any](w io.Writer, v T, _ Options) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// jsonOneOrMany writes one item as a JSON object and several (one per
// node) as an array.
func jsonOneOrMany[T any](w io.Writer, items []T, opts Options) error {
	if len(items) == 1 {
		return jsonValue(w, items[0], opts)
	}
	if items == nil {
		items = []T{}
	}
	return jsonValue(w, items, opts)
}
