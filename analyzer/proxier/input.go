package proxier

import (
	"net/netip"
	"sort"
	"strings"

	kpv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/parsers/kpconfig"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
)

// Env describes what kube-proxy learns from the node at start-up and the
// inputs do not record. The zero value is a usual node: iptables supports
// --random-fully, the nfacct counters can be created, and
// nf_conntrack_tcp_be_liberal is 0 unless conntrack.tcpBeLiberal is set.
type Env struct {
	// NoRandomFully reports an iptables without --random-fully (kube-proxy
	// before 1.37 probes for it and leaves it out).
	NoRandomFully bool
	// NoNFAcct reports that the nfacct counters could not be created (1.31+
	// then writes no "-m nfacct" rules).
	NoNFAcct bool
	// TCPBeLiberal reports net.netfilter.nf_conntrack_tcp_be_liberal set
	// (1.29+ then writes no INVALID drop rule).
	TCPBeLiberal bool
	// ServiceCIDRs are the cluster's ServiceCIDRs, which nftables mode
	// drops unallocated traffic to; nil means those of the ServiceCIDR
	// objects of the exports, else those of the captured nftables ruleset.
	ServiceCIDRs []netip.Prefix
}

// input is what every mode's generator reads: the snapshot's service
// ports and the kube-proxy configuration resolved for one version, the
// node's addresses and labels, and the start-up environment. What the
// node's kube-proxy is (mode, version, addresses, endpoint selection) is
// its resolution's.
type input struct {
	res  *resolve.Resolution
	snap *model.Snapshot
	cfg  *kpv1alpha1.KubeProxyConfiguration
	env  Env
	// textOnly is Options.TextOnly.
	textOnly bool

	nodeName string
	// nodeIPs holds the node IP of each family (the first InternalIP, else
	// ExternalIP), as cmd/kube-proxy/app detectNodeIPs picks it.
	nodeIPs map[model.Family]netip.Addr
	// ifaceAddrs are the addresses nodePortAddresses are matched against:
	// loopback and the node's addresses.
	ifaceAddrs []netip.Addr
	podCIDRs   []netip.Prefix
	cat        model.CategorizeOptions
	ports      []*model.ServicePort
}

// newInput resolves the inputs of a generator for r, whose version the
// proxier models (see [modelled]).
func newInput(r *resolve.Resolution, env Env) *input {
	v := r.Version.Version
	snap := r.Snap
	in := &input{res: r, snap: snap, env: env, nodeName: snap.Node.Name,
		nodeIPs: r.NodeIPs, ifaceAddrs: r.InterfaceAddrs, podCIDRs: snap.Node.PodCIDRs, cat: r.Categorize}
	if l := snap.Sysctls; l != nil {
		if val, ok := l.Value("net.netfilter.nf_conntrack_tcp_be_liberal"); ok && strings.TrimSpace(val) != "0" {
			in.env.TCPBeLiberal = true
		}
	}
	in.cfg = resolveConfig(snap, v)
	in.ports = snap.ActivePorts()
	build := model.BuildOptions{NodeName: snap.Node.Name, HonourIPMode: r.Has(resolve.LoadBalancerIPMode)}
	if snap.Objects != nil && len(snap.Objects.Services) > 0 && !snap.PortsBuiltWith(build) {
		// The snapshot's ports follow its own version; rebuild them for v
		// (LoadBalancerIPMode) unless they were built the same way.
		in.ports = nil
		for _, sp := range model.BuildServicePorts(snap.Objects, build) {
			if sp.Skip == "" {
				in.ports = append(in.ports, sp)
			}
		}
	}
	return in
}

// resolveConfig returns the snapshot's configuration defaulted for version
// v (the snapshot holds it defaulted for its own version), or kube-proxy's
// defaults when the inputs have none.
func resolveConfig(snap *model.Snapshot, v kpversion.Version) *kpv1alpha1.KubeProxyConfiguration {
	var c *kpconfig.Config
	switch {
	case snap.Config != nil && snap.Config.Effective != nil:
		c = snap.Config.Effective.Clone()
	case snap.Config != nil && snap.Config.Read != nil:
		c = snap.Config.Read.Clone()
	default:
		c = &kpconfig.Config{}
	}
	kpconfig.Defaults(c, v)
	return &c.Config
}

// portsOf returns the service ports a proxier of family f programs: those
// with a cluster IP of the family (pkg/proxy/servicechangetracker.go
// skips the others), sorted by name and protocol.
func (in *input) portsOf(f model.Family) []*model.ServicePort {
	var out []*model.ServicePort
	for _, sp := range in.ports {
		if _, ok := sp.ClusterIP(f); ok {
			out = append(out, sp)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].String(), out[j].String()
		if a != b {
			return a < b
		}
		return out[i].Protocol < out[j].Protocol
	})
	return out
}

// clusterCIDRs returns the cluster CIDRs of family f from the clusterCIDR
// setting (a comma-separated list).
func (in *input) clusterCIDRs(f model.Family) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range strings.Split(in.cfg.ClusterCIDR, ",") {
		if p, err := netip.ParsePrefix(strings.TrimSpace(s)); err == nil && model.FamilyOf(p.Addr()) == f {
			out = append(out, p.Masked())
		}
	}
	return out
}

// nodePortAddresses returns the configured nodePortAddresses with the
// keywords expanded (cmd/kube-proxy/app/server.go: "primary" with
// NodePortAddressesPrimary, "localhost" and "all" with
// NodePortAddressesKeywords).
func (in *input) nodePortAddresses() []string {
	var out []string
	for _, a := range in.cfg.NodePortAddresses {
		switch {
		case a == "primary" && in.res.Has(resolve.NodePortAddressesPrimary):
			if ip, ok := in.nodeIPs[model.IPv4]; ok && !ip.IsLoopback() {
				out = append(out, ip.String()+"/32")
			}
			if ip, ok := in.nodeIPs[model.IPv6]; ok && !ip.IsLoopback() {
				out = append(out, ip.String()+"/128")
			}
		case a == "localhost" && in.res.Has(resolve.NodePortAddressesKeywords):
			out = append(out, "127.0.0.0/8", "::1/128")
		case a == "all" && in.res.Has(resolve.NodePortAddressesKeywords):
			out = append(out, "0.0.0.0/0", "::/0")
		default:
			out = append(out, a)
		}
	}
	return out
}
