package redact

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
)

func testKey() []byte { return []byte("0123456789abcdef0123456789abcdef") }

func newTest(t *testing.T) *Redactor {
	t.Helper()
	r, err := New(testKey())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestPrefixPreserving checks the defining property of the address
// mapping: the common prefix length of two addresses is the common prefix
// length of their images, and kept ranges map to themselves.
func TestPrefixPreserving(t *testing.T) {
	r := newTest(t)
	addrs := []string{"10.244.1.5", "10.244.1.7", "10.244.2.9", "10.96.0.1", "192.168.1.1", "8.8.8.8", "10.0.0.1",
		"fd00::1", "fd00::2", "fd00:10:180::1", "2001:db8::1"}
	common := func(a, b netip.Addr) int {
		x, y := a.AsSlice(), b.AsSlice()
		n := 0
		for i := 0; i < len(x)*8; i++ {
			if bit(x, i) != bit(y, i) {
				break
			}
			n++
		}
		return n
	}
	seen := map[netip.Addr]netip.Addr{}
	for _, s := range addrs {
		a := netip.MustParseAddr(s)
		m := r.Addr(a)
		if m == a {
			t.Errorf("%s maps to itself", a)
		}
		if Kept(m) {
			t.Errorf("%s maps into a kept range: %s", a, m)
		}
		if o, dup := seen[m]; dup {
			t.Errorf("%s and %s both map to %s", o, a, m)
		}
		seen[m] = a
		if r.Addr(a) != m {
			t.Errorf("mapping of %s is not stable", a)
		}
	}
	for _, s1 := range addrs {
		for _, s2 := range addrs {
			a, b := netip.MustParseAddr(s1), netip.MustParseAddr(s2)
			if a.Is4() != b.Is4() {
				continue
			}
			if got, want := common(r.Addr(a), r.Addr(b)), common(a, b); got != want {
				t.Errorf("common prefix of %s, %s is %d; of their images %d", a, b, want, got)
			}
		}
	}
	for _, s := range []string{"127.0.0.1", "127.1.2.3", "0.0.0.0", "::1", "::", "255.255.255.255"} {
		a := netip.MustParseAddr(s)
		if r.Addr(a) != a {
			t.Errorf("kept address %s maps to %s", a, r.Addr(a))
		}
	}
	p := netip.MustParsePrefix("10.244.0.0/16")
	mp := r.Prefix(p)
	if mp.Bits() != 16 || mp.Masked() != mp || !mp.Contains(r.Addr(netip.MustParseAddr("10.244.1.5"))) {
		t.Errorf("prefix %s maps to %s, which does not hold the image of 10.244.1.5", p, mp)
	}
}

func TestRewriteRules(t *testing.T) {
	r := newTest(t)
	dump := `*nat
:KUBE-SVC-ABCDEFGHIJKLMNOP - [0:0]
-A KUBE-SERVICES -d 10.96.0.10/32 -p udp -m comment --comment "shop/cart:dns cluster IP" -m udp --dport 53 -j KUBE-SVC-` + kpnames.PortProtoHash("shop/cart:dns", "udp") + `
-A KUBE-SVC-` + kpnames.PortProtoHash("shop/cart:dns", "udp") + ` -m comment --comment "shop/cart:dns -> 10.244.1.5:53" -j KUBE-SEP-` + kpnames.EndpointChainHash("shop/cart:dns", "udp", "10.244.1.5:53") + `
-A KUBE-SEP-` + kpnames.EndpointChainHash("shop/cart:dns", "udp", "10.244.1.5:53") + ` -p udp -m comment --comment "shop/cart:dns" -m udp -j DNAT --to-destination 10.244.1.5:53
COMMIT
`
	r.Learn("node/iptables-save.txt", []byte(dump))
	r.Resolve()
	out := string(r.Rewrite("node/iptables-save.txt", []byte(dump)))
	if strings.Count(out, "\n") != strings.Count(dump, "\n") {
		t.Fatalf("line count changed:\n%s", out)
	}
	for _, old := range []string{"shop", "cart", "10.96.0.10", "10.244.1.5", kpnames.PortProtoHash("shop/cart:dns", "udp")} {
		if strings.Contains(out, old) {
			t.Errorf("%q remains:\n%s", old, out)
		}
	}
	spn := r.Name("shop") + "/" + r.Name("cart") + ":dns"
	ep := r.Addr(netip.MustParseAddr("10.244.1.5")).String() + ":53"
	for _, want := range []string{"KUBE-SVC-" + kpnames.PortProtoHash(spn, "udp"), "KUBE-SEP-" + kpnames.EndpointChainHash(spn, "udp", ep),
		"--to-destination " + ep, `"` + spn + ` cluster IP"`, "-p udp", "*nat", ":KUBE-SVC-"} {
		if !strings.Contains(out, want) {
			t.Errorf("redacted dump lacks %q:\n%s", want, out)
		}
	}
	if !strings.HasPrefix(r.Name("shop"), "ns-") || !strings.HasPrefix(r.Name("cart"), "svc-") {
		t.Errorf("pseudonyms %s, %s lack their kind prefixes", r.Name("shop"), r.Name("cart"))
	}
}

func TestRewriteNFTChain(t *testing.T) {
	r := newTest(t)
	base := "shop/cart/tcp/http"
	ep := base + "__10.244.1.5/8080"
	ep6 := base + "__fd00.10.180..1/8080"
	text := "\tchain service-" + kpnames.NFTHashAndTruncate(base) + " {\n\t\tnumgen random mod 2 vmap { 0 : goto endpoint-" + kpnames.NFTHashAndTruncate(ep) + ", 1 : goto endpoint-" + kpnames.NFTHashAndTruncate(ep6) + " }\n\t}\n"
	r.Learn("node/nft-ruleset.txt", []byte(text))
	out := string(r.Rewrite("node/nft-ruleset.txt", []byte(text)))
	nbase := r.Name("shop") + "/" + r.Name("cart") + "/tcp/http"
	v4 := r.Addr(netip.MustParseAddr("10.244.1.5")).String()
	v6 := strings.ReplaceAll(r.Addr(netip.MustParseAddr("fd00:10:180::1")).String(), ":", ".")
	for _, want := range []string{"service-" + kpnames.NFTHashAndTruncate(nbase), "endpoint-" + kpnames.NFTHashAndTruncate(nbase+"__"+v4+"/8080"),
		"endpoint-" + kpnames.NFTHashAndTruncate(nbase+"__"+v6+"/8080")} {
		if !strings.Contains(out, want) {
			t.Errorf("redacted ruleset lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "shop") || strings.Contains(out, "10.244.1.5") {
		t.Errorf("original names remain:\n%s", out)
	}
}

func TestRewriteYAMLKeepsKeysAndKeywords(t *testing.T) {
	r := newTest(t)
	r.AddName("namespace", "primary")
	r.AddName("service", "web")
	r.AddName("node", "node-1")
	in := "metadata:\n  name: web\n  namespace: primary\nspec:\n  clusterIP: 10.96.0.1\n  selector:\n    app: web\nnodePortAddresses:\n- primary\nhostnameOverride: node-1\nmode: iptables\n"
	out := string(r.Rewrite("cluster/services.yaml", []byte(in)))
	want := "metadata:\n  name: " + r.Name("web") + "\n  namespace: " + r.Name("primary") + "\nspec:\n  clusterIP: " +
		r.Addr(netip.MustParseAddr("10.96.0.1")).String() + "\n  selector:\n    app: " + r.Name("web") +
		"\nnodePortAddresses:\n- primary\nhostnameOverride: " + r.Name("node-1") + "\nmode: iptables\n"
	if out != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
}

func TestRewriteText(t *testing.T) {
	r := newTest(t)
	r.AddName("node", "ip-10-0-1-5.ec2.internal")
	r.AddName("service", "web")
	cases := []string{
		"I0301 12:00:00.123456       1 proxier.go:42] \"Syncing\" service=\"shop/web:http\" ip=10.0.0.5 v6=[fd00::5]:443",
		"link/ether 02:42:ac:11:00:02 brd ff:ff:ff:ff:ff:ff",
		"node ip-10-0-1-5.ec2.internal and ip-10-0-1-6 at web.shop.svc.cluster.local",
		"kubeproxy_sync_proxy_rules_iptables_total{table=\"nat\"} 42",
	}
	for _, c := range cases {
		out := r.Text(c)
		for _, old := range []string{"10.0.0.5", "fd00::5", "02:42:ac:11:00:02", "ip-10-0-1-5", "10-0-1-6", " web"} {
			if strings.Contains(c, old) && strings.Contains(out, old) {
				t.Errorf("%q remains in %q", old, out)
			}
		}
		for _, keep := range []string{"12:00:00.123456", "ff:ff:ff:ff:ff:ff", "table=\"nat\"", "proxier.go:42", "cluster.local"} {
			if strings.Contains(c, keep) && !strings.Contains(out, keep) {
				t.Errorf("%q lost in %q", keep, out)
			}
		}
	}
}

func TestFromMapKeepsPseudonyms(t *testing.T) {
	r := newTest(t)
	r.AddName("pod", "web")
	r.Addr(netip.MustParseAddr("10.1.2.3"))
	m := r.Map()
	r2, err := FromMap(m.Format())
	if err != nil {
		t.Fatal(err)
	}
	r2.AddName("service", "web") // another role: the earlier pseudonym wins
	if r2.Name("web") != r.Name("web") {
		t.Errorf("pseudonym changed across runs: %s vs %s", r.Name("web"), r2.Name("web"))
	}
	if got := r2.Addr(netip.MustParseAddr("10.1.2.3")).String(); got != m.Addresses["10.1.2.3"] {
		t.Errorf("address mapping changed: %s vs %s", got, m.Addresses["10.1.2.3"])
	}
	if rev := m.Reverse(); rev[r.Name("web")] != "web" {
		t.Errorf("Reverse lacks the name")
	}
}
