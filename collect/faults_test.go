package collect

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/proxyscan/proxyscan/collect/redact"
	"github.com/proxyscan/proxyscan/parsers/manifest"
)

// TestKubeProxyOfOwnNetworkNamespace: of the kube-proxy processes, the one
// read is that of collect's network namespace (/proc/PID/ns/net).
func TestKubeProxyOfOwnNetworkNamespace(t *testing.T) {
	const own, other = "net:[4026531840]", "net:[4026532111]"
	for _, tc := range []struct {
		name        string
		self        string
		ns          map[string]string // pid: namespace link ("" none)
		pid         int
		why, note   string
		unsure      bool
		others, out []int
	}{
		{name: "namespaces unknown: the first", ns: map[string]string{"4242": other, "5151": own}, pid: 4242, others: []int{5151}},
		{name: "own namespace's", self: own, ns: map[string]string{"4242": other, "5151": own}, pid: 5151, out: []int{4242}},
		{name: "only another namespace's", self: own, ns: map[string]string{"4242": other}, why: "kube-proxy is not running on this node (this network namespace): the kube-proxy processes [4242] run in other network namespaces"},
		{name: "namespace unreadable", self: own, ns: map[string]string{"4242": ""}, pid: 4242, unsure: true},
		{name: "known before unreadable", self: own, ns: map[string]string{"4242": "", "5151": own, "6161": other}, pid: 5151, others: []int{4242}, out: []int{6161}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := fakeNode(t, "127.0.0.1:1", "127.0.0.1:1")
			link := func(target, p string) {
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(target, p); err != nil {
					t.Fatal(err)
				}
			}
			if tc.self != "" {
				link(tc.self, filepath.Join(root, "proc/self/ns/net"))
			}
			for pid, ns := range tc.ns {
				dir := filepath.Join(root, "proc", pid)
				if pid != "4242" {
					if err := os.MkdirAll(dir, 0o755); err != nil {
						t.Fatal(err)
					}
					os.WriteFile(filepath.Join(dir, "comm"), []byte("kube-proxy\n"), 0o644)
					os.WriteFile(filepath.Join(dir, "cmdline"), []byte("/usr/local/bin/kube-proxy\x00--v=2\x00"), 0o644)
				}
				if ns != "" {
					link(ns, filepath.Join(dir, "ns/net"))
				}
			}
			kp, why := findKubeProxy(filepath.Join(root, "proc"))
			if tc.why != "" {
				if kp != nil || why.why != tc.why || why.failed {
					t.Fatalf("found %+v, %+v; want none, %q", kp, why, tc.why)
				}
				return
			}
			if kp == nil {
				t.Fatalf("none found: %s", why.why)
			}
			if kp.pid != tc.pid || kp.unsure != tc.unsure || fmt.Sprint(kp.others) != fmt.Sprint(tc.others) || fmt.Sprint(kp.elsewhere) != fmt.Sprint(tc.out) {
				t.Errorf("pid %d unsure %v others %v elsewhere %v; want %d %v %v %v", kp.pid, kp.unsure, kp.others, kp.elsewhere, tc.pid, tc.unsure, tc.others, tc.out)
			}
		})
	}
}

