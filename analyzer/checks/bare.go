package checks

import (
	"fmt"
	"slices"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/analyzer/view"
	"github.com/proxyscan/proxyscan/parsers"
)

// bareGroup gathers what the checks find missing in data planes that hold
// no Service entry at all: one cause, reported as one finding of the first
// check that found something missing, listing every object.
type bareGroup struct {
	check    string
	families []model.Family
	// programmed says, per family, whether kube-proxy's chains, maps or
	// sets are there at all (empty of Services) rather than nothing.
	programmed map[model.Family]bool
	anchors    []model.Evidence
	objects    []string
	evidence   []model.Evidence
	services   map[string]bool
	protocol   string
}

// bare reports whether v's data plane holds no Service entry at all, its
// dump being whole, on a node whose mode the inputs establish (configured,
// or inferred from what kube-proxy left in the dumps), or on a node whose
// dumps hold nothing of kube-proxy's in any mode (see unknownMode).
func (f *facts) bare(v *view.View) bool {
	p := f.partial[v.Family]
	if v.Mode == model.ModeNFTables && f.nftPartial[v.Family] != nil {
		return false // the Service entries may be after the cut
	}
	return len(v.Entries) == 0 && (f.res.ModeOrigin != resolve.Assumed || f.unknownMode()) && (p == nil || p.natWhole) &&
		len(f.snap.Objects.Services) > 0
}

// unknownMode reports a node whose mode no input says and whose dumps hold
// no rule of kube-proxy's, in any mode, nor any Service entry, while the
// dumps given cover every mode the node can run (iptables-save, an IPVS
// listing, and from 1.29, or with no version known, the nftables
// ruleset): whatever mode it runs, no Service is programmed. With a mode's
// dump missing, the Services may be programmed there: nothing is reported,
// and the run is inconclusive, naming what to add.
func (f *facts) unknownMode() bool {
	if f.res.ModeOrigin != resolve.Assumed || len(f.res.Programmed) > 0 {
		return false
	}
	for _, v := range f.views {
		if len(v.Entries) > 0 {
			return false
		}
	}
	var iptables, ipvs, nft bool
	for _, in := range f.snap.Inputs {
		switch in.Kind {
		case parsers.KindIPTablesSave:
			iptables = true
		case parsers.KindIPVSList, parsers.KindIPVSSave:
			ipvs = true
		case parsers.KindNFTText, parsers.KindNFTJSON:
			nft = true
		}
	}
	if v := f.res.Version.Version; v.Major > 0 && v.Before(1, 29) {
		nft = true // no nftables mode before 1.29
	}
	return iptables && ipvs && nft
}

// dataplaneInputs returns the paths of the node's data plane dumps.
func (f *facts) dataplaneInputs() []string {
	var out []string
	for _, in := range f.snap.Inputs {
		switch in.Kind {
		case parsers.KindIPTablesSave, parsers.KindIPVSList, parsers.KindIPVSSave, parsers.KindIPSetSave, parsers.KindIPSetList,
			parsers.KindNFTText, parsers.KindNFTJSON:
			out = append(out, in.Path)
		}
	}
	return out
}

// ReportMissing reports that the view's data plane lacks what kube-proxy
// programs for object (a Service port's destination, "ns/name:port
// cluster IP 10.96.0.10:53/udp"). When that data plane holds no Service
// entry at all, every such absence has that one cause: the finding joins
// one finding that lists the objects (see reportBare) instead of being
// reported on its own.
func (p *Pass) ReportMissing(v *view.View, object string, f Finding) {
	p.ReportMissingIn(v, object, f)
}

// ReportMissingIn is [Pass.ReportMissing] for a finding that rests only on
// what the given iptables tables lack (see [Pass.ReportAbsenceIn]).
func (p *Pass) ReportMissingIn(v *view.View, object string, f Finding, tables ...string) {
	if why := p.facts.otherModeOnly(v); why != "" {
		p.withhold(f, why)
		return
	}
	if !p.facts.bare(v) {
		p.ReportAbsenceIn(v, f, tables...)
		return
	}
	g := p.facts.bareGroup
	if g == nil {
		g = &bareGroup{check: p.Check.ID, programmed: map[model.Family]bool{}, services: map[string]bool{}}
		p.facts.bareGroup = g
	}
	if !contains(familyNames(g.families), string(v.Family)) {
		g.families = append(g.families, v.Family)
		g.programmed[v.Family] = p.kubeProxyPresent(v)
		g.anchors = append(g.anchors, anchor(v, view.ClusterIP))
	}
	if g.check != p.Check.ID {
		p.Note("the %s data plane holds no Service entry at all: what this check finds missing there is listed in one finding of %s", v.Family, g.check)
	}
	g.objects = append(g.objects, object)
	if len(f.Evidence) > 0 {
		g.evidence = append(g.evidence, f.Evidence[0])
	}
	if f.Service != "" {
		g.services[f.Service] = true
	}
	switch {
	case g.protocol == "":
		g.protocol = f.Protocol
	case g.protocol != f.Protocol:
		g.protocol = "mixed"
	}
}

