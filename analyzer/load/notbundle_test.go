package load

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestArchiveNotABundle: an archive that holds nothing of a node (a
// ticket's logs.tgz, a document, an archive of bundle archives) is an
// input error that names it as not a bundle and says what to do; an
// archive or a compressed file inside a bundle is listed as binary,
// saying it is not opened there.
func TestArchiveNotABundle(t *testing.T) {
	inner := string(archive(t, entry{name: "node/iptables-save.txt", body: miniDump}))
	for _, tc := range []struct {
		name, file string
		data       []byte
		err        string // the error's text after the archive's path
		member     string // the note of a member (and its path), when it loads
	}{
		{"logs of no kind", "logs.tgz", archive(t, entry{name: "logs/app.log", body: "GET / 200\n"}),
			" is not a bundle: nothing in it is kube-proxy data: app.log is of no kind proxyscan reads (iptables-save, ipvsadm, ipset, nft, kubectl exports, kube-proxy configuration, logs, metrics, node listings); leave it out of the inputs (move it out of the directory given, or give the bundles by name)", ""},
		{"a document", "report.docx", docZip(t, "word/document.xml", "<w:document/>\n"),
			" is not a bundle: nothing in it is kube-proxy data: document.xml is of no kind proxyscan reads", ""},
		{"an archive of bundle archives", "fleet.tgz", archive(t, entry{name: "n1.tgz", body: inner}, entry{name: "n2.tgz", body: inner}),
			" is not a bundle: it holds archives (n1.tgz, n2.tgz), which proxyscan does not open inside an archive; extract it and give the directory it holds", ""},
		{"bundle archives beside notes", "fleet.tgz", archive(t, entry{name: "n1.tgz", body: inner}, entry{name: "notes.txt", body: "it broke\n"}),
			" is not a bundle: nothing in it is kube-proxy data: n1.tgz, notes.txt are of no kind proxyscan reads (iptables-save, ipvsadm, ipset, nft, kubectl exports, kube-proxy configuration, logs, metrics, node listings); the archives in it (n1.tgz) are not opened: extract them and give them as PATHs of their own", ""},
		{"a compressed file in a bundle", "b.tgz", archive(t, entry{name: "node/iptables-save.txt", body: miniDump}, entry{name: "node/old.txt.gz", body: string(compress(t, formatGzip, []byte(miniDump)))}),
			"", "node/old.txt.gz: unknown kind of file (binary: a gzip-compressed archive or file, not opened inside a bundle (to read it, give it as a PATH of its own, extracted first from the archive that holds it)): not analysed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), tc.file, tc.data)
			snaps, err := Load([]string{p}, Options{})
			if tc.err != "" {
				if err == nil || !IsInputError(err) || !strings.HasPrefix(err.Error(), p+tc.err) {
					t.Fatalf("error %v\nwant an input error starting %q", err, p+tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var notes []string
			for _, in := range snaps[0].Inputs {
				notes = append(notes, in.Path+": "+in.Note)
			}
			if !strings.Contains(strings.Join(notes, "\n"), tc.member) {
				t.Errorf("notes of the inputs:\n%s\nwant %q", strings.Join(notes, "\n"), tc.member)
			}
		})
	}
}

// docZip returns a zip archive of one file (a document).
func docZip(t *testing.T, name, body string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, err := zw.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(body)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestBinaryFileNotRead: a file on disk of no known kind whose head is
// binary (a core dump, a screenshot in a ticket's folder) is listed with
// its size and why, never read whole into memory, and no line of it is
// said to be repaired (its ESC bytes are no colour codes).
func TestBinaryFileNotRead(t *testing.T) {
	n := int64(256 << 20)
	if testing.Short() {
		n = 64 << 20
	}
	dir := t.TempDir()
	writeFile(t, dir, "paste.txt", []byte("[root@node-b ~]# iptables-save\n"+miniDump))
	writeFile(t, dir, "shot.png", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x1b[31m\n\x1b[0m\n"))
	f, err := os.Create(filepath.Join(dir, "core.dump"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(n); err != nil {
		t.Fatal(err)
	}
	f.Close()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	snaps, err := Load([]string{dir}, Options{})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 24<<20 {
		t.Errorf("reading the folder allocated %d MB: the binary file was read", grown>>20)
	}
	found := 0
	for _, in := range snaps[0].Inputs {
		switch in.Path {
		case "core.dump", "shot.png":
			found++
			if in.Kind != "unknown" || !strings.Contains(in.Note, "binary: a NUL byte at offset") || in.Changed != nil || in.Skipped != nil {
				t.Errorf("%s: %+v, want unknown, binary, no line changed or skipped", in.Path, in)
			}
			if in.Path == "core.dump" && in.Bytes != n {
				t.Errorf("core.dump: %d bytes, want %d", in.Bytes, n)
			}
		}
	}
	if found != 2 {
		t.Errorf("%d of the binary files listed, want 2: %+v", found, snaps[0].Inputs)
	}
}
