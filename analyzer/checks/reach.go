package checks

import (
	"fmt"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/trace"
	"github.com/proxyscan/proxyscan/analyzer/view"
)

var serviceUnreachable = &Check{
	ID:       "service-unreachable",
	Traces:   true,
	Severity: Error,
	Title:    "a packet to a service port does not reach its endpoints",
	What: "Every service port with usable endpoints is traced through the node's data plane the way the kernel " +
		"evaluates it: the cluster IP from a pod and from the node, the node port, external IPs and load balancer " +
		"IPs from outside (from an allowed source when loadBalancerSourceRanges are set). kube-proxy's entry for the " +
		"destination exists, yet some or all of the new connections end elsewhere: dropped or rejected by a rule " +
		"that runs before or after kube-proxy's (a host firewall, another table at a higher priority), sent to an " +
		"address that is no endpoint by a rule that shadows kube-proxy's, or never rewritten at all. The finding " +
		"gives the share of connections lost and the rules the lost packet met.",
	Why: "The Service looks programmed (its entries, chains and endpoints are all there) but clients time out or are " +
		"refused on this node, for all connections or only for the share that lands on the affected endpoints. " +
		"The rules of the other checks are correct, so nothing else points at the cause.",
	Fix: "Read the rules of the evidence: the first one that is not kube-proxy's is usually the culprit (a firewall " +
		"table dropping forwarded traffic to the pod network, a DNAT of another tool, a mark that clears kube-proxy's " +
		"masquerade bit). In IPVS mode the service IPs are local addresses (bound to kube-ipvs0), so service " +
		"traffic passes filter INPUT: a host rule meant for the node's own addresses drops it too. Allow the pod and " +
		"service ranges in the host firewall, or order its chains after kube-proxy's; " +
		"`proxyscan trace BUNDLE --dst IP:PORT --from pod|node|external` shows every path of one packet.",
	Needs: endpointNeeds,
	Run:   runServiceUnreachable,
}

// lossTolerance is the share of new connections below which a loss is
// rounding (iptables probabilities are stored in 1/2^31 units).
const lossTolerance = 0.005

// traceFacts holds the data plane the tracer walks and the results of the
// packets traced, shared by the checks of a run.
type traceFacts struct {
	dp      *trace.Dataplane
	results map[trace.Packet]traceOutcome
	started bool
	// pending, set while the traces started in the background run, waits
	// for them and stores their results.
	pending func()
}

// traceOutcome is what the checks read of one packet's trace: where its
// paths end, kept small as every service port has one.
type traceOutcome struct {
	paths  []tracedPath
	warned bool // the result as a whole has warnings
	err    error
}

// tracedPath is the end of one path of a trace.
type tracedPath struct {
	prob    float64
	verdict trace.Verdict
	dest    string
	conds   bool // the path depends on conditions
	warned  bool // the path has warnings
}

// outcomeOf keeps of a trace what the checks read.
func outcomeOf(res *trace.Result, err error) traceOutcome {
	if err != nil {
		return traceOutcome{err: err}
	}
	o := traceOutcome{paths: make([]tracedPath, len(res.Paths)), warned: len(res.Warnings) > 0}
	for i, path := range res.Paths {
		o.paths[i] = tracedPath{prob: path.Probability, verdict: path.Verdict, dest: path.Destination,
			conds: len(path.Conditions) > 0, warned: len(path.Warnings) > 0}
	}
	return o
}

// traced returns the trace of pkt through the node's data plane (of its
// mode); its err is set when the mode is not traced.
func (p *Pass) traced(pkt trace.Packet) traceOutcome {
	tf := p.tracerFacts()
	if o, ok := tf.results[pkt]; ok {
		return o
	}
	o := outcomeOf(trace.Trace(tf.dp, pkt, trace.Options{Summary: true}))
	tf.results[pkt] = o
	return o
}

// tracerFacts returns the run's tracer state, made on first use.
func (p *Pass) tracerFacts() *traceFacts {
	if p.facts.tracer == nil {
		p.facts.tracer = &traceFacts{results: map[trace.Packet]traceOutcome{}, dp: trace.FromSnapshot(p.Snap, p.facts.mode)}
	}
	return p.facts.tracer
}

// tracedSteps traces pkt again with every step, for evidence.
func (p *Pass) tracedSteps(pkt trace.Packet) (*trace.Result, error) {
	return trace.Trace(p.facts.tracer.dp, pkt, trace.Options{})
}

// reachTarget is one destination of a service port and the origins it is
// traced from.
type reachTarget struct {
	kind  view.Kind
	ip    netip.Addr // the address traced (a node address for node ports)
	port  int32
	from  []trace.From
	src   netip.Addr // the source, when one must be chosen (source ranges)
	entry *view.Entry
}

