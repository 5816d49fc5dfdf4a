// Package kube reads kubectl exports — YAML or JSON, a v1 List,
// multi-document YAML or single objects — into typed Kubernetes API objects
// (k8s.io/api), each with the position where it starts in its file.
//
// It recognises Service, EndpointSlice (discovery.k8s.io/v1 and v1beta1),
// Endpoints, ConfigMap, Node, Pod, DaemonSet and ServiceCIDR. A KubeProxyConfiguration
// document found among them is kept as raw text for the kpconfig parser.
// Other kinds are listed as ignored, never silently dropped.
//
// Large exports are split into their items with a cheap scanner and the
// items are decoded concurrently; a JSON export read with [ParseReader] is
// split as it is read. Services and EndpointSlices are decoded by a
// decoder of their own, other kinds by goccy/go-json, and anything either
// refuses by encoding/json or sigs.k8s.io/yaml, whose results and errors
// are the reference.
package kube

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	discoveryv1beta1 "k8s.io/api/discovery/v1beta1"
	networkingv1 "k8s.io/api/networking/v1"
	networkingv1beta1 "k8s.io/api/networking/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/proxyscan/proxyscan/internal/fault"
	"github.com/proxyscan/proxyscan/parsers"
)

// Service is a Service and where it was read.
type Service struct {
	*corev1.Service
	Pos parsers.Pos
	// Ports holds the line of each spec.ports item (YAML exports only).
	Ports []LineText
}

// LineText is a line of an input and its text (trimmed).
type LineText struct {
	Line int
	Text string
	// Name and Port identify a spec.ports item.
	Name string
	Port int32
}

// PortLine returns the line of the spec.ports item with this name and
// port, when known.
func (s *Service) PortLine(name string, port int32) (LineText, bool) {
	for _, l := range s.Ports {
		if l.Name == name && (l.Port == port || l.Port == 0) {
			return l, true
		}
	}
	return LineText{}, false
}

// EndpointSlice is an EndpointSlice (converted to discovery/v1 when it was
// exported as v1beta1) and where it was read.
type EndpointSlice struct {
	*discoveryv1.EndpointSlice
	Pos parsers.Pos
	// AddressLines gives, for each endpoint of the slice, the line of its
	// first address (0 when not found); nil for a slice of compact JSON,
	// written on one line, where it is the object's line.
	AddressLines []int32
}

// Endpoints is a legacy core/v1 Endpoints object and where it was read.
type Endpoints struct {
	*corev1.Endpoints
	Pos parsers.Pos
}

// ConfigMap is a ConfigMap, where it was read, and for every data key the
// line where its value starts (0 when unknown, as in JSON).
type ConfigMap struct {
	*corev1.ConfigMap
	Pos       parsers.Pos
	DataLines map[string]int
	// Described is set when it was read from kubectl describe output,
	// which shows its data but is no copy kubectl apply restores.
	Described bool
}

// Node is a Node and where it was read.
type Node struct {
	*corev1.Node
	Pos parsers.Pos
	// PodCIDRLine is the line of its spec.podCIDRs key (else of
	// spec.podCIDR), 0 when it has neither or it is not known.
	PodCIDRLine int
}

// PodCIDRsPos returns the position of the Node's podCIDRs (its
// spec.podCIDRs, else spec.podCIDR), else that of the object.
func (n *Node) PodCIDRsPos() parsers.Pos {
	p := n.Pos
	if n.PodCIDRLine > 0 {
		p.Line = n.PodCIDRLine
	}
	return p
}

// Pod is a Pod and where it was read.
type Pod struct {
	*corev1.Pod
	Pos parsers.Pos
}

// DaemonSet is a DaemonSet and where it was read.
type DaemonSet struct {
	*appsv1.DaemonSet
	Pos parsers.Pos
}

// ServiceCIDR is a ServiceCIDR (networking.k8s.io/v1, or v1beta1 as 1.31
// and 1.32 serve it) and where it was read: the ranges cluster IPs are
// allocated from, which kube-proxy's nftables mode guards.
type ServiceCIDR struct {
	*networkingv1.ServiceCIDR
	Pos parsers.Pos
}

// RawDocument is a document kept as text for another parser (a
// KubeProxyConfiguration inside a multi-document export).
type RawDocument struct {
	Kind string
	Data []byte
	Pos  parsers.Pos
}

// Ignored is an object of a kind proxyscan does not use.
type Ignored struct {
	APIVersion, Kind, Namespace, Name string
	Pos                               parsers.Pos
}

