package checks

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/google/nftables"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/kpconfig"
	"github.com/proxyscan/proxyscan/parsers/nft"
)

var modeMismatch = &Check{
	ID:       "mode-mismatch",
	Severity: Error,
	Title:    "the configured proxy mode is not the one programmed",
	What: "The configuration selects one proxy mode, but the data plane holds the rules of another: only those " +
		"(kube-proxy runs another configuration, or fell back from ipvs to iptables before 1.26), or those of a " +
		"previous mode next to the current ones (iptables `KUBE-SVC-*` chains on an IPVS node, IPVS virtual " +
		"servers and `kube-ipvs0` addresses on an iptables node), or kube-proxy's log names another proxier than " +
		"the configuration. The finding says which rules take a packet first.",
	Why: "Leftovers of a mode switch keep handling traffic with stale endpoints: iptables-mode DNAT rules in nat " +
		"PREROUTING and OUTPUT run before IPVS sees a packet (IPVS works in LOCAL_IN), so stale `KUBE-SVC-*` chains " +
		"win over the IPVS table for every cluster IP they list, while `kube-ipvs0` addresses and IPVS-mode filter " +
		"rules left on an iptables node make the node accept, or reject, traffic for addresses kube-proxy no " +
		"longer manages. kube-proxy's nftables table and the iptables nat table hook prerouting and output at the same " +
		"priority (dstnat), where the kernel runs chains of equal priority in the order they were registered, which no " +
		"dump shows, and the first DNAT wins: leftovers of either mode next to the other make the outcome undefined " +
		"for every address both list. A configuration that differs from what runs makes every other finding suspect.",
	Fix: "Check which configuration the running kube-proxy loaded (its log's \"Using ... Proxier\" line). Remove " +
		"the leftovers of the old mode with `kube-proxy --cleanup` (run with the old mode's binaries, e.g. in a " +
		"debug pod on the node), or reboot the node, then restart kube-proxy.",
	Run: runModeMismatch,
}

