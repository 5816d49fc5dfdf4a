package checks

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/proxier"
	"github.com/proxyscan/proxyscan/analyzer/view"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/kpconfig"
	"github.com/proxyscan/proxyscan/parsers/kube"
)

var configNotApplied = &Check{
	ID:       idConfigNotApplied,
	Severity: Warning,
	Title:    "kube-proxy runs with other settings than its configuration",
	What: "The rules kube-proxy programmed show some of the settings it runs with: the local-traffic detector " +
		"(`detectLocalMode` with `clusterCIDR`, the node's podCIDR or an interface) in the `! -s CIDR` or `! -i IFACE` " +
		"of the ClusterIP masquerade rules (iptables mode's `cluster IP` rules to `KUBE-MARK-MASQ`, IPVS mode's " +
		"`KUBE-CLUSTER-IP` rule, nftables mode's `ip saddr != CIDR` or `iifname !=` rules that mark for masquerade), " +
		"`masqueradeAll` in those rules having no such match, and `masqueradeBit` in the mark `KUBE-MARK-MASQ` sets " +
		"(`--set-xmark 0x4000/0x4000`) or nftables mode's `masquerading` chain tests. The finding says which of " +
		"them differ from what the configuration given (the ConfigMap, the --config file, the flags) makes of them, " +
		"with the configuration's lines and one rule, counting the rules alike. A whole data plane without any ClusterIP " +
		"masquerade rule shows, in iptables and nftables mode (beside cluster IPs that forward), no local-traffic " +
		"detector and masqueradeAll false, as kube-proxy then writes none; in IPVS mode (beside cluster IP virtual " +
		"servers), a form no configuration gives, as kube-proxy writes the `KUBE-CLUSTER-IP` rule whatever its settings " +
		"(`src,dst` without a detector); a dump cut short or grepped shows nothing. detectLocalMode NodeCIDR is " +
		"compared only when the Node object gives the node's podCIDRs; otherwise the comparison is a gap.",
	Why: "kube-proxy reads its configuration only when it starts: an edited ConfigMap changes nothing until the " +
		"kube-proxy pods are restarted, and the next restart (a node reboot, an upgrade) suddenly applies it. The " +
		"detector decides which ClusterIP traffic is masqueraded: a wrong clusterCIDR masquerades pod traffic " +
		"needlessly (the endpoints see the node's address, not the pod's, which breaks NetworkPolicies by source " +
		"and client-IP logging) or leaves traffic from outside the pod network unmasqueraded (its replies bypass " +
		"the node and the connections break). The running settings may be the right ones: the configuration is " +
		"then what will break at the next restart.",
	Fix: "Decide which settings are right. If the configuration is, restart kube-proxy so that it reads it " +
		"(`kubectl -n kube-system rollout restart ds/kube-proxy`); if the running settings are, write them into " +
		"the ConfigMap (`kubectl -n kube-system edit configmap kube-proxy`) so that the next restart keeps them.",
	Needs: []Need{NeedConfig, NeedDataplane},
	Modes: []string{model.ModeIPTables, model.ModeIPVS, model.ModeNFTables},
	Run:   runConfigNotApplied,
}

// podCIDRUnchecked begins the note of a comparison that needs the node's
// podCIDRs, which no input gives: coverage makes it a gap.
const podCIDRUnchecked = "not checked, as no input gives the node's podCIDRs (its Node object): "

// podCIDRNodeUnchosen begins the note of a comparison that needs the
// node's podCIDRs when Nodes are exported but none is known as the
// node's: coverage makes it a gap, closed by naming the node.
const podCIDRNodeUnchosen = "not checked, as no Node exported is known as this node's (pass --node NAME): "

// nodesShown bounds the Nodes a note names.
const nodesShown = 5

