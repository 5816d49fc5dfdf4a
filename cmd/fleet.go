package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/nodereport"
	"github.com/proxyscan/proxyscan/analyzer/report"
	"github.com/proxyscan/proxyscan/internal/fault"
	"github.com/proxyscan/proxyscan/parsers"
)

// analyzed is what is kept of one node once analysed: the node for the
// cross-node checks and its summary for the report.
type analyzed struct {
	node *checks.FleetNode
	sum  *report.Node
}

// fleetOptions say how the nodes of a run are read and analysed.
type fleetOptions struct {
	load   load.Options
	checks []*checks.Check
	// jobs is how many units are read and analysed at once.
	jobs int
	// progress, when not nil, shows how many nodes are done once the run
	// takes long.
	progress io.Writer
	// version is this proxyscan's: node reports written by another are
	// not merged.
	version string
	// reanalyze analyses the bundles that hold a node report from their
	// dumps.
	reanalyze bool
}

// analyzeNodes loads and analyses the nodes of the inputs and returns
// their summaries, in the order [load.Load] gives them, with the drift
// matrix of the cross-node checks. Each unit of the inputs (a bundle, see
// [load.Units]) is loaded, analysed and reduced to its summary and print
// before its snapshot is dropped, up to jobs units at a time, so that the
// memory is that of the nodes in flight. Progress goes to progress, when
// not nil, once the run takes long.
func analyzeNodes(paths []string, lopts load.Options, selected []*checks.Check, jobs int, progress io.Writer) ([]*report.Node, *checks.Drift, error) {
	return analyzeFleet(paths, &fleetOptions{load: lopts, checks: selected, jobs: jobs, progress: progress})
}

// analyzeFleet is [analyzeNodes] with node reports: a unit that is a node
// report, or a bundle that holds one (unless reanalyze), is read from the
// report instead of being loaded and analysed.
func analyzeFleet(paths []string, fo *fleetOptions) ([]*report.Node, *checks.Drift, error) {
	units, err := load.Units(paths)
	if err != nil {
		return nil, nil, err
	}
	restore := collectLoaded()
	defer restore()
	shared := report.NewShared()
	done, err := analyzeUnits(units, fo, shared)
	if err != nil {
		return nil, nil, err
	}
	var nodes []*checks.FleetNode
	var sums []*report.Node
	for _, u := range done {
		for _, a := range u {
			nodes = append(nodes, a.node)
			sums = append(sums, a.sum)
		}
	}
	fr := checks.CompareFleet(nodes, fo.checks)
	shared.Results(sums)
	return sums, fr.Drift, nil
}

// analyzeSnaps analyses the snapshots of a unit, dropping each once it is
// reduced.
func analyzeSnaps(snaps []*model.Snapshot, selected []*checks.Check, prints *checks.Prints) []analyzed {
	out := make([]analyzed, len(snaps))
	for i, s := range snaps {
		n := checks.AnalyzeNode(s, selected, prints)
		out[i] = analyzed{node: n, sum: report.Summarize(s, n.Result())}
		snaps[i] = nil
	}
	return out
}

// analyzeUnit reads one unit: from its node report when it is one or a
// bundle that holds one, else by loading and analysing it. A single node
// loaded is analysed without a print. The summaries keep what they have
// alike with other nodes' once, in shared.
func analyzeUnit(unit []string, fo *fleetOptions, prints *checks.Prints, shared *report.Shared, fleet bool) ([]analyzed, error) {
	out, err := readUnit(unit, fo, prints, fleet)
	for _, a := range out {
		shared.Node(a.sum)
	}
	return out, err
}

// readUnit is [analyzeUnit] without the sharing.
func readUnit(unit []string, fo *fleetOptions, prints *checks.Prints, fleet bool) ([]analyzed, error) {
	var note string
	if len(unit) == 1 {
		a, ok, why, err := readReport(unit[0], fo, prints)
		if ok || err != nil {
			return a, err
		}
		note = why
	}
	snaps, err := load.Load(unit, fo.load)
	if err != nil {
		return nil, err
	}
	if !fleet && len(snaps) == 1 {
		prints = nil
	}
	out := analyzeSnaps(snaps, fo.checks, prints)
	if note != "" {
		for _, a := range out {
			a.sum.Notes = append(a.sum.Notes, note)
		}
	}
	return out, nil
}

// readReport reads the node report a path is, or its bundle holds. ok is
// false when there is none (or reanalyze asks for the dumps), and why then
// says why a report in the bundle was not used.
func readReport(p string, fo *fleetOptions, prints *checks.Prints) (out []analyzed, ok bool, why string, err error) {
	own := load.IsNodeReportFile(p)
	var r io.ReadCloser
	switch {
	case own:
		f, err := os.Open(p)
		if err != nil {
			return nil, false, "", load.InputError(fmt.Errorf("reading %s: %w", p, err))
		}
		r = f
	case fo.reanalyze:
		return nil, false, "", nil
	default:
		var found bool
		r, found, err = nodereport.Open(p)
		if err != nil || !found {
			return nil, false, "", nil // the loader says what is wrong with the bundle
		}
	}
	defer r.Close()
	if given := givenFlags(fo.load); given != "" {
		// The report was written without them: its answers are not theirs.
		if own {
			return nil, false, "", load.InputError(fmt.Errorf("%s: a node report is analysed already: %s cannot apply to it (give the node's bundle)", p, given))
		}
		return nil, false, fmt.Sprintf("%s not used: it was written without %s; the node was analysed from its dumps", load.NodeReportFile, given), nil
	}
	reopen := func() (io.ReadCloser, error) { return os.Open(p) }
	if !own {
		reopen = func() (io.ReadCloser, error) {
			r, found, err := nodereport.Open(p)
			if err == nil && !found {
				err = fmt.Errorf("%s: no %s", p, load.NodeReportFile)
			}
			return r, err
		}
	}
	n, err := nodereport.Read(r, p, prints, nodereport.Expect{Version: fo.version, Checks: checks.IDs(fo.checks), Reopen: reopen})
	var mm *nodereport.MismatchError
	switch {
	case errors.As(err, &mm) && own:
		return nil, false, "", load.InputError(fmt.Errorf("%s: %s: analyze the node's bundle, or write its report again with this proxyscan and these checks (proxyscan collect --analyze)", p, mm.What))
	case errors.As(err, &mm):
		return nil, false, fmt.Sprintf("%s not used: %s; the node was analysed from its dumps", load.NodeReportFile, mm.What), nil
	case err != nil && own:
		return nil, false, "", load.InputError(fmt.Errorf("%s: %w", p, err))
	case err != nil:
		return nil, false, "", load.InputError(fmt.Errorf("%s: %s: %w (--reanalyze analyses the bundle from its dumps)", p, load.NodeReportFile, err))
	}
	return []analyzed{{node: n.Fleet, sum: n.Summary}}, true, "", nil
}

