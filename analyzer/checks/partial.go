package checks

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/view"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/ipset"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/nft"
)

// wholeDumpNeed is how to get a whole dump when the one given is partial.
var wholeDumpNeed = InputNeed{"a whole iptables-save of the node, as a file rather than pasted",
	"iptables-save > iptables-save.txt; ip6tables-save > ip6tables-save.txt (on the node, as root)"}

// partialInput is a data plane input of the node's mode read leniently
// that may not hold all of it: its file and why.
type partialInput struct {
	Name, Reason string
	// ipvs is set for an IPVS listing, whose gap asks for the IPVS table.
	ipvs bool
	// natWhole is set for a dump whole but for tables other than nat,
	// where the Service entries are: an empty nat KUBE-SERVICES is still
	// known to be empty.
	natWhole bool
	// tablesWhole is set for a dump partial only by the tables it does
	// not hold (iptables-save -t nat, iptables -t nat -L -n -v), which
	// are lacks: what its own tables lack is absent (see
	// [Pass.ReportAbsenceIn]).
	tablesWhole bool
	lacks       []string
	// otherBackend is set for an empty dump of one iptables backend,
	// whose gap asks for the other backend's dump.
	otherBackend bool
}

// nftBackendNeed is how to get the rules of the nf_tables backend when
// the dump given is iptables-legacy-save's.
var nftBackendNeed = InputNeed{"the node's iptables rules in the nf_tables backend",
	"iptables-nft-save > iptables-nft-save.txt; ip6tables-nft-save > ip6tables-nft-save.txt (on the node, as root)"}

// wholeRulesetNeed is how to get the whole nft ruleset when the listing
// given is cut short.
var wholeRulesetNeed = InputNeed{"the node's whole nft ruleset, as a file rather than pasted",
	"nft list ruleset > nft-ruleset.txt (on the node, as root)"}

// partialRuleset returns, in nftables mode, the families whose
// kube-proxy table the nft listing read for the node's data plane may
// not hold whole: the listing was cut short (read leniently from a
// paste) in the family's table, or before it. A table closed before the
// cut is whole.
func partialRuleset(f *facts) map[model.Family]*partialInput {
	if f.res.Mode != model.ModeNFTables {
		return nil
	}
	var out map[model.Family]*partialInput
	for _, fam := range []model.Family{model.IPv4, model.IPv6} {
		rs := f.res.NFTOf(fam)
		if rs == nil || rs.Partial == "" {
			continue
		}
		if t := f.res.NFTTable(fam); t == nil || t.Cut {
			if out == nil {
				out = map[model.Family]*partialInput{}
			}
			out[fam] = &partialInput{Name: rulesetName(f.snap, rs), Reason: rs.Partial}
		}
	}
	return out
}

// rulesetName returns the file an nft listing was read from.
func rulesetName(s *model.Snapshot, rs *nft.Ruleset) string {
	for _, t := range rs.Tables {
		if t.Pos.File != "" {
			return t.Pos.File
		}
	}
	for _, in := range s.Inputs {
		if in.Kind == parsers.KindNFTText && in.Partial == rs.Partial {
			return in.Path
		}
	}
	return "the nft listing"
}

// partialRulesetGaps are the coverage gaps of nft listings cut short, in
// nftables mode: the one read for the data plane, or every one when none
// holds kube-proxy's tables (they may be after the cut).
func partialRulesetGaps(f *facts) []string {
	if f.res.Mode != model.ModeNFTables {
		return nil
	}
	if f.res.NFT() != nil {
		var out []string
		var seen []*nft.Ruleset
		for _, fam := range []model.Family{model.IPv4, model.IPv6} {
			rs := f.res.NFTOf(fam)
			if rs.Partial == "" || slices.Contains(seen, rs) {
				continue
			}
			seen = append(seen, rs)
			out = append(out, fmt.Sprintf("%s is partial: %s; what it does not hold was not checked", rulesetName(f.snap, rs), rs.Partial))
		}
		return out
	}
	var out []string
	for _, in := range f.snap.Inputs {
		if in.Kind == parsers.KindNFTText && in.Partial != "" {
			out = append(out, fmt.Sprintf("%s is partial: %s; what it does not hold was not checked", in.Path, in.Partial))
		}
	}
	return out
}

