// Package kpnames holds the names kube-proxy gives to what it programs:
// the iptables chains of its iptables and IPVS modes, the ipsets of IPVS
// mode, the nftables table of its nftables mode, and the hashes it puts in
// per-service chain names. It is a leaf: it imports only the standard
// library, so that the analyzer, the reference proxier and the collector's
// redaction share one spelling of every name.
package kpnames

import (
	"crypto/sha256"
	"encoding/base32"
	"net/netip"
	"strconv"
	"strings"
)

// Per-service chain prefixes of the iptables mode (pkg/proxy/iptables).
const (
	ChainSVC = "KUBE-SVC-"
	ChainSVL = "KUBE-SVL-"
	ChainEXT = "KUBE-EXT-"
	ChainFW  = "KUBE-FW-"
	ChainXLB = "KUBE-XLB-" // 1.20-1.23, externalTrafficPolicy Local
	ChainSEP = "KUBE-SEP-"
)

// Fixed chains of the iptables and IPVS modes.
const (
	KubeServices         = "KUBE-SERVICES"
	KubeExternalServices = "KUBE-EXTERNAL-SERVICES"
	KubeNodePorts        = "KUBE-NODEPORTS"
	KubePostrouting      = "KUBE-POSTROUTING"
	KubeMarkMasq         = "KUBE-MARK-MASQ"
	KubeMarkDrop         = "KUBE-MARK-DROP"
	KubeForward          = "KUBE-FORWARD"
	KubeProxyFirewall    = "KUBE-PROXY-FIREWALL"
	KubeProxyCanary      = "KUBE-PROXY-CANARY"
	// KubeletFirewall is kubelet's KUBE-FIREWALL chain (kube-proxy wrote
	// it too before 1.25).
	KubeletFirewall = "KUBE-FIREWALL"

	// IPVS mode's chains (pkg/proxy/ipvs).
	IPVSNodePort             = "KUBE-NODE-PORT"
	IPVSLoadBalancer         = "KUBE-LOAD-BALANCER"
	IPVSSourceRangesFirewall = "KUBE-SOURCE-RANGES-FIREWALL"
	IPVSFilter               = "KUBE-IPVS-FILTER"
	IPVSOutFilter            = "KUBE-IPVS-OUT-FILTER"
	// IPVSDummyInterface is the interface IPVS mode binds Service
	// addresses to.
	IPVSDummyInterface = "kube-ipvs0"
)

// The ipsets of kube-proxy's IPVS mode (pkg/proxy/ipvs/ipset.go), by their
// IPv4 names; SetName gives the name in a family.
const (
	SetLoopBack            = "KUBE-LOOP-BACK"
	SetClusterIP           = "KUBE-CLUSTER-IP"
	SetExternalIP          = "KUBE-EXTERNAL-IP"
	SetExternalIPLocal     = "KUBE-EXTERNAL-IP-LOCAL"
	SetLoadBalancer        = "KUBE-LOAD-BALANCER"
	SetLoadBalancerLocal   = "KUBE-LOAD-BALANCER-LOCAL"
	SetLoadBalancerFW      = "KUBE-LOAD-BALANCER-FW"
	SetLoadBalancerSrcIP   = "KUBE-LOAD-BALANCER-SOURCE-IP"
	SetLoadBalancerSrcCIDR = "KUBE-LOAD-BALANCER-SOURCE-CIDR"
	SetNodePortTCP         = "KUBE-NODE-PORT-TCP"
	SetNodePortLocalTCP    = "KUBE-NODE-PORT-LOCAL-TCP"
	SetNodePortUDP         = "KUBE-NODE-PORT-UDP"
	SetNodePortLocalUDP    = "KUBE-NODE-PORT-LOCAL-UDP"
	SetNodePortSCTP        = "KUBE-NODE-PORT-SCTP-HASH"
	SetNodePortLocalSCTP   = "KUBE-NODE-PORT-LOCAL-SCTP-HASH"
	SetHealthCheckNodePort = "KUBE-HEALTH-CHECK-NODE-PORT"
	SetIPVSIPs             = "KUBE-IPVS-IPS"
)

// IPVSSets lists every ipset of IPVS mode.
var IPVSSets = []string{
	SetLoopBack, SetClusterIP, SetExternalIP, SetExternalIPLocal, SetLoadBalancer, SetLoadBalancerLocal,
	SetLoadBalancerFW, SetLoadBalancerSrcIP, SetLoadBalancerSrcCIDR, SetNodePortTCP, SetNodePortLocalTCP,
	SetNodePortUDP, SetNodePortLocalUDP, SetNodePortSCTP, SetNodePortLocalSCTP, SetHealthCheckNodePort, SetIPVSIPs,
}

// SetName returns the name of one of IPVS mode's ipsets in a family: the
// IPv4 name itself, or for IPv6 "KUBE-6-" and the rest of the name, cut to
// the 31 characters ipset allows (KUBE-6-LOAD-BALANCER-SOURCE-CID).
func SetName(base string, ipv6 bool) string {
	if !ipv6 {
		return base
	}
	n := "KUBE-6-" + strings.TrimPrefix(base, "KUBE-")
	if len(n) > 31 {
		n = n[:31]
	}
	return n
}

