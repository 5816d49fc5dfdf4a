package checks

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/parsers/ipaddr"
	"github.com/proxyscan/proxyscan/parsers/paste"
)

// Conntrack table fill levels: at 90% of nf_conntrack_max the table is as
// good as full (new flows are dropped once it is), at 75% it needs room.
const (
	conntrackFull = 0.9
	conntrackHigh = 0.75
)

// bridgeNames are the usual names of the Linux bridge of bridge-based CNI
// plugins (bridge/flannel cni0, kubenet cbr0, docker0, kube-router).
var bridgeNames = []string{"cni0", "cbr0", "docker0", "kube-bridge"}

var sysctlUnsafe = &Check{
	ID:       "sysctl-unsafe",
	Severity: Error,
	Title:    "a kernel setting breaks or weakens Service traffic",
	What: "A sysctl of the node works against kube-proxy: `net.ipv4.ip_forward` 0 (nothing is forwarded to pods on " +
		"other nodes); `net.bridge.bridge-nf-call-iptables` 0 with a bridge CNI (pod-to-pod traffic over the bridge " +
		"skips iptables, so Service DNAT and its reverse are missed); the conntrack table near `nf_conntrack_max` " +
		"(new flows are dropped when it is full); in IPVS mode `net.ipv4.vs.conntrack` 0 (IPVS connections escape " +
		"netfilter, so masquerading fails) or `vs.expire_nodest_conn` 0; `route_localnet` 1 in iptables mode with " +
		"`localhostNodePorts` and no `nodePortAddresses` (node ports answer on 127.0.0.1, the CVE-2020-8558 class) when " +
		"the dump lacks the KUBE-FIREWALL rule that blocks incoming localnet connections; " +
		"`conntrack.tcpBeLiberal` configured but `nf_conntrack_tcp_be_liberal` still 0; and `ipvs.strictARP` off " +
		"while load balancer IPs sit on kube-ipvs0 in a subnet of the node (or MetalLB runs), with `arp_ignore` 0 " +
		"the node answers ARP for every one of them. A listing filtered on its way into the inputs (`sysctl -a | " +
		"grep ip_forward`) is judged on what it shows: the keys it does not show are noted as not checked.",
	Why: "These settings are outside kube-proxy's rules, so the rules look right while traffic fails: timeouts " +
		"through node ports, connections reset under load, pods that reach a Service only from some nodes, or load " +
		"balancer IPs announced by the wrong node.",
	Fix: "Set the value on the node (`sysctl -w KEY=VALUE` and a file in /etc/sysctl.d so that it survives reboots), " +
		"or let kube-proxy set it: it needs a writable /proc/sys (a privileged container) for ip_forward, " +
		"vs.conntrack, the conntrack limits and, with strictARP, arp_ignore and arp_announce. Raise " +
		"`conntrack.maxPerCore`/`conntrack.min` or nf_conntrack_max for a full table.",
	Run: runSysctlUnsafe,
}

// sysctlsUnchecked begins the note of the kernel settings sysctl-unsafe
// reads that a filtered sysctl listing does not show (they may be set on
// the node): coverage turns it into a gap.
const sysctlsUnchecked = "not checked, as the sysctl listing is filtered: "

// wholeSysctlsNeed is how to get the node's kernel settings when the
// listing given is filtered.
var wholeSysctlsNeed = InputNeed{"the node's kernel settings, unfiltered",
	"sysctl -a > sysctl.txt (on the node)"}

