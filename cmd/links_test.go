package cmd

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestLinksAndSpecialFiles: in a directory given, a symbolic link to a
// file is read through, and a bundle given through a link is read; a named
// pipe or a link that leads nowhere is named, unread, and the verdict is
// not ok; diff refuses a side with such a file; trace whose rule dump is
// such a file exits 2 naming it.
func TestLinksAndSpecialFiles(t *testing.T) {
	root := t.TempDir()
	// linked: node/sysctl.txt a link to a listing outside the bundle
	// that turns IP forwarding off.
	linked := copyBundle(t, "iptables-mini")
	if err := os.WriteFile(filepath.Join(root, "sysctl-real.txt"), []byte("net.ipv4.ip_forward = 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "sysctl-real.txt"), filepath.Join(linked, "node/sysctl.txt")); err != nil {
		t.Fatal(err)
	}
	fifo := copyBundle(t, "iptables-mini")
	if err := syscall.Mkfifo(filepath.Join(fifo, "node/sysctl.txt"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	dangling := copyBundle(t, "iptables-mini")
	if err := os.Remove(filepath.Join(dangling, "node/iptables-save.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/nonexistent/iptables-save.txt", filepath.Join(dangling, "node/iptables-save.txt")); err != nil {
		t.Fatal(err)
	}
	through := filepath.Join(root, "through")
	if err := os.Symlink(copyBundle(t, "iptables-mini"), through); err != nil {
		t.Fatal(err)
	}
	plain := copyBundle(t, "iptables-mini")
	for _, tc := range []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string
	}{
		{name: "a link to a file is read", args: []string{"analyze", "-o", "json", linked}, code: 1, stdout: `"check": "sysctl-unsafe"`},
		{name: "diff sees the file a link leads to", args: []string{"diff", "-o", "json", plain, linked}, code: 1, stdout: `"kind": "finding-appeared"`},
		{name: "a named pipe is named, unread", args: []string{"analyze", "-o", "json", fifo}, stdout: `node/sysctl.txt was not read: a named pipe (FIFO), not a regular file: not opened`},
		{name: "a named pipe: not ok", args: []string{"analyze", "-o", "json", "--fail-on", "inconclusive", fifo}, code: 1, stdout: `"verdict": "inconclusive"`},
		{name: "diff refuses a side with a named pipe", args: []string{"diff", "-o", "json", plain, fifo}, code: 2, stderr: "node/sysctl.txt"},
		{name: "a dangling link is named, unread", args: []string{"analyze", "-o", "json", dangling}, stdout: `node/iptables-save.txt was not read: a symbolic link to /nonexistent/iptables-save.txt, which cannot be read`},
		{name: "trace resting on a dangling link", args: []string{"trace", "-o", "json", dangling, "--dst", "10.96.0.10:53", "--proto", "udp"}, code: 2,
			stderr: "node/iptables-save.txt: not read (a symbolic link to /nonexistent/iptables-save.txt, which cannot be read (no such file or directory)), and the result of trace rests on it"},
		{name: "a bundle given through a link", args: []string{"analyze", "-o", "json", "--fail-on", "inconclusive", through}, stdout: `"verdict": "ok"`},
	} {
		t.Run(tc.name, func(t *testing.T) { checkCLI(t, tc.args, tc.code, tc.stdout, tc.stderr) })
	}
}
