package load

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestPlainDirs: plain directories that each hold a capture of what the
// others hold (a ticket's pastes of several nodes, one directory each) are
// nodes of their own, named by their directory, with the loose export
// applying to each; directories that hold one node's files sorted by kind
// or family, a table each, or a bundle among them, are read as before.
func TestPlainDirs(t *testing.T) {
	root := filepath.Join(parsetest.Root(t), "testdata", "bundles", "iptables-healthy")
	read := func(rel string) []byte {
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	v4, v6 := read("node/iptables-save.txt"), read("node/ip6tables-save.txt")
	export := read("cluster/cluster.yaml")
	// A pasted grep of one node's nat rules, under its shell prompt.
	var grep strings.Builder
	grep.WriteString("[root@worker-1 ~]# iptables-save | grep KUBE-SVC\n")
	for _, l := range strings.Split(string(v4), "\n") {
		if strings.Contains(l, "KUBE-SVC") && strings.HasPrefix(l, "-A ") {
			grep.WriteString(l + "\n")
		}
	}
	table := func(name string) []byte { // one table of the IPv4 dump
		var b strings.Builder
		in := false
		for _, l := range strings.SplitAfter(string(v4), "\n") {
			if strings.HasPrefix(l, "*") {
				in = strings.TrimSpace(l) == "*"+name
			}
			if in {
				b.WriteString(l)
			}
			if in && strings.HasPrefix(l, "COMMIT") {
				in = false
			}
		}
		return []byte(b.String())
	}
	gz := func(data []byte) string {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	const log = "I0302 08:15:00.000000       1 server.go:100] \"Using iptables Proxier\"\n"

	type files map[string]string // path under the case's directory -> content
	for _, tc := range []struct {
		name  string
		files files
		args  []string // under the case's directory; "" the directory itself
		nodes []string // bundles of the snapshots, under the case's directory; "" none
		names []string // each node's iptables inputs
		note  string   // in every node's notes (but those of bundles)
		// bundles are the nodes that are bundles, whose notes do not
		// say they are plain directories.
		bundles []string
	}{
		{name: "two nodes' dumps", files: files{"a/dump.txt": string(v4), "b/dump.txt": string(v4), "cluster.yaml": string(export)},
			args: []string{"a", "b", "cluster.yaml"}, nodes: []string{"a", "b"}, names: []string{"dump.txt"},
			note: "2 plain directories (DIR/a, DIR/b) each hold a capture of what the others hold (the same command's output from several nodes): each is read as a node of its own"},
		{name: "nodes as subdirectories of one argument", files: files{"case/n1/paste.txt": grep.String(), "case/n2/paste.txt": grep.String(), "case/n3/paste.txt": grep.String(), "case/cluster.yaml": string(export)},
			args: []string{"case"}, nodes: []string{"case/n1", "case/n2", "case/n3"}, names: []string{"paste.txt"},
			note: "3 plain directories (DIR/case/n1, DIR/case/n2, DIR/case/n3) each hold a capture of what the others hold"},
		{name: "one node's files sorted by kind", files: files{"dumps/iptables-save.txt": string(v4), "logs/kube-proxy.log": log},
			args: []string{"dumps", "logs"}, nodes: []string{""}, names: []string{"iptables-save.txt"}},
		{name: "one node's families", files: files{"v4/iptables-save.txt": string(v4), "v6/ip6tables-save.txt": string(v6)},
			args: []string{"v4", "v6"}, nodes: []string{""}, names: []string{"iptables-save.txt", "ip6tables-save.txt"}},
		{name: "one node's families, compressed", files: files{"v4/iptables-save.txt.gz": gz(v4), "v6/ip6tables-save.txt.gz": gz(v6)},
			args: []string{"v4", "v6"}, nodes: []string{""}, names: []string{"iptables-save.txt.gz", "ip6tables-save.txt.gz"}},
		{name: "one node's tables", files: files{"nat/save.txt": string(table("nat")), "filter/save.txt": string(table("filter"))},
			args: []string{"nat", "filter"}, nodes: []string{""}, names: []string{"save.txt + save.txt"}},
		{name: "a bundle among them", files: files{"b1/node/iptables-save.txt": string(v4), "p/dump.txt": string(v4), "q/dump.txt": string(v4)},
			args: []string{"b1", "p", "q"}, nodes: []string{"b1", "p", "q"}, names: []string{"node/iptables-save.txt"},
			note: "2 plain directories (DIR/p, DIR/q) each hold a capture of what the others hold", bundles: []string{"b1"}},
		{name: "a ticket's folder of a bundle archive and nodes' directories", files: files{"case/b1.tgz": string(archive(t, entry{name: "node/iptables-save.txt", body: string(v4)})),
			"case/n1/paste.txt": grep.String(), "case/n2/paste.txt": grep.String(), "case/README.md": "ticket 123\r\n", "case/cluster.yaml": string(export)},
			args: []string{"case"}, nodes: []string{"case/b1.tgz", "case/n1", "case/n2"}, names: []string{"node/iptables-save.txt"},
			note: "2 plain directories (DIR/case/n1, DIR/case/n2) each hold a capture of what the others hold", bundles: []string{"case/b1.tgz"}},
		{name: "a bundle and one node's families", files: files{"b1/node/iptables-save.txt": string(v4), "v4/iptables-save.txt": string(v4), "v6/ip6tables-save.txt": string(v6)},
			args: []string{"b1", "v4", "v6"}, nodes: []string{"b1", ""}, names: []string{"node/iptables-save.txt"}},
		{name: "loose dumps given as files", files: files{"a.txt": string(v4), "b.txt": string(v4)},
			args: []string{"a.txt", "b.txt"}, nodes: []string{""}, names: []string{"DIR/a.txt", "DIR/b.txt"},
			note: "2 iptables dumps of IPv4 that hold the same tables (DIR/a.txt, DIR/b.txt) are read as captures of one node; if they are of several nodes, give each node's files in a directory of its own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for p, data := range tc.files {
				full := filepath.Join(dir, p)
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var args []string
			for _, a := range tc.args {
				args = append(args, filepath.Join(dir, a))
			}
			snaps, err := Load(args, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var nodes []string
			for _, s := range snaps {
				bundle := ""
				for _, in := range s.Inputs {
					if in.Bundle != "" {
						bundle = strings.TrimPrefix(in.Bundle, dir+"/")
					}
				}
				nodes = append(nodes, bundle)
			}
			if !slices.Equal(nodes, tc.nodes) {
				t.Fatalf("nodes %q, want %q", nodes, tc.nodes)
			}
			for i, s := range snaps {
				_, export := tc.files["cluster.yaml"]
				_, export2 := tc.files["case/cluster.yaml"]
				if (export || export2) && len(s.Objects.Services) == 0 {
					t.Errorf("%s: no Services: the loose export does not apply to it", s.Inputs[0].Bundle)
				}
				var names []string
				for _, d := range s.IPTables {
					names = append(names, strings.ReplaceAll(d.Name, dir, "DIR"))
				}
				if s == snaps[0] && !slices.Equal(names, tc.names) {
					t.Errorf("iptables inputs %q, want %q", names, tc.names)
				}
				notes := strings.ReplaceAll(strings.Join(s.Notes, "\n"), dir, "DIR")
				bundle := slices.Contains(tc.bundles, nodes[i])
				if tc.note != "" && !bundle && !strings.Contains(notes, tc.note) {
					t.Errorf("notes lack %q:\n%s", tc.note, notes)
				}
				if (tc.note == "" || bundle) && strings.Contains(notes, "read as a node of its own") {
					t.Errorf("notes say the directories are nodes:\n%s", notes)
				}
			}
		})
	}
}

// TestPromptNode: the host the shell prompt above a pasted dump names is
// the node's name when the exports know it (a Node of that name, or of
// that name with a domain; with no Node exported, a node the exports place
// endpoints on), or when nothing else names the node (no Node exported,
// no endpoint there, or no export at all); not when the command ran
// elsewhere, the prompts disagree or no exported Node is that host. A
// host that is not the node the rules show (their Local-policy chains
// forward to endpoints of another node) is not believed: a note says so
// and the rules' node is taken.
func TestPromptNode(t *testing.T) {
	root := filepath.Join(parsetest.Root(t), "testdata", "bundles", "iptables-healthy")
	dump, err := os.ReadFile(filepath.Join(root, "node", "iptables-save.txt"))
	if err != nil {
		t.Fatal(err)
	}
	export := filepath.Join(root, "cluster", "cluster.yaml") // endpoints on east-w1, east-w2, east-w3; no Node
	nodes := func(names ...string) string {
		var b strings.Builder
		b.WriteString("apiVersion: v1\nkind: List\nitems:\n")
		for _, n := range names {
			b.WriteString("- apiVersion: v1\n  kind: Node\n  metadata: {name: " + n + "}\n")
		}
		return b.String()
	}
	// bare is a dump without Local-policy chains: it shows no node.
	bare := []byte("*nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\nCOMMIT\n")
	for _, tc := range []struct {
		name    string
		prompts []string // one pasted file per prompt
		nodes   string   // a Nodes export, or none
		// bare pastes the dump without Local-policy chains (else one
		// whose Local-policy chains forward to endpoints on east-w2);
		// noExport gives no export.
		bare, noExport bool
		// addrs, when set, is the ip addr listing of the node.
		addrs  string
		want   string
		source string
		note   string
	}{
		{name: "endpoints place the host", prompts: []string{"[root@east-w2 ~]# iptables-save"},
			want: "east-w2", source: "the host named by the shell prompt of paste-0.txt (line 1), where the exports place endpoints"},
		{name: "a Node of that name", prompts: []string{"root@East-W3:~# iptables-save"}, nodes: nodes("east-w1", "east-w3"), bare: true,
			want: "east-w3", source: "the Node named by the shell prompt of paste-0.txt (line 1)"},
		{name: "a Node with a domain", prompts: []string{"[ec2-user@ip-10-0-1-7 ~]$ sudo iptables-save"}, nodes: nodes("ip-10-0-1-7.ec2.internal", "ip-10-0-1-8.ec2.internal"), bare: true,
			want: "ip-10-0-1-7.ec2.internal", source: "the Node named by the shell prompt of paste-0.txt (line 1)"},
		{name: "two files, one host", prompts: []string{"[root@east-w1 ~]# iptables-save -t nat", "[root@east-w1 ~]# ipvsadm -Ln"}, bare: true,
			want: "east-w1", source: "the host named by the shell prompt of paste-0.txt (line 1), where the exports place endpoints"},
		{name: "a journal's host", prompts: []string{"journal:east-w3"},
			want: "east-w3", source: "the host named by the journal's lines of paste-0.txt (line 1), where the exports place endpoints"},
		{name: "run through kubectl exec", prompts: []string{"east-w1 $ kubectl -n kube-system exec kube-proxy-x -- iptables-save"}},
		{name: "hosts disagree", prompts: []string{"[root@east-w1 ~]# iptables-save -t nat", "[root@east-w2 ~]# ipvsadm -Ln"}},
		{name: "no endpoint there", prompts: []string{"[root@bastion ~]# iptables-save"}, bare: true,
			want: "bastion", source: "the host named by the shell prompt of paste-0.txt (line 1)",
			note: "node bastion (the host named by the shell prompt of paste-0.txt (line 1)) is neither a Node of the exports nor the node of any endpoint"},
		{name: "no export", prompts: []string{"[root@bastion ~]# iptables-save"}, bare: true, noExport: true,
			want: "bastion", source: "the host named by the shell prompt of paste-0.txt (line 1)"},
		{name: "the rules show another node", prompts: []string{"[root@east-w1 ~]# iptables-save"},
			want: "east-w2", source: "the endpoints of its rules' Local-policy chains are on node east-w2 (by the exports)",
			note: "the shell prompt of paste-0.txt (line 1) names host east-w1, but the endpoints of its rules' Local-policy chains are on node east-w2 (by the exports): the node is taken to be east-w2, not east-w1"},
		{name: "the rules show another node than a Node of that name", prompts: []string{"[root@east-w3 ~]# iptables-save"}, nodes: nodes("east-w2", "east-w3"),
			want: "east-w2", source: "the endpoints of its rules' Local-policy chains are on node east-w2 (by the exports)",
			note: "names host east-w3, but the endpoints of its rules' Local-policy chains are on node east-w2"},
		{name: "the interfaces show another Node", prompts: []string{"[root@east-w3 ~]# iptables-save"}, bare: true,
			nodes: "apiVersion: v1\nkind: List\nitems:\n" +
				"- apiVersion: v1\n  kind: Node\n  metadata: {name: east-w1}\n  status: {addresses: [{type: InternalIP, address: 192.168.10.11}]}\n" +
				"- apiVersion: v1\n  kind: Node\n  metadata: {name: east-w3}\n  status: {addresses: [{type: InternalIP, address: 192.168.10.13}]}\n",
			addrs: "2: eth0: <BROADCAST,UP,LOWER_UP> mtu 1500 qdisc pfifo_fast state UP group default qlen 1000\n    link/ether 02:42:0a:00:00:01 brd ff:ff:ff:ff:ff:ff\n    inet 192.168.10.11/24 scope global eth0\n       valid_lft forever preferred_lft forever\n",
			want:  "east-w1", source: "its interfaces hold 192.168.10.11, the address of Node east-w1",
			note: "names host east-w3, but its interfaces hold 192.168.10.11, the address of Node east-w1: the node is taken to be east-w1, not east-w3"},
		{name: "the only Node is another", prompts: []string{"[root@east-w2 ~]# iptables-save"}, nodes: nodes("east-w1"),
			note: "the shell prompt of paste-0.txt (line 1) names host east-w2, which no exported Node is (or several are): not taken as this node's name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{export}
			if tc.noExport {
				args = nil
			}
			for i, p := range tc.prompts {
				name := filepath.Join(dir, fmt.Sprintf("paste-%d.txt", i))
				body := append([]byte(p+"\n"), dump...)
				if tc.bare {
					body = append([]byte(p+"\n"), bare...)
				}
				if host, ok := strings.CutPrefix(p, "journal:"); ok {
					body = []byte("Dec 03 10:01:12 " + host + " kube-proxy[1234]: I1203 10:01:12.123456    1234 server.go:100] \"Using iptables Proxier\"\n")
				}
				if strings.Contains(p, "ipvsadm") {
					body = []byte(p + "\nIP Virtual Server version 1.2.1 (size=4096)\nProt LocalAddress:Port Scheduler Flags\n  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\nTCP  10.96.0.1:443 rr\n  -> 192.168.1.10:6443            Masq    1      0          0\n")
				}
				if err := os.WriteFile(name, body, 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, name)
			}
			if tc.addrs != "" {
				name := filepath.Join(dir, "ip-addr.txt")
				if err := os.WriteFile(name, []byte(tc.addrs), 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, name)
			}
			if tc.nodes != "" {
				name := filepath.Join(dir, "nodes.yaml")
				if err := os.WriteFile(name, []byte(tc.nodes), 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, name)
			}
			snaps, err := Load(args, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(snaps) != 1 {
				t.Fatalf("%d snapshots", len(snaps))
			}
			s := snaps[0]
			source := strings.ReplaceAll(s.Node.NameSource, dir+"/", "")
			if s.Node.Name != tc.want || tc.want != "" && source != tc.source {
				t.Errorf("node %q (%s), want %q (%s)", s.Node.Name, source, tc.want, tc.source)
			}
			notes := strings.ReplaceAll(strings.Join(s.Notes, "\n"), dir+"/", "")
			if tc.note != "" && !strings.Contains(notes, tc.note) {
				t.Errorf("notes lack %q:\n%s", tc.note, notes)
			}
		})
	}
}

// TestGivenNodeUnmatched: a node name given by --node or hostnameOverride
// that the exports know of nowhere (no Node, no endpoint's node) though
// they name nodes is said in a note, and the node is marked Unmatched, so
// that the checks do not take its endpoints for remote ones; a name they
// know, or exports that name no node, are taken as they are.
func TestGivenNodeUnmatched(t *testing.T) {
	root := filepath.Join(parsetest.Root(t), "testdata", "bundles", "iptables-healthy")
	dump := filepath.Join(root, "node", "iptables-save.txt")
	export := filepath.Join(root, "cluster", "cluster.yaml") // endpoints on east-w1, east-w2, east-w3; no Node
	for _, tc := range []struct {
		name      string
		node      string // --node
		override  string // hostnameOverride of a configuration
		nodes     string // a Node named so
		services  bool   // the export's Services only (no node named)
		unmatched bool
		note      string
	}{
		{name: "an endpoint's node", node: "east-w2"},
		{name: "a typo", node: "node-a", unmatched: true,
			note: "node node-a (--node flag) is neither a Node of the exports nor the node of any endpoint (Nodes and endpoints of the exports are on east-w1, east-w2, east-w3)"},
		{name: "a domain too many", node: "east-w2.example.com", unmatched: true,
			note: "(the exports know east-w2, which differs in case or domain only)"},
		{name: "a Node of that name", node: "edge-1", nodes: "edge-1"},
		{name: "hostnameOverride", override: "node-b", unmatched: true,
			note: "node node-b (hostnameOverride of config.yaml) is neither a Node of the exports"},
		{name: "no node named", node: "node-a", services: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{dump, export}
			if tc.services {
				args = []string{dump, writeServicesOnly(t, dir)}
			}
			if tc.nodes != "" {
				name := filepath.Join(dir, "nodes.yaml")
				if err := os.WriteFile(name, []byte("apiVersion: v1\nkind: Node\nmetadata: {name: "+tc.nodes+"}\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, name)
			}
			if tc.override != "" {
				name := filepath.Join(dir, "config.yaml")
				cfg := "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: iptables\nhostnameOverride: " + tc.override + "\n"
				if err := os.WriteFile(name, []byte(cfg), 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, name)
			}
			snaps, err := Load(args, Options{Node: tc.node})
			if err != nil {
				t.Fatal(err)
			}
			s := snaps[0]
			if s.Node.Unmatched != tc.unmatched || s.Node.Known() == tc.unmatched {
				t.Errorf("node %q unmatched %v known %v, want unmatched %v", s.Node.Name, s.Node.Unmatched, s.Node.Known(), tc.unmatched)
			}
			notes := strings.ReplaceAll(strings.Join(s.Notes, "\n"), dir+"/", "")
			switch {
			case tc.note != "" && !strings.Contains(notes, tc.note):
				t.Errorf("notes lack %q:\n%s", tc.note, notes)
			case tc.note == "" && strings.Contains(notes, "is neither a Node"):
				t.Errorf("unexpected note:\n%s", notes)
			}
		})
	}
}

// writeServicesOnly writes an export of one Service, without
// EndpointSlices, into dir and returns the file's path.
func writeServicesOnly(t *testing.T, dir string) string {
	t.Helper()
	name := filepath.Join(dir, "services.yaml")
	svc := "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\n" +
		"spec: {type: ClusterIP, clusterIP: 10.96.10.10, clusterIPs: [10.96.10.10], ports: [{name: http, port: 80, protocol: TCP}]}\n"
	if err := os.WriteFile(name, []byte(svc), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}