// exportedNodes says which Nodes the exports hold, for a note asking
// which one is the node's: "the Nodes exported are node-a, node-b", with
// the name given when none is so named; "" without Nodes.
func exportedNodes(s *model.Snapshot) string {
	if s.Objects == nil || len(s.Objects.Nodes) == 0 {
		return ""
	}
	var names []string
	for _, n := range s.Objects.Nodes {
		names = append(names, n.Name)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) > nodesShown {
		names = append(names[:nodesShown], fmt.Sprintf("and %d more", len(names)-nodesShown))
	}
	text := "the Nodes exported are " + strings.Join(names, ", ")
	if len(s.Objects.Nodes) == 1 {
		text = "the Node exported is " + names[0]
	}
	if s.Node.Name != "" {
		by := ""
		if s.Node.NameSource != "" {
			by = " (" + s.Node.NameSource + ")"
		}
		text += "; the node's name " + s.Node.Name + by + " is none of them"
	}
	return text
}

// podCIDRNeed is how to get the node's podCIDRs.
var podCIDRNeed = InputNeed{"the node's Node object (its spec.podCIDRs)", "kubectl get node NODE -o yaml > node.yaml"}

// restartAdvice ends the findings of settings kube-proxy has not read.
const restartAdvice = "kube-proxy reads its configuration only at start: restart it (kubectl -n kube-system rollout restart ds/kube-proxy) or fix "

func runConfigNotApplied(p *Pass) {
	c := p.Snap.Config
	if errs := kpconfig.Validate(c.Effective, p.Snap.Version.Version); len(errs) > 0 {
		// kube-proxy does not start with it: config-invalid says so, and
		// why the rules are of another configuration.
		p.Note("not compared: kube-proxy %s rejects the configuration (config-invalid): the rules are those of a configuration it started with before", minorOf(p))
		return
	}
	res := p.Resolution()
	var diffs []string
	var evidence []model.Evidence
	fields := map[string]bool{}
	field := func(path string) {
		if !fields[path] {
			fields[path] = true
			ev := configEvidence(c, path)
			if strings.HasSuffix(ev.Text, ": ") {
				ev.Text += `""` // written empty
			}
			evidence = append(evidence, ev)
		}
	}
	var rules []model.Evidence
	nodeCited := false
	// The views themselves, not Pass.Views: a family without a data plane
	// shows no settings, and its service ports are not this check's.
	for _, v := range p.facts.views {
		if !slices.Contains(p.Check.Modes, v.Mode) {
			continue
		}
		if p.interfacesHidden(v) {
			continue
		}
		shown, ok := proxier.ShownMasquerade(res, v.Mode, v.Family)
		if !ok {
			continue
		}
		want := proxier.ConfiguredMasquerade(res, v.Mode, v.Family)
		section := "iptables"
		if v.Mode == model.ModeNFTables {
			section = "nftables"
		}
		form, ok := mainForm(shown.Forms)
		if !ok {
			form, ok = noMasqueradeForm(p, v)
		}
		// IPVS mode writes its KUBE-CLUSTER-IP rule whatever the settings:
		// none differs from every configuration.
		ipvsNone := form.None && v.Mode == model.ModeIPVS
		if ok {
			switch {
			case string(c.DetectLocalMode) == "NodeCIDR" && !want.All && !hasFamily(p.Snap.Node.PodCIDRs, v.Family) && !ipvsNone:
				if nodes := exportedNodes(p.Snap); len(nodes) > 0 && p.Snap.Node.Object == nil {
					// The Nodes are exported, but which one is this node's
					// is not known.
					p.Note(podCIDRNodeUnchosen+"whether the %s rules detect local traffic by the node's podCIDR (detectLocalMode NodeCIDR); %s", v.Family, nodes)
				} else {
					p.Note(podCIDRUnchecked+"whether the %s rules detect local traffic by it (detectLocalMode NodeCIDR)", v.Family)
				}
			case ipvsNone || form.All != want.All || !form.All && form.Local != want.Local:
				diffs = append(diffs, fmt.Sprintf("%s where the configuration says %s (%s)",
					shownText(p.Snap, form, v.Mode, v.Family), configuredText(c, want, section), v.Family))
				if form.All != want.All {
					field(section + ".masqueradeAll")
				}
				if !want.All {
					field("detectLocalMode")
					for _, f := range detectorFields(c) {
						field(f)
					}
				}
				// The node's podCIDRs, when they are what the configuration
				// or the rules detect local traffic by.
				if n := p.Snap.Node.Object; n != nil && !nodeCited &&
					(!want.All && string(c.DetectLocalMode) == "NodeCIDR" || form.Local.CIDR.IsValid() && slices.Contains(p.Snap.Node.PodCIDRs, form.Local.CIDR)) {
					nodeCited = true
					evidence = append(evidence, podCIDRsEvidence(n))
				}
				rules = append(rules, formEvidence(form))
			}
		}
		if shown.Bit >= 0 && !slices.Contains(shown.Bits, want.Bit) {
			diffs = append(diffs, fmt.Sprintf("the rules show masqueradeBit %d (mark %s) where the configuration says %d (mark %s) (%s)",
				shown.Bit, proxier.MarkText(shown.Bit), want.Bit, proxier.MarkText(want.Bit), v.Family))
			field(section + ".masqueradeBit")
			rules = append(rules, model.EvidenceAt(shown.MarkPos, shown.MarkRule))
		}
	}
	if len(diffs) == 0 {
		return
	}
	if c.Source == "command line" && c.Read == nil {
		// The flags of a running process are what it runs with: a
		// restart reads them again, and the rules are not its own.
		p.Report(Finding{
			Message: fmt.Sprintf("the rules show other settings than the kube-proxy command line given (%s): %s; the flags of a running kube-proxy are what it runs with, so these rules were written by another kube-proxy (an earlier one, or that of another node) or another tool",
				configWhere(c), strings.Join(diffs, "; ")),
			Evidence: append(evidence, rules...),
			Advice: "Check that the command line and the rules come from the same node and time (ps -o lstart,args -C kube-proxy; iptables-save or nft list ruleset on that node); " +
				"if they do, look for another writer of kube-proxy's rules (a second kube-proxy, a CNI replacing it).",
		})
		return
	}
	p.Report(Finding{
		Message: fmt.Sprintf("kube-proxy runs with other settings than the configuration given (%s): %s; %s",
			configWhere(c), strings.Join(diffs, "; "), restartAdvice+configName(c)),
		Evidence: append(evidence, rules...),
		Advice: "If the configuration is right, restart kube-proxy so that it reads it (kubectl -n kube-system rollout restart ds/kube-proxy); " +
			"if the running settings are, write them into " + c.Source + " so that the next restart keeps them.",
	})
}

