package load

import (
	"strconv"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/parsers"
)

// nftListing is a listing of kube-proxy's nftables table, short.
const nftListing = `table ip kube-proxy {
	map service-ips {
		type ipv4_addr . inet_proto . inet_service : verdict
		elements = { 10.96.0.1 . tcp . 443 : goto service-A-default/kubernetes/tcp/https,
			     10.96.0.10 . udp . 53 : goto service-B-kube-system/kube-dns/udp/dns }
	}

	chain services {
		ip daddr . meta l4proto . th dport vmap @service-ips
	}

	chain service-A-default/kubernetes/tcp/https {
		meta l4proto tcp dnat to 10.0.0.1:6443
	}
}
`

// TestNFTCutShort loads an nft listing cut short in a map's elements:
// read strictly (--strict, or a bundle holding manifest.json, as collect
// writes it) it is an error naming the file and line, as before; read
// leniently (a loose file, a directory assembled by hand) it loads as far
// as it goes, partial, with the line cut in noted.
func TestNFTCutShort(t *testing.T) {
	const want = "node/nft-ruleset.txt:5: unexpected end of input: elements of service-ips opened at line 4 are not closed"
	cut := []byte(nftListing[:strings.Index(nftListing, "udp . 53")])
	dir := t.TempDir()
	writeFile(t, dir, "node/nft-ruleset.txt", cut)
	if _, err := Load([]string{dir}, Options{Strict: true}); err == nil || !IsInputError(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("strict: want the input error %q, got %v", want, err)
	}
	collected := t.TempDir()
	writeFile(t, collected, "node/nft-ruleset.txt", cut)
	writeFile(t, collected, "manifest.json", []byte(`{"schema": 1, "collected_at": "2026-03-02T09:15:00Z", "sources": []}`))
	if _, err := Load([]string{collected}, Options{}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a bundle with manifest.json: want the error %q, got %v", want, err)
	}
	for _, path := range []string{dir, writeFile(t, t.TempDir(), "paste.txt", append([]byte("[root@node-a ~]# nft list ruleset\n"), cut...))} {
		snaps, err := Load([]string{path}, Options{})
		if err != nil {
			t.Fatalf("lenient: %v", err)
		}
		in := snaps[0].Inputs[0]
		line := 5
		if strings.HasSuffix(path, "paste.txt") {
			line = 6
		}
		partial := "table ip kube-proxy is not closed (in the elements of map service-ips; the element cut there is not read)"
		if in.Kind != parsers.KindNFTText || !strings.Contains(in.Partial, partial) || !strings.HasPrefix(in.Partial, "cut short at line ") {
			t.Errorf("lenient %s: input %+v, want partial %q", path, in, partial)
		}
		if got := rangesText(in.Skipped); !strings.HasSuffix(got, "-"+strconv.Itoa(line)+" cut short") {
			t.Errorf("lenient %s: skipped %q, want line %d cut short", path, got, line)
		}
		rs := snaps[0].NFT
		if len(rs) != 1 || len(rs[0].Tables) != 1 || !rs[0].Tables[0].Cut {
			t.Fatalf("lenient %s: rulesets %+v", path, rs)
		}
		if s := rs[0].Tables[0].Set("service-ips"); s == nil || len(s.Elements) != 1 {
			t.Errorf("lenient %s: map %+v, want its first element", path, s)
		}
	}
}
