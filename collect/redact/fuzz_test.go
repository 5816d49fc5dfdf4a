package redact

import (
	"bytes"
	"testing"
)

// FuzzRewrite checks that rewriting any content in any format never
// panics and keeps the line structure (findings point at the same lines).
func FuzzRewrite(f *testing.F) {
	f.Add("node/iptables-save.txt", []byte("-A KUBE-SVC-ABCDEFGHIJKLMNOP -m comment --comment \"a/b:c -> 10.0.0.1:80\" -j KUBE-SEP-ABCDEFGHIJKLMNOP\n"))
	f.Add("node/nft-ruleset.txt", []byte("chain endpoint-AAAAAAAA-a/b/tcp/p__fd00.10..1/80 {\n ip6 daddr fd00::1 dnat to [fd00::1]:80\n}\n"))
	f.Add("cluster/services.yaml", []byte("- name: web\n  clusterIP: 10.96.0.1\n  podCIDR: 10.0.0.0/24\n"))
	f.Add("node/nft-ruleset.json", []byte(`{"nftables":[{"prefix":{"addr":"10.0.0.0","len":8}},{"comment":"a/b"}]}`))
	f.Add("kube-proxy/log.txt", []byte("I0101 ip-10-0-0-1 02:42:ac:11:00:02 ::ffff:10.0.0.1 \"x\n"))
	f.Fuzz(func(t *testing.T, file string, data []byte) {
		r, err := New([]byte("fuzz key of some length......."))
		if err != nil {
			t.Fatal(err)
		}
		r.AddName("namespace", "a")
		r.AddName("service", "web")
		r.Learn(file, data)
		r.Resolve()
		out := r.Rewrite(file, data)
		if bytes.Count(out, []byte("\n")) != bytes.Count(data, []byte("\n")) {
			t.Fatalf("line count changed: %q -> %q", data, out)
		}
	})
}
