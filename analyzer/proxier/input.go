package proxier

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	kpv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"

	"github.com/proxyscan/proxyscan/analyzer/model"
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
	// ServiceCIDRs are the cluster's ServiceCIDRs (API objects the inputs
	// do not hold), which nftables mode drops unallocated traffic to; nil
	// means those of the captured nftables ruleset.
	ServiceCIDRs []netip.Prefix
}

// input is what every mode's generator reads: the snapshot's service
// ports and the kube-proxy configuration resolved for one version, the
// node's addresses and labels, and the start-up environment.
type input struct {
	minor int
	snap  *model.Snapshot
	cfg   *kpv1alpha1.KubeProxyConfiguration
	env   Env

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

// gate returns the value of a feature gate in the configuration, else def.
func (in *input) gate(name string, def bool) bool {
	if in.cfg != nil {
		if v, ok := in.cfg.FeatureGates[name]; ok {
			return v
		}
	}
	return def
}

func newInput(snap *model.Snapshot, v kpversion.Version, env Env) (*input, error) {
	if v.Major != 1 || v.Minor < kpversion.OldestMinor || v.Minor > kpversion.NewestMinor {
		return nil, fmt.Errorf("kube-proxy %s is not modelled (supported: 1.%d to 1.%d)", v, kpversion.OldestMinor, kpversion.NewestMinor)
	}
	in := &input{minor: v.Minor, snap: snap, env: env, nodeName: snap.Node.Name, nodeIPs: map[model.Family]netip.Addr{}}
	if l := snap.Sysctls; l != nil {
		if val, ok := l.Value("net.netfilter.nf_conntrack_tcp_be_liberal"); ok && strings.TrimSpace(val) != "0" {
			in.env.TCPBeLiberal = true
		}
	}
	in.cfg = resolveConfig(snap, v)
	in.nodeAddresses()
	in.cat = categorizeOptions(in)
	in.ports = snap.ActivePorts()
	if snap.Objects != nil && len(snap.Objects.Services) > 0 {
		// The snapshot's ports follow its own version; rebuild them for v
		// (LoadBalancer ipMode is honoured from 1.30, 1.29 behind a gate).
		honour := v.Minor >= 30 || v.Minor == 29 && in.gate("LoadBalancerIPMode", false)
		in.ports = nil
		for _, sp := range model.BuildServicePorts(snap.Objects, model.BuildOptions{NodeName: snap.Node.Name, HonourIPMode: honour}) {
			if sp.Skip == "" {
				in.ports = append(in.ports, sp)
			}
		}
	}
	return in, nil
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

// nodeAddresses fills the node IPs per family, the addresses node ports are
// matched against and the pod CIDRs.
func (in *input) nodeAddresses() {
	n := &in.snap.Node
	var ordered []netip.Addr
	if n.Object != nil {
		for _, typ := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP} {
			for _, a := range n.Object.Status.Addresses {
				if a.Type != typ {
					continue
				}
				if ip, err := netip.ParseAddr(a.Address); err == nil {
					ordered = append(ordered, ip.Unmap())
				}
			}
		}
	}
	ordered = append(ordered, n.Addresses...)
	if a := in.snap.Addrs; a != nil {
		// Every interface address is a candidate for nodePortAddresses, as
		// kube-proxy lists them with net.InterfaceAddrs.
		ordered = append(ordered, a.LocalAddresses()...)
	}
	if in.cfg != nil {
		// A bindAddress that is not unspecified overrides the node IP of its
		// family (detectNodeIPs).
		if ip, err := netip.ParseAddr(in.cfg.BindAddress); err == nil && !ip.IsUnspecified() {
			ordered = append([]netip.Addr{ip.Unmap()}, ordered...)
		}
	}
	seen := map[netip.Addr]bool{}
	for _, ip := range ordered {
		f := model.FamilyOf(ip)
		if _, ok := in.nodeIPs[f]; !ok && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() {
			in.nodeIPs[f] = ip
		}
		if !seen[ip] {
			seen[ip] = true
			in.ifaceAddrs = append(in.ifaceAddrs, ip)
		}
	}
	for _, lo := range []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()} {
		if !seen[lo] {
			in.ifaceAddrs = append([]netip.Addr{lo}, in.ifaceAddrs...)
		}
	}
	in.podCIDRs = n.PodCIDRs
}

// families returns the families kube-proxy runs a proxier for: the node's
// families and those of the captured kube-proxy dumps (kube-proxy runs
// dual-stack whenever the host supports both, whatever the node's
// addresses), else the families of the cluster IPs, else IPv4.
func (in *input) families() []model.Family {
	have := map[model.Family]bool{}
	for f := range in.nodeIPs {
		have[f] = true
	}
	for _, d := range in.snap.IPTables {
		if hasKubeChains(d) {
			have[model.Family(d.Family)] = true
		}
	}
	for f := range nftCapturedFamilies(in.snap) {
		have[f] = true
	}
	if len(have) == 0 {
		for _, sp := range in.ports {
			for _, ip := range sp.ClusterIPs {
				have[model.FamilyOf(ip)] = true
			}
		}
	}
	var out []model.Family
	for _, f := range []model.Family{model.IPv4, model.IPv6} {
		if have[f] {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		out = []model.Family{model.IPv4}
	}
	return out
}

// categorizeOptions returns the endpoint selection rules of the version:
// pkg/proxy/topology.go CategorizeEndpoints of v1.24-v1.37 (the feature
// gates ProxyTerminatingEndpoints, beta and on from 1.26, GA 1.28;
// PreferSameTrafficDistribution, on from 1.34; hints needing the topology
// annotation before 1.31).
func categorizeOptions(in *input) model.CategorizeOptions {
	m := in.minor
	zone := ""
	if n := in.snap.Node.Object; n != nil {
		zone = n.Labels[corev1.LabelTopologyZone]
	} else {
		zone = in.snap.Node.Zone
	}
	term := m >= 28 || m >= 26 && in.gate("ProxyTerminatingEndpoints", true) || m >= 24 && in.gate("ProxyTerminatingEndpoints", false)
	return model.CategorizeOptions{
		NodeName:                 in.nodeName,
		Zone:                     zone,
		TerminatingFallback:      term,
		LocalTerminatingFallback: term,
		NodeHints:                m >= 34 || m >= 33 && in.gate("PreferSameTrafficDistribution", false),
		TopologyNeedsAnnotation:  m < 31,
	}
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
// keywords expanded (cmd/kube-proxy/app/server.go: "primary" 1.31+,
// "localhost" and "all" 1.37).
func (in *input) nodePortAddresses() []string {
	var out []string
	for _, a := range in.cfg.NodePortAddresses {
		switch {
		case a == "primary" && in.minor >= 31:
			if ip, ok := in.nodeIPs[model.IPv4]; ok && !ip.IsLoopback() {
				out = append(out, ip.String()+"/32")
			}
			if ip, ok := in.nodeIPs[model.IPv6]; ok && !ip.IsLoopback() {
				out = append(out, ip.String()+"/128")
			}
		case a == "localhost" && in.minor >= 37:
			out = append(out, "127.0.0.0/8", "::1/128")
		case a == "all" && in.minor >= 37:
			out = append(out, "0.0.0.0/0", "::/0")
		default:
			out = append(out, a)
		}
	}
	return out
}