func runModeMismatch(p *Pass) {
	s := p.Snap
	programmed := p.Resolution().Programmed
	configured := ""
	if s.Config != nil {
		configured = s.Config.EffectiveMode()
	}
	logged, entry := resolve.LoggedMode(s)
	if configured == "" && len(programmed) < 2 {
		p.Skip("no kube-proxy configuration, and the data plane shows one mode at most")
		return
	}
	var cfgEv []model.Evidence
	if s.Config != nil {
		cfgEv = []model.Evidence{configEvidence(s.Config, "mode")}
	}
	if logged != "" && configured != "" && logged != configured {
		p.Report(Finding{
			Message: fmt.Sprintf("the configuration selects %s mode but kube-proxy's log says it runs the %s proxier%s", configured, logged,
				fallbackNote(p, configured, logged)),
			Evidence: append(cfgEv, model.EvidenceAt(entry.Pos, firstLine(entry.Raw))),
			Advice:   "Find out why kube-proxy did not use the configured mode (the log lines before \"Using " + logged + " Proxier\"), or correct the configuration, and restart kube-proxy.",
		})
	}
	if configured != "" && len(programmed) > 0 && !contains(programmed, configured) {
		p.Report(Finding{
			Message: fmt.Sprintf("the configuration selects %s mode but the data plane holds only %s-mode rules (%s)", configured, strings.Join(programmed, " and "),
				modeRulesSummary(p.Resolution(), programmed[0])),
			Evidence: append(cfgEv, modeEvidence(p.Resolution(), programmed[0])...),
			Advice:   "The node runs another configuration than the one captured, or kube-proxy could not use the configured mode; compare with kube-proxy's log and restart it with the intended configuration.",
		})
		return
	}
	if len(programmed) < 2 {
		return
	}
	current := configured
	if current == "" || !contains(programmed, current) {
		current = logged
	}
	for _, m := range programmed {
		if m == current {
			continue
		}
		if f, ok := modeLeftovers(p.Resolution(), current, m); ok {
			f.Evidence = append(append([]model.Evidence{}, cfgEv...), f.Evidence...)
			p.Report(f)
			continue
		}
		f := Finding{
			Severity: Warning,
			Evidence: append(append([]model.Evidence{}, cfgEv...), modeEvidence(p.Resolution(), m)...),
			Advice:   "Remove the " + m + "-mode leftovers (kube-proxy --cleanup with the old mode's binaries, or a reboot of the node) and restart kube-proxy.",
		}
		switch {
		case current == "":
			f.Message = fmt.Sprintf("the data plane holds rules of both %s (%s); with no configuration in the inputs, which one kube-proxy maintains is unknown", strings.Join(programmed, " and "), modeRulesSummary(p.Resolution(), m))
		case m == model.ModeIPTables && current == model.ModeIPVS && !iptablesModeReachable(s):
			f.Message = fmt.Sprintf("iptables-mode chains are left on this IPVS-mode node (%s); no rule jumps to them any more, but they would win over IPVS again if anything did", modeRulesSummary(p.Resolution(), m))
		case m == model.ModeIPTables && current == model.ModeIPVS:
			f.Severity = Error
			f.Message = fmt.Sprintf("iptables-mode rules are left on this IPVS-mode node (%s): their DNAT in nat PREROUTING and OUTPUT runs before IPVS, so they win for every cluster IP they list", modeRulesSummary(p.Resolution(), m))
		case m == model.ModeIPVS && current == model.ModeIPTables:
			f.Message = fmt.Sprintf("IPVS-mode leftovers on this iptables-mode node (%s): iptables-mode DNAT runs first and wins for the Services it lists; the IPVS virtual servers, kube-ipvs0 addresses and ipsets still take traffic for the addresses it does not", modeRulesSummary(p.Resolution(), m))
		case current == model.ModeNFTables:
			f.Message = fmt.Sprintf("%s-mode rules are left on this nftables-mode node (%s): their nat chains hook at the same priority as kube-proxy's nftables table, so which DNAT a packet gets first is not defined", m, modeRulesSummary(p.Resolution(), m))
		case m == model.ModeNFTables:
			f.Message = fmt.Sprintf("nftables-mode leftovers on this %s-mode node (%s): the kube-proxy nftables table still DNATs the Service addresses it lists, at the same hook priority as the %s rules", current, modeRulesSummary(p.Resolution(), m), current)
		default:
			f.Message = fmt.Sprintf("%s-mode rules are left on this %s-mode node (%s)", m, current, modeRulesSummary(p.Resolution(), m))
		}
		p.Report(f)
	}
}

// fallbackNote explains a logged proxier that differs from the configured
// mode.
func fallbackNote(p *Pass, configured, logged string) string {
	if configured == model.ModeIPVS && logged == model.ModeIPTables && !p.Resolution().Has(resolve.IPVSFallbackRemoved) {
		return fallbackNoteText
	}
	return ""
}

// fallbackNoteText is what fallbackNote says of kube-proxy before 1.26.
const fallbackNoteText = " (before 1.26 kube-proxy falls back to iptables when IPVS is unusable)"

// modeRulesSummary counts the rules of a mode in the data plane.
func modeRulesSummary(r *resolve.Resolution, mode string) string {
	s := r.Snap
	switch mode {
	case model.ModeIPTables:
		chains, rules := 0, 0
		for _, d := range s.IPTables {
			if !resolve.IsIPTablesMode(d) {
				continue
			}
			if nat := d.Table("nat"); nat != nil {
				for _, c := range nat.Chains {
					if strings.HasPrefix(c.Name, kpnames.ChainSVC) || strings.HasPrefix(c.Name, kpnames.ChainSEP) {
						chains++
					}
				}
				if c := nat.Chain(kpnames.KubeServices); c != nil {
					for _, r := range c.Rules {
						if r.Has("-d") && r.Has("--dport") {
							rules++
						}
					}
				}
			}
		}
		return fmt.Sprintf("%d KUBE-SVC/KUBE-SEP chains, %d service rules in nat KUBE-SERVICES", chains, rules)
	case model.ModeIPVS:
		vs := 0
		if t := r.IPVSTable(); t != nil {
			vs = len(t.Services)
		}
		bound := 0
		if s.Addrs != nil {
			bound = len(s.Addrs.KubeIPVSAddresses())
		}
		return fmt.Sprintf("%d virtual servers, %d kube-ipvs0 addresses", vs, bound)
	case model.ModeNFTables:
		chains := 0
		for _, t := range kubeProxyTables(s) {
			chains += len(t.Chains)
		}
		return fmt.Sprintf("%d chains in the kube-proxy nftables tables", chains)
	}
	return mode + " rules"
}