// mainForm returns the form of most ClusterIP masquerade rules (the first
// of those with as many).
func mainForm(forms []proxier.MasqueradeForm) (proxier.MasqueradeForm, bool) {
	best := -1
	for i, f := range forms {
		if best < 0 || f.Count > forms[best].Count {
			best = i
		}
	}
	if best < 0 {
		return proxier.MasqueradeForm{}, false
	}
	return forms[best], true
}

// formEvidence is the first rule of a form, with the count of the rules
// alike.
func formEvidence(f proxier.MasqueradeForm) model.Evidence {
	text := f.Rule
	switch {
	case f.None && f.Count > 1:
		text += fmt.Sprintf(" (a cluster IP entry without a masquerade rule, and %d more alike)", f.Count-1)
	case f.None:
		text += " (a cluster IP entry without a masquerade rule)"
	case f.Count > 1:
		text += fmt.Sprintf(" (and %s alike)", plural(f.Count-1, "rule"))
	}
	return model.EvidenceAt(f.Pos, text)
}

// noMasqueradeForm returns the form of a data plane without any ClusterIP
// masquerade rule. In iptables and nftables mode it is what kube-proxy
// writes without a local-traffic detector and without masqueradeAll: no
// rule at all, beside each cluster IP entry that forwards. In IPVS mode
// kube-proxy writes its KUBE-CLUSTER-IP rule with every configuration (with
// "src,dst" and no source match when it has no detector) as soon as the set
// has a member, which every cluster IP with a virtual server is, whatever
// its endpoints: its absence is a form no configuration gives. It is told
// only from a whole data plane (not a grep or a listing of part of the
// table, where the rule may only be out of sight, nor a dump without its
// nat or filter table, nor beside an IPVS listing that may be partial)
// that has such cluster IP entries; the form's rule is the first of them.
func noMasqueradeForm(p *Pass, v *view.View) (proxier.MasqueradeForm, bool) {
	if p.absenceWithheld(v, false) != "" {
		return proxier.MasqueradeForm{}, false
	}
	entry := forward
	if v.Mode == model.ModeIPVS {
		// The dump the rule would be in must be whole and kube-proxy's
		// (its nat KUBE-SERVICES, where the rule goes, is there).
		d := p.Resolution().IPTablesOf(model.ModeIPVS, v.Family)
		if d == nil || d.Partial || missingTables(d) != "" || d.Chain("nat", kpnames.KubeServices) == nil {
			return proxier.MasqueradeForm{}, false
		}
		entry = (*view.View).Find
	}
	var first *view.Entry
	count := 0
	for _, sp := range p.PortsOf(v) {
		cip, ok := sp.ClusterIP(v.Family)
		if !ok {
			continue
		}
		if ent := entry(v, view.ClusterIP, cip, sp.ProtoLower(), sp.Port); ent != nil && len(ent.Evidence) > 0 {
			if first == nil {
				first = ent
			}
			count++
		}
	}
	if first == nil {
		return proxier.MasqueradeForm{}, false
	}
	e := first.Evidence[0]
	return proxier.MasqueradeForm{None: true, Rule: e.Text, Pos: parsers.Pos{File: e.File, Line: e.Line, Path: e.Path}, Count: count}, true
}

