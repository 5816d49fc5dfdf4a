//go:build unix

package collect

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGuardRemovesPaths feeds the watchdog's script the paths of a run and
// ends its input as a killed collect does: it removes each path listed
// (spaces and all), and nothing else.
func TestGuardRemovesPaths(t *testing.T) {
	dir := t.TempDir()
	staging := filepath.Join(dir, "out dir", ".proxyscan-collect-1")
	archive := filepath.Join(dir, "out dir", ".b.tgz.tmp-2")
	kept := filepath.Join(dir, "out dir", "b.tgz")
	if err := os.MkdirAll(filepath.Join(staging, "node"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(staging, "node", "iptables-save.txt"), archive, kept} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("/bin/sh", "-c", guardScript)
	cmd.Stdin = strings.NewReader("+ 999999\nd " + staging + "\nd " + archive + "\n- 999999\nd " + filepath.Join(dir, "gone") + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("guard: %v\n%s", err, out)
	}
	for _, p := range []string{staging, archive} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s left after the guard's input ended", p)
		}
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("the bundle itself is gone: %v", err)
	}
}