// Objects is everything read from one or more exports.
type Objects struct {
	Services       []*Service
	EndpointSlices []*EndpointSlice
	Endpoints      []*Endpoints
	ConfigMaps     []*ConfigMap
	Nodes          []*Node
	Pods           []*Pod
	DaemonSets     []*DaemonSet
	ServiceCIDRs   []*ServiceCIDR
	Raw            []*RawDocument
	Ignored        []*Ignored
	// Released counts the EndpointSlices and Endpoints objects that were
	// read and then let go of by [Objects.ReleaseEndpoints].
	Released int
	// Partial, for the objects of one YAML export, says why its last
	// object may not be whole: the export looks cut short inside it ("cut
	// short after line N: ..."); "" when it does not. [Objects.Merge]
	// does not carry it.
	Partial string
	// SkippedServices and SkippedSlices count the Services and the
	// EndpointSlices that [Options.Only] left undecoded.
	SkippedServices, SkippedSlices int
}

// EndpointObjects returns how many EndpointSlices and legacy Endpoints
// objects were read, released ones included.
func (o *Objects) EndpointObjects() int {
	return len(o.EndpointSlices) + len(o.Endpoints) + o.Released
}

// ReleaseEndpoints lets go of the EndpointSlices and Endpoints objects,
// counting them, for callers that have read what they need of them (the
// endpoints of every service port) and hold large exports.
func (o *Objects) ReleaseEndpoints() {
	o.Released += len(o.EndpointSlices) + len(o.Endpoints)
	o.EndpointSlices, o.Endpoints = nil, nil
}

// Len returns the number of objects, ignored ones included.
func (o *Objects) Len() int {
	return len(o.Services) + o.EndpointObjects() + len(o.ConfigMaps) +
		len(o.Nodes) + len(o.Pods) + len(o.DaemonSets) + len(o.ServiceCIDRs) + len(o.Raw) + len(o.Ignored)
}

// SetFile sets the file of every object's position to name (for objects
// read under another name).
func (o *Objects) SetFile(name string) {
	for _, x := range o.Services {
		x.Pos.File = name
	}
	for _, x := range o.EndpointSlices {
		x.Pos.File = name
	}
	for _, x := range o.Endpoints {
		x.Pos.File = name
	}
	for _, x := range o.ConfigMaps {
		x.Pos.File = name
	}
	for _, x := range o.Nodes {
		x.Pos.File = name
	}
	for _, x := range o.Pods {
		x.Pos.File = name
	}
	for _, x := range o.DaemonSets {
		x.Pos.File = name
	}
	for _, x := range o.ServiceCIDRs {
		x.Pos.File = name
	}
	for _, x := range o.Raw {
		x.Pos.File = name
	}
	for _, x := range o.Ignored {
		x.Pos.File = name
	}
}

// Merge appends the objects of other to o.
func (o *Objects) Merge(other *Objects) {
	o.Services = append(o.Services, other.Services...)
	o.EndpointSlices = append(o.EndpointSlices, other.EndpointSlices...)
	o.Endpoints = append(o.Endpoints, other.Endpoints...)
	o.ConfigMaps = append(o.ConfigMaps, other.ConfigMaps...)
	o.Nodes = append(o.Nodes, other.Nodes...)
	o.Pods = append(o.Pods, other.Pods...)
	o.DaemonSets = append(o.DaemonSets, other.DaemonSets...)
	o.ServiceCIDRs = append(o.ServiceCIDRs, other.ServiceCIDRs...)
	o.Raw = append(o.Raw, other.Raw...)
	o.Ignored = append(o.Ignored, other.Ignored...)
	o.Released += other.Released
	o.SkippedServices += other.SkippedServices
	o.SkippedSlices += other.SkippedSlices
}

// chunk is one object's text and where it starts.
type chunk struct {
	data       []byte
	line       int // line of the object's first line in the file
	json       bool
	apiVersion string
	kind       string
	// lineMap maps a line of data (1-based) to a line of the file when data
	// was de-indented from a List (nil: line = chunk line + n - 1).
	configLines map[string]int
	// rawItem marks the text of a YAML List item as it is in the List,
	// its dash in column itemIndent: materialize de-indents it.
	rawItem    bool
	itemIndent int
	// blk, for an object of a streamed export, holds data: it is
	// released once the object is decoded (nothing decoded keeps data).
	blk *block
}

