package model

import (
	"sort"
	"strings"

	"github.com/proxyscan/proxyscan/parsers/kube"
)

// An ExportCut says what a Kubernetes export cut short (its Input's
// Partial) may lack: the objects after the cut, and the rest of the last
// one. It is what the export covers of the Services and of their
// endpoint objects (EndpointSlices and legacy Endpoints), so that a check
// tells an object absent from the cluster from one that may only lie
// after the cut.
//
// kubectl prints the objects of one kind after another (kubectl get
// services,endpointslices: every Service, then every EndpointSlice), each
// kind as the API server lists it, sorted by namespace and name. So a
// kind followed in the export by objects of another kind is whole in it;
// the kind the export was cut in lacks at most the objects that sort
// after the last one read (that one included: it may be cut inside); a
// kind the export holds no object of may lie wholly after the cut,
// unless another export holds it. An export whose objects of a kind are
// not so sorted, or not printed together, may lack any of them.
type ExportCut struct {
	// File is the export's path; Reason its Input's Partial.
	File, Reason string
	// Services and Endpoints are what may lie after the cut of each.
	Services, Endpoints CutKind
}

// A CutKind says which objects of one kind an export cut short may lack.
type CutKind struct {
	// Open is set when objects of the kind may lie after the cut.
	Open bool
	// Namespace and Name, when Name is set, bound those of an Open kind:
	// only objects that sort at or after them may be missing. Without a
	// Name every object of the kind may be.
	Namespace, Name string
	// absent is set while the export holds no object of the kind (see
	// [Snapshot.SettleCuts]).
	absent bool
}

// cutObject is an object of an export, in the order it was read.
type cutObject struct {
	line            int
	kind            string
	namespace, name string
}

// CutOf returns what an export cut short, whose objects are o, read from
// file, may lack (see [ExportCut]).
func CutOf(file string, o *kube.Objects) ExportCut {
	var objs []cutObject
	add := func(line int, kind, ns, name string) {
		objs = append(objs, cutObject{line, kind, ns, name})
	}
	for _, x := range o.Services {
		add(x.Pos.Line, "Service", x.Namespace, x.Name)
	}
	for _, x := range o.EndpointSlices {
		add(x.Pos.Line, "EndpointSlice", x.Namespace, x.Name)
	}
	for _, x := range o.Endpoints {
		add(x.Pos.Line, "Endpoints", x.Namespace, x.Name)
	}
	for _, x := range o.ConfigMaps {
		add(x.Pos.Line, "ConfigMap", x.Namespace, x.Name)
	}
	for _, x := range o.Nodes {
		add(x.Pos.Line, "Node", "", x.Name)
	}
	for _, x := range o.Pods {
		add(x.Pos.Line, "Pod", x.Namespace, x.Name)
	}
	for _, x := range o.DaemonSets {
		add(x.Pos.Line, "DaemonSet", x.Namespace, x.Name)
	}
	for _, x := range o.ServiceCIDRs {
		add(x.Pos.Line, "ServiceCIDR", "", x.Name)
	}
	for _, x := range o.Raw {
		add(x.Pos.Line, x.Kind, "", "")
	}
	for _, x := range o.Ignored {
		add(x.Pos.Line, x.Kind, x.Namespace, x.Name)
	}
	sort.SliceStable(objs, func(i, j int) bool { return objs[i].line < objs[j].line })
	c := ExportCut{File: file, Reason: o.Partial}
	c.Services = cutKind(objs, func(k string) bool { return k == "Service" })
	c.Endpoints = cutKind(objs, func(k string) bool { return k == "EndpointSlice" || k == "Endpoints" })
	return c
}

// cutKind returns which objects of the kinds of objs that of says may lie
// after the cut.
func cutKind(objs []cutObject, of func(string) bool) CutKind {
	first, last := -1, -1
	for i, x := range objs {
		if of(x.kind) {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	switch {
	case first < 0:
		return CutKind{Open: true, absent: true}
	case last < len(objs)-1:
		// Followed by objects of another kind: whole, when printed
		// together.
		for _, x := range objs[first:last] {
			if !of(x.kind) {
				return CutKind{Open: true}
			}
		}
		return CutKind{}
	}
	// Cut in this kind: the objects after the last one read, when they
	// are printed together and sorted.
	prev := objs[first]
	for _, x := range objs[first+1:] {
		if !of(x.kind) || x.kind != prev.kind || less(x.namespace, x.name, prev.namespace, prev.name) {
			return CutKind{Open: true}
		}
		prev = x
	}
	return CutKind{Open: true, Namespace: prev.namespace, Name: prev.name}
}

// less orders objects as the API server lists them.
func less(ns1, name1, ns2, name2 string) bool {
	if ns1 != ns2 {
		return ns1 < ns2
	}
	return name1 < name2
}

// SettleCuts closes, in the cuts of s's exports, the kinds an export cut
// short holds no object of while other exports hold some: those were
// exported apart. It is called once every export is read.
func (s *Snapshot) SettleCuts() {
	if len(s.ExportCuts) == 0 {
		return
	}
	services, endpoints := false, false
	if o := s.Objects; o != nil {
		services, endpoints = len(o.Services) > 0, o.EndpointObjects() > 0
	}
	for i := range s.ExportCuts {
		c := &s.ExportCuts[i]
		if c.Services.absent && services {
			c.Services = CutKind{}
		}
		if c.Endpoints.absent && endpoints {
			c.Endpoints = CutKind{}
		}
	}
}

// ServiceCut returns the export cut short after whose cut the Service
// namespace/name, or a port of it, may lie, or nil when every export
// holds it or holds what sorts after it.
func (s *Snapshot) ServiceCut(namespace, name string) *ExportCut {
	for i := range s.ExportCuts {
		c := &s.ExportCuts[i]
		if k := c.Services; k.Open && (k.Name == "" || !less(namespace, name, k.Namespace, k.Name)) {
			return c
		}
	}
	return nil
}

// EndpointsCut returns the export cut short after whose cut endpoint
// objects of the Service namespace/name may lie, or nil. The
// EndpointSlices of a Service are named after it (its name, a dash and a
// suffix of the API server's), its Endpoints object is its name: any of
// them may sort at or after the last one read.
func (s *Snapshot) EndpointsCut(namespace, name string) *ExportCut {
	for i := range s.ExportCuts {
		c := &s.ExportCuts[i]
		k := c.Endpoints
		if !k.Open {
			continue
		}
		if k.Name == "" || namespace > k.Namespace {
			return c
		}
		if namespace == k.Namespace && (name >= k.Name || name+"-" > k.Name || strings.HasPrefix(k.Name, name+"-")) {
			return c
		}
	}
	return nil
}

// ServicesCut returns the first export cut short after whose cut Services
// may lie, or nil.
func (s *Snapshot) ServicesCut() *ExportCut {
	for i := range s.ExportCuts {
		if s.ExportCuts[i].Services.Open {
			return &s.ExportCuts[i]
		}
	}
	return nil
}
