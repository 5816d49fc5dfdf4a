package load

import (
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/parsers"
)

// TestKindLimits: a file whose head reads as a kind small by nature (a
// sysctl listing) and that is over its kind's limit is an input error
// naming it, the kind and the limit, on disk, in a directory, compressed
// alone or in an archive, before it is read whole; within the limit it is
// read, and a file of a kind without such a limit (a dump) of the same
// size is read as before.
func TestKindLimits(t *testing.T) {
	lim := Limits{MaxFiles: 100, MaxTotal: 1 << 30, MaxFile: 1 << 30, MaxKind: map[parsers.Kind]int64{parsers.KindSysctl: 4096}}
	line := "net.ipv4.conf.eth0.rp_filter = 1\n"
	big := "net.ipv4.ip_forward = 1\n" + strings.Repeat(line, 200)
	small := "net.ipv4.ip_forward = 1\n" + strings.Repeat(line, 20)
	dump := strings.Replace(miniDump, "COMMIT\n", strings.Repeat("# a comment line that makes the dump longer\n", 200)+"COMMIT\n", 1)
	const wantErr = "its head reads as a sysctl listing (sysctl), and "
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, dir string) (path, named string)
		wantErr string
	}{
		{"a listing over its limit", func(t *testing.T, dir string) (string, string) {
			p := writeFile(t, dir, "sysctl.txt", []byte(big))
			return p, p
		}, wantErr + "it is 6624 bytes, over the 4096-byte limit of that kind"},
		{"in a directory", func(t *testing.T, dir string) (string, string) {
			writeFile(t, dir, "b/node/iptables-save.txt", []byte(miniDump))
			p := writeFile(t, dir, "b/node/sysctl.txt", []byte(big))
			return dir + "/b", p
		}, wantErr + "it is 6624 bytes"},
		{"compressed alone", func(t *testing.T, dir string) (string, string) {
			p := writeFile(t, dir, "sysctl.txt.gz", compress(t, formatGzip, []byte(big)))
			return p, p
		}, wantErr + "it decompresses to more than 4096 bytes, over the 4096-byte limit"},
		{"in an archive", func(t *testing.T, dir string) (string, string) {
			p := writeFile(t, dir, "b.tgz", archive(t, entry{name: "node/iptables-save.txt", body: miniDump}, entry{name: "node/sysctl.txt", body: big}))
			return p, p + `: archive entry "node/sysctl.txt"`
		}, wantErr + "it is 6624 bytes"},
		{"a listing within its limit", func(t *testing.T, dir string) (string, string) {
			p := writeFile(t, dir, "sysctl.txt", []byte(small))
			return p, p
		}, ""},
		{"a dump of that size", func(t *testing.T, dir string) (string, string) {
			p := writeFile(t, dir, "dump.txt", []byte(dump))
			return p, p
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, named := tc.setup(t, t.TempDir())
			_, err := Load([]string{p}, Options{Limits: lim})
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !IsInputError(err) || !strings.Contains(err.Error(), named) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("want an input error naming %s and saying %q, got %v", named, tc.wantErr, err)
			}
		})
	}
	if got := kindLimit(parsers.KindSysctl, DefaultLimits); got != 64<<20 {
		t.Errorf("default limit of a sysctl listing %d, want 64 MiB", got)
	}
	if got := kindLimit(parsers.KindIPTablesSave, DefaultLimits); got != DefaultLimits.MaxFile {
		t.Errorf("limit of a dump %d, want that of any file", got)
	}
}

// TestLogLimit: a kube-proxy log has a limit of its own (256 MiB by
// default), and one over it is an input error naming it that says how to
// cut it; the loader keeps of a log read only the entries its readers use
// (klog.ParseKept).
func TestLogLimit(t *testing.T) {
	if got := kindLimit(parsers.KindLog, DefaultLimits); got != 256<<20 {
		t.Errorf("default limit of a kube-proxy log %d, want 256 MiB", got)
	}
	line := "I0302 08:15:32.663987       1 proxier.go:1573] \"SyncProxyRules complete\" ipFamily=\"IPv4\" elapsed=\"12ms\"\n"
	log := strings.Repeat(line, 100)
	lim := Limits{MaxFiles: 100, MaxTotal: 1 << 30, MaxFile: 1 << 30, MaxKind: map[parsers.Kind]int64{parsers.KindLog: 4096}}
	dir := t.TempDir()
	writeFile(t, dir, "b/node/iptables-save.txt", []byte(miniDump))
	p := writeFile(t, dir, "b/kube-proxy/log.txt", []byte(log))
	_, err := Load([]string{dir + "/b"}, Options{Limits: lim})
	want := "its head reads as a kube-proxy log (kube-proxy-log), and it is 10400 bytes, over the 4096-byte limit of that kind (kube-proxy logs a few megabytes a day, tens at -v=4: give the time of the problem, journalctl -u kube-proxy --since ... --until ..., or check it is the file meant)"
	if err == nil || !IsInputError(err) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), want) {
		t.Errorf("want an input error naming %s and saying %q, got %v", p, want, err)
	}
	// Compressed alone, it is read no further than the limit, parsed as
	// it is read or read whole.
	gz := writeFile(t, dir, "c/log.txt.gz", compress(t, formatGzip, []byte(log)))
	want = "reading " + gz + ": its head reads as a kube-proxy log (kube-proxy-log), and it decompresses to more than 4096 bytes, over the 4096-byte limit of that kind"
	for _, streamed := range []bool{true, false} {
		streamLogs = streamed
		_, err = Load([]string{gz}, Options{Limits: lim})
		streamLogs = true
		if err == nil || !IsInputError(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("streamed %t: want an input error saying %q, got %v", streamed, want, err)
		}
	}
	snaps, err := Load([]string{dir + "/b"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 1 || len(snaps[0].Logs) != 1 || !snaps[0].Logs[0].Kept() || len(snaps[0].Logs[0].Entries) != 1 || snaps[0].Logs[0].Lines != 100 {
		t.Errorf("the log read: %+v", snaps[0].Logs)
	}
}