// materialize de-indents the text of a YAML List item into buf (or a new
// buffer when buf is too small) and reads its kind, so that it is a
// document of its own.
func (c *chunk) materialize(name string, buf []byte) *parsers.Error {
	if !c.rawItem {
		return nil
	}
	item, err := listItem(name, c.data, lineIter{data: c.data, stop: len(c.data), num: c.line}, c.itemIndent, buf)
	if err != nil {
		return err
	}
	*c = item
	return nil
}

// Options tune [ParseWith].
type Options struct {
	// Reference decodes every object with the reference decoders only
	// (encoding/json, sigs.k8s.io/yaml), without the fast path (a
	// converter of kubectl-shaped YAML to JSON, a direct decoder of
	// Services and EndpointSlices, and goccy/go-json). Both give the same
	// objects; the reference path is there to compare with.
	Reference bool
	// Lean leaves out of the objects, as each is decoded, what a reader of
	// ports and endpoints never reads: the Services' selectors, the
	// EndpointSlices' annotations and owner references, their endpoints'
	// targetRef, hostname and deprecatedTopology, and every object's uid
	// (but that of Service default/kubernetes, which names the cluster)
	// and creationTimestamp. A large export holds tens of thousands of
	// each. The resourceVersion is kept: it tells which of two copies of
	// an object, in two exports, is the newer.
	Lean bool
	// Only, when set, decodes of the Services and EndpointSlices only
	// those that may concern one destination (see [Only]); the objects
	// hold no other, and count them in Skipped.
	Only *Only
}

// Parse reads the kubectl export in data, read from the file called name.
// Errors name the file and line of the object that failed.
func Parse(name string, data []byte) (*Objects, error) {
	return ParseWith(name, data, Options{})
}

// ParseWith is [Parse] with options.
//
// The export is split into objects by one goroutine while others decode
// them, so that each object's text is dropped as soon as it is decoded.
func ParseWith(name string, data []byte, opts Options) (*Objects, error) {
	if IsDescribe(data) {
		return parseDescribe(name, data)
	}
	if IsJSON(data) {
		return parse(name, func(emit func(chunk)) error { return splitJSON(name, data, emit) }, opts)
	}
	return parseYAML(name, data, nil, opts)
}

// parseYAML parses a YAML export whose first bytes are head and whose rest
// r reads (nil: head is all of it), noting in the objects when it looks
// cut short.
func parseYAML(name string, head []byte, r io.Reader, opts Options) (*Objects, error) {
	var cut string
	objs, err := parse(name, func(emit func(chunk)) error {
		var err error
		cut, err = splitYAMLCut(name, head, r, emit)
		return err
	}, opts)
	if objs != nil {
		objs.Partial = cut
	}
	return objs, err
}

// ParseReader is [ParseWith] reading the export from r. The export is
// split as it is read, so that only a window of its text is in memory at
// once rather than all of it (for YAML, the document or List item being
// split). An error reading r is returned as it is.
func ParseReader(name string, r io.Reader, opts Options) (*Objects, error) {
	head, rest, err := readHead(r)
	if err != nil {
		return nil, err
	}
	if mayBeDescribe(bytes.TrimLeft(head, " \t\r\n\ufeff")) {
		// Read whole: kubectl describe output is small, and whether it is
		// one is told by more than its first bytes.
		if rest != nil {
			tail, err := io.ReadAll(io.LimitReader(rest, maxDescribe))
			if err != nil {
				return nil, err
			}
			if len(tail) == maxDescribe {
				return nil, parsers.Errorf(parsers.Pos{File: name}, "kubectl describe output larger than %d bytes", maxDescribe)
			}
			head = append(head, tail...)
		}
		return ParseWith(name, head, opts)
	}
	if IsJSON(head) {
		return parse(name, func(emit func(chunk)) error { return splitJSONFrom(name, head, rest, emit) }, opts)
	}
	return parseYAML(name, head, rest, opts)
}

// readHead reads the start of an export from r, at least up to its first
// byte other than white space, to tell JSON from YAML. rest reads what
// follows (nil when head is all of it).
func readHead(r io.Reader) (head []byte, rest io.Reader, err error) {
	for {
		buf := make([]byte, len(head), len(head)+readWindow)
		copy(buf, head)
		n, err := io.ReadFull(r, buf[len(head):cap(buf)])
		head = buf[:len(head)+n]
		switch {
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			return head, nil, nil
		case err != nil:
			return nil, nil, err
		case startsExport(bytes.TrimLeft(head, " \t\r\n\ufeff")):
			return head, r, nil
		}
	}
}

