package kpgen

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"strings"
	"sync"
	"unsafe"

	"k8s.io/kubernetes/pkg/proxy/healthcheck"
	proxyutiltest "k8s.io/kubernetes/pkg/proxy/util/testing"
	utilexec "k8s.io/utils/exec"
	testingexec "k8s.io/utils/exec/testing"
)

// SetField replaces an unexported field of an object built by its exported
// constructor (the proxier opens a few host handles itself: the service
// health server, the interface list and, before 1.21, the NodePort
// sockets). A missing field is a programming error: the release differs
// from what this generator expects.
func SetField(obj any, name string, val any) {
	v := reflect.ValueOf(obj).Elem()
	f := v.FieldByName(name)
	if !f.IsValid() {
		panic(fmt.Sprintf("%T has no field %q", obj, name))
	}
	f = reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
	f.Set(reflect.ValueOf(val))
}

// replaceHostHandles installs the fakes every release's proxier needs.
func replaceHostHandles(p any, in *inputs) {
	SetField(p, "serviceHealthServer", healthcheck.NewFakeServiceHealthServer())
	SetField(p, "networkInterfacer", fakeNetwork(in))
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

// nodeInterfaceAddrs is what the node's interfaces carry: loopback and the
// node's InternalIPs (as /24 and /64; the Node object has no prefix
// lengths and kube-proxy only looks at the addresses).
func nodeInterfaceAddrs(in *inputs) []*net.IPNet {
	out := []*net.IPNet{
		{IP: net.IPv4(127, 0, 0, 1), Mask: net.CIDRMask(8, 32)},
		{IP: net.IPv6loopback, Mask: net.CIDRMask(128, 128)},
	}
	for _, ip := range in.localIPs {
		if ip.To4() != nil {
			out = append(out, &net.IPNet{IP: ip.To4(), Mask: net.CIDRMask(24, 32)})
		} else {
			out = append(out, &net.IPNet{IP: ip, Mask: net.CIDRMask(64, 128)})
		}
	}
	return out
}

// recExec is the exec interface the proxier runs conntrack through: every
// command is logged and succeeds with no output, as conntrack -D does when
// there is nothing to delete.
type recExec struct {
	mu  sync.Mutex
	log []string
}

var _ utilexec.Interface = &recExec{}

func (e *recExec) Command(cmd string, args ...string) utilexec.Cmd {
	e.mu.Lock()
	e.log = append(e.log, strings.Join(append([]string{cmd}, args...), " "))
	e.mu.Unlock()
	ok := func() ([]byte, []byte, error) { return nil, nil, nil }
	return &testingexec.FakeCmd{
		Argv:                 append([]string{cmd}, args...),
		CombinedOutputScript: []testingexec.FakeAction{ok},
		OutputScript:         []testingexec.FakeAction{ok},
		RunScript:            []testingexec.FakeAction{ok},
	}
}

func (e *recExec) CommandContext(_ context.Context, cmd string, args ...string) utilexec.Cmd {
	return e.Command(cmd, args...)
}

func (e *recExec) LookPath(file string) (string, error) {
	return "/usr/sbin/" + file, nil
}

func (e *recExec) callLog() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.log) == 0 {
		return ""
	}
	return strings.Join(e.log, "\n") + "\n"
}
