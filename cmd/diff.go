package cmd

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/proxyscan/proxyscan/analyzer/diff"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/report"
	"github.com/proxyscan/proxyscan/internal/fault"
	"github.com/proxyscan/proxyscan/parsers"
)

// DiffOptions are the flags and arguments of `proxyscan diff`.
type DiffOptions struct {
	IO       *IOStreams
	Old, New string
	Output   string
	Version  string
	NoColor  bool
	Tool     diff.Tool
	// Strict reads every input strictly (the global --strict flag).
	Strict bool
}

// errDifferences reports differences; the result has been written, and the
// exit status is 1 as for findings.
var errDifferences = fmt.Errorf("the two sides differ: %w", errFindings)

// NewCmdDiff builds `proxyscan diff OLD NEW`; runF replaces diffRun in
// tests.
func NewCmdDiff(f *Factory, runF func(*DiffOptions) error) *cobra.Command {
	opts := &DiffOptions{IO: f.IO, Tool: diff.Tool{Name: "proxyscan", Version: f.Version}}
	c := &cobra.Command{
		Use:   "diff OLD NEW",
		Short: "Show what changed between two bundles",
		Long: "Load OLD and NEW — each a bundle (.tgz), a directory or a dump file, as for analyze — and list the\n" +
			"semantic changes: Services and service ports added or removed, endpoints per service port, the\n" +
			"data plane's entries and backends per service port (compared across modes), kube-proxy\n" +
			"configuration fields, version and mode, and the findings that appeared or were resolved.\n\n" +
			"Exit status: 0 no difference, 1 differences, 2 usage or input error.",
		Example: "  proxyscan diff before.tgz after.tgz\n" +
			"  proxyscan diff ./node-1-monday ./node-1-tuesday -o markdown",
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 2 {
				return flagErrorf("diff needs two paths, OLD and NEW")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			opts.Old, opts.New, opts.Strict = args[0], args[1], f.Strict
			if !c.Flags().Changed("output") {
				opts.Output = defaultOutput(f.IO)
			}
			if runF != nil {
				return runF(opts)
			}
			return diffRun(opts)
		},
	}
	fl := c.Flags()
	fl.StringVarP(&opts.Output, "output", "o", "", "output format: "+strings.Join(report.DiffFormats, ", ")+" (default table on a terminal, json otherwise)")
	fl.StringVar(&opts.Version, "version", "", "kube-proxy version to assume on both sides, e.g. 1.28 (default: from the inputs)")
	fl.BoolVar(&opts.NoColor, "no-color", false, "disable colour (NO_COLOR is honoured too)")
	registerCompletions(c, map[string]cobra.CompletionFunc{
		"output":  completeValues(report.DiffFormats...),
		"version": completeValues(versionValues()...),
	})
	return c
}

// diffLoadOptions are the options of loading each side of a diff: the
// comparison reads of the exports the service ports and the Services'
// names and positions, and the checks what they read for analyze, so the
// exports are compacted as for analyze.
func diffLoadOptions(version string, strict bool) load.Options {
	return offHeap(load.Options{Version: version, Strict: strict, Compact: true})
}

// diffHeap paces the collector of a diff, given the inputs of its larger
// side, and returns the function that ends it (tests see it called): the
// heap's goal is at least the size of those inputs, at the GC percent of
// the environment (see heapFloor), as for trace. Without it the two sides'
// loading, whose live heap grows from nothing, collected at every doubling.
// On two 10,000-Service bundles (directories) it saves about 0.08 CPU-s of
// 2 and the peak is no higher; a floor of both sides' inputs saved 0.15 but
// raised the peak of two bundle archives by 50 MB (their members are read
// whole, and their garbage grew to the floor).
var diffHeap = heapFloor

func diffRun(opts *DiffOptions) error {
	known := false
	for _, f := range report.DiffFormats {
		known = known || f == opts.Output
	}
	if !known {
		return flagErrorf("unknown output format %q (want one of %s)", opts.Output, strings.Join(report.DiffFormats, ", "))
	}
	side := opts.New
	if inputSize([]string{opts.Old}) > inputSize([]string{side}) {
		side = opts.Old
	}
	defer diffHeap([]string{side})()
	oldSnaps, newSnaps, err := loadSides(opts.Old, opts.New, diffLoadOptions(opts.Version, opts.Strict))
	if err != nil {
		return err
	}
	res := diff.Compare(opts.Tool, oldSnaps, newSnaps, diff.Options{})
	res.OldPath, res.NewPath = opts.Old, opts.New
	ropts := report.Options{Color: opts.IO.ColorEnabled(opts.NoColor), Width: opts.IO.Width}
	if err := report.Diffs.Render(opts.IO.Out, opts.Output, res, ropts); err != nil {
		return fmt.Errorf("writing the diff: %w", err)
	}
	if res.Differs() {
		return errDifferences
	}
	return nil
}

