package checks

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/google/nftables"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/analyzer/view"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/ipvs"
	"github.com/proxyscan/proxyscan/parsers/nft"
)

// The netfilter priority of the iptables nat table's PREROUTING and OUTPUT
// hooks (NF_IP_PRI_NAT_DST): x_tables registers them there, iptables-nft
// creates its nat base chains there.
const iptablesNATPriority = -100

// modeLeftovers describes the rules of proxy mode left that a node keeps
// next to those of mode current (the mode kube-proxy runs), when one of
// the two is nftables: iptables-mode chains next to
// the kube-proxy table, IPVS virtual servers on an nftables node, a
// kube-proxy table on an iptables or IPVS node. The finding says which
// rules take a packet first, from the hook priorities in the dumps: nft's
// nat chains and the iptables nat table both DNAT in the nat hooks, where
// the lower priority runs first and, at equal priority, the order in which
// they were registered decides (no dump shows it); the first DNAT wins.
// IPVS sees packets only at LOCAL_IN and LOCAL_OUT, after the nat hooks.
// ok is false when neither mode is nftables, when current is unknown
// (""), or when the snapshot holds no rules of one of them. mode-mismatch
// reports what it returns.
func modeLeftovers(r *resolve.Resolution, current, left string) (f Finding, ok bool) {
	s := r.Snap
	if left == current || current == "" || current != model.ModeNFTables && left != model.ModeNFTables {
		return Finding{}, false
	}
	nf := nftSideOf(r)
	if nf == nil {
		return Finding{}, false
	}
	other := current
	if left != model.ModeNFTables {
		other = left
	}
	var o *leftSide
	switch other {
	case model.ModeIPTables:
		o = iptSideOf(r)
	case model.ModeIPVS:
		o = ipvsSideOf(s)
	}
	if o == nil {
		return Finding{}, false
	}
	cur, old := nf, o
	if left == model.ModeNFTables {
		cur, old = o, nf
	}
	both, onlyOld := 0, 0
	var example []model.Evidence
	for _, k := range old.order {
		c, ok := cur.dests[k]
		if ip, proto, port := splitDest(k); !ok {
			switch {
			case old.mode == model.ModeIPVS:
				// A virtual server of a node address: a node port of nftables.
				c, ok = cur.dests[nodePortKey(proto, port)]
			case cur.mode == model.ModeIPVS && ip == "node":
				c, ok = cur.byPort[proto+" "+port]
			}
		}
		if !ok && (old.mode == model.ModeIPVS || cur.mode == model.ModeIPVS) {
			// nftables rejects or drops it in its input filter, which runs
			// before IPVS's LOCAL_IN hook.
			if b, isBlocked := nf.blocked[k]; isBlocked {
				c, ok = b, true
			}
		}
		if ok {
			both++
			if example == nil {
				example = []model.Evidence{old.dests[k], c}
			}
		} else {
			onlyOld++
		}
	}
	// The leftovers are an error when they can take traffic the current
	// rules program (they win, or the order is undefined), a warning when
	// the current rules win and the leftovers only hold other addresses.
	sev := Warning
	if both > 0 && leftoversMayWin(nf, o, old) {
		sev = Error
	}
	f = Finding{
		Severity: sev,
		Advice: "Remove the " + old.mode + "-mode leftovers (" + old.cleanup + ") and restart kube-proxy; until then " +
			"traffic to the Services both program can take the stale rules.",
	}
	f.Message = fmt.Sprintf("%s-mode rules are left on this %s-mode node (%s): %s", old.mode, cur.mode, old.summary, precedence(nf, o, both, onlyOld, old))
	f.Evidence = append(append(append([]model.Evidence{}, old.evidence...), cur.evidence...), example...)
	return f, true
}

// leftSide is what one mode programs, for comparing two modes.
type leftSide struct {
	mode    string
	summary string
	cleanup string
	// dests holds the destinations the mode DNATs ("ip proto port") with
	// the evidence of the rule, element or virtual server; order lists them
	// in the order found.
	dests map[string]model.Evidence
	order []string
	// byPort indexes the IPVS virtual servers by "proto port" (a node port
	// has one per node address).
	byPort map[string]model.Evidence
	// blocked holds the destinations nftables rejects or drops (no
	// endpoints).
	blocked map[string]model.Evidence
	// prio holds the priority of the mode's nat prerouting and output
	// chains (iptables, nftables), with their evidence.
	prio     map[string]*nft.Priority
	evidence []model.Evidence
}

