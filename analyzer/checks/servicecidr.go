package checks

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/kube"
)

var clusterIPOutsideServiceCIDR = &Check{
	ID:       "clusterip-outside-servicecidr",
	Severity: Error,
	Title:    "a Service's cluster IP lies outside every ServiceCIDR",
	What: "A Service's cluster IP (each of `spec.clusterIPs`, one per family) is in none of the ranges of the " +
		"cluster's ServiceCIDR objects (`networking.k8s.io/v1`, `spec.cidrs`; the default one is named " +
		"`kubernetes` and holds the API server's `--service-cluster-ip-range`), or is the network address (or, " +
		"for IPv4, the broadcast address) of its range, which the allocator never hands out. This is the test " +
		"of the API server's own repair loop, which counts every ServiceCIDR, one being deleted included, and " +
		"warns `ClusterIPOutOfRange: ... is not within any configured Service CIDR; please recreate service` on " +
		"the Service. Headless and ExternalName Services have no cluster IP and are not looked at. All the " +
		"Services concerned are one finding: they usually share one cause, a ServiceCIDR that was deleted with its " +
		"finalizer removed by hand, or a default ServiceCIDR that the API server recreated from a changed " +
		"`--service-cluster-ip-range` after it was deleted.",
	Why: "kube-proxy programs every cluster IP whatever the ranges, so the Service still answers on the node " +
		"today, and the finding is a warning. But the address belongs to no range the cluster reserves for " +
		"Services: the range it came from may now be used by another network. When the inputs show that it is " +
		"(the address is a Node's InternalIP or ExternalIP, or lies in a Node's `spec.podCIDRs` or in kube-proxy's " +
		"`clusterCIDR`), the finding is an error: kube-proxy on every node takes traffic to that address for the " +
		"Service (to the Service's ports in iptables mode; in IPVS mode the address is bound to `kube-ipvs0`, so " +
		"every port; in nftables mode the other ports are rejected by `cluster-ips-check`), and the node or pod " +
		"that holds it cannot be reached through it. In nftables mode, kube-proxy also drops new connections to " +
		"the addresses of the ServiceCIDRs that no Service holds (the `cluster-ips-check` chain's \"Drop traffic " +
		"to unallocated ClusterIPs\" rule, whose ranges are shown as evidence); an address outside them is not " +
		"covered, so once its Service is gone, traffic to it is routed off the node instead of being dropped.",
	Fix: "If the range was dropped by mistake, create a ServiceCIDR that holds it again (`kubectl apply -f` a " +
		"`networking.k8s.io/v1` ServiceCIDR with the old range in `spec.cidrs`). Otherwise recreate each listed " +
		"Service so that it is given an address of a current ServiceCIDR (export it, remove `spec.clusterIP` and " +
		"`spec.clusterIPs`, `kubectl replace --force -f`), after moving clients that use the old address rather " +
		"than the Service's DNS name.",
	Needs: []Need{NeedServices, NeedServiceCIDRs},
	Run:   runClusterIPOutsideServiceCIDR,
}

// serviceRange is one range of a ServiceCIDR object.
type serviceRange struct {
	prefix netip.Prefix
	owner  *kube.ServiceCIDR
}

// serviceRanges returns the ranges of the ServiceCIDR objects, and the
// ranges that do not parse, as "name: text".
func serviceRanges(objs []*kube.ServiceCIDR) (ranges []serviceRange, bad []string) {
	for _, o := range objs {
		for _, s := range o.Spec.CIDRs {
			p, err := netip.ParsePrefix(strings.TrimSpace(s))
			if err != nil {
				bad = append(bad, o.Name+": "+s)
				continue
			}
			ranges = append(ranges, serviceRange{prefix: p.Masked(), owner: o})
		}
	}
	return ranges, bad
}

// allocatable reports whether the allocator of range p can hand out ip:
// it lies in p and is not its network address nor, for IPv4, its
// broadcast address (the API server's test of a ClusterIP against a
// ServiceCIDR).
func allocatable(p netip.Prefix, ip netip.Addr) bool {
	p, ip = p.Masked(), ip.Unmap()
	if !p.Contains(ip) || ip == p.Addr() {
		return false
	}
	return !ip.Is4() || ip != lastAddr(p)
}

