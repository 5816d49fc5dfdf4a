package checks

import (
	"hash/maphash"
	"slices"
	"sort"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/view"
	"github.com/proxyscan/proxyscan/internal/fault"
	"github.com/proxyscan/proxyscan/internal/intern"
)

// A planePort is what views program for one service port, the state
// node-drift compares between nodes and diff between two snapshots: its
// entries and the endpoints of their dispatches, as elements in the order
// of the views (see [uniqueElems]).
type planePort struct {
	// elems are the endpoints, then the entries, each in the order read
	// (see [uniqueElems]).
	elems []printElem
	// entries are the entries read, until they join elems.
	entries []printElem
	// protocol is that of its first entry, in upper case; families are
	// those of the views with entries of it; dispatch is the evidence of
	// its first dispatch.
	protocol string
	families []model.Family
	dispatch []model.Evidence
	// fams is the first room of families (a view per family, most
	// often).
	fams [2]model.Family
}

// planePorts reads, per service port, what views program: its entries,
// and the endpoints of their dispatches (those of the Cluster traffic
// policy only, with cluster), each dispatch read once; with only, those
// of the service ports it names only.
func planePorts(views []*view.View, cluster bool, only map[string]bool) map[string]*planePort {
	// A service port has an entry or more per view (most often one or
	// two): the maps are made large enough at once.
	entries := 0
	for _, v := range views {
		entries = max(entries, len(v.Entries))
	}
	if only != nil {
		entries = 2 * len(only)
	}
	ports := make(map[string]*planePort, entries/2)
	// The planePorts are made in blocks, and the keys are built in buf
	// and copied into an arena: one allocation per block, not one per
	// port or element.
	var block []planePort
	var keys intern.Arena
	var buf []byte
	// The first room of a port's elements and entries is cut from larger
	// slices of elements, made as needed.
	var slab []printElem
	grow := func(list []printElem, n int) []printElem {
		if cap(list)-len(list) >= n {
			return list
		}
		if len(list) > 0 || n > 64 {
			return slices.Grow(list, n)
		}
		if cap(slab)-len(slab) < n {
			slab = make([]printElem, 0, 2048)
		}
		out := slab[len(slab) : len(slab) : len(slab)+n]
		slab = slab[:len(slab)+n]
		return out
	}
	walkPlane(views, cluster, only, func(v *view.View, e *view.Entry) *planePort {
		pl := ports[e.Service]
		if pl == nil {
			if len(block) == cap(block) {
				block = make([]planePort, 0, 256)
			}
			block = block[:len(block)+1]
			pl = &block[len(block)-1]
			pl.families = pl.fams[:0]
			ports[e.Service] = pl
		}
		if pl.protocol == "" {
			pl.protocol = upperProtocol(e.Protocol)
		}
		if len(pl.families) == 0 || pl.families[len(pl.families)-1] != v.Family {
			pl.families = append(pl.families, v.Family)
		}
		buf = e.AppendKey(append(buf[:0], entryPrefix...))
		key := keys.Bytes(buf)
		if pl.entries == nil {
			pl.entries = grow(nil, 2)
		}
		pl.entries = append(pl.entries, printElem{key: key, label: key[len(entryPrefix):], family: v.Family, kind: e.Kind, evidence: e.Evidence})
		return pl
	}, func(pl *planePort, v *view.View, dp *view.Dispatch, fresh bool) {
		if pl.dispatch == nil {
			pl.dispatch = dp.Evidence
		}
		if !fresh {
			return
		}
		// Room for the entries too (two, most often), which join the
		// endpoints once read.
		pl.elems = grow(pl.elems, len(dp.Backends)+2)
		for _, b := range dp.Backends {
			buf = append(append(buf[:0], backendPrefix...), b.Endpoint...)
			pl.elems = append(pl.elems, printElem{key: keys.Bytes(buf), backend: true, label: b.Endpoint, family: v.Family, b: b})
		}
	})
	// Every endpoint's key sorts before every entry's: the elements are in
	// the order of their keys when each kind was read in it, and in the
	// order a stable sort by key keeps either way.
	for _, pl := range ports {
		if len(pl.elems) == 0 {
			pl.elems = pl.entries
		} else {
			pl.elems = append(pl.elems, pl.entries...)
		}
		pl.entries = nil
	}
	return ports
}

