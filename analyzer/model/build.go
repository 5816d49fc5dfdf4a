package model

import (
	"net/netip"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/proxyscan/proxyscan/internal/fault"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/kube"
)

// Labels kube-proxy's informers filter on (cmd/kube-proxy/app/server.go).
const (
	LabelServiceProxyName = "service.kubernetes.io/service-proxy-name"
	LabelHeadless         = "service.kubernetes.io/headless"
)

// BuildOptions tune [BuildServicePorts] to a node and a kube-proxy version.
type BuildOptions struct {
	// NodeName decides which endpoints are local.
	NodeName string
	// HonourIPMode applies the LoadBalancer ingress ipMode (Proxy ingress IPs
	// are not programmed), as kube-proxy does since 1.30.
	HonourIPMode bool
}

// BuildServicePorts derives the service ports of every Service in objs,
// with their endpoints from the EndpointSlices (or, for a Service that has
// no EndpointSlice at all, from legacy Endpoints objects). Ports of
// Services kube-proxy skips are included with Skip set. The result is
// sorted by service port name, then protocol.
func BuildServicePorts(objs *kube.Objects, opts BuildOptions) []*ServicePort {
	return buildServicePorts(objs, opts, nil, buildParts)
}

// buildStats notes, as service ports are built, what makes them depend
// on the options (see [PortsDraft]).
type buildStats struct {
	// merged says that endpoints of one address were merged: which one is
	// kept depends on the node.
	merged atomic.Bool
	// proxyIPMode says that a load balancer's ingress has ipMode Proxy:
	// HonourIPMode changes what it gives.
	proxyIPMode atomic.Bool
}

// A PortsDraft is the service ports of objects built ahead, in the
// background, before the node and the version of kube-proxy that the
// ports depend on are known (see [DraftPorts]).
type PortsDraft struct {
	objs  *kube.Objects
	done  chan struct{}
	ports []*ServicePort
	stats buildStats
	err   error // a panic of the build
	taken atomic.Bool
	// job, for a draft made ahead on one core, is its parts once they are
	// being built: the caller that takes the draft before it is done
	// builds the parts left beside it.
	job atomic.Pointer[partsJob]
	// base, for a draft given by [PortsDraft.Share], is the draft shared,
	// built once: this one's ports are copies of its ports (nil once
	// they are made).
	base *PortsDraft
}

// DraftPorts starts building the service ports of objs in the
// background, on every core, with no node and HonourIPMode off, while
// the caller finds the options; objs must not change until
// [PortsDraft.Ports] returns.
func DraftPorts(objs *kube.Objects) *PortsDraft {
	d := &PortsDraft{objs: objs, done: make(chan struct{})}
	d.start(buildParts)
	return d
}

// DraftPortsAhead is [DraftPorts] on one core, for objects decoded before
// the rest of a node's inputs are read (which the other cores read): the
// draft is taken by [PortsDraft.Claim] for the objects of a node that
// are those of objs.
func DraftPortsAhead(objs *kube.Objects) *PortsDraft {
	d := &PortsDraft{objs: objs, done: make(chan struct{})}
	d.start(func(svcs []*kube.Service, build func([]*kube.Service) []*ServicePort) []*ServicePort {
		if len(svcs) < parallelServices {
			return build(svcs)
		}
		j := newPartsJob(svcs, build)
		d.job.Store(j)
		j.work()
		return j.result()
	})
	return d
}

// start builds the draft in the background, its parts by parts.
func (d *PortsDraft) start(parts func([]*kube.Service, func([]*kube.Service) []*ServicePort) []*ServicePort) {
	go func() {
		defer close(d.done)
		defer func() {
			if v := recover(); v != nil {
				d.err = fault.Recovered(v)
			}
		}()
		d.ports = buildServicePorts(d.objs, BuildOptions{}, &d.stats, parts)
	}()
}

// Share returns a draft of d's objects for one node among several whose
// objects are d's (units of a fleet that share an export, see
// load.Exports): d is built once, and the [PortsDraft.Ports] of each
// draft it shares are copies of its ports, made for that node, with
// copies of the endpoints local to it (see copyPorts), so that no two
// nodes hold one service port or a local endpoint, and d's are never
// changed. d itself is not to be taken ([PortsDraft.Claim]) then: its
// ports are the copies' source.
func (d *PortsDraft) Share() *PortsDraft {
	return &PortsDraft{objs: d.objs, done: d.done, base: d}
}