// NodePortSet returns the ipset listing the node ports of a protocol
// ("tcp", "udp", "sctp"); local selects the externalTrafficPolicy Local
// one.
func NodePortSet(proto string, local bool) string {
	switch proto {
	case "udp":
		if local {
			return SetNodePortLocalUDP
		}
		return SetNodePortUDP
	case "sctp":
		if local {
			return SetNodePortLocalSCTP
		}
		return SetNodePortSCTP
	}
	if local {
		return SetNodePortLocalTCP
	}
	return SetNodePortTCP
}

// Per-service name prefixes of the nftables mode: chains, and the affinity
// sets ("service-<hash8>-ns/name/proto/port").
const (
	NFTService  = "service-"
	NFTLocal    = "local-"
	NFTExternal = "external-"
	NFTFirewall = "firewall-"
	NFTEndpoint = "endpoint-"
	NFTAffinity = "affinity-"
)

// NFTTable is the name of the nftables mode's tables (ip and ip6).
const NFTTable = "kube-proxy"

// NFTClusterIPsCheck is the nftables mode's chain that rejects traffic to
// the ports a cluster IP does not serve and drops traffic to the addresses
// of the ServiceCIDRs no Service holds; NFTUnallocatedComment is the
// comment of its drop rule.
const (
	NFTClusterIPsCheck    = "cluster-ips-check"
	NFTUnallocatedComment = "Drop traffic to unallocated ClusterIPs"
)

// IsServiceChain reports whether name is an iptables per-service or
// per-endpoint chain (KUBE-SVC-, KUBE-SVL-, KUBE-EXT-, KUBE-FW-, KUBE-XLB-,
// KUBE-SEP- followed by a hash).
func IsServiceChain(name string) bool {
	_, _, ok := SplitServiceChain(name)
	return ok
}

// serviceChainPrefixes are the prefixes of the per-service and
// per-endpoint chains.
var serviceChainPrefixes = []string{ChainSVC, ChainSVL, ChainEXT, ChainFW, ChainXLB, ChainSEP}

// SplitServiceChain splits a per-service or per-endpoint chain name into
// its prefix ("KUBE-SVC-") and its 16-character hash.
func SplitServiceChain(name string) (prefix, hash string, ok bool) {
	if !strings.HasPrefix(name, "KUBE-") {
		return "", "", false
	}
	for _, p := range serviceChainPrefixes {
		if h, found := strings.CutPrefix(name, p); found && len(h) == 16 {
			return p, h, true
		}
	}
	return "", "", false
}

// commentAffixes are the rule comments kube-proxy writes that name a
// service port somewhere other than at their start (pkg/proxy/iptables and
// ipvs, 1.20-1.37).
var commentAffixes = []struct{ prefix, suffix string }{
	{"masquerade traffic for ", " external destinations"},
	{"pod traffic for ", " external destinations"},
	{"masquerade LOCAL traffic for ", " external destinations"},
	{"route LOCAL traffic for ", " external destinations"},
	{"other traffic to ", " will be dropped by KUBE-PROXY-FIREWALL"},
	{"masquerade LOCAL traffic for ", " LB IP"},
	{"route LOCAL traffic for ", " LB IP to service chain"},
}

// CommentService returns the service port name ("ns/name:port", or
// "ns/name" for an unnamed port) a kube-proxy rule comment names, and the
// endpoint it names if any: "ns/svc:port cluster IP", "ns/svc:port ->
// 10.0.0.1:80", "pod traffic for ns/svc:port external destinations",
// "Balancing rule 0 for ns/svc:port", an nftables element's bare
// "ns/svc:port". The "ns/svc:" of an unnamed port in the comments of
// 1.10-1.18 is returned as "ns/svc". It returns "" for a comment that
// names none.
func CommentService(c string) (service, endpoint string) {
	first, rest := commentName(c)
	if !IsServicePortName(first) {
		return "", ""
	}
	if ep, ok := strings.CutPrefix(rest, "-> "); ok {
		endpoint = ep
	}
	return strings.TrimSuffix(first, ":"), endpoint
}

// commentName splits a rule comment into the word that may name a service
// port and what follows it, past the affixes of commentAffixes and
// "Balancing rule N for".
func commentName(c string) (first, rest string) {
	for _, a := range commentAffixes {
		if r, ok := strings.CutPrefix(c, a.prefix); ok {
			c = strings.TrimSuffix(r, a.suffix)
			break
		}
	}
	if r, ok := strings.CutPrefix(c, "Balancing rule "); ok {
		if _, n, ok := strings.Cut(r, " for "); ok {
			c = n
		}
	}
	first, rest, _ = strings.Cut(c, " ")
	return first, rest
}

