package resolve

import (
	"slices"
	"sort"
	"strings"

	"github.com/google/nftables"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/ipvs"
	"github.com/proxyscan/proxyscan/parsers/nft"
)

// dumps are the captured dumps kube-proxy's modes are read from.
type dumps struct {
	// iptables and ipvsIPTables hold, per family (IPv4 at 0), the
	// iptables dump of the iptables mode and of the IPVS mode.
	iptables, ipvsIPTables [2]*iptables.Dump
	// ipvsList and ipvsSave are the IPVS tables of each form with the most
	// virtual servers.
	ipvsList, ipvsSave *ipvs.Dump
	// nft is the ruleset holding kube-proxy's nftables tables; nftFam,
	// per family, the one holding that family's table (nft list table ip
	// kube-proxy and nft list table ip6 kube-proxy are two listings).
	nft    *nft.Ruleset
	nftFam [2]*nft.Ruleset
	// nftEmpty is an nft listing without any table (nft list ruleset
	// printed nothing), kept when no listing holds kube-proxy's tables;
	// nftNone holds, per family, the empty table that stands for
	// kube-proxy's then.
	nftEmpty *nft.Ruleset
	nftNone  [2]*nft.Table
}

func famIndex(f model.Family) int {
	if f == model.IPv6 {
		return 1
	}
	return 0
}

// IPTables returns the iptables dump of family f kube-proxy writes to in
// the resolved mode (its iptables rules in IPVS mode): of several (both
// iptables backends, or several files), the one holding that mode's chains,
// then the one with kube-proxy's chains and the most rules; else any dump
// of the family; nil when none was captured or the mode writes none.
func (r *Resolution) IPTables(f model.Family) *iptables.Dump {
	return r.IPTablesOf(r.Mode, f)
}

// IPTablesOf is [Resolution.IPTables] for another mode than the resolved
// one (a leftover of an earlier mode, a migration).
func (r *Resolution) IPTablesOf(mode string, f model.Family) *iptables.Dump {
	switch mode {
	case model.ModeIPTables:
		return r.dumps.iptables[famIndex(f)]
	case model.ModeIPVS:
		return r.dumps.ipvsIPTables[famIndex(f)]
	}
	return nil
}

// IPVSTable returns the IPVS table views read: the listing (ipvsadm -Ln,
// which shows connection counts) with the most virtual servers, else the
// save form (-Sn). A listing that does not print the schedulers or the
// weights (ipvsadm -Ln --stats) is read only when there is no save form.
func (r *Resolution) IPVSTable() *ipvs.Dump {
	if l := r.dumps.ipvsList; l != nil && (l.Columns.Hidden() == "" || r.dumps.ipvsSave == nil) {
		return l
	}
	if r.dumps.ipvsSave != nil {
		return r.dumps.ipvsSave
	}
	return r.dumps.ipvsList
}

// listScore ranks IPVS listings: those that print every setting
// kube-proxy makes first, then by their virtual servers.
func listScore(d *ipvs.Dump) [2]int {
	return [2]int{boolInt(d.Columns.Hidden() == ""), len(d.Services)}
}

// IPVSSaved returns the IPVS table in the form ipvsadm -R loads (-Sn) when
// captured, else the listing: what a comparison with generated servers
// reads.
func (r *Resolution) IPVSSaved() *ipvs.Dump {
	if r.dumps.ipvsSave != nil {
		return r.dumps.ipvsSave
	}
	return r.dumps.ipvsList
}

// NFT returns the nft listing holding kube-proxy's nftables tables: the
// text one (nft list ruleset, whose evidence has line numbers) before the
// JSON one of the same node, then by file name; nil when none has them.
func (r *Resolution) NFT() *nft.Ruleset { return r.dumps.nft }

// NFTTable returns kube-proxy's nftables table of family f, or nil.
func (r *Resolution) NFTTable(f model.Family) *nft.Table {
	if r.dumps.nft == nil {
		// A listing of no table at all, on a node of the nftables mode:
		// kube-proxy programmed nothing in a family it runs.
		if r.dumps.nftEmpty != nil && r.Mode == model.ModeNFTables && slices.Contains(r.Families, f) {
			i := famIndex(f)
			if r.dumps.nftNone[i] == nil {
				t := &nft.Table{Family: nftFamily(f), Name: kpnames.NFTTable}
				for _, in := range r.Snap.Inputs {
					if in.Kind == parsers.KindNFTText && in.Unread == "" {
						t.Pos = parsers.Pos{File: in.Path}
						break
					}
				}
				r.dumps.nftNone[i] = t
			}
			return r.dumps.nftNone[i]
		}
		return nil
	}
	if rs := r.dumps.nftFam[famIndex(f)]; rs != nil {
		return rs.Table(nftFamily(f), kpnames.NFTTable)
	}
	return nil
}

