package parsers

import "testing"

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want Kind
	}{
		{"kube-proxy --version", "Kubernetes v1.37.2\n", KindVersion},
		{"cmdline NUL-separated", "/usr/local/bin/kube-proxy\x00--config=/var/lib/kube-proxy/config.conf\x00--hostname-override=n1\x00", KindCmdline},
		{"cmdline one line", "/usr/local/bin/kube-proxy --config=/var/lib/kube-proxy/config.conf\n", KindCmdline},
		{"cmdline flags only", "--proxy-mode=ipvs --cluster-cidr=10.0.0.0/8", KindCmdline},
		{"cmdline shell continuation", "kube-proxy \\\n  --config=/etc/kp.yaml \\\n  -v=2\n", KindCmdline},
		{"cmdline hyperkube", "/hyperkube kube-proxy --proxy-mode iptables\n", KindCmdline},
		{"KubeProxyConfiguration YAML", "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: ipvs\n", KindKubeProxyConfig},
		{"KubeProxyConfiguration YAML kind first", "kind: KubeProxyConfiguration\napiVersion: kubeproxy.config.k8s.io/v1alpha1\n", KindKubeProxyConfig},
		{"KubeProxyConfiguration JSON", `{"apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration"}`, KindKubeProxyConfig},
		{"bundle manifest", "{\n  \"schema\": 1,\n  \"tool\": {\"name\": \"proxyscan\"},\n  \"sources\": []\n}\n", KindManifest},
		{"modules.builtin", "kernel/net/netfilter/nf_conntrack.ko\nkernel/net/netfilter/nf_tables.ko\n", KindModules},
		{"kube-proxy ConfigMap is a kube object", "apiVersion: v1\ndata:\n  config.conf: |\n    kind: KubeProxyConfiguration\nkind: ConfigMap\n", KindKube},
	} {
		if got := Detect([]byte(tc.in)); got != tc.want {
			t.Errorf("%s: Detect = %s, want %s", tc.name, got, tc.want)
		}
	}
}
