package checks

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/analyzer/trace"
	"github.com/proxyscan/proxyscan/analyzer/view"
	"github.com/proxyscan/proxyscan/internal/fault"
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
		"gives the share of connections lost and the rules the lost packet met; the destinations of one service port " +
		"lost at the same rule are one finding that lists them, and the service ports whose lost packets one rule " +
		"drops or rejects are one finding that leads with that rule and lists them (of both families for a rule of an " +
		"inet table, which the finding names). The packets of a hook that does " +
		"not jump to kube-proxy's rules are hook-jump-missing's.",
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

// traceFacts holds the data plane the tracer walks and the summaries of
// the packets traced, shared by the checks of a run.
type traceFacts struct {
	dp *trace.Dataplane
	// sums holds the summary of every packet traced: the sweep's, then
	// those traced when a check asked for them. swept finds a packet of
	// the sweep by its key, index one traced otherwise; other holds the
	// few packets a key cannot (see keyOf).
	sums  []trace.Summary
	swept sweptIndex
	index map[pktKey]int32
	other map[trace.Packet]int32
	// started is set once startTraces ran; pending, set while the sweep
	// it started runs, waits for it and stores its summaries.
	started bool
	pending func()
	// limit is the error of a trace that passed the tracer's bound of
	// rule evaluations (see trace.WorkError): the service ports were not
	// checked.
	limit error
	// unmodelled lists the packets (up to a few, counted in unmodelledN)
	// of which a path met a rule the tracer does not model and did not
	// reach an endpoint: whether those packets reach is not checked.
	unmodelled  []string
	unmodelledN int
}

// pktKey is a packet as the checks trace it, without pointers, so that
// the index of every service port's packets is small and never scanned
// by the garbage collector.
type pktKey struct {
	dst         [16]byte
	port        uint16
	proto, from uint8
	dst4        bool // dst is an IPv4 address
}

// keyOf returns the key of pkt; false when pkt has a field the key does
// not hold (a source, an interface, a zone, an unknown protocol or
// origin).
func keyOf(pkt trace.Packet) (pktKey, bool) {
	dst := pkt.Dst.Addr()
	k := pktKey{dst: dst.As16(), port: pkt.Dst.Port(), dst4: dst.Is4()}
	switch pkt.Proto {
	case "tcp":
		k.proto = 1
	case "udp":
		k.proto = 2
	case "sctp":
		k.proto = 3
	default:
		return k, false
	}
	switch pkt.From {
	case model.FromPod:
		k.from = 1
	case model.FromNode:
		k.from = 2
	case model.FromExternal:
		k.from = 3
	default:
		return k, false
	}
	return k, !pkt.Src.IsValid() && pkt.InIface == "" && dst.IsValid() && dst.Zone() == ""
}

// lookup returns the place of pkt's summary in sums.
func (tf *traceFacts) lookup(pkt trace.Packet) (int32, bool) {
	if k, ok := keyOf(pkt); ok {
		if i, ok := tf.swept.lookup(k); ok {
			return i, true
		}
		i, ok := tf.index[k]
		return i, ok
	}
	i, ok := tf.other[pkt]
	return i, ok
}

// A sweptIndex finds the packets of a sweep by their keys: the keys, in
// the order of their places in sums (from base), and their indexes
// sorted by key, searched. It takes 28 bytes a packet where a map took
// about 50 (20,000 packets on a 10,000-Service node, kept to the end).
type sweptIndex struct {
	keys   []pktKey
	sorted []int32
	base   int32
}

