package collect

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAnalyzeHook: Options.Analyze runs on the collected files with their
// manifest, what it adds goes into the bundle (a report right after
// manifest.json in an archive), and its error leaves the bundle written.
func TestAnalyzeHook(t *testing.T) {
	root := fakeNode(t, "127.0.0.1:1", "127.0.0.1:1")
	dir := t.TempDir()
	now := time.Date(2026, 3, 2, 8, 15, 0, 0, time.UTC)
	analyze := func(d string) error {
		if _, err := os.Stat(filepath.Join(d, "manifest.json")); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(d, NodeReportFile), []byte(`{"kind":"proxyscan-node-report"}`), 0o600)
	}
	out := filepath.Join(dir, "node.tgz")
	res, err := Run(context.Background(), Options{Root: root, Output: out, Sources: pick("sysctl", "kube-proxy-cmdline"), Now: func() time.Time { return now }, Analyze: analyze})
	if err != nil || res.AnalyzeErr != nil {
		t.Fatal(err, res.AnalyzeErr)
	}
	names := tarNames(t, out)
	top := "proxyscan-Worker-1-20260302T081500Z/"
	if len(names) < 3 || names[1] != top+"manifest.json" || names[2] != top+NodeReportFile {
		t.Errorf("archive entries %v: want manifest.json, then %s", names, NodeReportFile)
	}
	d := filepath.Join(dir, "node")
	if _, err := Run(context.Background(), Options{Root: root, Dir: d, Sources: pick("sysctl"), Analyze: analyze}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(d, NodeReportFile)); err != nil {
		t.Errorf("--dir: %v", err)
	}
	failing := filepath.Join(dir, "failing.tgz")
	res, err = Run(context.Background(), Options{Root: root, Output: failing, Sources: pick("sysctl"), Analyze: func(string) error { return errors.New("boom") }})
	if err != nil || res.AnalyzeErr == nil || res.AnalyzeErr.Error() != "boom" {
		t.Fatalf("a failing analysis: %v, %v", err, res.AnalyzeErr)
	}
	if names := tarNames(t, failing); len(names) == 0 || strings.Contains(strings.Join(names, " "), NodeReportFile) {
		t.Errorf("a failing analysis: archive entries %v", names)
	}
}
