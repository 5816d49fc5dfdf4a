package resolve

import (
	"github.com/proxyscan/proxyscan/parsers/kpconfig"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
)

// A Behaviour is something kube-proxy does from one release on, possibly
// behind a feature gate until it became the rule. What differs between
// releases is asked of [Resolution.Has] (or [Enabled]) by name, never by
// comparing minor versions, so that a new release is one row here.
type Behaviour int

// Behaviours that differ between the releases proxyscan models.
const (
	// ClusterTerminatingFallback: a service port with no ready endpoint
	// uses its serving, terminating ones for the Cluster traffic policy
	// (KEP-1669, ProxyTerminatingEndpoints: every policy from 1.24, off by
	// default before 1.26, unconditional from 1.28).
	ClusterTerminatingFallback Behaviour = iota
	// LocalTerminatingFallback: the same for the Local policy when no
	// local endpoint is ready (1.22 alpha for externalTrafficPolicy Local
	// only, every Local policy from 1.24, unconditional from 1.28).
	LocalTerminatingFallback
	// NodeTopologyHints: PreferSameNode hints (hints.forNodes) are honoured
	// (PreferSameTrafficDistribution: 1.33 alpha, 1.34 beta).
	NodeTopologyHints
	// ZoneTopologyHints: zone hints of EndpointSlices are read at all
	// (TopologyAwareHints: 1.21 alpha, 1.24 on by default, 1.33 GA).
	ZoneTopologyHints
	// TopologyAnnotationAnyValue: the topology annotation enables hints with
	// any value but "disabled", and topology-mode stands in for
	// topology-aware-hints (1.27+; before, only "Auto" or "auto" did).
	TopologyAnnotationAnyValue
	// TopologyHintsWithoutAnnotation: hints are used whatever the Service's
	// annotation says (ServiceTrafficDistribution: 1.30 alpha, 1.31 beta,
	// 1.33 GA).
	TopologyHintsWithoutAnnotation
	// LoadBalancerIPMode: load balancer ingress IPs with ipMode Proxy are
	// not programmed (LoadBalancerIPMode: 1.29 alpha, 1.30 beta).
	LoadBalancerIPMode
	// NFTablesMode: the nftables proxy mode exists (NFTablesProxyMode: 1.29
	// alpha, 1.31 beta, 1.33 GA).
	NFTablesMode
	// CategorizeEndpoints: endpoints are selected by pkg/proxy/topology.go
	// CategorizeEndpoints (1.24+) rather than filtered by the proxier (the
	// KUBE-XLB layout of 1.20-1.23).
	CategorizeEndpoints

	// What follows are the layouts of the data plane and the start-up
	// behaviour, as far as they differ between releases: each names what
	// kube-proxy does and the release (pkg/proxy/<mode>/proxier.go of it
	// unless said otherwise) that starts or ends it.

	// NotReadyEndpointsTracked: kube-proxy's endpoints map holds the
	// endpoints that are not ready too (1.21+, pkg/proxy/endpointslicecache.go;
	// that of 1.20 dropped them): they count towards the large-cluster
	// threshold and are what the endpoint filters of 1.21-1.23 start from.
	NotReadyEndpointsTracked
	// HealthCheckNodePortsAccepted: the health check node ports of
	// externalTrafficPolicy Local Services are accepted in filter
	// KUBE-NODEPORTS, jumped to from INPUT (1.21+; in IPVS mode filter
	// KUBE-NODE-PORT with the KUBE-HEALTH-CHECK-NODE-PORT set).
	HealthCheckNodePortsAccepted
	// InternalTrafficPolicyLocal: internalTrafficPolicy Local restricts a
	// Service to its local endpoints (ServiceInternalTrafficPolicy: 1.21
	// alpha, 1.22 beta, unconditional from 1.26; read by FilterEndpoints of
	// pkg/proxy/topology.go and, up to 1.25, by the IPVS proxier).
	InternalTrafficPolicyLocal
	// ExternalIPPhysdevRules: iptables mode captures an external IP with
	// two rules, for traffic neither bridged nor local (physdev, addrtype)
	// and for local destinations, and masquerades it whatever the local
	// traffic detector says (up to 1.20).
	ExternalIPPhysdevRules
	// NodePortAddressErrorSkipsService: iptables mode writes nothing more
	// of a NodePort Service when nodePortAddresses select no node address
	// (up to 1.20, whose syncProxyRules continues its loop over the
	// services there).
	NodePortAddressErrorSkipsService
	// IPVSNodePortsSkipLoopback: IPVS mode leaves the loopback addresses out
	// of the node IPs it creates NodePort virtual servers on, where 1.21
	// took every local address but kube-ipvs0's, loopback ones included
	// (1.22+).
	IPVSNodePortsSkipLoopback
	// MasqueradeInServiceChain: iptables mode writes the masquerade rules
	// of the traffic it captures for a Service in the Service's KUBE-SVC
	// chain, not in the capturing KUBE-SERVICES or KUBE-NODEPORTS (1.22+).
	MasqueradeInServiceChain
	// BalancingRuleComments: the KUBE-XLB rules of iptables mode are
	// commented "Balancing rule N for <port>", and its affinity rules are
	// commented even in large-cluster mode (up to 1.22).
	BalancingRuleComments
	// ForwardConntrackOneRule: KUBE-FORWARD accepts RELATED,ESTABLISHED
	// traffic with one "kubernetes forwarding conntrack rule", where
	// 1.20-1.22 wrote the same match twice, as the "pod source" and "pod
	// destination" rules (1.23+, iptables and IPVS mode).
	ForwardConntrackOneRule
	// IPVSSCTPLocalFirst: IPVS mode writes the KUBE-NODE-PORT RETURN for
	// KUBE-NODE-PORT-LOCAL-SCTP before the KUBE-MARK-MASQ jump for
	// KUBE-NODE-PORT-SCTP, as for TCP and UDP (1.23+; the reverse before).
	IPVSSCTPLocalFirst
	// PolicyChains: iptables mode sends a Service's traffic through its
	// policy chains, KUBE-SVC (Cluster) and KUBE-SVL (Local), and external
	// traffic through KUBE-EXT, where 1.20-1.23 have a KUBE-XLB chain for
	// externalTrafficPolicy Local and a KUBE-FW chain for every load
	// balancer IP (1.24+).
	PolicyChains
	// DetectLocalByInterface: detectLocalMode BridgeInterface and
	// InterfaceNamePrefix (1.24+, cmd/kube-proxy/app getLocalDetector).
	DetectLocalByInterface
	// FilterTableFirewall: kube-proxy drops in the filter table what it
	// drops at all (KUBE-PROXY-FIREWALL for LoadBalancerSourceRanges and
	// DROP rules for Services without local endpoints in iptables mode,
	// KUBE-SOURCE-RANGES-FIREWALL in IPVS mode), where 1.24 marked it with
	// kubelet's KUBE-MARK-DROP in nat, a chain kube-proxy then no longer
	// ensures (1.25+, KEP-3178).
	FilterTableFirewall
	// IPVSFallbackRemoved: kube-proxy asked for IPVS mode exits when IPVS
	// is not usable, where it fell back to iptables mode before (1.26+,
	// PR #111806).
	IPVSFallbackRemoved
	// UserspaceMode: the userspace proxy mode exists (removed in 1.26).
	UserspaceMode
	// LocalhostNodePortsOption: iptables.localhostNodePorts can turn the
	// node ports on 127.0.0.1 off, and the node-ports rule of KUBE-SERVICES
	// then leaves out 127.0.0.0/8, as it always leaves out ::1 (1.26+;
	// localhost node ports always worked on IPv4 before).
	LocalhostNodePortsOption
	// IPVSFilterChain: IPVS mode rejects new connections to the addresses
	// on kube-ipvs0 but to the service ports (KUBE-IPVS-FILTER and the
	// KUBE-IPVS-IPS set), and KUBE-SERVICES returns for loopback sources
	// (1.26+).
	IPVSFilterChain
	// LocalhostNodePortsFollowAddresses: localhost node ports are on only
	// when nodePortAddresses include 127.0.0.1 (1.27+).
	LocalhostNodePortsFollowAddresses
	// NodePortsWithoutNodeAddress: iptables mode writes the node port
	// rules even when nodePortAddresses select no address of the node
	// (1.27+).
	NodePortsWithoutNodeAddress
	// KubeletFirewallCopy: kube-proxy writes its own copy of kubelet's
	// KUBE-FIREWALL martian-packet rule, jumped to from INPUT and OUTPUT
	// without a comment (iptablesKubeletJumpChains, 1.27+, KEP-3178).
	KubeletFirewallCopy
	// FirewallChainTailComment: a KUBE-FW chain ends with a rule that only
	// says the other traffic is dropped by KUBE-PROXY-FIREWALL (1.27+).
	FirewallChainTailComment
	// IPVSSchedulerProbe: IPVS mode accepts any scheduler and checks at
	// start-up that the kernel has it by creating a dummy virtual server,
	// where 1.20-1.26 required the modules of GetRequiredIPVSModules (rr,
	// wrr, sh) (1.27+).
	IPVSSchedulerProbe
	// IPVSMaglevPortFlag: the virtual servers of the mh scheduler get the
	// flag FlagSourceHash, mh-port (IP_VS_SVC_F_SCHED2) (1.27+).
	IPVSMaglevPortFlag
	// IPVSNodeAddressesUnbound: IPVS mode binds to kube-ipvs0 no external
	// or load balancer IP that is an address of the node (shouldBind), and
	// KUBE-IPVS-FILTER returns for the health check node ports before its
	// REJECT (1.28+).
	IPVSNodeAddressesUnbound
	// ConntrackTCPBeLiberal: conntrack.tcpBeLiberal exists, and with a
	// liberal conntrack (nf_conntrack_tcp_be_liberal set) iptables mode
	// writes no INVALID drop rule (1.29+).
	ConntrackTCPBeLiberal
	// IPVSOutFilterChain: IPVS mode drops the node's own traffic to load
	// balancer IPs whose source ranges leave the node out
	// (KUBE-IPVS-OUT-FILTER, jumped to from OUTPUT; 1.29+).
	IPVSOutFilterChain
	// NFTablesFirstLayout: the nftables layout of the mode's first release
	// (1.29, alpha): one endpoints-check chain for Services and node ports,
	// a forward chain dropping INVALID packets, no cluster-ips set, and
	// LoadBalancerSourceRanges checked with the firewall and firewall-allow
	// sets; 1.30 replaced it.
	NFTablesFirstLayout
	// IPVSExternalIPLocalReturn: KUBE-IPVS-FILTER returns for the external
	// IPs of externalTrafficPolicy Local Services (KUBE-EXTERNAL-IP-LOCAL),
	// which it rejected before (1.30+).
	IPVSExternalIPLocalReturn
	// NFTablesFirewallElementComment: the firewall-ips elements of
	// nftables mode carry the service port name as comment (1.30 only).
	NFTablesFirewallElementComment
	// NFAcctCounters: iptables mode counts the packets it drops as INVALID
	// and the localhost node-port packets it accepts with nfacct counters
	// (1.31+, PR #125015).
	NFAcctCounters
	// NodePortAddressesPrimary: the nodePortAddresses keyword "primary",
	// the node IPs, which nftables mode takes when nodePortAddresses is
	// empty (1.31+, PR #123105).
	NodePortAddressesPrimary
	// NFTablesPreDNATFilterChains: nftables mode checks the firewall in
	// filter-prerouting-pre-dnat and filter-output-pre-dnat and runs its
	// other filter chains at priority filter (1.34+; 1.30-1.33 run every
	// filter chain at dstnat-10 and the cluster-ips check at dstnat+10).
	NFTablesPreDNATFilterChains
	// NFTablesClusterIPMasqueradeAnyPort: the ClusterIP masquerade rules of
	// nftables mode match the cluster IP alone, not the service port too
	// (1.34+).
	NFTablesClusterIPMasqueradeAnyPort
	// IPVSModeDeprecated: the ipvs mode is deprecated (1.35+).
	IPVSModeDeprecated
	// NFTablesHairpin: nftables mode masquerades hairpin connections with
	// the hairpin-connections set and ClusterIP traffic with one rule, and
	// writes endpoint chains only for session affinity, where it jumped to
	// mark-for-masquerade before (1.36+).
	NFTablesHairpin
	// RandomFullyAlways: iptables and IPVS mode masquerade with
	// --random-fully without probing iptables for it (1.37+).
	RandomFullyAlways
	// NodePortAddressesKeywords: the nodePortAddresses keywords
	// "localhost" and "all" (1.37+, PR #138427).
	NodePortAddressesKeywords
	// NFTablesCommentsTruncated: nftables mode truncates element comments
	// to knftables.CommentLengthMax (truncateNFTablesComment, 1.37+).
	NFTablesCommentsTruncated
	// NFTablesSingleEndpointDNAT: nftables mode DNATs to the only endpoint
	// of a policy chain directly rather than through a numgen map (1.37+).
	NFTablesSingleEndpointDNAT
	// NFTablesLocalhostNodePorts: nftables mode serves node ports on
	// localhost (KubeProxyNFTablesLocalhostNodePorts: 1.37 alpha).
	NFTablesLocalhostNodePorts
	// FilterEndpoints: the proxiers filter a service port's endpoints with
	// pkg/proxy/topology.go FilterEndpoints before selecting them
	// (internalTrafficPolicy Local, zone hints; 1.21-1.23, replaced by
	// CategorizeEndpoints).
	FilterEndpoints
	// EndpointSliceProxyingFilter: FilterEndpoints filters only with
	// EndpointSliceProxying on (1.21; the gate is locked on from 1.22).
	EndpointSliceProxyingFilter
	// ServiceTopologyFilter: with the alpha ServiceTopology gate,
	// FilterEndpoints applies the Service's topologyKeys instead (1.21),
	// which keep every endpoint of a Service without topologyKeys.
	ServiceTopologyFilter
	// HintsIgnoreUnready: the zone-hint filter of FilterEndpoints looks at
	// the ready endpoints only (1.23, kubernetes#106507; 1.21-1.22 counted
	// the unready ones too).
	HintsIgnoreUnready
	// ServicePortNameWithoutColon: an unnamed service port is called
	// "ns/svc" in rule comments and in the names its chain hashes are made
	// of, where 1.10-1.18 wrote "ns/svc:" (1.19+, pkg/proxy/types.go
	// ServicePortName.String with fmtPortName).
	ServicePortNameWithoutColon
	// StaleXLBChainsDeleted: the iptables proxier's deletion of its stale
	// chains deletes KUBE-XLB chains too (a service chain prefix up to
	// 1.23, a name kept for that cleanup in 1.24-1.27, gone in 1.28).
	StaleXLBChainsDeleted
	numBehaviours
)