// partialDumps returns the data plane inputs of the node's mode that are
// partial (read leniently from a paste cut short or cut out), by family:
// iptables dumps, and in IPVS mode the IPVS table (of both families).
func partialDumps(f *facts) map[model.Family]*partialInput {
	var out map[model.Family]*partialInput
	add := func(fam model.Family, p *partialInput) {
		if out == nil {
			out = map[model.Family]*partialInput{}
		}
		if out[fam] == nil {
			out[fam] = p
		}
	}
	for _, fam := range []model.Family{model.IPv4, model.IPv6} {
		d := f.res.IPTables(fam)
		if d == nil {
			continue
		}
		if d.Backend == iptables.BackendLegacy && kubeChain(d) == nil && !hasBackend(f.snap, fam, iptables.BackendNFT) {
			// kube-proxy writes with its image's iptables, nf_tables on
			// most nodes: an empty legacy backend says nothing of it.
			add(fam, &partialInput{Name: d.Name, Reason: "it is iptables-legacy-save output and holds no rule of kube-proxy's, " +
				"which may be in the nf_tables backend it does not show (iptables-nft-save)", otherBackend: true})
			continue
		}
		// Beside a dump of the other backend, the tables a dump lacks
		// may be the other backend's, and its own left over.
		alone := !otherBackend(f.snap, d)
		if d.Partial {
			p := &partialInput{Name: d.Name, Reason: d.PartialReason}
			if d.TablesWhole && alone {
				p.tablesWhole, p.lacks, p.natWhole = true, lackedTables(d), d.Table("nat") != nil
			}
			add(fam, p)
		} else if why := missingTables(d); why != "" {
			add(fam, &partialInput{Name: d.Name, Reason: why, natWhole: d.Table("nat") != nil, tablesWhole: alone, lacks: lackedTables(d)})
		}
	}
	if f.res.Mode == model.ModeIPVS {
		if d := f.res.IPVSTable(); d != nil && d.PartialReason != "" && len(d.Services) > 0 {
			p := &partialInput{Name: d.Services[0].Pos.File, Reason: d.PartialReason, ipvs: true}
			add(model.IPv4, p)
			add(model.IPv6, p)
		}
	}
	return out
}

// kubeProxyIPTables are the tables kube-proxy writes rules to in iptables
// and IPVS mode (mangle holds only its canary chain).
var kubeProxyIPTables = []string{"nat", "filter"}

// missingTables says which of kubeProxyIPTables a dump that holds other
// tables lacks (printed with iptables-save -t, or a table left out), or
// "". A dump without any table is a data plane without rules, not a
// partial one.
func missingTables(d *iptables.Dump) string {
	if len(d.Tables) == 0 {
		return ""
	}
	missing := lackedTables(d)
	if len(missing) == 0 {
		return ""
	}
	return "it holds no " + strings.Join(missing, " or ") + " table, where kube-proxy writes its rules too (printed with iptables-save -t, or a table left out)"
}

// interfacesHidden reports whether the iptables dump of v's data plane is
// a listing without -v (see [iptables.Dump.HidesInterfaces]), noting it:
// what the check would read of its rules may rest on a condition on an
// interface the listing does not show. The checks that read the paths
// rules give traffic by its origin (a local-traffic detector) then read
// nothing of that data plane.
func (p *Pass) interfacesHidden(v *view.View) bool {
	if v.Mode == model.ModeNFTables {
		return false
	}
	d := p.facts.res.IPTablesOf(v.Mode, v.Family)
	if d == nil || !d.HidesInterfaces {
		return false
	}
	p.Note("%s is listed without -v, which does not show the interfaces rules match (-i, -o): its %s rules were not read for this check (list them with iptables -L -n -v, or give iptables-save)", d.Name, v.Family)
	return true
}

// natOnly are the tables of a finding that rests on the nat table alone
// (see [Pass.ReportAbsenceIn]).
var natOnly = []string{"nat"}

// otherBackend reports whether s holds an iptables dump of d's family
// from another backend than d's (nf_tables and legacy).
func otherBackend(s *model.Snapshot, d *iptables.Dump) bool {
	for _, x := range s.IPTables {
		if x.Family == d.Family && x.Backend != d.Backend {
			return true
		}
	}
	return false
}