func runSysctlUnsafe(p *Pass) {
	s := p.Snap
	l := s.Sysctls
	if l == nil {
		p.Skip("no sysctl listing in the inputs (add sysctl -a, or the keys kube-proxy reads)")
		return
	}
	mode, _ := p.Mode()
	// The keys read that the listing does not show: a listing filtered
	// on its way into the inputs may lack them only there.
	var unseen []string
	defer func() {
		if len(unseen) > 0 {
			p.Note("%s%s is partial (filtered by `%s` on the command line above it), and does not show %s", sysctlsUnchecked, l.File, l.Filter, strings.Join(unseen, ", "))
		}
	}()
	get := func(key string) (int64, model.Evidence, bool) {
		e, ok := l.Get(key)
		if !ok {
			// A filter that keeps the key's line (grep net.ipv4) proves it
			// absent.
			if l.Filter != "" && !paste.FilterKeeps(l.Filter, key) && !slices.Contains(unseen, key) {
				unseen = append(unseen, key)
			}
			return 0, model.Evidence{}, false
		}
		n, err := strconv.ParseInt(strings.TrimSpace(e.Value), 10, 64)
		return n, model.EvidenceAt(e.Pos, e.Raw), err == nil
	}
	report := func(sev Severity, msg, advice string, ev ...model.Evidence) {
		p.Report(Finding{Severity: sev, Message: msg, Evidence: ev, Advice: advice})
	}
	if v, ev, ok := get("net.ipv4.ip_forward"); ok && v == 0 {
		report(Error, "net.ipv4.ip_forward is 0: the node does not forward Service traffic to endpoints on other nodes or pods",
			"Set net.ipv4.ip_forward = 1 (kube-proxy's ipvs mode sets it itself when /proc/sys is writable).", ev)
	}
	if v, ev, ok := get("net.bridge.bridge-nf-call-iptables"); ok && v == 0 {
		if br := bridgeInterface(s.Addrs); br != nil {
			report(Error, fmt.Sprintf("net.bridge.bridge-nf-call-iptables is 0 while pods sit on bridge %s: traffic between pods of the bridge skips iptables, so Service DNAT and its reply translation are missed", br.Name),
				"Load br_netfilter and set net.bridge.bridge-nf-call-iptables = 1 (and -ip6tables for IPv6).", ev, model.EvidenceAt(br.Pos, br.Raw))
		}
	}
	if maxv, mev, ok := get("net.netfilter.nf_conntrack_max"); ok && maxv > 0 {
		if count, cev, ok := get("net.netfilter.nf_conntrack_count"); ok {
			fill := float64(count) / float64(maxv)
			if fill >= conntrackHigh {
				sev := Warning
				if fill >= conntrackFull {
					sev = Error
				}
				msg := fmt.Sprintf("the conntrack table holds %d of %d entries (%.0f%%): new flows are dropped once it is full", count, maxv, 100*fill)
				ev := []model.Evidence{cev, mev}
				if c := s.Config; c != nil && c.Conntrack.MaxPerCore != nil && *c.Conntrack.MaxPerCore == 0 {
					msg += "; conntrack.maxPerCore is 0, so kube-proxy leaves nf_conntrack_max as it is"
					ev = append(ev, configEvidence(c, "conntrack.maxPerCore"))
				}
				report(sev, msg, "Raise conntrack.maxPerCore or conntrack.min (kube-proxy sets nf_conntrack_max from them at start-up), or nf_conntrack_max on the node; look for what opens so many flows.", ev...)
			}
		}
	}
	if mode == model.ModeIPVS {
		if v, ev, ok := get("net.ipv4.vs.conntrack"); ok && v == 0 {
			report(Error, "net.ipv4.vs.conntrack is 0 in IPVS mode: IPVS connections are not tracked by netfilter, so kube-proxy's masquerade rules do not apply to them (node ports and hairpin traffic fail)",
				"Set net.ipv4.vs.conntrack = 1; kube-proxy sets it at start-up when /proc/sys is writable.", ev)
		}
		if v, ev, ok := get("net.ipv4.vs.expire_nodest_conn"); ok && v == 0 {
			report(Warning, "net.ipv4.vs.expire_nodest_conn is 0 in IPVS mode: connections to deleted real servers are kept and their packets dropped instead of reset",
				"Set net.ipv4.vs.expire_nodest_conn = 1, as kube-proxy does at start-up.", ev)
		}
		checkStrictARP(p, get)
	}
	if c := s.Config; c != nil {
		if mode == model.ModeIPTables && len(c.NodePortAddresses) == 0 && c.IPTables.LocalhostNodePorts != nil && *c.IPTables.LocalhostNodePorts && hasNodePorts(s) {
			if v, ev, ok := get("net.ipv4.conf.all.route_localnet"); ok && v == 1 && !localnetBlocked(p) {
				report(Warning, "net.ipv4.conf.all.route_localnet is 1 because iptables.localhostNodePorts is on and nodePortAddresses is empty: node ports answer on 127.0.0.1, and hosts of the node's subnet can reach them through it (CVE-2020-8558 class)",
					"Set iptables.localhostNodePorts: false (kube-proxy then leaves route_localnet alone) or restrict nodePortAddresses, and reset route_localnet to 0.",
					ev, configEvidence(c, "iptables.localhostNodePorts"), configEvidence(c, "nodePortAddresses"))
			}
		}
		if c.Conntrack.TCPBeLiberal && p.Resolution().Has(resolve.ConntrackTCPBeLiberal) {
			if v, ev, ok := get("net.netfilter.nf_conntrack_tcp_be_liberal"); ok && v == 0 {
				report(Warning, "conntrack.tcpBeLiberal is true but net.netfilter.nf_conntrack_tcp_be_liberal is 0: kube-proxy could not set it, so out-of-window TCP packets are still marked INVALID",
					"Give kube-proxy a writable /proc/sys or set the sysctl on the node; in iptables mode kube-proxy keeps its INVALID drop rule while it is 0.",
					ev, configEvidence(c, "conntrack.tcpBeLiberal"))
			}
		}
	}
}

