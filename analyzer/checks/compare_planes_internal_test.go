package checks

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/view"
)

// TestComparePlaneOf: the walk of two sides' sorted elements gives the
// changes that comparePort, node-drift's comparison, gives over the same
// elements (for each service port by name, the elements only one side
// programs, entries first, then endpoints, each in key order; an element
// that one side programs twice counted once, with its first evidence), on
// random sides: ports on one side only, entries and endpoints that both,
// one or none of the sides program, in any order, some twice.
func TestComparePlaneOf(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	elem := func(backend bool, n, line int) printElem {
		ev := []model.Evidence{{File: "f", Line: line}}
		if backend {
			l := fmt.Sprintf("10.0.0.%d:80", n)
			return printElem{key: "backend " + l, label: l, backend: true, evidence: ev}
		}
		l := fmt.Sprintf("ClusterIP 10.96.0.%d tcp/80", n)
		return printElem{key: "entry " + l, label: l, evidence: ev}
	}
	for round := 0; round < 200; round++ {
		var sides [2]*Plane
		for i := range sides {
			sides[i] = &Plane{ports: map[string]*planePort{}}
		}
		for p := 0; p < 1+r.IntN(8); p++ {
			name := fmt.Sprintf("ns/svc-%d:http", r.IntN(10))
			for i, side := range sides {
				if r.IntN(5) == 0 {
					continue
				}
				pl := side.ports[name]
				if pl == nil {
					pl = &planePort{}
					side.ports[name] = pl
				}
				for e := 0; e < r.IntN(12); e++ {
					pl.elems = append(pl.elems, elem(r.IntN(2) == 0, r.IntN(6), 100*i+e))
				}
			}
		}
		// The reference: each side's elements made unique as the print's
		// are, compared by comparePort.
		var want []PlaneChange
		names := map[string]bool{}
		sets := [2]map[string][]printElem{{}, {}}
		for i, side := range sides {
			for name, pl := range side.ports {
				names[name] = true
				sets[i][name] = uniqueElems(append([]printElem(nil), pl.elems...), false)
			}
		}
		for _, name := range sortedKeys(names) {
			comparePort([][]printElem{sets[0][name], sets[1][name]}, []int{0, 1}, false, func(e *printElem, in, _ []int) {
				subject := strings.TrimPrefix(e.key, "entry ")
				if e.backend {
					subject = e.label
				}
				want = append(want, PlaneChange{Service: name, Backend: e.backend, Subject: subject, Old: in[0] == 0, Evidence: e.evidence})
			})
		}
		for _, side := range sides {
			for _, pl := range side.ports {
				pl.elems = sortedUnique(pl.elems)
			}
		}
		if got := ComparePlaneOf(sides[0], sides[1]); !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d:\ngot  %+v\nwant %+v", round, got, want)
		}
	}
}

// TestComparePlaneDigests: comparing two sides by the digests of their
// service ports, and the elements of those whose digests differ, gives
// the changes of comparing every element (ReadPlane and ComparePlaneOf),
// on random sides of one or two views: service ports on one side only,
// entries and endpoints that both, one or none of the sides program, a
// dispatch shared by entries and origins on one side and not the other,
// an entry programmed twice. A service port whose digests are the same
// has no change.
func TestComparePlaneDigests(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	kinds := []view.Kind{view.ClusterIP, view.NodePort}
	for round := 0; round < 300; round++ {
		var sides [2][]*view.View
		for i := range sides {
			for f := 0; f < 1+r.IntN(2); f++ {
				sides[i] = append(sides[i], &view.View{Family: []model.Family{model.IPv4, model.IPv6}[f]})
			}
		}
		for p := 0; p < 1+r.IntN(10); p++ {
			name := fmt.Sprintf("ns/svc-%d:http", r.IntN(12))
			// Most service ports are alike on both sides.
			alike := r.IntN(3) > 0
			seed := r.Uint64()
			for i := range sides {
				if !alike && r.IntN(5) == 0 {
					continue
				}
				pr := rand.New(rand.NewPCG(seed, 0))
				if !alike {
					pr = rand.New(rand.NewPCG(seed, uint64(i)+1))
				}
				v := sides[i][pr.IntN(len(sides[i]))]
				var shared *view.Dispatch
				for e := 0; e < 1+pr.IntN(3); e++ {
					entry := &view.Entry{Kind: kinds[pr.IntN(2)], IP: netip.AddrFrom4([4]byte{10, 96, 0, byte(pr.IntN(4))}), Protocol: "tcp", Port: 80, Service: name}
					if !alike && pr.IntN(4) == 0 || shared == nil {
						shared = &view.Dispatch{Service: name, Policy: view.PolicyCluster}
						for b := 0; b < pr.IntN(5); b++ {
							shared.Backends = append(shared.Backends, &view.Backend{Endpoint: fmt.Sprintf("10.0.0.%d:80", pr.IntN(8))})
						}
					}
					for _, o := range model.Origins {
						if pr.IntN(3) > 0 {
							entry.Dispatch[o] = shared
						}
					}
					v.Entries = append(v.Entries, entry)
					if pr.IntN(6) == 0 {
						v.Entries = append(v.Entries, entry)
					}
				}
			}
		}
		want := ComparePlaneOf(ReadPlane(sides[0]), ReadPlane(sides[1]))
		old, new := ReadPlaneDigest(sides[0]), ReadPlaneDigest(sides[1])
		if got := ComparePlaneDigests(old, new); !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d:\ngot  %+v\nwant %+v", round, got, want)
		}
		// A service port whose digests are the same programs the same
		// elements on both sides.
		for name, s := range new.ports {
			if o := old.ports[name]; o != nil && *o == *s {
				for _, ch := range want {
					if ch.Service == name {
						t.Fatalf("round %d: %s has the same digests on both sides and changes %+v", round, name, ch)
					}
				}
			}
		}
	}
}

