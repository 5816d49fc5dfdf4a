package checks

import (
	"fmt"
	"math"
	"net/netip"
	"runtime"
	"slices"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/trace"
	"github.com/proxyscan/proxyscan/analyzer/view"
)

var loadBalanceSkew = &Check{
	ID:       "load-balance-skew",
	Severity: Warning,
	Title:    "the rules do not spread traffic evenly over the endpoints",
	What: "kube-proxy gives every endpoint of a Service the same share of new connections: in iptables mode rule " +
		"i of n matches with probability 1/(n-i), in nftables mode `numgen random mod n` maps to n endpoints, " +
		"in IPVS mode every real server has weight 1. Here the shares are unequal, some traffic matches no endpoint, " +
		"or an endpoint can never be chosen. The shares are those the tracer finds for new connections, so a rule " +
		"outside kube-proxy's chains that takes part of the traffic before them (another tool's DNAT) shows too.",
	Why: "Some pods are overloaded while others idle, or part of the new connections fall through the service chain " +
		"and are not load-balanced at all. Hand-edited rules and partial restores leave this behind.",
	Fix: "Restart kube-proxy on the node so that it rewrites the service chains; if it comes back, look for another " +
		"tool editing kube-proxy's chains. When kube-proxy's chain is even, remove the rule of the evidence that is " +
		"not kube-proxy's.",
	Needs: serviceNeeds,
	// The shares of the traced dispatches come from the tracer's sweep.
	Traces: true,
	Run:    runLoadBalanceSkew,
}

// skewTolerance allows for the kernel's rounding of probabilities
// (iptables stores them in 1/2^31 units).
const skewTolerance = 0.005

func runLoadBalanceSkew(p *Pass) {
	// The dispatches to look at are read of the views before the sweep
	// is waited for: while the sweep's other workers trace its last
	// packets, rather than on one core once it is over.
	type use struct {
		v  *view.View
		sp *model.ServicePort
		u  dispatchUse
	}
	var uses []use
	for _, v := range p.Views() {
		ports := p.PortsOf(v)
		for i, sp := range ports {
			for _, u := range p.dispatchesAt(v, ports, i) {
				if slices.ContainsFunc(u.d.Backends, dnatless) {
					// The traffic of an endpoint chain without its DNAT
					// falls through to the next rules: endpoint-missing or
					// endpoint-stale report the chain.
					continue
				}
				uses = append(uses, use{v: v, sp: sp, u: u})
			}
		}
	}
	p.prefetchTraces()
	// The dispatches whose traced shares agree with the rules' and that
	// nothing is said of are told apart on every core first.
	even := evenDispatches(p, len(uses), func(i int) dispatchUse { return uses[i].u })
	for i, x := range uses {
		if even != nil && even[i] {
			continue
		}
		v, sp, u := x.v, x.sp, x.u
		if u.d.Hidden != "" {
			p.Note("weights of the virtual servers not checked: %s", u.d.Hidden)
		}
		d, tr := tracedDispatch(p, v, u)
		msg := skewMessage(d)
		if msg == "" {
			continue
		}
		f := Finding{Service: sp.String(), Protocol: string(sp.Protocol), Message: msg,
			Advice: "Restart kube-proxy on the node so that it rewrites the chain; if the skew returns, find what else edits kube-proxy's rules."}
		if n := liveBackends(d); tr != nil && n > 0 && skewed(d.Backends, n) {
			// kube-proxy's chain is even: the traffic is shifted
			// before it, by rules the trace met.
			f.Message = fmt.Sprintf("new connections %s to %s reach the endpoints unevenly: %s instead of %.1f%% each, "+
				"although %s gives each the same share: a rule outside kube-proxy's chains takes part of them before it",
				fromText(tr.From), destText(u.entry.Kind, u.entry.IP, sp), shares(d), 100/float64(n), d.ID)
			f.Evidence = foreignSteps(p, *tr, d)
			f.Advice = "Find the rule of the evidence that is not kube-proxy's (another tool's DNAT or mark, a leftover of an " +
				"experiment) and remove it; kube-proxy's own chains are even."
		}
		f.Evidence = append(f.Evidence, u.d.Evidence...)
		for _, b := range u.d.Backends {
			if ev := b.Evidence(); len(ev) > 0 && !hasEvidence(f.Evidence, ev[0]) {
				f.Evidence = append(f.Evidence, ev[0]) // the balancing rule
			}
		}
		// A chain cut short balances over the endpoints it lists; the
		// chains are in nat.
		p.ReportAbsenceIn(v, f, natOnly...)
	}
}

