package kpgen

import (
	"fmt"
	_ "unsafe" // go:linkname

	"k8s.io/kubernetes/pkg/kubelet"
	utiliptables "k8s.io/kubernetes/pkg/util/iptables"
)

// syncNetworkUtil is the release's own (*kubelet.Kubelet).syncNetworkUtil
// (pkg/kubelet/kubelet_network_linux.go): the iptables rules every kubelet
// of 1.20-1.27 writes at start-up (KUBE-MARK-DROP, KUBE-FIREWALL,
// KUBE-MARK-MASQ, KUBE-POSTROUTING and their jumps; KUBE-IPTABLES-HINT
// from 1.24).
//
//go:linkname syncNetworkUtil k8s.io/kubernetes/pkg/kubelet.(*Kubelet).syncNetworkUtil
func syncNetworkUtil(kl *kubelet.Kubelet, ipt utiliptables.Interface) bool

// Kubelet's defaults for --iptables-masquerade-bit and --iptables-drop-bit.
const (
	kubeletMasqueradeBit = 14
	kubeletDropBit       = 15
)

// runKubelet does what kubelet's initNetworkUtil does for IPv4: its
// syncNetworkUtil, then the first step of its
// Monitor(KUBE-KUBELET-CANARY, [mangle nat filter]), which creates the
// canary chains.
func runKubelet(ipt *recIPT) error {
	kl := &kubelet.Kubelet{}
	SetField(kl, "iptablesMasqueradeBit", kubeletMasqueradeBit)
	SetField(kl, "iptablesDropBit", kubeletDropBit)
	if !syncNetworkUtil(kl, ipt) {
		return fmt.Errorf("kubelet's syncNetworkUtil failed:\n%s", ipt.callLog())
	}
	return ipt.ensureCanary(monitorReq{
		canary: "KUBE-KUBELET-CANARY",
		tables: []utiliptables.Table{utiliptables.TableMangle, utiliptables.TableNAT, utiliptables.TableFilter},
	})
}