// A behaviourSpan says from which minor a behaviour exists, under which
// gate, and from which minor it is on whatever the gates say.
type behaviourSpan struct {
	name string
	// since is the first minor with the behaviour (0: every modelled one);
	// until the first minor without it (0: still in the newest).
	since, until int
	// gate, when set, turns the behaviour on or off from since on (its
	// default per minor is kpconfig's gate table), until always.
	gate   string
	always int
}

var behaviours = [numBehaviours]behaviourSpan{
	ClusterTerminatingFallback:     {name: "ClusterTerminatingFallback", since: 24, gate: "ProxyTerminatingEndpoints", always: 28},
	LocalTerminatingFallback:       {name: "LocalTerminatingFallback", since: 22, gate: "ProxyTerminatingEndpoints", always: 28},
	NodeTopologyHints:              {name: "NodeTopologyHints", since: 33, gate: "PreferSameTrafficDistribution"},
	ZoneTopologyHints:              {name: "ZoneTopologyHints", since: 21, gate: "TopologyAwareHints", always: 33},
	TopologyAnnotationAnyValue:     {name: "TopologyAnnotationAnyValue", since: 27},
	TopologyHintsWithoutAnnotation: {name: "TopologyHintsWithoutAnnotation", since: 30, gate: "ServiceTrafficDistribution", always: 33},
	LoadBalancerIPMode:             {name: "LoadBalancerIPMode", since: 29, gate: "LoadBalancerIPMode", always: 30},
	CategorizeEndpoints:            {name: "CategorizeEndpoints", since: 24},
	NFTablesMode:                   {name: "NFTablesMode", since: 29, gate: "NFTablesProxyMode", always: 33},

	NotReadyEndpointsTracked:           {name: "NotReadyEndpointsTracked", since: 21},
	HealthCheckNodePortsAccepted:       {name: "HealthCheckNodePortsAccepted", since: 21},
	InternalTrafficPolicyLocal:         {name: "InternalTrafficPolicyLocal", since: 21, gate: "ServiceInternalTrafficPolicy", always: 26},
	ExternalIPPhysdevRules:             {name: "ExternalIPPhysdevRules", until: 21},
	NodePortAddressErrorSkipsService:   {name: "NodePortAddressErrorSkipsService", until: 21},
	IPVSNodePortsSkipLoopback:          {name: "IPVSNodePortsSkipLoopback", since: 22},
	MasqueradeInServiceChain:           {name: "MasqueradeInServiceChain", since: 22},
	BalancingRuleComments:              {name: "BalancingRuleComments", until: 23},
	ForwardConntrackOneRule:            {name: "ForwardConntrackOneRule", since: 23},
	IPVSSCTPLocalFirst:                 {name: "IPVSSCTPLocalFirst", since: 23},
	PolicyChains:                       {name: "PolicyChains", since: 24},
	DetectLocalByInterface:             {name: "DetectLocalByInterface", since: 24},
	FilterTableFirewall:                {name: "FilterTableFirewall", since: 25},
	IPVSFallbackRemoved:                {name: "IPVSFallbackRemoved", since: 26},
	UserspaceMode:                      {name: "UserspaceMode", until: 26},
	LocalhostNodePortsOption:           {name: "LocalhostNodePortsOption", since: 26},
	IPVSFilterChain:                    {name: "IPVSFilterChain", since: 26},
	LocalhostNodePortsFollowAddresses:  {name: "LocalhostNodePortsFollowAddresses", since: 27},
	NodePortsWithoutNodeAddress:        {name: "NodePortsWithoutNodeAddress", since: 27},
	KubeletFirewallCopy:                {name: "KubeletFirewallCopy", since: 27},
	FirewallChainTailComment:           {name: "FirewallChainTailComment", since: 27},
	IPVSSchedulerProbe:                 {name: "IPVSSchedulerProbe", since: 27},
	IPVSMaglevPortFlag:                 {name: "IPVSMaglevPortFlag", since: 27},
	IPVSNodeAddressesUnbound:           {name: "IPVSNodeAddressesUnbound", since: 28},
	ConntrackTCPBeLiberal:              {name: "ConntrackTCPBeLiberal", since: 29},
	IPVSOutFilterChain:                 {name: "IPVSOutFilterChain", since: 29},
	NFTablesFirstLayout:                {name: "NFTablesFirstLayout", since: 29, until: 30},
	IPVSExternalIPLocalReturn:          {name: "IPVSExternalIPLocalReturn", since: 30},
	NFTablesFirewallElementComment:     {name: "NFTablesFirewallElementComment", since: 30, until: 31},
	NFAcctCounters:                     {name: "NFAcctCounters", since: 31},
	NodePortAddressesPrimary:           {name: "NodePortAddressesPrimary", since: 31},
	NFTablesPreDNATFilterChains:        {name: "NFTablesPreDNATFilterChains", since: 34},
	NFTablesClusterIPMasqueradeAnyPort: {name: "NFTablesClusterIPMasqueradeAnyPort", since: 34},
	IPVSModeDeprecated:                 {name: "IPVSModeDeprecated", since: 35},
	NFTablesHairpin:                    {name: "NFTablesHairpin", since: 36},
	RandomFullyAlways:                  {name: "RandomFullyAlways", since: 37},
	NodePortAddressesKeywords:          {name: "NodePortAddressesKeywords", since: 37},
	NFTablesCommentsTruncated:          {name: "NFTablesCommentsTruncated", since: 37},
	NFTablesSingleEndpointDNAT:         {name: "NFTablesSingleEndpointDNAT", since: 37},
	NFTablesLocalhostNodePorts:         {name: "NFTablesLocalhostNodePorts", since: 37, gate: "KubeProxyNFTablesLocalhostNodePorts"},
	FilterEndpoints:                    {name: "FilterEndpoints", since: 21, until: 24},
	EndpointSliceProxyingFilter:        {name: "EndpointSliceProxyingFilter", since: 21, until: 22, gate: "EndpointSliceProxying"},
	ServiceTopologyFilter:              {name: "ServiceTopologyFilter", since: 21, until: 22, gate: "ServiceTopology"},
	HintsIgnoreUnready:                 {name: "HintsIgnoreUnready", since: 23},
	ServicePortNameWithoutColon:        {name: "ServicePortNameWithoutColon", since: 19},
	StaleXLBChainsDeleted:              {name: "StaleXLBChainsDeleted", until: 28},
}

// String returns the behaviour's name.
func (b Behaviour) String() string {
	if b < 0 || b >= numBehaviours {
		return "unknown"
	}
	return behaviours[b].name
}

// Enabled reports whether kube-proxy of version v, with the configured
// feature gates, has behaviour b.
func Enabled(b Behaviour, v kpversion.Version, gates map[string]bool) bool {
	s := behaviours[b]
	m := v.Minor
	switch {
	case v.Major != 1, m < s.since, s.until != 0 && m >= s.until:
		return false
	case s.gate == "", s.always != 0 && m >= s.always:
		return true
	}
	return kpconfig.GateEnabled(gates, s.gate, m)
}

// InRelease reports whether kube-proxy of version v has behaviour b at all,
// if perhaps only with its feature gate on; [Enabled] with nil gates says
// whether it has it by default.
func InRelease(b Behaviour, v kpversion.Version) bool {
	s := behaviours[b]
	return v.Major == 1 && v.Minor >= s.since && (s.until == 0 || v.Minor < s.until)
}
