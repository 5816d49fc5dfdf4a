package checks

import (
	"fmt"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/ipvs"
)

// Coverage says whether a run checked what matters for the node's proxy
// mode on complete inputs. A run without findings is a clean bill of
// health only when it is complete; otherwise what was not checked is
// listed, with the inputs that would close each gap.
type Coverage struct {
	// Complete reports that the checks that matter for the node's mode
	// (coreChecks, those of them selected) ran on a data plane, an export
	// and a mode the inputs establish.
	Complete bool `json:"complete"`
	// Gaps say what was not checked, and why.
	Gaps []string `json:"gaps,omitempty"`
	// Needs are the inputs that would close the gaps, each once.
	Needs []InputNeed `json:"needs,omitempty"`
}

// AddNeed adds n to the inputs that would close the gaps, once per
// command: inputs got by the same command are one, under the label that
// says more.
func AddNeed(needs []InputNeed, n InputNeed) []InputNeed {
	for j, x := range needs {
		if x.Command == n.Command && (n.Command != "" || x.Input == n.Input) {
			if len(n.Input) > len(x.Input) {
				needs[j].Input = n.Input
			}
			return needs
		}
	}
	return append(needs, n)
}

// An InputNeed is an input the analysis lacks and how to get it.
type InputNeed struct {
	// Input names it ("iptables-save of the node").
	Input string `json:"input"`
	// Command is what gets it.
	Command string `json:"command"`
}

// coreChecks are the checks without which no verdict on a node's Services
// can be given: every Service programmed, no endpoint missing or stale.
var coreChecks = []string{"service-missing", "endpoint-missing", "endpoint-stale"}

// inputNeeds says how to get each input a check can need; the data plane
// depends on the mode.
var inputNeeds = map[Need]InputNeed{
	NeedServices:     {"the cluster's Services and EndpointSlices", "kubectl get services,endpointslices -A -o yaml > cluster.yaml"},
	NeedEndpoints:    {"the cluster's Services and EndpointSlices", "kubectl get services,endpointslices -A -o yaml > cluster.yaml"},
	NeedConfig:       {"the kube-proxy configuration", "kubectl -n kube-system get configmap kube-proxy -o yaml > kube-proxy-configmap.yaml"},
	NeedIPTables:     {"iptables-save of the node", "iptables-save > iptables-save.txt; ip6tables-save > ip6tables-save.txt (on the node, as root)"},
	NeedServiceCIDRs: {"the cluster's ServiceCIDRs", "kubectl get servicecidrs -o yaml > servicecidrs.yaml"},
}

// dataPlaneNeeds says how to get the data plane of each mode.
var dataPlaneNeeds = map[string]InputNeed{
	model.ModeIPTables: {"iptables-save of the node", "iptables-save > iptables-save.txt; ip6tables-save > ip6tables-save.txt (on the node, as root)"},
	model.ModeIPVS:     {"the node's IPVS table, ipsets and iptables rules", "ipvsadm -Sn > ipvsadm-save.txt; ipset save > ipset-save.txt; iptables-save > iptables-save.txt (on the node, as root)"},
	model.ModeNFTables: {"nft list ruleset of the node", "nft list ruleset > nft-ruleset.txt (on the node, as root)"},
}

// dataPlaneSources are the names, in a collected bundle's manifest, of the
// sources that read each mode's data plane (collect's source table).
var dataPlaneSources = map[string][]string{
	model.ModeIPTables: {"iptables-nft-save", "ip6tables-nft-save", "iptables-legacy-save", "ip6tables-legacy-save"},
	model.ModeIPVS:     {"ipvsadm", "ipvsadm-save", "ipset-save", "iptables-nft-save", "iptables-legacy-save"},
	model.ModeNFTables: {"nft-ruleset", "nft-ruleset-json"},
}