// modeEvidence points at the rules of a mode.
func modeEvidence(r *resolve.Resolution, mode string) []model.Evidence {
	s := r.Snap
	var out []model.Evidence
	switch mode {
	case model.ModeIPTables:
		for _, d := range s.IPTables {
			if c := firstServiceChain(d); c != nil && resolve.IsIPTablesMode(d) {
				out = append(out, model.ChainEvidence(c))
				break
			}
		}
	case model.ModeNFTables:
		for _, t := range kubeProxyTables(s) {
			out = append(out, model.EvidenceAt(t.Pos, "table "+t.Name))
		}
	case model.ModeIPVS:
		if t := r.IPVSTable(); t != nil && len(t.Services) > 0 {
			out = append(out, model.EvidenceAt(t.Services[0].Pos, t.Services[0].Raw))
		}
		for _, d := range s.IPTables {
			if resolve.IsIPVSMode(d) {
				for _, name := range []string{kpnames.IPVSFilter, kpnames.IPVSNodePort, kpnames.IPVSLoadBalancer} {
					for _, t := range d.Tables {
						if c := t.Chain(name); c != nil && len(out) < 3 {
							out = append(out, model.ChainEvidence(c))
						}
					}
				}
				break
			}
		}
	}
	return out
}

// firstServiceChain returns the first KUBE-SVC chain of a dump's nat table,
// else its KUBE-SERVICES chain.
func firstServiceChain(d *iptables.Dump) *iptables.Chain {
	nat := d.Table("nat")
	if nat == nil {
		return nil
	}
	for _, c := range nat.Chains {
		if strings.HasPrefix(c.Name, kpnames.ChainSVC) {
			return c
		}
	}
	return nat.Chain(kpnames.KubeServices)
}

var modeUnsupported = &Check{
	ID:       "mode-unsupported",
	Severity: Error,
	Title:    "a proxy mode the running kube-proxy does not support",
	What: "The configured `mode` is not one the kube-proxy release accepts on Linux: `userspace` was removed in " +
		"1.26; `nftables` exists from 1.29, behind the NFTablesProxyMode gate until 1.31 (on by default from 1.31, " +
		"locked from 1.33) and needs Linux 5.13; in 1.37 `ipvs` needs the KubeProxyIPVS gate. That ipvs mode is " +
		"deprecated (1.35+: disabled by default in 1.40, removed in 1.43) is a note of the check, not a finding; " +
		"the report's migration section says what a move to nftables changes.",
	Why: "kube-proxy rejects an unsupported mode at start-up and exits, so the pods restart in CrashLoopBackOff " +
		"and no rule is maintained; a kernel too old for nftables makes the nftables proxier fail at its first sync.",
	Fix: "Choose a mode of the running release (`iptables`, `ipvs`, or `nftables` on 1.31+), enable its feature gate " +
		"where one is needed, or upgrade kube-proxy (and the kernel, for nftables) before switching.",
	Needs: []Need{NeedConfig},
	Run:   runModeUnsupported,
}