// otherModeOnly says why what the view of the configured mode lacks is
// not reported when the data plane holds only the rules of another mode:
// mode-mismatch's one finding is the cause, and the configured mode's
// absence from the data plane is no Service's fault. It returns "" when
// the configured mode's rules are there, or no configuration says a mode.
func (f *facts) otherModeOnly(v *view.View) string {
	c, prog := f.snap.Config, f.res.Programmed
	if c == nil || len(prog) == 0 || c.EffectiveMode() != v.Mode || slices.Contains(prog, v.Mode) {
		return ""
	}
	return fmt.Sprintf("the data plane holds only %s-mode rules, not those of the configured %s mode (mode-mismatch): "+
		"what this check would find missing from %s mode is not judged", strings.Join(prog, " and "), v.Mode, v.Mode)
}

// kubeProxyPresent reports whether v's data plane holds anything of
// kube-proxy's: per-service objects, its nat KUBE-SERVICES chain, chains
// in its nftables table.
func (p *Pass) kubeProxyPresent(v *view.View) bool {
	if len(v.Objects) > 0 {
		return true
	}
	switch v.Mode {
	case model.ModeIPTables:
		d := p.Resolution().IPTables(v.Family)
		return d != nil && d.Chain("nat", kpnames.KubeServices) != nil
	case model.ModeNFTables:
		t := p.Resolution().NFTTable(v.Family)
		return t != nil && len(t.Chains) > 0
	}
	return false
}

func familyNames(fs []model.Family) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = string(f)
	}
	return out
}

// bareFinding returns the one finding of the objects missing from data
// planes without any Service entry, or false when there is none.
func (f *facts) bareFinding() (Finding, bool) {
	g := f.bareGroup
	if g == nil || len(g.objects) == 0 {
		return Finding{}, false
	}
	planes := "the " + strings.Join(familyNames(g.families), " and ") + " data plane"
	if len(g.families) > 1 {
		planes += "s hold"
	} else {
		planes += " holds"
	}
	cause := "no kube-proxy rules at all (kube-proxy never synced, or its rules were flushed)"
	for _, fam := range g.families {
		if g.programmed[fam] {
			cause = "kube-proxy's chains, tables or sets but not a single Service in them (kube-proxy never wrote the Services: it " +
				"cannot list them, or its syncs fail; or they were flushed)"
		}
	}
	list := listObjects(g.objects)
	msg := fmt.Sprintf("%s %s: %s of %s are not programmed: %s", planes, cause,
		plural(len(g.objects), "destination"), plural(len(g.services), "service port"), list)
	switch {
	case f.unknownMode():
		// No mode to speak of: what the dumps show is all there is.
		msg = fmt.Sprintf("no Service is programmed in any of the dumps given (%s), in any proxy mode, and no input says which mode the node runs: "+
			"%s of %s are in none of them: %s", strings.Join(f.dataplaneInputs(), ", "),
			plural(len(g.objects), "destination"), plural(len(g.services), "service port"), list)
	case f.res.ModeOrigin == resolve.Inferred:
		msg = fmt.Sprintf("%s %s; the %s mode is %s: %s of %s are not programmed: %s", planes, cause, f.res.Mode, f.res.ModeSource,
			plural(len(g.objects), "destination"), plural(len(g.services), "service port"), list)
	}
	out := Finding{
		Check:    g.check,
		Message:  msg,
		Evidence: append(append([]model.Evidence{}, g.anchors...), g.evidence...),
		Objects:  g.objects,
		Advice: "Check that kube-proxy runs on the node and read its log for sync and list/watch errors " +
			"(kubectl -n kube-system logs POD); if something flushed its rules (iptables -F, nft flush ruleset, a " +
			"firewall reload), stop it; then restart kube-proxy so that a full sync writes every Service again.",
	}
	if g.protocol != "mixed" {
		out.Protocol = g.protocol
	}
	return out, true
}
