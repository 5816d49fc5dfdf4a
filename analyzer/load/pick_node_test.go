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

// TestNodeOfMany: among the Nodes of a whole cluster's export, the node
// analysed is the only one with an address of its interfaces, and none
// when two have one; the host of the bundle's manifest names it first.
func TestNodeOfMany(t *testing.T) {
	src := filepath.Join(parsetest.Root(t), "testdata", "bundles", "iptables-healthy")
	node, err := os.ReadFile(filepath.Join(src, "cluster", "node.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	other := func(addr6 string) string {
		s := strings.ReplaceAll(string(node), "east-w2", "east-w9")
		s = strings.ReplaceAll(s, "10.88.2.0/24", "10.88.9.0/24")
		s = strings.ReplaceAll(s, "172.20.8.12", "172.20.8.99")
		return strings.ReplaceAll(s, "2001:db8:20::12", addr6)
	}
	for _, tc := range []struct {
		name, nodes, want, note string
	}{
		{name: "one Node with an address of the interfaces", nodes: other("2001:db8:20::99") + "\n---\n" + string(node), want: "east-w2"},
		{name: "two Nodes with one", nodes: string(node) + "\n---\n" + other("2001:db8:20::12"), note: "2 Nodes exported and none chosen"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			parsetest.CopyTree(t, src, dir, func(rel string, _ []byte) bool { return rel != "cluster/node.yaml" })
			if err := os.WriteFile(filepath.Join(dir, "cluster", "nodes.yaml"), []byte(tc.nodes), 0o644); err != nil {
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
