package checks

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/proxier"
	"github.com/proxyscan/proxyscan/analyzer/view"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/nft"
)

var hookJumpMissing = &Check{
	ID:       "hook-jump-missing",
	Severity: Error,
	Title:    "a hook does not jump to kube-proxy's service rules",
	What: "kube-proxy sends service traffic to its rules from the chains of the netfilter hooks: in iptables mode nat " +
		"`PREROUTING` (packets from pods and from outside) and nat `OUTPUT` (packets of the node) jump to " +
		"`KUBE-SERVICES`; in nftables mode the base chains `nat-prerouting` and `nat-output` jump to `services`. " +
		"One of these jumps is missing: no packet of its hook is ever sent to an endpoint. The finding leads with " +
		"the missing rule and lists the service ports it cuts off; those are not reported again by " +
		"service-unreachable. In IPVS mode nat `PREROUTING`'s jump only marks traffic for masquerade: " +
		"masquerade-missing reports it.",
	Why: "Every Service of the node is unreachable from the origins of the hook: connections to cluster IPs from " +
		"pods, to node ports, load balancer and external IPs from outside (nat PREROUTING), or from the node itself " +
		"(nat OUTPUT), time out or are refused, although every service rule is in place.",
	Fix: "kube-proxy adds these jumps at every sync (EnsureRule): their absence means that something else rewrote " +
		"the chain (a firewall manager flushing nat PREROUTING, `iptables -t nat -F`, an nft script) after kube-proxy's " +
		"last sync. Find what rewrites the chain, then restart kube-proxy on the node.",
	Needs: []Need{NeedDataplane},
	Modes: []string{model.ModeIPTables, model.ModeNFTables},
	Run:   runHookJumpMissing,
}

var masqueradeMissing = &Check{
	ID:       "masquerade-missing",
	Severity: Error,
	Title:    "kube-proxy's masquerade rules are missing",
	What: "kube-proxy masquerades (source-NATs to the node's address) the service traffic it marks: in iptables and " +
		"IPVS mode `KUBE-MARK-MASQ` sets the mark bit (0x4000 unless masqueradeBit says otherwise), nat `POSTROUTING` " +
		"jumps to `KUBE-POSTROUTING`, whose `MASQUERADE` rule masquerades the marked packets; in nftables mode " +
		"`nat-postrouting` jumps to `masquerading`, which masquerades them (marked by `mark-for-masquerade` up to " +
		"1.35). In IPVS mode nat `PREROUTING`'s jump to `KUBE-SERVICES` is what marks the traffic from outside. One " +
		"of these rules is missing: the finding names it and lists the service ports whose traffic it leaves " +
		"without SNAT. Nothing is said when the inputs do not hold the nat table.",
	Why: "Traffic from outside to node ports, load balancer IPs and external IPs of Services with " +
		"externalTrafficPolicy Cluster is sent to endpoints on other nodes with the client's source address: the " +
		"endpoint replies to the client directly, the reply bypasses the node, is not un-NATed and is dropped, and " +
		"the connections break. Hairpin traffic (a pod reaching its own Service and landing on itself) and, with " +
		"masqueradeAll or no cluster CIDR, traffic to cluster IPs break the same way. Nothing else looks wrong: " +
		"every service rule is there and the packets reach their endpoints.",
	Fix: "kube-proxy writes these rules at every sync: their absence means that something else rewrote the chain " +
		"(a firewall manager, `iptables -t nat -F POSTROUTING`, an nft script) after kube-proxy's last sync. Find " +
		"what rewrites the chain, then restart kube-proxy on the node.",
	Needs: []Need{NeedDataplane},
	Modes: []string{model.ModeIPTables, model.ModeIPVS, model.ModeNFTables},
	Run:   runMasqueradeMissing,
}

// plumbingState is whether a rule of kube-proxy's base plumbing is in a
// data plane.
type plumbingState int

const (
	plumbingKept     plumbingState = iota
	plumbingMissing                // the inputs hold the chain's table, without the rule
	plumbingUnknown                // the inputs do not hold the table or the hook's chain
	plumbingBypassed               // a rule before it ends the chain for every packet
)

// bypassAdvice begins the advice of a finding whose rule is there but
// never reached.
const bypassAdvice = "A rule that is not kube-proxy's ends the chain for every packet before kube-proxy's rule: remove it, " +
	"or make it match only the traffic it is meant for. "

// bypassRule matches an iptables rule that ends its chain for every packet
// (no match but a comment): the rules after it are never reached.
var bypassRule = regexp.MustCompile(`^-A \S+( -m comment --comment ("[^"]*"|\S+))? -j (ACCEPT|RETURN)$`)

