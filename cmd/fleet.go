package cmd

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/nodereport"
	"github.com/proxyscan/proxyscan/analyzer/report"
	"github.com/proxyscan/proxyscan/internal/fault"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/nft"
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
	// together reads bundles given with loose cluster-level files all at
	// once rather than one at a time with the loose files read once (tests
	// compare both).
	together bool
	// exports lets the units share the decoding of an export that
	// several of them hold byte for byte (see load.Exports), unless
	// decodeEach (tests compare both).
	exports    *load.Exports
	decodeEach bool
}

// fleetUnits splits the inputs into units (see [load.Plan]): with loose
// cluster-level files beside several bundles, each bundle is a unit and
// fo.load.Shared holds the loose files, read once.
func fleetUnits(paths []string, fo *fleetOptions) ([][]string, error) {
	if fo.together {
		return load.Units(paths)
	}
	units, shared, err := load.Plan(paths, fo.load)
	if err != nil {
		return nil, err
	}
	fo.load.Shared = shared
	return units, nil
}

// analyzeNodes loads and analyses the nodes of the inputs and returns
// their summaries, in the order [load.Load] gives them, with the drift
// matrix of the cross-node checks. Each unit of the inputs (a bundle, see
// [load.Units]) is loaded, analysed and reduced to its summary and print
// before its snapshot is dropped, up to jobs units at a time, each job
// loading its next unit as it analyses one, so that the memory is that of
// the nodes in flight (at most two per job). Progress goes to progress, when
// not nil, once the run takes long.
func analyzeNodes(paths []string, lopts load.Options, selected []*checks.Check, jobs int, progress io.Writer) ([]*report.Node, *checks.Drift, error) {
	return analyzeFleet(paths, &fleetOptions{load: lopts, checks: selected, jobs: jobs, progress: progress})
}

// analyzeFleet is [analyzeNodes] with node reports: a unit that is a node
// report, or a bundle that holds one (unless reanalyze), is read from the
// report instead of being loaded and analysed.
func analyzeFleet(paths []string, fo *fleetOptions) ([]*report.Node, *checks.Drift, error) {
	paths, repeats := load.SamePaths(paths)
	sums, drift, err := analyzeFleetOnce(paths, fo)
	if errors.Is(err, load.ErrReadTogether) {
		// A loose file given with the bundles is not to be read once for
		// all of them after all: read everything together, which reports
		// it as it is.
		again := *fo
		again.together, again.load.Shared = true, nil
		sums, drift, err = analyzeFleetOnce(paths, &again)
	}
	if err == nil {
		noteRepeats(sums, repeats)
	}
	return sums, drift, err
}

// noteRepeats notes each file or directory given more than once (read
// once) on the nodes read from it, or on the first node when none is
// (a loose file, a directory of bundles).
func noteRepeats(sums []*report.Node, repeats []load.Repeat) {
	for _, r := range repeats {
		noted := false
		for _, n := range sums {
			if b := n.BundlePath(); b != "" && filepath.Clean(b) == filepath.Clean(r.Path) {
				n.Notes = append(n.Notes, r.Note())
				noted = true
			}
		}
		if !noted && len(sums) > 0 {
			sums[0].Notes = append(sums[0].Notes, r.Note())
		}
	}
}

// oncePaths returns the paths with each file or directory given more than
// once kept once (see load.SamePaths), warning on stderr for each repeat.
func oncePaths(io *IOStreams, command string, paths []string) []string {
	kept, repeats := load.SamePaths(paths)
	for _, r := range repeats {
		fmt.Fprintf(io.ErrOut, "proxyscan: warning: %s: %s\n", command, report.Escape(r.Note()))
	}
	return kept
}