// podCIDRsEvidence cites the pod ranges of Node n at their line (its
// spec.podCIDRs, else spec.podCIDR): "Node node-a: podCIDRs 10.244.1.0/24".
func podCIDRsEvidence(n *kube.Node) model.Evidence {
	cidrs := n.Spec.PodCIDRs
	if len(cidrs) == 0 && n.Spec.PodCIDR != "" {
		cidrs = []string{n.Spec.PodCIDR}
	}
	return model.EvidenceAt(n.PodCIDRsPos(), fmt.Sprintf("Node %s: podCIDRs %s", n.Name, strings.Join(cidrs, ", ")))
}

// hasFamily reports whether a prefix of family fam is among pfxs.
func hasFamily(pfxs []netip.Prefix, fam model.Family) bool {
	return slices.ContainsFunc(pfxs, func(x netip.Prefix) bool { return model.FamilyOf(x.Addr()) == fam })
}

// configWhere names the configuration and where it starts:
// "ConfigMap kube-system/kube-proxy, cluster/kube-proxy-configmap.yaml:4".
func configWhere(c *model.Config) string {
	if c.Pos.File == "" {
		return c.Source
	}
	if c.Pos.File == c.Source {
		return c.Pos.String()
	}
	return c.Source + ", " + c.Pos.String()
}

// configName names the configuration in advice: "the ConfigMap", else
// its source ("kube-proxy/config.yaml", "the command line").
func configName(c *model.Config) string {
	switch {
	case strings.HasPrefix(c.Source, "ConfigMap"):
		return "the ConfigMap"
	case strings.HasPrefix(c.Source, "command line"):
		return "the command line"
	}
	return c.Source
}

// detectorFields lists the configuration fields the detector of
// detectLocalMode reads.
func detectorFields(c *model.Config) []string {
	switch string(c.DetectLocalMode) {
	case "", "ClusterCIDR":
		return []string{"clusterCIDR"}
	case "BridgeInterface":
		return []string{"detectLocal.bridgeInterface"}
	case "InterfaceNamePrefix":
		return []string{"detectLocal.interfaceNamePrefix"}
	}
	return nil
}

