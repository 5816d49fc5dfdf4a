package load

import (
	"archive/tar"
	"bytes"
	"compress/bzip2"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// A log of a few lines, for the archives of the fixtures.
const miniLog = `I0301 12:00:00.000000       1 server_linux.go:69] "Using iptables proxy"
I0301 12:00:01.000000       1 proxier.go:805] "Syncing iptables rules"
I0301 12:00:01.100000       1 proxier.go:1520] "Reloading service iptables data" numServices=1 numEndpoints=1
`

// plainTar returns a tar archive of the entries, not compressed.
func plainTar(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// bundleTar is the tar archive of the bundle fixtures: a dump, an export
// and a log.
func bundleTar(t testing.TB) []byte {
	return plainTar(t,
		entry{name: "node/iptables-save.txt", body: miniDump},
		entry{name: "cluster/services.yaml", body: miniService},
		entry{name: "kube-proxy/kube-proxy.log", body: miniLog})
}

// fixtureTools are the programs that write the fixtures of each format
// (compress/bzip2 has no writer; the zstd fixtures are written by the
// reference zstd, not by the decoder's own module).
var fixtureTools = map[string][]string{
	formatBzip2: {"bzip2", "-9", "-c"},
	formatZstd:  {"zstd", "-19", "-q", "-c", "--no-progress"},
}

// fixtureExt is the extension of a file compressed in each format.
var fixtureExt = map[string]string{formatBzip2: ".bz2", formatZstd: ".zst"}

// fixture returns the fixture testdata/compressed/NAME.EXT, the streams
// that compress each of parts in format, one after the other. With
// -update it is written anew by the format's program; without, it must
// decompress to the parts (else it is stale: the test fails saying how
// to write it again).
func fixture(t testing.TB, format, name string, parts ...[]byte) []byte {
	t.Helper()
	p := filepath.Join(parsetest.Root(t), "testdata", "compressed", name+fixtureExt[format])
	want := bytes.Join(parts, nil)
	if *parsetest.Update {
		tool := fixtureTools[format]
		if _, err := exec.LookPath(tool[0]); err != nil {
			t.Fatalf("-update writes %s with %s, which is not installed: %v", p, tool[0], err)
		}
		var out []byte
		for _, part := range parts {
			cmd := exec.Command(tool[0], tool[1:]...)
			cmd.Stdin = bytes.NewReader(part)
			b, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s: %v", strings.Join(tool, " "), err)
			}
			out = append(out, b...)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (write it with go test ./analyzer/load -run %s -update)", err, t.Name())
	}
	var r io.Reader
	switch format {
	case formatBzip2:
		r = bzip2.NewReader(bytes.NewReader(data))
	case formatZstd:
		zr, err := zstd.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		r = zr
	}
	got, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s does not decompress to what the test expects (%v): write it again with go test ./analyzer/load -run %s -update", p, err, strings.Split(t.Name(), "/")[0])
	}
	return data
}

// formatFixtures are the fixtures of a format (see fixture).
type formatFixtures struct {
	dump, export, streams, bundle, traversal, bomb, tarBomb []byte
}

// padding is the comment lines that make the single-file bomb: 8 MiB of
// text that compresses to a few hundred bytes.
var padding = strings.Repeat("# padding\n", 8<<20/10)

// fixturesOf returns the fixtures of a format.
func fixturesOf(t *testing.T, format string) formatFixtures {
	t.Helper()
	half := strings.Index(miniDump, ":KUBE-SERVICES")
	return formatFixtures{
		dump:      fixture(t, format, "iptables-save.txt", []byte(miniDump)),
		export:    fixture(t, format, "services.yaml", []byte(miniService)),
		streams:   fixture(t, format, "two-streams.txt", []byte(miniDump[:half]), []byte(miniDump[half:])),
		bundle:    fixture(t, format, "bundle.tar", bundleTar(t)),
		traversal: fixture(t, format, "traversal.tar", plainTar(t, entry{name: "node/../../etc/passwd", body: "root:x:0:0::/root:/bin/sh\n"})),
		bomb:      fixture(t, format, "bomb.txt", []byte(miniDump+padding)),
		tarBomb:   fixture(t, format, "bomb.tar", plainTar(t, cores...)),
	}
}

// cores are the members of the archive bomb: a dump, then 1 MiB
// members of zeros (skipped, but decompressed and counted).
var cores = func() []entry {
	es := []entry{{name: "node/iptables-save.txt", body: miniDump}}
	for _, n := range []string{"core.1", "core.2", "core.3", "core.4", "core.5"} {
		es = append(es, entry{name: n, body: strings.Repeat("\x00", 1<<20)})
	}
	return es
}()

// TestCompressedFormats: bzip2 and zstd, made by their own programs, are
// read as gzip and xz are: a dump or an export compressed alone is read
// decompressed, with the same rules at the same lines as the plain file,
// every stream of it in turn; a .tar.bz2 or .tar.zst is a bundle, whose
// log is read again from the archive as it is parsed, to the same
// snapshot as when read whole; in a plain directory it is a bundle of its
// own. Hostile or broken inputs are input errors naming the file (and the
// member): a path out of the bundle, a decompression bomb past the
// limits, a stream cut short, data after the last stream, a header not of
// the format, a zstd window over the limit (of the first frame, before
// it is allocated, or of a later one).
func TestCompressedFormats(t *testing.T) {
	plainRun, err := Load([]string{writeFile(t, t.TempDir(), "plain.txt", []byte(miniDump))}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	plainRule := plainRun[0].IPTables[0].Tables[0].Chain("PREROUTING").Rules[0]
	for _, format := range []string{formatBzip2, formatZstd} {
		t.Run(format, func(t *testing.T) {
			fx := fixturesOf(t, format)
			ext := fixtureExt[format]
			dir := t.TempDir()
			dump := writeFile(t, dir, "iptables-save.txt"+ext, fx.dump)
			export := writeFile(t, dir, "cluster.yaml"+ext, fx.export)
			streams := writeFile(t, dir, "rotated.txt"+ext, fx.streams)
			bundle := writeFile(t, dir, "sos.tar"+ext, fx.bundle)
			for _, tc := range []struct {
				name               string
				paths              []string
				dumps, ports, logs int
				compression        []string
			}{
				{"a dump compressed alone", []string{dump}, 1, 0, 0, []string{format}},
				{"an export beside it", []string{dump, export}, 1, 1, 0, []string{format, format}},
				{"two streams", []string{streams}, 1, 0, 0, []string{format}},
				{"a bundle", []string{bundle}, 1, 1, 1, []string{"", "", ""}},
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
					if len(s.IPTables) != tc.dumps || len(s.Ports) != tc.ports || len(s.Logs) != tc.logs {
						t.Errorf("%d dumps, %d service ports, %d logs; want %d, %d, %d", len(s.IPTables), len(s.Ports), len(s.Logs), tc.dumps, tc.ports, tc.logs)
					}
					var got []string
					for _, in := range s.Inputs {
						got = append(got, in.Compression)
						if in.Compression != "" && (!strings.Contains(in.Note, "decompressed from "+format) || in.Bytes < 10) {
							t.Errorf("input %s: note %q, %d bytes: want the decompression noted and the text's size", in.Path, in.Note, in.Bytes)
						}
					}
					if !reflect.DeepEqual(got, tc.compression) {
						t.Errorf("compressions %q, want %q", got, tc.compression)
					}
					c := s.IPTables[0].Tables[0].Chain("PREROUTING")
					if c == nil || len(c.Rules) != 1 || c.Rules[0].Line != plainRule.Line || c.Rules[0].Text() != plainRule.Text() {
						t.Fatalf("PREROUTING: %v, want the rule %s %q of the plain dump", c, plainRule.Pos(), plainRule.Text())
					}
				})
			}
			// The bundle's log, streamed from the archive read again, and
			// read whole, give the same snapshot.
			t.Run("the bundle's log read again", func(t *testing.T) {
				defer func(m int64) { streamMemberMin = m }(streamMemberMin)
				streamMemberMin = 1
				var streamed []string
				logStreamed = func(name string) { streamed = append(streamed, name) }
				defer func() { logStreamed = nil }()
				sameLoad(t, bundle)
				if !reflect.DeepEqual(streamed, []string{"kube-proxy/kube-proxy.log"}) {
					t.Errorf("logs read as they were parsed: %q, want the bundle's", streamed)
				}
			})
			t.Run("in a plain directory", func(t *testing.T) {
				d := t.TempDir()
				writeFile(t, d, "case/sos.tar"+ext, fx.bundle)
				writeFile(t, d, "case/paste.txt", []byte(miniDump))
				snaps, err := Load([]string{filepath.Join(d, "case")}, Options{})
				if err != nil {
					t.Fatal(err)
				}
				if len(snaps) != 2 || len(snaps[0].Inputs) != 3 || snaps[0].Inputs[0].Bundle != filepath.Join(d, "case", "sos.tar"+ext) {
					t.Errorf("want the archive read as a bundle of its own beside the paste, got %d nodes: %+v", len(snaps), snaps[0].Inputs)
				}
			})

			cut := func(b []byte) []byte { return b[:len(b)-12] }
			small := Limits{MaxFiles: 10, MaxTotal: 4 << 20, MaxFile: 1 << 20}
			for _, tc := range []struct {
				name, file string
				data       []byte
				limits     Limits
				wantErr    string
			}{
				{name: "path out of the bundle", file: "evil.tar" + ext, data: fx.traversal, wantErr: `refusing archive entry "node/../../etc/passwd": path escapes the bundle`},
				{name: "bomb", file: "bomb.txt" + ext, data: fx.bomb, limits: small, wantErr: "decompresses to more than the 1048576-byte limit of a file"},
				{name: "bomb in an archive", file: "bomb.tar" + ext, data: fx.tarBomb, limits: small, wantErr: "archive decompresses to more than 4194304 bytes"},
				{name: "cut short", file: "cut.txt" + ext, data: cut(fx.bomb), wantErr: "corrupt or truncated " + format + " file"},
				{name: "archive cut short", file: "cut.tar" + ext, data: cut(fx.bundle), wantErr: "corrupt or truncated archive"},
				{name: "trailing garbage", file: "trailing.txt" + ext, data: append(bytes.Clone(fx.dump), "garbage after the stream\n"...), wantErr: "is not a " + format + " stream (trailing garbage"},
				{name: "not of the format past its magic", file: "bad" + ext, data: append(bytes.Clone(fx.dump[:4]), "garbage garbage garbage"...), wantErr: "not a valid " + format + " archive"},
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
		})
	}
}

// bigWindow is the header of a zstd frame whose window is 256 MiB (window
// descriptor exponent 18), then an empty last raw block.
const bigWindow = "\x28\xb5\x2f\xfd\x00\x90\x01\x00\x00"

// TestZstdWindow: a zstd archive or file whose first frame's window is
// over maxZstdWindow is refused by name before the window is allocated;
// a later frame's is refused as it is reached.
func TestZstdWindow(t *testing.T) {
	fx := fixture(t, formatZstd, "iptables-save.txt", []byte(miniDump))
	for _, tc := range []struct {
		name, data, wantErr string
	}{
		{"first frame", bigWindow, "a zstd archive whose window is 256 MiB, over the 128 MiB"},
		{"later frame", string(fx) + bigWindow, "corrupt or truncated zstd file after 217 bytes of text: a zstd frame whose window is over the 128 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), "big.zst", []byte(tc.data))
			_, err := Load([]string{p}, Options{})
			if err == nil || !IsInputError(err) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("want an input error naming %s and saying %q, got %v", p, tc.wantErr, err)
			}
		})
	}
}
