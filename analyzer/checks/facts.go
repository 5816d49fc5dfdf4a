package checks

import (
	"fmt"
	"strings"

	"github.com/google/nftables"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/view"
	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// facts are computed once per snapshot and shared by every check's pass.
type facts struct {
	snap *model.Snapshot
	// mode is the proxy mode the node runs (configured, else inferred from
	// the data plane), and modeSource says which.
	mode, modeSource string
	// programmed lists the modes the data plane shows rules of.
	programmed []string
	// views are the views of the node's mode, one per family present.
	views []*view.View
	attr  *view.Attribution
	exp   map[expKey]*Expect
	// tracer holds the traces of packets through the node's data plane
	// (built on first use).
	tracer *traceFacts
	// fired holds the IDs of the checks of the run that reported
	// findings so far, services the service ports they named.
	fired, services map[string]bool
}

type expKey struct {
	sp  *model.ServicePort
	fam model.Family
}

func newFacts(s *model.Snapshot, checks []*Check) *facts {
	f := &facts{snap: s, attr: view.NewAttribution(s.Ports), exp: map[expKey]*Expect{}}
	f.programmed = ProgrammedModes(s)
	switch {
	case s.Config != nil:
		f.mode, f.modeSource = s.Config.EffectiveMode(), "configured in "+s.Config.Source
	case len(f.programmed) == 1:
		f.mode, f.modeSource = f.programmed[0], "inferred from the data plane"
	default:
		f.mode, f.modeSource = model.ModeIPTables, "assumed (kube-proxy's default)"
	}
	for _, c := range checks {
		if c.Traces && c.Run != nil && f.missingInputs(c.Needs) == "" {
			(&Pass{Snap: s, Check: c, facts: f}).startTraces()
			break
		}
	}
	f.views = f.buildViews()
	return f
}

// ProgrammedModes returns the proxy modes whose rules the data plane of a
// snapshot shows, in a fixed order.
func ProgrammedModes(s *model.Snapshot) []string {
	var out []string
	ipt, ipvs := false, false
	for _, d := range s.IPTables {
		ipt = ipt || IsIPTablesMode(d)
		ipvs = ipvs || IsIPVSMode(d)
	}
	for _, rs := range s.NFT {
		for _, t := range rs.Tables {
			ipt = ipt || nftHasIPTablesMode(t) // iptables-nft's tables as nft lists them
		}
	}
	if ipt {
		out = append(out, model.ModeIPTables)
	}
	for _, d := range s.IPVS {
		ipvs = ipvs || len(d.Services) > 0
	}
	if ipvs {
		out = append(out, model.ModeIPVS)
	}
	for _, rs := range s.NFT {
		if rs.Table(nftables.TableFamilyIPv4, "kube-proxy") != nil || rs.Table(nftables.TableFamilyIPv6, "kube-proxy") != nil {
			out = append(out, model.ModeNFTables)
			break
		}
	}
	return out
}

// IsIPTablesMode reports whether a dump holds kube-proxy iptables-mode
// rules: per-service chains in the nat table.
func IsIPTablesMode(d *iptables.Dump) bool {
	nat := d.Table("nat")
	if nat == nil {
		return false
	}
	for _, c := range nat.Chains {
		if strings.HasPrefix(c.Name, model.ChainSVC) || strings.HasPrefix(c.Name, model.ChainSEP) ||
			strings.HasPrefix(c.Name, model.ChainSVL) || strings.HasPrefix(c.Name, model.ChainXLB) {
			return true
		}
	}
	if c := nat.Chain("KUBE-SERVICES"); c != nil {
		for _, r := range c.Rules {
			if r.Has("--dport") && r.Has("-d") {
				return true
			}
		}
	}
	return false
}

// IsIPVSMode reports whether a dump holds the iptables rules of kube-proxy's
// IPVS mode.
func IsIPVSMode(d *iptables.Dump) bool {
	for _, t := range d.Tables {
		for _, c := range t.Chains {
			switch c.Name {
			case "KUBE-IPVS-FILTER", "KUBE-IPVS-OUT-FILTER", "KUBE-NODE-PORT", "KUBE-LOAD-BALANCER":
				return true
			}
		}
	}
	return false
}

// kubeDump returns, per family, the iptables dump kube-proxy programs: the
// one with iptables-mode rules (the most rules when both backends have
// some), else any dump of the family.
func kubeDumps(s *model.Snapshot) map[model.Family]*iptables.Dump {
	out := map[model.Family]*iptables.Dump{}
	score := func(d *iptables.Dump) int {
		if !IsIPTablesMode(d) {
			return 0
		}
		return 1 + d.NumRules()
	}
	for _, d := range s.IPTables {
		fam := model.Family(d.Family)
		if old, ok := out[fam]; !ok || score(d) > score(old) {
			out[fam] = d
		}
	}
	return out
}

func (f *facts) buildViews() []*view.View {
	var out []*view.View
	switch f.mode {
	case model.ModeIPTables:
		dumps := kubeDumps(f.snap)
		itpLocal := map[string]bool{}
		for _, sp := range f.snap.ActivePorts() {
			itpLocal[sp.String()] = sp.InternalPolicyLocal
		}
		for _, fam := range []model.Family{model.IPv4, model.IPv6} {
			if d := dumps[fam]; d != nil {
				v := view.FromIPTables(d, f.attr)
				if !f.snap.Version.AtLeast(24) {
					view.MarkLegacyInternalLocal(v, func(s string) bool { return itpLocal[s] })
				}
				out = append(out, v)
			}
		}
	case model.ModeIPVS:
		out = ipvsViews(f.snap)
	case model.ModeNFTables:
		out = nftViews(f.snap, f.attr)
	}
	return out
}

func (f *facts) missing(needs []Need) string {
	for _, n := range needs {
		ok := true
		switch n {
		case NeedServices:
			ok = len(f.snap.Objects.Services) > 0
		case NeedEndpoints:
			ok = f.snap.Objects.EndpointObjects() > 0
		case NeedDataplane:
			ok = len(f.views) > 0
			if !ok {
				return fmt.Sprintf("no %s data plane in the inputs (mode %s)", f.mode, f.modeSource)
			}
		case NeedIPTables:
			ok = len(f.snap.IPTables) > 0
		case NeedConfig:
			ok = f.snap.Config != nil
		}
		if !ok {
			return needHints[n]
		}
	}
	return ""
}

// Mode returns the node's proxy mode and how it was determined.
func (p *Pass) Mode() (mode, source string) { return p.facts.mode, p.facts.modeSource }

// Views returns the views of the node's data plane, one per family. A
// family whose service ports have no view (no dump of it) is noted.
func (p *Pass) Views() []*view.View {
	for _, fam := range []model.Family{model.IPv4, model.IPv6} {
		covered := false
		for _, v := range p.facts.views {
			covered = covered || v.Family == fam
		}
		if covered || len(p.facts.views) == 0 {
			continue
		}
		n := 0
		for _, sp := range p.Snap.ActivePorts() {
			if _, ok := sp.ClusterIP(fam); ok {
				n++
			}
		}
		if n > 0 {
			p.Note("no %s data plane in the inputs: %d %s service ports not checked", fam, n, fam)
		}
	}
	return p.facts.views
}

// Expect returns what kube-proxy programs for a service port in a family.
func (p *Pass) Expect(sp *model.ServicePort, fam model.Family) *Expect {
	k := expKey{sp, fam}
	if e := p.facts.exp[k]; e != nil {
		return e
	}
	e := newExpect(p.Snap, sp, fam, p.facts.mode)
	p.facts.exp[k] = e
	return e
}

// PortsOf returns the active service ports that have an address of the
// view's family, noting (once) when node-local information is missing.
func (p *Pass) PortsOf(v *view.View) []*model.ServicePort {
	var out []*model.ServicePort
	for _, sp := range p.Snap.ActivePorts() {
		if _, ok := sp.ClusterIP(v.Family); !ok {
			continue
		}
		if p.Snap.Node.Name == "" && (sp.InternalPolicyLocal || sp.ExternalPolicyLocal) {
			p.Note("node unknown (pass --node NAME): Local traffic policy of %s not checked", sp.Name)
			continue
		}
		out = append(out, sp)
	}
	return out
}

// missingInputs is [facts.missing] before the views are built: the data
// plane is taken as present when the snapshot holds any dump of one.
func (f *facts) missingInputs(needs []Need) string {
	rest := make([]Need, 0, len(needs))
	for _, n := range needs {
		if n == NeedDataplane {
			if len(f.snap.IPTables) == 0 && len(f.snap.IPVS) == 0 && len(f.snap.NFT) == 0 {
				return "no data plane"
			}
			continue
		}
		rest = append(rest, n)
	}
	return f.missing(rest)
}
