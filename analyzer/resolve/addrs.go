package resolve

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/ipaddr"
	"github.com/proxyscan/proxyscan/parsers/ipvs"
)

// nodeAddresses fills the node IP of each family and the addresses
// nodePortAddresses are matched against, as kube-proxy's detectNodeIPs and
// net.InterfaceAddrs find them.
func (r *Resolution) nodeAddresses() {
	s := r.Snap
	n := &s.Node
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
	if s.Addrs != nil {
		// Every interface address is a candidate for nodePortAddresses, as
		// kube-proxy lists them with net.InterfaceAddrs.
		ordered = append(ordered, s.Addrs.LocalAddresses()...)
	}
	if c := s.Config; c != nil && c.KubeProxyConfiguration != nil {
		// A bindAddress that is not unspecified overrides the node IP of its
		// family (detectNodeIPs).
		if ip, err := netip.ParseAddr(c.BindAddress); err == nil && !ip.IsUnspecified() {
			ordered = append([]netip.Addr{ip.Unmap()}, ordered...)
		}
	}
	seen := map[netip.Addr]bool{}
	for _, ip := range ordered {
		f := model.FamilyOf(ip)
		if _, ok := r.NodeIPs[f]; !ok && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() {
			r.NodeIPs[f] = ip
		}
		if !seen[ip] {
			seen[ip] = true
			r.InterfaceAddrs = append(r.InterfaceAddrs, ip)
		}
	}
	for _, lo := range []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()} {
		if !seen[lo] {
			r.InterfaceAddrs = append([]netip.Addr{lo}, r.InterfaceAddrs...)
		}
	}
	own := map[netip.Addr]bool{}
	addOwn := func(a netip.Addr) {
		if a = a.Unmap(); a.IsValid() && !own[a] {
			own[a] = true
			r.NodeAddrs = append(r.NodeAddrs, a)
		}
	}
	for _, a := range n.Addresses {
		addOwn(a)
	}
	if s.Addrs != nil {
		for _, a := range s.Addrs.NodeAddresses() {
			addOwn(a)
		}
	}
}

// IsNodeAddr reports whether a is one of [Resolution.NodeAddrs].
func (r *Resolution) IsNodeAddr(a netip.Addr) bool {
	a = a.Unmap()
	for _, x := range r.NodeAddrs {
		if x == a {
			return true
		}
	}
	return false
}

// families finds the families kube-proxy runs a proxier for: the node's
// and those of the captured kube-proxy dumps (kube-proxy runs dual-stack
// whenever the host supports both, whatever the node's addresses), else
// those of the cluster IPs, else IPv4.
func (r *Resolution) families() {
	s := r.Snap
	have := map[model.Family]bool{}
	for f := range r.NodeIPs {
		have[f] = true
	}
	for _, d := range s.IPTables {
		if hasKubeChains(d) {
			have[model.Family(d.Family)] = true
		}
	}
	for _, f := range []model.Family{model.IPv4, model.IPv6} {
		if r.NFTTable(f) != nil {
			have[f] = true
		}
	}
	if t := r.IPVSTable(); t != nil {
		for _, svc := range t.Services {
			if svc.AddressFamily == ipvs.FamilyIPv6 {
				have[model.IPv6] = true
			} else {
				have[model.IPv4] = true
			}
		}
	}
	if len(have) == 0 {
		for _, sp := range s.Ports {
			if sp.Skip != "" {
				continue
			}
			for _, ip := range sp.ClusterIPs {
				have[model.FamilyOf(ip)] = true
			}
		}
	}
	for _, f := range []model.Family{model.IPv4, model.IPv6} {
		if have[f] {
			r.Families = append(r.Families, f)
		}
	}
	if len(r.Families) == 0 {
		r.Families = []model.Family{model.IPv4}
	}
}

// localAddresses finds the addresses the kernel takes as the node's: those
// of ip addr (kube-ipvs0 included) and the Node object's. In IPVS mode
// without ip addr, the virtual server addresses of the captured IPVS table
// are assumed bound to kube-ipvs0, as kube-proxy binds every one of them
// there (syncService, netlinkHandle.EnsureAddressBind).
func (r *Resolution) localAddresses() {
	s := r.Snap
	seen := map[netip.Addr]bool{}
	add := func(a netip.Addr) bool {
		a = a.Unmap()
		if !a.IsValid() || seen[a] {
			return false
		}
		seen[a] = true
		r.Local = append(r.Local, a)
		return true
	}
	for _, a := range s.Node.Local {
		add(a)
	}
	for _, a := range s.Node.Addresses {
		add(a)
	}
	// shown reports whether ip addr shows what is bound to kube-ipvs0 in
	// a's family (a listing of other interfaces does not).
	shown := func(a netip.Addr) bool {
		fam := "inet"
		if !a.Is4() {
			fam = "inet6"
		}
		return s.Addrs != nil && s.Addrs.ShowsAddresses(ipaddr.KubeIPVSInterface, fam)
	}
	if r.Mode != model.ModeIPVS || s.Addrs != nil && shown(netip.IPv4Unspecified()) && shown(netip.IPv6Unspecified()) {
		return
	}
	t := r.IPVSTable()
	if t == nil {
		return
	}
	for _, svc := range t.Services {
		if svc.FWMark != 0 {
			continue
		}
		a, ok := netip.AddrFromSlice(svc.Address)
		if !ok || a.Unmap().IsLoopback() || shown(a.Unmap()) {
			continue
		}
		if add(a) {
			r.AssumedLocal = append(r.AssumedLocal, a.Unmap())
		}
	}
	switch {
	case len(r.AssumedLocal) == 0:
	case s.Addrs == nil:
		r.AssumedWhy = "no ip addr in the inputs: the addresses of the IPVS virtual servers are taken as bound to kube-ipvs0, as kube-proxy binds them"
	default:
		r.AssumedWhy = "ip addr does not show kube-ipvs0 (it is partial: " + s.Addrs.Partial + "): the addresses of the IPVS virtual servers it does " +
			"not show are taken as bound to kube-ipvs0, as kube-proxy binds them"
		r.AssumedBrief = "ip addr does not show kube-ipvs0"
	}
}
