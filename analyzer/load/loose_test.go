package load

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestLooseFilesBesideBundles: loose node-level files (a sysctl listing,
// a dump of the other family) given with one bundle are read with its
// node when it holds nothing of their kinds, and form a node of their own
// (saying why) when it does; cluster-level loose files (an export) apply
// to every node, the loose node included.
func TestLooseFilesBesideBundles(t *testing.T) {
	dir := t.TempDir()
	bundle := func(name string) string {
		p := filepath.Join(dir, name)
		writeFile(t, p, "node/iptables-save.txt", []byte(miniDump))
		return p
	}
	a, b := bundle("a"), bundle("b")
	sysctl := writeFile(t, dir, "sysctl.txt", []byte("net.ipv4.ip_forward = 1\n"))
	v6 := writeFile(t, dir, "ip6tables-save.txt", []byte(strings.Replace(miniDump, "iptables-save", "ip6tables-save", 1)))
	v4 := writeFile(t, dir, "iptables-save.txt", []byte(miniDump))
	export := writeFile(t, dir, "svc.yaml", []byte(miniService))
	type node struct {
		dumps, ports int
		sysctl       bool
		note         string // of the node
		inputNote    string // of a loose file joined to the bundle
	}
	for _, tc := range []struct {
		name  string
		paths []string
		want  []node
	}{
		{"a sysctl listing joins the bundle", []string{a, sysctl}, []node{{dumps: 1, sysctl: true, inputNote: "read with the node of " + a}}},
		{"a dump of the other family joins it", []string{a, v6, export}, []node{{dumps: 2, ports: 1, inputNote: "read with the node of " + a}}},
		{"a dump of the same family is another node", []string{a, v4, sysctl, export}, []node{{dumps: 1, ports: 1}, {dumps: 1, ports: 1, sysctl: true,
			note: "the loose files are read as a node of their own, not with " + a + ": it already holds a file of the kind of " + v4 + " (iptables-save: node/iptables-save.txt)"}}},
		{"two bundles: the export applies to every node", []string{a, b, v4, export}, []node{{dumps: 1, ports: 1}, {dumps: 1, ports: 1}, {dumps: 1, ports: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snaps, err := Load(tc.paths, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(snaps) != len(tc.want) {
				t.Fatalf("%d nodes, want %d", len(snaps), len(tc.want))
			}
			for i, w := range tc.want {
				s := snaps[i]
				if len(s.IPTables) != w.dumps || len(s.Ports) != w.ports || (s.Sysctls != nil) != w.sysctl {
					t.Errorf("node %d: %d dumps, %d ports, sysctl %t; want %d, %d, %t", i, len(s.IPTables), len(s.Ports), s.Sysctls != nil, w.dumps, w.ports, w.sysctl)
				}
				if notes := strings.Join(s.Notes, "\n"); w.note != "" && !strings.Contains(notes, w.note) || w.note == "" && strings.Contains(notes, "node of their own") {
					t.Errorf("node %d: notes %q, want %q", i, s.Notes, w.note)
				}
				joined := ""
				for _, in := range s.Inputs {
					if strings.Contains(in.Note, "read with the node of") {
						joined = in.Note
					}
				}
				if joined != w.inputNote {
					t.Errorf("node %d: note of a joined file %q, want %q", i, joined, w.inputNote)
				}
			}
		})
	}
}

// TestBrokenModuleListing: a module listing whose lines stop making sense
// (cut in a line) is an input error naming the file (and the line, when
// it is read as a listing), never a crash.
func TestBrokenModuleListing(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, text string }{
		{"proc modules cut in a line", "ip_vs 196608 12 ip_vs_sh, Live 0x0000000000000000\nxt_addrtype 12288\n"},
		{"lsmod cut in a line", "[root@node-a ~]# lsmod | grep ip_vs\nip_vs_rr               16384  8\nip_vs                 176128\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, dir, "modules.txt", []byte(tc.text))
			_, err := Load([]string{p}, Options{})
			if err == nil || !IsInputError(err) || !strings.Contains(err.Error(), p) {
				t.Errorf("want an input error naming %s, got %v", p, err)
			}
		})
	}
}