// coverage judges a run: the selected core checks must have run, the mode
// must be established, and the bundle's data plane sources must not have
// failed.
func coverage(f *facts, res *Result, selected []*Check) Coverage {
	var c Coverage
	need := func(n InputNeed) { c.Needs = AddNeed(c.Needs, n) }
	mode := f.res.Mode
	if f.res.ModeAssumed() {
		c.Gaps = append(c.Gaps, "the proxy mode is assumed ("+mode+", kube-proxy's default): no configuration and no kube-proxy rules say which mode the node runs"+ciliumNote(f.snap))
		need(inputNeeds[NeedConfig])
		need(dataPlaneNeeds[mode])
	}
	if v := f.snap.Version; v.Doubt != "" {
		// The rules were read as another release's than the one an input
		// reported: what only that release writes was not asked of them.
		c.Gaps = append(c.Gaps, fmt.Sprintf("the kube-proxy version is uncertain: %s; the rules were read as %s's, and what only the reported release writes was not checked", v.Doubt, v.MinorString()))
		need(versionNeed)
	}
	chosen := map[string]bool{}
	for _, ch := range selected {
		chosen[ch.ID] = true
	}
	// Checks skipped for the same reason make one gap.
	var reasons []string
	skipped := map[string][]string{}
	for _, st := range res.Statuses {
		if !isCore(st.ID) || !chosen[st.ID] {
			continue
		}
		if st.State == "skipped" {
			if skipped[st.Reason] == nil {
				reasons = append(reasons, st.Reason)
			}
			skipped[st.Reason] = append(skipped[st.Reason], st.ID)
			if n, ok := skippedFor(st.Reason, mode); ok {
				if n == NeedDataplane {
					need(dataPlaneNeeds[mode])
				} else {
					need(inputNeeds[n])
				}
			}
			continue
		}
		for _, n := range st.Notes {
			if coreGap(st.ID, n) {
				c.Gaps = append(c.Gaps, st.ID+": "+n)
				if in, ok := noteNeed(n, mode); ok {
					need(in)
				}
			}
		}
	}
	for _, r := range reasons {
		c.Gaps = append(c.Gaps, strings.Join(skipped[r], ", ")+" did not run: "+r)
	}
	// A mode the inputs establish whose data plane no input holds: the
	// checks that did not run for want of other inputs need it too.
	if len(c.Gaps) > 0 && !f.res.ModeAssumed() && !f.res.Captured(model.IPv4) && !f.res.Captured(model.IPv6) {
		need(dataPlaneNeeds[mode])
	}
	if f.tracer != nil && f.tracer.limit != nil {
		c.Gaps = append(c.Gaps, "service-unreachable: service ports not checked: "+f.tracer.limit.Error())
	}
	if f.tracer != nil && f.tracer.unmodelledN > 0 {
		more := ""
		if n := f.tracer.unmodelledN - len(f.tracer.unmodelled); n > 0 {
			more = fmt.Sprintf(" and %d more", n)
		}
		c.Gaps = append(c.Gaps, fmt.Sprintf("service-unreachable: whether %s%s reach their endpoints is not checked: "+
			"a path of theirs met rules the tracer does not model (or more rules than it follows on one path)",
			strings.Join(f.tracer.unmodelled, ", "), more))
	}
	if gaps := ipvsGaps(f, res, chosen); len(gaps) > 0 {
		c.Gaps = append(c.Gaps, gaps...)
		need(dataPlaneNeeds[mode])
	}
	// Notes of any check that start with one of uncheckedNotes are gaps.
	for _, st := range res.Statuses {
		if !chosen[st.ID] {
			continue
		}
		for _, n := range st.Notes {
			for _, u := range uncheckedNotes {
				if strings.HasPrefix(n, u.prefix) {
					if !coreGap(st.ID, n) {
						c.Gaps = append(c.Gaps, st.ID+": "+n)
					}
					need(u.need)
				}
			}
		}
	}
	if gaps := otherConfigGaps(f, res, chosen); len(gaps) > 0 {
		c.Gaps = append(c.Gaps, gaps...)
		need(aloneConfigNeed)
	}
	if gap := hiddenListingGap(f); gap != "" {
		c.Gaps = append(c.Gaps, gap)
		need(settingsIPVSNeed)
	}
	if gaps, needs := partialGaps(f); len(gaps) > 0 {
		c.Gaps = append(c.Gaps, gaps...)
		for _, n := range needs {
			need(n)
		}
	}
	if gaps := partialRulesetGaps(f); len(gaps) > 0 {
		c.Gaps = append(c.Gaps, gaps...)
		need(wholeRulesetNeed)
	}
	if gaps := partialSetGaps(f); len(gaps) > 0 {
		c.Gaps = append(c.Gaps, gaps...)
		need(wholeSetsNeed)
	}
	// A file that was to be read and was not may hold what the checks
	// would have needed.
	for _, in := range f.snap.Inputs {
		if in.Unread != "" {
			c.Gaps = append(c.Gaps, fmt.Sprintf("%s was not read: %s", in.Path, in.Unread))
		}
		// An export cut short may lack objects, or parts of its last one.
		if in.Kind == parsers.KindKube && in.Partial != "" {
			c.Gaps = append(c.Gaps, fmt.Sprintf("%s is partial: %s; the objects after the cut were not checked", in.Path, in.Partial))
		}
	}
	if m := f.snap.Manifest; m != nil {
		for _, name := range dataPlaneSources[mode] {
			for _, src := range m.Sources {
				if src.Name != name || src.Status != "failed" {
					continue
				}
				why := src.Error
				if why == "" {
					why = "failed"
				}
				c.Gaps = append(c.Gaps, fmt.Sprintf("the bundle's %s source failed when it was collected: %s", name, why))
				need(dataPlaneNeeds[mode])
			}
		}
	}
	c.Complete = len(c.Gaps) == 0
	return c
}

