package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/proxyscan/proxyscan/parsers/manifest"
)

func TestCollectFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want CollectOptions
		err  string
	}{
		{name: "defaults", args: []string{"collect"}, want: CollectOptions{ConntrackSample: 5000, LogLines: 10000, Root: "/", TotalTimeout: 2 * time.Minute}},
		{name: "archive", args: []string{"collect", "-o", "n1.tgz", "--kubeconfig", "kc", "--timeout", "5s"},
			want: CollectOptions{Output: "n1.tgz", Kubeconfig: "kc", Timeout: 5 * time.Second, ConntrackSample: 5000, LogLines: 10000, Root: "/", TotalTimeout: 2 * time.Minute}},
		{name: "dir and redaction", args: []string{"collect", "--dir", "d", "--redact", "--redact-map", "m.json"},
			want: CollectOptions{Dir: "d", Redact: true, RedactMap: "m.json", ConntrackSample: 5000, LogLines: 10000, Root: "/", TotalTimeout: 2 * time.Minute}},
		{name: "total timeout and force", args: []string{"collect", "--total-timeout", "30s", "--redact", "--force"},
			want: CollectOptions{Redact: true, Force: true, ConntrackSample: 5000, LogLines: 10000, Root: "/", TotalTimeout: 30 * time.Second}},
		{name: "analyze", args: []string{"collect", "--analyze", "--dir", "d"},
			want: CollectOptions{Analyze: true, Dir: "d", ConntrackSample: 5000, LogLines: 10000, Root: "/", TotalTimeout: 2 * time.Minute}},
		{name: "analyze with a check selection", args: []string{"collect", "--analyze", "--dir", "d", "--skip", "node-drift,sync-failures"},
			want: CollectOptions{Analyze: true, Dir: "d", Skip: []string{"node-drift", "sync-failures"}, ConntrackSample: 5000, LogLines: 10000, Root: "/", TotalTimeout: 2 * time.Minute}},
		{name: "check selection without analyze", args: []string{"collect", "--only", "service-missing"}, err: "--only and --skip select the checks of --analyze"},
		{name: "unknown check", args: []string{"collect", "--analyze", "--only", "service-misisng"}, err: `unknown check "service-misisng"`},
		{name: "negative total timeout", args: []string{"collect", "--total-timeout", "-1s"}, err: "must not be negative"},
		{name: "both outputs", args: []string{"collect", "-o", "x.tgz", "--dir", "d"}, err: "-o and --dir cannot be used together"},
		{name: "map without redact", args: []string{"collect", "--redact-map", "m.json"}, err: "need --redact"},
		{name: "force without redact", args: []string{"collect", "--force"}, err: "need --redact"},
		{name: "arguments", args: []string{"collect", "extra"}, err: "unknown command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			io, _, errOut := Test()
			f := &Factory{IO: io, Version: "v0.1.0-test"}
			var got *CollectOptions
			root := NewRootCmd(f)
			for _, c := range root.Commands() {
				if c.Name() == "collect" {
					root.RemoveCommand(c)
				}
			}
			root.AddCommand(NewCmdCollect(f, func(o *CollectOptions) error { got = o; return nil }))
			root.SetArgs(tc.args)
			root.SetOut(io.Out)
			root.SetErr(io.ErrOut)
			err := root.Execute()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q (stderr %s)", err, tc.err, errOut)
				}
				if exitCode(err) != exitInput {
					t.Errorf("exit code %d for a usage error", exitCode(err))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			w := tc.want
			if got.Output != w.Output || got.Dir != w.Dir || got.Kubeconfig != w.Kubeconfig || got.Redact != w.Redact ||
				got.RedactMap != w.RedactMap || got.Timeout != w.Timeout || got.ConntrackSample != w.ConntrackSample ||
				got.LogLines != w.LogLines || got.Root != w.Root || got.Tool.Version != "v0.1.0-test" ||
				got.TotalTimeout != w.TotalTimeout || got.Force != w.Force ||
				strings.Join(got.Only, ",") != strings.Join(w.Only, ",") || strings.Join(got.Skip, ",") != strings.Join(w.Skip, ",") {
				t.Errorf("options %+v, want %+v", *got, w)
			}
		})
	}
}