// findPlumbing tells whether the data plane of v holds the rule r, and the
// evidence of where it should be (the chain's declaration, else the
// table's).
func findPlumbing(p *Pass, v *view.View, r proxier.PlumbingRule) (plumbingState, model.Evidence) {
	res := p.facts.res
	if v.Mode == model.ModeNFTables {
		t := res.NFTTable(v.Family)
		if t == nil {
			return plumbingUnknown, model.Evidence{}
		}
		c := t.Chain(r.Chain)
		if c == nil {
			// A listing of some chains (nft list chain) holds no base
			// chain: only the listing of a whole table says one is gone.
			if !slices.ContainsFunc(t.Chains, (*nft.Chain).IsBase) {
				return plumbingUnknown, model.Evidence{}
			}
			return plumbingMissing, model.EvidenceAt(t.Pos, "table "+nft.FamilyName(t.Family)+" "+t.Name+" (no chain "+r.Chain+")")
		}
		for _, rule := range c.Rules {
			if nftHasWords(rule.Raw, r.Target) && (r.Not == "" || !strings.Contains(rule.Raw, r.Not)) {
				return plumbingKept, model.Evidence{}
			}
		}
		return plumbingMissing, view.NFTChainEvidence(c)
	}
	d := res.IPTables(v.Family)
	if d == nil {
		return plumbingUnknown, model.Evidence{}
	}
	t := d.Table(r.Table)
	if t == nil {
		return plumbingUnknown, model.Evidence{}
	}
	// iptables-save declares every built-in chain of a table it prints: a
	// table without them is a fragment (a grep, iptables -S of a chain).
	hook := map[proxier.PlumbingRole]string{proxier.MasqueradeJump: "POSTROUTING", proxier.Masquerade: "POSTROUTING",
		proxier.MarkMasq: "POSTROUTING"}[r.Role]
	if hook == "" {
		hook = r.Chain
	}
	if hc := t.Chain(hook); hc == nil || hc.Header == "" {
		return plumbingUnknown, model.Evidence{}
	}
	c := t.Chain(r.Chain)
	if c == nil {
		return plumbingMissing, model.EvidenceAt(t.Pos(), "*"+r.Table+" (no "+r.Chain+" chain)")
	}
	var bypass *iptables.Rule
	for _, rule := range c.Rules {
		if rule.Target() == r.Target && (r.Not == "" || !strings.Contains(rule.Raw, r.Not)) {
			if bypass != nil {
				return plumbingBypassed, model.RuleEvidence(bypass)
			}
			return plumbingKept, model.Evidence{}
		}
		if bypass == nil && bypassRule.MatchString(rule.Raw) {
			bypass = rule
		}
	}
	return plumbingMissing, model.ChainEvidence(c)
}

// nftHasWords reports whether the nft rule raw holds the words of want,
// one after the other.
func nftHasWords(raw, want string) bool {
	w, words := strings.Fields(want), strings.Fields(raw)
	for i := 0; i+len(w) <= len(words); i++ {
		if slices.Equal(words[i:i+len(w)], w) {
			return true
		}
	}
	return false
}

// plumbingWhere names the chain of a plumbing rule in messages: "nat
// PREROUTING", "chain nat-prerouting".
func plumbingWhere(v *view.View, r proxier.PlumbingRule) string {
	if v.Mode == model.ModeNFTables {
		return "chain " + r.Chain
	}
	return r.Table + " " + r.Chain
}

// originsText says which packets a list of origins is.
func originsText(os []model.Origin) string {
	var parts []string
	for _, o := range os {
		switch o {
		case model.FromPod:
			parts = append(parts, "from pods")
		case model.FromNode:
			parts = append(parts, "from the node")
		case model.FromExternal:
			parts = append(parts, "from outside")
		}
	}
	return strings.Join(parts, " and ")
}

// hasOrigin reports whether os and of share an origin.
func hasOrigin(os, of []model.Origin) bool {
	return slices.ContainsFunc(os, func(o model.Origin) bool { return slices.Contains(of, o) })
}

func runHookJumpMissing(p *Pass) {
	for _, v := range p.Views() {
		if v.Mode != model.ModeIPTables && v.Mode != model.ModeNFTables {
			continue
		}
		for _, r := range proxier.Plumbing(p.facts.res, v.Family) {
			if r.Role != proxier.HookJump || len(r.Forwards) == 0 {
				continue
			}
			state, ev := findPlumbing(p, v, r)
			if state != plumbingMissing && state != plumbingBypassed {
				continue
			}
			if !p.withheld(v) {
				if p.facts.hookBroken == nil {
					p.facts.hookBroken = map[model.Family][]model.Origin{}
				}
				p.facts.hookBroken[v.Family] = append(p.facts.hookBroken[v.Family], r.Forwards...)
			}
			objects, ports, dests := hookVictims(p, v, r.Forwards)
			msg := fmt.Sprintf("%s has no rule jumping to %s (%s): no new connection %s reaches a service endpoint",
				plumbingWhere(v, r), strings.TrimPrefix(r.Target, "jump "), v.Family, originsText(r.Forwards))
			if state == plumbingBypassed {
				msg = fmt.Sprintf("%s ends at `%s` before its jump to %s (%s): no new connection %s reaches a service endpoint",
					plumbingWhere(v, r), ev.Text, r.Target, v.Family, originsText(r.Forwards))
			}
			if ports > 0 {
				msg += fmt.Sprintf(": %s cut off (%s)", plural(ports, "service port"), plural(dests, "destination"))
			}
			advice := ""
			if state == plumbingBypassed {
				advice = bypassAdvice
			}
			p.ReportAbsence(v, Finding{
				Message:  msg,
				Evidence: []model.Evidence{ev},
				Objects:  objects,
				Advice: advice + fmt.Sprintf("kube-proxy writes `%s` in %s at every sync: something rewrote the chain after "+
					"it (a firewall manager, a flush of the chain). Find what rewrites it, then restart kube-proxy on the node.",
					r.Rule, plumbingWhere(v, r)),
			})
		}
	}
}

