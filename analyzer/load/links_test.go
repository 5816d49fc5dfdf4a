package load

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/proxyscan/proxyscan/analyzer/model"
)

// loadWithin is Load of paths, failing the test when it does not return
// within a minute (a named pipe opened would block it).
func loadWithin(t *testing.T, paths []string) ([]*model.Snapshot, error) {
	t.Helper()
	type result struct {
		snaps []*model.Snapshot
		err   error
	}
	done := make(chan result, 1)
	go func() {
		snaps, err := Load(paths, Options{})
		done <- result{snaps, err}
	}()
	select {
	case r := <-done:
		return r.snaps, r.err
	case <-time.After(time.Minute):
		t.Fatalf("Load(%q) did not return: a special file was opened", paths)
		return nil, nil
	}
}

// symlink makes a symbolic link at link to target.
func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// mkfifo makes a named pipe at p.
func mkfifo(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
}

// TestDirectoryLinks: in a directory given, a symbolic link to a regular
// file is read through, wherever it leads, and a link to a directory is
// walked; a named pipe, a link that leads nowhere and a link to a
// directory that holds it are listed by name, unread, with why, never
// opened, and the verdict cannot be ok (inputs[].unread); a bundle given
// through a link, or a directory of links to bundles, is read as the
// bundle or bundles it leads to.
func TestDirectoryLinks(t *testing.T) {
	const sysctlOff = "net.ipv4.ip_forward = 0\n"
	// bundle writes a bundle directory holding a dump, and returns it.
	bundle := func(t *testing.T, dir string) string {
		writeFile(t, dir, "node/iptables-save.txt", []byte(miniDump))
		return dir
	}
	type want struct {
		dumps   int
		sysctl  bool
		unread  map[string]string // path: what its unread reason holds
		snaps   int
		errText string
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, root string) []string
		want  want
	}{
		{"a link to a file outside the bundle", func(t *testing.T, root string) []string {
			b := bundle(t, filepath.Join(root, "b"))
			writeFile(t, root, "sysctl-real.txt", []byte(sysctlOff))
			symlink(t, "../../sysctl-real.txt", filepath.Join(b, "node/sysctl.txt"))
			return []string{b}
		}, want{dumps: 1, sysctl: true, snaps: 1}},
		{"a link to a directory", func(t *testing.T, root string) []string {
			b := bundle(t, filepath.Join(root, "b"))
			writeFile(t, root, "listings/sysctl.txt", []byte(sysctlOff))
			symlink(t, "../listings", filepath.Join(b, "extra"))
			return []string{b}
		}, want{dumps: 1, sysctl: true, snaps: 1}},
		{"a named pipe in a bundle", func(t *testing.T, root string) []string {
			b := bundle(t, filepath.Join(root, "b"))
			mkfifo(t, filepath.Join(b, "node/sysctl.txt"))
			return []string{b}
		}, want{dumps: 1, snaps: 1, unread: map[string]string{"node/sysctl.txt": "a named pipe (FIFO), not a regular file: not opened"}}},
		{"a named pipe in a plain directory", func(t *testing.T, root string) []string {
			d := filepath.Join(root, "d")
			writeFile(t, d, "dump.txt", []byte(miniDump))
			mkfifo(t, filepath.Join(d, "notes"))
			return []string{d}
		}, want{dumps: 1, snaps: 1, unread: map[string]string{"notes": "a named pipe (FIFO)"}}},
		{"a dangling link at the dump's place", func(t *testing.T, root string) []string {
			b := filepath.Join(root, "b")
			writeFile(t, b, "node/sysctl.txt", []byte(sysctlOff))
			symlink(t, "/nonexistent/iptables-save.txt", filepath.Join(b, "node/iptables-save.txt"))
			return []string{b}
		}, want{sysctl: true, snaps: 1, unread: map[string]string{"node/iptables-save.txt": "a symbolic link to /nonexistent/iptables-save.txt, which cannot be read"}}},
		{"a link loop", func(t *testing.T, root string) []string {
			b := bundle(t, filepath.Join(root, "b"))
			symlink(t, "..", filepath.Join(b, "node/up"))
			return []string{b}
		}, want{dumps: 1, snaps: 1, unread: map[string]string{"node/up": "a directory that holds it (a loop): not followed"}}},
		{"a bundle given through a link", func(t *testing.T, root string) []string {
			b := bundle(t, filepath.Join(root, "b"))
			symlink(t, b, filepath.Join(root, "link"))
			return []string{filepath.Join(root, "link")}
		}, want{dumps: 1, snaps: 1}},
		{"a directory of links to bundles", func(t *testing.T, root string) []string {
			a := bundle(t, filepath.Join(root, "a"))
			b := bundle(t, filepath.Join(root, "b"))
			symlink(t, a, filepath.Join(root, "fleet/node-a"))
			symlink(t, b, filepath.Join(root, "fleet/node-b"))
			return []string{filepath.Join(root, "fleet")}
		}, want{dumps: 1, snaps: 2}},
		{"a named pipe a manifest lists", func(t *testing.T, root string) []string {
			b := bundle(t, filepath.Join(root, "b"))
			writeFile(t, b, "manifest.json", []byte(`{"schema": 1, "collected_at": "2026-03-02T09:15:00Z", "sources": [{"name": "sysctl", "method": "file", "file": "node/sysctl.txt", "status": "ok", "bytes": 24, "sha256": "0000000000000000000000000000000000000000000000000000000000000000"}]}`))
			mkfifo(t, filepath.Join(b, "node/sysctl.txt"))
			return []string{b}
		}, want{errText: "node/sysctl.txt, which source sysctl wrote, is a named pipe (FIFO), not a regular file: not opened"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			paths := tc.setup(t, t.TempDir())
			units, err := Units(paths)
			if err != nil {
				t.Fatal(err)
			}
			var snaps []*model.Snapshot
			for _, u := range units {
				s, err := loadWithin(t, u)
				if tc.want.errText != "" {
					if err == nil || !IsInputError(err) || !strings.Contains(err.Error(), tc.want.errText) {
						t.Fatalf("want an input error saying %q, got %v", tc.want.errText, err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				snaps = append(snaps, s...)
			}
			if tc.want.errText != "" {
				t.Fatalf("no error, want one saying %q", tc.want.errText)
			}
			if len(snaps) != tc.want.snaps {
				t.Fatalf("%d nodes, want %d", len(snaps), tc.want.snaps)
			}
			s := snaps[0]
			if len(s.IPTables) != tc.want.dumps || (s.Sysctls != nil) != tc.want.sysctl {
				t.Errorf("%d dumps, sysctl listing %v; want %d, %v", len(s.IPTables), s.Sysctls != nil, tc.want.dumps, tc.want.sysctl)
			}
			got := map[string]string{}
			for _, in := range s.Inputs {
				if in.Unread != "" {
					got[in.Path] = in.Unread
				}
			}
			if len(got) != len(tc.want.unread) {
				t.Errorf("unread inputs %q, want %q", got, tc.want.unread)
			}
			for p, why := range tc.want.unread {
				if !strings.Contains(got[p], why) {
					t.Errorf("input %s unread %q, want it to say %q", p, got[p], why)
				}
			}
		})
	}
}