func TestProgressLine(t *testing.T) {
	io, _, errOut := Test()
	_ = io
	p := newProgress(errOut, false)
	p.line(sourceForTest("ipvsadm", "skipped", "IPVS is not loaded"))
	p.line(sourceForTest("iptables-nft-save", "ok", ""))
	got := errOut.String()
	if !strings.Contains(got, "skip ipvsadm") || !strings.Contains(got, "IPVS is not loaded") || !strings.Contains(got, "ok   iptables-nft-save") || !strings.Contains(got, "node/x.txt 2.0 KiB") {
		t.Errorf("progress lines:\n%s", got)
	}
}

func sourceForTest(name, status, err string) manifest.Source {
	s := manifest.Source{Name: name, Status: status, Error: err, DurationMS: 3}
	if err == "" {
		s.File, s.Bytes = "node/x.txt", 2048
	}
	return s
}

// TestRedactionMapFile writes the redaction map, which holds the key, at
// paths an attacker could prepare: a symbolic link is never followed, an
// existing file is replaced only with --force, and the map is always
// mode 0600.
func TestRedactionMapFile(t *testing.T) {
	secret := []byte(`{"key":"k"}` + "\n")
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, dir, path string)
		force   bool
		err     string
	}{
		{name: "new file", prepare: func(t *testing.T, dir, path string) {}},
		{name: "existing file", prepare: func(t *testing.T, dir, path string) { writeMode(t, path, "old", 0o644) }, err: "exists: refused (--force"},
		{name: "existing world-readable file with force", force: true, prepare: func(t *testing.T, dir, path string) { writeMode(t, path, "old", 0o644) }},
		{name: "symbolic link", prepare: func(t *testing.T, dir, path string) {
			writeMode(t, filepath.Join(dir, "target"), "target", 0o644)
			symlink(t, "target", path)
		}, err: "symbolic link"},
		{name: "symbolic link with force", force: true, prepare: func(t *testing.T, dir, path string) {
			writeMode(t, filepath.Join(dir, "target"), "target", 0o644)
			symlink(t, "target", path)
		}, err: "even with --force"},
		{name: "dangling symbolic link with force", force: true, prepare: func(t *testing.T, dir, path string) {
			symlink(t, "target", path)
		}, err: "symbolic link"},
		{name: "directory", force: true, prepare: func(t *testing.T, dir, path string) {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}, err: "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "map.json")
			tc.prepare(t, dir, path)
			before, _ := os.ReadFile(filepath.Join(dir, "target"))
			// The flag is checked before collecting, and again on writing.
			_, cerr := redactor(&CollectOptions{RedactMap: path, Force: tc.force})
			err := writeSecret(path, secret, tc.force)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("writeSecret: %v, want %q", err, tc.err)
				}
				if cerr == nil || !strings.Contains(cerr.Error(), tc.err) || exitCode(cerr) != exitInput {
					t.Errorf("--redact-map check: %v, want %q as a usage error", cerr, tc.err)
				}
				if after, _ := os.ReadFile(filepath.Join(dir, "target")); !bytes.Equal(after, before) {
					t.Errorf("the link's target was written: %q", after)
				}
				if _, err := os.Lstat(filepath.Join(dir, "target")); err == nil && before == nil {
					t.Errorf("a dangling link's target was created")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			st, err := os.Lstat(path)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode() != 0o600 {
				t.Errorf("mode %v, want -rw-------", st.Mode())
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, secret) {
				t.Errorf("content %q", got)
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != 1 {
				t.Errorf("left in the directory: %v", ents)
			}
		})
	}
}

func writeMode(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, path string) {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}
