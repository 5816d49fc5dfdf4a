package kpnames

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"runtime"
	"testing"
)

// The expected values are chain names from real kube-proxy dumps.
func TestChainHashes(t *testing.T) {
	for _, tc := range []struct {
		spn, proto, ep string
		want, wantE    string
	}{
		{spn: "default/kubernetes:https", proto: "tcp", want: "NPX46M4PTMTKRN6Y"},
		{spn: "kube-system/kube-dns:dns", proto: "udp", want: "TCOU7JCQXEZGVUNU"},
		{spn: "kube-system/kube-dns:dns-tcp", proto: "TCP", want: "ERIFXISQEP7F7OF4"},
		{spn: "ns1/svc1:p80", proto: "tcp", ep: "10.180.0.1:80", wantE: "SXIVWICOYRO3J4NJ"},
	} {
		if tc.want != "" {
			if got := PortProtoHash(tc.spn, tc.proto); got != tc.want {
				t.Errorf("PortProtoHash(%s, %s) = %s, want %s", tc.spn, tc.proto, got, tc.want)
			}
		}
		if tc.wantE != "" {
			if got := EndpointChainHash(tc.spn, tc.proto, tc.ep); got != tc.wantE {
				t.Errorf("EndpointChainHash(%s, %s, %s) = %s, want %s", tc.spn, tc.proto, tc.ep, got, tc.wantE)
			}
		}
	}
}

func TestNFTChainNames(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{NFTServiceChainBase("default", "kubernetes", "https", "TCP"), "2QRHZV4L-default/kubernetes/tcp/https"},
		{NFTServiceChainBase("kube-system", "kube-dns", "dns", "udp"), "FY5PMXPG-kube-system/kube-dns/udp/dns"},
		{NFTServiceChainBase("riset", "hellopod-np-svc", "", "tcp"), "P6J77WGM-riset/hellopod-np-svc/tcp/"},
		{NFTEndpointChainBase("default", "kubernetes", "https", "tcp", "10.34.4.142", 6443), "MIBO4EMV-default/kubernetes/tcp/https__10.34.4.142/6443"},
		{NFTEndpointChainBase("ns1", "svc1", "p80", "tcp", "fd00:10:180::1", 80), "ZVRFLKHO-ns1/svc1/tcp/p80__fd00.10.180..1/80"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %s, want %s", tc.got, tc.want)
		}
	}
}

func TestServiceChains(t *testing.T) {
	for _, tc := range []struct {
		name             string
		service, iptMode bool
		prefix, hash     string
	}{
		{"KUBE-SVC-NPX46M4PTMTKRN6Y", true, true, ChainSVC, "NPX46M4PTMTKRN6Y"},
		{"KUBE-SEP-SXIVWICOYRO3J4NJ", true, true, ChainSEP, "SXIVWICOYRO3J4NJ"},
		{"KUBE-XLB-NPX46M4PTMTKRN6Y", true, true, ChainXLB, "NPX46M4PTMTKRN6Y"},
		{"KUBE-FW-NPX46M4PTMTKRN6Y", true, false, ChainFW, "NPX46M4PTMTKRN6Y"},
		{"KUBE-EXT-NPX46M4PTMTKRN6Y", true, false, ChainEXT, "NPX46M4PTMTKRN6Y"},
		{"KUBE-SVC-", false, false, "", ""},
		{"KUBE-SVC-SHORT", false, false, "", ""},
		{"KUBE-SERVICES", false, false, "", ""},
		{"KUBE-NODE-PORT", false, false, "", ""},
	} {
		p, h, ok := SplitServiceChain(tc.name)
		if ok != tc.service || p != tc.prefix || h != tc.hash {
			t.Errorf("SplitServiceChain(%s) = %q, %q, %v; want %q, %q, %v", tc.name, p, h, ok, tc.prefix, tc.hash, tc.service)
		}
		if got := IsIPTablesModeChain(tc.name); got != tc.iptMode {
			t.Errorf("IsIPTablesModeChain(%s) = %v, want %v", tc.name, got, tc.iptMode)
		}
	}
	if !IsIPVSModeChain("KUBE-IPVS-FILTER") || IsIPVSModeChain("KUBE-SERVICES") {
		t.Error("IsIPVSModeChain: KUBE-IPVS-FILTER is IPVS mode's, KUBE-SERVICES is not only IPVS mode's")
	}
}

