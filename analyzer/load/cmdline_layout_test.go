package load

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/parsers"
)

// TestLayoutCmdline: kube-proxy/cmdline.txt of a bundle, NUL-separated as
// collect copies it from /proc/PID/cmdline, is read as kube-proxy's
// command line, from a directory and from an archive, whatever its first
// word; a binary there, or a NUL in a file of another kind, is still not
// read.
func TestLayoutCmdline(t *testing.T) {
	const cmdline = "kube-proxy/cmdline.txt"
	for _, tc := range []struct {
		name, file, body string
		kind             parsers.Kind
		unread           string // the start of the file's unread reason
	}{
		{"kube-proxy's argv[0]", cmdline, "/usr/local/bin/kube-proxy\x00--proxy-mode=ipvs\x00--hostname-override=n1\x00", parsers.KindCmdline, ""},
		{"another argv[0]", cmdline, "/opt/bin/proxy\x00--proxy-mode=ipvs\x00--hostname-override=n1\x00", parsers.KindCmdline, ""},
		{"an executable", cmdline, "\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00>\x00", parsers.KindUnknown, "binary: a NUL byte at offset 7"},
		{"control bytes", cmdline, "/opt/bin/proxy\x00--proxy-mode=ipvs\x01\x00", parsers.KindUnknown, "binary: a NUL byte at offset 14"},
		{"not UTF-8", cmdline, "/opt/bin/proxy\x00--proxy-mode=\xff\xfe\x00", parsers.KindUnknown, "binary: a NUL byte at offset 14"},
		{"a NUL in a dump", "node/ip6tables-save.txt", strings.Replace(miniDump, "COMMIT", "COMMIT\x00", 1), parsers.KindUnknown, "binary: a NUL byte at offset"},
		{"a command line elsewhere", "kube-proxy/args.txt", "/opt/bin/proxy\x00--proxy-mode=ipvs\x00", parsers.KindUnknown, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "b"), "node/iptables-save.txt", []byte(miniDump))
			writeFile(t, filepath.Join(dir, "b"), tc.file, []byte(tc.body))
			tgz := writeFile(t, dir, "b.tgz", archive(t, entry{name: "node/iptables-save.txt", body: miniDump}, entry{name: tc.file, body: tc.body}))
			for _, p := range []string{filepath.Join(dir, "b"), tgz} {
				snaps, err := Load([]string{p}, Options{})
				if err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				var found bool
				for _, in := range snaps[0].Inputs {
					if in.Path != tc.file {
						continue
					}
					found = true
					if in.Kind != tc.kind || !strings.HasPrefix(in.Unread, tc.unread) || tc.unread == "" && in.Unread != "" {
						t.Errorf("%s: %s read as %s, unread %q; want %s, unread %q...", p, tc.file, in.Kind, in.Unread, tc.kind, tc.unread)
					}
				}
				if !found {
					t.Errorf("%s: no input %s", p, tc.file)
				}
				if tc.kind == parsers.KindCmdline && (snaps[0].Config == nil || snaps[0].Config.Flags == nil) {
					t.Errorf("%s: the command line's flags are not in the configuration", p)
				}
			}
		})
	}
}