// shownText says what settings a form of the masquerade rules of mode
// and family fam shows, and which configuration would write it: "the
// rules' local-traffic detector matches 10.32.1.0/24 (`! -s
// 10.32.1.0/24`, as detectLocalMode NodeCIDR writes it with the node's
// podCIDR)". The CIDR a detector matches is what the rules say, not a
// clusterCIDR: detectLocalMode NodeCIDR matches the node's podCIDR, and
// rules left by an earlier configuration an old clusterCIDR.
func shownText(snap *model.Snapshot, f proxier.MasqueradeForm, mode string, fam model.Family) string {
	switch {
	case f.None && mode == model.ModeIPVS:
		return "the rules show no KUBE-CLUSTER-IP masquerade rule in nat KUBE-SERVICES (IPVS mode writes one at every sync whatever its settings: " +
			"`! -s CIDR` or `! -i IFACE` with a local-traffic detector, `src,dst` without one, `dst,dst` alone with masqueradeAll)"
	case f.None:
		return "the rules show no ClusterIP masquerade rule (no local-traffic detector, masqueradeAll false)"
	case f.All:
		return "the rules show masqueradeAll true"
	case f.Local.CIDR.IsValid():
		cidr := f.Local.CIDR.String()
		text := "the rules' local-traffic detector matches " + cidr + " (`" + detectorMatch(mode, fam, "", cidr) + "`, as "
		if slices.Contains(snap.Node.PodCIDRs, f.Local.CIDR) {
			return text + "detectLocalMode NodeCIDR writes it with the node's podCIDR)"
		}
		return text + "detectLocalMode ClusterCIDR with clusterCIDR " + cidr + " writes it)"
	case strings.HasSuffix(f.Local.Interface, "+"):
		prefix := strings.TrimSuffix(f.Local.Interface, "+")
		return "the rules' local-traffic detector matches input interfaces " + f.Local.Interface + " (`" + detectorMatch(mode, fam, f.Local.Interface, "") +
			"`, as detectLocalMode InterfaceNamePrefix with interfaceNamePrefix " + prefix + " writes it)"
	case f.Local.Interface != "":
		return "the rules' local-traffic detector matches input interface " + f.Local.Interface + " (`" + detectorMatch(mode, fam, f.Local.Interface, "") +
			"`, as detectLocalMode BridgeInterface with bridgeInterface " + f.Local.Interface + " writes it)"
	}
	return "the rules show no local-traffic detector (ClusterIP traffic of every source masqueraded)"
}

// detectorMatch is the match of a local-traffic detector as mode writes
// it in the masquerade rules of family fam: "! -s 10.244.0.0/16",
// "! -i veth+", "ip saddr != 10.244.0.0/16", `iifname != "veth*"`; iface
// is spelt as iptables spells it (a prefix ending in "+").
func detectorMatch(mode string, fam model.Family, iface, cidr string) string {
	if mode != model.ModeNFTables {
		if iface != "" {
			return "! -i " + iface
		}
		return "! -s " + cidr
	}
	if iface != "" {
		if p, ok := strings.CutSuffix(iface, "+"); ok {
			iface = p + "*"
		}
		return "iifname != " + strconv.Quote(iface)
	}
	if fam == model.IPv6 {
		return "ip6 saddr != " + cidr
	}
	return "ip saddr != " + cidr
}

// configuredText says what the configuration makes of the settings a
// form shows: "detectLocalMode ClusterCIDR with clusterCIDR 10.244.0.0/16".
func configuredText(c *model.Config, want proxier.MasqueradeSettings, section string) string {
	if want.All {
		return section + ".masqueradeAll true"
	}
	mode := string(c.DetectLocalMode)
	if mode == "" {
		mode = "ClusterCIDR"
	}
	text := "detectLocalMode " + mode
	switch {
	case mode == "ClusterCIDR" && strings.TrimSpace(c.ClusterCIDR) != "":
		text += " with clusterCIDR " + strings.TrimSpace(c.ClusterCIDR)
	case mode == "ClusterCIDR":
		text += " without a clusterCIDR"
	case mode == "NodeCIDR" && want.Local.CIDR.IsValid():
		text += " (the node's podCIDR " + want.Local.CIDR.String() + ")"
	case want.Local.Interface != "":
		text += " (input interface " + want.Local.Interface + ")"
	}
	if !want.Local.Implemented() {
		text += ": no local-traffic detector"
	}
	return text
}

