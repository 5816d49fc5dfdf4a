package checks

import (
	"fmt"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/iptables"
)

var iptablesBackendMixed = &Check{
	ID:       "iptables-backend-mixed",
	Severity: Error,
	Title:    "kube-proxy chains in both legacy and nft iptables backends",
	What: "The node has KUBE-* chains in both iptables backends: iptables-legacy (x_tables) and iptables-nft " +
		"(nf_tables). kube-proxy writes through one of them only (its image's iptables wrapper picks the backend " +
		"with the most rules at start-up), so the other holds rules from an earlier kube-proxy, kubelet or CNI.",
	Why: "The kernel evaluates both backends: stale rules in the unused one keep DNATing or dropping Service traffic, " +
		"and nothing updates them. Mixed backends also come with a node image whose `iptables` points at a different " +
		"backend than kube-proxy's, which makes manual debugging misleading.",
	Fix: "Find out which backend kube-proxy uses (`kube-proxy --version` image, its logs: \"Detected iptables mode\"), " +
		"then flush the KUBE-* chains of the other backend (`iptables-legacy-save | grep KUBE`, " +
		"`kube-proxy --cleanup` run with that backend), and align the host's `update-alternatives --set iptables`.",
	Needs: []Need{NeedIPTables},
	Run:   runIPTablesBackendMixed,
}

func runIPTablesBackendMixed(p *Pass) {
	byFamily := map[model.Family]map[iptables.Backend]*iptables.Dump{}
	warned := map[*iptables.Dump]bool{}
	for _, d := range p.Snap.IPTables {
		fam := model.Family(d.Family)
		if byFamily[fam] == nil {
			byFamily[fam] = map[iptables.Backend]*iptables.Dump{}
		}
		if kubeChain(d) != nil {
			byFamily[fam][d.Backend] = d
		}
		for _, t := range d.Tables {
			for i, c := range append(append([]string{}, t.Comments...), t.Trailer...) {
				if !strings.Contains(c, "iptables-legacy tables present") || d.Backend == iptables.BackendLegacy || warned[d] || hasBackend(p.Snap, fam, iptables.BackendLegacy) {
					continue
				}
				warned[d] = true
				warning := model.Evidence{File: d.Name, Line: commentLine(t, i), Text: c}
				if kc := kubeChain(d); kc != nil {
					p.Report(Finding{
						Message:  fmt.Sprintf("%s warns that legacy iptables tables are present next to its kube-proxy chains (%s)", d.Name, fam),
						Evidence: []model.Evidence{warning, model.ChainEvidence(kc)},
						Advice:   "Capture iptables-legacy-save too (proxyscan collect does) to see what the legacy tables hold, and remove kube-proxy leftovers from the backend kube-proxy does not use.",
					})
					continue
				}
				p.Report(Finding{
					Severity: Warning,
					Message:  fmt.Sprintf("%s has no kube-proxy chain and warns that legacy iptables tables are present: kube-proxy's rules are in the iptables-legacy backend, which this dump does not show (%s)", d.Name, fam),
					Evidence: []model.Evidence{warning},
					Advice:   "Capture kube-proxy's rules with iptables-legacy-save (and ip6tables-legacy-save), and check that the node's iptables and kube-proxy's image use the same backend.",
				})
			}
		}
	}
	for _, fam := range []model.Family{model.IPv4, model.IPv6} {
		m := byFamily[fam]
		nft, legacy := m[iptables.BackendNFT], m[iptables.BackendLegacy]
		if nft != nil && legacy != nil {
			p.Report(Finding{
				Message:  fmt.Sprintf("kube-proxy chains exist in both the nf_tables (%s) and the legacy (%s) iptables backends (%s)", nft.Name, legacy.Name, fam),
				Evidence: []model.Evidence{model.ChainEvidence(kubeChain(nft)), model.ChainEvidence(kubeChain(legacy))},
				Advice:   "Keep kube-proxy's chains in the backend it uses and flush them from the other (kube-proxy --cleanup with that backend's binaries).",
			})
		}
	}
	if len(p.Snap.IPTables) > 0 && !hasBackend(p.Snap, "", iptables.BackendLegacy) {
		p.Note("no iptables-legacy-save output in the inputs: only the captured backend was checked")
	}
}

func hasBackend(s *model.Snapshot, fam model.Family, b iptables.Backend) bool {
	for _, d := range s.IPTables {
		if d.Backend == b && (fam == "" || model.Family(d.Family) == fam) {
			return true
		}
	}
	return false
}

// kubeChain returns a chain of kube-proxy's in a dump, preferring nat
// KUBE-SERVICES.
func kubeChain(d *iptables.Dump) *iptables.Chain {
	if c := d.Chain("nat", kpnames.KubeServices); c != nil {
		return c
	}
	for _, t := range d.Tables {
		for _, c := range t.Chains {
			if strings.HasPrefix(c.Name, "KUBE-") && c.Name != "KUBE-KUBELET-CANARY" && c.Name != "KUBE-IPTABLES-HINT" {
				return c
			}
		}
	}
	return nil
}

// commentLine returns the line of the i-th comment of a table: of its
// Comments, before its header, then of its Trailer, after its COMMIT (the
// line after its last rule or chain header).
func commentLine(t *iptables.Table, i int) int {
	if i < len(t.Comments) {
		return t.Line - len(t.Comments) + i
	}
	last := t.Line
	for _, c := range t.Chains {
		last = max(last, c.Line)
		if n := len(c.Rules); n > 0 {
			last = max(last, c.Rules[n-1].Line)
		}
	}
	return last + 2 + i - len(t.Comments)
}
