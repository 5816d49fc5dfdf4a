package model

import (
	"net/netip"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/kube"
)

// Family is an IP family, with Kubernetes' spelling.
type Family = corev1.IPFamily

// IP families.
const (
	IPv4 = corev1.IPv4Protocol
	IPv6 = corev1.IPv6Protocol
)

// FamilyOf returns the family of an address.
func FamilyOf(a netip.Addr) Family {
	if a.Is4() || a.Is4In6() {
		return IPv4
	}
	return IPv6
}

// A ServicePortName identifies a service port the way kube-proxy does:
// "namespace/name:port", or "namespace/name" for an unnamed port.
type ServicePortName struct {
	Namespace, Name, Port string
}

// String returns kube-proxy's form of the name (pkg/proxy/types.go).
func (n ServicePortName) String() string {
	s := n.Namespace + "/" + n.Name
	if n.Port != "" {
		s += ":" + n.Port
	}
	return s
}

// Service returns "namespace/name".
func (n ServicePortName) Service() string { return n.Namespace + "/" + n.Name }

// ParseServicePortName parses "ns/name[:port]".
func ParseServicePortName(s string) (ServicePortName, bool) {
	ns, rest, ok := strings.Cut(s, "/")
	if !ok || ns == "" || rest == "" {
		return ServicePortName{}, false
	}
	name, port, _ := strings.Cut(rest, ":")
	if name == "" {
		return ServicePortName{}, false
	}
	return ServicePortName{Namespace: ns, Name: name, Port: port}, true
}

// Skip reasons: why kube-proxy programs nothing for a Service.
const (
	SkipHeadless     = "headless Service (clusterIP None)"
	SkipNoClusterIP  = "Service without a cluster IP"
	SkipExternalName = "ExternalName Service"
	SkipProxyName    = "Service handled by another proxy (label service.kubernetes.io/service-proxy-name)"
)

// A ServicePort is one port of one Service, with everything kube-proxy
// derives from the Service for it (mirrors pkg/proxy/serviceport.go and
// service.go of kube-proxy v1.37).
type ServicePort struct {
	Name     ServicePortName
	Service  *kube.Service
	Protocol corev1.Protocol
	Port     int32
	NodePort int32
	// ClusterIPs holds the valid cluster IPs, at most one per family.
	ClusterIPs []netip.Addr
	// ExternalIPs holds the valid spec.externalIPs.
	ExternalIPs []netip.Addr
	// LoadBalancerVIPs holds the ingress IPs kube-proxy programs (ipMode
	// unset or VIP); ProxyIPs those it ignores (ipMode Proxy).
	LoadBalancerVIPs, ProxyIPs []netip.Addr
	// SourceRanges holds the valid loadBalancerSourceRanges.
	SourceRanges        []netip.Prefix
	ExternalPolicyLocal bool
	InternalPolicyLocal bool
	HealthCheckNodePort int32
	// AffinityClientIP is set for sessionAffinity ClientIP, with its timeout.
	AffinityClientIP bool
	AffinityTimeout  int32
	// Skip, when not empty, says why kube-proxy ignores this Service.
	Skip string
	// Endpoints of this port from every EndpointSlice of the Service, both
	// families, de-duplicated and sorted by their string form.
	Endpoints []*Endpoint
	// EndpointSource says where the endpoints came from: "EndpointSlice",
	// "Endpoints" (legacy objects), or "" when the export had none.
	EndpointSource string
	// EndpointsTruncated is set when the endpoints came from a legacy
	// Endpoints object that the endpoints controller cut at its capacity
	// (annotation endpoints.kubernetes.io/over-capacity: truncated).
	EndpointsTruncated bool
	// EndpointsUnknown is set when the exports hold endpoint objects but
	// none of the Service and none of its namespace, and not those of the
	// whole cluster (the EndpointSlice or Endpoints object of
	// default/kubernetes, which every cluster has): the export of the
	// endpoints was of other namespaces, so it does not tell whether the
	// Service has endpoints.
	EndpointsUnknown bool

	name string // Name.String(), computed once
}

// FromLegacyEndpoints reports whether the port's endpoints were read from a
// legacy core/v1 Endpoints object. Such an object lists neither the
// terminating endpoints (unless the Service publishes not-ready
// addresses), which kube-proxy forwards to when no endpoint is ready, nor
// more than 1,000 addresses, so it cannot prove an endpoint kube-proxy
// programmed stale in those cases.
func (sp *ServicePort) FromLegacyEndpoints() bool { return sp.EndpointSource == EndpointSourceLegacy }