var clusterCIDRUncovered = &Check{
	ID:       idClusterCIDRUncovered,
	Severity: Warning,
	Title:    "clusterCIDR does not cover the pods",
	What: "With detectLocalMode ClusterCIDR (the default) kube-proxy tells the traffic of the cluster's pods apart by " +
		"its source: the first `clusterCIDR` of each IP family. Some Node objects give pod ranges (spec.podCIDRs) " +
		"outside it: the finding names the configuration's CIDR, the pod ranges outside it with their Nodes, and a " +
		"few endpoint addresses in those ranges. Nothing is said with masqueradeAll (every ClusterIP connection is " +
		"masqueraded anyway) or another detectLocalMode; without Node objects the check notes that it could not " +
		"compare.",
	Why: "kube-proxy treats the traffic of pods outside the clusterCIDR as coming from outside the cluster: their " +
		"connections to cluster IPs are masqueraded (the endpoints see the node's address instead of the pod's, " +
		"which defeats NetworkPolicies by source and client-IP logging), and in iptables and nftables mode their " +
		"traffic to the external and load balancer IPs of externalTrafficPolicy Local Services is not " +
		"short-circuited to the cluster's endpoints and is dropped on nodes without a local endpoint. A " +
		"clusterCIDR that is too narrow is a classic left-over of growing the pod network.",
	Fix: "Set clusterCIDR in the kube-proxy ConfigMap to the cluster's pod CIDR(s) (one per IP family, the range the " +
		"controller manager's --cluster-cidr allocates from), or use detectLocalMode NodeCIDR, then restart kube-proxy " +
		"(`kubectl -n kube-system rollout restart ds/kube-proxy`).",
	Needs: []Need{NeedConfig},
	Run:   runClusterCIDRUncovered,
}

// uncoveredShown bounds the pod ranges and addresses a finding of
// cluster-cidr-uncovered names.
const uncoveredShown = 3

func runClusterCIDRUncovered(p *Pass) {
	c := p.Snap.Config
	if mode := string(c.DetectLocalMode); mode != "" && mode != "ClusterCIDR" || strings.TrimSpace(c.ClusterCIDR) == "" {
		return // another detector, or none (config-invalid says so)
	}
	mode, _ := p.Mode()
	res := p.Resolution()
	type uncovered struct {
		node string
		pfx  netip.Prefix
		ev   model.Evidence
	}
	var nodes int
	var outside []uncovered
	detectors := map[model.Family]netip.Prefix{}
	for _, fam := range []model.Family{model.IPv4, model.IPv6} {
		want := proxier.ConfiguredMasquerade(res, mode, fam)
		if want.All {
			return // every ClusterIP connection is masqueraded
		}
		if want.Local.CIDR.IsValid() {
			detectors[fam] = want.Local.CIDR
		}
	}
	if p.Snap.Objects != nil {
		for _, n := range p.Snap.Objects.Nodes {
			cidrs := n.Spec.PodCIDRs
			if len(cidrs) == 0 && n.Spec.PodCIDR != "" {
				cidrs = []string{n.Spec.PodCIDR}
			}
			if len(cidrs) > 0 {
				nodes++
			}
			for _, s := range cidrs {
				pfx, err := netip.ParsePrefix(s)
				if err != nil {
					continue
				}
				pfx = pfx.Masked()
				d, ok := detectors[model.FamilyOf(pfx.Addr())]
				if !ok || d.Bits() <= pfx.Bits() && d.Contains(pfx.Addr()) {
					continue // no detector of the family, or covered
				}
				outside = append(outside, uncovered{n.Name, pfx, podCIDRsEvidence(n)})
			}
		}
	}
	if nodes == 0 {
		p.Note("not checked, as no input gives the Nodes' podCIDRs (kubectl get nodes -o yaml): whether clusterCIDR %s covers the pods", strings.TrimSpace(c.ClusterCIDR))
		return
	}
	if len(outside) == 0 {
		return
	}
	var ranges []string
	evidence := []model.Evidence{configEvidence(c, "clusterCIDR")}
	for i, u := range outside {
		if i < uncoveredShown {
			ranges = append(ranges, u.pfx.String()+" (Node "+u.node+")")
			evidence = append(evidence, u.ev)
		}
	}
	if len(outside) > uncoveredShown {
		ranges = append(ranges, fmt.Sprintf("and %d more", len(outside)-uncoveredShown))
	}
	// A few endpoints in those ranges: the pods whose traffic is taken for
	// traffic from outside.
	var addrs []string
	seen := map[netip.Addr]bool{}
	for _, sp := range p.Snap.ActivePorts() {
		for _, e := range sp.Endpoints {
			if len(addrs) == uncoveredShown || seen[e.IP] {
				continue
			}
			if slices.ContainsFunc(outside, func(u uncovered) bool { return u.pfx.Contains(e.IP) }) {
				seen[e.IP] = true
				addrs = append(addrs, e.IP.String())
			}
		}
	}
	slices.SortFunc(addrs, func(a, b string) int { return netip.MustParseAddr(a).Compare(netip.MustParseAddr(b)) })
	var cidrs []string
	for _, fam := range []model.Family{model.IPv4, model.IPv6} {
		if d, ok := detectors[fam]; ok {
			cidrs = append(cidrs, d.String())
		}
	}
	them := "them"
	if len(outside) == 1 {
		them = "it"
	}
	msg := fmt.Sprintf("clusterCIDR %s does not cover the pods: %s %s outside it, so kube-proxy treats the traffic of the pods in %s",
		strings.Join(cidrs, ", "), plural(len(outside), "pod range"), strings.Join(ranges, ", "), them)
	if len(addrs) > 0 {
		msg += " (endpoints " + strings.Join(addrs, ", ") + ")"
	}
	msg += " as coming from outside the cluster: their connections to cluster IPs are masqueraded"
	p.Report(Finding{
		Message:  msg,
		Evidence: evidence,
		Advice: "Set clusterCIDR in " + configName(c) + " to the cluster's pod CIDR(s), one per IP family, or use detectLocalMode NodeCIDR; " +
			"then restart kube-proxy (kubectl -n kube-system rollout restart ds/kube-proxy).",
	})
}

