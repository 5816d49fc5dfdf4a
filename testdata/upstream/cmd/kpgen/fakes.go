package main

import (
	"fmt"
	"net"
	"reflect"
	"sort"
	"sync"
	"unsafe"

	"k8s.io/kubernetes/pkg/proxy/conntrack"
	"k8s.io/kubernetes/pkg/proxy/healthcheck"
	"k8s.io/kubernetes/pkg/proxy/util/nfacct"
	proxyutiltest "k8s.io/kubernetes/pkg/proxy/util/testing"
)

// setField replaces an unexported field of a proxier built by its exported
// constructor. The constructors create a few kernel handles themselves
// (conntrack, nfacct, netlink, the interface list, the service health
// server, the nft executor); they are swapped for fakes before the proxier
// sees any object. A field that does not exist is a programming error: the
// proxier changed and this harness must follow.
func setField(obj any, name string, val any) {
	v := reflect.ValueOf(obj).Elem()
	f := v.FieldByName(name)
	if !f.IsValid() {
		panic(fmt.Sprintf("%T has no field %q", obj, name))
	}
	f = reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
	f.Set(reflect.ValueOf(val))
}

// replaceHostHandles installs the fakes shared by all three proxiers.
func replaceHostHandles(p any, in *inputs) {
	setField(p, "conntrack", conntrack.NewFake())
	setField(p, "serviceHealthServer", healthcheck.NewFakeServiceHealthServer())
	setField(p, "networkInterfacer", fakeNetwork(in))
}

func fakeNetwork(in *inputs) *proxyutiltest.FakeNetwork {
	nw := proxyutiltest.NewFakeNetwork()
	var lo, eth []net.Addr
	for _, a := range nodeInterfaceAddrs(in) {
		if a.IP.IsLoopback() {
			lo = append(lo, a)
		} else {
			eth = append(eth, a)
		}
	}
	nw.AddInterfaceAddr(&net.Interface{Index: 1, Name: "lo", Flags: net.FlagUp | net.FlagLoopback}, lo)
	nw.AddInterfaceAddr(&net.Interface{Index: 2, Name: "eth0", Flags: net.FlagUp}, eth)
	return nw
}

// fakeNFAcct is an nfacct.Interface whose counters always exist, as on a
// kernel with nfnetlink_acct.
type fakeNFAcct struct {
	mu       sync.Mutex
	counters map[string]*nfacct.Counter
}

var _ nfacct.Interface = &fakeNFAcct{}

func newFakeNFAcct() *fakeNFAcct { return &fakeNFAcct{counters: map[string]*nfacct.Counter{}} }

func (f *fakeNFAcct) Ensure(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.counters[name] == nil {
		f.counters[name] = &nfacct.Counter{Name: name}
	}
	return nil
}

func (f *fakeNFAcct) Add(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.counters[name] != nil {
		return nfacct.ErrObjectAlreadyExists
	}
	f.counters[name] = &nfacct.Counter{Name: name}
	return nil
}

func (f *fakeNFAcct) Get(name string) (*nfacct.Counter, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.counters[name]; c != nil {
		return c, nil
	}
	return nil, nfacct.ErrObjectNotFound
}

func (f *fakeNFAcct) List() ([]*nfacct.Counter, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var names []string
	for n := range f.counters {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []*nfacct.Counter
	for _, n := range names {
		out = append(out, f.counters[n])
	}
	return out, nil
}
