package collect

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/parsers"
)

// TestCmdlineRoundTrip: the command line collect copies from
// /proc/PID/cmdline, NUL-separated, is read back as kube-proxy's command
// line by analyze, from a bundle directory and from an archive, also
// when kube-proxy was found by its name under another argv[0] (which its
// content alone does not tell).
func TestCmdlineRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name, cmdline string
	}{
		{"kube-proxy's argv[0]", ""},
		{"another argv[0]", "/opt/proxy/bin/proxy\x00--config=/var/lib/kube-proxy/config.conf\x00--hostname-override=worker-1\x00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := fakeNode(t, "127.0.0.1:1", "127.0.0.1:1")
			if tc.cmdline != "" {
				if err := os.WriteFile(filepath.Join(root, "proc/4242/cmdline"), []byte(tc.cmdline), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			tmp := t.TempDir()
			dir, tgz := filepath.Join(tmp, "b"), filepath.Join(tmp, "b.tgz")
			for _, o := range []Options{{Dir: dir}, {Output: tgz}} {
				o.Root, o.Sources = root, pick("sysctl", "kube-proxy-cmdline", "kube-proxy-config")
				if _, err := Run(context.Background(), o); err != nil {
					t.Fatal(err)
				}
			}
			for _, b := range []string{dir, tgz} {
				snaps, err := load.Load([]string{b}, load.Options{})
				if err != nil {
					t.Fatalf("%s: %v", b, err)
				}
				if len(snaps) != 1 {
					t.Fatalf("%s: %d snapshots", b, len(snaps))
				}
				s := snaps[0]
				found := false
				for _, in := range s.Inputs {
					if in.Path != "kube-proxy/cmdline.txt" {
						continue
					}
					found = true
					if in.Kind != parsers.KindCmdline || in.Unread != "" || in.Note != "" {
						t.Errorf("%s: cmdline.txt read as %s (unread %q, note %q)", b, in.Kind, in.Unread, in.Note)
					}
				}
				if !found {
					t.Errorf("%s: no kube-proxy/cmdline.txt among the inputs", b)
				}
				if s.Config == nil || s.Config.Flags == nil {
					t.Errorf("%s: the command line's flags are not in the configuration", b)
				}
			}
		})
	}
}
