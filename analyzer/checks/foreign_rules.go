package checks

import (
	"fmt"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// foreignTools names the tools whose iptables chains are recognised by
// their prefix, in the order they are tried.
var foreignTools = []struct{ prefix, tool string }{
	{"KUBE-ROUTER", "kube-router"},
	{"cali-", "Calico"},
	{"CILIUM_", "Cilium"},
	{"DOCKER", "Docker"},
	{"FLANNEL", "flannel"},
	{"WEAVE", "Weave Net"},
	{"OPENSHIFT", "OpenShift"},
}

// foreignTool returns the tool a chain belongs to, or "".
func foreignTool(chain string) string {
	for _, t := range foreignTools {
		if strings.HasPrefix(chain, t.prefix) {
			return t.tool
		}
	}
	return ""
}

var foreignRules = &Check{
	ID:       "foreign-rules",
	Severity: Warning,
	Title:    "another tool's rules run before kube-proxy's",
	What: "Another network tool (Calico, Cilium, Docker, flannel, Weave Net, kube-router, OpenShift) hooks its " +
		"chains into nat `PREROUTING` or `OUTPUT` before the jump to kube-proxy's `KUBE-SERVICES`, and those chains " +
		"end the traversal (ACCEPT, DNAT, REDIRECT, DROP, REJECT) for some packets; or the filter `FORWARD` policy " +
		"is DROP (Docker sets it) while no jump to kube-proxy's `KUBE-FORWARD` accepts the Service traffic it " +
		"forwards. A hook that only returns is reported as info.",
	Why: "A packet the other tool accepts or translates first never reaches kube-proxy's DNAT: connections to a " +
		"cluster IP or node port then go to the wrong place or time out. With FORWARD dropping and no " +
		"KUBE-FORWARD, traffic DNATed to a pod on another node, or answered by one, is dropped.",
	Fix: "Check the other tool's configuration (Docker: `\"iptables\": false` in daemon.json, or a FORWARD ACCEPT " +
		"for the pod CIDR; a CNI: its kube-proxy compatibility settings), and restart kube-proxy so that it " +
		"re-inserts its jumps first.",
	Needs: []Need{NeedIPTables},
	Modes: []string{model.ModeIPTables, model.ModeIPVS},
	Run:   runForeignRules,
}

func runForeignRules(p *Pass) {
	for _, d := range p.Snap.IPTables {
		if kubeChain(d) == nil {
			continue
		}
		for _, hook := range []string{"PREROUTING", "OUTPUT"} {
			c := d.Chain("nat", hook)
			if c == nil {
				continue
			}
			for _, r := range c.Rules {
				tgt := r.Target()
				if tgt == kpnames.KubeServices {
					break
				}
				tool := foreignTool(tgt)
				if tool == "" {
					continue
				}
				end := terminal(d.Table("nat"), tgt, 0)
				f := Finding{
					Message:  fmt.Sprintf("%s's chain %s is jumped to from nat %s before kube-proxy's KUBE-SERVICES (%s)", tool, tgt, hook, d.Name),
					Evidence: []model.Evidence{model.RuleEvidence(r)},
				}
				if end == nil {
					f.Severity = Info
					f.Message += "; it does not end the traversal"
					f.Advice = "Nothing to do unless Service traffic misbehaves; kube-proxy's rules still see every packet the other tool returns."
				} else {
					f.Message += fmt.Sprintf(", and ends it for some packets with %s", end.Target())
					f.Evidence = append(f.Evidence, model.RuleEvidence(end))
					f.Advice = "Check that the rule cannot match Service traffic (cluster IPs, node ports), or restart kube-proxy so that its jump comes first."
				}
				p.Report(f)
			}
		}
		forwardDrop(p, d)
	}
}

// forwardDrop reports a filter FORWARD chain whose policy is DROP while
// nothing jumps to kube-proxy's KUBE-FORWARD.
func forwardDrop(p *Pass, d *iptables.Dump) {
	fwd := d.Chain("filter", "FORWARD")
	if fwd == nil || fwd.Policy() != "DROP" || d.Chain("nat", kpnames.KubeServices) == nil {
		return
	}
	for _, r := range fwd.Rules {
		if r.Target() == kpnames.KubeForward {
			return
		}
	}
	by := ""
	for _, r := range fwd.Rules {
		if t := foreignTool(r.Target()); t != "" {
			by = " (" + t + "'s chains are jumped to from it)"
			break
		}
	}
	p.Report(Finding{
		Message:  fmt.Sprintf("filter FORWARD drops by policy and has no jump to kube-proxy's KUBE-FORWARD%s: forwarded Service traffic is dropped (%s)", by, d.Name),
		Evidence: []model.Evidence{model.ChainEvidence(fwd)},
		Advice:   "Restart kube-proxy so that it re-creates its KUBE-FORWARD jump, or accept the pod CIDR's traffic in FORWARD (iptables -P FORWARD ACCEPT where the node's firewall allows it).",
	})
}

// terminal returns a rule of chain name, or of a chain it jumps to (a few
// levels deep), whose target ends the nat traversal; nil when none does.
func terminal(t *iptables.Table, name string, depth int) *iptables.Rule {
	c := t.Chain(name)
	if c == nil || depth > 3 {
		return nil
	}
	for _, r := range c.Rules {
		switch tgt := r.Target(); tgt {
		case "ACCEPT", "DNAT", "REDIRECT", "DROP", "REJECT":
			return r
		case "", "RETURN", "MARK", "MASQUERADE", "SNAT", "LOG", "CONNMARK":
		default:
			if strings.HasPrefix(tgt, "KUBE-") {
				continue
			}
			if end := terminal(t, tgt, depth+1); end != nil {
				return end
			}
		}
	}
	return nil
}