// Claim reports whether the draft is of the service ports of objs, whose
// Services, EndpointSlices and Endpoints are those it was drafted from,
// and takes it for the caller: false when they are others, or when
// another caller took it.
func (d *PortsDraft) Claim(objs *kube.Objects) bool {
	if d == nil || !slices.Equal(d.objs.Services, objs.Services) || !slices.Equal(d.objs.EndpointSlices, objs.EndpointSlices) ||
		!slices.Equal(d.objs.Endpoints, objs.Endpoints) {
		return false
	}
	return d.taken.CompareAndSwap(false, true)
}

// Wait waits for the draft to be built (the objects it reads may then
// change). A draft not taken is waited for so.
func (d *PortsDraft) Wait() {
	<-d.done
}

// Ports returns what [BuildServicePorts] returns for the draft's objects
// and opts: the draft, its endpoints marked local for opts' node, unless
// opts change more than that (a node chooses among endpoints of one
// address; HonourIPMode and a load balancer of ipMode Proxy), which are
// built again.
func (d *PortsDraft) Ports(opts BuildOptions) []*ServicePort {
	if b := d.base; b != nil {
		d.base = nil
		return b.copies(opts)
	}
	if d.wait(opts) {
		return BuildServicePorts(d.objs, opts)
	}
	if opts.NodeName != "" {
		for _, sp := range d.ports {
			for _, e := range sp.Endpoints {
				e.Local = e.NodeName == opts.NodeName
			}
		}
	}
	return d.ports
}

// copies returns what [PortsDraft.Ports] returns for opts, for a draft
// shared by several nodes (see [PortsDraft.Share]): copies of the draft's
// ports, its endpoints local to opts' node copied and marked so, made in
// a few blocks, or the ports built again when opts change more than that.
// The draft is not changed.
func (d *PortsDraft) copies(opts BuildOptions) []*ServicePort {
	if d.wait(opts) {
		return BuildServicePorts(d.objs, opts)
	}
	return copyPorts(d.ports, opts.NodeName)
}

// wait waits for the draft's build (doing it here when no goroutine took
// it yet), raises its panic again, and reports whether opts ask for the
// ports to be built again rather than taken from the draft: a node's name
// where the draft merged endpoints, or load balancers' IP mode honoured
// where one has it.
func (d *PortsDraft) wait(opts BuildOptions) (rebuild bool) {
	if j := d.job.Load(); j != nil {
		j.work()
	}
	<-d.done
	if d.err != nil {
		panic(d.err) // the build's panic, raised again here
	}
	return opts.NodeName != "" && d.stats.merged.Load() || opts.HonourIPMode && d.stats.proxyIPMode.Load()
}

// copyPorts returns copies of ports for node (a name, or none): a port
// with endpoints local to node gets its own list of them, in which those
// are copies marked local; the other endpoints, never local in ports
// drafted for no node and never changed once built, are shared, and so
// is the list of a port without local endpoints (it has no room to grow,
// as those built have none).
func copyPorts(ports []*ServicePort, node string) []*ServicePort {
	if ports == nil {
		return nil
	}
	isLocal := func(e *Endpoint) bool { return node != "" && e.NodeName == node }
	lists, locals := 0, 0
	for _, sp := range ports {
		n := 0
		for _, e := range sp.Endpoints {
			if isLocal(e) {
				n++
			}
		}
		if n > 0 {
			lists += len(sp.Endpoints)
			locals += n
		}
	}
	block := make([]ServicePort, len(ports))
	out := make([]*ServicePort, len(ports))
	var eps []Endpoint
	var refs []*Endpoint
	if locals > 0 {
		eps, refs = make([]Endpoint, locals), make([]*Endpoint, lists)
	}
	for i, sp := range ports {
		block[i] = *sp
		c := &block[i]
		out[i] = c
		if !slices.ContainsFunc(sp.Endpoints, isLocal) {
			continue
		}
		list := refs[:len(sp.Endpoints):len(sp.Endpoints)]
		refs = refs[len(sp.Endpoints):]
		for j, e := range sp.Endpoints {
			if !isLocal(e) {
				list[j] = e
				continue
			}
			eps[0] = *e
			eps[0].Local = true
			if s := e.src; s != nil && s.run != nil {
				// The copy is not in its source's run: a source of its
				// own keeps the line of its address.
				if p := e.AddressPos(); p.Line != s.pos.Line {
					eps[0].src = &endpointSource{pos: s.pos, hints: s.hints, run: eps[0:1:1], lines: []int32{int32(p.Line)}}
				}
			}
			list[j] = &eps[0]
			eps = eps[1:]
		}
		c.Endpoints = list
	}
	return out
}

