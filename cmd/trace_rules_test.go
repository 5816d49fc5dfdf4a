package cmd

import (
	"strings"
	"testing"
)

// TestTraceWithoutRules: a trace of the captured rules of a node without
// the rule dump of its mode is an input error (exit 2) in every mode,
// naming the node and what is missing, rather than a packet shown
// untouched or delivered; --expected traces such a node all the same.
func TestTraceWithoutRules(t *testing.T) {
	for _, tc := range []struct {
		name, bundle string
		remove       []string
		oneTable     bool // the nft listing holds table ip kube-proxy alone
		args         []string
		code         int
		stderr       string
	}{
		{name: "iptables", bundle: "iptables-mini", remove: []string{"node/iptables-save.txt"}, args: []string{"--dst", "10.96.0.10:53", "--proto", "udp"},
			code: 2, stderr: "no IPv4 iptables dump (iptables-save) in the inputs, and a trace of the captured rules of the iptables mode rests on it"},
		{name: "iptables, --compare", bundle: "iptables-mini", remove: []string{"node/iptables-save.txt"}, args: []string{"--dst", "10.96.0.10:53", "--proto", "udp", "--compare"},
			code: 2, stderr: "no IPv4 iptables dump (iptables-save) in the inputs"},
		{name: "iptables, --expected", bundle: "iptables-mini", remove: []string{"node/iptables-save.txt"}, args: []string{"--dst", "10.96.0.10:53", "--proto", "udp", "--expected"}},
		{name: "ipvs", bundle: "ipvs-healthy", remove: []string{"node/iptables-save.txt", "node/ip6tables-save.txt", "node/ipvsadm.txt", "node/ipvsadm-save.txt"}, args: []string{"--dst", "10.112.90.4:80"},
			code: 2, stderr: "no IPVS table (ipvsadm -Ln) in the inputs, and a trace of the captured rules of the ipvs mode rests on it"},
		{name: "nftables", bundle: "nftables-healthy", remove: []string{"node/nft-ruleset.txt", "node/nft-ruleset.json"}, args: []string{"--dst", "10.96.0.10:53", "--proto", "udp"},
			code: 2, stderr: "no nftables ruleset (nft list ruleset) in the inputs, and a trace of the captured rules of the nftables mode rests on it"},
		{name: "nftables, no table of the packet's family", bundle: "nftables-healthy", remove: []string{"node/nft-ruleset.json"}, oneTable: true, args: []string{"--dst", "[fd00:112::5a04]:80"},
			code: 2, stderr: "no nftables table of the IPv6 family (nft list ruleset, or nft list table ip6 kube-proxy) in the inputs, and a trace of the captured rules of the nftables mode rests on it"},
		{name: "nftables, no table of the packet's family, --compare", bundle: "nftables-healthy", remove: []string{"node/nft-ruleset.json"}, oneTable: true, args: []string{"--dst", "[fd00:112::5a04]:80", "--compare"},
			code: 2, stderr: "no nftables table of the IPv6 family"},
		{name: "nftables, a table of the packet's family", bundle: "nftables-healthy", remove: []string{"node/nft-ruleset.json"}, oneTable: true, args: []string{"--dst", "10.112.90.4:80"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changes := map[string]string{}
			for _, r := range tc.remove {
				changes[r] = ""
			}
			if tc.oneTable {
				nft := bundleFile(t, tc.bundle, "node/nft-ruleset.txt")
				changes["node/nft-ruleset.txt"] = nft[:strings.Index(nft, "table ip6 kube-proxy")]
			}
			dir := changedBundle(t, tc.bundle, changes)
			f, outputs := testFactory()
			code := Run(f, append([]string{"trace", "-o", "json", dir}, tc.args...))
			stdout, stderr := outputs()
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			if tc.stderr != "" && (!strings.Contains(stderr, tc.stderr) || !strings.Contains(stderr, dir)) {
				t.Errorf("stderr does not contain %q and the bundle:\n%s", tc.stderr, stderr)
			}
			if tc.code == 2 && strings.Contains(stderr, "--help") {
				t.Errorf("an input error, not a usage error: %s", stderr)
			}
		})
	}
}