// lackedTables returns those of kubeProxyIPTables that d does not hold.
func lackedTables(d *iptables.Dump) []string {
	var missing []string
	for _, t := range kubeProxyIPTables {
		if d.Table(t) == nil {
			missing = append(missing, t)
		}
	}
	return missing
}

// ReportAbsence reports a finding that rests on something the view's data
// plane lacks: an entry, a backend, a rule, a reference to a chain. When
// the dump the view was read from is partial, what it lacks may only be
// outside what was pasted; when the proxy mode is only assumed, it may be
// programmed by the mode the node really runs: either way the finding is
// not reported, and what it is about is noted as not checked instead.
func (p *Pass) ReportAbsence(v *view.View, f Finding) { p.reportAbsence(v, f, true) }

// ReportAbsenceIn is [Pass.ReportAbsence] for a finding that, in iptables
// mode, rests only on what the given tables lack (a Service's entry in
// nat KUBE-SERVICES, an endpoint's jump in its KUBE-SVC chain): a dump
// partial only by other tables it does not hold (iptables-save -t nat,
// iptables -t nat -L -n -v) holds these whole, and the finding is
// reported.
func (p *Pass) ReportAbsenceIn(v *view.View, f Finding, tables ...string) {
	if p.tablesHeld(v, tables) {
		p.Report(f)
		return
	}
	p.ReportAbsence(v, f)
}

// tablesHeld reports whether the iptables-mode dump of v, partial only by
// tables it does not hold, holds each of tables whole, on a node whose
// mode is not assumed.
func (p *Pass) tablesHeld(v *view.View, tables []string) bool {
	d := p.facts.partial[v.Family]
	if len(tables) == 0 || d == nil || !d.tablesWhole || v.Mode != model.ModeIPTables || p.facts.res.ModeAssumed() {
		return false
	}
	for _, t := range tables {
		if slices.Contains(d.lacks, t) {
			return false
		}
	}
	return true
}

// absenceWithheld says why the findings of absence of v are withheld, or
// "" when they are reported. byMode is false for a finding about the given
// dump's own kube-proxy chains, which holds whatever the mode.
func (p *Pass) absenceWithheld(v *view.View, byMode bool) string {
	switch d, r := p.facts.partial[v.Family], p.facts.nftPartial[v.Family]; {
	case byMode && p.facts.res.ModeAssumed():
		return "the proxy mode is assumed (" + p.facts.res.Mode + "), and what this check found missing may be programmed by the mode the node runs"
	case d != nil && v.Mode != model.ModeNFTables:
		return d.Name + " is partial, and what this check found missing may only be outside it"
	case r != nil && v.Mode == model.ModeNFTables:
		return r.Name + " is partial, and what this check found missing may only be outside it"
	}
	return ""
}

// ReportSetAbsence is ReportAbsence for a finding that, in IPVS mode,
// also rests on members missing from the ipsets named (base names, as
// kpnames has them): when an ipset listing may not show them (a listing
// cut short, filtered, or of some sets only; setMayHide), the finding is
// noted as not checked instead.
func (p *Pass) ReportSetAbsence(v *view.View, f Finding, sets ...string) {
	if v.IPVS != nil && v.IPVS.HasSets {
		for _, set := range sets {
			if setMayHide(p.Snap, v.IPVS.Set(set)) {
				p.withhold(f, partialSetsName(p.Snap)+" is partial, and what this check found missing may only be outside it")
				return
			}
		}
	}
	p.ReportAbsence(v, f)
}

// partialSetsName names the ipset listings that are partial.
func partialSetsName(s *model.Snapshot) string {
	var names []string
	for _, in := range s.Inputs {
		if in.Partial != "" && (in.Kind == parsers.KindIPSetList || in.Kind == parsers.KindIPSetSave) {
			names = append(names, in.Path)
		}
	}
	if len(names) == 0 {
		return "the ipset listing"
	}
	return strings.Join(names, ", ")
}

// reportAbsence is ReportAbsence; byMode is as for absenceWithheld.
func (p *Pass) reportAbsence(v *view.View, f Finding, byMode bool) {
	why := p.absenceWithheld(v, byMode)
	if why != "" {
		p.withhold(f, why)
		return
	}
	p.Report(f)
}