// Sources of a port's endpoints (ServicePort.EndpointSource).
const (
	EndpointSourceSlices = "EndpointSlice"
	EndpointSourceLegacy = "Endpoints"
)

// String returns the service port name ("ns/name:port").
func (sp *ServicePort) String() string {
	if sp.name == "" {
		sp.name = sp.Name.String()
	}
	return sp.name
}

// Pos returns the position of the Service object.
func (sp *ServicePort) Pos() parsers.Pos {
	if sp.Service == nil {
		return parsers.Pos{}
	}
	return sp.Service.Pos
}

// ProtoLower returns the protocol in lower case ("tcp"), as rules spell it.
func (sp *ServicePort) ProtoLower() string {
	switch sp.Protocol { // without allocating: the checks ask for every port, often
	case corev1.ProtocolTCP:
		return "tcp"
	case corev1.ProtocolUDP:
		return "udp"
	case corev1.ProtocolSCTP:
		return "sctp"
	}
	return strings.ToLower(string(sp.Protocol))
}

// ClusterIP returns the cluster IP of the given family.
func (sp *ServicePort) ClusterIP(f Family) (netip.Addr, bool) {
	for _, a := range sp.ClusterIPs {
		if FamilyOf(a) == f {
			return a, true
		}
	}
	return netip.Addr{}, false
}

// ExternalIPsOf returns the external IPs of the given family.
func (sp *ServicePort) ExternalIPsOf(f Family) []netip.Addr { return filterFamily(sp.ExternalIPs, f) }

// LoadBalancerVIPsOf returns the load balancer VIPs of the given family.
func (sp *ServicePort) LoadBalancerVIPsOf(f Family) []netip.Addr {
	return filterFamily(sp.LoadBalancerVIPs, f)
}

// SourceRangesOf returns the source ranges of the given family.
func (sp *ServicePort) SourceRangesOf(f Family) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range sp.SourceRanges {
		if FamilyOf(p.Addr()) == f {
			out = append(out, p)
		}
	}
	return out
}

// ExternallyAccessible reports whether the port can be reached from
// outside the cluster (a NodePort, an external IP or a load balancer VIP)
// for the given family.
func (sp *ServicePort) ExternallyAccessible(f Family) bool {
	return sp.NodePort != 0 || len(sp.ExternalIPsOf(f)) > 0 || len(sp.LoadBalancerVIPsOf(f)) > 0
}

// UsesClusterEndpoints reports whether some traffic to the port uses the
// Cluster traffic policy.
func (sp *ServicePort) UsesClusterEndpoints(f Family) bool {
	return !sp.InternalPolicyLocal || sp.ExternallyAccessible(f)
}

// UsesLocalEndpoints reports whether some traffic to the port uses the
// Local traffic policy.
func (sp *ServicePort) UsesLocalEndpoints(f Family) bool {
	return sp.InternalPolicyLocal || sp.ExternalPolicyLocal && sp.ExternallyAccessible(f)
}

func filterFamily(in []netip.Addr, f Family) []netip.Addr {
	var out []netip.Addr
	for _, a := range in {
		if FamilyOf(a) == f {
			out = append(out, a)
		}
	}
	return out
}

// An Endpoint is one address:port of a service port, with the conditions
// kube-proxy reads (pkg/proxy/endpointslicecache.go).
//
// A large node holds one per endpoint of every service port, so it is
// kept small: what few endpoints have (topology hints) and what the
// endpoints of one object share (its position) are behind pointers.
type Endpoint struct {
	IP   netip.Addr
	Port int32
	// Ready is "ready nil or true", Serving "serving nil or true",
	// Terminating "terminating set and true".
	Ready, Serving, Terminating bool
	// Local reports whether the endpoint runs on the snapshot's node.
	Local    bool
	NodeName string
	Zone     string

	// src is where the endpoint was read from and its hints: the
	// endpoints of a slice without hints share one.
	src *endpointSource
	str string // String(), computed once
}

// endpointSource is the position of the object an endpoint was read from
// and the endpoint's topology hints (nil when it has none).
type endpointSource struct {
	pos   parsers.Pos
	hints *endpointHints
	// run holds the endpoints read with this source, when the lines of
	// their addresses are known; lines gives the line of each one's
	// address (0: unknown).
	run   []Endpoint
	lines []int32
}

// endpointHints are the topology hints of an endpoint.
type endpointHints struct{ zones, nodes []string }

// ZoneHints returns the zones the endpoint's hints name (hints.forZones).
func (e *Endpoint) ZoneHints() []string {
	if e.src == nil || e.src.hints == nil {
		return nil
	}
	return e.src.hints.zones
}

