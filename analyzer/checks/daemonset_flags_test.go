package checks_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestDaemonSetFlags: with no command line of the process in the inputs,
// kube-proxy's DaemonSet says how it runs. One whose container passes no
// --config runs kube-proxy with its flags (--proxy-mode=ipvs), not with
// the ConfigMap exported (mode iptables): the mode is the flags', the
// notes say where it comes from and that the ConfigMap is not read, and
// the IPVS data plane is no mode mismatch. With --config (kubeadm's
// DaemonSet) the ConfigMap stays the configuration, unless the process's
// own command line, which passes none, says otherwise.
func TestDaemonSetFlags(t *testing.T) {
	root := filepath.Join(parsetest.Root(t), "testdata", "bundles", "ipvs-healthy-mini")
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	cm := strings.Replace(read("cluster/kube-proxy-configmap.yaml"), "mode: ipvs", "mode: iptables", 1)
	ds := read("cluster/kube-proxy.yaml")
	const config = "- --config=/var/lib/kube-proxy/config.conf"
	if !strings.Contains(ds, config) || cm == read("cluster/kube-proxy-configmap.yaml") {
		t.Fatal("the bundle's DaemonSet or ConfigMap changed: edit this test")
	}
	for _, tc := range []struct {
		name, ds, source, mode string
		notes                  []string
		mismatch               bool
		// cmdline is kube-proxy/cmdline.txt, as collect copies it.
		cmdline string
	}{
		{"flags only", strings.Replace(ds, config, "- --proxy-mode=ipvs", 1), "command line of DaemonSet kube-system/kube-proxy", "ipvs",
			[]string{"kube-proxy's flags read from the command and args of container kube-proxy of DaemonSet kube-system/kube-proxy (cluster/kube-proxy.yaml:",
				"left out, as their values come from the pod's environment: --hostname-override=$(NODE_NAME)",
				"the command line of DaemonSet kube-system/kube-proxy passes no --config: kube-proxy does not read ConfigMap kube-system/kube-proxy (cluster/kube-proxy-configmap.yaml:"},
			false, ""},
		{"kubeadm's, with --config", ds, "ConfigMap kube-system/kube-proxy", "iptables", nil, true, ""},
		{"the process's command line, without --config", ds, "command line", "ipvs",
			[]string{"the command line passes no --config: kube-proxy does not read ConfigMap kube-system/kube-proxy (cluster/kube-proxy-configmap.yaml:"},
			false, "/usr/local/bin/kube-proxy\x00--proxy-mode=ipvs\x00--hostname-override=worker-1\x00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			parsetest.CopyTree(t, root, dir, func(rel string, _ []byte) bool { return rel != "kube-proxy/config.yaml" && rel != "kube-proxy/log.txt" })
			files := map[string]string{"cluster/kube-proxy-configmap.yaml": cm, "cluster/kube-proxy.yaml": tc.ds}
			if tc.cmdline != "" {
				files["kube-proxy/cmdline.txt"] = tc.cmdline
			}
			for rel, body := range files {
				if err := os.WriteFile(filepath.Join(dir, rel), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			snaps, err := load.Load([]string{dir}, load.Options{})
			if err != nil {
				t.Fatal(err)
			}
			s := snaps[0]
			if s.Config == nil || s.Config.Source != tc.source || s.Config.EffectiveMode() != tc.mode {
				t.Fatalf("configuration %+v, want from %s with mode %s", s.Config, tc.source, tc.mode)
			}
			notes := strings.Join(s.Notes, "\n")
			for _, n := range tc.notes {
				if !strings.Contains(notes, n) {
					t.Errorf("notes:\n%s\nwant %q", notes, n)
				}
			}
			if tc.name != "flags only" && strings.Contains(notes, "DaemonSet") {
				t.Errorf("notes:\n%s\nwant none of the DaemonSet", notes)
			}
			mismatch := false
			for _, f := range checks.Run(s, checks.All).Findings {
				mismatch = mismatch || f.Check == "mode-mismatch"
			}
			if mismatch != tc.mismatch {
				t.Errorf("mode-mismatch reported %t, want %t", mismatch, tc.mismatch)
			}
		})
	}
}
