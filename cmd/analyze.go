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
	"github.com/proxyscan/proxyscan/parsers"
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
		if _, err := incompleteFor(opts.IO, "analyze --service", s, needRules, needServices); err != nil {
			return err
		}
		res := resolve.Resolve(s, resolve.Options{})
		rep, err := proxier.ServiceDiff(res, opts.Service, proxier.Options{})
		if err != nil {
			return &FlagError{Err: err}
		}
		withholdOutside(rep, lackedOf(res), partialSets(s))
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

// lackedOf returns, by family, why the data plane of the resolved
// node's mode may not hold all kube-proxy programs there: the dump or
// listing read for it is partial (see [checks.PartialFamilies]), or the
// inputs hold none of that family while they hold one of the other (a
// listing of one nft table, a dump of one family).
func lackedOf(res *resolve.Resolution) map[model.Family]string {
	out := checks.PartialFamilies(res)
	for _, fam := range []model.Family{model.IPv4, model.IPv6} {
		other := model.IPv6
		if fam == model.IPv6 {
			other = model.IPv4
		}
		if out[fam] == "" && !res.Captured(fam) && res.Captured(other) {
			if out == nil {
				out = map[model.Family]string{}
			}
			out[fam] = "no " + string(fam) + " data plane in the inputs"
		}
	}
	return out
}

// withholdOutside leaves out of a Service's comparison what it finds
// missing that may only lie outside a partial input: a rule, chain or
// element missing in a family whose data plane is partial (partial, see
// [checks.PartialFamilies]: a dump or listing cut short, filtered, or of
// some tables only; or not given, see lackedOf), a set or set member missing when an ipset listing is
// partial (sets names it). Each family or listing with something left out
// gets a line in the report's NotChecked.
func withholdOutside(rep *proxier.ServiceReport, partial map[model.Family]string, sets string) {
	if len(partial) == 0 && sets == "" {
		return
	}
	type why struct {
		fam  model.Family
		sets bool
	}
	left := map[why]int{}
	kept := rep.Differences[:0]
	for _, d := range rep.Differences {
		if !strings.HasPrefix(string(d.Kind), "missing-") {
			kept = append(kept, d)
			continue
		}
		switch {
		case partial[d.Family] != "":
			left[why{fam: d.Family}]++
		case sets != "" && (d.Kind == proxier.MissingSet || d.Kind == proxier.MissingSetEntry):
			left[why{sets: true}]++
		default:
			kept = append(kept, d)
			continue
		}
	}
	rep.Differences = kept
	for _, fam := range []model.Family{model.IPv4, model.IPv6} {
		if n := left[why{fam: fam}]; n > 0 {
			rep.NotChecked = append(rep.NotChecked, fmt.Sprintf("%s: %s; not listed: %s that may only be outside what the inputs show",
				fam, partial[fam], pluralOf(n, "missing rule, chain or element", "missing rules, chains or elements")))
		}
	}
	if n := left[why{sets: true}]; n > 0 {
		rep.NotChecked = append(rep.NotChecked, fmt.Sprintf("%s is partial; not listed: %s that may only be outside what it shows",
			sets, pluralOf(n, "missing set or set member", "missing sets or set members")))
	}
}

// partialSets names the ipset listings of s that are partial, or "".
func partialSets(s *model.Snapshot) string {
	var names []string
	for _, in := range s.Inputs {
		if in.Partial != "" && (in.Kind == parsers.KindIPSetList || in.Kind == parsers.KindIPSetSave) {
			names = append(names, in.Path)
		}
	}
	return strings.Join(names, ", ")
}

// pluralOf returns "1 "+one, or n and many.
func pluralOf(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// defaultJobs is how many bundles analyze loads and analyses at once
// without --jobs: one per two cores, at least one. Loading a node and
// running its checks already use every core (the parsers, the export
// decoder, the reachability sweep), so that more nodes at once would add
// their memory without making the run faster.
func defaultJobs() int { return max(1, runtime.NumCPU()/2) }
