package load

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestArchiveInPlainDir: a bundle archive in a directory that also holds
// a node's file (a ticket's folder: node-a.tgz beside a pasted dump of
// another node) is read as the bundle it is, a node of its own, as when
// the archive and the file are given on the command line; the files
// beside it are not merged into its node. An archive that is a file of a
// bundle directory is still one of its files.
func TestArchiveInPlainDir(t *testing.T) {
	pasted := "[root@node-b ~]# iptables-save\n" + miniDump + "[root@node-b ~]# \n"
	const sysctl = "net.ipv4.ip_forward = 1\n"
	const report = `{"kind": "proxyscan-node-report", "node": "n1"}` + "\n"
	bundle := func(top string) []byte {
		return archive(t,
			entry{name: top + "node/iptables-save.txt", body: miniDump},
			entry{name: top + "cluster/services.yaml", body: miniService},
		)
	}
	for _, tc := range []struct {
		name  string
		files map[string][]byte
		// want lists each node's inputs, "BUNDLE:PATH=KIND", the bundle
		// relative to the directory.
		want []string
		// args, when set, are the paths (relative to the directory) that
		// give the same nodes on the command line.
		args []string
		// note, when set, is the note of an input.
		note string
	}{
		{"a bundle archive beside a pasted dump",
			map[string][]byte{"node-a.tgz": bundle(""), "paste.txt": []byte(pasted)},
			[]string{"node-a.tgz:cluster/services.yaml=kube-objects node-a.tgz:node/iptables-save.txt=iptables-save", ":paste.txt=iptables-save"},
			[]string{"node-a.tgz", "paste.txt"}, ""},
		{"an archive of collect's layout, with a README",
			map[string][]byte{"node-a.tgz": bundle("proxyscan-node-a-20260301T120000Z/"), "paste.txt": []byte(pasted), "README.md": []byte("ticket 123\n")},
			[]string{":README.md=unknown node-a.tgz:cluster/services.yaml=kube-objects node-a.tgz:node/iptables-save.txt=iptables-save", ":paste.txt=iptables-save"},
			[]string{"node-a.tgz", "README.md", "paste.txt"}, ""},
		{"per-node subfolders",
			map[string][]byte{"n1/node-a.tgz": bundle(""), "n2/paste.txt": []byte(pasted)},
			[]string{"n1/node-a.tgz:cluster/services.yaml=kube-objects n1/node-a.tgz:node/iptables-save.txt=iptables-save", ":n2/paste.txt=iptables-save"},
			nil, ""},
		{"two archives and a paste",
			map[string][]byte{"a.tgz": bundle(""), "b.tgz": bundle(""), "paste.txt": []byte(pasted)},
			[]string{"a.tgz:cluster/services.yaml=kube-objects a.tgz:node/iptables-save.txt=iptables-save",
				"b.tgz:cluster/services.yaml=kube-objects b.tgz:node/iptables-save.txt=iptables-save", ":paste.txt=iptables-save"},
			[]string{"a.tgz", "b.tgz", "paste.txt"}, ""},
		{"a logs archive beside a bundle archive and a paste",
			map[string][]byte{"node-a.tgz": bundle(""), "logs.tgz": archive(t, entry{name: "logs/app.log", body: "GET / 200\n"}), "paste.txt": []byte(pasted)},
			[]string{"node-a.tgz:cluster/services.yaml=kube-objects :logs.tgz/app.log=unknown node-a.tgz:node/iptables-save.txt=iptables-save", ":paste.txt=iptables-save"},
			nil,
			"in DIR/logs.tgz, which is not a bundle: nothing in it is kube-proxy data (leave it out of the inputs); unknown kind of file (kind not recognised): not analysed"},
		{"a document beside a pasted dump",
			map[string][]byte{"report.docx": docZip(t, "word/document.xml", "<w:document/>\n"), "paste.txt": []byte(pasted)},
			[]string{":paste.txt=iptables-save :report.docx/document.xml=unknown"},
			[]string{"report.docx", "paste.txt"}, "in DIR/report.docx, which is not a bundle: nothing in it is kube-proxy data (leave it out of the inputs); unknown kind of file (kind not recognised): not analysed"},
		{"an archive of bundles with files beside them",
			map[string][]byte{"fleet.tgz": archive(t,
				entry{name: "node-a/node/iptables-save.txt", body: miniDump},
				entry{name: "node-b/node/iptables-save.txt", body: miniDump},
				entry{name: "__MACOSX/node-a/._iptables-save.txt", body: "\x00\x05\x16\x07Mac OS X"})},
			[]string{":fleet.tgz/__MACOSX/node-a/._iptables-save.txt=unknown fleet.tgz/node-a:node/iptables-save.txt=iptables-save", "fleet.tgz/node-b:node/iptables-save.txt=iptables-save"},
			[]string{"fleet.tgz"}, "in DIR/fleet.tgz, outside the bundles it holds; unknown kind of file (binary: a NUL byte at offset 0): not analysed"},
		{"per-node subfolders of a bundle and a listing",
			map[string][]byte{"n1/a.tgz": bundle(""), "n1/sysctl.txt": []byte(sysctl), "n2/b.tgz": bundle(""), "n2/sysctl.txt": []byte(sysctl)},
			[]string{"n1/a.tgz:cluster/services.yaml=kube-objects :n1/sysctl.txt=sysctl n1/a.tgz:node/iptables-save.txt=iptables-save",
				"n2/b.tgz:cluster/services.yaml=kube-objects :n2/sysctl.txt=sysctl n2/b.tgz:node/iptables-save.txt=iptables-save"},
			nil, "read with the node of DIR/n2/b.tgz"},
		{"one per-node subfolder with a listing",
			map[string][]byte{"n1/a.tgz": bundle(""), "n1/sysctl.txt": []byte(sysctl), "n2/b.tgz": bundle("")},
			[]string{"n1/a.tgz:cluster/services.yaml=kube-objects :n1/sysctl.txt=sysctl n1/a.tgz:node/iptables-save.txt=iptables-save",
				"n2/b.tgz:cluster/services.yaml=kube-objects n2/b.tgz:node/iptables-save.txt=iptables-save"},
			nil, "read with the node of DIR/n1/a.tgz"},
		{"per-node subfolders of a bundle and a dump of its kind",
			map[string][]byte{"n1/a.tgz": bundle(""), "n1/dump.txt": []byte(pasted), "n2/b.tgz": bundle(""), "n2/dump.txt": []byte(pasted)},
			[]string{"n1:dump.txt=iptables-save", "n1/a.tgz:cluster/services.yaml=kube-objects n1/a.tgz:node/iptables-save.txt=iptables-save",
				"n2:dump.txt=iptables-save", "n2/b.tgz:cluster/services.yaml=kube-objects n2/b.tgz:node/iptables-save.txt=iptables-save"},
			nil, ""},
		{"a bzip2 archive beside a pasted dump",
			map[string][]byte{"sos.tar.bz2": fixture(t, formatBzip2, "bundle.tar", bundleTar(t)), "paste.txt": []byte(pasted)},
			[]string{"sos.tar.bz2:cluster/services.yaml=kube-objects sos.tar.bz2:kube-proxy/kube-proxy.log=kube-proxy-log sos.tar.bz2:node/iptables-save.txt=iptables-save", ":paste.txt=iptables-save"},
			[]string{"sos.tar.bz2", "paste.txt"}, ""},
		{"a zstd archive beside a pasted dump",
			map[string][]byte{"sos.tar.zst": fixture(t, formatZstd, "bundle.tar", bundleTar(t)), "paste.txt": []byte(pasted)},
			[]string{"sos.tar.zst:cluster/services.yaml=kube-objects sos.tar.zst:kube-proxy/kube-proxy.log=kube-proxy-log sos.tar.zst:node/iptables-save.txt=iptables-save", ":paste.txt=iptables-save"},
			[]string{"sos.tar.zst", "paste.txt"}, ""},
		{"node reports beside a pasted dump",
			map[string][]byte{"n1/node-report.json": []byte(report), "n2/node-report.json": []byte(report), "paste.txt": []byte(pasted)},
			[]string{":n1/node-report.json=unknown :n2/node-report.json=unknown :paste.txt=iptables-save"},
			nil, "unknown kind of file (a node report (collect --analyze), which is merged with bundles and other node reports, not read with a node's loose files: give it in a run without them): not analysed"},
		{"a node report in a bundle directory is its analysis",
			map[string][]byte{"b/node/iptables-save.txt": []byte(miniDump), "b/node-report.json": []byte(report), "paste.txt": []byte(pasted)},
			[]string{"b:node/iptables-save.txt=iptables-save", ":paste.txt=iptables-save"},
			nil, ""},
		{"an archive in a bundle directory is its file",
			map[string][]byte{"b/node/iptables-save.txt": []byte(miniDump), "b/logs.tgz": bundle(""), "paste.txt": []byte(pasted)},
			[]string{"b:logs.tgz=unknown b:node/iptables-save.txt=iptables-save", ":paste.txt=iptables-save"},
			nil, "unknown kind of file (binary: a gzip-compressed archive or file, not opened inside a bundle (to read it, give it as a PATH of its own, extracted first from the archive that holds it)): not analysed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, data := range tc.files {
				writeFile(t, dir, name, data)
			}
			// nodes returns the nodes of the paths, the folder given as
			// base.
			nodes := func(base string, paths []string) []string {
				t.Helper()
				snaps, err := Load(paths, Options{})
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				noted := tc.note == "" || base == "." // the notes name paths from .
				for _, s := range snaps {
					var in []string
					for _, i := range s.Inputs {
						noted = noted || strings.ReplaceAll(i.Note, filepath.Clean(base), "DIR") == tc.note
						b, _ := filepath.Rel(filepath.Clean(base), i.Bundle)
						if i.Bundle == "" {
							b = ""
						}
						p := i.Path
						if r, err := filepath.Rel(dir, p); err == nil && filepath.IsAbs(p) {
							p = r
						}
						in = append(in, filepath.ToSlash(b)+":"+p+"="+string(i.Kind))
					}
					out = append(out, strings.Join(in, " "))
				}
				if !noted {
					t.Errorf("no input has the note %q", tc.note)
				}
				return out
			}
			got := nodes(dir, []string{dir})
			// The folder given as ./folder/ from its parent, and as .
			// from itself.
			t.Chdir(filepath.Dir(dir))
			slashed := nodes(filepath.Base(dir), []string{"./" + filepath.Base(dir) + "/"})
			if !reflect.DeepEqual(slashed, got) {
				t.Errorf("nodes of ./%s/:\n%q\nwant those of %s:\n%q", filepath.Base(dir), slashed, dir, got)
			}
			t.Chdir(dir)
			if here := nodes(".", []string{"."}); !reflect.DeepEqual(here, got) {
				t.Errorf("nodes of . in %s:\n%q\nwant those of %s:\n%q", dir, here, dir, got)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("nodes of the directory:\n%q\nwant\n%q", got, tc.want)
			}
			if tc.args != nil {
				var paths []string
				for _, a := range tc.args {
					paths = append(paths, filepath.Join(dir, a))
				}
				if given := nodes(dir, paths); !reflect.DeepEqual(given, got) {
					t.Errorf("nodes of the directory:\n%q\nwant those of its files given:\n%q", got, given)
				}
			}
		})
	}
}
