package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/spf13/cobra"

	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/proxier"
	"github.com/proxyscan/proxyscan/analyzer/report"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/analyzer/trace"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/kube"
)

// TraceOptions are the flags and arguments of `proxyscan trace`.
type TraceOptions struct {
	IO       *IOStreams
	Paths    []string
	Dst      string
	Proto    string
	Src      string
	From     string
	Iface    string
	Output   string
	Node     string
	Version  string
	Mode     string
	Expected bool
	Compare  bool
	NoColor  bool
	// Verbose prints the rules in full, and with --compare both walks.
	Verbose bool
	// Strict reads every input strictly (the global --strict flag).
	Strict bool

	// lazy reads the per-Service chains of the dumps lazily (see
	// traceRun).
	lazy bool
}

// NewCmdTrace builds `proxyscan trace`; runF replaces traceRun in tests.
func NewCmdTrace(f *Factory, runF func(*TraceOptions) error) *cobra.Command {
	opts := &TraceOptions{IO: f.IO}
	c := &cobra.Command{
		Use:   "trace PATH... --dst IP:PORT",
		Short: "Replay one packet through the captured rules",
		Long: "Load the node's data plane from PATH and replay the first packet of a connection to --dst the way\n" +
			"the kernel would: through the iptables chains (and IPVS, in IPVS mode), from a pod on the node,\n" +
			"from the node itself or from outside. The table is a packet walk: the steps every path takes,\n" +
			"then one branch per path with its probability, how it ends (DNAT to an endpoint, LOCAL, ACCEPT\n" +
			"untouched, DROP, REJECT), what the endpoint is (stale, not ready, terminating, on which node),\n" +
			"and its own steps; each step is a rule it matched with its file and line, each hook it enters\n" +
			"is said with why (the routing decision, IPVS).\n\n" +
			"--expected traces the rules kube-proxy should have programmed instead; --compare traces both\n" +
			"and shows where they diverge (-v: and both walks).\n\n" +
			"Exit status: 0 some path reaches an endpoint (with --compare: the two traces agree), 1 no path\n" +
			"does (with --compare: they diverge), 2 usage or input error.",
		Example: "  proxyscan trace bundle.tgz --dst 10.96.0.10:53 --proto udp\n" +
			"  proxyscan trace ./bundle --dst 192.168.1.10:30080 --from external --src 198.51.100.7\n" +
			"  proxyscan trace ./bundle --dst 10.96.12.34:80 --compare -o json",
		Args: requirePaths("trace"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Paths, opts.Strict = args, f.Strict
			if !c.Flags().Changed("output") {
				opts.Output = defaultOutput(f.IO)
			}
			if runF != nil {
				return runF(opts)
			}
			return traceRun(opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.Dst, "dst", "", "destination IP:PORT of the packet (required; [IPv6]:PORT)")
	fl.StringVar(&opts.Proto, "proto", "tcp", "protocol: tcp, udp or sctp")
	fl.StringVar(&opts.Src, "src", "", "source address (default: a pod address of the node, a node address, or 192.0.2.200 from outside)")
	fl.StringVar(&opts.From, "from", "pod", "where the packet enters: pod (a pod on the node), node (the node itself) or external")
	fl.StringVar(&opts.Iface, "iface", "", "interface the packet arrives on (default: a pod veth, or eth0 from outside)")
	fl.StringVarP(&opts.Output, "output", "o", "", "output format: table or json (default table on a terminal, json otherwise)")
	fl.StringVar(&opts.Node, "node", "", "name of the node to trace on, when PATH holds several")
	fl.StringVar(&opts.Version, "version", "", "kube-proxy version to assume for --expected and --compare, e.g. 1.28")
	fl.StringVar(&opts.Mode, "mode", "", "proxy mode to trace: iptables, ipvs or nftables (default: the mode programmed on the node)")
	fl.BoolVar(&opts.Expected, "expected", false, "trace the rules kube-proxy should have programmed instead of the captured ones")
	fl.BoolVar(&opts.Compare, "compare", false, "trace both the captured and the expected rules and show where they diverge")
	fl.BoolVar(&opts.NoColor, "no-color", false, "disable colour (NO_COLOR is honoured too)")
	fl.BoolVarP(&opts.Verbose, "verbose", "v", false, "table: print every rule in full (not cut to the terminal's width); with --compare, also both walks")
	registerCompletions(c, map[string]cobra.CompletionFunc{
		"output":  completeValues(report.TraceFormats...),
		"proto":   completeValues("tcp", "udp", "sctp"),
		"from":    completeValues("pod\ta pod on the node", "node\tthe node itself", "external\tfrom outside the node"),
		"mode":    completeValues(model.ModeIPTables, model.ModeIPVS, model.ModeNFTables),
		"version": completeValues(versionValues()...),
		"dst":     completeNothing,
		"src":     completeNothing,
		"iface":   completeNothing,
		"node":    completeNothing,
	})
	return c
}

func (opts *TraceOptions) packet() (trace.Packet, error) {
	var pkt trace.Packet
	if opts.Dst == "" {
		return pkt, flagErrorf("trace needs --dst IP:PORT")
	}
	dst, err := netip.ParseAddrPort(opts.Dst)
	if err != nil {
		return pkt, flagErrorf("invalid --dst %q (want IP:PORT, [IPv6]:PORT)", opts.Dst)
	}
	pkt.Dst = dst
	switch p := strings.ToLower(opts.Proto); p {
	case "tcp", "udp", "sctp":
		pkt.Proto = p
	default:
		return pkt, flagErrorf("invalid --proto %q (want tcp, udp or sctp)", opts.Proto)
	}
	if opts.Src != "" {
		src, err := netip.ParseAddr(opts.Src)
		if err != nil {
			return pkt, flagErrorf("invalid --src %q (want an IP address)", opts.Src)
		}
		if src.Unmap().Is4() != dst.Addr().Unmap().Is4() {
			return pkt, flagErrorf("--src %s and --dst %s are of different IP families", opts.Src, opts.Dst)
		}
		pkt.Src = src
	}
	from, err := model.ParseOrigin(opts.From)
	if err != nil {
		return pkt, &FlagError{Err: err}
	}
	pkt.From = from
	pkt.InIface = opts.Iface
	return pkt, nil
}

func traceRun(opts *TraceOptions) error {
	pkt, err := opts.packet()
	if err != nil {
		return err
	}
	if opts.Output != "table" && opts.Output != "json" {
		return flagErrorf("unknown output format %q (want table or json)", opts.Output)
	}
	if opts.Expected && opts.Compare {
		return flagErrorf("--expected and --compare exclude each other")
	}
	switch opts.Mode {
	case "", model.ModeIPTables, model.ModeIPVS, model.ModeNFTables:
	default:
		return flagErrorf("unknown --mode %q (want iptables, ipvs or nftables)", opts.Mode)
	}
	opts.Paths = oncePaths(opts.IO, "trace", opts.Paths)
	if lazyTrace && leanTrace && !opts.Expected && !opts.Compare && !opts.Strict {
		// The dumps' per-Service chains read lazily: the trace's output
		// is held until the chains it read are known to read as a
		// whole parse does; otherwise the trace is made again on a
		// whole parse.
		io := *opts.IO
		var out, errOut bytes.Buffer
		io.Out, io.ErrOut = &out, &errOut
		lazy := *opts
		lazy.IO, lazy.lazy = &io, true
		snaps, err := lazy.run(pkt)
		for _, s := range snaps {
			for _, d := range s.IPTables {
				if n, parsed := d.LazyChains(); n > 0 {
					lazyTraces.Add(1)
					lazyParsed.Add(int64(parsed))
				}
			}
		}
		if !lazyFailed(snaps) {
			if _, werr := opts.IO.ErrOut.Write(errOut.Bytes()); werr != nil {
				return fmt.Errorf("writing the warnings: %w", werr)
			}
			if _, werr := opts.IO.Out.Write(out.Bytes()); werr != nil {
				return fmt.Errorf("writing the trace: %w", werr)
			}
			return err
		}
		lazyFallbacks.Add(1)
	}
	_, err = opts.run(pkt)
	return err
}

// lazyFailed reports whether a dump of snaps read lazily held a line of a
// chain read since that a whole parse reads otherwise
// (iptables.Dump.LazyFailed).
func lazyFailed(snaps []*model.Snapshot) bool {
	for _, s := range snaps {
		for _, d := range s.IPTables {
			if d.LazyFailed() {
				return true
			}
		}
	}
	return false
}

// run loads the inputs of a trace of pkt and writes the trace; it returns
// the snapshots loaded.
func (opts *TraceOptions) run(pkt trace.Packet) ([]*model.Snapshot, error) {
	defer heapFloor(opts.Paths)()
	loaded, err := opts.load(pkt)
	if err != nil {
		return nil, inSingle(opts.Paths, err)
	}
	snaps := loaded
	if opts.Node != "" {
		snaps = nodeSnapshots(snaps, opts.Node)
		if len(snaps) == 0 {
			return loaded, flagErrorf("no node %q in the inputs", opts.Node)
		}
	}
	ropts := report.Options{Color: opts.IO.ColorEnabled(opts.NoColor), Width: opts.IO.Width, Verbose: opts.Verbose}
	var undetermined []string
	if opts.Compare {
		var cmps []*trace.Comparison
		diverged := false
		for _, s := range snaps {
			inc, err := incompleteFor(opts.IO, "trace", s, needRules, needServices)
			if err != nil {
				return loaded, err
			}
			r := resolve.Resolve(s, resolve.Options{Mode: opts.Mode})
			dp := trace.FromSnapshot(r)
			if err := noRules(s, dp, pkt); err != nil {
				return loaded, err
			}
			act, err := trace.Trace(dp, pkt, trace.Options{})
			if err != nil {
				return loaded, &FlagError{Err: err}
			}
			trace.Annotate(s.Ports, act)
			exp, err := traceExpected(r, pkt)
			if err != nil {
				return loaded, err
			}
			trace.Annotate(s.Ports, exp)
			markIncomplete(act, inc)
			markIncomplete(exp, inc)
			if why := undeterminedWalk(r, dp, act); why != "" {
				act.Undetermined = why
				act.Warnings = append(act.Warnings, "no verdict: "+why)
				undetermined = append(undetermined, fmt.Sprintf("node %s: %s", nodeWhere(s), why))
			}
			c := trace.Compare(act, exp)
			diverged = diverged || c.Diverged && act.Undetermined == ""
			cmps = append(cmps, c)
		}
		if err := report.RenderCompare(opts.IO.Out, opts.Output, cmps, ropts); err != nil {
			return loaded, fmt.Errorf("writing the comparison: %w", err)
		}
		if len(undetermined) > 0 {
			return loaded, undeterminedError(undetermined)
		}
		if diverged {
			return loaded, errFindings
		}
		return loaded, nil
	}
	var results []*trace.Result
	reached := true
	for _, s := range snaps {
		need := needRules
		if opts.Expected {
			need = needServices
		}
		inc, err := incompleteFor(opts.IO, "trace", s, need)
		if err != nil {
			return loaded, err
		}
		var res *trace.Result
		var dp *trace.Dataplane
		r := resolve.Resolve(s, resolve.Options{Mode: opts.Mode})
		if opts.Expected {
			res, err = traceExpected(r, pkt)
		} else {
			dp = trace.FromSnapshot(r)
			if err := noRules(s, dp, pkt); err != nil {
				return loaded, err
			}
			res, err = trace.Trace(dp, pkt, trace.Options{})
			if err != nil {
				err = &FlagError{Err: err}
			}
		}
		if err != nil {
			return loaded, err
		}
		trace.Annotate(s.Ports, res)
		markIncomplete(res, inc)
		if dp != nil {
			if why := undeterminedWalk(r, dp, res); why != "" {
				res.Undetermined = why
				res.Warnings = append(res.Warnings, "no verdict: "+why)
				undetermined = append(undetermined, fmt.Sprintf("node %s: %s", nodeWhere(s), why))
			}
		}
		reached = reached && (res.Reached() || res.Undetermined != "")
		results = append(results, res)
	}
	if err := report.RenderTrace(opts.IO.Out, opts.Output, results, ropts); err != nil {
		return loaded, fmt.Errorf("writing the trace: %w", err)
	}
	if len(undetermined) > 0 {
		return loaded, undeterminedError(undetermined)
	}
	if !reached {
		return loaded, errFindings
	}
	return loaded, nil
}

// undeterminedError is the input error (exit 2) of a trace written
// whose walks give no verdict, one line of why per node.
func undeterminedError(why []string) error {
	return load.InputError(fmt.Errorf("trace: %s: give the whole dump (as a file rather than pasted) for a verdict", strings.Join(why, "; ")))
}

// undeterminedWalk says why a trace of the captured rules res gives no
// verdict, or "": no path reached an endpoint through the rules the
// inputs show, and the data plane of the packet's family is partial (cut
// short, filtered, some tables only) or not given, so that the rules the
// walk would meet (a jump from a built-in chain, a Service's chains) may
// lie outside it. The chains of the family's iptables dumps that hold
// rules the walk never entered are named: a fragment that holds a
// Service's rules, but not the jump that leads to them, shows them.
func undeterminedWalk(r *resolve.Resolution, dp *trace.Dataplane, res *trace.Result) string {
	if res.Reached() {
		return ""
	}
	fam := model.IPv4
	if res.Packet.Dst.Addr().Unmap().Is6() {
		fam = model.IPv6
	}
	partial := lackedOf(r)[fam]
	if partial == "" {
		return ""
	}
	if i := strings.Index(partial, " is partial: "); i >= 0 {
		partial = partial[:i] + " is partial" // the reason is among the incomplete inputs
	}
	why := "no path reached an endpoint through the rules the inputs show, and " + partial +
		": the walk could not enter the chains it lacks, and the rules it would meet may lie outside it"
	entered := map[string]bool{}
	for _, p := range res.Paths {
		for _, st := range p.Steps {
			entered[st.Table+" "+st.Chain] = true
		}
	}
	var never []string
	for _, d := range dp.IPTables {
		if model.Family(d.Family) != fam {
			continue
		}
		for _, t := range d.Tables {
			for _, c := range t.Chains {
				if len(c.Rules) > 0 && !c.Builtin() && !entered[t.Name+" "+c.Name] && !slices.Contains(never, t.Name+" "+c.Name) {
					never = append(never, t.Name+" "+c.Name)
				}
			}
		}
	}
	if n := len(never); n > 0 {
		list := never[:min(n, 3)]
		more := ""
		if n > 3 {
			more = fmt.Sprintf(" and %d more", n-3)
		}
		why += fmt.Sprintf(" (it never entered %d of the chains the inputs hold: %s%s)", n, strings.Join(list, ", "), more)
	}
	return why
}

// noRules returns an input error (exit 2) when the captured data plane dp
// of node s lacks the rules a trace of pkt walks in its mode (see
// trace.Dataplane.Missing): a trace without them would show the packet
// untouched, which no input says.
func noRules(s *model.Snapshot, dp *trace.Dataplane, pkt trace.Packet) error {
	what := dp.Missing(pkt)
	if what == "" {
		return nil
	}
	return load.InputError(fmt.Errorf("trace: node %s: no %s in the inputs, and a trace of the captured rules of the %s mode rests on it: add it, or give --expected to trace the rules kube-proxy should have programmed",
		nodeWhere(s), strings.TrimPrefix(strings.TrimPrefix(what, "an "), "a "), dp.Mode))
}

// nodeWhere names a node for messages: its name, and the bundle it was
// read from, if any.
func nodeWhere(s *model.Snapshot) string {
	for _, in := range s.Inputs {
		if in.Bundle != "" {
			return nodeLabel(s) + " (" + in.Bundle + ")"
		}
	}
	return nodeLabel(s)
}

// traceExpected traces pkt through the data plane the reference proxier
// generates for a resolved node.
func traceExpected(r *resolve.Resolution, pkt trace.Packet) (*trace.Result, error) {
	exp, err := proxier.Expect(r, proxier.Options{})
	if err != nil {
		return nil, &FlagError{Err: fmt.Errorf("generating the expected rules: %w", err)}
	}
	res, err := trace.Trace(trace.FromExpected(r, exp), pkt, trace.Options{})
	if err != nil {
		return nil, &FlagError{Err: err}
	}
	return res, nil
}

// loadOptions are the options of loading the inputs of a trace. A trace of
// the captured rules reads the Services only as service ports (the
// packet's target): the exports are decoded lean and trimmed once the
// ports are built, as for analyze. The reference proxier of --expected and
// --compare rebuilds its ports from the objects: they are decoded lean
// only, as for expect.
func (opts *TraceOptions) loadOptions() load.Options {
	if opts.Expected || opts.Compare {
		return expectLoadOptions(opts.Node, opts.Version, opts.Strict)
	}
	// The kernel's checks of the whole ruleset (the trace's warnings) and
	// the search of the rule layout's traits run while the exports are
	// decoded and the snapshots assembled.
	return load.Options{Node: opts.Node, Version: opts.Version, Strict: opts.Strict, Compact: true, Parsed: readTraceAhead}
}

// load loads the inputs of a trace of pkt. A trace of the captured rules
// decodes of the exports only the Services and EndpointSlices that may
// concern pkt's destination (load.Options.Only): the service port it
// targets and its endpoints are all the trace reads of them. When that
// reading could give other snapshots than a whole one (load.ErrNotLean),
// or left out what the trace would then miss (a node without rules, whose
// address families are those of its Services; every Service of the
// exports without a port), the exports are read whole.
func (opts *TraceOptions) load(pkt trace.Packet) ([]*model.Snapshot, error) {
	lo := offHeap(opts.loadOptions())
	if opts.Expected || opts.Compare || !leanTrace {
		return load.Load(opts.Paths, lo)
	}
	lo.Only = &kube.Only{Addr: pkt.Dst.Addr(), Port: pkt.Dst.Port()}
	lo.LazyChains = opts.lazy
	var mu sync.Mutex
	var read []*iptables.Dump
	ahead := lo.Parsed
	lo.Parsed = func(dumps []*iptables.Dump) {
		mu.Lock()
		read = dumps
		mu.Unlock()
		if ahead != nil {
			ahead(dumps)
		}
	}
	snaps, err := load.Load(opts.Paths, lo)
	if err == nil && leanHolds(snaps, lo.Only) || err != nil && !errors.Is(err, load.ErrNotLean) {
		return snaps, err
	}
	leanFallbacks.Add(1)
	// What was read ahead of the dumps read first is not taken.
	mu.Lock()
	trace.Forget(read)
	resolve.ForgetLayout(read)
	mu.Unlock()
	lo.Only, lo.Parsed = nil, ahead
	return load.Load(opts.Paths, lo)
}

// leanTrace says whether a trace of the captured rules reads the exports
// lean (see TraceOptions.load); tests turn it off to compare.
var leanTrace = true

// lazyTrace says whether a trace of the captured rules reads the
// per-Service chains of the dumps lazily (see traceRun); tests turn it off
// to compare.
var lazyTrace = true

// lazyTraces counts the dumps traced with per-Service chains read lazily
// (for tests).
var lazyTraces atomic.Int64

// lazyParsed counts the lazy chains of those dumps parsed (for tests).
var lazyParsed atomic.Int64

// lazyFallbacks counts the traces made again on a whole parse of the
// dumps (for tests).
var lazyFallbacks atomic.Int64

// leanFallbacks counts the traces whose lean reading of the exports was
// given up for a whole one (for tests).
var leanFallbacks atomic.Int64

// leanHolds reports whether snapshots loaded with only's objects answer a
// trace as those of the whole exports would: each node has rules of its
// own, and service ports when the exports had Services.
func leanHolds(snaps []*model.Snapshot, only *kube.Only) bool {
	for _, s := range snaps {
		if len(s.IPTables)+len(s.NFT)+len(s.IPVS) == 0 {
			return false
		}
		if len(s.Ports) == 0 && only.SkippedServices() > 0 {
			return false
		}
	}
	return true
}

// readTraceAhead starts reading in the background what a trace reads of
// the dumps, as soon as they are parsed.
func readTraceAhead(dumps []*iptables.Dump) {
	trace.Prevalidate(dumps)
	resolve.ReadLayoutAhead(dumps)
}

// nodeSnapshots keeps the snapshots of the named node.
func nodeSnapshots(snaps []*model.Snapshot, node string) []*model.Snapshot {
	var out []*model.Snapshot
	for _, s := range snaps {
		if s.Node.Name == node {
			out = append(out, s)
		}
	}
	if len(out) == 0 && len(snaps) == 1 {
		// One node given --node names it (a loose dump has no name).
		return snaps
	}
	return out
}