// record notes the findings of a check for the checks after it.
func (f *facts) record(fs []Finding) {
	for _, x := range fs {
		if f.fired == nil {
			f.fired, f.services = map[string]bool{}, map[string]bool{}
		}
		f.fired[x.Check] = true
		if x.Service != "" {
			f.services[x.Service] = true
		}
	}
}

// reachDeferred are the checks whose findings explain any lost packet of
// a node: the pass does not trace such a node.
var reachDeferred = []string{"iptables-backend-mixed", "mode-mismatch"}

func runServiceUnreachable(p *Pass) {
	mode, _ := p.Mode()
	for _, id := range reachDeferred {
		if p.facts.fired[id] {
			p.Note("%s reported: service ports not traced", id)
			return
		}
	}
	p.prefetchTraces()
	for _, v := range p.Views() {
		nodeIP := nodePortAddr(p, v.Family)
		for _, sp := range p.PortsOf(v) {
			if p.facts.services[sp.String()] {
				continue // another check's finding already explains it
			}
			e := p.Expect(sp, v.Family)
			for _, t := range reachTargets(v, sp, e, nodeIP) {
				reportUnreachable(p, v, sp, e, t, mode)
			}
		}
	}
}

// reachTargets returns the destinations of a service port to trace: those
// kube-proxy has an entry for and that have endpoints under their policy.
func reachTargets(v *view.View, sp *model.ServicePort, e *Expect, nodeIP netip.Addr) []reachTarget {
	proto := sp.ProtoLower()
	targets := reachDests(sp, e, nodeIP)
	out := targets[:0]
	for _, t := range targets {
		switch t.kind {
		case view.ClusterIP:
			t.entry = forward(v, view.ClusterIP, t.ip, proto, t.port)
		case view.NodePort:
			if !v.NodePorts {
				continue
			}
			t.entry = forward(v, view.NodePort, netip.Addr{}, proto, t.port)
		default:
			t.entry = forward(v, t.kind, t.ip, proto, t.port)
		}
		if t.entry == nil {
			continue // service-missing, external-missing or nodeport-missing says so
		}
		out = append(out, t)
	}
	return out
}

// reachDests returns the destinations of a service port that have
// endpoints under their policy, whether or not the data plane has an
// entry for them: what [reachTargets] picks from.
func reachDests(sp *model.ServicePort, e *Expect, nodeIP netip.Addr) []reachTarget {
	var targets []reachTarget
	if cip, ok := sp.ClusterIP(e.Family); ok && e.HasInternal {
		targets = append(targets, reachTarget{kind: view.ClusterIP, ip: cip, port: sp.Port,
			from: []trace.From{trace.FromPod, trace.FromNode}})
	}
	if !e.HasExternal {
		return targets
	}
	for _, d := range e.ExternalDests() {
		t := reachTarget{kind: d.Kind, ip: d.entryIP, port: sp.Port, from: []trace.From{trace.FromExternal}}
		if d.Kind == view.NodePort {
			if !nodeIP.IsValid() {
				continue
			}
			t.ip, t.port = nodeIP, sp.NodePort
		}
		if d.Kind == view.LoadBalancerIP && len(sp.SourceRanges) > 0 {
			src, ok := allowedSource(sp.SourceRanges, e.Family)
			if !ok {
				continue
			}
			t.src = src
		}
		targets = append(targets, t)
	}
	return targets
}

// tracedFamilies returns the families whose service ports the sweep of
// [Pass.startTraces] traces: those the mode's data plane has rules of.
func tracedFamilies(s *model.Snapshot, mode string) []model.Family {
	if mode != model.ModeIPTables {
		return []model.Family{model.IPv4, model.IPv6}
	}
	var out []model.Family
	dumps := kubeDumps(s)
	for _, fam := range []model.Family{model.IPv4, model.IPv6} {
		if dumps[fam] != nil {
			out = append(out, fam)
		}
	}
	return out
}

