package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTicketFolders runs analyze on the folders a ticket comes with: the
// report of a folder is the one of giving its files on the command line
// (the paths of the files given aside), and a folder that cannot be
// analysed says which file is wrong and why.
func TestTicketFolders(t *testing.T) {
	nodeA := packDir(t, testdata(t, "fleet", "nodes", "node-a"), "tgz")
	nodeB := packDir(t, testdata(t, "fleet", "nodes", "node-b"), "tgz")
	dumpB, err := os.ReadFile(testdata(t, "fleet", "nodes", "node-b", "node", "iptables-save.txt"))
	if err != nil {
		t.Fatal(err)
	}
	pasted := "[root@node-c ~]# iptables-save\n" + string(dumpB) + "[root@node-c ~]# \n"
	logs := packDir(t, func() string {
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, "app.log"), []byte("GET /healthz 200\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}(), "tgz")
	// A bundle written by collect (read strictly) whose dump is cut short.
	broken := packDir(t, func() string {
		d := t.TempDir()
		if err := writeBundleFile(d, "manifest.json", []byte(`{"schema": 1, "collected_at": "2026-03-02T09:15:00Z", "sources": []}`)); err != nil {
			t.Fatal(err)
		}
		if err := writeBundleFile(d, "node/iptables-save.txt", []byte("*nat\n:PREROUTING ACCEPT [0:0]\n")); err != nil {
			t.Fatal(err)
		}
		return d
	}(), "tgz")
	for _, tc := range []struct {
		name  string
		files map[string]string // name in the folder -> file to copy, or text
		// args, when set, are the files of the folder that, given on the
		// command line, give the same report.
		args   []string
		code   int
		stderr string // the error, the folder's path replaced by DIR
		// bundles are those of the report's nodes, in the folder.
		bundles []string
		stdout  string // in the report, the folder's path replaced by DIR
	}{
		{name: "a bundle archive beside another node's pasted dump",
			files: map[string]string{"node-a.tgz": nodeA, "paste.txt": pasted},
			args:  []string{"node-a.tgz", "paste.txt"}, bundles: []string{"node-a.tgz", ""}},
		{name: "a bundle archive with a README",
			files: map[string]string{"node-a.tgz": nodeA, "README.md": "Ticket 42\r\nsee the attached bundle\r\n"},
			stdout: `"unknownInputs": [
    "README.md"
  ]`},
		{name: "bundle archives beside nodes' directories",
			files: map[string]string{"node-a.tgz": nodeA, "node-b.tgz": nodeB, "n3/paste.txt": pasted, "n4/paste.txt": strings.ReplaceAll(pasted, "node-c", "node-d")},
			args:  []string{"node-a.tgz", "node-b.tgz", "n3", "n4"}, bundles: []string{"n3", "n4", "node-a.tgz", "node-b.tgz"}},
		{name: "a bundle archive, a logs archive and a pasted dump",
			files:   map[string]string{"node-a.tgz": nodeA, "logs.tgz": logs, "paste.txt": pasted},
			bundles: []string{"node-a.tgz", ""},
			stdout: `"path": "logs.tgz/app.log",
      "kind": "unknown",
      "bytes": 17,
      "note": "in DIR/logs.tgz, which is not a bundle: nothing in it is kube-proxy data (leave it out of the inputs); unknown kind of file (kind not recognised): not analysed"`},
		{name: "per-node folders of a bundle and a listing",
			files:   map[string]string{"n1/node-a.tgz": nodeA, "n1/sysctl.txt": "net.ipv4.ip_forward = 1\n", "n2/node-b.tgz": nodeB, "n2/sysctl.txt": "net.ipv4.ip_forward = 1\n"},
			bundles: []string{"n1/node-a.tgz", "n2/node-b.tgz"},
			stdout:  `"note": "read with the node of DIR/n2/node-b.tgz"`},
		{name: "a broken bundle beside a bundle and a pasted dump",
			files:  map[string]string{"node-x.tgz": broken, "node-b.tgz": nodeB, "paste.txt": pasted},
			code:   2,
			stderr: "proxyscan: DIR/node-x.tgz/node/iptables-save.txt:1: table nat has no COMMIT line"},
		{name: "bundles and a logs archive",
			files:  map[string]string{"node-a.tgz": nodeA, "node-b.tgz": nodeB, "logs.tgz": logs},
			code:   2,
			stderr: "proxyscan: DIR/logs.tgz is not a bundle: nothing in it is kube-proxy data: app.log is of no kind proxyscan reads"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, from := range tc.files {
				data := []byte(from)
				if filepath.IsAbs(from) {
					if data, err = os.ReadFile(from); err != nil {
						t.Fatal(err)
					}
				}
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			run := func(args ...string) (int, string, string) {
				f, outputs := testFactory()
				code := Run(f, append([]string{"analyze", "-o", "json"}, args...))
				stdout, stderr := outputs()
				return code, stdout, strings.ReplaceAll(stderr, dir, "DIR")
			}
			code, stdout, stderr := run(dir)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("exit code %d, stderr %q; want %d, %q", code, stderr, tc.code, tc.stderr)
			}
			if !strings.Contains(strings.ReplaceAll(stdout, dir, "DIR"), tc.stdout) {
				t.Errorf("the report lacks %s:\n%s", tc.stdout, stdout)
			}
			if tc.code != 0 {
				return
			}
			var report struct {
				Nodes []struct{ Bundle string } `json:"nodes"`
			}
			if err := json.Unmarshal([]byte(stdout), &report); err != nil {
				t.Fatal(err)
			}
			var bundles []string
			for _, n := range report.Nodes {
				bundles = append(bundles, strings.TrimPrefix(n.Bundle, dir+string(filepath.Separator)))
			}
			if !slices.Equal(bundles, tc.bundles) {
				t.Errorf("nodes of bundles %q, want %q", bundles, tc.bundles)
			}
			if tc.args == nil {
				return
			}
			var paths []string
			for _, a := range tc.args {
				paths = append(paths, filepath.Join(dir, a))
			}
			code, given, _ := run(paths...)
			// The files given are named by their paths as given, those
			// of the folder by their paths in it.
			given = strings.ReplaceAll(given, dir+string(filepath.Separator), "")
			stdout = strings.ReplaceAll(stdout, dir+string(filepath.Separator), "")
			if code != tc.code || stdout != given {
				t.Errorf("the folder's report (exit %d) is not the one of its files given (exit %d): %s", tc.code, code, firstDiff([]byte(stdout), []byte(given)))
			}
		})
	}
}
