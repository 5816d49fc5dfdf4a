package checks

import (
	"fmt"
	"net/netip"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/kpcmdline"
	"github.com/proxyscan/proxyscan/parsers/kpconfig"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
	"github.com/proxyscan/proxyscan/parsers/kube"
	"github.com/proxyscan/proxyscan/parsers/manifest"
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
		"the Service. Without ServiceCIDR objects in the inputs, the range is the API server's " +
		"`--service-cluster-ip-range`, read from a kube-apiserver Pod of kube-system in the inputs (an export of its Pods, " +
		"or its static Pod manifest), and only when that Pod shows an API server older than 1.33 that does not " +
		"enable the `MultiCIDRServiceAllocator` feature gate: the flag is then the only range. Otherwise the check " +
		"is skipped, saying what to add; no range is guessed. Headless and ExternalName Services have no cluster IP " +
		"and are not looked at. All the Services concerned are one finding: they usually share one cause, a " +
		"ServiceCIDR that was deleted with its finalizer removed by hand, or a default ServiceCIDR that the API server recreated from a changed " +
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
		"`networking.k8s.io/v1` ServiceCIDR with the old range in `spec.cidrs`), or, before 1.33, give the API " +
		"server its old `--service-cluster-ip-range` back. Otherwise recreate each listed " +
		"Service so that it is given an address of a current ServiceCIDR (export it, remove `spec.clusterIP` and " +
		"`spec.clusterIPs`, `kubectl replace --force -f`), after moving clients that use the old address rather " +
		"than the Service's DNS name.",
	Needs: []Need{NeedServices, NeedServiceCIDRs},
	Run:   runClusterIPOutsideServiceCIDR,
}

// A rangeSource is where the inputs say cluster IPs are allocated from:
// a ServiceCIDR object, or the API server's --service-cluster-ip-range
// when it is the only range (see [apiserverServiceRange]).
type rangeSource struct {
	// name is the ServiceCIDR's name, or the flag.
	name string
	// cidrs are the ranges as written.
	cidrs []string
	// deleting marks a ServiceCIDR being deleted (it still counts).
	deleting bool
	ev       model.Evidence
}

// serviceCIDRSources returns the ServiceCIDR objects as range sources.
func serviceCIDRSources(objs []*kube.ServiceCIDR) []rangeSource {
	out := make([]rangeSource, 0, len(objs))
	for _, o := range objs {
		src := rangeSource{name: o.Name, cidrs: o.Spec.CIDRs, deleting: o.DeletionTimestamp != nil}
		src.ev = model.EvidenceAt(o.Pos, "ServiceCIDR "+rangesText([]rangeSource{src}))
		out = append(out, src)
	}
	return out
}

