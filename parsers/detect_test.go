package parsers

import "testing"

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want Kind
	}{
		{"nft text", "table ip kube-proxy {\n\tcomment \"rules for kube-proxy\"\n}\n", KindNFTText},
		{"nft -a text", "table inet filter { # handle 3\n\tchain input { # handle 1\n\t}\n}\n", KindNFTText},
		{"nft json", `{"nftables": [{"metainfo": {"version": "1.0.6", "json_schema_version": 1}}]}`, KindNFTJSON},
		{"nft json compact", "\n{\"nftables\":[]}", KindNFTJSON},
		{"kube-proxy config json in nftables mode", `{"apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration", "mode": "nftables"}`, KindKubeProxyConfig},
		{"configmap json mentioning nftables", `{"apiVersion": "v1", "kind": "ConfigMap", "data": {"mode": "nftables"}}`, KindKube},
	} {
		if got := Detect([]byte(tc.in)); got != tc.want {
			t.Errorf("%s: Detect = %s, want %s", tc.name, got, tc.want)
		}
	}
}
