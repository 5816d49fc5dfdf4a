package cmd

import (
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/proxier"
	"github.com/proxyscan/proxyscan/analyzer/report"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
)

// AnalyzeOptions are the flags and arguments of `proxyscan analyze`.
type AnalyzeOptions struct {
	IO      *IOStreams
	Paths   []string
	Output  string
	FailOn  string
	Only    []string
	Skip    []string
	Node    string
	Version string
	NoColor bool
	// Verbose lists in the table every check that did not run, with the
	// reason.
	Verbose bool
	Tool    report.Tool
	// Strict reads every input strictly (the global --strict flag).
	Strict bool
	// Service, when set, prints the comparison of the expected and
	// captured data planes for that Service or service port instead of
	// the report.
	Service string
	// Jobs is how many nodes are loaded and analysed at once.
	Jobs int
	// Reanalyze analyses bundles that hold a node report from their
	// dumps instead of reading the report.
	Reanalyze bool
}

// NewCmdAnalyze builds `proxyscan analyze`; runF replaces analyzeRun in
// tests.
func NewCmdAnalyze(f *Factory, runF func(*AnalyzeOptions) error) *cobra.Command {
	opts := &AnalyzeOptions{IO: f.IO, Tool: report.Tool{Name: "proxyscan", Version: f.Version}}
	c := &cobra.Command{
		Use:   "analyze PATH...",
		Short: "Analyze bundles, directories or dump files and report findings",
		Long: "Load every PATH — a bundle (.tgz), a directory, or single files such as iptables-save output and\n" +
			"kubectl YAML/JSON exports, in any mix — into one model per node, run the checks and report.\n" +
			"File kinds are recognised by content, not by name.\n\n" +
			"A node report (node-report.json, written by collect --analyze) is merged as it is, and a bundle that\n" +
			"holds one is read from it without loading its dumps (--reanalyze loads them): thousands of nodes\n" +
			"analysed where they run are merged in seconds. A report of another proxyscan version or another\n" +
			"selection of checks is never mixed in: its bundle is analysed from its dumps, a report of its own is refused.\n\n" +
			"Exit status: 0 no finding at or above --fail-on, 1 findings at or above it, 2 usage or input error.",
		Example: "  proxyscan analyze bundle.tgz\n" +
			"  proxyscan analyze iptables-save.txt cluster.yaml --node worker-1\n" +
			"  proxyscan analyze ./dumps -o json --fail-on warning\n" +
			"  proxyscan analyze ./reports    # the node-report.json of every node",
		Args: requirePaths("analyze"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Paths, opts.Strict = args, f.Strict
			if !c.Flags().Changed("output") {
				opts.Output = defaultOutput(f.IO)
			}
			if runF != nil {
				return runF(opts)
			}
			return analyzeRun(opts)
		},
	}
	fl := c.Flags()
	fl.StringVarP(&opts.Output, "output", "o", "", "output format: "+strings.Join(report.Formats(), ", ")+" (default table on a terminal, json otherwise)")
	fl.StringVar(&opts.FailOn, "fail-on", "error", "lowest severity that makes the exit status 1: error, warning, info or never; inconclusive fails on errors and on a verdict that is not conclusive (no finding, but inputs missing)")
	fl.StringSliceVar(&opts.Only, "only", nil, "run only these checks (comma-separated IDs)")
	fl.StringSliceVar(&opts.Skip, "skip", nil, "do not run these checks (comma-separated IDs)")
	fl.StringVar(&opts.Node, "node", "", "name of the node the data plane was captured on (decides which endpoints are local)")
	fl.StringVar(&opts.Version, "version", "", "kube-proxy version to assume, e.g. 1.28 (default: from the inputs, else the newest)")
	fl.BoolVar(&opts.NoColor, "no-color", false, "disable colour (NO_COLOR is honoured too)")
	fl.StringVar(&opts.Service, "service", "", "print, instead of the report, the rules kube-proxy should have programmed for this Service (ns/name or ns/name:port) that are missing or extra; exit status 1 when there are any (table or json output)")
	fl.IntVarP(&opts.Jobs, "jobs", "j", 0, "how many bundles to load and analyse at once (default: one per two cores, at least one: each uses every core); memory grows with it, not with the number of bundles")
	fl.BoolVar(&opts.Reanalyze, "reanalyze", false, "analyze bundles from their dumps even when they hold a node report (collect --analyze); reports of their own (node-report.json) are always read")
	fl.BoolVar(&opts.Verbose, "verbose", false, "list in the table every check that did not run, with the reason (also those that cannot apply to the node)")
	registerCompletions(c, map[string]cobra.CompletionFunc{
		"output":  completeValues(report.Formats()...),
		"fail-on": completeValues(failOnValues...),
		"only":    completeCheckList,
		"skip":    completeCheckList,
		"version": completeValues(versionValues()...),
		"node":    completeNothing,
		"service": completeNothing,
		"jobs":    completeNothing,
	})
	return c
}

