package checks

import (
	"sort"
	"strings"

	"github.com/google/nftables"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/view"
	"github.com/proxyscan/proxyscan/parsers/nft"
)

// kubeRuleset returns the nft ruleset kube-proxy's nftables mode is read
// from: of the listings holding a kube-proxy table, the text one (`nft
// list ruleset`, whose evidence has line numbers) before the JSON one
// (`nft -j list ruleset` of the same node), then by file name.
func kubeRuleset(s *model.Snapshot) *nft.Ruleset {
	var cands []*nft.Ruleset
	for _, rs := range s.NFT {
		if nftKubeTable(rs, nftables.TableFamilyIPv4) != nil || nftKubeTable(rs, nftables.TableFamilyIPv6) != nil {
			cands = append(cands, rs)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := nftSource(cands[i]), nftSource(cands[j])
		if ja, jb := isJSONListing(cands[i]), isJSONListing(cands[j]); ja != jb {
			return !ja
		}
		return a < b
	})
	return cands[0]
}

func nftKubeTable(rs *nft.Ruleset, fam nftables.TableFamily) *nft.Table {
	return rs.Table(fam, view.NFTTable)
}

func nftSource(rs *nft.Ruleset) string {
	if len(rs.Tables) == 0 {
		return ""
	}
	return rs.Tables[0].Pos.File
}

// isJSONListing reports whether a ruleset was read from JSON (its
// positions are JSON paths).
func isJSONListing(rs *nft.Ruleset) bool {
	return len(rs.Tables) > 0 && strings.HasPrefix(rs.Tables[0].Pos.Path, "$")
}

// nftViews returns the views of kube-proxy's nftables tables, IPv4 first.
func nftViews(s *model.Snapshot, attr *view.Attribution) []*view.View {
	rs := kubeRuleset(s)
	if rs == nil {
		return nil
	}
	var out []*view.View
	for _, fam := range []nftables.TableFamily{nftables.TableFamilyIPv4, nftables.TableFamilyIPv6} {
		if t := nftKubeTable(rs, fam); t != nil {
			out = append(out, view.FromNFT(t, attr))
		}
	}
	return out
}

// policyUnused reports a dispatch of a traffic policy that no traffic of
// the port uses (a Cluster-policy chain for a port whose only traffic is
// internal with internalTrafficPolicy Local, or the reverse): its
// endpoints cannot be judged against the EndpointSlices, and
// traffic-policy-mismatch reports it. IPVS mode falls back to the cluster
// endpoints and is judged against them.
func policyUnused(v *view.View, sp *model.ServicePort, d *view.Dispatch) bool {
	if v.Mode == model.ModeIPVS {
		return false
	}
	if d.Policy == view.PolicyLocal {
		return !sp.UsesLocalEndpoints(v.Family)
	}
	return !sp.UsesClusterEndpoints(v.Family)
}