// startTraces starts tracing, in the background and on all CPUs, the
// packets of every service port the reachability pass and
// load-balance-skew may look at, so that the views are built and the
// checks before them run meanwhile (every engine may run concurrently over
// one data plane, which the checks do not modify). It needs no view: it
// traces every destination with endpoints, and the checks ask for those
// the views have an entry for. The checks read the results through
// [Pass.prefetchTraces]. On one CPU nothing is started: the packets are
// traced as they are asked for.
func (p *Pass) startTraces() {
	tf := p.tracerFacts()
	if tf.started {
		return
	}
	tf.started = true
	workers := runtime.GOMAXPROCS(0)
	if workers < 2 {
		return
	}
	var pkts []trace.Packet
	seen := map[trace.Packet]bool{}
	for _, fam := range tracedFamilies(p.Snap, p.facts.mode) {
		nodeIP := nodePortAddr(p, fam)
		for _, sp := range p.Snap.ActivePorts() {
			if _, ok := sp.ClusterIP(fam); !ok {
				continue
			}
			for _, t := range reachDests(sp, p.Expect(sp, fam), nodeIP) {
				for _, from := range t.from {
					pkt := trace.Packet{Dst: netip.AddrPortFrom(t.ip, uint16(t.port)), Proto: sp.ProtoLower(), From: from, Src: t.src}
					if _, ok := tf.results[pkt]; !ok && !seen[pkt] {
						seen[pkt] = true
						pkts = append(pkts, pkt)
					}
				}
			}
		}
	}
	outs := make([]traceOutcome, len(pkts))
	done := make(chan struct{})
	tf.pending = func() {
		<-done
		for i, pkt := range pkts {
			tf.results[pkt] = outs[i]
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(pkts) {
					return
				}
				outs[i] = outcomeOf(trace.Trace(tf.dp, pkts[i], trace.Options{Summary: true}))
			}
		})
	}
	go func() {
		wg.Wait()
		close(done)
	}()
}

// prefetchTraces waits for the traces [Pass.startTraces] started (starting
// them if no one did) and puts them in the cache the checks read.
func (p *Pass) prefetchTraces() {
	p.startTraces()
	if tf := p.facts.tracer; tf.pending != nil {
		tf.pending()
		tf.pending = nil
	}
}

// nodePortAddr is the node address node ports are traced to: the first
// kube-proxy serves node ports on, else the node's first address.
func nodePortAddr(p *Pass, fam model.Family) netip.Addr {
	if ips, ok := ipvsNodePortIPs(p.Snap, fam); ok && len(ips) > 0 {
		return ips[0]
	}
	for _, a := range p.Snap.Node.Addresses {
		if model.FamilyOf(a) == fam {
			return a.Unmap()
		}
	}
	return netip.Addr{}
}

// allowedSource returns an address inside the first source range of the
// family.
func allowedSource(ranges []netip.Prefix, fam model.Family) (netip.Addr, bool) {
	for _, r := range ranges {
		if model.FamilyOf(r.Addr()) != fam {
			continue
		}
		a := r.Masked().Addr()
		if r.Bits() < a.BitLen() {
			a = a.Next()
		}
		return a, true
	}
	return netip.Addr{}, false
}

// reportUnreachable traces the target from each of its origins and reports
// the share of new connections that reach no endpoint.
func reportUnreachable(p *Pass, v *view.View, sp *model.ServicePort, e *Expect, t reachTarget, mode string) {
	good := map[string]bool{}
	for _, ep := range sp.Endpoints {
		good[ep.String()] = true
	}
	for _, d := range t.entry.Dispatch {
		if d == nil {
			continue
		}
		for _, b := range d.Backends {
			good[b.Endpoint] = true // stale backends are endpoint-stale's
		}
	}
	var lost []string
	var evidence []model.Evidence
	for _, from := range t.from {
		if o, ok := view.ParseOrigin(string(from)); ok && t.entry.Routed && t.entry.Dispatch[o] == nil {
			continue // the entry does not forward this origin (traffic-policy-mismatch's)
		}
		pkt := trace.Packet{Dst: netip.AddrPortFrom(t.ip, uint16(t.port)), Proto: sp.ProtoLower(), From: from, Src: t.src}
		o := p.traced(pkt)
		if o.err != nil {
			p.Note("%s mode is not traced (%v): service ports not traced", mode, o.err)
			return
		}
		loss, _ := lostShare(p, o.paths, good, mode, pkt)
		if loss <= lossTolerance {
			continue
		}
		// The few lossy packets are traced again, with their steps.
		var paths []trace.Path
		if full, err := p.tracedSteps(pkt); err == nil {
			paths = full.Paths
			o = outcomeOf(full, nil)
		} else {
			for _, tp := range o.paths {
				paths = append(paths, trace.Path{Probability: tp.prob, Verdict: tp.verdict, Destination: tp.dest})
			}
		}
		loss, worst := lostShare(p, o.paths, good, mode, pkt)
		if worst < 0 {
			continue
		}
		path := paths[worst]
		lost = append(lost, fmt.Sprintf("%.1f%% %s (%s)", 100*loss, fromText(from), outcome(path)))
		for _, s := range path.Steps {
			ev := model.Evidence{File: s.File, Line: s.Line, Path: s.Path, Text: s.Table + " " + s.Chain + ": " + s.Rule}
			if !hasEvidence(evidence, ev) {
				evidence = append(evidence, ev)
			}
		}
	}
	if len(lost) == 0 {
		return
	}
	// The rules nearest to where the packet was lost come first.
	for i, j := 0, len(evidence)-1; i < j; i, j = i+1, j-1 {
		evidence[i], evidence[j] = evidence[j], evidence[i]
	}
	dest := destText(t.kind, t.ip, sp)
	if t.kind == view.NodePort {
		dest = fmt.Sprintf("node port %s/%s", model.JoinHostPort(t.ip, t.port), sp.ProtoLower())
	}
	p.Report(Finding{
		Service: sp.String(), Protocol: string(sp.Protocol),
		Message: fmt.Sprintf("new connections to %s do not reach its %d usable endpoints although kube-proxy's entry exists: %s",
			dest, len(e.Endpoints(policyOf(e, t.kind))), strings.Join(lost, "; ")),
		Evidence: append(evidence, ServiceEvidence(sp)),
		Advice: "Read the rules of the evidence, nearest to the loss first: a rule that is not kube-proxy's (a host firewall, " +
			"another tool's NAT) usually decides; proxyscan trace shows every path of the packet.",
	})
}