// defaultOutput is the format of a command's output when -o is not given:
// table on a terminal, else json. It then says so on stderr, when that is
// a terminal (a pipeline stays quiet).
func defaultOutput(io *IOStreams) string {
	if io.OutTTY {
		return "table"
	}
	if io.ErrTTY {
		fmt.Fprintln(io.ErrOut, "proxyscan: writing JSON: stdout is not a terminal; -o table for the table")
	}
	return "json"
}

// failThreshold reads --fail-on; 0 means never. inconclusive is error,
// plus a failure on an inconclusive verdict (see [failsInconclusive]).
func failThreshold(s string) (checks.Severity, error) {
	if strings.EqualFold(s, "never") || strings.EqualFold(s, "none") {
		return 0, nil
	}
	if failsInconclusive(s) {
		return checks.Error, nil
	}
	sev, err := checks.ParseSeverity(s)
	if err != nil {
		return 0, flagErrorf("invalid --fail-on %q (want error, warning, info, inconclusive or never)", s)
	}
	return sev, nil
}

// failsInconclusive reports --fail-on inconclusive.
func failsInconclusive(s string) bool { return strings.EqualFold(s, "inconclusive") }

func analyzeRun(opts *AnalyzeOptions) error {
	threshold, err := failThreshold(opts.FailOn)
	if err != nil {
		return err
	}
	if opts.Service != "" {
		return serviceRun(opts, threshold)
	}
	selected, err := checks.Select(checks.All, checks.Options{Only: opts.Only, Skip: opts.Skip})
	if err != nil {
		return unknownCheck(err)
	}
	if _, err := checkFormat(opts.Output); err != nil {
		return err
	}
	jobs := opts.Jobs
	switch {
	case jobs < 0:
		return flagErrorf("invalid --jobs %d (want 1 or more, or 0 for the default)", jobs)
	case jobs == 0:
		jobs = defaultJobs()
	}
	var progress io.Writer
	if opts.IO.ErrTTY {
		progress = opts.IO.ErrOut
	}
	nodes, drift, err := analyzeFleet(opts.Paths, &fleetOptions{
		load:   load.Options{Node: opts.Node, Version: opts.Version, Compact: true, Strict: opts.Strict},
		checks: selected, jobs: jobs, progress: progress, version: opts.Tool.Version, reanalyze: opts.Reanalyze,
	})
	if err != nil {
		return err
	}
	rep := report.BuildNodes(opts.Tool, nodes, drift)
	ropts := report.Options{Color: opts.IO.ColorEnabled(opts.NoColor), Width: opts.IO.Width, FailOn: threshold, FailInconclusive: failsInconclusive(opts.FailOn), Verbose: opts.Verbose}
	if threshold == 0 {
		ropts.FailOn = report.NeverFail
	}
	if err := report.Render(opts.IO.Out, opts.Output, rep, ropts); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	if threshold > 0 && rep.Count(threshold) > 0 || failsInconclusive(opts.FailOn) && rep.Inconclusive() {
		return errFindings
	}
	return nil
}

func checkFormat(format string) (string, error) {
	for _, f := range report.Formats() {
		if f == format {
			return f, nil
		}
	}
	return "", flagErrorf("unknown output format %q (want one of %s)", format, strings.Join(report.Formats(), ", "))
}

// serviceRun prints the expected-versus-captured comparison of one
// Service for every node.
func serviceRun(opts *AnalyzeOptions, threshold checks.Severity) error {
	if _, ok := model.ParseServicePortName(opts.Service); !ok {
		return flagErrorf("invalid --service %q (want ns/name or ns/name:port)", opts.Service)
	}
	if opts.Output != "table" && opts.Output != "json" {
		return flagErrorf("--service prints table or json output, not %q", opts.Output)
	}
	snaps, err := load.Load(opts.Paths, offHeap(load.Options{Node: opts.Node, Version: opts.Version, Strict: opts.Strict}))
	if err != nil {
		return inSingle(opts.Paths, err)
	}
	var reps []*proxier.ServiceReport
	diffs := 0
	for _, s := range snaps {
		rep, err := proxier.ServiceDiff(resolve.Resolve(s, resolve.Options{}), opts.Service, proxier.Options{})
		if err != nil {
			return &FlagError{Err: err}
		}
		reps = append(reps, rep)
		diffs += len(rep.Differences)
	}
	if err := report.ServiceReports.Render(opts.IO.Out, opts.Output, reps, report.Options{}); err != nil {
		return fmt.Errorf("writing the comparison: %w", err)
	}
	if threshold > 0 && diffs > 0 {
		return errFindings
	}
	return nil
}

// defaultJobs is how many bundles analyze loads and analyses at once
// without --jobs: one per two cores, at least one. Loading a node and
// running its checks already use every core (the parsers, the export
// decoder, the reachability sweep), so that more nodes at once would add
// their memory without making the run faster.
func defaultJobs() int { return max(1, runtime.NumCPU()/2) }
