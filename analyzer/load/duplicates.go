package load

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/kube"
)

// dropDuplicates keeps one copy of each Service, EndpointSlice, legacy
// Endpoints object and Node that several exports hold (a bundle's own export and a
// loose one taken at another time, or two exports that overlap) and
// returns the notes that say which copy is read. Copies of one
// resourceVersion are the same object state: the first is kept, with no
// note. Copies of different resourceVersions are the object at different
// times: the newest (the greatest resourceVersion, which is the etcd
// revision of its last change) is kept, and a note names every copy.
// Copies that differ without resourceVersions to order them are all kept,
// as before, and a note says that each is checked; copies alike without
// resourceVersions are one.
func dropDuplicates(o *kube.Objects) []string {
	var notes []string
	o.Services = keepNewest(o.Services, "Service", func(s *kube.Service) (*metav1.ObjectMeta, parsers.Pos, any) {
		return &s.ObjectMeta, s.Pos, s.Service
	}, &notes)
	o.EndpointSlices = keepNewest(o.EndpointSlices, "EndpointSlice", func(s *kube.EndpointSlice) (*metav1.ObjectMeta, parsers.Pos, any) {
		return &s.ObjectMeta, s.Pos, s.EndpointSlice
	}, &notes)
	o.Endpoints = keepNewest(o.Endpoints, "Endpoints", func(e *kube.Endpoints) (*metav1.ObjectMeta, parsers.Pos, any) {
		return &e.ObjectMeta, e.Pos, e.Endpoints
	}, &notes)
	o.Nodes = keepNewest(o.Nodes, "Node", func(n *kube.Node) (*metav1.ObjectMeta, parsers.Pos, any) {
		return &n.ObjectMeta, n.Pos, n.Node
	}, &notes)
	return notes
}

// keepNewest returns objs with one copy of each namespace/name, as
// dropDuplicates says, appending its notes. meta returns an object's
// metadata, where it was read and the object compared when copies have no
// resourceVersion. objs keeps its order; it is returned as it is when no
// name is given twice.
func keepNewest[T any](objs []*T, kind string, meta func(*T) (*metav1.ObjectMeta, parsers.Pos, any), notes *[]string) []*T {
	if len(objs) < 2 {
		return objs
	}
	first := make(map[string]int, len(objs))
	var copies map[int][]int // first index -> indexes of the other copies
	for i, x := range objs {
		m, _, _ := meta(x)
		key := m.Namespace + "/" + m.Name
		if j, ok := first[key]; ok {
			if copies == nil {
				copies = map[int][]int{}
			}
			copies[j] = append(copies[j], i)
			continue
		}
		first[key] = i
	}
	if copies == nil {
		return objs
	}
	drop := make([]bool, len(objs))
	// The notes follow the objects' order.
	for j := range objs {
		others, ok := copies[j]
		if !ok {
			continue
		}
		group := append([]int{j}, others...)
		keep, note := pickCopy(objs, group, kind, meta)
		for _, i := range group {
			drop[i] = !slices.Contains(keep, i)
		}
		if note != "" {
			*notes = append(*notes, note)
		}
	}
	out := objs[:0:0]
	for i, x := range objs {
		if !drop[i] {
			out = append(out, x)
		}
	}
	return out
}

// pickCopy returns which copies of one object (indexes of objs, in their
// order) are kept, and the note that says so ("" when the copies are one
// object state).
func pickCopy[T any](objs []*T, group []int, kind string, meta func(*T) (*metav1.ObjectMeta, parsers.Pos, any)) (keep []int, note string) {
	m0, _, v0 := meta(objs[group[0]])
	same, ordered := true, true
	var newest int
	var newestRV uint64
	places := make([]string, len(group))
	for k, i := range group {
		m, pos, v := meta(objs[i])
		rv := m.ResourceVersion
		places[k] = pos.String()
		if rv != "" {
			places[k] += " resourceVersion " + rv
		}
		switch {
		case rv != m0.ResourceVersion:
			same = false
		case rv == "" && !reflect.DeepEqual(v, v0):
			same = false
		}
		n, err := strconv.ParseUint(rv, 10, 64)
		if err != nil {
			ordered = false
			continue
		}
		if k == 0 || n > newestRV {
			newest, newestRV = i, n
		}
	}
	name := objectName(m0.Namespace, m0.Name)
	switch {
	case same:
		return group[:1], ""
	case ordered:
		_, pos, _ := meta(objs[newest])
		return []int{newest}, fmt.Sprintf("%s %s is in %d exports (%s): the newest, %s, is read", kind, name, len(group), strings.Join(places, ", "), pos)
	default:
		return group, fmt.Sprintf("%s %s is in %d exports that differ (%s), without resourceVersions that tell the newest: each copy is read", kind, name, len(group), strings.Join(places, ", "))
	}
}