// evenDispatches tells, on every core, the dispatches use(0..n-1) whose
// shares the sweep's summaries find as the rules read them and that
// skewMessage has nothing to say of (with no note to make): those the
// loop of runLoadBalanceSkew does nothing for. It changes nothing it
// reads (the summaries are looked up, never traced; a node port's
// dispatch, whose address is asked of the snapshot, is left to the loop),
// and a dispatch it is unsure of is left to the loop, as a worker's
// panic leaves its share. nil when the dispatches are too few or there is
// one core, or no sweep ran.
func evenDispatches(p *Pass, n int, use func(i int) dispatchUse) []bool {
	workers := runtime.GOMAXPROCS(0)
	tf := p.facts.tracer
	if workers < 2 || n < reachingParallelFrom || tf == nil || !tf.started || tf.pending != nil {
		return nil
	}
	look := func(pkt trace.Packet) (trace.Summary, bool) {
		i, ok := tf.lookup(pkt)
		if !ok || int(i) >= len(tf.sums) {
			return trace.Summary{}, false
		}
		return tf.sums[i], true
	}
	ends := func(e *view.Entry, o model.Origin) ([]trace.End, trace.Packet, bool, bool) {
		return tracedEndsWith(e, o, nil, look)
	}
	return sweptFlags(n, func(i int) bool {
		u := use(i)
		if u.d.Hidden != "" {
			return false
		}
		d, _, sure := tracedDispatchWith(u, ends)
		return sure && d == u.d && skewMessage(d) == ""
	})
}

// tracedDispatch returns the dispatch with the shares the tracer finds for
// the packets of its entry: unchanged (and a nil packet) when they
// agree with the shares read from the rules (or when the entry is not
// traced), else a copy carrying the traced shares and the packet traced.
func tracedDispatch(p *Pass, v *view.View, u dispatchUse) (*view.Dispatch, *trace.Packet) {
	d, pkt, _ := tracedDispatchWith(u, func(e *view.Entry, o model.Origin) ([]trace.End, trace.Packet, bool, bool) {
		ends, pkt, ok := tracedEnds(p, v, e, o)
		return ends, pkt, ok, true
	})
	return d, pkt
}