// add records a destination; an invalid ip stands for a node port.
func (l *leftSide) add(ip netip.Addr, proto string, port int32, ev model.Evidence) {
	k := nodePortKey(proto, strconv.Itoa(int(port)))
	if ip.IsValid() {
		k = ip.String() + " " + proto + " " + strconv.Itoa(int(port))
	}
	if _, ok := l.dests[k]; !ok {
		l.dests[k] = ev
		l.order = append(l.order, k)
	}
}

// nftSideOf reads kube-proxy's nftables tables.
func nftSideOf(r *resolve.Resolution) *leftSide {
	s := r.Snap
	if r.NFT() == nil {
		return nil
	}
	l := &leftSide{mode: model.ModeNFTables, dests: map[string]model.Evidence{}, prio: map[string]*nft.Priority{}, blocked: map[string]model.Evidence{},
		cleanup: "`nft delete table ip kube-proxy` and `nft delete table ip6 kube-proxy`, or kube-proxy --cleanup run in nftables mode"}
	attr := view.NewAttribution(s.Ports)
	var tables []string
	elements := 0
	for _, fam := range []model.Family{model.IPv4, model.IPv6} {
		t := r.NFTTable(fam)
		if t == nil {
			continue
		}
		tables = append(tables, "table "+nft.FamilyName(t.Family)+" kube-proxy")
		for _, c := range t.Chains {
			if c.Type == nftables.ChainTypeNAT && (c.Hook == "prerouting" || c.Hook == "output") && c.Priority != nil {
				if _, ok := l.prio[c.Hook]; !ok {
					l.prio[c.Hook] = c.Priority
					if c.Hook == "prerouting" {
						l.evidence = append(l.evidence, view.NFTChainEvidence(c))
					}
				}
			}
		}
		v := view.FromNFT(t, attr)
		for _, e := range v.Entries {
			if e.Action == view.Reject || e.Action == view.Drop {
				if e.Kind != view.NodePort {
					l.blocked[e.IP.String()+" "+e.Protocol+" "+strconv.Itoa(int(e.Port))] = e.Evidence[0]
				}
				continue
			}
			if e.Action != view.Forward || !e.Routed {
				continue
			}
			if e.Kind != view.NodePort {
				elements++
			}
			l.add(e.IP, e.Protocol, e.Port, e.Evidence[0])
		}
	}
	if len(l.evidence) == 0 {
		for _, fam := range []model.Family{model.IPv4, model.IPv6} {
			if t := r.NFTTable(fam); t != nil {
				l.evidence = append(l.evidence, model.EvidenceAt(t.Pos, "table "+nft.FamilyName(t.Family)+" kube-proxy"))
				break
			}
		}
	}
	l.summary = fmt.Sprintf("%s, %d service-ips elements", strings.Join(tables, " and "), elements)
	return l
}

