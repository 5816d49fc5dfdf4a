package load

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestStreamedLogsSameSnapshots loads every bundle of the testdata, and
// every file of it that reads as a kube-proxy log given alone, with the
// logs parsed as they are read and parsed once read whole, and checks
// that the snapshots, or the errors, are the same.
func TestStreamedLogsSameSnapshots(t *testing.T) {
	sameSnapshots(t, "streamed", "read whole", func(on bool) { streamLogs = !on })
	root := filepath.Join(parsetest.Root(t), "testdata")
	var logs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if len(data) < 1<<20 && parsers.Detect(data) == parsers.KindLog {
			logs = append(logs, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) < 5 {
		t.Fatalf("only %d logs in the testdata", len(logs))
	}
	for _, p := range logs {
		sameLoad(t, p)
	}
}

// sameLoad loads the paths with the logs parsed as they are read and
// read whole first, and checks that the snapshots, or the errors, are
// the same.
func sameLoad(t *testing.T, paths ...string) {
	t.Helper()
	got, gerr := Load(paths, Options{})
	streamLogs = false
	want, werr := Load(paths, Options{})
	streamLogs = true
	if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
		t.Errorf("%s: streamed: %v; read whole: %v", paths, gerr, werr)
	} else if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: streamed and whole logs give different snapshots", paths)
	}
}

// TestStreamedLogsDamaged: a log on disk, plain or compressed, or in an
// archive (read again from it as it is parsed), whose text is not read as
// it is (paste damage below its head, a NUL byte, a byte
// order mark further on, a line over the limit, no log line past a
// klog-looking head) loads as when read whole.
func TestStreamedLogsDamaged(t *testing.T) {
	line := "I1205 10:00:00.000000       1 proxier.go:805] \"Syncing iptables rules\"\n"
	failed := "E1205 10:00:01.000000       1 proxier.go:1520] \"Failed to execute iptables-restore\" err=<\n\texit status 1: iptables-restore: line 4 failed\n > ipFamily=\"IPv4\"\n"
	body := strings.Repeat(line, 3000) + failed + strings.Repeat(line, 3)
	cases := map[string]string{
		"clean.log":       body,
		"prompt-end.log":  body + "$ journalctl -u kubelet\n" + line,
		"prompt-mid.log":  body + "root@node-1:~# kubectl logs kube-proxy-x\n" + body,
		"fence.log":       body + "```\n",
		"nul.log":         body + "x\x00y\n" + line,
		"bom.log":         "\ufeff" + body,
		"bom-mid.log":     body + "\ufeff" + line,
		"crlf.log":        strings.ReplaceAll(body, "\n", "\r\n"),
		"cut.log":         body + strings.TrimSuffix(line, "\n"),
		"long.log":        body + strings.Repeat("y", 1<<20+1) + "\n" + line,
		"quote.log":       body + "> " + line,
		"cut-by-tty.log":  body + "I1205 10:00:00.000000       1 proxier.go:805] \"Syncing ipt…\n",
		"kubelet.log":     strings.ReplaceAll(body, "I1205 ", "Dec 05 10:00:00 node-1 kubelet[812]: I1205 "),
		"two-hosts.log":   strings.ReplaceAll(body[:len(body)/2], "I1205 ", "Dec 05 10:00:00 node-1 kube-proxy[8]: I1205 ") + strings.ReplaceAll(body[len(body)/2:], "I1205 ", "Dec 05 10:00:00 node-2 kube-proxy[8]: I1205 "),
		"trailing-blanks": strings.ReplaceAll(body, "\n", "  \n"),
	}
	var mu sync.Mutex
	streamed := map[string]bool{}
	logStreamed = func(name string) {
		mu.Lock()
		defer mu.Unlock()
		streamed[filepath.Base(name)] = true
	}
	defer func() { logStreamed = nil }()
	defer func(m int64) { streamMemberMin = m }(streamMemberMin)
	streamMemberMin = 1
	dir := t.TempDir()
	for name, text := range cases {
		p := writeFile(t, dir, name, []byte(text))
		sameLoad(t, p)
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(text))
		zw.Close()
		sameLoad(t, writeFile(t, dir, name+".gz", b.Bytes()))
		// In a bundle, read strictly.
		bundle := filepath.Join(dir, "bundle-"+name)
		writeFile(t, filepath.Join(bundle, "kube-proxy"), "log.txt", []byte(text))
		writeFile(t, filepath.Join(bundle, "node"), "iptables-save.txt", []byte(miniDump))
		writeFile(t, bundle, "manifest.json", []byte(`{"schema": 1, "collected_at": "2026-03-02T09:15:00Z", "sources": []}`))
		sameLoad(t, bundle)
		// In archives: a bundle .tgz, read strictly, a .zip and a
		// .tar.zst of loose files, read leniently.
		sameLoad(t, writeFile(t, dir, name+".tgz", archive(t,
			entry{name: "manifest.json", body: `{"schema": 1, "collected_at": "2026-03-02T09:15:00Z", "sources": []}`},
			entry{name: "node/iptables-save.txt", body: miniDump},
			entry{name: "kube-proxy/tgz-" + name, body: text})))
		var z bytes.Buffer
		zw2 := zip.NewWriter(&z)
		w, _ := zw2.Create("kube-proxy/zip-" + name)
		w.Write([]byte(text))
		zw2.Close()
		sameLoad(t, writeFile(t, dir, name+".zip", z.Bytes()))
		sameLoad(t, writeFile(t, dir, name+".tar.zst", compress(t, formatZstd, plainTar(t, entry{name: "zst-" + name, body: text}))))
	}
	// Those whose text reads as it is were read as they were parsed
	// (not only read whole, to the same snapshots).
	for _, name := range []string{"clean.log", "clean.log.gz", "cut.log.gz", "log.txt", "bom.log", "crlf.log", "cut-by-tty.log", "kubelet.log", "two-hosts.log", "trailing-blanks",
		"tgz-clean.log", "tgz-crlf.log", "zip-clean.log", "zip-bom.log", "zip-kubelet.log", "zst-clean.log", "zst-cut.log"} {
		if !streamed[name] {
			t.Errorf("%s was not read as it was parsed", name)
		}
	}
	for _, name := range []string{"prompt-end.log", "fence.log", "nul.log", "long.log", "quote.log", "prompt-end.log.gz", "nul.log.gz",
		"tgz-nul.log", "zip-prompt-end.log", "zip-nul.log", "zst-fence.log", "zst-long.log"} {
		if streamed[name] {
			t.Errorf("%s was read as it was parsed", name)
		}
	}
}