func TestCommentService(t *testing.T) {
	for c, want := range map[string][2]string{
		"ns/svc:p cluster IP":                                   {"ns/svc:p", ""},
		"ns/svc:p -> 10.0.0.1:80":                               {"ns/svc:p", "10.0.0.1:80"},
		"ns/svc -> [fd00::1]:80":                                {"ns/svc", "[fd00::1]:80"},
		"ns/svc:p":                                              {"ns/svc:p", ""},
		"ns/svc: cluster IP":                                    {"ns/svc", ""},
		"ns/svc: -> 10.0.0.1:80":                                {"ns/svc", "10.0.0.1:80"},
		"Balancing rule 0 for ns/svc:":                          {"ns/svc", ""},
		"pod traffic for ns/svc:p external destinations":        {"ns/svc:p", ""},
		"masquerade traffic for ns/svc:p external destinations": {"ns/svc:p", ""},
		"other traffic to ns/svc:p will be dropped by KUBE-PROXY-FIREWALL":     {"ns/svc:p", ""},
		"Balancing rule 2 for ns/svc:p":                                        {"ns/svc:p", ""},
		"route LOCAL traffic for ns/svc:p LB IP to service chain":              {"ns/svc:p", ""},
		"masquerade LOCAL traffic for ns/svc:p LB IP":                          {"ns/svc:p", ""},
		"kubernetes service portals":                                           {"", ""},
		"Redirect pods trying to reach external loadbalancer VIP to clusterIP": {"", ""},
		"/svc:p cluster IP":                                                    {"", ""},
		"ns/:p cluster IP":                                                     {"", ""},
		"":                                                                     {"", ""},
	} {
		s, ep := CommentService(c)
		if s != want[0] || ep != want[1] {
			t.Errorf("CommentService(%q) = %q, %q; want %q, %q", c, s, ep, want[0], want[1])
		}
	}
}

func TestEmptyPortName(t *testing.T) {
	for c, want := range map[string]bool{
		"ns/svc: cluster IP":             true,
		"ns/svc:":                        true,
		"Balancing rule 0 for ns/svc:":   true,
		"ns/svc: has no local endpoints": true,
		"ns/svc:p cluster IP":            false,
		"ns/svc cluster IP":              false,
		"ns/svc:p: cluster IP":           false,
		"kubernetes service portals":     false,
	} {
		if got := HasEmptyPortName(c); got != want {
			t.Errorf("HasEmptyPortName(%q) = %v, want %v", c, got, want)
		}
	}
	for spn, want := range map[string]string{"ns/svc": "ns/svc:", "ns/svc:p": "", "bad": ""} {
		if got := LegacyPortName(spn); got != want {
			t.Errorf("LegacyPortName(%q) = %q, want %q", spn, got, want)
		}
	}
}

func TestSetName(t *testing.T) {
	for _, tc := range []struct{ base, v4, v6 string }{
		{SetClusterIP, "KUBE-CLUSTER-IP", "KUBE-6-CLUSTER-IP"},
		{SetLoadBalancerSrcCIDR, "KUBE-LOAD-BALANCER-SOURCE-CIDR", "KUBE-6-LOAD-BALANCER-SOURCE-CID"},
		{SetNodePortLocalSCTP, "KUBE-NODE-PORT-LOCAL-SCTP-HASH", "KUBE-6-NODE-PORT-LOCAL-SCTP-HAS"},
	} {
		if got := SetName(tc.base, false); got != tc.v4 {
			t.Errorf("SetName(%s, IPv4) = %s", tc.base, got)
		}
		if got := SetName(tc.base, true); got != tc.v6 {
			t.Errorf("SetName(%s, IPv6) = %s", tc.base, got)
		}
	}
	for _, tc := range []struct {
		proto string
		local bool
		want  string
	}{{"tcp", false, SetNodePortTCP}, {"udp", true, SetNodePortLocalUDP}, {"sctp", false, SetNodePortSCTP}} {
		if got := NodePortSet(tc.proto, tc.local); got != tc.want {
			t.Errorf("NodePortSet(%s, %v) = %s, want %s", tc.proto, tc.local, got, tc.want)
		}
	}
}

// TestHashesAreTheSumsPrefix checks the hashes against the prefix of the
// base32 of the whole sha256 sum, as kube-proxy computes them, and that
// a hash allocates little more than its 16 bytes (not the 56 of the whole
// sum's base32, which it would keep were it sliced from it).
func TestHashesAreTheSumsPrefix(t *testing.T) {
	for i := 0; i < 2000; i++ {
		name := fmt.Sprintf("ns-%03d/svc-%05d:http", i%200, i)
		sum := sha256.Sum256([]byte(name + "tcp"))
		if got, want := PortProtoHash(name, "TCP"), base32.StdEncoding.EncodeToString(sum[:])[:16]; got != want {
			t.Fatalf("PortProtoHash(%q) = %q, want %q", name, got, want)
		}
		sum = sha256.Sum256([]byte(name))
		if got, want := NFTHashAndTruncate(name), base32.StdEncoding.EncodeToString(sum[:])[:8]+"-"+name; got != want {
			t.Fatalf("NFTHashAndTruncate(%q) = %q, want %q", name, got, want)
		}
	}
	// A hash is its string's only allocation: what it keeps.
	const n = 20000
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("ns/svc-%05d:http", i)
	}
	kept := make([]string, n)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i, name := range names {
		kept[i] = PortProtoHash(name, "tcp")
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 32 {
		t.Errorf("a hash allocates %d bytes, want at most 32 (16 for its string)", per)
	}
	runtime.KeepAlive(kept)
}