// lastAddr returns the last address of a prefix (its broadcast address
// for IPv4).
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := range b {
		host := p.Bits() - i*8 // bits of byte i that belong to the network
		switch {
		case host <= 0:
			b[i] = 0xff
		case host < 8:
			b[i] |= 0xff >> host
		}
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// outsideRanges returns why ip is allocated by none of the ranges ("" when
// one allocates it): outside all of them, or a network or broadcast
// address.
func outsideRanges(ranges []serviceRange, ip netip.Addr) string {
	ip = ip.Unmap()
	why := "outside"
	for _, r := range ranges {
		switch {
		case allocatable(r.prefix, ip):
			return ""
		case ip == r.prefix.Addr() && r.prefix.Contains(ip):
			why = "the network address of " + r.prefix.String()
		case r.prefix.Contains(ip):
			why = "the broadcast address of " + r.prefix.String()
		}
	}
	return why
}

// clusterIPsOf returns the cluster IPs of a Service that the allocator
// gave it: none for ExternalName and headless Services.
func clusterIPsOf(s *corev1.Service) []string {
	if s.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	ips := s.Spec.ClusterIPs
	if len(ips) == 0 && s.Spec.ClusterIP != "" {
		ips = []string{s.Spec.ClusterIP}
	}
	var out []string
	for _, ip := range ips {
		if ip != "" && ip != corev1.ClusterIPNone {
			out = append(out, ip)
		}
	}
	return out
}

// rangesText describes the ServiceCIDRs for a message:
// "kubernetes: 10.96.0.0/16, fd00::/108; extra (being deleted): ...".
func rangesText(objs []*kube.ServiceCIDR) string {
	parts := make([]string, 0, len(objs))
	for _, o := range objs {
		name := o.Name
		if o.DeletionTimestamp != nil {
			name += " (being deleted)"
		}
		cidrs := strings.Join(o.Spec.CIDRs, ", ")
		if cidrs == "" {
			cidrs = "no range"
		}
		parts = append(parts, name+": "+cidrs)
	}
	return strings.Join(parts, "; ")
}

func runClusterIPOutsideServiceCIDR(p *Pass) {
	objs := p.Snap.Objects.ServiceCIDRs
	ranges, bad := serviceRanges(objs)
	for _, b := range bad {
		p.Note("ServiceCIDR %s is not a range: left out", b)
	}
	hasFamily := map[model.Family]bool{}
	for _, r := range ranges {
		hasFamily[model.FamilyOf(r.prefix.Addr())] = true
	}
	f := Finding{Severity: Warning}
	var services, first []string
	var outside []netip.Addr
	noRange := map[model.Family]bool{}
	for _, s := range p.Snap.Objects.Services {
		var out []string
		for _, text := range clusterIPsOf(s.Service) {
			ip, err := netip.ParseAddr(text)
			if err != nil {
				p.Note("Service %s/%s: cluster IP %q is not an address: not checked", s.Namespace, s.Name, text)
				continue
			}
			why := outsideRanges(ranges, ip)
			if why == "" {
				continue
			}
			fam := model.FamilyOf(ip.Unmap())
			if !hasFamily[fam] {
				noRange[fam] = true
			}
			outside = append(outside, ip.Unmap())
			if why != "outside" {
				text += " (" + why + ")"
			}
			out = append(out, text)
		}
		if len(out) == 0 {
			continue
		}
		name := s.Namespace + "/" + s.Name
		services = append(services, name)
		if first == nil {
			first = out
		}
		f.Objects = append(f.Objects, name+" "+strings.Join(out, ", "))
		f.Evidence = append(f.Evidence, model.EvidenceAt(s.Pos, fmt.Sprintf("Service %s: clusterIPs %s", name, strings.Join(clusterIPsOf(s.Service), ", "))))
	}
	if len(f.Objects) == 0 {
		return
	}
	for _, o := range objs {
		f.Evidence = append(f.Evidence, model.EvidenceAt(o.Pos, "ServiceCIDR "+rangesText([]*kube.ServiceCIDR{o})))
	}
	ranged := "(" + rangesText(objs) + ")"
	for _, fam := range []model.Family{model.IPv4, model.IPv6} {
		if noRange[fam] {
			ranged += fmt.Sprintf(", none of which has an %s range", fam)
		}
	}
	if len(services) == 1 {
		f.Service = services[0]
		f.Message = fmt.Sprintf("Service %s has a cluster IP that no ServiceCIDR allocates %s: %s", services[0], ranged, strings.Join(first, ", "))
	} else {
		f.Message = fmt.Sprintf("%d Services have a cluster IP that no ServiceCIDR allocates %s: %s", len(services), ranged, listObjects(f.Objects))
	}
	f.Advice = "Create a ServiceCIDR holding the range again if it was dropped by mistake; otherwise recreate each Service " +
		"(without spec.clusterIP and spec.clusterIPs) so that it gets an address of a current ServiceCIDR."
	if clashes := addressClashes(p, outside); len(clashes) > 0 {
		// Another network of the inputs uses an address kube-proxy takes
		// for a Service: traffic to it is misdirected.
		f.Severity = Error
		parts := make([]string, len(clashes))
		for i, c := range clashes {
			parts[i] = c.ip.String() + " is also " + c.use.what
			f.Evidence = append(f.Evidence, c.use.ev)
		}
		f.Message += "; " + strings.Join(parts, "; ") + ": kube-proxy takes traffic meant for the node or pod for the Service"
		f.Advice = "Recreate the Services whose address another network uses (without spec.clusterIP and spec.clusterIPs) so " +
			"that they get an address of a current ServiceCIDR; then recreate the others, or create a ServiceCIDR holding " +
			"their range again if it is still free."
	}
	if mode, _ := p.Mode(); mode == model.ModeNFTables {
		ev, ok := unallocatedDropRules(p)
		f.Evidence = append(f.Evidence, ev...)
		if ok {
			f.Advice += " Until then kube-proxy's nftables rule that drops traffic to unallocated ClusterIPs does not cover " +
				"these addresses: once their Services are gone, traffic to them leaves the node instead of being dropped."
		}
	}
	p.Report(f)
}

// unallocatedDropRules returns the evidence of the nftables rules that
// drop traffic to the addresses of the ServiceCIDRs no Service holds
// (cluster-ips-check, "Drop traffic to unallocated ClusterIPs"), one per
// family whose table has it.
func unallocatedDropRules(p *Pass) ([]model.Evidence, bool) {
	var out []model.Evidence
	for _, fam := range []model.Family{model.IPv4, model.IPv6} {
		t := p.Resolution().NFTTable(fam)
		if t == nil {
			continue
		}
		c := t.Chain(kpnames.NFTClusterIPsCheck)
		if c == nil {
			continue
		}
		for _, r := range c.Rules {
			if r.Comment == kpnames.NFTUnallocatedComment {
				out = append(out, model.EvidenceAt(r.Pos, r.Raw))
			}
		}
	}
	return out, len(out) > 0
}

// addrUse is another network's use of addresses, in the inputs: a node's
// address, a node's pod range, the cluster's pod range.
type addrUse struct {
	what   string
	prefix netip.Prefix
	ev     model.Evidence
}

// addressUses lists the node addresses and pod ranges of the inputs, most
// specific first: the Node objects' InternalIP and ExternalIP addresses,
// their spec.podCIDRs, and kube-proxy's clusterCIDR.
func addressUses(p *Pass) []addrUse {
	var addrs, pods, cluster []addrUse
	for _, n := range p.Snap.Objects.Nodes {
		for _, a := range n.Status.Addresses {
			if a.Type != corev1.NodeInternalIP && a.Type != corev1.NodeExternalIP {
				continue
			}
			if ip, err := netip.ParseAddr(a.Address); err == nil {
				ip = ip.Unmap()
				addrs = append(addrs, addrUse{what: "the " + string(a.Type) + " of Node " + n.Name, prefix: netip.PrefixFrom(ip, ip.BitLen()),
					ev: model.EvidenceAt(n.Pos, fmt.Sprintf("Node %s: %s %s", n.Name, a.Type, a.Address))})
			}
		}
		cidrs := n.Spec.PodCIDRs
		if len(cidrs) == 0 && n.Spec.PodCIDR != "" {
			cidrs = []string{n.Spec.PodCIDR}
		}
		for _, c := range cidrs {
			if pfx, err := netip.ParsePrefix(c); err == nil {
				pods = append(pods, addrUse{what: "in Node " + n.Name + "'s pod range " + pfx.Masked().String(), prefix: pfx.Masked(),
					ev: model.EvidenceAt(n.Pos, fmt.Sprintf("Node %s: podCIDRs %s", n.Name, strings.Join(cidrs, ", ")))})
			}
		}
	}
	if c := p.Snap.Config; c != nil && c.KubeProxyConfiguration != nil && c.ClusterCIDR != "" {
		for _, s := range strings.Split(c.ClusterCIDR, ",") {
			if pfx, err := netip.ParsePrefix(strings.TrimSpace(s)); err == nil {
				cluster = append(cluster, addrUse{what: "in the cluster's pod range " + pfx.Masked().String() + " (kube-proxy's clusterCIDR)", prefix: pfx.Masked(),
					ev: model.EvidenceAt(c.FieldPos("clusterCIDR"), "clusterCIDR: "+c.ClusterCIDR)})
			}
		}
	}
	return append(append(addrs, pods...), cluster...)
}

// clash is a cluster IP that another network of the inputs uses.
type clash struct {
	ip  netip.Addr
	use addrUse
}

// addressClashes returns, for each address, the most specific other use
// of it in the inputs, if any.
func addressClashes(p *Pass, ips []netip.Addr) []clash {
	if len(ips) == 0 {
		return nil
	}
	uses := addressUses(p)
	var out []clash
	for _, ip := range ips {
		for _, u := range uses {
			if u.prefix.Contains(ip) {
				out = append(out, clash{ip, u})
				break
			}
		}
	}
	return out
}