// NodeHints returns the nodes the endpoint's hints name (hints.forNodes).
func (e *Endpoint) NodeHints() []string {
	if e.src == nil || e.src.hints == nil {
		return nil
	}
	return e.src.hints.nodes
}

// setHints gives the endpoint hints h, in a source of its own.
func (e *Endpoint) setHints(h *endpointHints) {
	src := &endpointSource{hints: h}
	if e.src != nil {
		src.pos = e.src.pos
	}
	e.src = src
}

// Pos returns the position of the EndpointSlice (or Endpoints) object the
// endpoint was read from.
func (e *Endpoint) Pos() parsers.Pos {
	if e.src == nil {
		return parsers.Pos{}
	}
	return e.src.pos
}

// AddressPos returns the position of the endpoint's address in the
// EndpointSlice it was read from (a YAML export), else that of the object,
// as Pos.
func (e *Endpoint) AddressPos() parsers.Pos {
	p := e.Pos()
	if s := e.src; s != nil {
		for i := range s.run {
			if &s.run[i] == e {
				if i < len(s.lines) && s.lines[i] > 0 {
					p.Line = int(s.lines[i])
				}
				break
			}
		}
	}
	return p
}

// String returns the endpoint as kube-proxy writes it: "IP:port", with
// brackets around IPv6 addresses.
func (e *Endpoint) String() string {
	if e.str == "" {
		e.str = JoinHostPort(e.IP, e.Port)
	}
	return e.str
}

// Family returns the IP family of the endpoint.
func (e *Endpoint) Family() Family { return FamilyOf(e.IP) }

// JoinHostPort formats an address and port as "IP:port" or "[IP]:port".
func JoinHostPort(ip netip.Addr, port int32) string {
	if !ip.IsValid() {
		return ip.String() + ":" + strconv.Itoa(int(port))
	}
	// Written in a buffer of the stack: one allocation, the string's.
	var buf [64]byte
	b := buf[:0]
	if ip.Is6() && !ip.Is4In6() {
		b = append(ip.AppendTo(append(b, '[')), ']')
	} else {
		b = ip.AppendTo(b)
	}
	return string(strconv.AppendInt(append(b, ':'), int64(port), 10))
}

// Category is the result of [Categorize]: the endpoints kube-proxy uses
// for one service port and one family.
type Category struct {
	// Cluster holds the usable endpoints of the Cluster traffic policy (nil
	// when the port never uses it); Local those of the Local policy.
	Cluster, Local []*Endpoint
	// AllReachable is the union of both, sorted.
	AllReachable []*Endpoint
	// HasAny reports whether a usable endpoint exists anywhere.
	HasAny bool
	// Topology is the topology mode that filtered Cluster ("" for none,
	// "PreferSameZone", "PreferSameNode").
	Topology string
}

// Has reports whether ep (by its string form) is in eps.
func Has(eps []*Endpoint, s string) bool {
	for _, e := range eps {
		if e.String() == s {
			return true
		}
	}
	return false
}

// Rules that decide how endpoints are categorised, by kube-proxy version.
type CategorizeOptions struct {
	// NodeName and Zone are the node's name and topology zone label.
	NodeName, Zone string
	// TerminatingFallback enables the serving-terminating fallback for
	// Cluster (ProxyTerminatingEndpoints, on by default since 1.26) and
	// LocalTerminatingFallback for Local (since 1.22 behind the gate).
	TerminatingFallback, LocalTerminatingFallback bool
	// ZoneHints reports that zone hints are read from EndpointSlices at all
	// (the TopologyAwareHints gate, 1.21-1.32); NodeHints enables
	// PreferSameNode hints (1.33 behind a gate, 1.34+).
	ZoneHints, NodeHints bool
	// TopologyAnnotation says which Services may use hints: those annotated
	// service.kubernetes.io/topology-aware-hints "Auto" or "auto"
	// ([AnnotationAuto], before 1.27), those with any value other than
	// "disabled" in that annotation or else in topology-mode
	// ([AnnotationEnabled], 1.27-1.30), or every Service
	// ([AnnotationIgnored]: 1.30 with ServiceTrafficDistribution, 1.31+).
	TopologyAnnotation TopologyAnnotationRule
}

// TopologyAnnotationRule is how kube-proxy reads a Service's topology
// annotation before it uses the endpoints' hints.
type TopologyAnnotationRule uint8

// Topology annotation rules, by release.
const (
	AnnotationIgnored TopologyAnnotationRule = iota
	AnnotationAuto
	AnnotationEnabled
)

