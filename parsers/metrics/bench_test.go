package metrics

import (
	"bytes"
	"fmt"
	"testing"
)

// largePage builds a page the size of a big node's: the kube-proxy
// histograms for both families plus many extra series.
func largePage(series int) []byte {
	var b bytes.Buffer
	b.WriteString("# HELP kubeproxy_sync_proxy_rules_duration_seconds [ALPHA] SyncProxyRules latency in seconds\n")
	b.WriteString("# TYPE kubeproxy_sync_proxy_rules_duration_seconds histogram\n")
	for _, fam := range []string{"IPv4", "IPv6"} {
		le, n := 0.001, 0
		for i := 0; i < 15; i++ {
			n += i * 7
			fmt.Fprintf(&b, "kubeproxy_sync_proxy_rules_duration_seconds_bucket{ip_family=%q,le=\"%g\"} %d\n", fam, le, n)
			le *= 2
		}
		fmt.Fprintf(&b, "kubeproxy_sync_proxy_rules_duration_seconds_bucket{ip_family=%q,le=\"+Inf\"} %d\n", fam, n)
		fmt.Fprintf(&b, "kubeproxy_sync_proxy_rules_duration_seconds_sum{ip_family=%q} 12.5\n", fam)
		fmt.Fprintf(&b, "kubeproxy_sync_proxy_rules_duration_seconds_count{ip_family=%q} %d\n", fam, n)
	}
	b.WriteString("# HELP rest_client_requests_total [ALPHA] Number of HTTP requests, partitioned by status code, method, and host.\n")
	b.WriteString("# TYPE rest_client_requests_total counter\n")
	for i := 0; i < series; i++ {
		fmt.Fprintf(&b, "rest_client_requests_total{code=\"200\",host=\"10.0.%d.%d:6443\",method=\"GET\"} %d\n", i/256, i%256, i)
	}
	return b.Bytes()
}

func BenchmarkParse(b *testing.B) {
	data := largePage(5000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		p, err := Parse("m", data)
		if err != nil {
			b.Fatal(err)
		}
		p.KubeProxy()
	}
}