// upperProtocol returns a protocol in upper case, without a copy for
// those of Services.
func upperProtocol(p string) string {
	switch p {
	case "tcp":
		return "TCP"
	case "udp":
		return "UDP"
	case "sctp":
		return "SCTP"
	}
	return strings.ToUpper(p)
}

// comparePort compares what several nodes, or the two sides of a diff,
// program for one service port. sets holds each side's elements, sorted by
// key; the sides in have take part. For each element that some of them
// program and others do not, entries first, then endpoints (none with
// noBackends), each in key order, it calls fn with the element of the
// first side that programs it and the sides that do (in) and do not
// (out).
func comparePort(sets [][]printElem, have []int, noBackends bool, fn func(e *printElem, in, out []int)) {
	union := map[string]*printElem{}
	for _, i := range have {
		for j := range sets[i] {
			e := &sets[i][j]
			if noBackends && e.backend || union[e.key] != nil {
				continue
			}
			union[e.key] = e
		}
	}
	keys := sortedKeys(union)
	sort.SliceStable(keys, func(a, b int) bool { return !union[keys[a]].backend && union[keys[b]].backend })
	for _, k := range keys {
		var in, out []int
		for _, i := range have {
			if findElem(sets[i], k) != nil {
				in = append(in, i)
			} else {
				out = append(out, i)
			}
		}
		if len(out) > 0 && len(in) > 0 {
			fn(union[k], in, out)
		}
	}
}

// findElem returns the element of that key among elements sorted by key,
// or nil.
func findElem(elems []printElem, key string) *printElem {
	i := sort.Search(len(elems), func(i int) bool { return elems[i].key >= key })
	if i < len(elems) && elems[i].key == key {
		return &elems[i]
	}
	return nil
}

// A PlaneChange is an element of a service port's data plane that one of
// two snapshots programs and the other does not (see [ComparePlanes]).
type PlaneChange struct {
	// Service is the service port.
	Service string
	// Backend is set for an endpoint of a dispatch, Subject then being
	// the endpoint; else Subject is the key of an entry ([view.Entry.Key]).
	Backend bool
	Subject string
	// Old is set when only the old snapshot programs it, else only the
	// new one does; Evidence is where that snapshot does.
	Old      bool
	Evidence []model.Evidence
	// Family is that of the view the element was read from.
	Family model.Family
}

// ComparePlanes compares what two snapshots' views program per service
// port (its entries, and the endpoints of its dispatches of every traffic
// policy) as node-drift compares nodes, and returns the changes, by
// service port, entries first.
func ComparePlanes(old, new []*view.View) []PlaneChange {
	// The two sides are read at once: a diff of two large nodes waits
	// for them, both sides' checks done.
	var sides [2]*Plane
	g := fault.Group{Name: "checks.ComparePlanes"}
	g.Go(func() error { sides[0] = ReadPlane(old); return nil })
	sides[1] = ReadPlane(new)
	if err := g.Wait(); err != nil {
		panic(err)
	}
	return ComparePlaneOf(sides[0], sides[1])
}

// A Plane is what one snapshot's views program per service port, read
// for [ComparePlaneOf]: a diff reads each side's as soon as its checks
// are done.
type Plane struct {
	ports map[string]*planePort
}

// ReadPlane reads what views program per service port (see
// [ComparePlanes]). The evidence of an endpoint is read only once it is
// found to differ.
func ReadPlane(views []*view.View) *Plane {
	return readPlaneOf(views, nil)
}

