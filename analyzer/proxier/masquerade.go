package proxier

import (
	"fmt"
	"math/bits"
	"net/netip"
	"strconv"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/nft"
)

// A LocalTraffic is how kube-proxy tells traffic from the cluster's pods
// apart from other traffic (its local-traffic detector,
// pkg/proxy/util/localdetector.go): by source CIDR (detectLocalMode
// ClusterCIDR and NodeCIDR), by input interface (BridgeInterface, and
// InterfaceNamePrefix, whose Interface ends with "+"), or not at all
// (the no-op detector: both zero).
type LocalTraffic struct {
	CIDR      netip.Prefix
	Interface string
}

// Implemented reports whether the detector tells pod traffic apart.
func (l LocalTraffic) Implemented() bool { return l.CIDR.IsValid() || l.Interface != "" }

// String says what the detector matches: "source 10.244.0.0/16",
// "input interface veth+", "no local-traffic detector".
func (l LocalTraffic) String() string {
	switch {
	case l.CIDR.IsValid():
		return "source " + l.CIDR.String()
	case l.Interface != "":
		return "input interface " + l.Interface
	}
	return "no local-traffic detector"
}

// MasqueradeSettings holds the settings of one family's proxier that decide which
// service traffic kube-proxy masquerades: masqueradeAll, the local-traffic
// detector (which ClusterIP traffic does not come from the cluster, and is
// masqueraded) and the mark bit of the packets to masquerade.
type MasqueradeSettings struct {
	All   bool
	Local LocalTraffic
	// Bit is the masquerade mark bit (masqueradeBit, 14 by default).
	Bit int32
}

// ConfiguredMasquerade returns the masquerade settings the resolved
// configuration gives the proxier of family fam in mode (iptables and IPVS
// mode read the iptables section, nftables mode the nftables one), as
// kube-proxy resolves them at start-up (getLocalDetectors; NodeCIDR takes
// the node's pod CIDR of the family).
func ConfiguredMasquerade(r *resolve.Resolution, mode string, fam model.Family) MasqueradeSettings {
	cfg := resolveConfig(r.Snap, r.Version.Version)
	in := &input{res: r, snap: r.Snap, cfg: cfg, podCIDRs: r.Snap.Node.PodCIDRs}
	m := MasqueradeSettings{All: cfg.IPTables.MasqueradeAll, Bit: 14}
	b := cfg.IPTables.MasqueradeBit
	if mode == model.ModeNFTables {
		m.All, b = cfg.NFTables.MasqueradeAll, cfg.NFTables.MasqueradeBit
	}
	if b != nil {
		m.Bit = *b
	}
	if d := newLocalDetector(in, fam); d.implemented() {
		switch d.ifLocal[0] {
		case "-s":
			m.Local.CIDR, _ = netip.ParsePrefix(d.ifLocal[1])
		default:
			m.Local.Interface = d.ifLocal[1]
		}
	}
	return m
}

// A MasqueradeForm is one way the captured rules masquerade ClusterIP
// traffic: masquerade all of it (All), that not matched by a local-traffic
// detector (Local), or, with neither, that of every source in IPVS mode's
// one rule (kube-proxy without a detector).
type MasqueradeForm struct {
	All   bool
	Local LocalTraffic
	// None marks the form of a data plane that has no ClusterIP masquerade
	// rule where kube-proxy would write one: beside each cluster IP entry
	// in iptables and nftables mode, which is their form without a
	// local-traffic detector and without masqueradeAll; for the members
	// of KUBE-CLUSTER-IP (every cluster IP with a virtual server) in IPVS
	// mode, which writes its rule with every configuration ("src,dst"
	// without a detector), so that no configuration gives this form there.
	// Rule and Pos are then a cluster IP entry's, Count how many entries
	// it has. ShownMasquerade does not return it: only a whole data plane
	// shows it, which the checks tell (a dump cut short or grepped may
	// hold the rule out of sight).
	None bool
	// Rule is the first rule of the form, at Pos; Count how many rules
	// have it.
	Rule  string
	Pos   parsers.Pos
	Count int
}