// tracedDispatchWith is tracedDispatch with the traced ends of an entry
// asked of ends; sure is false when ends was not sure of them (nothing
// else is said then).
func tracedDispatchWith(u dispatchUse, tracedEnds func(*view.Entry, model.Origin) ([]trace.End, trace.Packet, bool, bool)) (_ *view.Dispatch, _ *trace.Packet, sure bool) {
	origin, found := model.Origin(0), false
	for _, o := range model.Origins {
		if u.entry.Dispatch[o] == u.d {
			origin, found = o, true
			break
		}
	}
	if !found {
		return u.d, nil, true // IPVS: the virtual server of another node address
	}
	// The endpoints in the order the backends first name them; a long
	// list is indexed (kube-proxy lists an endpoint once: the list is
	// usually its backends).
	var room [8]epShare // on the stack for the usual few endpoints
	eps := room[:0]
	var index map[string]int
	if len(u.d.Backends) > epIndexFrom {
		index = make(map[string]int, len(u.d.Backends))
	}
	for _, b := range u.d.Backends {
		if b.Graceful || b.Unreachable {
			continue
		}
		if b.Share < 0 {
			return u.d, nil, true // shares the rules do not say (IPVS schedulers)
		}
		i := epPlace(eps, index, b.Endpoint)
		if i < 0 {
			i = len(eps)
			eps = append(eps, epShare{ep: b.Endpoint})
			if index != nil {
				index[b.Endpoint] = i
			}
		}
		eps[i].count++
		eps[i].read += b.Share
	}
	ends, pkt, ok, sure := tracedEnds(u.entry, origin)
	if !sure {
		return u.d, nil, false
	}
	if !ok {
		return u.d, nil, true
	}
	// The share traced to an endpoint is that of the destination written
	// as the endpoint is: the paths' shares are added in the order of the
	// paths.
	var byDest map[netip.AddrPort]float64 // for many endpoints
	if index != nil {
		byDest = make(map[netip.AddrPort]float64, len(ends))
		for _, end := range ends {
			if !end.Conditional && end.Verdict() == trace.VerdictDNAT {
				byDest[end.Destination] += end.Probability
			}
		}
	}
	for i := range eps {
		ap, ok := endpointAddr(eps[i].ep)
		switch {
		case !ok:
		case byDest != nil:
			eps[i].traced = byDest[ap]
		default:
			for _, end := range ends {
				if !end.Conditional && end.Verdict() == trace.VerdictDNAT && end.Destination == ap {
					eps[i].traced += end.Probability
				}
			}
		}
	}
	total, reached := 0.0, 0.0
	for _, e := range eps {
		total += e.read
		reached += e.traced
	}
	if reached < total-skewTolerance {
		// Part of the traffic never gets to the dispatch: lost before it
		// (service-unreachable's finding), not spread unevenly by it.
		return u.d, nil, true
	}
	agree := true
	for _, e := range eps {
		if math.Abs(e.read-e.traced) > skewTolerance {
			agree = false
		}
	}
	if agree {
		return u.d, nil, true
	}
	d := *u.d
	d.Backends = make([]*view.Backend, len(u.d.Backends))
	for i, b := range u.d.Backends {
		c := *b
		if !c.Graceful && !c.Unreachable {
			e := eps[epPlace(eps, index, c.Endpoint)]
			c.Share = e.traced / float64(e.count)
		}
		d.Backends[i] = &c
	}
	return &d, &pkt, true
}

// epShare is the share of one endpoint of a dispatch: the number of its
// backends, their shares read from the rules and the share traced to it.
type epShare struct {
	ep           string
	count        int
	read, traced float64
}

// epIndexFrom is the number of backends above which the endpoints of a
// dispatch are indexed rather than searched.
const epIndexFrom = 32

// epPlace returns the place of endpoint ep in eps (index, when not
// nil, indexes them), -1 when it is not there.
func epPlace(eps []epShare, index map[string]int, ep string) int {
	if index != nil {
		if i, ok := index[ep]; ok {
			return i
		}
		return -1
	}
	for i := range eps {
		if eps[i].ep == ep {
			return i
		}
	}
	return -1
}

// liveBackends counts the backends of d that take a known share.
func liveBackends(d *view.Dispatch) int {
	n := 0
	for _, b := range d.Backends {
		if !b.Graceful && !b.Unreachable && b.Share >= 0 {
			n++
		}
	}
	return n
}

// foreignSteps traces pkt again with its steps and returns, as evidence,
// the rules that are not kube-proxy's on the paths to the endpoint that
// gets more than its share, in the order they are met.
func foreignSteps(p *Pass, pkt trace.Packet, d *view.Dispatch) []model.Evidence {
	res, err := p.tracedSteps(pkt)
	if err != nil {
		return nil
	}
	over, most := "", 0.0
	for _, b := range d.Backends {
		if !b.Graceful && !b.Unreachable && b.Share > most {
			over, most = b.Endpoint, b.Share
		}
	}
	var out []model.Evidence
	for _, path := range res.Paths {
		if path.Destination != over || len(path.Conditions) > 0 {
			continue
		}
		for _, st := range path.Steps {
			if kubeProxyStep(st) {
				continue
			}
			ev := model.Evidence{File: st.File, Line: st.Line, Path: st.Path, Text: st.Table + " " + st.Chain + ": " + st.Rule}
			if !hasEvidence(out, ev) {
				out = append(out, ev)
			}
		}
	}
	return out
}