// readPlaneOf is [ReadPlane] of the service ports only names, or of
// every one when only is nil.
func readPlaneOf(views []*view.View, only map[string]bool) *Plane {
	side := planePorts(views, false, only)
	for _, pl := range side {
		// An entry that several views program keeps the evidence of the
		// first.
		pl.elems = sortedUnique(pl.elems)
	}
	return &Plane{ports: side}
}

// portDispatch is a dispatch as a service port's entries reach it: the
// port (its planePort or planeSum) and the dispatch.
type portDispatch[P any] struct {
	port *P
	dp   *view.Dispatch
}

// walkPlane walks what views program per service port, as [ReadPlane]
// and [ReadPlaneDigest] read it: port is called for each entry of a
// service port (of those only names, with only) and returns what stands
// for the port; dispatch for each dispatch its entries reach (of the
// Cluster traffic policy only, with cluster), fresh the first time the
// port reaches it in a view. A dispatch is often that of several origins
// and entries of a service port: its endpoints are read once for the
// port. (A dispatch the entries of several service ports reach is read
// for each: each programs its endpoints, whichever entry comes first, and
// a service port's elements are the same whether the others are read or
// not, see ComparePlaneDigests.)
func walkPlane[P any](views []*view.View, cluster bool, only map[string]bool, port func(*view.View, *view.Entry) *P, dispatch func(*P, *view.View, *view.Dispatch, bool)) {
	for _, v := range views {
		read := make(map[portDispatch[P]]bool, len(v.Entries)/2)
		for _, e := range v.Entries {
			if e.Service == "" || only != nil && !only[e.Service] {
				continue
			}
			pl := port(v, e)
			for _, o := range model.Origins {
				dp := e.Dispatch[o]
				if dp == nil || cluster && dp.Policy != view.PolicyCluster {
					continue
				}
				k := portDispatch[P]{pl, dp}
				dispatch(pl, v, dp, !read[k])
				read[k] = true
			}
		}
	}
}

// A PlaneDigest is what one snapshot's views program per service port,
// summed up for [ComparePlaneDigests]: a digest of each service port's
// elements (see planeSum), and the views, whose elements are read only for
// the service ports whose digests differ between two sides. A diff reads
// each side's as soon as its checks are done: two sides that program
// mostly the same compare without reading each element of every service
// port into a [Plane] (on two nodes of 10,000 Services, about 12 MB of
// elements and keys a side).
type PlaneDigest struct {
	views []*view.View
	ports map[string]*planeSum
}

// planeSum is the digest of a service port's elements, as [ReadPlane]
// reads them before making them unique (an element met twice counted
// twice): the sums, over its elements, of a 64-bit hash of each one's key
// under two seeds. Two service ports that program the same elements as
// many times each have the same digest. Two whose elements differ have
// the same one with a chance of about one in 2^128 (the seeds are drawn
// for each process), and two with the same elements but not as many times
// each (a dispatch of endpoints read for two entries on one side, for one
// on the other) differ and are compared element by element, which finds
// no change.
type planeSum [2]uint64

// planeSeeds are the seeds of the two hashes of a planeSum.
var planeSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func (s *planeSum) add(key []byte) {
	s[0] += maphash.Bytes(planeSeeds[0], key)
	s[1] += maphash.Bytes(planeSeeds[1], key)
}

// ReadPlaneDigest reads the digest of what views program per service
// port: the elements [ReadPlane] reads, the keys of each built in one
// buffer, kept by none.
func ReadPlaneDigest(views []*view.View) *PlaneDigest {
	entries := 0
	for _, v := range views {
		entries = max(entries, len(v.Entries))
	}
	ports := make(map[string]*planeSum, entries/2)
	var block []planeSum
	var buf []byte
	walkPlane(views, false, nil, func(v *view.View, e *view.Entry) *planeSum {
		sum := ports[e.Service]
		if sum == nil {
			if len(block) == cap(block) {
				block = make([]planeSum, 0, 1024)
			}
			block = block[:len(block)+1]
			sum = &block[len(block)-1]
			ports[e.Service] = sum
		}
		buf = e.AppendKey(append(buf[:0], entryPrefix...))
		sum.add(buf)
		return sum
	}, func(sum *planeSum, _ *view.View, dp *view.Dispatch, fresh bool) {
		if !fresh {
			return
		}
		for _, b := range dp.Backends {
			buf = append(append(buf[:0], backendPrefix...), b.Endpoint...)
			sum.add(buf)
		}
	})
	return &PlaneDigest{views: views, ports: ports}
}