// nodeUnknown starts the note of a check that cannot tell which
// endpoints are local: no Node object names the node.
const nodeUnknown = "node unknown (pass --node NAME)"

// nodeNeed is how to name the node.
var nodeNeed = InputNeed{"the node's name (its Node object, or --node NAME)",
	"kubectl get node NODE -o yaml > node.yaml"}

// noteNeed returns the input that would close the gap a core check's note
// states: the Node object, or the data plane of a family (the notes of
// Pass.PortsOf and Pass.Views).
func noteNeed(note, mode string) (InputNeed, bool) {
	switch {
	case strings.HasPrefix(note, nodeUnknown):
		return nodeNeed, true
	case strings.HasPrefix(note, "no "+string(model.IPv4)+" data plane in the inputs"),
		strings.HasPrefix(note, "no "+string(model.IPv6)+" data plane in the inputs"):
		return dataPlaneNeeds[mode], true
	}
	return InputNeed{}, false
}

// ipvsGaps are the coverage gaps of an IPVS-mode data plane read without
// its ipsets or its iptables rules of a family: service-missing judges the
// set members and the rules of each destination only when they were
// captured.
func ipvsGaps(f *facts, res *Result, chosen map[string]bool) []string {
	ran := false
	for _, st := range res.Statuses {
		ran = ran || st.ID == "service-missing" && st.State == "ran"
	}
	if !ran || !chosen["service-missing"] {
		return nil
	}
	var out []string
	noSets := false
	for _, v := range f.views {
		if v.IPVS == nil {
			continue
		}
		if !v.IPVS.HasSets && !noSets {
			noSets = true
			out = append(out, "service-missing: no ipset listing in the inputs: the set members of the service ports (KUBE-CLUSTER-IP, KUBE-NODE-PORT-TCP and the like) not checked")
		}
		if !v.IPVS.HasIPTables {
			out = append(out, fmt.Sprintf("service-missing: no %s iptables rules in the inputs: IPVS mode's rules for the service ports (KUBE-SERVICES, KUBE-IPVS-FILTER) not checked", v.Family))
		}
	}
	return out
}

// coreGap reports whether the note n of check id is a gap as the note of
// a core check that says what was not checked.
func coreGap(id, n string) bool { return isCore(id) && strings.Contains(n, "not checked") }

// ciliumNote says, for a node whose data plane holds no kube-proxy rules,
// that its iptables rules are Cilium's (chains CILIUM_*): Cilium may then
// replace kube-proxy, and the Services are in its eBPF maps, which no
// input holds. It returns "" otherwise.
func ciliumNote(s *model.Snapshot) string {
	if len(resolve.ProgrammedModes(s)) > 0 {
		return ""
	}
	for _, d := range s.IPTables {
		for _, t := range d.Tables {
			for _, c := range t.Chains {
				if strings.HasPrefix(c.Name, "CILIUM_") {
					return fmt.Sprintf("; %s holds Cilium's chains (%s) and none of kube-proxy's: Cilium may replace kube-proxy on this node (kubeProxyReplacement), "+
						"and then the Services are in its eBPF maps, which proxyscan does not read (cilium-dbg service list shows them)", d.Name, c.Name)
				}
			}
		}
	}
	return ""
}

