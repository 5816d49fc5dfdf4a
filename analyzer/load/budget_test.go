package load

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"runtime"
	"strings"
	"testing"
)

// TestRunLimit checks that the size limit holds for a run, all arguments
// and archive members together, not for each argument.
func TestRunLimit(t *testing.T) {
	lim := Limits{MaxFiles: 10, MaxTotal: 1000, MaxFile: 600}
	dir := t.TempDir()
	a := writeFile(t, dir, "a.tgz", archive(t, entry{name: "node/iptables-save.txt", body: miniDump + strings.Repeat("#\n", 150)}))
	b := writeFile(t, dir, "b.tgz", archive(t, entry{name: "node/iptables-save.txt", body: miniDump + strings.Repeat("#\n", 150)}))
	loose := writeFile(t, dir, "dump.txt", []byte(miniDump+strings.Repeat("#\n", 150)))
	for _, tc := range []struct {
		name    string
		paths   []string
		wantErr string
	}{
		{"one archive", []string{a}, ""},
		{"two archives", []string{a, b}, b + ": archive decompresses to more than 1000 bytes (the limit of a run, all arguments and archive members together)"},
		{"archive and loose file", []string{a, loose}, loose + ": the inputs of this run hold more than 1000 bytes"},
		{"directory and archive", []string{dir + "/dump.txt", a, dir}, "more than 1000 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(tc.paths, Options{Limits: lim})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !IsInputError(err)):
				t.Fatalf("want the input error %q, got %v", tc.wantErr, err)
			}
		})
	}
}

// zeroArchive returns a gzip-compressed tar archive holding a small dump
// and a member of n bytes made by fill, streamed so that the test does
// not hold it either.
func zeroArchive(t *testing.T, format string, n int64, fill byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	big := io.LimitReader(repeatReader(fill), n)
	if format == "zip" {
		zw := zip.NewWriter(&buf)
		w, _ := zw.Create("node/iptables-save.txt")
		_, _ = w.Write([]byte(miniDump))
		w, _ = zw.Create("core.dump")
		if _, err := io.Copy(w, big); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	tw := tar.NewWriter(zw)
	_ = tw.WriteHeader(&tar.Header{Name: "node/iptables-save.txt", Mode: 0o644, Size: int64(len(miniDump)), Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte(miniDump))
	_ = tw.WriteHeader(&tar.Header{Name: "core.dump", Mode: 0o644, Size: n, Typeflag: tar.TypeReg})
	if _, err := io.Copy(tw, big); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// TestUnknownMemberSkipped checks that an archive member of no known kind
// is skipped after its head, never held whole: a small archive holding
// 256 MB (64 MB with -short) of NUL bytes or of text of no kind is read in a few MB, the
// member listed as unknown with its size and why.
func TestUnknownMemberSkipped(t *testing.T) {
	n := int64(256 << 20)
	if testing.Short() {
		n = 64 << 20
	}
	for _, tc := range []struct {
		format string
		fill   byte
		why    string
	}{
		{"tgz", 0, "binary: a NUL byte at offset 0"},
		{"tgz", 'a', "kind not recognised"},
		{"zip", 0, "binary: a NUL byte at offset 0"},
	} {
		t.Run(tc.format+"/"+tc.why, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), "bundle."+tc.format, zeroArchive(t, tc.format, n, tc.fill))
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			snaps, err := Load([]string{p}, Options{})
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			if grown := after.TotalAlloc - before.TotalAlloc; grown > 24<<20 {
				t.Errorf("reading the archive allocated %d MB: the unknown member was held", grown>>20)
			}
			found := false
			for _, in := range snaps[0].Inputs {
				if in.Path == "core.dump" {
					found = true
					if in.Kind != "unknown" || in.Bytes != n || !strings.Contains(in.Note, tc.why) || in.Unread != "" {
						t.Errorf("core.dump: %+v, want unknown, %d bytes, %q, not counted as unread (not a place of the layout)", in, n, tc.why)
					}
				}
			}
			if !found {
				t.Errorf("core.dump is not listed in %+v", snaps[0].Inputs)
			}
		})
	}
}

// zipOf returns a zip archive of the entries (a mode of 0 is a regular
// file).
func zipOf(t *testing.T, entries ...zipEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		mode := e.mode
		if mode == 0 {
			mode = 0o644
		}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type zipEntry struct {
	name, body string
	mode       fs.FileMode
}

// TestHostileZip checks that zip bundles get the protections of tar ones.
func TestHostileZip(t *testing.T) {
	small := Limits{MaxFiles: 3, MaxTotal: 1000, MaxFile: 600}
	// A claimed size past the limit: the central directory's size field
	// of the only entry is rewritten.
	claimed := zipOf(t, zipEntry{name: "node/iptables-save.txt", body: miniDump})
	if i := bytes.LastIndex(claimed, []byte("PK\x01\x02")); i >= 0 {
		copy(claimed[i+24:], []byte{0xff, 0xff, 0xff, 0x7f})
	}
	for _, tc := range []struct {
		name    string
		data    []byte
		limits  Limits
		wantErr string
	}{
		{"traversal", zipOf(t, zipEntry{name: "../../etc/passwd", body: "x"}), DefaultLimits, `refusing archive entry "../../etc/passwd": path escapes the bundle`},
		{"absolute", zipOf(t, zipEntry{name: "/etc/shadow", body: "x"}), DefaultLimits, "absolute path"},
		{"symlink", zipOf(t, zipEntry{name: "node/iptables-save.txt", body: "/etc/shadow", mode: fs.ModeSymlink | 0o777}), DefaultLimits, "links are not allowed"},
		{"device", zipOf(t, zipEntry{name: "node/zero", mode: fs.ModeDevice | fs.ModeCharDevice | 0o644}), DefaultLimits, "is not a regular file"},
		{"too many files", zipOf(t, zipEntry{name: "a", body: "1"}, zipEntry{name: "b", body: "2"}, zipEntry{name: "c", body: "3"}, zipEntry{name: "d", body: "4"}), small, "more than 3 files in archive"},
		{"file too large", zipOf(t, zipEntry{name: "big", body: strings.Repeat("x", 700)}), small, "over the 600-byte limit"},
		{"claimed size", claimed, small, "over the 600-byte limit"},
		{"duplicate", zipOf(t, zipEntry{name: "node/a", body: "1"}, zipEntry{name: "./node/a", body: "2"}), DefaultLimits, "appears twice"},
		{"empty", zipOf(t), DefaultLimits, "archive holds no files"},
		{"truncated", zipOf(t, zipEntry{name: "node/iptables-save.txt", body: miniDump})[:40], DefaultLimits, "not a valid zip archive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), "bundle.zip", tc.data)
			_, err := Load([]string{p}, Options{Limits: tc.limits})
			if err == nil || !IsInputError(err) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("want an input error naming the archive and saying %q, got %v", tc.wantErr, err)
			}
		})
	}
}