// Categorize selects the endpoints of sp for family f the way kube-proxy
// does. It mirrors pkg/proxy/topology.go CategorizeEndpoints (v1.37), with
// the version switches of opts for older releases.
func Categorize(sp *ServicePort, f Family, opts CategorizeOptions) Category {
	var eps []*Endpoint
	for _, e := range sp.Endpoints {
		if e.Family() == f {
			eps = append(eps, e)
		}
	}
	var c Category
	if len(eps) == 0 {
		return c
	}
	useTerminating := false
	if sp.UsesClusterEndpoints(f) {
		c.Topology = topologyMode(sp, eps, opts)
		c.Cluster = filter(eps, func(e *Endpoint) bool { return e.Ready && availableForTopology(e, c.Topology, opts) })
		if len(c.Cluster) == 0 && opts.TerminatingFallback {
			c.Cluster = filter(eps, func(e *Endpoint) bool { return e.Serving && e.Terminating })
		}
		if len(c.Cluster) > 0 {
			c.HasAny = true
		}
	}
	if !sp.UsesLocalEndpoints(f) {
		c.AllReachable = c.Cluster
		return c
	}
	var localReady, localServingTerm bool
	for _, e := range eps {
		if e.Ready {
			c.HasAny = true
			localReady = localReady || e.Local
		} else if e.Serving && e.Terminating && (opts.TerminatingFallback || opts.LocalTerminatingFallback) {
			c.HasAny = true
			localServingTerm = localServingTerm || e.Local
		}
	}
	switch {
	case localReady:
		c.Local = filter(eps, func(e *Endpoint) bool { return e.Local && e.Ready })
	case localServingTerm:
		useTerminating = true
		c.Local = filter(eps, func(e *Endpoint) bool { return e.Local && e.Serving && e.Terminating })
	}
	if !sp.UsesClusterEndpoints(f) {
		c.AllReachable = c.Local
		return c
	}
	if c.Topology == "" && !useTerminating {
		c.AllReachable = c.Cluster
		return c
	}
	seen := map[string]*Endpoint{}
	for _, e := range c.Cluster {
		seen[e.String()] = e
	}
	for _, e := range c.Local {
		seen[e.String()] = e
	}
	for _, e := range seen {
		c.AllReachable = append(c.AllReachable, e)
	}
	sort.Slice(c.AllReachable, func(i, j int) bool { return c.AllReachable[i].String() < c.AllReachable[j].String() })
	return c
}

func filter(eps []*Endpoint, keep func(*Endpoint) bool) []*Endpoint {
	var out []*Endpoint
	for _, e := range eps {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

func topologyMode(sp *ServicePort, eps []*Endpoint, opts CategorizeOptions) string {
	if !topologyAnnotated(sp, opts.TopologyAnnotation) {
		return ""
	}
	hasReady, forNode, allNode, forZone, allZone := false, false, true, false, true
	for _, e := range eps {
		if !e.Ready {
			continue
		}
		hasReady = true
		if len(e.NodeHints()) == 0 {
			allNode = false
		} else if contains(e.NodeHints(), opts.NodeName) {
			forNode = true
		}
		if len(e.ZoneHints()) == 0 || !opts.ZoneHints {
			allZone = false
		} else if contains(e.ZoneHints(), opts.Zone) {
			forZone = true
		}
	}
	if !hasReady {
		return ""
	}
	if opts.NodeHints && allNode && forNode {
		return corev1.ServiceTrafficDistributionPreferSameNode
	}
	if allZone && forZone {
		return corev1.ServiceTrafficDistributionPreferSameZone
	}
	return ""
}

func topologyAnnotated(sp *ServicePort, rule TopologyAnnotationRule) bool {
	if rule == AnnotationIgnored {
		return true
	}
	if sp.Service == nil {
		return false
	}
	a := sp.Service.Annotations
	if rule == AnnotationAuto {
		v := a[corev1.DeprecatedAnnotationTopologyAwareHints]
		return v == "Auto" || v == "auto"
	}
	// HintsAnnotation (1.27+): topology-aware-hints when the key is there,
	// even empty, else topology-mode.
	v, ok := a[corev1.DeprecatedAnnotationTopologyAwareHints]
	if !ok {
		v = a[corev1.AnnotationTopologyMode]
	}
	return v != "" && v != "disabled" && v != "Disabled"
}

func availableForTopology(e *Endpoint, mode string, opts CategorizeOptions) bool {
	switch mode {
	case "":
		return true
	case corev1.ServiceTrafficDistributionPreferSameNode:
		return contains(e.NodeHints(), opts.NodeName)
	case corev1.ServiceTrafficDistributionPreferSameZone:
		return contains(e.ZoneHints(), opts.Zone)
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
