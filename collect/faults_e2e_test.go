package collect_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/proxyscan/proxyscan/internal/benchgen"
	"github.com/proxyscan/proxyscan/internal/netnstest"
	"github.com/proxyscan/proxyscan/parsers/manifest"
)

// The addresses of the rules loaded by the fault tests, looked for in
// what a killed collect --redact leaves.
const rawVIP, rawEndpoint = "10.99.77.55", "10.98.76.54"

// hungTools makes a directory of fake tools that start a child and wait,
// so that only killing their process group ends them.
func hungTools(t *testing.T, marker string, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\n/bin/sleep " + marker + " &\nwait\n"
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// newMarker returns a sleep duration no other test uses, to find its
// process by command line.
func newMarker(base int) string {
	return fmt.Sprintf("%d.%d", base+os.Getpid()%300, time.Now().Nanosecond()%100000)
}

// startCollect starts proxyscan collect in the namespace, env first.
func startCollect(t *testing.T, ns *netnstest.NS, env []string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	return startCollectTo(t, nil, ns, env, args...)
}

// startCollectTo starts proxyscan collect in the namespace, env first,
// its standard output going to stdout (nil: none).
func startCollectTo(t *testing.T, stdout *os.File, ns *netnstest.NS, env []string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	argv := append([]string{"netns", "exec", ns.Name}, env...)
	argv = append(argv, proxyscanBinary(t), "collect")
	cmd := exec.Command("ip", append(argv, args...)...)
	if stdout != nil {
		cmd.Stdout = stdout
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, &stderr
}

// waitExit waits for cmd, at most d, and returns its wait status.
func waitExit(t *testing.T, cmd *exec.Cmd, d time.Duration) syscall.WaitStatus {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(d):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("collect did not end within %s", d)
	}
	return cmd.ProcessState.Sys().(syscall.WaitStatus)
}

// filesHolding returns the files below dir that hold any of the strings.
// A file or directory removed while it is read (collect's watchdog removes
// its staging directory as the walk goes) is skipped.
func filesHolding(t *testing.T, dir string, strs ...string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, s := range strs {
			if bytes.Contains(data, []byte(s)) {
				found = append(found, p)
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// TestE2EKilledMidRun loads rules with known addresses into a namespace,
// starts collect with a hung fake ip on PATH (so that it is mid-run, the
// rule dumps read), and ends it with SIGINT, SIGTERM or SIGKILL: the hung
// tool's process group dies with collect every time, and nothing is left
// in the output directory: with --redact no real address was ever written
// there; without it the dump staged there while collect ran (which shows
// that the look for the addresses works) is removed, after a SIGKILL by
// the watchdog.
func TestE2EKilledMidRun(t *testing.T) {
	for _, tc := range []struct {
		sig    syscall.Signal
		redact bool
	}{
		{syscall.SIGINT, true}, {syscall.SIGTERM, true}, {syscall.SIGKILL, true}, {syscall.SIGKILL, false}, {syscall.SIGTERM, false},
	} {
		t.Run(fmt.Sprintf("%s redact=%v", tc.sig, tc.redact), func(t *testing.T) {
			ns := requireE2E(t)
			ns.Shell(`
				iptables -t nat -N KUBE-SERVICES
				iptables -t nat -A KUBE-SERVICES -d ` + rawVIP + `/32 -p tcp --dport 80 -j DNAT --to-destination ` + rawEndpoint + `:8080
				nft add table ip lab
				nft add chain ip lab c
				nft add rule ip lab c ip daddr ` + rawVIP + ` dnat to ` + rawEndpoint + `
			`)
			marker := newMarker(900)
			bin := hungTools(t, marker, "ip")
			out := t.TempDir()
			args := []string{"-o", filepath.Join(out, "b.tgz")}
			if tc.redact {
				args = append(args, "--redact", "--redact-map", filepath.Join(t.TempDir(), "map.json"))
			}
			cmd, stderr := startCollect(t, ns, []string{"env", "PATH=" + bin + ":/usr/sbin:/usr/bin:/sbin:/bin"}, args...)
			if !eventually(time.Minute, func() bool { return processRunning("/bin/sleep " + marker) }) {
				t.Fatalf("the hung ip did not start within a minute:\n%s", stderr)
			}
			// The rule dumps are read by then (a few milliseconds each).
			time.Sleep(time.Second)
			if staged := filesHolding(t, out, rawVIP, rawEndpoint); !tc.redact && len(staged) == 0 {
				t.Errorf("no staged dump in the output directory while collect runs without --redact: the look for the addresses does not work")
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			ws := waitExit(t, cmd, 20*time.Second)
			if !ws.Signaled() || ws.Signal() != tc.sig {
				t.Errorf("collect ended with %v, want by %s\n%s", ws, tc.sig, stderr)
			}
			if !eventually(10*time.Second, func() bool { return !processRunning("/bin/sleep " + marker) }) {
				t.Errorf("the hung tool's child survived collect's %s", tc.sig)
			}
			// The watchdog removes the staging directory of a killed collect
			// a moment after it died.
			var found []string
			eventually(10*time.Second, func() bool { found = filesHolding(t, out, rawVIP, rawEndpoint); return len(found) == 0 })
			if len(found) > 0 {
				t.Errorf("real addresses left in the output directory after %s of collect (redact=%v): %v", tc.sig, tc.redact, found)
			}
			var left []string
			eventually(10*time.Second, func() bool {
				ents, _ := os.ReadDir(out)
				left = left[:0]
				for _, e := range ents {
					left = append(left, e.Name())
				}
				return len(left) == 0
			})
			if len(left) > 0 {
				t.Errorf("left behind after %s: %v", tc.sig, left)
			}
		})
	}
}

// TestE2ETotalTimeout hangs every nf_tables listing (one after the other,
// each with a 5-minute timeout of its own): --total-timeout bounds them
// together, the bundle is written, and the hung tools' children die.
func TestE2ETotalTimeout(t *testing.T) {
	ns := requireE2E(t)
	marker := newMarker(1200)
	bin := hungTools(t, marker, "iptables-nft-save", "ip6tables-nft-save", "nft")
	dir, m, took := collectIn(t, ns, []string{"env", "PATH=" + bin, "KUBECONFIG="}, "--total-timeout", "3s")
	if took > 20*time.Second {
		t.Errorf("collect took %s with a 3s total", took)
	}
	if s := m.Source("iptables-nft-save"); s.Status != manifest.StatusFailed || !strings.Contains(s.Error, "(what was left of the 3s all the sources may take, --total-timeout)") {
		t.Errorf("iptables-nft-save: %s %q", s.Status, s.Error)
	}
	for _, name := range []string{"ip6tables-nft-save", "nft-ruleset", "nft-ruleset-json"} {
		s := m.Source(name)
		if s.Status != manifest.StatusFailed || !strings.Contains(s.Error, "3s") {
			t.Errorf("%s: %s %q", name, s.Status, s.Error)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err != nil {
		t.Error(err)
	}
	if !eventually(10*time.Second, func() bool { return !processRunning("/bin/sleep " + marker) }) {
		t.Errorf("a hung listing's child survived the total timeout")
	}
}

// mountTmpfs mounts a tmpfs with options at a new directory, unmounted
// at the end of the test.
func mountTmpfs(t *testing.T, opts string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", opts, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// TestE2EFullDisk collects a node whose rule dump does not fit the output
// file system (a 64 KiB tmpfs): the failure says "no space left on
// device", never that the output cap was reached.
func TestE2EFullDisk(t *testing.T) {
	var rules bytes.Buffer
	if err := (benchgen.Spec{Services: 300, Endpoints: 800, Node: "e2e-node"}).IPTablesSave(&rules); err != nil {
		t.Fatal(err)
	}
	if rules.Len() < 128<<10 {
		t.Fatalf("the generated dump is only %d bytes", rules.Len())
	}
	for _, redacted := range []bool{false, true} {
		t.Run(fmt.Sprintf("redact=%v", redacted), func(t *testing.T) {
			ns := requireE2E(t)
			ns.Run(rules.Bytes(), "iptables-restore")
			small := mountTmpfs(t, "size=64k")
			args := []string{"--dir", filepath.Join(small, "b")}
			if redacted {
				args = append(args, "--redact", "--redact-map", filepath.Join(t.TempDir(), "map.json"))
			}
			cmd, stderr := startCollect(t, ns, []string{"env", "KUBECONFIG="}, args...)
			ws := waitExit(t, cmd, 2*time.Minute)
			if strings.Contains(stderr.String(), "output cap") {
				t.Errorf("a full disk reported as the output cap:\n%s", stderr)
			}
			if ws.ExitStatus() != 0 {
				// No bundle: the error says why.
				if ws.ExitStatus() != 3 || !strings.Contains(stderr.String(), "no space left on device") {
					t.Errorf("exit %v:\n%s", ws, stderr)
				}
				t.Logf("no bundle: %s", strings.TrimSpace(stderr.String()))
				return
			}
			data, err := os.ReadFile(filepath.Join(small, "b", "manifest.json"))
			if err != nil {
				t.Fatal(err)
			}
			m, err := manifest.Parse("manifest.json", data)
			if err != nil {
				t.Fatal(err)
			}
			full := false
			for _, s := range m.Sources {
				if strings.Contains(s.Error, "cap") {
					t.Errorf("%s: %q", s.Name, s.Error)
				}
				if strings.Contains(s.Error, "no space left on device") {
					full = true
					t.Logf("%s: %s", s.Name, s.Error)
				}
			}
			if !full {
				t.Errorf("no source says the disk is full:\n%s", data)
			}
			if s := m.Source("iptables-nft-save"); s.Status == manifest.StatusOK {
				t.Errorf("iptables-nft-save wrote %d bytes on a 64 KiB file system", s.Bytes)
			}
		})
	}
}

// TestE2EReadOnlyOutput collects into a read-only file system: no bundle,
// exit status 3, and the message says why.
func TestE2EReadOnlyOutput(t *testing.T) {
	ns := requireE2E(t)
	ro := mountTmpfs(t, "ro,size=1m")
	for _, args := range [][]string{{"-o", filepath.Join(ro, "b.tgz")}, {"--dir", filepath.Join(ro, "b")}} {
		cmd, stderr := startCollect(t, ns, []string{"env", "KUBECONFIG="}, args...)
		ws := waitExit(t, cmd, 2*time.Minute)
		if ws.ExitStatus() != 3 || !strings.Contains(stderr.String(), "read-only file system") {
			t.Errorf("%v: exit %v:\n%s", args, ws, stderr)
		}
	}
}

// TestE2ENonRoot runs collect as nobody: the bundle is written, and what
// could not be read for want of permission is failed, saying so, never
// reported as a module that is not loaded.
func TestE2ENonRoot(t *testing.T) {
	ns := requireE2E(t)
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("skipping: setpriv (util-linux) is not installed: cannot run collect as another user")
	}
	// nobody can run the binary and write the bundle there.
	shared, err := os.MkdirTemp("", "proxyscan-nonroot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(shared) })
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(shared, "proxyscan")
	data, err := os.ReadFile(proxyscanBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(shared, "b")
	cmd := exec.Command("ip", "netns", "exec", ns.Name, "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
		"env", "KUBECONFIG=", "HOME=/", bin, "collect", "--dir", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("collect as nobody: %v\n%s", err, stderr.String())
	}
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse("manifest.json", raw)
	if err != nil {
		t.Fatal(err)
	}
	// ip_tables_names is root's alone (0440) where x_tables is loaded.
	if _, err := ns.Try(nil, "test", "-e", "/proc/net/ip_tables_names"); err == nil {
		s := m.Source("iptables-legacy-save")
		if s.Status != manifest.StatusFailed || !strings.Contains(s.Error, "cannot read /proc/net/ip_tables_names (permission denied)") || strings.Contains(s.Error, "not loaded") {
			t.Errorf("iptables-legacy-save as nobody: %s %q", s.Status, s.Error)
		}
	} else {
		t.Logf("no /proc/net/ip_tables_names here: the unreadable case is not met")
	}
	for _, s := range m.Sources {
		if strings.Contains(s.Error, "not loaded") {
			// Said only of what is absent, which root sees absent too.
			for _, p := range []string{"/proc/net/ip_tables_names", "/proc/net/ip6_tables_names", "/proc/net/ip_vs", "/proc/sys/net/netfilter/nf_conntrack_max"} {
				if strings.Contains(s.Error, p) {
					if _, err := ns.Try(nil, "test", "-e", p); err == nil {
						t.Errorf("%s: %q, but %s exists", s.Name, s.Error, p)
					}
				}
			}
		}
	}
	if s := m.Source("iptables-nft-save"); s != nil && s.Status == manifest.StatusOK {
		t.Errorf("iptables-nft-save succeeded as nobody: %+v", s)
	}
}

// TestE2EKubeProxyOfOtherNamespace runs a kube-proxy-like process (a copy
// of sleep named kube-proxy) in a second namespace: collect in the first
// does not take it for its own, and takes the one started in its own
// namespace once there is one.
func TestE2EKubeProxyOfOtherNamespace(t *testing.T) {
	ns := requireE2E(t)
	other := netnstest.New(t)
	binDir := t.TempDir()
	if err := os.Chmod(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	sleep, err := os.ReadFile("/bin/sleep")
	if err != nil {
		t.Skipf("no /bin/sleep to copy: %v", err)
	}
	kp := filepath.Join(binDir, "kube-proxy")
	if err := os.WriteFile(kp, sleep, 0o755); err != nil {
		t.Fatal(err)
	}
	start := func(in *netnstest.NS, marker string) int {
		cmd := exec.Command("ip", "netns", "exec", in.Name, kp, marker)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		if !eventually(10*time.Second, func() bool { return processRunning(kp + " " + marker) }) {
			t.Fatalf("the fake kube-proxy did not start")
		}
		return cmd.Process.Pid
	}
	otherPid := start(other, newMarker(1500))
	_, m, _ := collectIn(t, ns, []string{"env", "KUBECONFIG="})
	s := m.Source("kube-proxy-cmdline")
	if s.Status != manifest.StatusSkipped || !strings.Contains(s.Error, "run in other network namespaces") || !strings.Contains(s.Error, strconv.Itoa(otherPid)) {
		t.Errorf("kube-proxy-cmdline with kube-proxy in another namespace only: %s %q", s.Status, s.Error)
	}

	ownMarker := newMarker(1800)
	ownPid := start(ns, ownMarker)
	dir, m, _ := collectIn(t, ns, []string{"env", "KUBECONFIG="})
	s = m.Source("kube-proxy-cmdline")
	if s.Status != manifest.StatusOK || s.Path != "/proc/"+strconv.Itoa(ownPid)+"/cmdline" {
		t.Fatalf("kube-proxy-cmdline: %+v", s)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "kube-proxy/cmdline.txt")); !strings.Contains(string(got), ownMarker) {
		t.Errorf("kube-proxy/cmdline.txt is %q, not the own namespace's process", got)
	}
	if !strings.Contains(strings.Join(s.Notes, "\n"), "other network namespaces were left out: ["+strconv.Itoa(otherPid)) {
		t.Errorf("notes: %q", s.Notes)
	}
}

// TestE2EStalledStdout writes the bundle of a node with a large ruleset to
// a pipe nobody reads (collect -o - into a FIFO whose reader is stuck):
// collect ends within --total-timeout and the write minimum, exit status
// 3, says why, and leaves no temporary archive.
func TestE2EStalledStdout(t *testing.T) {
	ns := requireE2E(t)
	var rules bytes.Buffer
	if err := (benchgen.Spec{Services: 3000, Endpoints: 6000, Node: "e2e-node"}).IPTablesSave(&rules); err != nil {
		t.Fatal(err)
	}
	ns.Run(rules.Bytes(), "iptables-restore")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close() // open, never read: the pipe is full and stays full
	// Fill the pipe before collect starts, so that its first write blocks
	// whatever the bundle's size (a loaded machine may read few sources
	// within the total, and a small bundle would fit a pipe left empty).
	size, err := unix.FcntlInt(w.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	proxyscanBinary(t) // built before the clock starts
	start := time.Now()
	cmd, stderr := startCollectTo(t, w, ns, []string{"env", "KUBECONFIG=", "TMPDIR=" + tmp}, "-o", "-", "--total-timeout", "3s")
	w.Close()
	ws := waitExit(t, cmd, time.Minute)
	took := time.Since(start)
	if took > 12*time.Second { // 3s for the sources, 3s to write, and slack
		t.Errorf("collect took %s with a 3s total and a stalled stdout", took)
	}
	t.Logf("collect ended after %s: %s", took.Round(time.Millisecond), strings.TrimSpace(stderr.String()))
	if ws.ExitStatus() != 3 || !strings.Contains(stderr.String(), "writing the bundle did not end within") || !strings.Contains(stderr.String(), "the output is too slow") {
		t.Errorf("exit %v:\n%s", ws, stderr)
	}
	if !eventually(10*time.Second, func() bool { ents, _ := os.ReadDir(tmp); return len(ents) == 0 }) {
		ents, _ := os.ReadDir(tmp)
		t.Errorf("left in TMPDIR: %v", ents)
	}
}
