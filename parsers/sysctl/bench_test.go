package sysctl

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// listing returns a sysctl -a listing of n interfaces' keys, about 60
// bytes a line, as a node with many pods prints it.
func listing(n int) []byte {
	var b strings.Builder
	b.WriteString("net.ipv4.ip_forward = 1\n")
	for i := range n {
		for _, k := range []string{"rp_filter", "route_localnet", "forwarding", "accept_redirects", "arp_ignore", "arp_announce", "proxy_arp", "send_redirects"} {
			fmt.Fprintf(&b, "net.ipv4.conf.veth%08x.%s = 0\n", i, k)
		}
	}
	return []byte(b.String())
}

// BenchmarkParse parses a listing of about 20 MB; live-B/text-B is what
// the parsed listing holds for each byte of its text, once the text is
// dropped.
func BenchmarkParse(b *testing.B) {
	data := listing(40000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var live float64
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		l, err := Parse("sysctl.txt", data)
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		live = float64(after.HeapAlloc-before.HeapAlloc) / float64(len(data))
		runtime.KeepAlive(l)
	}
	b.ReportMetric(live, "live-B/text-B")
}