// hookVictims lists the destinations of the service ports of v that
// kube-proxy forwards from one of the origins: one object per service
// port, its destinations and how many there are.
func hookVictims(p *Pass, v *view.View, origins []model.Origin) (objects []string, ports, dests int) {
	nodeIP := nodePortAddr(p.Snap, v.Family)
	for _, sp := range p.PortsOf(v) {
		e := p.Expect(sp, v.Family)
		var mine []string
		for _, t := range reachTargets(v, sp, e, nodeIP) {
			if !hasOrigin(t.from, origins) {
				continue
			}
			mine = append(mine, t.text(sp))
		}
		if len(mine) == 0 {
			continue
		}
		ports++
		dests += len(mine)
		objects = append(objects, sp.String()+": "+strings.Join(mine, ", "))
	}
	return objects, ports, dests
}

func runMasqueradeMissing(p *Pass) {
	for _, v := range p.Views() {
		if p.interfacesHidden(v) {
			continue
		}
		var missing []proxier.PlumbingRule
		var evidence []model.Evidence
		var bypassed []string // per missing rule, the rule that ends the chain before it
		for _, r := range proxier.Plumbing(p.facts.res, v.Family) {
			if r.Role == proxier.HookJump && len(r.Marks) == 0 {
				continue
			}
			state, ev := findPlumbing(p, v, r)
			if state != plumbingMissing && state != plumbingBypassed {
				continue
			}
			missing, evidence = append(missing, r), append(evidence, ev)
			by := ""
			if state == plumbingBypassed {
				by = ev.Text
			}
			bypassed = append(bypassed, by)
		}
		if len(missing) == 0 {
			continue
		}
		var what []string
		for i, r := range missing {
			w := fmt.Sprintf("%s has no rule `%s`", plumbingWhere(v, r), r.Rule)
			if bypassed[i] != "" {
				w = fmt.Sprintf("%s ends at `%s` before `%s`", plumbingWhere(v, r), bypassed[i], r.Rule)
			}
			switch r.Role {
			case proxier.HookJump:
				w += " (it marks the traffic " + originsText(r.Marks) + " for masquerade)"
			case proxier.MasqueradeJump:
				w += " (the marked packets never reach the masquerade rule)"
			case proxier.MarkMasq:
				w += " (no packet is marked for masquerade)"
			case proxier.Masquerade:
				w += " (the marked packets are not masqueraded)"
			}
			what = append(what, w)
		}
		advice := ""
		if slices.ContainsFunc(bypassed, func(b string) bool { return b != "" }) {
			advice = bypassAdvice
		}
		objects, ports := masqueradeVictims(p, v)
		msg := fmt.Sprintf("kube-proxy's masquerade is broken (%s): %s: traffic from outside to node ports, load balancer and "+
			"external IPs (externalTrafficPolicy Cluster) and hairpin traffic reach endpoints on other nodes without SNAT, "+
			"the replies bypass this node and the connections break", v.Family, strings.Join(what, "; "))
		if ports > 0 {
			msg += ": " + plural(ports, "service port") + " affected"
		}
		p.ReportAbsence(v, Finding{
			Message:  msg,
			Evidence: evidence,
			Objects:  objects,
			Advice: advice + "kube-proxy writes these rules at every sync: something rewrote the chain after it (a firewall " +
				"manager, a flush of nat POSTROUTING, an nft script). Find what rewrites it, then restart kube-proxy on the node; " +
				"`proxyscan trace BUNDLE --dst NODE-IP:NODE-PORT --from external --compare` shows the path without the masquerade.",
		})
	}
}

// masqueradeVictims lists the service ports of v whose traffic from
// outside kube-proxy masquerades: the destinations reached from outside
// under the Cluster policy.
func masqueradeVictims(p *Pass, v *view.View) (objects []string, ports int) {
	nodeIP := nodePortAddr(p.Snap, v.Family)
	for _, sp := range p.PortsOf(v) {
		e := p.Expect(sp, v.Family)
		if !e.HasExternal() || e.ExternalPolicy() != view.PolicyCluster {
			continue
		}
		var mine []string
		for _, t := range reachDests(sp, e, nodeIP) {
			if t.kind == view.ClusterIP {
				continue
			}
			mine = append(mine, t.text(sp))
		}
		if len(mine) == 0 {
			continue
		}
		ports++
		objects = append(objects, sp.String()+": "+strings.Join(mine, ", "))
	}
	return objects, ports
}