// localnetBlocked reports whether the node's IPv4 dump holds the mitigation
// kube-proxy (and kubelet) write with route_localnet: in filter
// KUBE-FIREWALL, jumped to from INPUT, a DROP of packets to 127.0.0.0/8
// from elsewhere that are not replies or DNATed ("block incoming localnet
// connections").
func localnetBlocked(p *Pass) bool {
	d := p.Resolution().IPTables(model.IPv4)
	if d == nil {
		return false
	}
	filter := d.Table("filter")
	if filter == nil {
		return false
	}
	fw, input := filter.Chain(kpnames.KubeletFirewall), filter.Chain("INPUT")
	if fw == nil || input == nil {
		return false
	}
	jumped := false
	for _, r := range input.Rules {
		jumped = jumped || r.Target() == kpnames.KubeletFirewall
	}
	if !jumped {
		return false
	}
	for _, r := range fw.Rules {
		dst, _ := r.Find("-d")
		src, _ := r.Find("-s")
		if r.Target() == "DROP" && dst.Value == "127.0.0.0/8" && !dst.Neg && src.Neg && src.Value == "127.0.0.0/8" {
			return true
		}
	}
	return false
}

// checkStrictARP reports load balancer IPs on kube-ipvs0 that the node
// answers ARP for: with arp_ignore 0 Linux answers for an address of any
// interface, so every node claims every such IP. It matters when an L2
// announcer (MetalLB) runs or the IP lies in a subnet of the node.
func checkStrictARP(p *Pass, get func(string) (int64, model.Evidence, bool)) {
	s := p.Snap
	c := s.Config
	if c == nil || s.Addrs == nil {
		return
	}
	ignore, iev, ok := get("net.ipv4.conf.all.arp_ignore")
	if !ok || ignore >= 1 {
		return
	}
	metallb := metalLB(s)
	var subnets []netip.Prefix
	for _, i := range s.Addrs.Interfaces {
		if i.Name == ipaddr.KubeIPVSInterface || i.IsLoopback() {
			continue
		}
		for _, a := range i.Addresses {
			subnets = append(subnets, a.Prefix().Masked())
		}
	}
	for _, a := range s.Addrs.KubeIPVSAddresses() {
		ip := a.Local.Unmap()
		sp := lbPort(s, ip)
		if sp == nil {
			continue
		}
		inSubnet := false
		for _, n := range subnets {
			if n.Contains(ip) && n.Bits() < n.Addr().BitLen() {
				inSubnet = true
			}
		}
		if !inSubnet && !metallb {
			continue
		}
		why := "it is in a subnet of the node"
		if !inSubnet {
			why = "MetalLB announces load balancer IPs in this cluster"
		}
		what := "ipvs.strictARP is off"
		if c.IPVS.StrictARP {
			what = "ipvs.strictARP is on but kube-proxy could not apply it"
		}
		p.Report(Finding{
			Severity: Warning,
			Message: fmt.Sprintf("%s and net.ipv4.conf.all.arp_ignore is 0: the node answers ARP for load balancer IP %s of %s on kube-ipvs0 (%s), so every node claims it",
				what, ip, sp.Name.Service(), why),
			Evidence: []model.Evidence{model.EvidenceAt(a.Pos, a.Raw), configEvidence(c, "ipvs.strictARP"), iev},
			Advice:   "Set ipvs.strictARP: true (kube-proxy then sets arp_ignore=1 and arp_announce=2) and restart kube-proxy, as MetalLB's L2 mode requires.",
		})
	}
}

// lbPort returns a service port whose load balancer VIP is ip.
func lbPort(s *model.Snapshot, ip netip.Addr) *model.ServicePort {
	for _, sp := range s.ActivePorts() {
		for _, a := range sp.LoadBalancerVIPs {
			if a == ip {
				return sp
			}
		}
	}
	return nil
}

// metalLB reports signs of MetalLB in the exports: a DaemonSet or Pod in a
// metallb namespace, or Services with MetalLB's annotations.
func metalLB(s *model.Snapshot) bool {
	for _, ds := range s.Objects.DaemonSets {
		if strings.Contains(ds.Namespace, "metallb") {
			return true
		}
	}
	for _, pod := range s.Objects.Pods {
		if strings.Contains(pod.Namespace, "metallb") {
			return true
		}
	}
	for _, svc := range s.Objects.Services {
		for k := range svc.Annotations {
			if strings.HasPrefix(k, "metallb.universe.tf/") || strings.HasPrefix(k, "metallb.io/") {
				return true
			}
		}
	}
	return false
}

// bridgeInterface returns the node's pod bridge, when it has one.
func bridgeInterface(d *ipaddr.Dump) *ipaddr.Interface {
	if d == nil {
		return nil
	}
	for _, n := range bridgeNames {
		if i := d.Interface(n); i != nil {
			return i
		}
	}
	for _, i := range d.Interfaces {
		for _, j := range d.Interfaces {
			if j.Master == i.Name && strings.HasPrefix(j.Name, "veth") {
				return i
			}
		}
	}
	return nil
}

func hasNodePorts(s *model.Snapshot) bool {
	for _, sp := range s.ActivePorts() {
		if sp.NodePort != 0 {
			return true
		}
	}
	return false
}
