package model

import "testing"

// The expected values are chain names from real kube-proxy dumps.
func TestChainHashes(t *testing.T) {
	for _, tc := range []struct {
		spn         ServicePortName
		proto, ep   string
		want, wantE string
	}{
		{spn: ServicePortName{"default", "kubernetes", "https"}, proto: "tcp", want: "NPX46M4PTMTKRN6Y"},
		{spn: ServicePortName{"kube-system", "kube-dns", "dns"}, proto: "udp", want: "TCOU7JCQXEZGVUNU"},
		{spn: ServicePortName{"kube-system", "kube-dns", "dns-tcp"}, proto: "TCP", want: "ERIFXISQEP7F7OF4"},
		{spn: ServicePortName{"ns1", "svc1", "p80"}, proto: "tcp", ep: "10.180.0.1:80", wantE: "SXIVWICOYRO3J4NJ"},
	} {
		if tc.want != "" {
			if got := PortProtoHash(tc.spn, tc.proto); got != tc.want {
				t.Errorf("PortProtoHash(%v, %s) = %s, want %s", tc.spn, tc.proto, got, tc.want)
			}
		}
		if tc.wantE != "" {
			if got := EndpointChainHash(tc.spn, tc.proto, tc.ep); got != tc.wantE {
				t.Errorf("EndpointChainHash(%v, %s, %s) = %s, want %s", tc.spn, tc.proto, tc.ep, got, tc.wantE)
			}
		}
	}
}

func TestNFTChainNames(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{NFTServiceChainBase(ServicePortName{"default", "kubernetes", "https"}, "TCP"), "2QRHZV4L-default/kubernetes/tcp/https"},
		{NFTServiceChainBase(ServicePortName{"kube-system", "kube-dns", "dns"}, "udp"), "FY5PMXPG-kube-system/kube-dns/udp/dns"},
		{NFTServiceChainBase(ServicePortName{"riset", "hellopod-np-svc", ""}, "tcp"), "P6J77WGM-riset/hellopod-np-svc/tcp/"},
		{NFTEndpointChainBase(ServicePortName{"default", "kubernetes", "https"}, "tcp", "10.34.4.142", 6443), "MIBO4EMV-default/kubernetes/tcp/https__10.34.4.142/6443"},
		{NFTEndpointChainBase(ServicePortName{"ns1", "svc1", "p80"}, "tcp", "fd00:10:180::1", 80), "ZVRFLKHO-ns1/svc1/tcp/p80__fd00.10.180..1/80"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %s, want %s", tc.got, tc.want)
		}
	}
}