// kubeProxyStep reports whether a step of a trace is one of kube-proxy's
// rules: in one of its chains or tables, or the jump into them.
func kubeProxyStep(st trace.Step) bool {
	if strings.HasPrefix(st.Chain, "KUBE-") || strings.HasSuffix(st.Table, "kube-proxy") {
		return true
	}
	return strings.Contains(st.Rule, "-j KUBE-") || strings.Contains(st.Rule, "-g KUBE-") || st.Rule == "" ||
		strings.HasPrefix(st.Rule, "-P ")
}

// skewMessage returns what is uneven about a dispatch, or "" when its
// backends share the traffic equally. Strings are only built when there
// is something to say.
func skewMessage(d *view.Dispatch) string {
	total, n := 0.0, 0
	unreachable, duplicate, weights := false, "", false
	for i, b := range d.Backends {
		if b.Graceful {
			continue
		}
		for _, o := range d.Backends[:i] {
			if !o.Graceful && o.Endpoint == b.Endpoint && duplicate == "" {
				duplicate = b.Endpoint
			}
		}
		if b.Unreachable {
			unreachable = true
			continue
		}
		if b.Weight != 1 && b.Weight != view.WeightUnknown {
			weights = true
		}
		if b.Share >= 0 {
			total += b.Share
			n++
		}
	}
	if n == 0 && !weights {
		return "" // shares unknown (IPVS schedulers other than rr and wrr) and weights equal
	}
	switch {
	case unreachable:
		var eps []string
		for _, b := range d.Backends {
			if b.Unreachable {
				eps = append(eps, b.Endpoint)
			}
		}
		return fmt.Sprintf("%s can never choose %s: an earlier rule matches all remaining traffic", d.ID, strings.Join(eps, ", "))
	case n > 0 && total < 1-skewTolerance:
		return fmt.Sprintf("%.1f%% of new connections to %s match no endpoint rule (%s)", 100*(1-total), d.ID, shares(d))
	case duplicate != "":
		return fmt.Sprintf("%s lists endpoint %s more than once (%s)", d.ID, duplicate, shares(d))
	case n > 0 && skewed(d.Backends, n):
		return fmt.Sprintf("%s spreads traffic unevenly: %s instead of %.1f%% each", d.ID, shares(d), 100/float64(n))
	case weights:
		return fmt.Sprintf("%s gives its real servers unequal weights (%s); kube-proxy sets weight 1", d.ID, weightList(d.Backends))
	}
	return ""
}

func shares(d *view.Dispatch) string {
	var live []string
	for _, b := range d.Backends {
		if !b.Graceful && !b.Unreachable && b.Share >= 0 {
			live = append(live, fmt.Sprintf("%s %.1f%%", b.Endpoint, 100*b.Share))
		}
	}
	return strings.Join(live, ", ")
}

func skewed(bs []*view.Backend, n int) bool {
	want := 1 / float64(n)
	for _, b := range bs {
		if b.Graceful || b.Unreachable || b.Share < 0 {
			continue
		}
		if math.Abs(b.Share-want) > skewTolerance {
			return true
		}
	}
	return false
}

func weightList(bs []*view.Backend) string {
	var ws []string
	for _, b := range bs {
		if !b.Graceful {
			ws = append(ws, fmt.Sprintf("%s=%d", b.Endpoint, b.Weight))
		}
	}
	return strings.Join(ws, ", ")
}

// hasEvidence reports whether ev is in list (nftables balances over all
// endpoints in one rule).
func hasEvidence(list []model.Evidence, ev model.Evidence) bool {
	for _, e := range list {
		if e == ev {
			return true
		}
	}
	return false
}
