package model

import (
	"crypto/sha256"
	"encoding/base32"
	"strconv"
	"strings"
)

// Chain-name prefixes of kube-proxy's iptables mode.
const (
	ChainSVC = "KUBE-SVC-"
	ChainSVL = "KUBE-SVL-"
	ChainEXT = "KUBE-EXT-"
	ChainFW  = "KUBE-FW-"
	ChainXLB = "KUBE-XLB-"
	ChainSEP = "KUBE-SEP-"
)

// PortProtoHash returns the 16-character hash kube-proxy's iptables mode
// puts in the per-service chain names (KUBE-SVC-<hash>, ...). It mirrors
// pkg/proxy/iptables/proxier.go portProtoHash (v1.20-v1.37): base32 of
// sha256 of the service port name followed by the lower-case protocol.
func PortProtoHash(spn ServicePortName, protocol string) string {
	sum := sha256.Sum256([]byte(spn.String() + strings.ToLower(protocol)))
	return base32.StdEncoding.EncodeToString(sum[:])[:16]
}

// EndpointChainHash returns the hash of KUBE-SEP-<hash> for one endpoint
// ("IP:port") of a service port (servicePortEndpointChainName, v1.20-v1.37).
func EndpointChainHash(spn ServicePortName, protocol, endpoint string) string {
	sum := sha256.Sum256([]byte(spn.String() + strings.ToLower(protocol) + endpoint))
	return base32.StdEncoding.EncodeToString(sum[:])[:16]
}

// NFTServiceChainBase returns the base of kube-proxy's nftables per-service
// chain names, "<hash8>-ns/name/proto/port" (pkg/proxy/nftables/proxier.go
// servicePortChainNameBase and hashAndTruncate, v1.29-v1.37).
func NFTServiceChainBase(spn ServicePortName, protocol string) string {
	return hashAndTruncate(spn.Namespace + "/" + spn.Name + "/" + strings.ToLower(protocol) + "/" + spn.Port)
}

// NFTEndpointChainBase returns the base of an nftables endpoint chain name,
// "<hash8>-ns/name/proto/port__IP/port" (IPv6 colons become dots).
func NFTEndpointChainBase(spn ServicePortName, protocol string, ip string, port int32) string {
	base := spn.Namespace + "/" + spn.Name + "/" + strings.ToLower(protocol) + "/" + spn.Port
	return hashAndTruncate(base + "__" + strings.ReplaceAll(ip, ":", ".") + "/" + strconv.Itoa(int(port)))
}

// nftNameLengthMax mirrors kube-proxy's limit on nftables chain names
// (NameLengthMax 256 minus the 16 characters prefixes may add).
const nftNameLengthMax = 256 - 16

func hashAndTruncate(name string) string {
	sum := sha256.Sum256([]byte(name))
	h := base32.StdEncoding.EncodeToString(sum[:])[:8]
	name = h + "-" + name
	if len(name) > nftNameLengthMax {
		name = name[:nftNameLengthMax-3] + "..."
	}
	return name
}