// startsExport reports whether t, the start of an export after white
// space and byte order marks, has a byte of its content: not only the
// first bytes of another byte order mark.
func startsExport(t []byte) bool {
	return len(t) > 0 && !(len(t) < len("\ufeff") && bytes.HasPrefix([]byte("\ufeff"), t))
}

// parse decodes the objects that split emits, in the order it emits them,
// on every core.
func parse(name string, split func(emit func(chunk)) error, opts Options) (*Objects, error) {
	type job struct {
		i int
		c chunk
	}
	type done struct {
		i int
		r result
	}
	workers := runtime.GOMAXPROCS(0)
	jobs := make(chan job, 4*workers)
	dones := make(chan done, 4*workers)
	g := fault.Group{Name: "kube.parse"}
	for w := 0; w < workers; w++ {
		fault.GoDraining(&g, jobs, func() error {
			d := &decoder{fast: !opts.Reference, lean: opts.Lean}
			d.dir.lean = opts.Lean
			for j := range jobs {
				blk := j.c.blk // decoding a List item replaces j.c
				obj, err := d.decode(name, &j.c)
				blk.release()
				dones <- done{j.i, result{obj: obj, err: err}}
			}
			return nil
		})
	}
	var results []result
	collected := make(chan struct{})
	go func() {
		for d := range dones {
			for len(results) <= d.i {
				results = append(results, result{})
			}
			results[d.i] = d.r
		}
		close(collected)
	}()
	n, services, slices := 0, 0, 0
	err := split(func(c chunk) {
		if opts.Only != nil {
			if keep, service := opts.Only.keep(&c); !keep {
				c.blk.release()
				if service {
					services++
				} else {
					slices++
				}
				return
			}
		}
		jobs <- job{n, c}
		n++
	})
	close(jobs)
	// Each object's error is in its result; Wait's is a worker's panic.
	werr := g.Wait()
	close(dones)
	<-collected
	if werr != nil {
		return nil, werr
	}
	if err != nil {
		return nil, err
	}
	if n+services+slices == 0 {
		return nil, parsers.ErrorList{parsers.Errorf(parsers.Pos{File: name}, "no Kubernetes object in file")}
	}
	objs, err := gather(results)
	if err != nil {
		return nil, err
	}
	if opts.Only != nil {
		if err := opts.Only.err(); err != nil {
			return nil, err
		}
	}
	objs.SkippedServices, objs.SkippedSlices = services, slices
	return objs, nil
}

// checkPortProtocols refuses a Service port whose protocol is not one
// the API server admits (it validates spec.ports[].protocol as TCP, UDP or
// SCTP, and defaults an empty one to TCP): no cluster serves such a port,
// and no kube-proxy mode could program it. The error is at the port's
// line when it is known, else at the Service's.
func checkPortProtocols(svc *Service) *parsers.Error {
	for _, p := range svc.Spec.Ports {
		switch p.Protocol {
		case "", corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
			continue
		}
		pos := svc.Pos
		if l, ok := svc.PortLine(p.Name, p.Port); ok {
			pos.Line = l.Line
		}
		port := strconv.Itoa(int(p.Port))
		if p.Name != "" {
			port = p.Name + " (" + port + ")"
		}
		return parsers.Errorf(pos, "Service %s/%s: port %s: protocol %q is not TCP, UDP or SCTP", svc.Namespace, svc.Name, port, p.Protocol)
	}
	return nil
}

type result struct {
	obj any
	err *parsers.Error
}

// gather sorts decoded objects by kind, keeping their order, or returns
// every error.
func gather(results []result) (*Objects, error) {
	out := &Objects{}
	var errs parsers.ErrorList
	for _, r := range results {
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		switch o := r.obj.(type) {
		case *Service:
			out.Services = append(out.Services, o)
		case *EndpointSlice:
			out.EndpointSlices = append(out.EndpointSlices, o)
		case *Endpoints:
			out.Endpoints = append(out.Endpoints, o)
		case *ConfigMap:
			out.ConfigMaps = append(out.ConfigMaps, o)
		case *Node:
			out.Nodes = append(out.Nodes, o)
		case *Pod:
			out.Pods = append(out.Pods, o)
		case *DaemonSet:
			out.DaemonSets = append(out.DaemonSets, o)
		case *ServiceCIDR:
			out.ServiceCIDRs = append(out.ServiceCIDRs, o)
		case *RawDocument:
			out.Raw = append(out.Raw, o)
		case *Ignored:
			out.Ignored = append(out.Ignored, o)
		}
	}
	if len(errs) > 0 {
		errs.Sort()
		return nil, errs
	}
	return out, nil
}

