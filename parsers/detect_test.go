package parsers

import "testing"

func TestDetect(t *testing.T) {
	tests := []struct {
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
		{"kubectl describe configmap", "$ kubectl -n kube-system describe cm kube-proxy\nName:         kube-proxy\nNamespace:    kube-system\nLabels:       app=kube-proxy\n\nData\n====\nconfig.conf:\n----\nkind: KubeProxyConfiguration\nmode: ipvs\n", KindKube},
		{"kubectl describe service (no data)", "Name:              web\nNamespace:         shop\nType:              ClusterIP\nIP:                10.96.0.10\n", KindUnknown},
		{"KubeProxyConfiguration YAML kind first", "kind: KubeProxyConfiguration\napiVersion: kubeproxy.config.k8s.io/v1alpha1\n", KindKubeProxyConfig},
		{"KubeProxyConfiguration JSON", `{"apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration"}`, KindKubeProxyConfig},
		{"bundle manifest", "{\n  \"schema\": 1,\n  \"tool\": {\"name\": \"proxyscan\"},\n  \"sources\": []\n}\n", KindManifest},
		{"modules.builtin", "kernel/net/netfilter/nf_conntrack.ko\nkernel/net/netfilter/nf_tables.ko\n", KindModules},
		{"kube-proxy ConfigMap is a kube object", "apiVersion: v1\ndata:\n  config.conf: |\n    kind: KubeProxyConfiguration\nkind: ConfigMap\n", KindKube},
		// kube-proxy /metrics
		{"metrics page", "# HELP go_goroutines Number of goroutines that currently exist.\n# TYPE go_goroutines gauge\ngo_goroutines 48\n# HELP kubeproxy_sync_proxy_rules_duration_seconds [ALPHA] SyncProxyRules latency in seconds\n", KindMetrics},
		{"metrics page from curl -i", "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n\r\n# TYPE kubeproxy_sync_proxy_rules_last_timestamp_seconds gauge\nkubeproxy_sync_proxy_rules_last_timestamp_seconds 1.74e+09\n", KindMetrics},
		{"metrics of another component", "# TYPE go_goroutines gauge\ngo_goroutines 48\n", KindUnknown},
		// /healthz and /livez
		{"healthz before 1.33", `{"lastUpdated": "2025-03-02 08:15:31.002213977 +0000 UTC m=+202.631797660","currentTime": "2025-03-02 08:15:31.002213977 +0000 UTC m=+202.631797660"}`, KindHealthz},
		{"healthz 1.33+", `{"lastUpdated":"2026-03-02T08:15:31Z","currentTime":"2026-03-02T08:15:31Z","nodeEligible":true,"healthy":true,"status":{"IPv4":{"lastUpdated":"2026-03-02T08:15:29Z","healthy":true}}}`, KindHealthz},
		{"healthz from curl -i", "HTTP/1.1 503 Service Unavailable\nContent-Type: application/json\n\n{\"lastUpdated\":\"2026-03-02T08:15:29Z\",\"currentTime\":\"2026-03-02T08:15:31Z\",\"healthy\":false}", KindHealthz},
		{"json log mentioning lastUpdated", `{"ts":1772439300118.02,"caller":"a.go:1","msg":"x","lastUpdated":"y","currentTime":"z","v":0}`, KindLog},
		// logs
		{"klog text", "I0302 08:15:00.123456       1 server_linux.go:144] \"Using iptables Proxier\"\n", KindLog},
		{"klog unstructured", "I0125 10:00:00.000000 1 server.go:650] Using ipvs Proxier.\n", KindLog},
		{"CRI log", "2026-03-02T08:15:00.123456789Z stderr F I0302 08:15:00.123456       1 server_linux.go:144] \"Using iptables Proxier\"\n", KindLog},
		{"kubectl logs --timestamps", "2026-03-02T08:15:00.123456789Z I0302 08:15:00.123456       1 server_linux.go:144] \"Using iptables Proxier\"\n", KindLog},
		{"JSON log", `{"ts":1772439300118.0234,"caller":"app/server.go:228","msg":"Successfully retrieved NodeIPs","v":0}` + "\n", KindLog},
		{"JSON log in CRI", `2026-03-02T08:15:00.123456789Z stderr F {"ts":1772439300118.0234,"caller":"app/server.go:228","msg":"x","v":0}` + "\n", KindLog},
		// sysctl
		{"sysctl -a", "net.bridge.bridge-nf-call-iptables = 1\nnet.ipv4.ip_forward = 1\n", KindSysctl},
		{"sysctl key=value", "net.ipv4.ip_forward=1\n", KindSysctl},
		{"proc sys paths", "/proc/sys/net/ipv4/ip_forward:1\n/proc/sys/net/ipv4/conf/eth0.100/rp_filter:0\n", KindSysctl},
		// modules
		{"proc modules", "ip_vs 196608 12 ip_vs_sh,ip_vs_wrr,ip_vs_rr, Live 0x0000000000000000\nnf_conntrack 184320 6 - Live 0x0000000000000000\n", KindModules},
		{"lsmod", "Module                  Size  Used by\nip_vs                 196608  12 ip_vs_sh\n", KindModules},
		{"lsmod | grep ip_vs", "ip_vs_sh               16384  0\nip_vs                 176128  14 ip_vs_rr,ip_vs_sh\nlibcrc32c              16384  3 nf_conntrack,nf_nat,ip_vs\n", KindModules},
		{"lsmod | grep with a marker", "nf_conntrack          172032  6 xt_conntrack [permanent]\n", KindModules},
		{"three columns of no netfilter module", "ext4 905216 2\nmbcache 16384 1 ext4\n", KindUnknown},
		{"numbers in a table", "web 80 3\nnotes about ip_vs 1 2\n", KindUnknown},
		{"ip -br addr", "lo               UNKNOWN        127.0.0.1/8 ::1/128 \neth0@veth-peer   UP             192.168.49.2/24 \n", KindIPAddr},
		{"ip -br link", "lo               UNKNOWN        00:00:00:00:00:00 <LOOPBACK,UP,LOWER_UP> \n", KindUnknown},
		{"a table with a state column", "web              UP             3 replicas\n", KindUnknown},
		// ipvsadm
		{"ipvsadm -Ln", "IP Virtual Server version 1.2.1 (size=4096)\nProt LocalAddress:Port Scheduler Flags\n  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\nTCP  10.96.0.1:443 rr\n", KindIPVSList},
		{"ipvsadm -Ln --stats, header cut", "Prot LocalAddress:Port               Conns   InPkts  OutPkts  InBytes OutBytes\n", KindIPVSList},
		{"ipvsadm -Ln --timeout", "Timeout (tcp tcpfin udp): 900 120 300\n", KindIPVSList},
		{"notes quoting the ipvsadm header", "# Example bundles\n\nThe listing starts with\n`IP Virtual Server version 1.2.1 (size=4096)` and a\n\"Prot LocalAddress:Port\" line.\n", KindUnknown},
		{"modules.builtin", "kernel/net/netfilter/ipvs/ip_vs.ko\nkernel/net/netfilter/ipvs/ip_vs_rr.ko\n", KindModules},
		{"nft text", "table ip kube-proxy {\n\tcomment \"rules for kube-proxy\"\n}\n", KindNFTText},
		{"nft -a text", "table inet filter { # handle 3\n\tchain input { # handle 1\n\t}\n}\n", KindNFTText},
		{"nft json", `{"nftables": [{"metainfo": {"version": "1.0.6", "json_schema_version": 1}}]}`, KindNFTJSON},
		{"nft json compact", "\n{\"nftables\":[]}", KindNFTJSON},
		{"kube-proxy config json in nftables mode", `{"apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration", "mode": "nftables"}`, KindKubeProxyConfig},
		{"configmap json mentioning nftables", `{"apiVersion": "v1", "kind": "ConfigMap", "data": {"mode": "nftables"}}`, KindKube},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Detect([]byte(tc.in)); got != tc.want {
				t.Errorf("Detect = %q, want %q", got, tc.want)
			}
		})
	}
}