// iptSideOf reads the iptables-mode rules: the iptables-save dumps, else
// the iptables-nft tables of the nft listing.
func iptSideOf(r *resolve.Resolution) *leftSide {
	s := r.Snap
	l := &leftSide{mode: model.ModeIPTables, dests: map[string]model.Evidence{}, prio: map[string]*nft.Priority{},
		cleanup: "kube-proxy --cleanup run in iptables mode, with the iptables backend that holds them"}
	attr := view.NewAttribution(s.Ports)
	chains, rules := 0, 0
	legacy := false
	for _, fam := range []model.Family{model.IPv4, model.IPv6} {
		d := r.IPTablesOf(model.ModeIPTables, fam)
		if d == nil || !resolve.IsIPTablesMode(d) {
			continue
		}
		legacy = legacy || d.Backend == iptables.BackendLegacy
		if c := d.Chain("nat", kpnames.KubeServices); c != nil && len(l.evidence) == 0 {
			l.evidence = append(l.evidence, model.ChainEvidence(c))
		}
		for _, c := range d.Table("nat").Chains {
			if strings.HasPrefix(c.Name, kpnames.ChainSVC) || strings.HasPrefix(c.Name, kpnames.ChainSEP) {
				chains++
			}
		}
		v := view.FromIPTables(d, attr)
		for _, e := range v.Entries {
			if e.Action != view.Forward || !e.Routed {
				continue
			}
			if e.Kind != view.NodePort {
				rules++
			}
			l.add(e.IP, e.Protocol, e.Port, e.Evidence[0])
		}
	}
	// The iptables-nft tables as nft lists them: the priority of their nat
	// base chains, and their service rules when no iptables-save was read.
	for _, rs := range s.NFT {
		for _, t := range rs.Tables {
			if t.Name != "nat" || t.Family != nftables.TableFamilyIPv4 && t.Family != nftables.TableFamilyIPv6 || !resolve.NFTHasIPTablesMode(t) {
				continue
			}
			for _, c := range t.Chains {
				if c.Type == nftables.ChainTypeNAT && (c.Hook == "prerouting" || c.Hook == "output") && c.Priority != nil {
					if _, ok := l.prio[c.Hook]; !ok {
						l.prio[c.Hook] = c.Priority
						if c.Hook == "prerouting" {
							l.evidence = append(l.evidence, view.NFTChainEvidence(c))
						}
					}
				}
			}
			if len(l.order) > 0 {
				continue
			}
			for _, c := range t.Chains {
				if strings.HasPrefix(c.Name, kpnames.ChainSVC) || strings.HasPrefix(c.Name, kpnames.ChainSEP) {
					chains++
				}
			}
			if c := t.Chain(kpnames.KubeServices); c != nil {
				for _, r := range c.Rules {
					if ip, proto, port, ok := nftRuleDest(r); ok {
						rules++
						l.add(ip, proto, port, view.NFTRuleEvidence(r))
					}
				}
			}
		}
	}
	if chains == 0 && rules == 0 {
		return nil
	}
	if len(l.prio) == 0 {
		// x_tables (iptables-legacy), or an iptables-nft table nft was not
		// asked to list: the nat table's fixed priority.
		for _, h := range []string{"prerouting", "output"} {
			l.prio[h] = &nft.Priority{Value: iptablesNATPriority, Text: "dstnat"}
		}
		if legacy {
			l.summary = "iptables-legacy, "
		}
	}
	l.summary += fmt.Sprintf("%d KUBE-SVC/KUBE-SEP chains, %d service rules in nat KUBE-SERVICES", chains, rules)
	return l
}

// nftRuleDest reads the destination of a KUBE-SERVICES rule as nft lists
// iptables-nft rules: `... ip daddr 10.96.0.1 tcp dport 443 ... jump KUBE-SVC-...`.
func nftRuleDest(r *nft.Rule) (netip.Addr, string, int32, bool) {
	var ip netip.Addr
	proto, port := "", int32(0)
	for _, s := range r.Stmts {
		m, ok := s.(*nft.Match)
		if !ok || m.Op != nft.OpEq {
			continue
		}
		p, ok1 := m.Left.(*nft.Payload)
		v, ok2 := m.Right.(*nft.Value)
		if !ok1 || !ok2 {
			continue
		}
		switch {
		case (p.Proto == "ip" || p.Proto == "ip6") && p.Field == "daddr":
			if a, err := netip.ParseAddr(v.Text); err == nil {
				ip = a.Unmap()
			}
		case (p.Proto == "tcp" || p.Proto == "udp" || p.Proto == "sctp") && p.Field == "dport":
			if n, err := strconv.ParseUint(v.Text, 10, 16); err == nil {
				proto, port = p.Proto, int32(n)
			}
		}
	}
	return ip, proto, port, ip.IsValid() && proto != ""
}

// ipvsSideOf reads the IPVS virtual servers.
func ipvsSideOf(s *model.Snapshot) *leftSide {
	var d *ipvs.Dump
	for _, x := range s.IPVS {
		if d == nil || len(x.Services) > len(d.Services) {
			d = x
		}
	}
	if d == nil || len(d.Services) == 0 {
		return nil
	}
	l := &leftSide{mode: model.ModeIPVS, dests: map[string]model.Evidence{}, byPort: map[string]model.Evidence{},
		cleanup: "kube-proxy --cleanup run in ipvs mode, or `ipvsadm -C` and deleting kube-ipvs0"}
	l.evidence = append(l.evidence, model.EvidenceAt(d.Services[0].Pos, d.Services[0].Raw))
	for _, vs := range d.Services {
		ip, ok := netip.AddrFromSlice(vs.Address)
		proto := map[uint16]string{ipvs.ProtoTCP: "tcp", ipvs.ProtoUDP: "udp", ipvs.ProtoSCTP: "sctp"}[vs.Protocol]
		if !ok || proto == "" {
			continue
		}
		ev := model.EvidenceAt(vs.Pos, vs.Raw)
		l.add(ip.Unmap(), proto, int32(vs.Port), ev)
		if k := proto + " " + strconv.Itoa(int(vs.Port)); l.byPort[k] == (model.Evidence{}) {
			l.byPort[k] = ev
		}
	}
	bound := 0
	if s.Addrs != nil {
		bound = len(s.Addrs.KubeIPVSAddresses())
	}
	l.summary = fmt.Sprintf("%d virtual servers, %d kube-ipvs0 addresses", len(d.Services), bound)
	return l
}