func (d *decoder) decode(name string, c *chunk) (any, *parsers.Error) {
	if c.rawItem {
		if err := c.materialize(name, d.item); err != nil {
			return nil, err
		}
		// Nothing decoded keeps the item's text: the next item reuses
		// its buffer.
		if d.item = c.data[:0]; cap(d.item) > 1<<20 {
			d.item = nil
		}
	}
	pos := parsers.Pos{File: name, Line: c.line}
	if c.kind == "" {
		return nil, parsers.Errorf(pos, "object without a kind")
	}
	group, version := splitAPIVersion(c.apiVersion)
	// The core kinds have one API version; an object without any (written
	// by hand) is read as of it. Known kinds of another version are
	// ignored, and listed so.
	core := c.apiVersion == "" || c.apiVersion == "v1"
	var err error
	switch {
	case c.kind == "Service" && core:
		o := &corev1.Service{}
		if err = d.unmarshal(c, o); err == nil {
			slim(&o.ObjectMeta)
			if d.lean {
				uid := o.UID
				leanMeta(&o.ObjectMeta)
				o.Spec.Selector = nil
				if o.Namespace == "default" && o.Name == "kubernetes" {
					// The one uid read: it names the cluster.
					o.UID = uid
				}
			}
			svc := &Service{Service: o, Pos: pos}
			if !c.json {
				svc.Ports = portLines(c.data, c.line)
			}
			if err := checkPortProtocols(svc); err != nil {
				return nil, err
			}
			return svc, nil
		}
	case c.kind == "EndpointSlice" && group == "discovery.k8s.io" && version == "v1beta1":
		o := &discoveryv1beta1.EndpointSlice{}
		if err = d.unmarshal(c, o); err == nil {
			slim(&o.ObjectMeta)
			s := sliceFromV1beta1(o)
			if d.lean {
				leanSlice(s)
			}
			es := &EndpointSlice{EndpointSlice: s, Pos: pos}
			es.AddressLines = chunkAddressLines(c)
			return es, nil
		}
	case c.kind == "EndpointSlice" && group == "discovery.k8s.io" && version == "v1":
		o := &discoveryv1.EndpointSlice{}
		if err = d.unmarshal(c, o); err == nil {
			slim(&o.ObjectMeta)
			if d.lean {
				leanSlice(o)
			}
			es := &EndpointSlice{EndpointSlice: o, Pos: pos}
			es.AddressLines = chunkAddressLines(c)
			return es, nil
		}
	case c.kind == "Endpoints" && core:
		//lint:ignore SA1019 exports of older clusters hold Endpoints, and checks read them
		o := &corev1.Endpoints{}
		if err = d.unmarshal(c, o); err == nil {
			slim(&o.ObjectMeta)
			return &Endpoints{Endpoints: o, Pos: pos}, nil
		}
	case c.kind == "ConfigMap" && core:
		o := &corev1.ConfigMap{}
		if err = d.unmarshal(c, o); err == nil {
			slim(&o.ObjectMeta)
			return &ConfigMap{ConfigMap: o, Pos: pos, DataLines: c.configLines}, nil
		}
	case c.kind == "Node" && core:
		o := &corev1.Node{}
		if err = d.unmarshal(c, o); err == nil {
			slim(&o.ObjectMeta)
			return &Node{Node: o, Pos: pos, PodCIDRLine: podCIDRLine(c.data, c.line, c.json)}, nil
		}
	case c.kind == "Pod" && core:
		o := &corev1.Pod{}
		if err = d.unmarshal(c, o); err == nil {
			slim(&o.ObjectMeta)
			return &Pod{Pod: o, Pos: pos}, nil
		}
	case c.kind == "DaemonSet" && group == "apps" && version == "v1":
		o := &appsv1.DaemonSet{}
		if err = d.unmarshal(c, o); err == nil {
			slim(&o.ObjectMeta)
			return &DaemonSet{DaemonSet: o, Pos: pos}, nil
		}
	case c.kind == "ServiceCIDR" && group == "networking.k8s.io" && version == "v1beta1":
		o := &networkingv1beta1.ServiceCIDR{}
		if err = d.unmarshal(c, o); err == nil {
			slim(&o.ObjectMeta)
			return &ServiceCIDR{ServiceCIDR: &networkingv1.ServiceCIDR{ObjectMeta: o.ObjectMeta,
				Spec: networkingv1.ServiceCIDRSpec{CIDRs: o.Spec.CIDRs}}, Pos: pos}, nil
		}
	case c.kind == "ServiceCIDR" && group == "networking.k8s.io" && (version == "v1" || version == "v1alpha1"):
		o := &networkingv1.ServiceCIDR{}
		if err = d.unmarshal(c, o); err == nil {
			slim(&o.ObjectMeta)
			return &ServiceCIDR{ServiceCIDR: o, Pos: pos}, nil
		}
	case c.kind == "KubeProxyConfiguration":
		// A copy: c.data may be a slice of a much larger buffer.
		return &RawDocument{Kind: c.kind, Data: bytes.Clone(c.data), Pos: pos}, nil
	default:
		meta := &metav1.PartialObjectMetadata{}
		if err = d.unmarshal(c, meta); err == nil {
			return &Ignored{APIVersion: c.apiVersion, Kind: c.kind, Namespace: meta.Namespace, Name: meta.Name, Pos: pos}, nil
		}
	}
	return nil, decodeError(name, c, err)
}

