package load

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestOnlyNodeMustMatchAddresses: the only Node of an export is taken as
// the node analysed unless ip addr shows that it is another node (none of
// its InternalIP and ExternalIP addresses is on the interfaces).
func TestOnlyNodeMustMatchAddresses(t *testing.T) {
	src := filepath.Join(parsetest.Root(t), "testdata", "bundles", "iptables-healthy")
	node, err := os.ReadFile(filepath.Join(src, "cluster", "node.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		edit     func(string) string
		dropAddr bool
		want     string
		note     string
	}{
		{name: "node of the interfaces", edit: func(s string) string { return s }, want: "east-w2"},
		{name: "another node", edit: func(s string) string {
			s = strings.ReplaceAll(s, "172.20.8.12", "172.20.8.99")
			return strings.ReplaceAll(s, "2001:db8:20::12", "2001:db8:20::99")
		}, note: "the only Node exported, east-w2, has none of the addresses ip addr shows"},
		{name: "another node, no ip addr", edit: func(s string) string { return strings.ReplaceAll(s, "172.20.8.12", "172.20.8.99") }, dropAddr: true, want: "east-w2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			parsetest.CopyTree(t, src, dir, func(rel string, _ []byte) bool {
				return !(tc.dropAddr && rel == "node/ip-addr.txt")
			})
			if err := os.WriteFile(filepath.Join(dir, "cluster", "node.yaml"), []byte(tc.edit(string(node))), 0o644); err != nil {
				t.Fatal(err)
			}
			snaps, err := Load([]string{dir}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			s := snaps[0]
			if s.Node.Name != tc.want {
				t.Errorf("node %q (%s), want %q", s.Node.Name, s.Node.NameSource, tc.want)
			}
			if tc.note != "" && !strings.Contains(strings.Join(s.Notes, "\n"), tc.note) {
				t.Errorf("notes %q, want one saying %q", s.Notes, tc.note)
			}
		})
	}
}
