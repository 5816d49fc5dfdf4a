package load

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"

	"github.com/proxyscan/proxyscan/parsers/kube"
)

// compress returns data compressed with gzip, xz or zstd (bzip2 has no
// writer: see fixture).
func compress(t *testing.T, format string, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	switch format {
	case formatGzip:
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	case formatXZ:
		xw, err := xz.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := xw.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := xw.Close(); err != nil {
			t.Fatal(err)
		}
	case formatZstd:
		zw, err := zstd.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := zw.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("no compressor for %s", format)
	}
	return buf.Bytes()
}

// utf16LE returns s in UTF-16LE with its byte order mark, as PowerShell's
// redirection writes it.
func utf16LE(s string) []byte {
	out := []byte{0xff, 0xfe}
	for _, u := range utf16.Encode([]rune(s)) {
		out = binary.LittleEndian.AppendUint16(out, u)
	}
	return out
}

// TestCompressedFiles: a dump or an export compressed alone with gzip or
// xz is decompressed and read as the file it holds, named as given, with
// the same content as the plain file; it is read with the other files of
// its node, not as a bundle; a tar archive is still a bundle; a broken or
// oversized stream is an input error naming the file.
func TestCompressedFiles(t *testing.T) {
	dir := t.TempDir()
	gzDump := writeFile(t, dir, "iptables-save.txt.gz", compress(t, formatGzip, []byte(miniDump)))
	xzExport := writeFile(t, dir, "cluster.yaml.xz", compress(t, formatXZ, []byte(miniService)))
	wide := writeFile(t, dir, "powershell.txt.gz", compress(t, formatGzip, utf16LE(miniDump)))
	tiny := writeFile(t, dir, "tiny.gz", compress(t, formatGzip, []byte("*nat\nCOMMIT\n")))
	inDir := filepath.Join(dir, "node-dir")
	writeFile(t, inDir, "node/iptables-save.txt.gz", compress(t, formatGzip, []byte(miniDump)))
	bundle := writeFile(t, dir, "bundle.tgz", archive(t, entry{name: "node/iptables-save.txt", body: miniDump}))

	type want struct {
		dumps, ports int
		compression  []string
		encoding     string
	}
	for _, tc := range []struct {
		name  string
		paths []string
		want  want
	}{
		{"gzip dump", []string{gzDump}, want{dumps: 1, compression: []string{"gzip"}}},
		{"xz export beside a gzip dump", []string{gzDump, xzExport}, want{dumps: 1, ports: 1, compression: []string{"xz", "gzip"}}},
		{"gzip of UTF-16", []string{wide}, want{dumps: 1, compression: []string{"gzip"}, encoding: "UTF-16LE"}},
		{"shorter than a tar block", []string{tiny}, want{dumps: 1, compression: []string{"gzip"}}},
		{"in a directory", []string{inDir}, want{dumps: 1, compression: []string{"gzip"}}},
		{"a tgz is still a bundle", []string{bundle}, want{dumps: 1, compression: []string{""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snaps, err := Load(tc.paths, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(snaps) != 1 {
				t.Fatalf("%d snapshots, want 1", len(snaps))
			}
			s := snaps[0]
			if len(s.IPTables) != tc.want.dumps || len(s.Ports) != tc.want.ports {
				t.Errorf("%d dumps and %d service ports, want %d and %d", len(s.IPTables), len(s.Ports), tc.want.dumps, tc.want.ports)
			}
			var got []string
			for _, in := range s.Inputs {
				got = append(got, in.Compression)
				if in.Compression != "" && (!strings.Contains(in.Note, "decompressed from "+in.Compression) || in.Bytes < 10) {
					t.Errorf("input %s: note %q, %d bytes: want the decompression noted and the text's size", in.Path, in.Note, in.Bytes)
				}
				if in.Encoding != tc.want.encoding {
					t.Errorf("input %s: encoding %q, want %q", in.Path, in.Encoding, tc.want.encoding)
				}
			}
			if !reflect.DeepEqual(got, tc.want.compression) {
				t.Errorf("compressions %q, want %q", got, tc.want.compression)
			}
			if tc.want.dumps == 1 && len(s.IPTables[0].Tables) == 0 {
				t.Errorf("the dump holds no tables")
			}
		})
	}

	// The same content plain and compressed gives the same rules, at the
	// same lines.
	plain := writeFile(t, dir, "plain.txt", []byte(miniDump))
	a, err := Load([]string{plain}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load([]string{gzDump}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ca, cb := a[0].IPTables[0].Tables[0].Chain("PREROUTING"), b[0].IPTables[0].Tables[0].Chain("PREROUTING")
	if ca == nil || cb == nil || len(ca.Rules) != 1 || len(cb.Rules) != 1 {
		t.Fatalf("PREROUTING: %v and %v, want one rule each", ca, cb)
	}
	if ra, rb := ca.Rules[0], cb.Rules[0]; ra.Line != rb.Line || ra.Text() != rb.Text() || rb.Pos().File != gzDump {
		t.Errorf("compressed dump read differently: %s %q, want %s %q", rb.Pos(), rb.Text(), ra.Pos(), ra.Text())
	}

	full := compress(t, formatGzip, []byte(miniDump+strings.Repeat("# padding\n", 100)))
	for _, tc := range []struct {
		name, file string
		data       []byte
		limits     Limits
		wantErr    string
	}{
		{name: "cut short", file: "cut.gz", data: full[:len(full)-12], wantErr: "corrupt or truncated gzip file"},
		{name: "over the file limit", file: "big.gz", data: full, limits: Limits{MaxFiles: 10, MaxTotal: 1 << 20, MaxFile: 600}, wantErr: "decompresses to more than the 600-byte limit of a file"},
		{name: "over the run limit", file: "run.gz", data: full, limits: Limits{MaxFiles: 10, MaxTotal: 600, MaxFile: 1 << 20}, wantErr: "the inputs of this run hold more than 600 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), tc.file, tc.data)
			lim := tc.limits
			if lim.MaxFiles == 0 {
				lim = DefaultLimits
			}
			_, err := Load([]string{p}, Options{Limits: lim})
			if err == nil || !IsInputError(err) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("want an input error naming %s and saying %q, got %v", p, tc.wantErr, err)
			}
		})
	}
}

// TestCompressedFilesOneUnit: compressed dumps of one node given together
// are one unit, not one bundle each.
func TestCompressedFilesOneUnit(t *testing.T) {
	dir := t.TempDir()
	v4 := writeFile(t, dir, "iptables-save.txt.gz", compress(t, formatGzip, []byte(miniDump)))
	v6 := writeFile(t, dir, "ip6tables-save.txt.xz", compress(t, formatXZ, []byte(miniDump)))
	b1 := writeFile(t, dir, "b1.tgz", archive(t, entry{name: "node/iptables-save.txt", body: miniDump}))
	b2 := writeFile(t, dir, "b2.tgz", archive(t, entry{name: "node/iptables-save.txt", body: miniDump}))
	for _, tc := range []struct {
		name string
		args []string
		want [][]string
	}{
		{"two compressed dumps", []string{v4, v6}, [][]string{{v4, v6}}},
		{"two bundles", []string{b1, b2}, [][]string{{b1}, {b2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Units(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Units = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestIsTarHeader: the first block of a decompressed stream tells a tar
// archive (ustar, old-style, empty) from text.
func TestIsTarHeader(t *testing.T) {
	ustar := archive(t, entry{name: "node/iptables-save.txt", body: miniDump})
	raw, err := gzip.NewReader(bytes.NewReader(ustar))
	if err != nil {
		t.Fatal(err)
	}
	var block [tarBlock]byte
	if _, err := raw.Read(block[:]); err != nil {
		t.Fatal(err)
	}
	old := block
	copy(old[257:265], make([]byte, 8)) // no magic: the checksum must tell
	var sum int
	for i, c := range old {
		if i >= 148 && i < 156 {
			c = ' '
		}
		sum += int(c)
	}
	copy(old[148:156], []byte(strings.Repeat("0", 6-len(octal(sum)))+octal(sum)+"\x00 "))
	for _, tc := range []struct {
		name string
		b    []byte
		want bool
	}{
		{"ustar", block[:], true},
		{"old style", old[:], true},
		{"empty archive", make([]byte, tarBlock), true},
		{"a dump", []byte(miniDump + strings.Repeat("#\n", 300)), false},
		{"short", []byte("*nat\n"), false},
	} {
		if got := isTarHeader(tc.b); got != tc.want {
			t.Errorf("%s: isTarHeader = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func octal(n int) string {
	s := ""
	for ; n > 0; n /= 8 {
		s = string(rune('0'+n%8)) + s
	}
	return s
}

// FuzzCompressedFile feeds arbitrary bytes, as a file named on the command
// line, to the reader of single compressed files and archives: it must
// never panic, must refuse with an input error or read within the limits,
// and a file it reads decompressed says so.
func FuzzCompressedFile(f *testing.F) {
	t := &testing.T{}
	f.Add(compress(t, formatGzip, []byte(miniDump)))
	f.Add(compress(t, formatXZ, []byte(miniService)))
	f.Add(compress(t, formatGzip, utf16LE(miniDump)))
	f.Add(archive(t, entry{name: "node/iptables-save.txt", body: miniDump}))
	f.Add(compress(t, formatGzip, make([]byte, tarBlock)))
	// bzip2 and zstd: files of one stream and of two, a bundle, a zstd
	// frame whose window is over the limit.
	for _, format := range []string{formatBzip2, formatZstd} {
		f.Add(fixture(f, format, "iptables-save.txt", []byte(miniDump)))
		half := strings.Index(miniDump, ":KUBE-SERVICES")
		f.Add(fixture(f, format, "two-streams.txt", []byte(miniDump[:half]), []byte(miniDump[half:])))
		f.Add(fixture(f, format, "bundle.tar", bundleTar(f)))
	}
	f.Add([]byte(bigWindow))
	lim := Limits{MaxFiles: 50, MaxTotal: 1 << 20, MaxFile: 1 << 19}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "in.gz")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		files, err := readPath(p, lim, kube.Options{})
		if err != nil {
			if !IsInputError(err) {
				t.Fatalf("not an input error: %v", err)
			}
			return
		}
		var total int64
		for _, f := range files {
			total += f.length()
			if f.compressed != "" && (len(files) != 1 || f.compressed != archiveFormat(data)) {
				t.Fatalf("file %s read as %s-compressed from a %s stream, among %d files", f.name, f.compressed, archiveFormat(data), len(files))
			}
		}
		if len(files) > 50 || total > 1<<20 {
			t.Fatalf("limits exceeded: %d files, %d bytes", len(files), total)
		}
	})
}