// precedence explains which mode's rules take a packet first.
func precedence(nf, o *leftSide, both, onlyOld int, old *leftSide) string {
	var b strings.Builder
	if o.mode == model.ModeIPVS {
		fmt.Fprintf(&b, "IPVS takes packets only at LOCAL_IN and LOCAL_OUT, after the nat hooks where kube-proxy's nft chains DNAT "+
			"(nat-prerouting priority %s), so the nftables rules win for the %d destinations both program", prioText(nf.prio["prerouting"]), both)
		if old == o && onlyOld > 0 {
			fmt.Fprintf(&b, "; the %d virtual servers of other destinations still answer traffic to them while the node accepts it (addresses left on kube-ipvs0)", onlyOld)
		}
		if old == nf && onlyOld > 0 {
			fmt.Fprintf(&b, "; the leftover table also DNATs %d destinations IPVS does not serve", onlyOld)
		}
		if old == nf {
			b.WriteString(": its stale endpoints win over the virtual servers kube-proxy maintains")
		}
		return b.String()
	}
	rel := func(hook string) int { // 0 equal, -1 nftables first, 1 iptables first, 2 unknown
		pn, pi := nf.prio[hook], o.prio[hook]
		switch {
		case pn == nil || pi == nil:
			return 2
		case pn.Value == pi.Value:
			return 0
		case pn.Value < pi.Value:
			return -1
		}
		return 1
	}
	pre, out := rel("prerouting"), rel("output")
	prios := func(l *leftSide) string {
		return "prerouting " + prioText(l.prio["prerouting"]) + ", output " + prioText(l.prio["output"])
	}
	switch {
	case pre == 0 && (out == 0 || out == 2):
		fmt.Fprintf(&b, "kube-proxy's nat chains and iptables' nat PREROUTING and OUTPUT hook at the same priorities (%s), "+
			"and the kernel runs chains of equal priority in the order they were registered, which no dump shows: the first DNAT wins, "+
			"so for the %d destinations both program the outcome is undefined", prios(nf), both)
	case pre == -1 || pre == 1:
		first, second, winner := "kube-proxy's nat chains ("+prios(nf)+")", "iptables' nat PREROUTING and OUTPUT ("+prios(o)+")", "nftables"
		if pre == 1 {
			first, second, winner = second, first, "iptables"
		}
		fmt.Fprintf(&b, "%s run before %s: the first DNAT wins, so the %s rules take the %d destinations both program", first, second, winner, both)
		if out != pre && out != 2 {
			b.WriteString(" (the output hooks are ordered otherwise: locally generated traffic may go the other way)")
		}
	default:
		fmt.Fprintf(&b, "the order of the nat hooks is unknown: for the %d destinations both program the first DNAT wins", both)
	}
	if onlyOld > 0 {
		fmt.Fprintf(&b, ", and the %d destinations only the leftovers program are still DNATed by them", onlyOld)
	}
	return b.String()
}

// leftoversMayWin reports whether the rules of old can take a packet that
// the rules of the other mode also program: the nat hooks of both hook at
// the same priority, or old's first; against IPVS, nftables always runs
// first.
func leftoversMayWin(nf, o, old *leftSide) bool {
	if o.mode == model.ModeIPVS {
		return old == nf
	}
	pn, pi := nf.prio["prerouting"], o.prio["prerouting"]
	if pn == nil || pi == nil || pn.Value == pi.Value {
		return true
	}
	return (pn.Value < pi.Value) == (old == nf)
}

func nodePortKey(proto, port string) string { return "node " + proto + " " + port }

func splitDest(k string) (ip, proto, port string) {
	f := strings.Fields(k)
	if len(f) != 3 {
		return "", "", ""
	}
	return f[0], f[1], f[2]
}

func prioText(p *nft.Priority) string {
	if p == nil {
		return "unknown"
	}
	n := strconv.Itoa(int(p.Value))
	if p.Text == n {
		return n
	}
	return p.Text + " (" + n + ")"
}
