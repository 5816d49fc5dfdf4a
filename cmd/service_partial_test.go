package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bundleFile returns the text of a file of testdata/bundles/NAME.
func bundleFile(t *testing.T, name, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testdata(t, "bundles", name), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// headLines returns the first n lines of s.
func headLines(s string, n int) string {
	return strings.Join(strings.SplitAfter(s, "\n")[:n], "")
}

// TestServicePartial checks that analyze --service on a partial data plane
// (a dump cut short, a listing of one family's table) warns that the
// inputs are incomplete and does not list as missing what may lie outside
// what they show: the report's notChecked says what was left out, the
// exit status is 0. What a whole dump lacks is still listed (exit 1).
func TestServicePartial(t *testing.T) {
	ipt := bundleFile(t, "iptables-healthy", "node/iptables-save.txt")
	nft := bundleFile(t, "nftables-healthy", "node/nft-ruleset.txt")
	cut := changedBundle(t, "iptables-healthy", map[string]string{"node/iptables-save.txt": headLines(ipt, 200)})
	oneTable := changedBundle(t, "nftables-healthy", map[string]string{"node/nft-ruleset.json": "",
		"node/nft-ruleset.txt": nft[:strings.Index(nft, "table ip6 kube-proxy")]})
	var dropped []string
	for _, l := range strings.SplitAfter(ipt, "\n") {
		if !strings.Contains(l, `"shop/storefront:http cluster IP"`) {
			dropped = append(dropped, l)
		}
	}
	missing := changedBundle(t, "iptables-healthy", map[string]string{"node/iptables-save.txt": strings.Join(dropped, "")})
	for _, tc := range []struct {
		name, dir, service string
		code               int
		stdout, stderr     string
	}{
		{"iptables-save cut short", cut, "shop/storefront:http", 0,
			`"IPv4: node/iptables-save.txt is partial: cut short`,
			"proxyscan: warning: analyze --service: " + cut + ": node/iptables-save.txt is partial: cut short"},
		{"nft list table ip kube-proxy", oneTable, "media/web:http", 0,
			`"IPv6: no IPv6 data plane in the inputs; not listed: `, ""},
		{"whole dump, a rule missing", missing, "shop/storefront:http", 1, `"kind": "missing-rule"`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, outputs := testFactory()
			code := Run(f, []string{"analyze", tc.dir, "--service", tc.service, "-o", "json"})
			stdout, stderr := outputs()
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			if !strings.Contains(stdout, tc.stdout) {
				t.Errorf("stdout does not contain %q:\n%s", tc.stdout, stdout)
			}
			if tc.code == 0 && strings.Contains(stdout, `"kind": "missing-`) {
				t.Errorf("a missing rule listed:\n%s", stdout)
			}
			if tc.code == 1 && strings.Contains(stdout, "notChecked") {
				t.Errorf("a whole dump has notChecked:\n%s", stdout)
			}
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr does not contain %q:\n%s", tc.stderr, stderr)
			}
		})
	}
}