func runModeUnsupported(p *Pass) {
	s := p.Snap
	c := s.Config
	ev := configEvidence(c, "mode")
	for _, fe := range kpconfig.Validate(c.Effective, s.Version.Version) {
		if fe.Field != "mode" {
			continue
		}
		p.Report(Finding{
			Message:  fmt.Sprintf("kube-proxy %s does not support mode %q%s: %s", minorOf(p), string(c.Mode), modeWhy(p, string(c.Mode)), fe.KubeProxyError()),
			Evidence: []model.Evidence{fieldErrorEvidence(c, fe)},
			Advice:   "Use one of the modes the release accepts, or enable the named feature gate, and restart kube-proxy.",
		})
	}
	mode := c.EffectiveMode()
	if mode == model.ModeNFTables {
		if major, minor, ok := nodeKernel(s); ok && (major < 5 || major == 5 && minor < 13) {
			p.Report(Finding{
				Message: fmt.Sprintf("nftables mode needs Linux 5.13 or newer, but node %s runs kernel %s", s.Node.Name, s.Node.Object.Status.NodeInfo.KernelVersion),
				Evidence: []model.Evidence{ev, model.EvidenceAt(s.Node.Object.Pos,
					"Node "+s.Node.Name+": kernelVersion "+s.Node.Object.Status.NodeInfo.KernelVersion)},
				Advice: "Keep iptables mode on this node until its kernel is upgraded; kube-proxy's nftables proxier fails its first sync on older kernels.",
			})
		}
	}
	if mode == model.ModeIPVS && p.Resolution().Has(resolve.IPVSModeDeprecated) {
		p.Note("ipvs mode is deprecated since 1.35 (disabled by default in 1.40, removed in 1.43); see the report's migration section for what a move to nftables changes")
	}
}

func modeWhy(p *Pass, mode string) string {
	r := p.Resolution()
	switch mode {
	case "userspace":
		if !r.Has(resolve.UserspaceMode) {
			return " (the userspace proxier was removed in 1.26)"
		}
	case model.ModeNFTables:
		if !resolve.InRelease(resolve.NFTablesMode, r.Version.Version) {
			return " (nftables mode exists from 1.29)"
		}
		return " (nftables mode needs the NFTablesProxyMode feature gate before 1.31)"
	case model.ModeIPVS:
		return " (ipvs mode needs the KubeProxyIPVS feature gate)"
	}
	return ""
}

// nodeKernel returns the major and minor version of the node's kernel
// (status.nodeInfo.kernelVersion).
func nodeKernel(s *model.Snapshot) (major, minor int, ok bool) {
	if s.Node.Object == nil {
		return 0, 0, false
	}
	kv := s.Node.Object.Status.NodeInfo.KernelVersion
	parts := strings.SplitN(kv, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minorText := parts[1]
	if i := strings.IndexFunc(minorText, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minorText = minorText[:i]
	}
	minor, err2 := strconv.Atoi(minorText)
	return major, minor, err1 == nil && err2 == nil
}

// iptablesModeReachable reports whether traffic can reach iptables-mode
// service rules: a rule outside the per-service chains jumps to one, or
// KUBE-SERVICES matches Service addresses itself.
func iptablesModeReachable(s *model.Snapshot) bool {
	for _, d := range s.IPTables {
		nat := d.Table("nat")
		if nat == nil || !resolve.IsIPTablesMode(d) {
			continue
		}
		for _, c := range nat.Chains {
			if _, _, ok := kpnames.SplitServiceChain(c.Name); ok {
				continue
			}
			for _, r := range c.Rules {
				if _, _, ok := kpnames.SplitServiceChain(r.Target()); ok {
					return true
				}
				if c.Name == kpnames.KubeServices && r.Has("-d") && r.Has("--dport") {
					return true
				}
			}
		}
	}
	return false
}

// kubeProxyTables returns the kube-proxy tables (ip and ip6) of the
// snapshot's nft rulesets.
func kubeProxyTables(s *model.Snapshot) []*nft.Table {
	var out []*nft.Table
	for _, rs := range s.NFT {
		for _, fam := range []nftables.TableFamily{nftables.TableFamilyIPv4, nftables.TableFamilyIPv6} {
			if t := rs.Table(fam, "kube-proxy"); t != nil {
				out = append(out, t)
			}
		}
	}
	return out
}
