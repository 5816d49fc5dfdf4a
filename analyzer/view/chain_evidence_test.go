package view_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/analyzer/view"
)

// TestChainEvidenceUndeclared checks the evidence of a view's anchors
// (the chain where an entry is looked for): a chain's declaration when the
// dump has it, and the chain's first rule, with its line, when a grep of
// iptables-save dropped the declaration, never a line the input lacks.
func TestChainEvidenceUndeclared(t *testing.T) {
	rules := "-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m comment --comment \"default/kubernetes:https cluster IP\" -m tcp --dport 443 -j KUBE-SVC-NPX46M4PTMTKRN6Y\n" +
		"-A KUBE-SERVICES -m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS\n" +
		"-A KUBE-SVC-NPX46M4PTMTKRN6Y -m comment --comment \"default/kubernetes:https -> 192.168.0.10:6443\" -j KUBE-SEP-A\n" +
		"-A KUBE-SEP-A -p tcp -m comment --comment \"default/kubernetes:https\" -m tcp -j DNAT --to-destination 192.168.0.10:6443\n"
	for _, tc := range []struct {
		name, text string
		line       int
		want       string
	}{
		{
			name: "declared",
			text: "*nat\n:KUBE-SERVICES - [0:0]\n:KUBE-NODEPORTS - [0:0]\n:KUBE-SVC-NPX46M4PTMTKRN6Y - [0:0]\n:KUBE-SEP-A - [0:0]\n" + rules + "COMMIT\n",
			line: 2, want: ":KUBE-SERVICES - [0:0]",
		},
		{
			name: "grep without declarations",
			text: "[root@node-1 ~]# iptables-save | grep KUBE-S\n" + rules,
			line: 2, want: "-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m comment --comment \"default/kubernetes:https cluster IP\" -m tcp --dport 443 -j KUBE-SVC-NPX46M4PTMTKRN6Y",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "paste.txt"), []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			snaps, err := load.Load([]string{dir}, load.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var found bool
			for _, s := range snaps {
				attr := view.NewAttribution(s.Ports)
				for _, d := range s.IPTables {
					if !resolve.IsIPTablesMode(d) {
						continue
					}
					found = true
					e := view.FromIPTables(d, attr).Anchors[view.ClusterIP]
					if e.Line != tc.line || e.Text != tc.want || filepath.Base(e.File) != "paste.txt" {
						t.Errorf("anchor evidence %s:%d %q, want paste.txt:%d %q", e.File, e.Line, e.Text, tc.line, tc.want)
					}
				}
			}
			if !found {
				t.Fatal("no iptables dump of kube-proxy's rules read")
			}
		})
	}
}