// The IDs of the checks of the configuration kube-proxy runs with.
const (
	idConfigNotApplied     = "config-not-applied"
	idClusterCIDRUncovered = "cluster-cidr-uncovered"
)

// configuredCIDR is what the message of config-not-applied says when the
// configuration given detects local traffic by a clusterCIDR (see
// configuredText).
const configuredCIDR = "with clusterCIDR "

// wrongCIDRNotApplied reports whether c, a finding of config-not-applied,
// explains d, one of cluster-cidr-uncovered on the same node: the rules
// detect local traffic otherwise than by the clusterCIDR the configuration
// gives, and that clusterCIDR does not cover the pods. Both come of one
// configuration, not applied and wrong: restarting kube-proxy, the remedy
// config-not-applied offers first, would apply it.
func wrongCIDRNotApplied(_ *facts, c, d *Finding) bool {
	return c.Node == d.Node && strings.Contains(c.Message, configuredCIDR)
}

// foldWrongCIDR adds to c, the finding of config-not-applied, that the
// configuration's clusterCIDR does not cover the pods (ds, the findings of
// cluster-cidr-uncovered), with their evidence, and advises fixing the
// configuration before kube-proxy restarts.
func foldWrongCIDR(_ *facts, c *Finding, ds []Finding) {
	// Restarting kube-proxy, which the message offers first, would apply
	// the wrong clusterCIDR: the message keeps only why the rules differ.
	if i := strings.LastIndex(c.Message, "; "+restartAdvice); i >= 0 {
		c.Message = c.Message[:i] + "; " + strings.TrimSuffix(restartAdvice, ": restart it (kubectl -n kube-system rollout restart ds/kube-proxy) or fix ")
	}
	for _, d := range ds {
		c.Evidence = appendEvidence(c.Evidence, d.Evidence...)
		c.Severity = max(c.Severity, d.Severity)
		c.Message += "; and the configuration given is wrong: " + d.Message + " once kube-proxy restarts with it"
	}
	c.Advice = "Fix clusterCIDR in the configuration before kube-proxy restarts (a node reboot or a rollout of the DaemonSet restarts it): " +
		"set it to the cluster's pod CIDR(s), one per IP family, or use detectLocalMode NodeCIDR (the rules show what the running kube-proxy uses); " +
		"then restart kube-proxy (kubectl -n kube-system rollout restart ds/kube-proxy)."
}

// noteWrongCIDR tells, in the status of cluster-cidr-uncovered, that its
// finding is part of config-not-applied's.
func noteWrongCIDR([]Finding) string {
	return "the clusterCIDR that does not cover the pods is that of a configuration kube-proxy has not applied: reported in the config-not-applied finding"
}