// MasqueradeShown is what a captured data plane of one family shows of
// the masquerade settings kube-proxy runs with.
type MasqueradeShown struct {
	// Forms are the forms of the ClusterIP masquerade rules, in the order
	// of their first rule; none when the rules have no such rule (no
	// ClusterIP with endpoints, or no detector in iptables and nftables
	// mode, which then write no rule).
	Forms []MasqueradeForm
	// Bit is the mark bit the first mark-for-masquerade rule sets (iptables
	// and IPVS mode) or the masquerading rule tests (nftables mode), -1
	// when no such rule holds one mark bit; MarkRule is that rule, at
	// MarkPos. Bits are the bits of every such rule: kubelet (up to 1.27)
	// writes its own MARK rule to KUBE-MARK-MASQ, with its own bit.
	Bit      int32
	Bits     []int32
	MarkRule string
	MarkPos  parsers.Pos
}

// ShownMasquerade reads the masquerade settings kube-proxy runs with from
// the data plane of family fam captured in mode: the local-traffic
// detector and masqueradeAll from the ClusterIP masquerade rules
// (iptables mode's "cluster IP" KUBE-MARK-MASQ rules, IPVS mode's
// KUBE-CLUSTER-IP rule, nftables mode's ClusterIP rules that mark for
// masquerade), the mark bit from KUBE-MARK-MASQ or the masquerading chain.
// ok is false when the inputs hold no such data plane.
func ShownMasquerade(r *resolve.Resolution, mode string, fam model.Family) (shown MasqueradeShown, ok bool) {
	shown.Bit = -1
	if mode == model.ModeNFTables {
		t := r.NFTTable(fam)
		if t == nil {
			return shown, false
		}
		shownNFT(t, fam, &shown)
		return shown, true
	}
	d := r.IPTablesOf(mode, fam)
	if d == nil {
		return shown, false
	}
	nat := d.Table("nat")
	if nat == nil {
		return shown, false
	}
	for _, c := range nat.Chains {
		for _, rule := range c.Rules {
			if rule.Target() != kpnames.KubeMarkMasq {
				continue
			}
			if f, ok := ipvsClusterIPForm(rule, mode); ok {
				shown.add(f, rule.Raw, rule.Pos())
				continue
			}
			if mode == model.ModeIPTables && strings.HasSuffix(rule.Comment(), " cluster IP") && rule.Has("-d") {
				shown.add(MasqueradeForm{Local: iptablesNotLocal(rule), All: !iptablesNotLocal(rule).Implemented()}, rule.Raw, rule.Pos())
			}
		}
	}
	if c := nat.Chain(kpnames.KubeMarkMasq); c != nil {
		for _, rule := range c.Rules {
			if rule.Target() != "MARK" {
				continue
			}
			v := rule.Value("--set-xmark")
			if v == "" {
				v = rule.Value("--or-mark")
			}
			mark, _, _ := strings.Cut(v, "/")
			if b, ok := markBit(mark); ok {
				shown.mark(b, rule.Raw, rule.Pos())
			}
		}
	}
	return shown, true
}

// ipvsClusterIPForm reads IPVS mode's ClusterIP masquerade rule (writeIptablesRules):
// "-m set --match-set KUBE-CLUSTER-IP dst,dst ! -s CIDR" with a detector,
// "dst,dst" alone with masqueradeAll, "src,dst" without either.
func ipvsClusterIPForm(rule *iptables.Rule, mode string) (MasqueradeForm, bool) {
	if mode != model.ModeIPVS {
		return MasqueradeForm{}, false
	}
	set, flags, _ := strings.Cut(rule.Value("--match-set"), " ")
	if set != kpnames.SetName(kpnames.SetClusterIP, false) && set != kpnames.SetName(kpnames.SetClusterIP, true) {
		return MasqueradeForm{}, false
	}
	local := iptablesNotLocal(rule)
	return MasqueradeForm{Local: local, All: !local.Implemented() && flags == "dst,dst"}, true
}

// iptablesNotLocal reads the detector of a rule written with IfNotLocal:
// "! -s CIDR" or "! -i NAME".
func iptablesNotLocal(rule *iptables.Rule) LocalTraffic {
	if a, ok := rule.Find("-s"); ok && a.Neg {
		if p, err := netip.ParsePrefix(a.Value); err == nil {
			return LocalTraffic{CIDR: p.Masked()}
		}
		if ip, err := netip.ParseAddr(a.Value); err == nil {
			return LocalTraffic{CIDR: netip.PrefixFrom(ip, ip.BitLen())}
		}
	}
	if a, ok := rule.Find("-i"); ok && a.Neg {
		return LocalTraffic{Interface: a.Value}
	}
	return LocalTraffic{}
}