// lostShare returns the share of new connections of res that reach no
// endpoint, and the most probable lost path (-1 when none).
func lostShare(p *Pass, paths []tracedPath, good map[string]bool, mode string, pkt trace.Packet) (float64, int) {
	loss, worst := 0.0, -1
	for i, path := range paths {
		if path.conds || reached(path.verdict, path.dest, good, mode) {
			continue
		}
		if path.warned {
			p.Note("%s from %s: a path met rules the tracer does not model", pkt.Dst, pkt.From)
			continue
		}
		loss += path.prob
		if worst < 0 || path.prob > paths[worst].prob {
			worst = i
		}
	}
	return loss, worst
}

func policyOf(e *Expect, k view.Kind) view.Policy {
	if k == view.ClusterIP {
		return e.InternalPolicy
	}
	return e.ExternalPolicy
}

func fromText(f trace.From) string {
	switch f {
	case trace.FromPod:
		return "from a pod"
	case trace.FromNode:
		return "from the node"
	}
	return "from outside"
}

// reached reports whether a path ends at an endpoint: DNAT to one (or
// local delivery to a virtual server, in IPVS mode).
func reached(v trace.Verdict, dest string, good map[string]bool, mode string) bool {
	switch v {
	case trace.VerdictDNAT:
		return good[dest]
	case trace.VerdictLocal:
		return mode == model.ModeIPVS
	}
	return false
}

// outcome says how a lost path ended, with the rule that ended it.
func outcome(p trace.Path) string {
	what := ""
	switch p.Verdict {
	case trace.VerdictDrop:
		what = "dropped"
	case trace.VerdictReject:
		what = "rejected"
	case trace.VerdictDNAT:
		what = "sent to " + p.Destination + ", which is no endpoint"
	default:
		what = "never rewritten to an endpoint"
	}
	if len(p.Steps) > 0 && (p.Verdict == trace.VerdictDrop || p.Verdict == trace.VerdictReject || p.Verdict == trace.VerdictDNAT) {
		s := p.Steps[len(p.Steps)-1]
		what += " by " + s.Table + " " + s.Chain + ": " + s.Rule
	}
	return what
}

// tracedShares returns, per endpoint, the share of new connections the
// tracer sends to it for one entry and origin, and the packet traced; false
// when the entry's packet is not traced (mode without an engine,
// unmodelled rules).
func tracedShares(p *Pass, v *view.View, e *view.Entry, o view.Origin) (map[string]float64, trace.Packet, bool) {
	ip := e.IP
	if e.Kind == view.NodePort {
		ip = nodePortAddr(p, v.Family)
	}
	if !ip.IsValid() {
		return nil, trace.Packet{}, false
	}
	pkt := trace.Packet{Dst: netip.AddrPortFrom(ip, uint16(e.Port)), Proto: e.Protocol, From: trace.From(o.String())}
	if e.Firewall != nil {
		return nil, pkt, false // the source decides; shares are read from the rules
	}
	p.prefetchTraces()
	to := p.traced(pkt)
	if to.err != nil || to.warned {
		return nil, pkt, false
	}
	out := map[string]float64{}
	for _, path := range to.paths {
		if path.warned {
			return nil, pkt, false
		}
		if path.conds {
			continue
		}
		if path.verdict == trace.VerdictDNAT {
			out[path.dest] += path.prob
		}
	}
	return out, pkt, true
}