// serviceRanges returns the ranges of the sources, masked, and the ranges
// that do not parse, as "name: text".
func serviceRanges(srcs []rangeSource) (ranges []netip.Prefix, bad []string) {
	for _, src := range srcs {
		for _, c := range src.cidrs {
			p, err := netip.ParsePrefix(strings.TrimSpace(c))
			if err != nil {
				bad = append(bad, src.name+": "+c)
				continue
			}
			ranges = append(ranges, p.Masked())
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
func outsideRanges(ranges []netip.Prefix, ip netip.Addr) string {
	ip = ip.Unmap()
	why := "outside"
	for _, r := range ranges {
		switch {
		case allocatable(r, ip):
			return ""
		case ip == r.Addr() && r.Contains(ip):
			why = "the network address of " + r.String()
		case r.Contains(ip):
			why = "the broadcast address of " + r.String()
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

// rangesText describes the sources for a message:
// "kubernetes: 10.96.0.0/16, fd00::/108; extra (being deleted): ...".
func rangesText(srcs []rangeSource) string {
	parts := make([]string, 0, len(srcs))
	for _, src := range srcs {
		name := src.name
		if src.deleting {
			name += " (being deleted)"
		}
		cidrs := strings.Join(src.cidrs, ", ")
		if cidrs == "" {
			cidrs = "no range"
		}
		parts = append(parts, name+": "+cidrs)
	}
	return strings.Join(parts, "; ")
}

func runClusterIPOutsideServiceCIDR(p *Pass) {
	srcs := serviceCIDRSources(p.Snap.Objects.ServiceCIDRs)
	none, fromFlag := "no ServiceCIDR allocates", false
	if len(srcs) == 0 {
		src, why := apiserverServiceRange(p.Snap)
		if src == nil {
			p.Skip(why)
			return
		}
		srcs, none, fromFlag = []rangeSource{*src}, "the API server's range does not allocate", true
	}
	ranges, bad := serviceRanges(srcs)
	for _, b := range bad {
		p.Note("%s is not a range: left out", b)
	}
	hasFamily := map[model.Family]bool{}
	for _, r := range ranges {
		hasFamily[model.FamilyOf(r.Addr())] = true
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
	for _, src := range srcs {
		f.Evidence = append(f.Evidence, src.ev)
	}
	ranged := rangesText(srcs)
	for _, fam := range []model.Family{model.IPv4, model.IPv6} {
		if noRange[fam] {
			ranged += fmt.Sprintf("; no %s range", fam)
		}
	}
	ranged = "(" + ranged + ")"
	if len(services) == 1 {
		f.Service = services[0]
		f.Message = fmt.Sprintf("Service %s has a cluster IP that %s %s: %s", services[0], none, ranged, strings.Join(first, ", "))
	} else {
		f.Message = fmt.Sprintf("%d Services have a cluster IP that %s %s: %s", len(services), none, ranged, listObjects(f.Objects))
	}
	restore := "Create a ServiceCIDR holding the range again"
	if fromFlag {
		restore = "Give kube-apiserver its old --service-cluster-ip-range back"
	}
	f.Advice = restore + " if it was dropped by mistake; otherwise recreate each Service " +
		"(without spec.clusterIP and spec.clusterIPs) so that it gets an address of a current range."
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
			"that they get an address of a current range: another network now uses the old one. Then recreate the others too."
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
				out = append(out, model.EvidenceAt(r.Pos(), r.Raw))
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

// apiserverContainer is a kube-apiserver container of a Pod of the inputs
// (an export of kube-system's Pods, or the static Pod manifest).
type apiserverContainer struct {
	pod     *kube.Pod
	cmdline *kpcmdline.Cmdline // command and arguments
	// image is the container's image.
	image string
}

// apiserverContainers returns the kube-apiserver containers of the Pods
// of kube-system (named kube-apiserver, or running it): those of other
// namespaces serve other clusters (hosted control planes, virtual
// clusters).
func apiserverContainers(objs *kube.Objects) []apiserverContainer {
	var out []apiserverContainer
	for _, pod := range objs.Pods {
		if pod.Namespace != "kube-system" {
			continue
		}
		for _, c := range pod.Spec.Containers {
			args := append(append([]string{}, c.Command...), c.Args...)
			if c.Name == "kube-apiserver" || len(args) > 0 && path.Base(args[0]) == "kube-apiserver" {
				cl, err := kpcmdline.FromArgv(pod.Pos.File, args)
				if err != nil {
					continue // an empty or oversized command line says nothing
				}
				out = append(out, apiserverContainer{pod: pod, cmdline: cl, image: c.Image})
			}
		}
	}
	return out
}

// apiserverServiceRange returns, when the inputs hold no ServiceCIDR
// object, the range of the kube-apiserver's --service-cluster-ip-range
// if it is the only one cluster IPs are allocated from: the API server is
// older than 1.33 (its image says so) and does not enable the
// MultiCIDRServiceAllocator feature gate (beta and off by default in 1.31
// and 1.32, alpha before), which serves ServiceCIDR objects. Otherwise it
// returns why the check cannot run.
func apiserverServiceRange(s *model.Snapshot) (*rangeSource, string) {
	cs := apiserverContainers(s.Objects)
	if len(cs) == 0 {
		return nil, noServiceCIDRs(s)
	}
	add := " (add the output of kubectl get servicecidrs -o yaml)"
	var src *rangeSource
	for _, c := range cs {
		name := "kube-apiserver Pod " + c.pod.Namespace + "/" + c.pod.Name
		v, ok := kpversion.FromImage(c.image)
		switch {
		case !ok:
			return nil, fmt.Sprintf("no ServiceCIDR objects in the inputs, and the version of the %s is not known from its image %q%s", name, c.image, add)
		case v.AtLeast(1, 33):
			return nil, fmt.Sprintf("no ServiceCIDR objects in the inputs, and the %s is %s: from 1.33 the ServiceCIDR objects, not its --service-cluster-ip-range alone, hold the ranges%s", name, v.MinorString(), add)
		}
		if val, _ := c.cmdline.Flag("feature-gates"); multiCIDR(val) {
			return nil, fmt.Sprintf("no ServiceCIDR objects in the inputs, and the %s enables MultiCIDRServiceAllocator: ServiceCIDR objects may hold ranges besides its --service-cluster-ip-range%s", name, add)
		}
		val, ok := c.cmdline.Flag("service-cluster-ip-range")
		if !ok || val == "" {
			return nil, fmt.Sprintf("no ServiceCIDR objects in the inputs, and the %s sets no --service-cluster-ip-range%s", name, add)
		}
		if src != nil && strings.Join(src.cidrs, ",") != val {
			return nil, fmt.Sprintf("no ServiceCIDR objects in the inputs, and the kube-apiserver Pods disagree on --service-cluster-ip-range (%s, %s)%s", strings.Join(src.cidrs, ","), val, add)
		}
		if src == nil {
			src = &rangeSource{name: "kube-apiserver --service-cluster-ip-range", cidrs: strings.Split(val, ","),
				ev: model.EvidenceAt(c.pod.Pos, fmt.Sprintf("%s (%s): --service-cluster-ip-range=%s", name, c.image, val))}
		}
	}
	return src, ""
}

// noServiceCIDRs says why the inputs hold no range at all, from the
// bundle's manifest when it records the ServiceCIDRs' collection.
func noServiceCIDRs(s *model.Snapshot) string {
	if s.Manifest != nil {
		if src := s.Manifest.Source("cluster-servicecidrs"); src != nil {
			pods := "; add the kube-apiserver Pod (kubectl -n kube-system get pods -l component=kube-apiserver -o yaml) for its --service-cluster-ip-range"
			switch {
			case src.Status == manifest.StatusSkipped:
				return "no ServiceCIDR objects in the inputs: the bundle's manifest records that the API server serves none (" + src.Error + ")" + pods
			case (src.Status == manifest.StatusOK || src.Status == manifest.StatusPartial) && src.Bytes == 0:
				return "no ServiceCIDR objects in the inputs: the bundle's cluster-servicecidrs source listed none" + pods
			case src.Status == manifest.StatusFailed:
				return "no ServiceCIDR objects in the inputs: the bundle's cluster-servicecidrs source failed (" + src.Error +
					"); add the output of kubectl get servicecidrs -o yaml"
			}
		}
	}
	return needHints[NeedServiceCIDRs]
}

// multiCIDR reports whether a --feature-gates value enables
// MultiCIDRServiceAllocator (the last setting wins, as in pflag).
func multiCIDR(gates string) bool {
	m, err := kpconfig.ParseGates(gates)
	return err == nil && m["MultiCIDRServiceAllocator"]
}