// slim drops the metadata that proxyscan never reads and that can be most
// of an object's size.
func slim(m *metav1.ObjectMeta) {
	m.ManagedFields = nil
	delete(m.Annotations, "kubectl.kubernetes.io/last-applied-configuration")
}

// leanMeta drops the object metadata [Options.Lean] leaves out.
func leanMeta(m *metav1.ObjectMeta) {
	m.UID, m.CreationTimestamp = "", metav1.Time{}
}

// leanSlice drops what [Options.Lean] leaves out of an EndpointSlice.
func leanSlice(s *discoveryv1.EndpointSlice) {
	leanMeta(&s.ObjectMeta)
	s.Annotations, s.OwnerReferences = nil, nil
	for i := range s.Endpoints {
		e := &s.Endpoints[i]
		e.TargetRef, e.Hostname, e.DeprecatedTopology = nil, nil, nil
	}
}

func splitAPIVersion(av string) (group, version string) {
	if i := strings.IndexByte(av, '/'); i >= 0 {
		return av[:i], av[i+1:]
	}
	return "", av
}

// sliceFromV1beta1 converts a discovery/v1beta1 EndpointSlice (Kubernetes
// 1.17-1.24) to discovery/v1: topology's zone label becomes zone, the rest
// is the same.
func sliceFromV1beta1(in *discoveryv1beta1.EndpointSlice) *discoveryv1.EndpointSlice {
	out := &discoveryv1.EndpointSlice{
		TypeMeta:    metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
		ObjectMeta:  in.ObjectMeta,
		AddressType: discoveryv1.AddressType(in.AddressType),
	}
	for _, p := range in.Ports {
		out.Ports = append(out.Ports, discoveryv1.EndpointPort{Name: p.Name, Protocol: p.Protocol, Port: p.Port, AppProtocol: p.AppProtocol})
	}
	for _, e := range in.Endpoints {
		ne := discoveryv1.Endpoint{
			Addresses: e.Addresses,
			Conditions: discoveryv1.EndpointConditions{
				Ready: e.Conditions.Ready, Serving: e.Conditions.Serving, Terminating: e.Conditions.Terminating,
			},
			Hostname:  e.Hostname,
			TargetRef: e.TargetRef,
			NodeName:  e.NodeName,
		}
		if ne.NodeName == nil {
			if n, ok := e.Topology[corev1.LabelHostname]; ok {
				ne.NodeName = &n
			}
		}
		if z, ok := e.Topology[corev1.LabelTopologyZone]; ok {
			ne.Zone = &z
		}
		if e.Hints != nil {
			ne.Hints = &discoveryv1.EndpointHints{}
			for _, z := range e.Hints.ForZones {
				ne.Hints.ForZones = append(ne.Hints.ForZones, discoveryv1.ForZone{Name: z.Name})
			}
		}
		out.Endpoints = append(out.Endpoints, ne)
	}
	return out
}

// SortedKinds returns the kinds of the ignored objects with their counts,
// for reports ("Deployment ×3").
func (o *Objects) SortedKinds() []string {
	counts := map[string]int{}
	for _, i := range o.Ignored {
		counts[i.Kind]++
	}
	var out []string
	for k, n := range counts {
		out = append(out, fmt.Sprintf("%s ×%d", k, n))
	}
	sort.Strings(out)
	return out
}