// withhold notes what f is about as not checked, for the reason why (see
// noteUncovered).
func (p *Pass) withhold(f Finding, why string) {
	what := f.Service // "" for rules of no Service
	if p.uncovered == nil {
		p.uncovered = map[string]map[string]bool{}
	}
	if p.uncovered[why] == nil {
		p.uncovered[why] = map[string]bool{}
	}
	p.uncovered[why][what] = true
}

// withheld reports whether ReportAbsence withholds the findings of v.
func (p *Pass) withheld(v *view.View) bool { return p.absenceWithheld(v, true) != "" }

// noteUncovered turns what ReportAbsence withheld into notes.
func (p *Pass) noteUncovered() {
	whys := make([]string, 0, len(p.uncovered))
	for why := range p.uncovered {
		whys = append(whys, why)
	}
	sort.Strings(whys)
	for _, why := range whys {
		var names []string
		other := false
		for n := range p.uncovered[why] {
			if n == "" {
				other = true
			} else {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		var what []string
		if len(names) > 0 {
			list, more := names, ""
			if len(list) > 5 {
				list, more = list[:5], fmt.Sprintf(" and %d more", len(names)-5)
			}
			what = append(what, fmt.Sprintf("%s (%s%s)", plural(len(names), "service port"), strings.Join(list, ", "), more))
		}
		if other {
			what = append(what, "rules of no Service")
		}
		p.Note("not checked for %s: %s", strings.Join(what, " and "), why)
	}
}

// wholeIPVSNeed is how to get the whole IPVS table when the listing given
// is partial.
var wholeIPVSNeed = InputNeed{"the node's whole IPVS table, as a file rather than pasted",
	"ipvsadm -Ln > ipvsadm.txt (on the node, as root)"}

// wholeSetsNeed is how to get every member of the node's ipsets when the
// listing given is cut short.
var wholeSetsNeed = InputNeed{"the node's ipsets whole, as a file rather than pasted",
	"ipset save > ipset-save.txt (on the node, as root)"}

// partialSetGaps are the coverage gaps of ipset listings cut short: a
// member they do not list may be in its set.
func partialSetGaps(f *facts) []string {
	var out []string
	for _, in := range f.snap.Inputs {
		if in.Partial != "" && (in.Kind == parsers.KindIPSetList || in.Kind == parsers.KindIPSetSave) {
			out = append(out, fmt.Sprintf("%s is partial: %s; members it does not list were not checked", in.Path, in.Partial))
		}
	}
	return out
}

// setMayHide reports whether a member missing from a set may only be
// outside what an ipset listing cut short shows: the set is one whose
// members were cut, or it is not listed and a listing was cut (the sets
// after the cut are not in it).
func setMayHide(s *model.Snapshot, set *ipset.Set) bool {
	if set != nil {
		return set.Partial != ""
	}
	for _, d := range s.IPSets {
		if d.PartialReason != "" {
			return true
		}
	}
	return false
}

// partialGaps are the coverage gaps of partial dumps, and whether one is
// an IPVS listing.
func partialGaps(f *facts) (out []string, needs []InputNeed) {
	seen := map[*partialInput]bool{}
	for _, fam := range []model.Family{model.IPv4, model.IPv6} {
		d := f.partial[fam]
		if d == nil || seen[d] {
			continue
		}
		seen[d] = true
		switch {
		case d.ipvs:
			needs = AddNeed(needs, wholeIPVSNeed)
			out = append(out, fmt.Sprintf("%s is partial: %s; what it does not hold was not checked", d.Name, d.Reason))
			continue
		case d.otherBackend:
			needs = AddNeed(needs, nftBackendNeed)
		default:
			needs = AddNeed(needs, wholeDumpNeed)
		}
		out = append(out, fmt.Sprintf("%s (%s) is partial: %s; what it does not hold was not checked", d.Name, fam, d.Reason))
	}
	return out, needs
}

// plural returns "1 service port", "2 service ports".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// wholeExportNeed is how to get the Services and EndpointSlices whole when
// an export given is cut short.
var wholeExportNeed = InputNeed{"the cluster's Services and EndpointSlices, as a file rather than pasted",
	"kubectl get services,endpointslices -A -o yaml > cluster.yaml"}