// analyzeFleetOnce is [analyzeFleet] of the units of the inputs.
func analyzeFleetOnce(paths []string, fo *fleetOptions) ([]*report.Node, *checks.Drift, error) {
	units, err := fleetUnits(paths, fo)
	if err != nil {
		return nil, nil, err
	}
	if len(units) == 1 {
		// One unit's snapshots live until the run ends. Those of a
		// fleet are dropped unit by unit: their text stays on the heap,
		// freed with them (a mapping could only be freed once nothing
		// kept of its node, summaries, prints and evidence, points into
		// it). The heap may grow to the unit's size before a
		// collection; a fleet's units are each much smaller than the
		// fleet, whose heap gets a room instead (heapPacing).
		one := *fo
		one.load = offHeap(fo.load)
		fo = &one
	}
	if len(units) > 1 && !fo.decodeEach {
		fo.exports = load.NewExports(units)
	}
	restore := collectLoadedAt(heapPacing(units, fo.exports != nil))
	defer restore()
	shared := report.NewShared()
	done, err := analyzeUnits(units, fo, shared)
	if err != nil {
		return nil, nil, err
	}
	if err := fo.load.Shared.CheckSplit(); err != nil {
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
	noteSameNode(sums)
	fr := checks.CompareFleet(nodes, fo.checks)
	shared.Results(sums)
	return sums, fr.Drift, nil
}

// fleetRoom is the room a fleet's heap gets over what the last collection
// left live, whatever the number of its units: a fleet of small nodes,
// whose live heap is a few megabytes (the prints, the report, the nodes in
// flight), would otherwise get room for a fraction of a node at GC percent
// 50 and collect several times per node; a fleet of large nodes, whose
// heap holds more than twice the room once its first node is loaded, is
// paced by the GC percent alone, as before.
const fleetRoom = 16 << 20

// sharedGCPercent is the GC percent of a fleet whose bundles may share an
// export (see load.Exports), for its large nodes (under about 25 MB live
// the room applies). Its heap then holds, beside the nodes in flight and
// what the fleet keeps for the run (the prints, the summaries), the
// objects of an export for several nodes, 29 MB for bundles of a
// 10,000-Service node, and the service ports drafted from them once. At
// 40, where such a fleet peaked about as high as when each bundle decoded
// its own export, four bundles of that node took 19 to 21 collections,
// which marked 2.4 to 2.7 GB in all, about a sixth of the run's CPU time;
// at 65, 14 or 15 marking 1.6 to 1.9 GB, for a peak heap 5 to 25 MB
// higher (80 and 100 marked hardly less and peaked higher still). The
// room is what the fleet's target leaves: its peak resident memory is
// to stay within 2.2 times one bundle's (see docs/design.md, "Fleets"),
// and it is still a share of what is live, so that the memory follows
// the nodes in flight, not the number of nodes.
const sharedGCPercent = 65

// heapPacing returns the floor of the heap's goal, its room over what is
// live and the GC percent (see collectLoadedAt) for a run of units: one
// unit's heap may grow to the unit's size, a fleet's to fleetRoom over
// what is live, at sharedGCPercent when its units may share an export.
func heapPacing(units [][]string, sharing bool) (floor, room int64, base int) {
	switch {
	case len(units) == 1:
		return inputSize(units[0]), 0, checksGCPercent
	case sharing:
		return 0, fleetRoom, sharedGCPercent
	}
	return 0, fleetRoom, checksGCPercent
}

// sameNodeTail ends the note of noteSameNode, a note of the fleet rather
// than of the node alone.
const sameNodeTail = "they are analysed and compared as separate nodes; to compare captures of one node taken at two times, run proxyscan diff OLD NEW"

// noteSameNode notes, on the nodes of one name read from several bundles
// (captures of one node taken at two times, given to analyze), that they
// are analysed and compared as separate nodes, and that diff compares
// captures of one node.
func noteSameNode(sums []*report.Node) {
	by := map[string][]int{}
	var names []string
	for i, n := range sums {
		if n.Name == "" {
			continue
		}
		if by[n.Name] == nil {
			names = append(names, n.Name)
		}
		by[n.Name] = append(by[n.Name], i)
	}
	for _, name := range names {
		is := by[name]
		if len(is) < 2 {
			continue
		}
		where := make([]string, 0, len(is))
		for _, i := range is {
			where = append(where, sourceOf(sums[i]))
		}
		note := fmt.Sprintf("node %s is the node of %d bundles (%s): %s", name, len(is), strings.Join(where, ", "), sameNodeTail)
		for _, i := range is {
			sums[i].Notes = append(sums[i].Notes, note)
		}
	}
}

// sourceOf names the bundle (or first input) a node was read from.
func sourceOf(n *report.Node) string {
	if b := n.BundlePath(); b != "" {
		return b
	}
	if len(n.Inputs) > 0 {
		return n.Inputs[0].Path
	}
	return "?"
}

// analyzeSnaps analyses the snapshots of a unit, dropping each once it is
// reduced, and calls checked, when not nil, once each node's checks ran.
func analyzeSnaps(snaps []*model.Snapshot, selected []*checks.Check, prints *checks.Prints, checked func()) []analyzed {
	out := make([]analyzed, len(snaps))
	for i, s := range snaps {
		checksStart()
		n := checks.AnalyzeNodeThen(s, selected, prints, checked)
		out[i] = analyzed{node: n, sum: report.Summarize(s, n.Result())}
		snaps[i] = nil
	}
	return out
}

// loaded is a unit read as far as it goes before its checks: its nodes
// read from a node report (done), or its snapshots loaded, to be analysed.
type loaded struct {
	i     int
	done  []analyzed
	snaps []*model.Snapshot
	// note says why the node report of a bundle was not used.
	note string
	// forget drops what was read ahead of the unit's dumps and not
	// taken (see checks.ReadAhead), once its checks ran.
	forget func()
	// own is the size of the node-level files of the unit's snapshots
	// (its dumps, logs, configuration: all but the Kubernetes exports,
	// which units alike share).
	own int64
}

// loadUnit reads unit i as far as its checks: from its node report when
// it is one or a bundle that holds one, else by loading it.
func loadUnit(i int, unit []string, fo *fleetOptions, prints *checks.Prints) (loaded, error) {
	var note string
	// A node report was written without the loose files: the bundle is
	// analysed from its dumps, as when read with them.
	if len(unit) == 1 && fo.load.Shared == nil {
		a, ok, why, err := readReport(unit[0], fo, prints)
		if ok || err != nil {
			return loaded{done: a}, err
		}
		note = why
	}
	lo := fo.load
	lo.Exports = fo.exports.Of(i)
	forgetDumps, forgetNFT := func() {}, func() {}
	lo.Parsed = func(dumps []*iptables.Dump) { forgetDumps = checks.ReadAhead(dumps, fo.checks) }
	lo.ParsedNFT = func(rulesets []*nft.Ruleset) { forgetNFT = checks.ReadNFTAhead(rulesets, fo.checks) }
	forget := func() { forgetDumps(); forgetNFT() }
	snaps, err := load.Load(unit, lo)
	if err != nil {
		forget()
		return loaded{}, err
	}
	return loaded{snaps: snaps, note: note, forget: forget, own: ownBytes(snaps)}, nil
}

// ownBytes is the size of the node-level files of snaps: all their inputs
// but the Kubernetes exports.
func ownBytes(snaps []*model.Snapshot) int64 {
	var n int64
	for _, s := range snaps {
		for _, in := range s.Inputs {
			if in.Kind != parsers.KindKube {
				n += in.Bytes
			}
		}
	}
	return n
}

// finishUnit analyses the snapshots of a loaded unit, dropping them, and
// keeps what the summaries have alike with other nodes' once, in shared. A
// single node loaded, not in a fleet, is analysed without a print.
// checked, when not nil, is called once the checks of a node ran.
func finishUnit(l *loaded, fo *fleetOptions, prints *checks.Prints, shared *report.Shared, fleet bool, checked func()) []analyzed {
	out := l.done
	if l.snaps != nil {
		if !fleet && len(l.snaps) == 1 {
			prints = nil
		}
		out = analyzeSnaps(l.snaps, fo.checks, prints, checked)
		l.snaps = nil
		if l.forget != nil {
			l.forget()
		}
		if l.note != "" {
			for _, a := range out {
				a.sum.Notes = append(a.sum.Notes, l.note)
			}
		}
	}
	for _, a := range out {
		shared.Node(a.sum)
	}
	return out
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

// unitEvent, when not nil, is called as a unit starts loading ("load")
// and once it is analysed ("analysed"): a test sees what is in flight.
var unitEvent func(event string, unit int)

// analyzeUnits reads and analyses units, up to jobs at a time, each job
// loading the next unit while it analyses one: a node's checks leave part
// of the cores idle, which the loading of the next (its parsers and the
// export's decoder) takes, so at most two units per job are in memory, one
// being analysed and one loading or loaded. The error is that of the first
// unit, in their order, that failed; once a unit failed no other is
// started. The nodes' summaries keep what they have alike once, in shared.
func analyzeUnits(units [][]string, fo *fleetOptions, shared *report.Shared) ([][]analyzed, error) {
	prints := checks.NewPrints()
	out := make([][]analyzed, len(units))
	errs := make([]error, len(units))
	var mu sync.Mutex
	failed := false
	fail := func(i int, err error) {
		if len(units) > 1 {
			err = inBundle(units[i][0], err)
		} else {
			err = inSingle(units[i], err)
		}
		mu.Lock()
		errs[i], failed = err, true
		mu.Unlock()
	}
	stopped := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return failed
	}
	progress := fo.progress
	if len(units) == 1 {
		progress = nil
	}
	p := newFleetProgress(progress, len(units))
	defer p.stop()
	fleet := len(units) > 1
	// left counts the units not yet analysed: once the last is, nothing
	// is loaded any more that a collection would make room for.
	var left atomic.Int64
	left.Store(int64(len(units)))
	jobs := min(max(fo.jobs, 1), len(units))
	next := make(chan int)
	ready := make(chan loaded)
	// A loader starts a unit once admitted: at first one per job, then
	// each time an analyser has run a node's checks (the loading then
	// overlaps the node's print, which leaves a core idle, and not the
	// checks, at their busiest in memory) or is done with a unit, so that
	// a job holds at most two units. An analyser that ends, by a panic or
	// once every unit is loaded, closes gone.
	admit := make(chan struct{}, 2*jobs)
	for range jobs {
		admit <- struct{}{}
	}
	gone := make(chan struct{})
	var endOnce sync.Once
	// A loader hands a unit over once an analyser takes it.
	loaders := fault.Group{Name: "analyze.units"}
	loader := func() error {
		for i := range next {
			if stopped() {
				continue
			}
			select {
			case <-admit:
			case <-gone:
				continue
			}
			if unitEvent != nil {
				unitEvent("load", i)
			}
			l, err := loadUnit(i, units[i], fo, prints)
			if err != nil {
				admit <- struct{}{}
				fail(i, err)
				p.done()
				continue
			}
			l.i = i
			ready <- l
		}
		return nil
	}
	analysers := fault.Group{Name: "analyze.nodes"}
	analyser := func() error {
		// An analyser that ends, by a panic or once every unit is
		// loaded, stops the loading.
		defer endOnce.Do(func() { close(gone) })
		for l := range ready {
			var once sync.Once
			checked := func() { once.Do(func() { admit <- struct{}{} }) }
			dropped := l.snaps != nil // not read from a node report
			if !stopped() {
				out[l.i] = finishUnit(&l, fo, prints, shared, fleet, checked)
			}
			checked()
			if left.Add(-1) > 0 && fleet && dropped {
				// What the node held is garbage now, and the heap's goal
				// was set while it was live (see droppedCollectMin).
				collectDropped(l.own)
			}
			if unitEvent != nil {
				unitEvent("analysed", l.i)
			}
			p.done()
		}
		return nil
	}
	for w := 0; w < jobs; w++ {
		fault.GoDraining(&loaders, next, loader)
		fault.GoDraining(&analysers, ready, analyser)
	}
	for i := range units {
		next <- i
	}
	close(next)
	lerr := loaders.Wait()
	close(ready)
	if err := cmp.Or(lerr, analysers.Wait()); err != nil {
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
