package klog

import (
	"strings"
	"testing"
)

// TestReadCause checks the causes read from the errors kube-proxy logs for
// failed syncs, as they are quoted in its log lines.
func TestReadCause(t *testing.T) {
	for _, tt := range []struct {
		text, id, want, line string
	}{
		{`err="exit status 2: iptables-restore v1.4.21: unknown option \"--xor-mark\"\nError occurred at line: 12\n"`, "iptables-option-unknown", "does not know the option --xor-mark", ""},
		{`iptables-restore v1.8.4 (nf_tables): unknown option "--random-fully"`, "iptables-option-unknown", "does not know the option --random-fully", ""},
		{"Couldn't load match `statistic':No such file or directory", "iptables-extension-missing", "extension or kernel module for statistic is missing", ""},
		{`iptables: Extension comment revision 0 not supported, missing kernel module?`, "iptables-extension-missing", "extension or kernel module for comment is missing", ""},
		{`err="modprobe: FATAL: Module ip_vs_wrr not found in directory /lib/modules/4.19"`, "kernel-module-missing", "the kernel module ip_vs_wrr is missing", ""},
		{`err="exit status 2: iptables-restore v1.4.21: line 7 failed"`, "iptables-too-old", "iptables 1.4.21 is too old", ""},
		{`/dev/stdin:3:1-40: Error: Could not process rule: No such file or directory`, "nftables-feature-missing", "kernel rejected an nftables feature kube-proxy's table uses (No such file or directory)", ""},
		{`/dev/stdin:1:28-35: Error: syntax error, unexpected counter`, "nft-too-old", "nft is too old for kube-proxy's table (syntax error)", ""},
		{"\"Failed to execute iptables-restore\" err=<\n\texit status 2: iptables-restore v1.8.7 (legacy): Couldn't load match `recent':No such file or directory\n >", "iptables-extension-missing", "for recent is missing", "exit status 2: iptables-restore v1.8.7 (legacy): Couldn't load match `recent':No such file or directory"},
	} {
		c, _, ok := ReadCause(tt.text)
		if !ok {
			t.Errorf("no cause read from %s", tt.text)
			continue
		}
		if c.Cause.ID != tt.id || !strings.Contains(c.Text, tt.want) {
			t.Errorf("cause of %s = %s %q, want %s %q", tt.text, c.Cause.ID, c.Text, tt.id, tt.want)
		}
		if tt.line != "" && c.Line != tt.line {
			t.Errorf("cause of %s read on line %q, want %q", tt.text, c.Line, tt.line)
		}
	}
	for _, text := range []string{
		"Couldn't load target `KUBE-SVC-ABCDEFGHIJKLMNOP':No such file or directory",
		"Another app is currently holding the xtables lock",
		`"Syncing iptables rules" ipFamily="IPv4"`,
	} {
		if c, _, ok := ReadCause(text); ok {
			t.Errorf("%s read as cause %q", text, c.Text)
		}
	}
}

// TestCauseAt checks that the cause of a failed sync is read from the
// entries after it, on the line that shows it, and that every cause is
// tied to a pattern of the catalogue or to none.
func TestCauseAt(t *testing.T) {
	log := strings.Join([]string{
		hdr('E', "proxier.go:1194", `"Failed to execute iptables-restore" err="exit status 1"`),
		"iptables-restore v1.8.7 (legacy): unknown option \"--random-fully\"",
		hdr('I', "proxier.go:810", `"Syncing iptables rules"`),
		hdr('E', "proxier.go:1194", `"Failed to execute iptables-restore" err="exit status 4"`),
	}, "\n") + "\n"
	l, err := Parse("log.txt", []byte(log))
	if err != nil {
		t.Fatal(err)
	}
	c, ok := l.CauseAt(l.Entries[0], 3)
	if !ok || c.Cause.ID != "iptables-option-unknown" || c.Pos.String() != "log.txt:2" {
		t.Errorf("cause after the first entry = %+v, %v; want iptables-option-unknown at log.txt:2", c, ok)
	}
	if c, ok := l.CauseAt(l.Entries[len(l.Entries)-1], 3); ok {
		t.Errorf("cause read after the last entry: %+v", c)
	}
	ids := map[string]bool{}
	for _, p := range Known {
		ids[p.ID] = true
	}
	for _, c := range Causes {
		if c.Pattern != "" && !ids[c.Pattern] {
			t.Errorf("cause %s names pattern %s, which is not in Known", c.ID, c.Pattern)
		}
	}
	for id, want := range map[string]bool{"iptables-extension-missing": true, "nftables-feature-missing": true, "iptables-restore-failed": false, "sync-failed": false} {
		for i := range Known {
			if Known[i].ID == id && Known[i].NamesCause() != want {
				t.Errorf("%s.NamesCause() = %v, want %v", id, !want, want)
			}
		}
	}
}