// TestReadPlaneDigestAllocates: the digest of a side of 2,000 service
// ports (an entry per kind of two, a dispatch of six endpoints each)
// allocates less than a quarter of the bytes of its plane, which keeps an
// element and its key for each entry and endpoint: a diff of two large
// sides alike reads no element.
func TestReadPlaneDigestAllocates(t *testing.T) {
	v := &view.View{Family: model.IPv4}
	for p := 0; p < 2000; p++ {
		name := fmt.Sprintf("ns/svc-%d:http", p)
		dp := &view.Dispatch{Service: name, Policy: view.PolicyCluster}
		for b := 0; b < 6; b++ {
			dp.Backends = append(dp.Backends, &view.Backend{Endpoint: fmt.Sprintf("10.%d.%d.%d:8080", p/250, p%250, b)})
		}
		for _, k := range []view.Kind{view.ClusterIP, view.NodePort} {
			e := &view.Entry{Kind: k, IP: netip.AddrFrom4([4]byte{10, 96, byte(p / 250), byte(p % 250)}), Protocol: "tcp", Port: 80, Service: name}
			for _, o := range model.Origins {
				e.Dispatch[o] = dp
			}
			v.Entries = append(v.Entries, e)
		}
	}
	views := []*view.View{v}
	allocated := func(read func()) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		read()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	var pl *Plane
	var d *PlaneDigest
	plane := allocated(func() { pl = ReadPlane(views) })
	digest := allocated(func() { d = ReadPlaneDigest(views) })
	if len(pl.ports) != 2000 || len(d.ports) != 2000 {
		t.Fatalf("%d service ports in the plane, %d in the digest, want 2000", len(pl.ports), len(d.ports))
	}
	if digest*4 > plane {
		t.Errorf("the digest allocated %d bytes, the plane %d: want less than a quarter", digest, plane)
	}
}

// TestPlaneSharedDispatch: a dispatch the entries of two service ports
// reach is read for each of them, whichever entry comes first, so that
// the full comparison and the digests' agree, and a change of its
// endpoints is a change of both ports.
func TestPlaneSharedDispatch(t *testing.T) {
	disp := func(svc string, eps ...string) *view.Dispatch {
		d := &view.Dispatch{Service: svc, Policy: view.PolicyCluster}
		for _, ep := range eps {
			d.Backends = append(d.Backends, &view.Backend{Endpoint: ep})
		}
		return d
	}
	// side makes a view of the ports ns/a:http and ns/b:http, whose
	// entries reach da and db (the same dispatch when db is nil).
	side := func(da, db *view.Dispatch) []*view.View {
		if db == nil {
			db = da
		}
		a := &view.Entry{Kind: view.ClusterIP, IP: netip.MustParseAddr("10.96.0.1"), Protocol: "tcp", Port: 80, Service: "ns/a:http"}
		b := &view.Entry{Kind: view.ClusterIP, IP: netip.MustParseAddr("10.96.0.2"), Protocol: "tcp", Port: 80, Service: "ns/b:http"}
		a.Dispatch[model.Origins[0]], b.Dispatch[model.Origins[0]] = da, db
		return []*view.View{{Family: model.IPv4, Entries: []*view.Entry{a, b}}}
	}
	for _, tc := range []struct {
		name     string
		old, new []*view.View
		want     []string // service, endpoint, old
	}{
		{"b gets a dispatch of its own, alike", side(disp("ns/a:http", "10.0.0.1:80"), nil),
			side(disp("ns/a:http", "10.0.0.1:80"), disp("ns/b:http", "10.0.0.1:80")), nil},
		{"b reaches a's dispatch", side(disp("ns/a:http", "10.0.0.1:80"), disp("ns/b:http", "10.0.0.2:80")),
			side(disp("ns/a:http", "10.0.0.1:80"), nil),
			[]string{"ns/b:http 10.0.0.1:80 new", "ns/b:http 10.0.0.2:80 old"}},
		{"the shared dispatch's endpoint changes", side(disp("ns/a:http", "10.0.0.1:80"), nil), side(disp("ns/a:http", "10.0.0.2:80"), nil),
			[]string{"ns/a:http 10.0.0.1:80 old", "ns/a:http 10.0.0.2:80 new", "ns/b:http 10.0.0.1:80 old", "ns/b:http 10.0.0.2:80 new"}},
	} {
		full := ComparePlaneOf(ReadPlane(tc.old), ReadPlane(tc.new))
		digests := ComparePlaneDigests(ReadPlaneDigest(tc.old), ReadPlaneDigest(tc.new))
		var got []string
		for _, c := range full {
			age := "new"
			if c.Old {
				age = "old"
			}
			got = append(got, c.Service+" "+c.Subject+" "+age)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: full comparison %q, want %q", tc.name, got, tc.want)
		}
		if !reflect.DeepEqual(digests, full) {
			t.Errorf("%s: digests' comparison\n%+v\nfull comparison\n%+v", tc.name, digests, full)
		}
	}
}