// uncheckedNotes are the beginnings of the notes in which a check, core or
// not, says what it did not report for want of an input, and that input.
var uncheckedNotes = []struct {
	prefix string
	need   InputNeed
}{
	{versionUnchecked, versionNeed},
	{addrsUnchecked, wholeAddrsNeed},
	{modulesUnchecked, wholeModulesNeed},
	{legacyEndpointsUnchecked, endpointSlicesNeed},
	{endpointsUnexported, inputNeeds[NeedEndpoints]},
	{endpointsNotHeld, inputNeeds[NeedEndpoints]},
	{endpointsCut, wholeExportNeed},
	{servicesCut, wholeExportNeed},
	{metricsUnchecked, wholeMetricsNeed},
	{sysctlsUnchecked, wholeSysctlsNeed},
	{servicesUnexported, inputNeeds[NeedServices]},
	{podCIDRUnchecked, podCIDRNeed},
	{podCIDRNodeUnchosen, nodeNeed},
}

// settingsIPVSNeed is how to get the IPVS table with what kube-proxy sets
// on its virtual servers when the listing given hides it.
var settingsIPVSNeed = InputNeed{"the node's IPVS table with its schedulers and weights (ipvsadm -Ln without --stats, --rate or --thresholds)",
	"ipvsadm -Sn > ipvsadm-save.txt (on the node, as root)"}

// hiddenListingGap is the coverage gap of an IPVS table read from a
// listing that does not print the schedulers, persistence or weights
// (ipvsadm -Ln --stats, --rate, --thresholds): the checks of those
// skipped its virtual servers.
func hiddenListingGap(f *facts) string {
	t := f.res.IPVSTable()
	if f.res.Mode != model.ModeIPVS || t == nil || t.Form != ipvs.FormList {
		return ""
	}
	hidden := t.Columns.Hidden()
	if hidden == "" {
		return ""
	}
	what := "scheduler, session affinity and weights"
	if t.Columns.ShowsScheduler() {
		what = "weights"
	}
	name := t.HeaderPos.File
	if name == "" && len(t.Services) > 0 {
		name = t.Services[0].Pos.File
	}
	return fmt.Sprintf("%s is an ipvsadm -Ln %s listing, which prints %s: the virtual servers' %s were not checked", name, t.Columns.Option(), hidden, what)
}

// skippedFor returns the input whose absence a skip reason states.
func skippedFor(reason, mode string) (Need, bool) {
	if strings.HasPrefix(reason, "no "+mode+" data plane") || reason == "no data plane" {
		return NeedDataplane, true
	}
	for n, hint := range needHints {
		if reason == hint {
			return n, true
		}
	}
	return "", false
}

func isCore(id string) bool {
	for _, x := range coreChecks {
		if x == id {
			return true
		}
	}
	return false
}

// Verdicts of a node or a report.
const (
	// VerdictOK: no finding, and the checks that matter ran on complete
	// inputs.
	VerdictOK = "ok"
	// VerdictFindings: findings were reported.
	VerdictFindings = "findings"
	// VerdictInconclusive: no finding, or informational ones only, but
	// what matters was not (all) checked; Coverage says what is missing.
	VerdictInconclusive = "inconclusive"
)

// Verdict returns the verdict of a run: findings, else ok when its
// coverage is complete, else inconclusive. Informational findings alone
// (an inventory read off a data plane pasted without the cluster's
// Services) leave an incomplete run inconclusive.
func (r *Result) Verdict() string {
	switch {
	case len(r.Findings) > 0 && (r.Coverage.Complete || !onlyInfo(r.Findings)):
		return VerdictFindings
	case r.Coverage.Complete:
		return VerdictOK
	}
	return VerdictInconclusive
}

// onlyInfo reports whether every finding is informational.
func onlyInfo(fs []Finding) bool {
	for _, f := range fs {
		if f.Severity > Info {
			return false
		}
	}
	return true
}
