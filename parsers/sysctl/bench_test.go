package sysctl

import (
	"fmt"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/parsers/parsetest"
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
	parsetest.BenchLive(b, len(data), func() (any, error) { return Parse("sysctl.txt", data) })
}