// onSide names the side of a diff, the PATH p, in its error: a file of a
// parse error that is not named by its path as given (a bundle's file,
// node/sysctl.txt) is given with it (p/node/sysctl.txt:2), as in a fleet;
// another error that does not name p is prefixed with it.
func onSide(p string, err error) error {
	if fault.Is(err) {
		return err
	}
	if named, ok := inPath(p, err); ok {
		return named
	}
	if strings.Contains(err.Error(), p) {
		return err
	}
	return fmt.Errorf("%s: %w", p, err)
}

// inPath names the PATH p, a bundle (a directory or an archive) or a
// file, in a parse error of one of its files: a file not named by its
// path as given (a bundle's member, node/sysctl.txt) is given with it
// (p/node/sysctl.txt:2), as a fleet and diff name it. It renames the
// files of every positioned error err holds (wrapped, in lists, or
// both) in place, and returns err with its whole text rebuilt with the
// new names: a wrapper made with fmt.Errorf keeps the text it was made
// with, which still names the old files. It reports whether err holds a
// parse error; another error is returned as it is.
func inPath(p string, err error) (error, bool) {
	name := func(f string) string {
		if f == p || strings.HasPrefix(f, p+string(filepath.Separator)) || strings.HasPrefix(f, p+"/") || filepath.IsAbs(f) {
			return f
		}
		return filepath.Join(p, f)
	}
	old := err.Error()
	found := false
	var pairs []string // each renamed error's text before and after
	walkErrors(err, func(e error) {
		pe, ok := e.(*parsers.Error)
		if !ok {
			return
		}
		found = true
		before := pe.Error()
		pe.Pos.File = name(pe.Pos.File)
		if after := pe.Error(); after != before {
			pairs = append(pairs, before, after)
		}
	})
	if !found {
		return err, false
	}
	if len(pairs) == 0 {
		return err, true
	}
	want := strings.NewReplacer(pairs...).Replace(old)
	if err.Error() == want {
		return err, true // every wrapper writes its text when asked
	}
	return &renamedError{msg: want, err: err}, true
}

// walkErrors calls fn with err and every error it wraps, depth first.
func walkErrors(err error, fn func(error)) {
	if err == nil {
		return
	}
	fn(err)
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		walkErrors(u.Unwrap(), fn)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walkErrors(e, fn)
		}
	}
}

// renamedError is an error whose text names files under the PATH given
// (see inPath); it wraps the error it renames.
type renamedError struct {
	msg string
	err error
}

func (e *renamedError) Error() string { return e.msg }
func (e *renamedError) Unwrap() error { return e.err }

// inSingle names the one PATH of paths in a parse error of its files (see
// inPath): analyze, trace and expect of a single bundle name the bundle
// in an error of its member as diff and a fleet do. With several PATHs,
// err is returned as it is (a fleet names each bundle itself).
func inSingle(paths []string, err error) error {
	if err == nil || len(paths) != 1 || fault.Is(err) {
		return err
	}
	named, _ := inPath(paths[0], err)
	return named
}

// loadSides loads the two sides of a diff at once with lo; the old side's
// error, when both fail, is the one returned. An export the new side holds
// byte for byte as the old side does (two nodes of one cluster, or one
// node while the cluster did not change) is decoded once, by the old
// side, while the new side parses its other files (see load.Exports).
func loadSides(old, new string, lo load.Options) (oldSnaps, newSnaps []*model.Snapshot, err error) {
	exports := load.NewExports([][]string{{old}, {new}})
	exports.Together()
	olo, nlo := lo, lo
	olo.Exports, nlo.Exports = exports.Of(0), exports.Of(1)
	var oldErr, newErr error
	g := fault.Group{Name: "diff-load"}
	g.Go(func() error { oldSnaps, oldErr = load.Load([]string{old}, olo); return nil })
	newSnaps, newErr = load.Load([]string{new}, nlo)
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	if oldErr != nil {
		return nil, nil, onSide(old, oldErr)
	}
	if newErr != nil {
		return nil, nil, onSide(new, newErr)
	}
	if err := load.Unread(old, oldSnaps); err != nil {
		return nil, nil, err
	}
	if err := load.Unread(new, newSnaps); err != nil {
		return nil, nil, err
	}
	return oldSnaps, newSnaps, nil
}
