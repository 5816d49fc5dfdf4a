package checks

import (
	"strings"
	"testing"
)

// TestSyncCauses checks the causes read from the errors kube-proxy logs
// for failed syncs, as they are quoted in its log lines.
func TestSyncCauses(t *testing.T) {
	for text, want := range map[string]string{
		`err="exit status 2: iptables-restore v1.8.7 (legacy): unknown option \"--xor-mark\"\nError occurred at line: 12\n"`: "does not know the option --xor-mark",
		`iptables-restore v1.8.4 (nf_tables): unknown option "--random-fully"`:                                               "does not know the option --random-fully",
		"Couldn't load match `statistic':No such file or directory":                                                          "extension or kernel module for statistic is missing",
		`iptables: Extension comment revision 0 not supported, missing kernel module?`:                                       "extension or kernel module for comment is missing",
		`err="modprobe: FATAL: Module ip_vs_wrr not found in directory /lib/modules/4.19"`:                                   "the kernel module ip_vs_wrr is missing",
		`err="exit status 2: iptables-restore v1.4.21: line 7 failed"`:                                                       "iptables 1.4.21 is too old",
		`/dev/stdin:3:1-40: Error: Could not process rule: No such file or directory`:                                        "kernel rejected an nftables feature kube-proxy's table uses (No such file or directory)",
		`/dev/stdin:1:28-35: Error: syntax error, unexpected counter`:                                                        "nft is too old for kube-proxy's table (syntax error)",
	} {
		got := ""
		for _, c := range syncCauses {
			if sub := c.re.FindStringSubmatch(text); sub != nil {
				got = strings.ReplaceAll(c.text, "%s", sub[1])
				break
			}
		}
		if !strings.Contains(got, want) {
			t.Errorf("cause of %s = %q, want %q", text, got, want)
		}
	}
	for _, text := range []string{
		"Couldn't load target `KUBE-SVC-ABCDEFGHIJKLMNOP':No such file or directory",
		"Another app is currently holding the xtables lock",
	} {
		for _, c := range syncCauses {
			if sub := c.re.FindStringSubmatch(text); sub != nil && !strings.HasPrefix(sub[1], "KUBE-") {
				t.Errorf("%s read as cause %q", text, c.text)
			}
		}
	}
}
