package cmd

import (
	"os"
	"path/filepath"
	"testing"
)

// TestErrorsNameTheInput: an error of a diff names the side it is of,
// whichever order the sides are given in (the file of a bundle with the
// bundle's path, as in a fleet), and one of analyze, trace or expect of a
// single bundle (archive or directory) names the bundle alike; a directory given that holds no file is
// named: alone (or as a side of diff) an input error, beside other PATHs
// an input not read, and the verdict says so.
func TestErrorsNameTheInput(t *testing.T) {
	good := packDir(t, copyBundle(t, "iptables-mini"), "tgz")
	bad := packDir(t, changedBundle(t, "iptables-mini", map[string]string{"node/sysctl.txt": "net.ipv4.ip_forward = 1\nthis is garbage\n"}), "tgz")
	badDir := changedBundle(t, "iptables-mini", map[string]string{"node/sysctl.txt": "net.ipv4.ip_forward = 1\nthis is garbage\n"})
	badCM := packDir(t, changedBundle(t, "iptables-mini", map[string]string{"cluster/kube-proxy-configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kube-proxy\n  namespace: kube-system\ndata:\n  config.conf: |\n    apiVersion: kubeproxy.config.k8s.io/v1alpha1\n    kind: KubeProxyConfiguration\n    mode: [iptables\n"}), "tgz")
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string
	}{
		{name: "diff, the bad side new", args: []string{"diff", "-o", "json", good, bad}, code: 2, stderr: "proxyscan: " + bad + "/node/sysctl.txt:2: not a sysctl entry"},
		{name: "diff, the bad side old", args: []string{"diff", "-o", "json", bad, good}, code: 2, stderr: "proxyscan: " + bad + "/node/sysctl.txt:2: not a sysctl entry"},
		{name: "analyze of a bundle archive", args: []string{"analyze", "-o", "json", bad}, code: 2, stderr: "proxyscan: " + bad + "/node/sysctl.txt:2: not a sysctl entry"},
		{name: "analyze of a bundle directory", args: []string{"analyze", "-o", "json", badDir}, code: 2, stderr: "proxyscan: " + badDir + "/node/sysctl.txt:2: not a sysctl entry"},
		{name: "analyze --service of a bundle", args: []string{"analyze", "-o", "json", "--service", "default/kubernetes", bad}, code: 2, stderr: "proxyscan: " + bad + "/node/sysctl.txt:2: not a sysctl entry"},
		{name: "trace of a bundle archive", args: []string{"trace", "-o", "json", "--strict", bad, "--dst", "10.96.0.1:443"}, code: 2, stderr: "proxyscan: " + bad + "/node/sysctl.txt:2: not a sysctl entry"},
		{name: "trace of a bundle directory", args: []string{"trace", "-o", "json", "--strict", badDir, "--dst", "10.96.0.1:443"}, code: 2, stderr: "proxyscan: " + badDir + "/node/sysctl.txt:2: not a sysctl entry"},
		{name: "expect of a bundle archive", args: []string{"expect", bad}, code: 2, stderr: "proxyscan: " + bad + "/node/sysctl.txt:2: not a sysctl entry"},
		{name: "analyze of a bundle whose ConfigMap's configuration is malformed", args: []string{"analyze", "-o", "json", badCM}, code: 2,
			stderr: "proxyscan: " + badCM + "/cluster/kube-proxy-configmap.yaml:10: in config.conf of the kube-proxy ConfigMap: malformed YAML"},
		{name: "an empty directory alone", args: []string{"analyze", "-o", "json", empty}, code: 2, stderr: "proxyscan: " + empty + ": no input files: the directory holds none"},
		{name: "diff with an empty side", args: []string{"diff", "-o", "json", empty, good}, code: 2, stderr: "proxyscan: " + empty + ": no input files"},
		{name: "an empty directory beside a bundle", args: []string{"analyze", "-o", "json", "--fail-on", "inconclusive", empty, good}, code: 1,
			stdout: empty + " was not read: an empty directory: it holds no file (hidden ones aside)"},
	} {
		t.Run(tc.name, func(t *testing.T) { checkCLI(t, tc.args, tc.code, tc.stdout, tc.stderr) })
	}
}