// compareKeys orders packets' keys.
func compareKeys(a, b *pktKey) int {
	if c := bytes.Compare(a.dst[:], b.dst[:]); c != 0 {
		return c
	}
	return cmp.Or(cmp.Compare(a.port, b.port), cmp.Compare(a.proto, b.proto), cmp.Compare(a.from, b.from),
		cmp.Compare(b2i(a.dst4), b2i(b.dst4)))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// newSweptIndex indexes keys, whose places start at base: distinct, but
// for the zero keys of the packets that have none (see sweepPackets),
// which are left out (no packet's key is zero: its protocol never is).
func newSweptIndex(keys []pktKey, base int32) sweptIndex {
	sorted := make([]int32, 0, len(keys))
	for i := range keys {
		if keys[i] != (pktKey{}) {
			sorted = append(sorted, int32(i))
		}
	}
	slices.SortFunc(sorted, func(a, b int32) int { return compareKeys(&keys[a], &keys[b]) })
	return sweptIndex{keys: keys, sorted: sorted, base: base}
}

// lookup returns the place of the packet of key k.
func (x *sweptIndex) lookup(k pktKey) (int32, bool) {
	j, ok := slices.BinarySearchFunc(x.sorted, &k, func(i int32, k *pktKey) int { return compareKeys(&x.keys[i], k) })
	if !ok {
		return 0, false
	}
	return x.base + x.sorted[j], true
}

// add gives pkt the place i in sums.
func (tf *traceFacts) add(pkt trace.Packet, i int32) {
	if k, ok := keyOf(pkt); ok {
		tf.index[k] = i
		return
	}
	if tf.other == nil {
		tf.other = map[trace.Packet]int32{}
	}
	tf.other[pkt] = i
}

// traced returns the summary of the trace of pkt through the node's data
// plane (of its mode); its Err is set when the mode is not traced.
func (p *Pass) traced(pkt trace.Packet) trace.Summary {
	tf := p.tracerFacts()
	if tf.pending != nil {
		tf.pending() // the sweep's places in sums come first
		tf.pending = nil
	}
	if i, ok := tf.lookup(pkt); ok {
		return tf.sums[i]
	}
	sum := trace.Summarize(trace.Trace(tf.dp, pkt, trace.Options{Summary: true}))
	tf.add(pkt, int32(len(tf.sums)))
	tf.sums = append(tf.sums, sum)
	return sum
}

// tracerFacts returns the run's tracer state, made on first use.
func (p *Pass) tracerFacts() *traceFacts {
	if p.facts.tracer == nil {
		p.facts.tracer = &traceFacts{index: map[pktKey]int32{}, dp: trace.FromSnapshot(p.facts.res)}
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
	from  []model.Origin
	src   netip.Addr // the source, when one must be chosen (source ranges)
	entry *view.Entry
}

// text names the target's destination in messages: its kind and address,
// and for a node port the node address it was traced to.
func (t reachTarget) text(sp *model.ServicePort) string {
	if t.kind == view.NodePort {
		return fmt.Sprintf("node port %s/%s", model.JoinHostPort(t.ip, t.port), sp.ProtoLower())
	}
	return destText(t.kind, t.ip, sp)
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
var reachDeferred = []string{"iptables-backend-mixed", "mode-mismatch", "ruleset-invalid"}

func runServiceUnreachable(p *Pass) {
	mode, _ := p.Mode()
	for _, id := range reachDeferred {
		if p.facts.fired[id] {
			p.Note("%s reported: service ports not traced", id)
			return
		}
	}
	p.prefetchTraces()
	// The findings of every family: a rule of an inet table, which both
	// families meet, is one cause.
	var pending []pendingUnreached
	for _, v := range p.Views() {
		if p.interfacesHidden(v) {
			continue
		}
		nodeIP := nodePortAddr(p.Snap, v.Family)
		ports := p.PortsOf(v)
		// What each port is expected to do, nil for a port another
		// check's finding already explains.
		exps := make([]*Expect, len(ports))
		for i, sp := range ports {
			if !p.facts.services[sp.String()] {
				exps[i] = p.Expect(sp, v.Family)
			}
		}
		reaching := reachingPorts(p, v, ports, exps, nodeIP, mode)
		broken := p.facts.hookBroken[v.Family]
		for i, sp := range ports {
			e := exps[i]
			if e == nil || reaching != nil && reaching[i] {
				continue
			}
			var lost []*unreached
			for _, t := range reachTargets(v, sp, e, nodeIP) {
				if len(broken) > 0 {
					// hook-jump-missing's finding lists these packets.
					t.from = slices.DeleteFunc(slices.Clone(t.from), func(o model.Origin) bool { return slices.Contains(broken, o) })
					if len(t.from) == 0 {
						continue
					}
				}
				if u := traceUnreached(p, sp, e, t, mode); u != nil {
					lost = append(lost, u)
				}
			}
			for _, u := range unreachedFindings(sp, lost) {
				u.v = v
				pending = append(pending, u)
			}
		}
	}
	reportCauses(p, pending)
}

// pendingUnreached is a finding of service-unreachable for one service
// port, with the rule that ended every lost packet of it when that rule
// dropped or rejected them all ("" otherwise): findings of several service
// ports that share that rule are one cause.
type pendingUnreached struct {
	v     *view.View // the view of the family the port was traced in
	f     Finding
	rule  string
	cause string // how the packets ended, with the rule
	dests int
	lost  string // the destinations and their shares, for the one finding
}

// reportCauses reports the findings of the views: those of two service
// ports or more lost at the same dropping or rejecting rule, in one family
// or both (a rule of an inet table), are one finding that leads with the
// rule and lists the service ports; the others as they are. A family whose
// findings are withheld (a partial dump) keeps them apart.
func reportCauses(p *Pass, pending []pendingUnreached) {
	count := map[string]int{}
	for _, u := range pending {
		if u.rule != "" && !p.withheld(u.v) {
			count[u.rule]++
		}
	}
	done := map[string]bool{}
	for i, u := range pending {
		if u.rule == "" || count[u.rule] < 2 || p.withheld(u.v) {
			p.ReportAbsence(u.v, u.f)
			continue
		}
		if done[u.rule] {
			continue
		}
		done[u.rule] = true
		f := Finding{
			Evidence: slices.Clone(u.f.Evidence[:1]),
			Advice: "A rule that is not kube-proxy's (a host firewall, another tool) stops the service traffic kube-proxy " +
				"sends to its endpoints: allow the pod and service ranges in it or order its rules after kube-proxy's. " +
				"When the rule is kube-proxy's, a rule before it is missing. proxyscan trace shows every path of the packet.",
		}
		dests := 0
		var ports []string
		var fams []model.Family
		protocol := ""
		for _, w := range pending[i:] {
			if w.rule != u.rule || p.withheld(w.v) {
				continue
			}
			if !slices.Contains(ports, w.f.Service) {
				ports = append(ports, w.f.Service)
			}
			if !slices.Contains(fams, w.v.Family) {
				fams = append(fams, w.v.Family)
			}
			dests += w.dests
			f.Objects = append(f.Objects, w.f.Service+": "+w.lost)
			switch {
			case protocol == "":
				protocol = w.f.Protocol
			case protocol != w.f.Protocol:
				protocol = "mixed"
			}
		}
		if protocol != "mixed" {
			f.Protocol = protocol
		}
		verb, rule, _ := strings.Cut(u.cause, " by ")
		verb = map[string]string{"dropped": "drops", "rejected": "rejects"}[verb]
		both := ""
		if len(fams) > 1 {
			both = ", " + strings.Join(familyNames(fams), " and ")
		}
		f.Message = fmt.Sprintf("one rule, %s, %s the new connections to %d service ports (%d destinations%s) before they reach their "+
			"usable endpoints, although kube-proxy's entries exist", rule, verb, len(ports), dests, both)
		p.ReportAbsence(u.v, f)
	}
}

// reachingParallelFrom is the number of service ports of a view from
// which reachingPorts looks at them on every core (a variable for the
// tests).
var reachingParallelFrom = 512

// reachingPorts tells, on every core, the service ports (of exps not nil)
// whose every traced packet reaches an endpoint on every path, as their
// sweep's summaries tell: those traceUnreached finds nothing for, with no
// note, and that need not be looked at again one after the other. It
// changes nothing it reads (the summaries are looked up, never traced,
// an endpoint's address compared as a value, not written), so that the
// ports are read side by side; a port it is unsure of (a packet not
// swept, an error, a path that reaches no endpoint even with a share
// within the tolerance, one not written as the tracer writes) is left
// to the pass one after the other, as a worker's panic leaves its ports.
// nil when the ports are too few or there is one core, or no sweep ran.
func reachingPorts(p *Pass, v *view.View, ports []*model.ServicePort, exps []*Expect, nodeIP netip.Addr, mode string) []bool {
	workers := runtime.GOMAXPROCS(0)
	tf := p.facts.tracer
	if workers < 2 || len(ports) < reachingParallelFrom || tf == nil || !tf.started || tf.pending != nil {
		return nil
	}
	v.Lookup(view.ClusterIP, netip.Addr{}, "", 0) // the view's index, built before it is shared
	return sweptFlags(len(ports), func(i int) bool {
		return exps[i] != nil && reachesEndpoints(tf, v, ports[i], exps[i], nodeIP, mode)
	})
}

// sweptFlags returns fn(i) for i in 0..n-1, computed on every core in
// chunks of 64: fn must change nothing it reads (it reads the sweep's
// summaries and the views side by side). A worker that panics leaves the
// rest of its chunk false: the caller's pass one after the other looks at
// those again, and raises the panic where it is caught.
func sweptFlags(n int, fn func(i int) bool) []bool {
	out := make([]bool, n)
	const chunk = 64
	var next atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { _ = recover() }()
			for {
				lo := int(next.Add(chunk)) - chunk
				if lo >= n {
					return
				}
				for i := lo; i < min(lo+chunk, n); i++ {
					out[i] = fn(i)
				}
			}
		}()
	}
	wg.Wait()
	return out
}

// reachesEndpoints reports whether every packet traceUnreached traces for
// sp was swept and reaches one of its endpoints on every path that is not
// conditional, reading what it would without changing anything.
func reachesEndpoints(tf *traceFacts, v *view.View, sp *model.ServicePort, e *Expect, nodeIP netip.Addr, mode string) bool {
	for _, t := range reachTargets(v, sp, e, nodeIP) {
		var room [16]netip.AddrPort
		good := room[:0]
		for _, ep := range sp.Endpoints {
			// An endpoint written otherwise than AddrPort writes it
			// (an IPv6 address, a port out of range) is left to the
			// pass that compares what is written.
			if !ep.IP.Is4() || ep.Port < 0 || ep.Port > 65535 {
				return false
			}
			good = append(good, netip.AddrPortFrom(ep.IP, uint16(ep.Port)))
		}
		var seenBuf [4]*view.Dispatch
		seen := seenBuf[:0]
		for _, d := range t.entry.Dispatch {
			if d == nil || slices.Contains(seen, d) {
				continue
			}
			seen = append(seen, d)
			for _, b := range d.Backends {
				// A backend not written as the tracer writes a
				// destination is no path's destination.
				if ap, ok := endpointAddr(b.Endpoint); ok {
					good = append(good, ap)
				}
			}
		}
		for _, from := range t.from {
			if t.entry.Routed && t.entry.Dispatch[from] == nil {
				continue
			}
			pkt := trace.Packet{Dst: netip.AddrPortFrom(t.ip, uint16(t.port)), Proto: sp.ProtoLower(), From: from, Src: t.src}
			i, ok := tf.lookup(pkt)
			if !ok || int(i) >= len(tf.sums) || tf.sums[i].Err != nil {
				return false
			}
			for _, end := range tf.sums[i].Ends {
				if end.Conditional {
					continue
				}
				switch end.Verdict() {
				case trace.VerdictDNAT:
					if !end.Destination.Addr().IsValid() || !slices.Contains(good, end.Destination) {
						return false
					}
				case trace.VerdictLocal:
					if mode != model.ModeIPVS {
						return false
					}
				default:
					return false
				}
			}
		}
	}
	return true
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

// fromInside and fromOutside are the origins a destination is traced
// from, shared by the targets (read only).
var (
	fromInside  = []model.Origin{model.FromPod, model.FromNode}
	fromOutside = []model.Origin{model.FromExternal}
)

// reachDests returns the destinations of a service port that have
// endpoints under their policy, whether or not the data plane has an
// entry for them: what [reachTargets] picks from.
func reachDests(sp *model.ServicePort, e *Expect, nodeIP netip.Addr) []reachTarget {
	var targets []reachTarget
	if cip, ok := sp.ClusterIP(e.Family); ok && e.HasInternal() {
		targets = append(targets, reachTarget{kind: view.ClusterIP, ip: cip, port: sp.Port, from: fromInside})
	}
	if !e.HasExternal() {
		return targets
	}
	for _, d := range e.ExternalDests() {
		t := reachTarget{kind: d.Kind, ip: d.entryIP, port: sp.Port, from: fromOutside}
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
func tracedFamilies(r *resolve.Resolution) []model.Family {
	if r.Mode != model.ModeIPTables {
		return []model.Family{model.IPv4, model.IPv6}
	}
	var out []model.Family
	for _, fam := range []model.Family{model.IPv4, model.IPv6} {
		if r.IPTables(fam) != nil {
			out = append(out, fam)
		}
	}
	return out
}

// startTraces starts tracing, in the background and on every CPU but one,
// the packets of every service port the reachability pass and
// load-balance-skew may look at, so that the views are built on the one
// left and the checks before them run meanwhile (every engine may run
// concurrently over one data plane, which the checks do not modify): the
// views and those checks wait for no sweep worker, and the sweep goes on
// beside them. It needs no view: it traces every destination with
// endpoints, and the checks ask for those the views have an entry for. The sweep ([trace.Sweep]) keeps only where
// each packet's paths end, and drops the chains it compiled when it is
// over (an evidence trace compiles those it needs again). The checks
// read the summaries through [Pass.prefetchTraces]; the first that waits
// for them traces beside the sweep's workers until no packet is left to
// hand out ([trace.SweepRun.Help]), rather than leave its core idle. On
// one CPU nothing is started: the packets are traced as they are asked
// for.
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
	// The packets are listed in the background too, beside the views:
	// what the checks expect of each service port, which the listing
	// reads, is handed over to the checks' cache once listed (see
	// facts.expect).
	f := p.facts
	listed := make(chan struct{})
	f.listing = listed
	base := int32(len(tf.sums))
	type swept struct {
		sums []trace.Summary
		err  error
	}
	done := make(chan swept, 1)
	f.readers.Store(2) // the views, built next, and the sweep
	// sweeping gets the sweep once it is started (nil when the listing
	// failed): the checks that wait for it trace beside its workers.
	sweeping := make(chan *trace.SweepRun, 1)
	tf.pending = func() {
		tf.pending = nil // once, even when it panics
		if run := <-sweeping; run != nil {
			run.Help()
		}
		r := <-done
		if r.err != nil {
			// A panic of the sweep, raised again where the checks run,
			// which ends the command as proxyscan's failure.
			panic(r.err)
		}
		if len(tf.sums) == 0 {
			tf.sums = r.sums
		} else {
			tf.sums = append(tf.sums, r.sums...)
		}
	}
	go func() {
		var r swept
		var run *trace.SweepRun
		func() {
			defer fault.Catch(&r.err)
			defer func() { sweeping <- run }()
			var pl *sweepPackets
			func() {
				defer close(listed)
				pl, f.listed = listPackets(p.Snap, f.res, tf, base)
			}()
			run = trace.StartSweepOf(tf.dp, len(pl.keys), pl.packet, workers-1)
		}()
		if run != nil {
			r.sums, r.err = run.Wait()
		}
		f.doneReading()
		done <- r
	}()
}

// sweepPackets are the packets of a sweep as [listPackets] lists them:
// the key of each, 24 bytes rather than a trace.Packet's 96 (a
// 10,000-Service node has 20,000 of them, kept while the sweep runs
// beside the views), and by place the few packets that have no key (a
// load balancer's allowed source).
type sweepPackets struct {
	keys  []pktKey
	other map[int]trace.Packet
}

// add appends pkt to l.
func (l *sweepPackets) add(pkt trace.Packet) {
	k, ok := keyOf(pkt)
	if !ok {
		if l.other == nil {
			l.other = map[int]trace.Packet{}
		}
		l.other[len(l.keys)] = pkt
		k = pktKey{}
	}
	l.keys = append(l.keys, k)
}

// packet returns the i-th packet of l.
func (l *sweepPackets) packet(i int) trace.Packet {
	if pkt, ok := l.other[i]; ok {
		return pkt
	}
	return l.keys[i].packet()
}

// keyProtos and keyOrigins are the protocols and origins of a pktKey's
// proto and from (see keyOf).
var (
	keyProtos  = [...]string{1: "tcp", 2: "udp", 3: "sctp"}
	keyOrigins = [...]model.Origin{1: model.FromPod, 2: model.FromNode, 3: model.FromExternal}
)

// packet returns the packet whose key is k (keyOf's inverse).
func (k pktKey) packet() trace.Packet {
	dst := netip.AddrFrom16(k.dst)
	if k.dst4 {
		dst = dst.Unmap()
	}
	return trace.Packet{Dst: netip.AddrPortFrom(dst, k.port), Proto: keyProtos[k.proto], From: keyOrigins[k.from]}
}

// listPackets lists the packets of every service port the sweep traces,
// Service by Service, so that the sweep traces those of one Service
// together, with what the checks expect of each service port, computed
// for it; a packet listed before, by this listing or a trace the checks
// made, is not listed again. The index of tf gets the packets' places in
// sums (from base), the summaries when the sweep is over.
func listPackets(s *model.Snapshot, res *resolve.Resolution, tf *traceFacts, base int32) (*sweepPackets, map[expKey]*Expect) {
	fams, active := tracedFamilies(res), s.ActivePorts()
	// A cluster IP from a pod and from the node, per service port and
	// family: most packets (node ports and load balancers add theirs).
	// (The ports of a family without cluster IPs, the IPv6 ports of an
	// IPv4 node, have none: the room is made for those that have.)
	n := 0
	for _, fam := range fams {
		for _, sp := range active {
			if _, ok := sp.ClusterIP(fam); ok {
				n++
			}
		}
	}
	pl := &sweepPackets{keys: make([]pktKey, 0, 2*n)}
	exp := make(map[expKey]*Expect, n)
	// listed finds the packets listed so far, while they are listed
	// (the index kept is made of them once they are all listed).
	listed := make(map[pktKey]struct{}, 2*n)
	for _, fam := range fams {
		nodeIP := nodePortAddr(s, fam)
		for _, sp := range active {
			if _, ok := sp.ClusterIP(fam); !ok {
				continue
			}
			e := newExpect(res, sp, fam)
			if k, ok := expKeyOf(sp, fam); ok {
				exp[k] = e
			}
			for _, t := range reachDests(sp, e, nodeIP) {
				for _, from := range t.from {
					pkt := trace.Packet{Dst: netip.AddrPortFrom(t.ip, uint16(t.port)), Proto: sp.ProtoLower(), From: from, Src: t.src}
					if _, ok := tf.lookup(pkt); ok {
						continue
					}
					if k, ok := keyOf(pkt); ok {
						if _, ok := listed[k]; ok {
							continue
						}
						listed[k] = struct{}{}
					} else {
						tf.add(pkt, base+int32(len(pl.keys)))
					}
					pl.add(pkt)
				}
			}
		}
	}
	tf.swept = newSweptIndex(pl.keys, base)
	return pl, exp
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
func nodePortAddr(s *model.Snapshot, fam model.Family) netip.Addr {
	if ips, ok := ipvsNodePortIPs(s, fam); ok && len(ips) > 0 {
		return ips[0]
	}
	for _, a := range s.Node.Addresses {
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

// traceUnreached traces the target from each of its origins and returns
// the share of new connections that reach no endpoint, or nil when they
// all do or the target could not be traced (noted).
func traceUnreached(p *Pass, sp *model.ServicePort, e *Expect, t reachTarget, mode string) *unreached {
	var seenBuf [4]*view.Dispatch
	seen := seenBuf[:0] // origins often share their dispatch
	n := len(sp.Endpoints)
	for _, d := range t.entry.Dispatch {
		if d != nil && !slices.Contains(seen, d) {
			seen = append(seen, d)
			n += len(d.Backends)
		}
	}
	// The list of a small set is made once, not grown.
	good := endpointSet{list: make([]string, 0, min(n, smallEndpointSet))}
	for _, ep := range sp.Endpoints {
		good.add(ep.String())
	}
	for _, d := range seen {
		for _, b := range d.Backends {
			good.add(b.Endpoint) // stale backends are endpoint-stale's
		}
	}
	var lost, shares, outcomes []string
	var evidence []model.Evidence
	for _, from := range t.from {
		if t.entry.Routed && t.entry.Dispatch[from] == nil {
			continue // the entry does not forward this origin (traffic-policy-mismatch's)
		}
		pkt := trace.Packet{Dst: netip.AddrPortFrom(t.ip, uint16(t.port)), Proto: sp.ProtoLower(), From: from, Src: t.src}
		o := p.traced(pkt)
		if o.Err != nil {
			var we *trace.WorkError
			if errors.As(o.Err, &we) {
				// A documented bound, not a mode without an engine: what
				// was not traced is a gap of the run.
				p.facts.tracer.limit = o.Err
				p.Note("service ports not checked: %v", o.Err)
				return nil
			}
			p.Note("%s mode is not traced (%v): service ports not traced", mode, o.Err)
			return nil
		}
		loss, _ := lostShare(p, o.Ends, &good, mode, pkt)
		if loss <= lossTolerance {
			continue
		}
		// The few lossy packets are traced again, with their steps.
		var paths []trace.Path
		if full, err := p.tracedSteps(pkt); err == nil {
			paths = full.Paths
			o = trace.Summarize(full, nil)
		} else {
			for _, e := range o.Ends {
				paths = append(paths, trace.Path{Probability: e.Probability, Verdict: e.Verdict(), Destination: e.Destination.String()})
			}
		}
		loss, worst := lostShare(p, o.Ends, &good, mode, pkt)
		if worst < 0 {
			continue
		}
		path := paths[worst]
		lost = append(lost, fmt.Sprintf("%.1f%% %s (%s)", 100*loss, fromText(from), outcome(path)))
		shares = append(shares, fmt.Sprintf("%.1f%% %s", 100*loss, fromText(from)))
		outcomes = append(outcomes, outcome(path))
		for _, s := range path.Steps {
			ev := model.Evidence{File: s.File, Line: s.Line, Path: s.Path, Text: s.Table + " " + s.Chain + ": " + s.Rule}
			if !hasEvidence(evidence, ev) {
				evidence = append(evidence, ev)
			}
		}
	}
	if len(lost) == 0 {
		return nil
	}
	// The rules nearest to where the packet was lost come first.
	for i, j := 0, len(evidence)-1; i < j; i, j = i+1, j-1 {
		evidence[i], evidence[j] = evidence[j], evidence[i]
	}
	return &unreached{dest: t.text(sp), endpoints: len(e.Endpoints(policyOf(e, t.kind))), lost: strings.Join(lost, "; "),
		shares: strings.Join(shares, ", "), outcomes: outcomes, evidence: evidence}
}

// unreached is a destination of a service port that new connections do
// not reach: what was lost, from where, and the rules on the way, nearest
// to the loss first.
type unreached struct {
	dest      string
	endpoints int
	lost      string
	// shares and outcomes are lost told apart: the share lost from each
	// origin, and how each of those packets ended.
	shares   string
	outcomes []string
	evidence []model.Evidence
}

// reportUnreached reports the destinations of a service port that new
// connections do not reach. Destinations lost at the same rule, with as
// many usable endpoints, share one cause: they are one finding that lists
// them as its objects.
func unreachedFindings(sp *model.ServicePort, lost []*unreached) []pendingUnreached {
	type group struct {
		key     string
		members []*unreached
	}
	var groups []*group
	for _, u := range lost {
		key := "no rule " + u.dest // nothing to say it is the same cause
		if len(u.evidence) > 0 {
			key = fmt.Sprintf("%d %s:%d:%s", u.endpoints, u.evidence[0].File, u.evidence[0].Line, u.evidence[0].Path)
		}
		i := slices.IndexFunc(groups, func(g *group) bool { return g.key == key })
		if i < 0 {
			groups = append(groups, &group{key: key})
			i = len(groups) - 1
		}
		groups[i].members = append(groups[i].members, u)
	}
	var out []pendingUnreached
	for _, g := range groups {
		first := g.members[0]
		f := Finding{
			Service: sp.String(), Protocol: string(sp.Protocol),
			Message: fmt.Sprintf("new connections to %s do not reach its %d usable endpoints although kube-proxy's entry exists: %s",
				first.dest, first.endpoints, first.lost),
			Evidence: slices.Clone(first.evidence),
			Advice: "Read the rules of the evidence, nearest to the loss first: a rule that is not kube-proxy's (a host firewall, " +
				"another tool's NAT) usually decides; proxyscan trace shows every path of the packet.",
		}
		if len(g.members) > 1 {
			dests := make([]string, len(g.members))
			losses := make([]string, len(g.members))
			same := true // every packet ended the same way: say it once
			for i, u := range g.members {
				dests[i], losses[i] = u.dest, u.dest+": "+u.shares
				for _, o := range u.outcomes {
					same = same && o == first.outcomes[0]
				}
				for _, ev := range u.evidence {
					if !hasEvidence(f.Evidence, ev) {
						f.Evidence = append(f.Evidence, ev)
					}
				}
			}
			if !same {
				for i, u := range g.members {
					losses[i] = u.dest + ": " + u.lost
				}
			}
			cause := "lost at the same rule"
			if same {
				cause += " (" + first.outcomes[0] + ")"
			}
			f.Objects = dests
			f.Message = fmt.Sprintf("new connections to %s and %s do not reach its %d usable endpoints although kube-proxy's entry exists, %s: %s",
				strings.Join(dests[:len(dests)-1], ", "), dests[len(dests)-1], first.endpoints, cause, strings.Join(losses, "; "))
		}
		f.Evidence = append(f.Evidence, ServiceEvidence(sp))
		// A partial dump may lack the rules the packet would have met.
		pu := pendingUnreached{f: f, dests: len(g.members)}
		var shares []string
		same := true
		for _, u := range g.members {
			shares = append(shares, u.dest+" "+u.shares)
			for _, o := range u.outcomes {
				same = same && o == first.outcomes[0]
			}
		}
		pu.lost = strings.Join(shares, "; ")
		if ev := first.evidence; same && len(ev) > 0 && (strings.HasPrefix(first.outcomes[0], "dropped by ") ||
			strings.HasPrefix(first.outcomes[0], "rejected by ")) {
			pu.rule = fmt.Sprintf("%s:%d:%s", ev[0].File, ev[0].Line, ev[0].Path)
			pu.cause = first.outcomes[0]
		}
		out = append(out, pu)
	}
	return out
}

// lostShare returns the share of new connections of res that reach no
// endpoint, and the most probable lost path (-1 when none).
func lostShare(p *Pass, ends []trace.End, good *endpointSet, mode string, pkt trace.Packet) (float64, int) {
	loss, worst := 0.0, -1
	for i, e := range ends {
		if e.Conditional || reached(e.Verdict(), e.Destination, good, mode) {
			continue
		}
		if e.Warned {
			p.Note("%s from %s: a path met rules the tracer does not model", pkt.Dst, pkt.From)
			if tf := p.facts.tracer; tf != nil {
				if tf.unmodelledN < 3 {
					tf.unmodelled = append(tf.unmodelled, fmt.Sprintf("%s from %s", pkt.Dst, pkt.From))
				}
				tf.unmodelledN++
			}
			continue
		}
		loss += e.Probability
		if worst < 0 || e.Probability > ends[worst].Probability {
			worst = i
		}
	}
	return loss, worst
}

func policyOf(e *Expect, k view.Kind) view.Policy {
	if k == view.ClusterIP {
		return e.InternalPolicy()
	}
	return e.ExternalPolicy()
}

func fromText(f model.Origin) string {
	switch f {
	case model.FromPod:
		return "from a pod"
	case model.FromNode:
		return "from the node"
	}
	return "from outside"
}

// reached reports whether a path ends at an endpoint: DNAT to one (or
// local delivery to a virtual server, in IPVS mode).
func reached(v trace.Verdict, dest netip.AddrPort, good *endpointSet, mode string) bool {
	switch v {
	case trace.VerdictDNAT:
		return good.has(dest)
	case trace.VerdictLocal:
		return mode == model.ModeIPVS
	}
	return false
}

// endpointSet holds the endpoints a packet may be sent to, as written
// ("10.0.0.1:80"): a path reaches one when its Destination is written the
// same. The zero value is empty.
type endpointSet struct {
	list []string
	m    map[string]bool // once the list is long
}

// smallEndpointSet is the size up to which an endpointSet is a list.
const smallEndpointSet = 16

// add adds the endpoint written s.
func (g *endpointSet) add(s string) {
	switch {
	case g.m != nil:
		g.m[s] = true
	case slices.Contains(g.list, s):
	case len(g.list) < smallEndpointSet:
		g.list = append(g.list, s)
	default:
		g.m = make(map[string]bool, 2*len(g.list))
		for _, x := range g.list {
			g.m[x] = true
		}
		g.m[s] = true
	}
}

// has reports whether the Destination of a path to dest is in g. The
// destination is written into a buffer of the stack, not allocated.
func (g *endpointSet) has(dest netip.AddrPort) bool {
	var buf [64]byte
	b := buf[:0]
	if dest.Addr().IsValid() {
		b = dest.AppendTo(b)
	} else {
		b = append(b, dest.String()...)
	}
	if g.m != nil {
		return g.m[string(b)]
	}
	for _, x := range g.list {
		if x == string(b) {
			return true
		}
	}
	return false
}

// endpointAddr returns the address and port an endpoint written s is:
// the destination of a path is that endpoint when the path's Destination
// is s, so only s written as the tracer writes destinations
// (AddrPort.String) is one.
func endpointAddr(s string) (netip.AddrPort, bool) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return ap, false
	}
	var buf [64]byte
	return ap, string(ap.AppendTo(buf[:0])) == s
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

// tracedEnds returns where the tracer's paths of new connections end for
// one entry and origin, and the packet traced; false when the entry's
// packet is not traced (mode without an engine, unmodelled rules).
func tracedEnds(p *Pass, v *view.View, e *view.Entry, o model.Origin) ([]trace.End, trace.Packet, bool) {
	ends, pkt, ok, _ := tracedEndsWith(e, o, func() netip.Addr { return nodePortAddr(p.Snap, v.Family) },
		func(pkt trace.Packet) (trace.Summary, bool) {
			p.prefetchTraces()
			return p.traced(pkt), true
		})
	return ends, pkt, ok
}

// tracedEndsWith is tracedEnds with the node port address and the
// packet's summary asked of nodeIP and look; sure is false when look has
// no summary for the packet, or there is no nodeIP to ask for a node
// port's (nothing else is said then).
func tracedEndsWith(e *view.Entry, o model.Origin, nodeIP func() netip.Addr,
	look func(trace.Packet) (trace.Summary, bool)) (ends []trace.End, pkt trace.Packet, ok, sure bool) {
	ip := e.IP
	if e.Kind == view.NodePort {
		if nodeIP == nil {
			return nil, trace.Packet{}, false, false
		}
		ip = nodeIP()
	}
	if !ip.IsValid() {
		return nil, trace.Packet{}, false, true
	}
	pkt = trace.Packet{Dst: netip.AddrPortFrom(ip, uint16(e.Port)), Proto: e.Protocol, From: o}
	if e.Firewall != nil {
		return nil, pkt, false, true // the source decides; shares are read from the rules
	}
	to, found := look(pkt)
	if !found {
		return nil, pkt, false, false
	}
	if to.Err != nil || to.Warned {
		return nil, pkt, false, true
	}
	for _, end := range to.Ends {
		if end.Warned {
			return nil, pkt, false, true
		}
	}
	return to.Ends, pkt, true, true
}