// HasEmptyPortName reports whether a rule comment names an unnamed service
// port as kube-proxy 1.10-1.18 did, "ns/svc:" with an empty port name
// ("ns/svc: cluster IP"); 1.19 dropped the colon.
func HasEmptyPortName(c string) bool {
	first, _ := commentName(c)
	return strings.HasSuffix(first, ":") && strings.Count(first, ":") == 1 && IsServicePortName(first)
}

// LegacyPortName returns the name kube-proxy 1.10-1.18 gave a service port
// ("ns/svc:" for the unnamed port "ns/svc", whose chain hashes it was
// part of), or "" when the port is named and the name did not change.
func LegacyPortName(servicePortName string) string {
	_, rest, ok := strings.Cut(servicePortName, "/")
	if !ok || strings.Contains(rest, ":") {
		return ""
	}
	return servicePortName + ":"
}

// IsServicePortName reports whether s has the form of a service port name:
// "ns/name" or "ns/name:port", namespace and name not empty.
func IsServicePortName(s string) bool {
	ns, rest, ok := strings.Cut(s, "/")
	if !ok || ns == "" || rest == "" {
		return false
	}
	name, _, _ := strings.Cut(rest, ":")
	return name != ""
}

// IsIPTablesModeChain reports whether name is a chain only kube-proxy's
// iptables mode writes: a per-service or per-endpoint chain (KUBE-FW- is
// left out: IPVS mode had one of that name before 1.21).
func IsIPTablesModeChain(name string) bool {
	p, _, ok := SplitServiceChain(name)
	return ok && p != ChainFW && p != ChainEXT
}

// IsIPVSModeChain reports whether name is a chain only kube-proxy's IPVS
// mode writes.
func IsIPVSModeChain(name string) bool {
	switch name {
	case IPVSFilter, IPVSOutFilter, IPVSNodePort, IPVSLoadBalancer:
		return true
	}
	return false
}

// PortProtoHash returns the 16-character hash of the iptables mode's
// per-service chain names (KUBE-SVC-<hash>, ...): base32 of the sha256 of
// the service port name ("ns/name:port") followed by the lower-case
// protocol (pkg/proxy/iptables portProtoHash, v1.20-v1.37).
func PortProtoHash(servicePortName, protocol string) string {
	return hash16(servicePortName + strings.ToLower(protocol))
}

// EndpointChainHash returns the hash of KUBE-SEP-<hash> for one endpoint
// ("IP:port") of a service port (servicePortEndpointChainName,
// v1.20-v1.37).
func EndpointChainHash(servicePortName, protocol, endpoint string) string {
	return hash16(servicePortName + strings.ToLower(protocol) + endpoint)
}

// hash16 returns the first 16 characters of the base32 of the sha256 of
// s: those of its first 10 bytes (base32 writes 8 characters for every 5
// bytes), so that the hash, kept by the hundred thousand in a large
// node's attribution, holds 16 bytes rather than the 56 of the whole
// sum's.
func hash16(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base32.StdEncoding.EncodeToString(sum[:10])
}

// NFTServiceChainBase returns the base of the nftables mode's per-service
// chain names, "<hash8>-ns/name/proto/port" (pkg/proxy/nftables
// servicePortChainNameBase and hashAndTruncate, v1.29-v1.37).
func NFTServiceChainBase(namespace, name, port, protocol string) string {
	return NFTHashAndTruncate(namespace + "/" + name + "/" + strings.ToLower(protocol) + "/" + port)
}

// NFTEndpointChainBase returns the base of an nftables endpoint chain name,
// "<hash8>-ns/name/proto/port__IP/port" (IPv6 colons become dots).
func NFTEndpointChainBase(namespace, name, port, protocol, ip string, epPort int32) string {
	base := namespace + "/" + name + "/" + strings.ToLower(protocol) + "/" + port
	return NFTHashAndTruncate(base + "__" + strings.ReplaceAll(ip, ":", ".") + "/" + strconv.Itoa(int(epPort)))
}

// nftNameLengthMax mirrors kube-proxy's limit on nftables chain names
// (NameLengthMax 256 minus the 16 characters prefixes may add).
const nftNameLengthMax = 256 - 16

// NFTHashAndTruncate returns "<base32(sha256(name))[:8]>-name", cut to
// kube-proxy's length limit (hashAndTruncate, v1.29-v1.37).
func NFTHashAndTruncate(name string) string {
	sum := sha256.Sum256([]byte(name))
	h := base32.StdEncoding.EncodeToString(sum[:5]) // the first 8 characters of the whole sum's
	name = h + "-" + name
	if len(name) > nftNameLengthMax {
		name = name[:nftNameLengthMax-3] + "..."
	}
	return name
}

// MemberKey returns the key of a hash:ip,port member ("10.96.0.1,tcp:443"),
// as IPVS mode writes its ipset members.
func MemberKey(ip netip.Addr, proto string, port int32) string {
	return ip.String() + "," + proto + ":" + strconv.Itoa(int(port))
}

// PortKey returns the key of a bitmap:port member.
func PortKey(port int32) string { return strconv.Itoa(int(port)) }
