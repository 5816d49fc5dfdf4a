package nft_test

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxyscan/proxyscan/internal/netnstest"
	"github.com/proxyscan/proxyscan/internal/nftjson"
	"github.com/proxyscan/proxyscan/parsers/nft"
)

// genKubeProxy writes the `nft list ruleset` text of a kube-proxy-shaped
// ruleset with n services of eps endpoints each: a service-ips map and a
// cluster-ips set with n elements, a service chain per service with a
// masquerade rule and a numgen vmap, and an endpoint chain per endpoint.
func genKubeProxy(n, eps int) []byte {
	var b bytes.Buffer
	svcIP := func(i int) string { return fmt.Sprintf("10.%d.%d.%d", 96+i>>16, i>>8&255, i&255) }
	epIP := func(i, j int) string { k := i*eps + j; return fmt.Sprintf("10.%d.%d.%d", 128+k>>16, k>>8&255, k&255) }
	svc := func(i int) string {
		return fmt.Sprintf("service-%08X-ns%d/svc%d/tcp/http", i*2654435761&0xffffffff, i%50, i)
	}
	ep := func(i, j int) string {
		return fmt.Sprintf("endpoint-%08X-ns%d/svc%d/tcp/http__%s/8080", (i*eps+j)*2246822519&0xffffffff, i%50, i, epIP(i, j))
	}
	b.WriteString("table ip kube-proxy {\n\tcomment \"rules for kube-proxy\"\n")
	b.WriteString("\tset cluster-ips {\n\t\ttype ipv4_addr\n\t\tcomment \"Active ClusterIPs\"\n\t\telements = { ")
	for i := 0; i < n; i++ {
		if i > 0 {
			if i%2 == 0 {
				b.WriteString(",\n\t\t\t     ")
			} else {
				b.WriteString(", ")
			}
		}
		b.WriteString(svcIP(i))
	}
	b.WriteString(" }\n\t}\n\n")
	b.WriteString("\tmap service-ips {\n\t\ttype ipv4_addr . inet_proto . inet_service : verdict\n\t\tcomment \"ClusterIP, ExternalIP and LoadBalancer IP traffic\"\n\t\telements = { ")
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",\n\t\t\t     ")
		}
		fmt.Fprintf(&b, "%s . tcp . 80 : goto %s", svcIP(i), svc(i))
	}
	b.WriteString(" }\n\t}\n\n")
	b.WriteString("\tchain nat-prerouting {\n\t\ttype nat hook prerouting priority dstnat; policy accept;\n\t\tjump services\n\t}\n\n")
	b.WriteString("\tchain services {\n\t\tip daddr . meta l4proto . th dport vmap @service-ips\n\t}\n\n")
	b.WriteString("\tchain mark-for-masquerade {\n\t\tmeta mark set meta mark | 0x00004000\n\t}\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "\n\tchain %s {\n\t\tip daddr %s tcp dport 80 ip saddr != 10.128.0.0/9 jump mark-for-masquerade\n\t\tnumgen random mod %d vmap { ", svc(i), svcIP(i), eps)
		for j := 0; j < eps; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%d : goto %s", j, ep(i, j))
		}
		b.WriteString(" }\n\t}\n")
		for j := 0; j < eps; j++ {
			fmt.Fprintf(&b, "\n\tchain %s {\n\t\tip saddr %s jump mark-for-masquerade\n\t\tmeta l4proto tcp dnat to %s:8080\n\t}\n", ep(i, j), epIP(i, j), epIP(i, j))
		}
	}
	b.WriteString("}\n")
	return b.Bytes()
}

var big struct {
	once       sync.Once
	text, json []byte
}

func bigInputs(tb testing.TB) ([]byte, []byte) {
	big.once.Do(func() {
		big.text = genKubeProxy(10000, 6)
		rs, err := nft.ParseText("big", big.text)
		if err != nil {
			panic(err)
		}
		big.json = nftjson.Format(rs)
	})
	return big.text, big.json
}

// TestBigRuleset checks the generated benchmark input: canonical text and
// JSON giving the same model (the times are logged; the benchmarks measure).
func TestBigRuleset(t *testing.T) {
	netnstest.SkipShort(t, "large generated input")
	text, js := bigInputs(t)
	start := time.Now()
	tm, err := nft.ParseText("big.txt", text)
	if err != nil {
		t.Fatal(err)
	}
	tText := time.Since(start)
	if got := nft.Format(tm); !bytes.Equal(got, text) {
		t.Fatalf("generated text is not canonical:\n%s", strings.Join(strings.SplitN(string(got), "\n", 3)[:2], "\n"))
	}
	start = time.Now()
	jm, err := nft.ParseJSON("big.json", js)
	if err != nil {
		t.Fatal(err)
	}
	tJSON := time.Since(start)
	tb := tm.Tables[0]
	if len(tb.Chains) != 3+10000*7 || len(tb.Set("service-ips").Elements) != 10000 {
		t.Fatalf("generated %d chains, %d service-ips elements", len(tb.Chains), len(tb.Set("service-ips").Elements))
	}
	if got := nft.Format(jm); !bytes.Equal(got, text) {
		t.Errorf("JSON model does not print as the text")
	}
	t.Logf("text %d bytes parsed in %v; JSON %d bytes parsed in %v", len(text), tText, len(js), tJSON)
}

// benchParse parses data b.N times, reporting the heap in use after the
// first parse (heap-MB) and what the last ruleset parsed holds once the
// garbage is collected (live-MB: what an analysis keeps of it, the input
// aside).
func benchParse(b *testing.B, data []byte, parse func(string, []byte) (*nft.Ruleset, error)) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak uint64
	var last *nft.Ruleset
	for i := 0; i < b.N; i++ {
		last = nil
		rs, err := parse("big", data)
		if err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peak = ms.HeapInuse
		}
		last = rs
	}
	b.StopTimer()
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(last)
	b.ReportMetric(float64(peak)/(1<<20), "heap-MB")
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), "live-MB")
}

func BenchmarkParseText(b *testing.B) {
	text, _ := bigInputs(b)
	b.ResetTimer()
	benchParse(b, text, nft.ParseText)
}

func BenchmarkParseJSON(b *testing.B) {
	_, js := bigInputs(b)
	b.ResetTimer()
	benchParse(b, js, nft.ParseJSON)
}

func BenchmarkFormat(b *testing.B) {
	text, _ := bigInputs(b)
	rs, err := nft.ParseText("big", text)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = nft.Format(rs)
	}
}

// TestParseFile parses the file named by PROXYSCAN_NFT_PARSE, for
// measuring a parse from outside (e.g. its peak RSS with /usr/bin/time -v
// on the test binary). PROXYSCAN_NFT_GENERATE=DIR writes the generated
// benchmark inputs there first.
func TestParseFile(t *testing.T) {
	if dir := os.Getenv("PROXYSCAN_NFT_GENERATE"); dir != "" {
		text, js := bigInputs(t)
		if err := os.WriteFile(dir+"/kube-proxy-10k.txt", text, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dir+"/kube-proxy-10k.json", js, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	name := os.Getenv("PROXYSCAN_NFT_PARSE")
	if name == "" {
		t.Skip("PROXYSCAN_NFT_PARSE names no file to parse")
	}
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rs, err := nft.Parse(name, data)
	if err != nil {
		t.Fatal(err)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	n := 0
	for _, tb := range rs.Tables {
		for _, c := range tb.Chains {
			n += len(c.Rules)
		}
	}
	t.Logf("%s: %d bytes, %d rules, parsed in %v, heap in use %d MB", name, len(data), n, time.Since(start), ms.HeapInuse>>20)
}