func buildServicePorts(objs *kube.Objects, opts BuildOptions, stats *buildStats, parts func([]*kube.Service, func([]*kube.Service) []*ServicePort) []*ServicePort) []*ServicePort {
	slicesBySvc := map[string][]*kube.EndpointSlice{}
	for _, s := range objs.EndpointSlices {
		name := s.Labels[discoveryv1.LabelServiceName]
		if name == "" {
			continue
		}
		if _, headless := s.Labels[LabelHeadless]; headless {
			continue
		}
		key := s.Namespace + "/" + name
		slicesBySvc[key] = append(slicesBySvc[key], s)
	}
	epsBySvc := map[string]*kube.Endpoints{}
	for _, e := range objs.Endpoints {
		epsBySvc[e.Namespace+"/"+e.Name] = e
	}
	// Namespaces whose endpoint objects the exports hold, and whether they
	// hold those of the whole cluster: then a Service without any has no
	// endpoints, otherwise one outside those namespaces is not known to.
	covered := map[string]bool{}
	whole := false
	for key := range slicesBySvc {
		ns, _, _ := strings.Cut(key, "/")
		covered[ns] = true
		whole = whole || key == "default/kubernetes"
	}
	for key := range epsBySvc {
		ns, _, _ := strings.Cut(key, "/")
		covered[ns] = true
		whole = whole || key == "default/kubernetes"
	}
	for _, list := range slicesBySvc {
		if len(list) > 1 {
			slices.SortFunc(list, func(a, b *kube.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
		}
	}
	build := func(svcs []*kube.Service) []*ServicePort {
		var out []*ServicePort
		for _, svc := range svcs {
			key := svc.Namespace + "/" + svc.Name
			ports := servicePorts(svc, opts, stats)
			slices := slicesBySvc[key]
			for _, sp := range ports {
				switch {
				case len(slices) > 0:
					sp.Endpoints = endpointsFromSlices(sp, slices, opts.NodeName, stats)
					sp.EndpointSource = EndpointSourceSlices
				case epsBySvc[key] != nil:
					eps := epsBySvc[key]
					sp.Endpoints = endpointsFromLegacy(sp, eps, opts.NodeName)
					sp.EndpointSource = EndpointSourceLegacy
					sp.EndpointsTruncated = eps.Annotations[corev1.EndpointsOverCapacity] == "truncated"
				case len(covered) > 0 && !whole && !covered[svc.Namespace]:
					sp.EndpointsUnknown = true
				}
				_ = sp.String() // its name, for the sort below
			}
			out = append(out, ports...)
		}
		return out
	}
	out := parts(objs.Services, build)
	slices.SortStableFunc(out, func(a, b *ServicePort) int {
		if c := strings.Compare(a.String(), b.String()); c != 0 {
			return c
		}
		return strings.Compare(string(a.Protocol), string(b.Protocol))
	})
	return out
}

// parallelServices is the number of Services from which
// [BuildServicePorts] builds their ports on every core (a variable for
// tests).
var parallelServices = 2048

// buildParts returns the service ports build makes of svcs, in their
// order: for many Services, build runs on parts of them on every core
// (it reads what is shared and writes only what it makes).
func buildParts(svcs []*kube.Service, build func([]*kube.Service) []*ServicePort) []*ServicePort {
	workers := runtime.GOMAXPROCS(0)
	if workers < 2 || len(svcs) < parallelServices {
		return build(svcs)
	}
	j := newPartsJob(svcs, build)
	g := fault.Group{Name: "model.ports"}
	for range min(workers, len(j.parts)) {
		g.Go(func() error {
			j.work()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		panic(err) // a worker's panic, raised again here
	}
	return j.result()
}

// partSize is the number of Services of a part: more parts than
// workers, taken in turn, so that a slow part does not keep the others
// waiting.
const partSize = 512

// A partsJob builds the service ports of the Services part by part, each
// taken by the next goroutine that works on the job.
type partsJob struct {
	svcs  []*kube.Service
	build func([]*kube.Service) []*ServicePort
	parts [][]*ServicePort
	next  atomic.Int64
	left  sync.WaitGroup
}

func newPartsJob(svcs []*kube.Service, build func([]*kube.Service) []*ServicePort) *partsJob {
	j := &partsJob{svcs: svcs, build: build, parts: make([][]*ServicePort, (len(svcs)+partSize-1)/partSize)}
	j.left.Add(len(j.parts))
	return j
}

// work builds parts until none is left to take.
func (j *partsJob) work() {
	for {
		i := int(j.next.Add(1) - 1)
		if i >= len(j.parts) {
			return
		}
		func() {
			defer j.left.Done() // a panic is the worker's to raise
			j.parts[i] = j.build(j.svcs[i*partSize : min((i+1)*partSize, len(j.svcs))])
		}()
	}
}

// result waits for every part and returns their ports in order.
func (j *partsJob) result() []*ServicePort {
	j.left.Wait()
	n := 0
	for _, p := range j.parts {
		n += len(p)
	}
	if n == 0 {
		return nil
	}
	out := make([]*ServicePort, 0, n)
	for _, p := range j.parts {
		out = append(out, p...)
	}
	return out
}

func servicePorts(svc *kube.Service, opts BuildOptions, stats *buildStats) []*ServicePort {
	spec := &svc.Spec
	skip := ""
	switch {
	case svc.Labels[LabelServiceProxyName] != "":
		skip = SkipProxyName
	case spec.Type == corev1.ServiceTypeExternalName:
		skip = SkipExternalName
	case spec.ClusterIP == corev1.ClusterIPNone:
		skip = SkipHeadless
	case spec.ClusterIP == "":
		skip = SkipNoClusterIP
	}
	var clusterIPs []netip.Addr
	ips := spec.ClusterIPs
	if len(ips) == 0 && spec.ClusterIP != "" {
		ips = []string{spec.ClusterIP}
	}
	seen := map[Family]bool{}
	for _, s := range ips {
		if a, err := netip.ParseAddr(strings.TrimSpace(s)); err == nil && !seen[FamilyOf(a)] {
			seen[FamilyOf(a)] = true
			clusterIPs = append(clusterIPs, a.Unmap())
		}
	}
	var externalIPs []netip.Addr
	for _, s := range spec.ExternalIPs {
		if a, err := netip.ParseAddr(strings.TrimSpace(s)); err == nil {
			externalIPs = append(externalIPs, a.Unmap())
		}
	}
	var vips, proxyIPs []netip.Addr
	if spec.Type == corev1.ServiceTypeLoadBalancer {
		for _, ing := range svc.Status.LoadBalancer.Ingress {
			a, err := netip.ParseAddr(ing.IP)
			if err != nil {
				continue
			}
			if stats != nil && ing.IPMode != nil && *ing.IPMode == corev1.LoadBalancerIPModeProxy {
				stats.proxyIPMode.Store(true)
			}
			if opts.HonourIPMode && ing.IPMode != nil && *ing.IPMode == corev1.LoadBalancerIPModeProxy {
				proxyIPs = append(proxyIPs, a.Unmap())
				continue
			}
			vips = append(vips, a.Unmap())
		}
	}
	var ranges []netip.Prefix
	if spec.Type == corev1.ServiceTypeLoadBalancer {
		for _, s := range spec.LoadBalancerSourceRanges {
			if p, err := netip.ParsePrefix(strings.TrimSpace(s)); err == nil {
				ranges = append(ranges, p.Masked())
			}
		}
	}
	externallyAccessible := spec.Type == corev1.ServiceTypeNodePort || spec.Type == corev1.ServiceTypeLoadBalancer || len(externalIPs) > 0
	extLocal := externallyAccessible && spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	intLocal := spec.InternalTrafficPolicy != nil && *spec.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyLocal
	var hc int32
	if spec.Type == corev1.ServiceTypeLoadBalancer && extLocal {
		hc = spec.HealthCheckNodePort
	}
	affinity := spec.SessionAffinity == corev1.ServiceAffinityClientIP
	timeout := int32(corev1.DefaultClientIPServiceAffinitySeconds)
	if c := spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
		timeout = *c.ClientIP.TimeoutSeconds
	}
	var out []*ServicePort
	for _, p := range spec.Ports {
		proto := p.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		sp := &ServicePort{
			Name:                ServicePortName{Namespace: svc.Namespace, Name: svc.Name, Port: p.Name},
			Service:             svc,
			Protocol:            proto,
			Port:                p.Port,
			ClusterIPs:          clusterIPs,
			ExternalIPs:         externalIPs,
			LoadBalancerVIPs:    vips,
			ProxyIPs:            proxyIPs,
			SourceRanges:        ranges,
			ExternalPolicyLocal: extLocal,
			InternalPolicyLocal: intLocal,
			HealthCheckNodePort: hc,
			AffinityClientIP:    affinity,
			AffinityTimeout:     timeout,
			Skip:                skip,
		}
		if spec.Type == corev1.ServiceTypeNodePort || spec.Type == corev1.ServiceTypeLoadBalancer {
			sp.NodePort = p.NodePort
		}
		if !affinity {
			sp.AffinityTimeout = 0
		}
		out = append(out, sp)
	}
	return out
}

// endpointsFromSlices mirrors pkg/proxy/endpointslicecache.go: one
// endpoint per slice endpoint whose slice port matches the service port by
// name and protocol; only addresses[0] is used; duplicates are merged, a
// local copy winning.
func endpointsFromSlices(sp *ServicePort, slices []*kube.EndpointSlice, node string, stats *buildStats) []*Endpoint {
	// The endpoints are counted first, to be made together.
	n := 0
	for _, s := range slices {
		if !sliceOfIPs(s) {
			continue
		}
		for _, port := range s.Ports {
			if portMatches(sp, port) {
				n += len(s.Endpoints)
			}
		}
	}
	if n == 0 {
		return []*Endpoint{}
	}
	block := make([]Endpoint, 0, n)
	out := make([]*Endpoint, 0, n)
	for _, s := range slices {
		if !sliceOfIPs(s) {
			continue
		}
		// The endpoints of a slice share a copy of its position (not the
		// slice's own field: the slice may be released), one for each of
		// its ports, which knows the line of each endpoint's address.
		for _, port := range s.Ports {
			if !portMatches(sp, port) {
				continue
			}
			var pos *endpointSource
			start := len(block)
			for i := range s.Endpoints {
				se := &s.Endpoints[i]
				if len(se.Addresses) == 0 {
					continue
				}
				ip, err := netip.ParseAddr(se.Addresses[0])
				if err != nil {
					continue
				}
				block = append(block, Endpoint{
					IP:          ip.Unmap(),
					Port:        *port.Port,
					Ready:       se.Conditions.Ready == nil || *se.Conditions.Ready,
					Serving:     se.Conditions.Serving == nil || *se.Conditions.Serving,
					Terminating: se.Conditions.Terminating != nil && *se.Conditions.Terminating,
				})
				e := &block[len(block)-1]
				if pos == nil {
					pos = &endpointSource{pos: parsers.Pos{File: s.Pos.File, Line: s.Pos.Line, Path: s.Pos.Path}}
				}
				e.src = pos
				var line int32
				if i < len(s.AddressLines) {
					line = s.AddressLines[i]
				}
				if line > 0 {
					if pos.lines == nil {
						pos.lines = make([]int32, 0, len(s.Endpoints))
					}
					for len(pos.lines) < len(block)-1-start {
						pos.lines = append(pos.lines, 0)
					}
					pos.lines = append(pos.lines, line)
				}
				if se.NodeName != nil {
					e.NodeName = *se.NodeName
					e.Local = node != "" && e.NodeName == node
				}
				if se.Zone != nil {
					e.Zone = *se.Zone
				}
				if h := se.Hints; h != nil && (len(h.ForZones) > 0 || len(h.ForNodes) > 0) {
					hints := &endpointHints{}
					for _, z := range h.ForZones {
						hints.zones = append(hints.zones, z.Name)
					}
					for _, n := range h.ForNodes {
						hints.nodes = append(hints.nodes, n.Name)
					}
					e.setHints(hints)
					if line > 0 {
						e.src.run, e.src.lines = block[len(block)-1:len(block):len(block)], []int32{line}
					}
				}
				_ = e.String() // its address, for the merge
				out = append(out, e)
			}
			if pos != nil && pos.lines != nil {
				pos.run = block[start:len(block):len(block)]
			}
		}
	}
	merged := mergeEndpoints(out)
	if stats != nil && len(merged) < len(out) {
		stats.merged.Store(true)
	}
	return merged
}

// sliceOfIPs reports whether an EndpointSlice lists IP addresses (not
// FQDNs, which kube-proxy ignores).
func sliceOfIPs(s *kube.EndpointSlice) bool {
	return s.AddressType == discoveryv1.AddressTypeIPv4 || s.AddressType == discoveryv1.AddressTypeIPv6
}

// portMatches reports whether an EndpointSlice's port is the service
// port's: the same name and protocol, and a port number.
func portMatches(sp *ServicePort, port discoveryv1.EndpointPort) bool {
	if port.Port == nil {
		return false
	}
	name := ""
	if port.Name != nil {
		name = *port.Name
	}
	proto := corev1.ProtocolTCP
	if port.Protocol != nil {
		proto = *port.Protocol
	}
	return name == sp.Name.Port && proto == sp.Protocol
}

// mergeEndpoints sorts endpoints by address and merges those of one
// address into the first of them that is local, or else the first.
func mergeEndpoints(eps []*Endpoint) []*Endpoint {
	if len(eps) == 0 {
		return []*Endpoint{}
	}
	slices.SortStableFunc(eps, func(a, b *Endpoint) int { return strings.Compare(a.String(), b.String()) })
	out := eps[:1]
	for _, e := range eps[1:] {
		last := &out[len(out)-1]
		switch {
		case e.String() != (*last).String():
			out = append(out, e)
		case e.Local && !(*last).Local:
			*last = e
		}
	}
	if cap(out) == len(out) {
		return out
	}
	return append(make([]*Endpoint, 0, len(out)), out...) // held to the end: no room to spare
}

// endpointsFromLegacy reads a core/v1 Endpoints object, for exports that
// have no EndpointSlices: addresses are ready and serving, notReadyAddresses
// neither.
func endpointsFromLegacy(sp *ServicePort, eps *kube.Endpoints, node string) []*Endpoint {
	byAddr := map[string]*Endpoint{}
	pos := &endpointSource{pos: parsers.Pos{File: eps.Pos.File, Line: eps.Pos.Line, Path: eps.Pos.Path}}
	for _, ss := range eps.Subsets {
		for _, port := range ss.Ports {
			proto := port.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			if port.Name != sp.Name.Port || proto != sp.Protocol {
				continue
			}
			add := func(addrs []corev1.EndpointAddress, ready bool) {
				for _, a := range addrs {
					ip, err := netip.ParseAddr(a.IP)
					if err != nil {
						continue
					}
					e := &Endpoint{IP: ip.Unmap(), Port: port.Port, Ready: ready, Serving: ready, src: pos}
					if a.NodeName != nil {
						e.NodeName = *a.NodeName
						e.Local = node != "" && e.NodeName == node
					}
					if _, ok := byAddr[e.String()]; !ok {
						byAddr[e.String()] = e
					}
				}
			}
			add(ss.Addresses, true)
			add(ss.NotReadyAddresses, false)
		}
	}
	out := make([]*Endpoint, 0, len(byAddr))
	for _, e := range byAddr {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