// TestUnreadableIsNotAbsent: a /proc file that is there but cannot be
// read makes its source fail, saying so; only an absent one means the
// module is not loaded.
func TestUnreadableIsNotAbsent(t *testing.T) {
	for _, tc := range []struct {
		name, status, text, not string
		prepare                 func(root string) error
	}{
		{name: "absent", status: manifest.StatusSkipped, text: "/proc/net/ip_tables_names is absent (ip_tables is not loaded)",
			prepare: func(root string) error { return os.Remove(filepath.Join(root, "proc/net/ip_tables_names")) }},
		{name: "unreadable", status: manifest.StatusFailed, text: "cannot read /proc/net/ip_tables_names (", not: "not loaded",
			prepare: func(root string) error {
				// Root reads any file: a directory stands in for a file
				// that cannot be read.
				p := filepath.Join(root, "proc/net/ip_tables_names")
				if err := os.Remove(p); err != nil {
					return err
				}
				return os.Mkdir(p, 0o755)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := fakeNode(t, "127.0.0.1:1", "127.0.0.1:1")
			if err := tc.prepare(root); err != nil {
				t.Fatal(err)
			}
			f := &fakeRunner{out: map[string]string{"iptables-legacy-save": "*filter\nCOMMIT\n"}}
			res, err := Run(context.Background(), Options{Root: root, Runner: f, Dir: filepath.Join(t.TempDir(), "b"), Sources: pick("iptables-legacy-save")})
			if err != nil {
				t.Fatal(err)
			}
			s := res.Manifest.Source("iptables-legacy-save")
			if s.Status != tc.status || !strings.Contains(s.Error, tc.text) || (tc.not != "" && strings.Contains(s.Error, tc.not)) {
				t.Errorf("%s %q; want %s %q", s.Status, s.Error, tc.status, tc.text)
			}
			if len(f.ran) != 0 {
				t.Errorf("ran %v", f.ran)
			}
		})
	}
}

// hangingRunner runs every command until its timeout or the context
// ends, as a hung tool would.
type hangingRunner struct{ started chan string }

func (hangingRunner) LookPath(name string) (string, error) { return "/fake/" + name, nil }

func (h hangingRunner) Run(ctx context.Context, c Cmd, stdout io.Writer) CmdResult {
	if h.started != nil {
		h.started <- c.Args[0]
	}
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	<-ctx.Done()
	res := CmdResult{Started: true, ExitStatus: -1, Err: ctx.Err()}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && c.Timeout > 0 {
		res.TimedOut, res.Err = true, fmt.Errorf("timed out after %s", c.Timeout)
	}
	return res
}