// NFTOf returns the nft listing kube-proxy's table of family f was read
// from, or the one of [Resolution.NFT] when no listing holds that table.
func (r *Resolution) NFTOf(f model.Family) *nft.Ruleset {
	if rs := r.dumps.nftFam[famIndex(f)]; rs != nil {
		return rs
	}
	return r.dumps.nft
}

func nftFamily(f model.Family) nftables.TableFamily {
	if f == model.IPv6 {
		return nftables.TableFamilyIPv6
	}
	return nftables.TableFamilyIPv4
}

// Captured reports whether the inputs hold the data plane of the resolved
// mode in family f: the dump its rules are read from.
func (r *Resolution) Captured(f model.Family) bool {
	switch r.Mode {
	case model.ModeIPTables:
		return r.dumps.iptables[famIndex(f)] != nil
	case model.ModeIPVS:
		return r.IPVSTable() != nil
	case model.ModeNFTables:
		return r.NFTTable(f) != nil
	}
	return false
}

func selectDumps(s *model.Snapshot) dumps {
	var d dumps
	type scored struct {
		d     *iptables.Dump
		score [2]int
	}
	var ipt, ipv [2]scored
	for _, x := range s.IPTables {
		if x.Family != iptables.IPv4 && x.Family != iptables.IPv6 {
			continue
		}
		i := famIndex(model.Family(x.Family))
		kube := 0
		if hasKubeChains(x) {
			kube = 1
		}
		rules := x.NumRules()
		// Of several dumps of a family, the one with the mode's chains,
		// then with kube-proxy's chains and the most rules; the first read
		// on a tie.
		if sc := [2]int{boolInt(IsIPTablesMode(x))*2 + kube, rules}; ipt[i].d == nil || less(ipt[i].score, sc) {
			ipt[i] = scored{x, sc}
		}
		if sc := [2]int{boolInt(IsIPVSMode(x))*2 + kube, rules}; ipv[i].d == nil || less(ipv[i].score, sc) {
			ipv[i] = scored{x, sc}
		}
	}
	for i := range ipt {
		d.iptables[i], d.ipvsIPTables[i] = ipt[i].d, ipv[i].d
	}
	for _, x := range s.IPVS {
		switch x.Form {
		case ipvs.FormList:
			// A listing that prints every setting kube-proxy makes wins
			// over one that does not (--stats, --rate, --thresholds),
			// then the one with the most virtual servers.
			if d.ipvsList == nil || less(listScore(d.ipvsList), listScore(x)) {
				d.ipvsList = x
			}
		case ipvs.FormSave:
			if d.ipvsSave == nil || len(x.Services) > len(d.ipvsSave.Services) {
				d.ipvsSave = x
			}
		}
	}
	var cands []*nft.Ruleset
	for _, rs := range s.NFT {
		if hasNFTKubeTable(rs) {
			cands = append(cands, rs)
		}
	}
	sort.SliceStable(cands, func(i, j int) bool {
		// A whole listing before one cut short.
		if pi, pj := cands[i].Partial != "", cands[j].Partial != ""; pi != pj {
			return !pi
		}
		if ji, jj := isJSONListing(cands[i]), isJSONListing(cands[j]); ji != jj {
			return !ji
		}
		return rulesetFile(cands[i]) < rulesetFile(cands[j])
	})
	if len(cands) > 0 {
		d.nft = cands[0]
		for _, f := range []model.Family{model.IPv4, model.IPv6} {
			for _, rs := range cands {
				if rs.Table(nftFamily(f), kpnames.NFTTable) != nil {
					d.nftFam[famIndex(f)] = rs
					break
				}
			}
		}
	} else {
		for _, rs := range s.NFT {
			// A listing cut short before its first table may not be
			// empty.
			if len(rs.Tables) == 0 && rs.Partial == "" {
				d.nftEmpty = rs
			}
		}
	}
	return d
}

func less(a, b [2]int) bool { return a[0] < b[0] || a[0] == b[0] && a[1] < b[1] }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func hasNFTKubeTable(rs *nft.Ruleset) bool {
	return rs.Table(nftables.TableFamilyIPv4, kpnames.NFTTable) != nil || rs.Table(nftables.TableFamilyIPv6, kpnames.NFTTable) != nil
}