// shownNFT reads nftables mode's masquerade rules: the ClusterIP rules
// that mark for masquerade ("ip daddr CIP ... ip saddr != CIDR jump
// mark-for-masquerade" per service up to 1.35, "ip daddr @cluster-ips ip
// saddr != CIDR meta mark set meta mark | M" in chain services after) and
// the masquerading chain's test of the mark.
func shownNFT(t *nft.Table, fam model.Family, shown *MasqueradeShown) {
	ipX := "ip "
	if fam == model.IPv6 {
		ipX = "ip6 "
	}
	for _, c := range t.Chains {
		for _, rule := range c.Rules {
			raw := rule.Raw
			if !strings.HasPrefix(raw, ipX+"daddr ") || !(strings.Contains(raw, "jump "+nftMarkMasqChain) || strings.Contains(raw, "meta mark set meta mark | ")) {
				continue
			}
			local := nftNotLocal(raw, ipX)
			shown.add(MasqueradeForm{Local: local, All: !local.Implemented()}, raw, rule.Pos())
		}
	}
	if c := t.Chain(nftMasqueradingChain); c != nil {
		for _, rule := range c.Rules {
			_, rest, ok := strings.Cut(rule.Raw, "meta mark & ")
			if !ok {
				continue
			}
			mark, _, _ := strings.Cut(rest, " ")
			if b, ok := markBit(mark); ok {
				shown.mark(b, rule.Raw, rule.Pos())
			}
		}
	}
}

// nftNotLocal reads the IfNotLocalNFT words of an nft rule: "ip saddr !=
// CIDR" or `iifname != "NAME"` (a name ending in "*" is a prefix, spelt
// with "+" as iptables spells it).
func nftNotLocal(raw, ipX string) LocalTraffic {
	if _, rest, ok := strings.Cut(raw, ipX+"saddr != "); ok {
		word, _, _ := strings.Cut(rest, " ")
		if p, err := netip.ParsePrefix(word); err == nil {
			return LocalTraffic{CIDR: p.Masked()}
		}
		if ip, err := netip.ParseAddr(word); err == nil {
			return LocalTraffic{CIDR: netip.PrefixFrom(ip, ip.BitLen())}
		}
	}
	if _, rest, ok := strings.Cut(raw, "iifname != "); ok {
		word, _, _ := strings.Cut(rest, " ")
		if name, err := strconv.Unquote(word); err == nil {
			word = name
		}
		if pre, ok := strings.CutSuffix(word, "*"); ok {
			word = pre + "+"
		}
		return LocalTraffic{Interface: word}
	}
	return LocalTraffic{}
}

// add counts a rule of form f.
func (s *MasqueradeShown) add(f MasqueradeForm, raw string, pos parsers.Pos) {
	for i := range s.Forms {
		if s.Forms[i].All == f.All && s.Forms[i].Local == f.Local {
			s.Forms[i].Count++
			return
		}
	}
	f.Rule, f.Pos, f.Count = raw, pos, 1
	s.Forms = append(s.Forms, f)
}

// mark records the mark bit of a rule.
func (s *MasqueradeShown) mark(bit int32, raw string, pos parsers.Pos) {
	if s.Bit < 0 {
		s.Bit, s.MarkRule, s.MarkPos = bit, raw, pos
	}
	s.Bits = append(s.Bits, bit)
}

// markBit returns the bit of a mark that has exactly one ("0x4000",
// "0x00004000").
func markBit(s string) (int32, bool) {
	v, err := strconv.ParseUint(s, 0, 32)
	if err != nil || v == 0 || v&(v-1) != 0 {
		return 0, false
	}
	return int32(bits.TrailingZeros64(v)), true
}

// MarkText returns the mark of bit as kube-proxy writes it: "0x4000".
func MarkText(bit int32) string { return fmt.Sprintf("%#x", uint64(1)<<uint(bit)) }