// TestTotalTimeout: four hung nf_tables listings read one after the other
// take the total together, not four source timeouts; those not started
// in time are failed, and the bundle is written.
func TestTotalTimeout(t *testing.T) {
	root := fakeNode(t, "127.0.0.1:1", "127.0.0.1:1")
	start := time.Now()
	res, err := Run(context.Background(), Options{Root: root, Runner: hangingRunner{}, Dir: filepath.Join(t.TempDir(), "b"),
		Sources: pick("iptables-nft-save", "ip6tables-nft-save", "nft-ruleset", "nft-ruleset-json"), TotalTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s with a 300ms total", took)
	}
	// The first listing takes the whole total; a listing started as it
	// ran out (a loaded machine) is killed with what was left, the others
	// are not started.
	const killed, notRead = "(what was left of the 300ms all the sources may take, --total-timeout): the command and its children were killed",
		"not read: the 300ms all the sources may take (--total-timeout) ran out"
	want := map[string][]string{
		"iptables-nft-save":  {killed},
		"ip6tables-nft-save": {notRead, killed},
		"nft-ruleset":        {notRead, killed},
		"nft-ruleset-json":   {notRead, killed},
	}
	for name, texts := range want {
		s := res.Manifest.Source(name)
		ok := false
		for _, text := range texts {
			ok = ok || strings.Contains(s.Error, text)
		}
		if s.Status != manifest.StatusFailed || !ok {
			t.Errorf("%s: %s %q; want failed, one of %q", name, s.Status, s.Error, texts)
		}
	}
	// Without a total, the sources' own timeouts (capped by --timeout).
	res, err = Run(context.Background(), Options{Root: root, Runner: hangingRunner{}, Dir: filepath.Join(t.TempDir(), "b"),
		Sources: pick("iptables-nft-save", "ip6tables-nft-save"), Timeout: 50 * time.Millisecond, TotalTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"iptables-nft-save", "ip6tables-nft-save"} {
		if s := res.Manifest.Source(name); s.Error != "timed out after 50ms: the command and its children were killed" {
			t.Errorf("%s: %q", name, s.Error)
		}
	}
}

// blockingRunner writes a rule with a real address for iptables-nft-save
// and holds ip until released.
type blockingRunner struct {
	hung, release chan struct{}
}

func (blockingRunner) LookPath(name string) (string, error) { return "/fake/" + name, nil }

func (b blockingRunner) Run(ctx context.Context, c Cmd, stdout io.Writer) CmdResult {
	if filepath.Base(c.Args[0]) == "ip" {
		close(b.hung)
		<-b.release
		return CmdResult{Started: true}
	}
	fmt.Fprintln(stdout, "*nat\n:KUBE-SERVICES - [0:0]\n-A KUBE-SERVICES -d 10.99.77.55/32 -p tcp -m tcp --dport 80 -j DNAT --to-destination 10.98.76.54:8080\nCOMMIT")
	return CmdResult{Started: true}
}

// TestRedactKeepsRawDataOffDisk: while collect --redact runs, nothing of
// what the sources read is on disk (a SIGKILL then leaves no raw data);
// without --redact the dump is staged there, which shows the look works.
func TestRedactKeepsRawDataOffDisk(t *testing.T) {
	for _, redacted := range []bool{true, false} {
		t.Run(fmt.Sprintf("redact=%v", redacted), func(t *testing.T) {
			root := fakeNode(t, "127.0.0.1:1", "127.0.0.1:1")
			out := t.TempDir()
			r := blockingRunner{hung: make(chan struct{}), release: make(chan struct{})}
			opts := Options{Root: root, Runner: r, Dir: filepath.Join(out, "b"), Sources: pick("iptables-nft-save", "ip-addr"), Parallel: 1}
			if redacted {
				var err error
				if opts.Redact, err = redact.New([]byte("0123456789abcdef0123")); err != nil {
					t.Fatal(err)
				}
			}
			done := make(chan error, 1)
			go func() {
				_, err := Run(context.Background(), opts)
				done <- err
			}()
			<-r.hung
			found := rawAddresses(t, out)
			close(r.release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if redacted && len(found) > 0 {
				t.Errorf("raw addresses on disk during collect --redact: %v", found)
			}
			if !redacted && len(found) == 0 {
				t.Errorf("no raw address staged without --redact: the look for them does not work")
			}
			if redacted {
				if found := rawAddresses(t, out); len(found) > 0 {
					t.Errorf("raw addresses in the redacted bundle: %v", found)
				}
			}
		})
	}
}

// rawAddresses returns the files below dir holding the addresses that
// blockingRunner writes.
func rawAddresses(t *testing.T, dir string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(data), "10.99.77.55") || strings.Contains(string(data), "10.98.76.54") {
			found = append(found, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// failingWriter fails as a full disk does.
type failingWriter struct{}

func (failingWriter) Write(p []byte) (int, error) {
	return 0, &fs.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}
}

// TestFullDiskIsNotTheCap: a command whose output cannot be written
// stops with that error, not "output cap reached".
func TestFullDiskIsNotTheCap(t *testing.T) {
	res := ExecRunner{}.Run(context.Background(), Cmd{Args: []string{"sh", "-c", "yes | head -c 100000"}, MaxBytes: 1 << 20, Timeout: 10 * time.Second}, failingWriter{})
	if res.Err == nil || !errors.Is(res.Err, syscall.ENOSPC) || res.Truncated {
		t.Errorf("%+v", res)
	}
	w := &Writer{env: &env{staging: t.TempDir()}, file: "node/x.txt"}
	w.f, _ = os.Create(filepath.Join(t.TempDir(), "x"))
	w.f.Close() // writes now fail
	w.h = sha256.New()
	if _, err := w.Write([]byte("x")); err == nil || !strings.HasPrefix(err.Error(), "writing node/x.txt: ") {
		t.Errorf("Write: %v", err)
	}
}

// TestHiddenProcesses: where /proc hides other users' processes
// (hidepid), finding no kube-proxy says nothing of whether it runs.
func TestHiddenProcesses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		init   bool
		failed bool
		why    string
	}{
		{name: "init visible", init: true, why: "kube-proxy is not running on this node (no kube-proxy process in "},
		{name: "init hidden", failed: true, why: "hides other users' processes (hidepid); run collect as root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proc := filepath.Join(t.TempDir(), "proc")
			for _, d := range []string{"self", "77"} {
				if err := os.MkdirAll(filepath.Join(proc, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			os.WriteFile(filepath.Join(proc, "77", "cmdline"), []byte("bash\x00"), 0o644)
			if tc.init {
				os.MkdirAll(filepath.Join(proc, "1"), 0o755)
				os.WriteFile(filepath.Join(proc, "1", "cmdline"), []byte("/sbin/init\x00"), 0o644)
			}
			kp, why := findKubeProxy(proc)
			if kp != nil || why.failed != tc.failed || !strings.Contains(why.why, tc.why) {
				t.Errorf("%+v %+v; want failed %v, %q", kp, why, tc.failed, tc.why)
			}
		})
	}
}

// stalledWriter is an output device that takes every write and never
// returns from it until released.
type stalledWriter struct{ release chan struct{} }

func (w stalledWriter) Write(p []byte) (int, error) {
	<-w.release
	return len(p), nil
}

// TestTotalTimeoutBoundsWriting: --total-timeout bounds writing the bundle
// too. A stdout that stalls makes collect fail within the total timeout
// and the write minimum, leaving no temporary archive; sources that use
// the whole total still leave time to write the bundle to a working
// output.
func TestTotalTimeoutBoundsWriting(t *testing.T) {
	root := fakeNode(t, "127.0.0.1:1", "127.0.0.1:1")
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	for _, tc := range []struct {
		name    string
		runner  Runner
		stalled bool
	}{
		{"stalled stdout", hangingRunner{}, true},
		{"sources use the whole total, working stdout", hangingRunner{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := stalledWriter{release: make(chan struct{})}
			defer close(w.release)
			var stdout bytes.Buffer
			opts := Options{Root: root, Runner: tc.runner, Output: "-", Stdout: &stdout, TotalTimeout: 300 * time.Millisecond,
				Sources: pick("sysctl", "iptables-nft-save")}
			if tc.stalled {
				opts.Stdout = w
			}
			start := time.Now()
			_, err := Run(context.Background(), opts)
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("collect took %s with a 300ms total", took)
			}
			switch {
			case tc.stalled && (err == nil || !strings.Contains(err.Error(), "writing the bundle did not end within what was left of the 300ms --total-timeout (and at least 300ms): the output is too slow")):
				t.Errorf("stalled stdout: %v", err)
			case !tc.stalled && err != nil:
				t.Errorf("working stdout: %v", err)
			case !tc.stalled && !bytes.HasPrefix(stdout.Bytes(), []byte{0x1f, 0x8b}):
				t.Errorf("working stdout: no gzip archive written")
			}
			if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
				t.Errorf("left in TMPDIR: %v", ents)
			}
		})
	}
}

// TestTimeoutLeft: a source's timeout is what is left of the total when
// that is shorter than its own, rounded to the millisecond but never to
// 0, which a runner reads as no timeout at all.
func TestTimeoutLeft(t *testing.T) {
	for _, tc := range []struct {
		name      string
		left, own time.Duration
		min, max  time.Duration
	}{
		{"less than a millisecond left", 300 * time.Microsecond, 5 * time.Second, time.Millisecond, time.Millisecond},
		{"total ran out", -time.Second, 5 * time.Second, time.Millisecond, time.Millisecond},
		{"own timeout shorter", time.Hour, 5 * time.Second, 5 * time.Second, 5 * time.Second},
		{"no own timeout", 2 * time.Second, 0, time.Second, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &env{deadline: time.Now().Add(tc.left), total: time.Minute}
			if got := e.timeout(tc.own); got < tc.min || got > tc.max {
				t.Errorf("timeout(%s) with %s left = %s, want %s to %s", tc.own, tc.left, got, tc.min, tc.max)
			}
		})
	}
}
