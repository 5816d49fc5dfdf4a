package redact

import (
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/model"
)

// TestHashesMatchTheAnalyzer checks that the hashes redaction recomputes
// are the ones the analyzer attributes chains by.
func TestHashesMatchTheAnalyzer(t *testing.T) {
	for _, spn := range []model.ServicePortName{
		{Namespace: "default", Name: "kubernetes", Port: "https"},
		{Namespace: "kube-system", Name: "kube-dns", Port: "dns"},
		{Namespace: "default", Name: "empty"},
	} {
		for _, proto := range []string{"tcp", "udp"} {
			if got, want := portProtoHash(spn.String(), proto), model.PortProtoHash(spn, proto); got != want {
				t.Errorf("portProtoHash(%s, %s) = %s, model %s", spn, proto, got, want)
			}
			if got, want := endpointHash(spn.String(), proto, "10.180.0.1:80"), model.EndpointChainHash(spn, proto, "10.180.0.1:80"); got != want {
				t.Errorf("endpointHash = %s, model %s", got, want)
			}
			base := spn.Namespace + "/" + spn.Name + "/" + proto + "/" + spn.Port
			if got, want := nftHashAndTruncate(base), model.NFTServiceChainBase(spn, proto); got != want {
				t.Errorf("nftHashAndTruncate(%s) = %s, model %s", base, got, want)
			}
			if got, want := nftHashAndTruncate(base+"__fd00.10.180..1/80"), model.NFTEndpointChainBase(spn, proto, "fd00:10:180::1", 80); got != want {
				t.Errorf("endpoint chain %s, model %s", got, want)
			}
		}
	}
	if got := portProtoHash("default/kubernetes:https", "tcp"); got != "NPX46M4PTMTKRN6Y" {
		t.Errorf("default/kubernetes:https tcp hashes to %s, kube-proxy's is NPX46M4PTMTKRN6Y", got)
	}
}
