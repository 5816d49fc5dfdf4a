package load

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestLogged checks what the loader takes from kube-proxy's logs when no
// other input gives it: the version of its last start ("Version info", or
// "Version:" before structured logging), unless a version file is read,
// and the command line k3s logs for its embedded kube-proxy, unless one is
// read; the flags' positions are the log line's.
func TestLogged(t *testing.T) {
	const k3s = `Dec 04 10:00:01 east-w2 k3s[1234]: time="2026-12-04T10:00:01Z" level=info msg="Running kube-proxy --cluster-cidr=10.88.0.0/16 --hostname-override=east-w2 --proxy-mode=ipvs --ipvs-scheduler=sh"` + "\n"
	const started = `I1204 09:00:02.123456    1234 server.go:487] "Version info" version="v1.29.3"
I1204 10:00:02.123456    4321 server.go:487] "Version info" version="v1.31.4+k3s1"
`
	const old = "I0302 08:15:00.123456       1 server.go:650] Version: v1.20.4\n"
	for _, tc := range []struct {
		name        string
		log         string
		keepVersion bool   // the bundle's kube-proxy/version.txt is read
		version     string // minor read
		scheduler   string // ipvs.scheduler of the effective configuration
		flagAt      string // position of the scheduler flag
	}{
		{name: "k3s start", log: k3s + started, version: "1.31", scheduler: "sh", flagAt: "kube-proxy.log:1"},
		{name: "klog before structured logging", log: old, version: "1.20"},
		{name: "a version file first", log: k3s + started, keepVersion: true, version: "1.37", scheduler: "sh", flagAt: "kube-proxy.log:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(parsetest.Root(t), "testdata", "bundles", "ipvs-healthy")
			parsetest.CopyTree(t, src, dir, func(rel string, _ []byte) bool {
				return strings.HasPrefix(rel, "node/") || rel == "cluster/cluster.yaml" || tc.keepVersion && rel == "kube-proxy/version.txt"
			})
			if err := os.WriteFile(filepath.Join(dir, "kube-proxy.log"), []byte(tc.log), 0o644); err != nil {
				t.Fatal(err)
			}
			snaps, err := Load([]string{dir}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			s := snaps[0]
			if got := s.Version.Version.MinorString(); got != tc.version {
				t.Errorf("version %s (%s), want %s", got, s.Version.Source, tc.version)
			}
			if tc.scheduler == "" {
				if s.Config != nil && s.Config.Flags != nil {
					t.Errorf("flags read from a log without a command line: %+v", s.Config.Flags)
				}
				return
			}
			if s.Config == nil || s.Config.KubeProxyConfiguration == nil {
				t.Fatalf("no configuration; notes %q", s.Notes)
			}
			if got := s.Config.IPVS.Scheduler; got != tc.scheduler {
				t.Errorf("scheduler %q, want %q", got, tc.scheduler)
			}
			if got := s.Config.FieldPos("ipvs.scheduler").String(); got != tc.flagAt {
				t.Errorf("ipvs.scheduler set at %s, want %s", got, tc.flagAt)
			}
		})
	}
}
