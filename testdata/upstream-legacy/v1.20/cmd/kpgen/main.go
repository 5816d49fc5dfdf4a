// Command kpgen runs the iptables proxier of kube-proxy v1.20.15, after the
// v1.20.15 kubelet's own iptables set-up, on the inputs of a directory, and
// writes the resulting iptables state. See package kpgen of the common
// module for the flags and outputs.
package main

import (
	"encoding/json"
	"fmt"

	discovery "k8s.io/api/discovery/v1beta1"
	"k8s.io/client-go/tools/record"
	"k8s.io/kubernetes/pkg/proxy/iptables"
	utilproxy "k8s.io/kubernetes/pkg/proxy/util"
	sysctltest "k8s.io/kubernetes/pkg/util/sysctl/testing"

	"github.com/proxyscan/proxyscan/testdata/upstream-legacy/common/kpgen"
)

func main() {
	kpgen.Main(&kpgen.Release{
		Version: "v1.20.15",
		Minor:   20,
		// EndpointSliceProxying is beta and on by default in 1.20:
		// kube-proxy watches discovery.k8s.io/v1beta1 EndpointSlices.
		SliceAPIVersion: "discovery.k8s.io/v1beta1",
		SliceType:       discovery.EndpointSlice{},
		// The Node informer only runs with the ServiceTopology gate
		// (alpha, off).
		WatchesNode: false,
		// IPv6DualStack is alpha and off: the single-stack proxier, with
		// the node IP kube-proxy detected.
		DualStack:  false,
		NewProxier: newProxier,
		AddSlice:   addSlice,
	})
}

// newProxier calls NewProxier as cmd/kube-proxy/app's newProxyServer does
// for the single-stack iptables proxier.
func newProxier(a kpgen.ProxierArgs) (kpgen.Provider, error) {
	c := a.Config
	p, err := iptables.NewProxier(a.IPT, sysctltest.NewFake(), a.Exec,
		c.IPTables.SyncPeriod.Duration, c.IPTables.MinSyncPeriod.Duration,
		c.IPTables.MasqueradeAll, int(*c.IPTables.MasqueradeBit), a.Detector,
		a.Hostname, a.NodeIP, record.NewFakeRecorder(100), nil, a.NodePortAddresses)
	if err != nil {
		return nil, err
	}
	// 1.20 holds a socket open on every NodePort and local externalIP
	// port; the fake opener hands out sockets without binding.
	kpgen.SetField(p, "portMapper", utilproxy.PortOpener(fakePortOpener{}))
	return p, nil
}

type fakePortOpener struct{}

func (fakePortOpener) OpenLocalPort(*utilproxy.LocalPort, bool) (utilproxy.Closeable, error) {
	return fakeSocket{}, nil
}

type fakeSocket struct{}

func (fakeSocket) Close() error { return nil }

func addSlice(p kpgen.Provider, data []byte) error {
	es := &discovery.EndpointSlice{}
	if err := json.Unmarshal(data, es); err != nil {
		return err
	}
	ip, ok := p.(*iptables.Proxier)
	if !ok {
		return fmt.Errorf("unexpected provider %T", p)
	}
	ip.OnEndpointSliceAdd(es)
	return nil
}