// givenFlags names the flags of the loader that change the analysis of a
// node (--node, --version), when given: a node report, written without
// them, does not answer for them.
func givenFlags(o load.Options) string {
	var out []string
	if o.Node != "" {
		out = append(out, "--node")
	}
	if o.Version != "" {
		out = append(out, "--version")
	}
	return strings.Join(out, " and ")
}

// analyzeUnits reads and analyses units, up to jobs at a time. The error
// is that of the first unit, in their order, that failed; once a unit
// failed no other is started. The nodes' summaries keep what they have
// alike once, in shared.
func analyzeUnits(units [][]string, fo *fleetOptions, shared *report.Shared) ([][]analyzed, error) {
	prints := checks.NewPrints()
	out := make([][]analyzed, len(units))
	errs := make([]error, len(units))
	var mu sync.Mutex
	failed := false
	progress := fo.progress
	if len(units) == 1 {
		progress = nil
	}
	p := newFleetProgress(progress, len(units))
	defer p.stop()
	g := fault.Group{Name: "analyze.units"}
	next := make(chan int)
	worker := func() error {
		for i := range next {
			mu.Lock()
			skip := failed
			mu.Unlock()
			if skip {
				continue
			}
			a, err := analyzeUnit(units[i], fo, prints, shared, len(units) > 1)
			if err == nil {
				out[i] = a
			} else if len(units) > 1 {
				err = inBundle(units[i][0], err)
			}
			mu.Lock()
			errs[i], failed = err, failed || err != nil
			mu.Unlock()
			p.done()
		}
		return nil
	}
	jobs := min(max(fo.jobs, 1), len(units))
	for w := 0; w < jobs; w++ {
		fault.GoDraining(&g, next, worker)
	}
	for i := range units {
		next <- i
	}
	close(next)
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// progressDelay is how long a run goes before its progress is shown.
const progressDelay = 2 * time.Second

// fleetProgress shows on a terminal how many nodes are done and how long the
// rest should take, once the run takes long.
type fleetProgress struct {
	w           io.Writer
	total       int
	start       time.Time
	mu          sync.Mutex
	count       int
	shown, quit chan struct{}
	once        sync.Once
	wrote       bool
}

func newFleetProgress(w io.Writer, total int) *fleetProgress {
	p := &fleetProgress{w: w, total: total, start: time.Now(), quit: make(chan struct{}), shown: make(chan struct{})}
	if w == nil {
		close(p.shown)
		return p
	}
	go p.run()
	return p
}

// run redraws the line every second from progressDelay on.
func (p *fleetProgress) run() {
	defer close(p.shown)
	t := time.NewTimer(progressDelay)
	defer t.Stop()
	for {
		select {
		case <-p.quit:
			p.mu.Lock()
			if p.wrote {
				fmt.Fprint(p.w, "\r\033[K")
			}
			p.mu.Unlock()
			return
		case <-t.C:
			p.draw()
			t.Reset(time.Second)
		}
	}
}

func (p *fleetProgress) draw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "\r\033[Kproxyscan: %s", progressLine(p.count, p.total, time.Since(p.start)))
	p.wrote = true
}

// progressLine says how many of total nodes are analysed after elapsed,
// and how long the others should take.
func progressLine(count, total int, elapsed time.Duration) string {
	line := fmt.Sprintf("%d/%d nodes analysed", count, total)
	if count > 0 && count < total {
		left := time.Duration(float64(elapsed) / float64(count) * float64(total-count)).Round(time.Second)
		line += fmt.Sprintf(", about %s left", left)
	}
	return line
}

func (p *fleetProgress) done() {
	p.mu.Lock()
	p.count++
	p.mu.Unlock()
}

// stop clears the line, if it was drawn, and waits until it is.
func (p *fleetProgress) stop() {
	p.once.Do(func() { close(p.quit) })
	<-p.shown
}

// inBundle names the bundle of an input error: a file of a parse error is
// given with the bundle's path, another error is prefixed with it.
func inBundle(bundle string, err error) error {
	if fault.Is(err) {
		return err
	}
	var list parsers.ErrorList
	var one *parsers.Error
	switch {
	case errors.As(err, &list):
		for _, e := range list {
			e.Pos.File = filepath.Join(bundle, e.Pos.File)
		}
		return err
	case errors.As(err, &one):
		one.Pos.File = filepath.Join(bundle, one.Pos.File)
		return err
	case strings.Contains(err.Error(), bundle):
		return err
	}
	return fmt.Errorf("%s: %w", bundle, err)
}
