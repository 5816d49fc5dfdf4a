package proxier

import (
	"fmt"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
)

// A PlumbingRole is what one rule of kube-proxy's base plumbing does.
type PlumbingRole int

const (
	// HookJump: a chain of a netfilter hook (a built-in chain in iptables
	// and IPVS mode, a base chain in nftables mode) jumps to kube-proxy's
	// service dispatch.
	HookJump PlumbingRole = iota + 1
	// MasqueradeJump: the nat postrouting hook jumps to kube-proxy's
	// masquerading chain.
	MasqueradeJump
	// Masquerade: the rule that masquerades the packets marked for it.
	Masquerade
	// MarkMasq: the rule that marks a packet for masquerade.
	MarkMasq
)

// A PlumbingRule is one rule kube-proxy writes at every sync, whatever
// its Services, that the service rules rely on: the jumps from the hooks
// into its chains and the masquerade rules. The data plane keeps a rule
// when Chain of Table holds a rule whose Target is the one of this rule
// and that has no word Not.
type PlumbingRule struct {
	Role PlumbingRole
	// Table is "nat" or "filter" (iptables and IPVS mode); in nftables
	// mode the family's kube-proxy table holds every chain.
	Table string
	// Chain is the chain that holds the rule.
	Chain string
	// Target is the iptables target ("KUBE-SERVICES", "MASQUERADE",
	// "MARK"), or in nftables mode the words of the rule's statement
	// ("jump services", "masquerade", "meta mark set").
	Target string
	// Not is a word a rule with Target must not have to stand for this one
	// (the hairpin masquerade rules), "" when any does.
	Not string
	// Rule is the rule as kube-proxy writes it, in iptables-save's or
	// nft's spelling.
	Rule string
	// Forwards lists the packets that reach kube-proxy's service rules
	// only through this rule (a hook jump): without it they are never
	// sent to an endpoint.
	Forwards []model.Origin
	// Marks lists the packets that are marked for masquerade only through
	// this rule, when it does not forward them (IPVS mode's nat
	// PREROUTING jump: IPVS delivers the packets, the rules mark them).
	Marks []model.Origin
}

// Plumbing returns the rules of kube-proxy's base plumbing in the resolved
// mode and release, for family fam: the hook jumps
// (pkg/proxy/iptables/proxier.go iptablesJumpChains, pkg/proxy/ipvs
// iptablesJumpChain, pkg/proxy/nftables setupNFTables) and the masquerade
// rules (KUBE-POSTROUTING and KUBE-MARK-MASQ in iptables and IPVS mode,
// the same from 1.10; the masquerading and mark-for-masquerade chains in
// nftables mode). Only the nat rules that service traffic needs are listed:
// the filter jumps guard firewalls and rejects, whose loss other checks
// see. nil for a mode without iptables or nftables rules.
func Plumbing(r *resolve.Resolution, fam model.Family) []PlumbingRule {
	cfg := resolveConfig(r.Snap, r.Version.Version)
	switch r.Mode {
	case model.ModeIPTables, model.ModeIPVS:
		bit := int32(14)
		if b := cfg.IPTables.MasqueradeBit; b != nil {
			bit = *b
		}
		mark := fmt.Sprintf("%#x", 1<<uint(bit))
		prerouting := PlumbingRule{Role: HookJump, Table: "nat", Chain: "PREROUTING", Target: kpnames.KubeServices,
			Rule:     `-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES`,
			Forwards: []model.Origin{model.FromPod, model.FromExternal}}
		output := PlumbingRule{Role: HookJump, Table: "nat", Chain: "OUTPUT", Target: kpnames.KubeServices,
			Rule:     `-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES`,
			Forwards: []model.Origin{model.FromNode}}
		masq := PlumbingRule{Role: Masquerade, Table: "nat", Chain: kpnames.KubePostrouting, Target: "MASQUERADE",
			Rule: `-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully`}
		if r.Mode == model.ModeIPVS {
			// IPVS delivers service traffic to its virtual servers
			// whatever the rules; KUBE-SERVICES marks what is to be
			// masqueraded (node ports, load balancers, external IPs).
			prerouting.Forwards, prerouting.Marks = nil, []model.Origin{model.FromExternal}
			output.Forwards = nil
			masq.Not = "--match-set" // the KUBE-LOOP-BACK hairpin rule
		}
		out := []PlumbingRule{prerouting}
		if output.Forwards != nil {
			out = append(out, output)
		}
		return append(out,
			PlumbingRule{Role: MasqueradeJump, Table: "nat", Chain: "POSTROUTING", Target: kpnames.KubePostrouting,
				Rule: `-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING`},
			masq,
			PlumbingRule{Role: MarkMasq, Table: "nat", Chain: kpnames.KubeMarkMasq, Target: "MARK",
				Rule: fmt.Sprintf("-A KUBE-MARK-MASQ -j MARK --set-xmark %s/%s", mark, mark)})
	case model.ModeNFTables:
		bit := int32(14)
		if b := cfg.NFTables.MasqueradeBit; b != nil {
			bit = *b
		}
		mark := fmt.Sprintf("0x%08x", uint32(1)<<uint(bit))
		out := []PlumbingRule{
			{Role: HookJump, Chain: nftNATPrerouting, Target: "jump " + nftServicesChain, Rule: "jump " + nftServicesChain,
				Forwards: []model.Origin{model.FromPod, model.FromExternal}},
			{Role: HookJump, Chain: nftNATOutput, Target: "jump " + nftServicesChain, Rule: "jump " + nftServicesChain,
				Forwards: []model.Origin{model.FromNode}},
			{Role: MasqueradeJump, Chain: nftNATPostrouting, Target: "jump " + nftMasqueradingChain, Rule: "jump " + nftMasqueradingChain},
		}
		if r.Has(resolve.NFTablesHairpin) {
			return append(out, PlumbingRule{Role: Masquerade, Chain: nftMasqueradingChain, Target: "masquerade", Not: "@" + nftHairpinSet,
				Rule: "meta mark & " + mark + " != 0x00000000 meta mark set meta mark ^ " + mark + " masquerade fully-random"})
		}
		return append(out,
			PlumbingRule{Role: Masquerade, Chain: nftMasqueradingChain, Target: "masquerade", Rule: "masquerade fully-random"},
			PlumbingRule{Role: MarkMasq, Chain: nftMarkMasqChain, Target: "meta mark set", Rule: "meta mark set meta mark | " + mark})
	}
	return nil
}
