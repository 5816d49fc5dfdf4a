// Command kpgen runs the iptables proxier of kube-proxy v1.24.17, after the
// v1.24.17 kubelet's own iptables set-up, on the inputs of a directory, and
// writes the resulting iptables state. See package kpgen of the common
// module for the flags and outputs.
package main

import (
	"encoding/json"
	"fmt"

	discovery "k8s.io/api/discovery/v1"
	"k8s.io/client-go/tools/events"
	sysctltest "k8s.io/component-helpers/node/util/sysctl/testing"
	"k8s.io/kubernetes/pkg/proxy/iptables"

	"github.com/proxyscan/proxyscan/testdata/upstream-legacy/common/kpgen"
)

func main() {
	kpgen.Main(&kpgen.Release{
		Version:         "v1.24.17",
		Minor:           24,
		SliceAPIVersion: "discovery.k8s.io/v1",
		SliceType:       discovery.EndpointSlice{},
		WatchesNode:     true,
		DualStack:       true,
		NewProxier:      newProxier,
		AddSlice:        addSlice,
	})
}

// newProxier calls NewProxier as cmd/kube-proxy/app's
// NewDualStackProxier does for the IPv4 family.
func newProxier(a kpgen.ProxierArgs) (kpgen.Provider, error) {
	c := a.Config
	return iptables.NewProxier(a.IPT, sysctltest.NewFake(), a.Exec,
		c.IPTables.SyncPeriod.Duration, c.IPTables.MinSyncPeriod.Duration,
		c.IPTables.MasqueradeAll, int(*c.IPTables.MasqueradeBit), a.Detector,
		a.Hostname, a.NodeIP, &events.FakeRecorder{}, nil, a.NodePortAddresses)
}

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
