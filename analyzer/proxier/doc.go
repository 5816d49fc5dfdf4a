// Package proxier is proxyscan's reference proxier: it computes what
// kube-proxy programs for a snapshot's Services, EndpointSlices, Node and
// configuration, for an explicit kube-proxy version (1.20 to 1.37), and
// compares that with the captured data plane.
//
// [Expect] returns a [Dataplane] of the same types the parsers produce: for
// iptables mode one [iptables.Dump] per IP family, as iptables-save prints
// it after one full sync (dual-stack nodes get both families, one
// single-stack proxier each, as kube-proxy's metaproxier runs them). The
// dump text ([Dataplane.Files]) loads with iptables-restore.
//
// The generator mirrors pkg/proxy/iptables/proxier.go by name: the
// rules are written with the same words, in the same order, as kube-proxy
// writes its restore input (syncProxyRules, writeServiceToEndpointRules,
// the jump chains and their EnsureRule prepends), and are turned into
// iptables-save's spelling by the canonicaliser ([CanonicalRule],
// [Canonicalize]), which follows iptables 1.8.9: -s -d -i -o -p first,
// matches in load order each printing its options as its extension's save
// function does, host addresses with /32 or /128, comments quoted unless
// they are one plain word, MARK as --set-xmark, probabilities with the 11
// decimals the kernel's fixed-point value gives. Endpoint selection is
// [SelectEndpoints], which every mode's generator programs and the checks
// compare with: model.Categorize (pkg/proxy/topology.go
// CategorizeEndpoints) from 1.24 and the filter-then-scan of
// syncProxyRules before. Chain names are
// kpnames.PortProtoHash and kpnames.EndpointChainHash. Two layouts are
// modelled, each in its own function citing its releases: 1.24-1.37
// (syncProxyRules: KUBE-EXT and KUBE-SVL, with KUBE-MARK-DROP in 1.24) and
// 1.20-1.23 (syncProxyRulesXLB: KUBE-XLB, KUBE-FW for every load balancer
// IP). The smaller differences between releases are behaviours of
// resolve's table, asked by name ([resolve.Resolution.Has]), never by
// comparing versions; the oldest release of each mode is in one table.
//
// [Compare] sets an expected data plane against a captured one and returns
// [Difference]s: chains and rules missing or extra, each attributed to the
// service port (and endpoint) it belongs to, by its comment, its chain's or
// target's hash, or its addresses, or to nothing (an orphan). Both sides
// are compared in iptables-save form, so restore input and the output of
// another iptables version compare as well. Where kube-proxy's order
// carries no meaning (the chains it fills in Go map order, built-in chains)
// rules are compared per service port; elsewhere order matters. Only
// kube-proxy's chains are compared; kubelet's rules in the chains the two
// share are ignored.
//
// IPVS mode (1.21 to 1.37, pkg/proxy/ipvs/proxier.go syncProxyRules and
// writeIptablesRules; what differs before 1.30 in ipvs_legacy.go) gives
// the virtual and real servers ([ipvs.Dump], one
// table for both families, in ipvsadm's order), the ipsets ([ipset.Dump],
// KUBE-6- names for IPv6), the addresses bound to kube-ipvs0 and, per
// family, the iptables rules; its files are ipset-save.txt (for ipset
// restore), ipvsadm-save.txt (for ipvsadm -R), kube-ipvs0.txt and the
// iptables-save files. Compare sets them against the captured ipvsadm,
// ipset, ip addr and iptables-save dumps: virtual servers missing, extra or
// with another scheduler or persistence, real servers missing, extra or
// with another weight (weight 0 is noted as graceful termination), set
// members, bound addresses and rules, each attributed to the service port
// whose address, port or endpoint it holds. Virtual servers in
// ipvs.excludeCIDRs are not kube-proxy's and are not compared.
//
// nftables mode (1.29 to 1.37, 1.29 only with the NFTablesProxyMode
// gate and in its own layout, nftables_129.go; pkg/proxy/nftables/proxier.go
// setupNFTables and syncProxyRules) gives the tables ip and ip6 kube-proxy
// as one [nft.Ruleset], in the form `nft list ruleset` prints (sets, maps,
// chains each sorted by name, elements sorted: kube-proxy creates them in
// Go map order); its file, nft-ruleset.txt, loads with nft -f. Compare
// sets it against the captured listing (text, else JSON): chains and their
// declarations, rules in order, sets and maps with their declarations and
// elements in any order (not those of the dynamic affinity sets), each
// attributed by its name's hash, the chain its verdict goes to, its
// comment or its key. The ServiceCIDRs behind the cluster-ips-check drop
// rule come from [Env], else from the captured rule.
//
// Other proxy modes plug in as a [Mode] listed in [Modes].
package proxier