// ComparePlaneDigests compares two sides read by [ReadPlaneDigest] as
// [ComparePlaneOf] compares their planes: the service ports whose digests
// are the same program the same elements on both sides, and the elements
// of the others are read from each side's views (the two at once) and
// compared.
func ComparePlaneDigests(old, new *PlaneDigest) []PlaneChange {
	differ := map[string]bool{}
	for name, s := range new.ports {
		if o := old.ports[name]; o == nil || *o != *s {
			differ[name] = true
		}
	}
	for name := range old.ports {
		if new.ports[name] == nil {
			differ[name] = true
		}
	}
	if len(differ) == 0 {
		return nil
	}
	var sides [2]*Plane
	g := fault.Group{Name: "checks.ComparePlaneDigests"}
	g.Go(func() error { sides[0] = readPlaneOf(old.views, differ); return nil })
	sides[1] = readPlaneOf(new.views, differ)
	if err := g.Wait(); err != nil {
		panic(err)
	}
	return ComparePlaneOf(sides[0], sides[1])
}

// sortedUnique sorts elements by key and keeps the first of each key,
// as uniqueElems(list, false) does, but leaves an endpoint's evidence
// unread (in b).
func sortedUnique(list []printElem) []printElem {
	byKey := func(a, b printElem) int { return strings.Compare(a.key, b.key) }
	if !slices.IsSortedFunc(list, byKey) {
		slices.SortStableFunc(list, byKey)
	}
	out := list[:0]
	for i := 0; i < len(list); i++ {
		if i > 0 && list[i].key == list[i-1].key {
			continue
		}
		out = append(out, list[i])
	}
	return out
}

// ComparePlaneOf compares two planes read by [ReadPlane] as
// [ComparePlanes] compares their views: for each service port, by name,
// the elements only one side programs, entries first, then endpoints,
// each in key order. Each side's elements are sorted by key, and are
// walked together.
func ComparePlaneOf(old, new *Plane) []PlaneChange {
	names := make([]string, 0, len(new.ports))
	for name := range new.ports {
		names = append(names, name)
	}
	for name := range old.ports {
		if new.ports[name] == nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var out, backends []PlaneChange
	change := func(name string, e *printElem, isOld bool) PlaneChange {
		ev := e.evidence
		if e.b != nil {
			ev = e.b.Evidence()
		}
		subject := strings.TrimPrefix(e.key, "entry ")
		if e.backend {
			subject = e.label
		}
		return PlaneChange{Service: name, Backend: e.backend, Subject: subject, Old: isOld, Evidence: ev, Family: e.family}
	}
	for _, name := range names {
		var a, b []printElem
		if pl := old.ports[name]; pl != nil {
			a = pl.elems
		}
		if pl := new.ports[name]; pl != nil {
			b = pl.elems
		}
		backends = backends[:0]
		add := func(c PlaneChange) {
			if c.Backend {
				backends = append(backends, c)
			} else {
				out = append(out, c)
			}
		}
		i, j := 0, 0
		for i < len(a) || j < len(b) {
			switch {
			case j == len(b) || i < len(a) && a[i].key < b[j].key:
				add(change(name, &a[i], true))
				i++
			case i == len(a) || b[j].key < a[i].key:
				add(change(name, &b[j], false))
				j++
			default:
				i++
				j++
			}
		}
		out = append(out, backends...)
	}
	return out
}