func rulesetFile(rs *nft.Ruleset) string {
	if len(rs.Tables) == 0 {
		return ""
	}
	return rs.Tables[0].Pos.File
}

// isJSONListing reports whether a ruleset was read from nft -j (its
// positions are JSON paths).
func isJSONListing(rs *nft.Ruleset) bool {
	return len(rs.Tables) > 0 && strings.HasPrefix(rs.Tables[0].Pos.Path, "$")
}

// programmedModes returns the proxy modes whose rules the data plane of a
// snapshot shows, in a fixed order.
func programmedModes(s *model.Snapshot) []string {
	var out []string
	ipt, ipv := false, false
	for _, d := range s.IPTables {
		ipt = ipt || IsIPTablesMode(d)
		ipv = ipv || IsIPVSMode(d)
	}
	for _, rs := range s.NFT {
		for _, t := range rs.Tables {
			ipt = ipt || NFTHasIPTablesMode(t) // iptables-nft's tables as nft lists them
		}
	}
	for _, d := range s.IPVS {
		ipv = ipv || len(d.Services) > 0
	}
	if ipt {
		out = append(out, model.ModeIPTables)
	}
	if ipv {
		out = append(out, model.ModeIPVS)
	}
	for _, rs := range s.NFT {
		if hasNFTKubeTable(rs) {
			out = append(out, model.ModeNFTables)
			break
		}
	}
	return out
}

// iptablesSkeleton returns the name of the first iptables dump of s that
// holds what kube-proxy's iptables mode writes before any Service (its
// nat KUBE-SERVICES chain) and nothing of its IPVS mode; "" when none
// does. Such a data plane shows the mode, not the Services.
func iptablesSkeleton(s *model.Snapshot) string {
	for _, d := range s.IPTables {
		if IsIPVSMode(d) {
			return ""
		}
	}
	for _, d := range s.IPTables {
		if nat := d.Table("nat"); nat != nil && nat.Chain(kpnames.KubeServices) != nil {
			return d.Name
		}
	}
	return ""
}

// ProgrammedModes returns the proxy modes whose rules the data plane of a
// snapshot shows, in a fixed order (iptables, ipvs, nftables).
func ProgrammedModes(s *model.Snapshot) []string { return programmedModes(s) }

// IsIPTablesMode reports whether a dump holds kube-proxy iptables-mode
// rules: per-service chains in the nat table, or service rules in
// KUBE-SERVICES.
func IsIPTablesMode(d *iptables.Dump) bool {
	nat := d.Table("nat")
	if nat == nil {
		return false
	}
	for _, c := range nat.Chains {
		if kpnames.IsIPTablesModeChain(c.Name) {
			return true
		}
	}
	if c := nat.Chain(kpnames.KubeServices); c != nil {
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
			if kpnames.IsIPVSModeChain(c.Name) {
				return true
			}
		}
	}
	return false
}

// NFTHasIPTablesMode reports whether a table of an nft listing is an
// iptables-nft nat table holding kube-proxy's iptables-mode chains.
func NFTHasIPTablesMode(t *nft.Table) bool {
	if t.Name != "nat" {
		return false
	}
	for _, c := range t.Chains {
		if kpnames.IsIPTablesModeChain(c.Name) {
			return true
		}
	}
	return false
}

// hasKubeChains reports whether a dump holds chains kube-proxy writes in
// its iptables or IPVS mode (KUBE-SERVICES, KUBE-NODEPORTS, per-service
// chains) in the nat or filter table.
func hasKubeChains(d *iptables.Dump) bool {
	for _, t := range d.Tables {
		if t.Name != "nat" && t.Name != "filter" {
			continue
		}
		for _, c := range t.Chains {
			if c.Name == kpnames.KubeServices || c.Name == kpnames.KubeNodePorts || kpnames.IsServiceChain(c.Name) {
				return true
			}
		}
	}
	return false
}

// ipvsSet returns the name of the first ipset of the snapshot's listings
// that kube-proxy's IPVS mode creates (KUBE-CLUSTER-IP, KUBE-6-CLUSTER-IP,
// ...), "" when none is. Only IPVS mode makes them: a listing holding one,
// with no rules or configuration to tell the mode, shows it.
func ipvsSet(s *model.Snapshot) string {
	for _, d := range s.IPSets {
		for _, set := range d.Sets {
			for _, base := range kpnames.IPVSSets {
				if set.Name == base || set.Name == kpnames.SetName(base, true) {
					return set.Name
				}
			}
		}
	}
	return ""
}
