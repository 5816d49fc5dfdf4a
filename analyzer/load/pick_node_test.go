package load

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/kube"
	"github.com/proxyscan/proxyscan/parsers/manifest"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestPickNode: the only Node of an export is taken as the node analysed
// unless ip addr shows that it is another node (none of its InternalIP
// and ExternalIP addresses is on the interfaces); among the Nodes of a
// whole cluster's export, the node is the only one with an address of its
// interfaces, and none when two have one; the host of the bundle's
// manifest names it first.
func TestPickNode(t *testing.T) {
	src := filepath.Join(parsetest.Root(t), "testdata", "bundles", "iptables-healthy")
	data, err := os.ReadFile(filepath.Join(src, "cluster", "node.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	node := string(data)
	// other is another node's Node, whose IPv6 address is addr6.
	other := func(addr6 string) string {
		s := strings.ReplaceAll(node, "east-w2", "east-w9")
		s = strings.ReplaceAll(s, "10.88.2.0/24", "10.88.9.0/24")
		s = strings.ReplaceAll(s, "172.20.8.12", "172.20.8.99")
		return strings.ReplaceAll(s, "2001:db8:20::12", addr6)
	}
	for _, tc := range []struct {
		name     string
		nodes    string // the export of cluster/node.yaml
		dropAddr bool
		want     string
		note     string
	}{
		{name: "node of the interfaces", nodes: node, want: "east-w2"},
		{name: "another node", nodes: strings.ReplaceAll(other("2001:db8:20::99"), "east-w9", "east-w2"),
			note: "the only Node exported, east-w2, has none of the addresses ip addr shows"},
		{name: "another node, no ip addr", nodes: strings.ReplaceAll(node, "172.20.8.12", "172.20.8.99"), dropAddr: true, want: "east-w2"},
		{name: "one of several Nodes with an address of the interfaces", nodes: other("2001:db8:20::99") + "\n---\n" + node, want: "east-w2"},
		{name: "two of several Nodes with one", nodes: node + "\n---\n" + other("2001:db8:20::12"), note: "2 Nodes exported and none chosen"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			parsetest.CopyTree(t, src, dir, func(rel string, _ []byte) bool {
				return !(tc.dropAddr && rel == "node/ip-addr.txt")
			})
			if err := os.WriteFile(filepath.Join(dir, "cluster", "node.yaml"), []byte(tc.nodes), 0o644); err != nil {
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
	t.Run("host of the manifest", func(t *testing.T) {
		mk := func(name string) *kube.Node {
			return &kube.Node{Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}}
		}
		s := &model.Snapshot{Manifest: &manifest.Manifest{Host: "East-W9"}, Objects: &kube.Objects{Nodes: []*kube.Node{mk("east-w2"), mk("east-w9")}}}
		if n, why := nodeOfMany(s); n == nil || n.Name != "east-w9" || !strings.Contains(why, "manifest.json") {
			t.Errorf("node %v (%s), want east-w9 by the manifest's host", n, why)
		}
	})
}
