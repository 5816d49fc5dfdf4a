package cmd

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"

	"github.com/proxyscan/proxyscan/parsers/manifest"
)

// changedBundle copies a testdata bundle into a temporary directory, with
// the files of changes written over it ("" removes a file).
func changedBundle(t *testing.T, name string, changes map[string]string) string {
	t.Helper()
	dst := copyBundle(t, name)
	for rel, content := range changes {
		if content == "" {
			if err := os.Remove(filepath.Join(dst, rel)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := writeBundleFile(dst, rel, []byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func writeBundleFile(dir, rel string, data []byte) error {
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o644)
}

// packDir writes the files of dir as an archive of the given format (tar,
// tgz, txz or zip) and returns its path.
func packDir(t *testing.T, dir, format string) string {
	t.Helper()
	var raw bytes.Buffer
	var zw *zip.Writer
	var tw *tar.Writer
	if format == "zip" {
		zw = zip.NewWriter(&raw)
	} else {
		tw = tar.NewWriter(&raw)
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if zw != nil {
			w, err := zw.Create(filepath.ToSlash(rel))
			if err != nil {
				return err
			}
			_, err = w.Write(data)
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if zw != nil {
		err = zw.Close()
	} else {
		err = tw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	switch format {
	case "tgz":
		gw := gzip.NewWriter(&out)
		_, _ = io.Copy(gw, &raw)
		err = gw.Close()
	case "txz":
		xw, xerr := xz.NewWriter(&out)
		if xerr != nil {
			t.Fatal(xerr)
		}
		_, _ = io.Copy(xw, &raw)
		err = xw.Close()
	case "tzst":
		zw, zerr := zstd.NewWriter(&out)
		if zerr != nil {
			t.Fatal(zerr)
		}
		_, _ = io.Copy(zw, &raw)
		err = zw.Close()
	default:
		out = raw
	}
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "bundle."+format)
	if err := os.WriteFile(p, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// utf16Text encodes s in UTF-16, little-endian unless be, with a byte
// order mark when bom.
func utf16Text(s string, be, bom bool) string {
	var order binary.AppendByteOrder = binary.LittleEndian
	if be {
		order = binary.BigEndian
	}
	var out []byte
	if bom {
		out = order.AppendUint16(out, 0xfeff)
	}
	for _, u := range utf16.Encode([]rune(s)) {
		out = order.AppendUint16(out, u)
	}
	return string(out)
}

// TestUnreadInputs checks that nothing that was not read ends in a green
// verdict: a file named on the command line that is binary, empty, blank
// or of no kind, or a file of a bundle at a place of its layout that is,
// makes the verdict inconclusive, naming it and why; UTF-16 is decoded;
// archives of every format are read; an empty dump of the node's mode is
// a data plane without rules.
func TestUnreadInputs(t *testing.T) {
	mini := testdata(t, "bundles", "iptables-mini")
	dump, err := os.ReadFile(filepath.Join(mini, "node", "iptables-save.txt"))
	if err != nil {
		t.Fatal(err)
	}
	journal := "Dec 04 09:12:01 node-7 kube-proxy[2211]: I1204 09:12:01.123456    2211 server_linux.go:185] \"Using ipvs Proxier\"\n" +
		"Dec 04 09:12:02 node-7 kube-proxy[2211]: E1204 09:12:02.223456    2211 proxier.go:1520] \"Failed to execute iptables-restore\" err=\"exit status 1 (iptables-restore: line 7 failed\\n)\"\n"
	comments := strings.Repeat("# a note pasted above the dump, longer than the head that is looked at\n", 1200)
	for _, tc := range []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string
	}{
		{name: "binary file named", args: []string{mini, writeTemp(t, "dump.bin", "*nat\x00\x01\x02")},
			stdout: `"verdict": "inconclusive"`, stderr: ""},
		{name: "binary file named says why", args: []string{mini, writeTemp(t, "dump.bin", "*nat\x00\x01\x02")},
			stdout: `dump.bin was not read: binary: a NUL byte at offset 4`},
		{name: "binary file fails on inconclusive", args: []string{mini, writeTemp(t, "dump.bin", "\x00\x01"), "--fail-on", "inconclusive"},
			code: 1, stdout: `"verdict": "inconclusive"`},
		{name: "empty file named", args: []string{mini, writeTemp(t, "iptables-save.txt", "")}, stdout: `iptables-save.txt was not read: empty file`},
		{name: "blank file named", args: []string{mini, writeTemp(t, "iptables-save.txt", "\n  \n\t\n")}, stdout: `iptables-save.txt was not read: only blank lines`},
		{name: "text of no kind named", args: []string{mini, writeTemp(t, "notes.txt", "the service is down since Tuesday\n")}, stdout: `notes.txt was not read: kind not recognised`},
		{name: "kubectl table named", args: []string{mini, writeTemp(t, "svc.txt", "$ kubectl get svc -A\nNAMESPACE   NAME         TYPE        CLUSTER-IP   EXTERNAL-IP   PORT(S)   AGE\ndefault     kubernetes   ClusterIP   10.96.0.1    <none>        443/TCP   41d\n")},
			stdout: `svc.txt was not read: kind not recognised: a kubectl table holds no objects; export them with kubectl get -o yaml`},
		{name: "kubectl describe service named", args: []string{mini, writeTemp(t, "svc.txt", "$ kubectl describe svc -n shop cart\nName:              cart\nNamespace:         shop\nIP:                10.96.44.12\nEndpoints:         10.244.1.5:8080\n")},
			stdout: `svc.txt was not read: kind not recognised: kubectl describe output holds no objects; export them with kubectl get -o yaml`},
		{name: "a log alone: the mode it logs, and the dump of that mode is asked for", args: []string{writeTemp(t, "journal.txt", journal)},
			code: 1, stdout: `"modeSource": "logged by kube-proxy (\"Using ipvs Proxier\" at `},
		{name: "a log alone asks for the dump of the mode it logs", args: []string{writeTemp(t, "journal.txt", journal)},
			code: 1, stdout: `"command": "ipvsadm -Sn > ipvsadm-save.txt;`},
		{name: "invalid UTF-8 named", args: []string{mini, writeTemp(t, "x.txt", "\xff\xfd\xfa garbage\n")}, stdout: `x.txt was not read: not text: invalid UTF-8`},
		{name: "only kubectl tables and describe: what to export instead", args: []string{
			writeTemp(t, "svc.txt", "$ kubectl get svc -A\nNAMESPACE   NAME         TYPE        CLUSTER-IP   EXTERNAL-IP   PORT(S)   AGE\ndefault     kubernetes   ClusterIP   10.96.0.1    <none>        443/TCP   41d\n"),
			writeTemp(t, "cart.txt", "$ kubectl describe svc -n shop cart\nName:              cart\nNamespace:         shop\nIP:                10.96.44.12\nEndpoints:         10.244.1.5:8080\n")},
			code: 2, stderr: "/cart.txt: kubectl describe output holds no objects; export them with kubectl get -o yaml\n"},
		{name: "only a kubectl table: what to export instead", args: []string{
			writeTemp(t, "svc.txt", "$ kubectl get svc -A\nNAMESPACE   NAME         TYPE        CLUSTER-IP   EXTERNAL-IP   PORT(S)   AGE\ndefault     kubernetes   ClusterIP   10.96.0.1    <none>        443/TCP   41d\n")},
			code: 2, stderr: "/svc.txt: a kubectl table holds no objects; export them with kubectl get -o yaml\n"},
		{name: "only an empty file", args: []string{writeTemp(t, "iptables-save.txt", "")}, code: 2, stderr: "nothing in these inputs is kube-proxy data: "},
		{name: "only a binary file", args: []string{writeTemp(t, "x.bin", "\x00\x00")}, code: 2, stderr: "x.bin is of no kind proxyscan reads"},
		{name: "UTF-16LE with BOM", args: []string{writeTemp(t, "d16.txt", utf16Text(string(dump), false, true))}, stdout: `"encoding": "UTF-16LE"`},
		{name: "UTF-16LE read as a dump", args: []string{writeTemp(t, "d16.txt", utf16Text(string(dump), false, false))}, stdout: `"kind": "iptables-save"`},
		{name: "UTF-16BE without BOM", args: []string{writeTemp(t, "d16.txt", utf16Text(string(dump), true, false))}, stdout: `"encoding": "UTF-16BE"`},
		{name: "gzip-compressed dump", args: []string{writeTemp(t, "iptables-save.txt.gz", gzipText(t, string(dump)))}, stdout: `"note": "decompressed from gzip",
      "compression": "gzip"`},
		{name: "gzip-compressed dump read as a dump", args: []string{writeTemp(t, "iptables-save.txt.gz", gzipText(t, string(dump)))}, stdout: `"kind": "iptables-save"`},
		{name: "comments past the head", args: []string{writeTemp(t, "commented.txt", comments+string(dump))}, stdout: `"kind": "iptables-save"`},
		{name: "comments past the head of an archive member", args: []string{packDir(t, changedBundle(t, "iptables-mini", map[string]string{"node/iptables-save.txt": comments + string(dump)}), "tgz"), "--fail-on", "inconclusive"},
			stdout: `"verdict": "ok"`},
		{name: "tar bundle", args: []string{packDir(t, mini, "tar"), "--fail-on", "inconclusive"}, stdout: `"verdict": "ok"`},
		{name: "tar.xz bundle", args: []string{packDir(t, mini, "txz"), "--fail-on", "inconclusive"}, stdout: `"verdict": "ok"`},
		{name: "zip bundle", args: []string{packDir(t, mini, "zip"), "--fail-on", "inconclusive"}, stdout: `"verdict": "ok"`},
		{name: "xz with a 4 GiB dictionary", args: []string{writeTemp(t, "evil.txz", "\xfd7zXZ\x00\x00\x04\xe6\xd6\xb4\x46\x02\x00\x21\x01\x28\x00\x00\x00\x00\x00\x00\x00")},
			code: 2, stderr: "evil.txz: an xz archive whose first block is not LZMA2 with a dictionary of at most 64 MiB"},
		{name: "tar.zst bundle", args: []string{packDir(t, mini, "tzst"), "--fail-on", "inconclusive"}, stdout: `"verdict": "ok"`},
		{name: "tar.bz2 bundle", args: []string{testdata(t, "compressed", "bundle.tar.bz2")}, code: 1, stdout: `"path": "kube-proxy/kube-proxy.log"`},
		{name: "bzip2 bundle cut short", args: []string{writeTemp(t, "b.tar.bz2", "BZh91AY&SY garbage")}, code: 2, stderr: "b.tar.bz2: corrupt or truncated archive after 0 files"},
		{name: "zstd with a 256 MiB window", args: []string{writeTemp(t, "evil.tar.zst", "\x28\xb5\x2f\xfd\x00\x90\x01\x00\x00")},
			code: 2, stderr: "evil.tar.zst: a zstd archive whose window is 256 MiB, over the 128 MiB"},
		{name: "binary dump in a bundle", args: []string{changedBundle(t, "iptables-mini", map[string]string{"node/iptables-save.txt": "\x00\x01garbage"})},
			stdout: `node/iptables-save.txt was not read: binary: a NUL byte at offset 0 (the bundle layout holds iptables-save here)`},
		{name: "NUL inside a rule of a dump in a bundle", args: []string{changedBundle(t, "iptables-mini", map[string]string{"node/iptables-save.txt": strings.Replace(string(dump), "kubernetes service portals", "kubernetes service\x00portals", 1)})},
			stdout: `"unread": "binary: a NUL byte at offset `},
		{name: "NUL inside a rule makes the verdict inconclusive", args: []string{changedBundle(t, "iptables-mini", map[string]string{"node/iptables-save.txt": strings.Replace(string(dump), "kubernetes service portals", "kubernetes service\x00portals", 1)})},
			stdout: `"verdict": "inconclusive"`},
		{name: "unrelated file in a bundle", args: []string{changedBundle(t, "iptables-mini", map[string]string{"README": "notes\n"}), "--fail-on", "inconclusive"}, stdout: `"verdict": "ok"`},
		{name: "empty dump of the mode", args: []string{changedBundle(t, "iptables-mini", map[string]string{"node/iptables-save.txt": " "})},
			code: 1, stdout: `"check": "service-missing"`},
		{name: "comments-only dump of the mode", args: []string{changedBundle(t, "iptables-mini", map[string]string{"node/iptables-save.txt": "# Generated by iptables-save v1.8.9\n"})},
			code: 1, stdout: `"check": "service-missing"`},
		{name: "empty nft ruleset of the nftables mode", args: []string{changedBundle(t, "nftables-healthy", map[string]string{"node/nft-ruleset.txt": " ", "node/nft-ruleset.json": ""})},
			code: 1, stdout: `"text": "table ip kube-proxy (no service-ips map)"`},
		{name: "tables without kube-proxy chains", args: []string{changedBundle(t, "iptables-mini", map[string]string{"node/iptables-save.txt": "*nat\n:PREROUTING ACCEPT [0:0]\nCOMMIT\n*filter\n:INPUT ACCEPT [0:0]\nCOMMIT\n"})},
			code: 1, stdout: `"check": "service-missing"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkCLI(t, append([]string{"analyze", "-o", "json"}, tc.args...), tc.code, tc.stdout, tc.stderr)
		})
	}
}

// collectedBundle returns a copy of the iptables-mini bundle with a
// manifest.json listing its files as collect does (sizes and SHA-256),
// after edit changed the manifest and the files.
func collectedBundle(t *testing.T, edit func(m *manifest.Manifest, dir string)) string {
	t.Helper()
	dir := copyBundle(t, "iptables-mini")
	m := &manifest.Manifest{Schema: manifest.Schema, Tool: manifest.Tool{Name: "proxyscan", Version: "v0.0.0-test"}, Host: "node-a",
		CollectedAt: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	names := map[string]string{
		"node/iptables-save.txt": "iptables-nft-save", "node/ip-addr.txt": "ip-addr", "kube-proxy/version.txt": "kube-proxy-version",
		"kube-proxy/config.yaml": "kube-proxy-config", "cluster/cluster.yaml": "cluster-services",
		"cluster/kube-proxy-configmap.yaml": "cluster-kube-proxy-configmap", "cluster/node.yaml": "cluster-node",
	}
	var files []string
	for f := range names {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		m.Sources = append(m.Sources, manifest.Source{Name: names[f], Method: manifest.MethodFile, Path: "/x", File: f, Status: manifest.StatusOK,
			Bytes: int64(len(data)), SHA256: hex.EncodeToString(sum[:])})
	}
	m.Sources = append(m.Sources, manifest.Source{Name: "ip6tables-nft-save", Method: manifest.MethodExec, Command: []string{"ip6tables-nft-save"}, Status: manifest.StatusOK})
	if edit != nil {
		edit(m, dir)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), manifest.Format(m), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestManifestRead checks that analyze reads a collected bundle's
// manifest: files that do not match it are an input error, failed sources
// are reported and a failed rule dump makes the verdict inconclusive, and
// a dump that printed nothing is a data plane without rules.
func TestManifestRead(t *testing.T) {
	source := func(m *manifest.Manifest, name string) *manifest.Source {
		s := m.Source(name)
		if s == nil {
			t.Fatalf("no source %s", name)
		}
		return s
	}
	for _, tc := range []struct {
		name           string
		edit           func(m *manifest.Manifest, dir string)
		code           int
		stdout, stderr string
	}{
		{name: "as collected", stdout: `"verdict": "ok"`},
		{name: "as collected, archived", stdout: `"verdict": "ok"`},
		{name: "a file changed", edit: func(m *manifest.Manifest, dir string) {
			replaceInFile(t, filepath.Join(dir, "node", "iptables-save.txt"), "COMMIT", "COMMIT ")
		}, code: 2, stderr: "node/iptables-save.txt is 16601 bytes, the manifest says 16600"},
		{name: "same size, other content", edit: func(m *manifest.Manifest, dir string) {
			replaceInFile(t, filepath.Join(dir, "node", "iptables-save.txt"), "COMMIT", "COMMIX")
		}, code: 2, stderr: "the SHA-256 of node/iptables-save.txt is"},
		{name: "a file removed", edit: func(m *manifest.Manifest, dir string) {
			if err := os.Remove(filepath.Join(dir, "node", "ip-addr.txt")); err != nil {
				t.Fatal(err)
			}
		}, code: 2, stderr: "source ip-addr wrote node/ip-addr.txt, which is not in the bundle"},
		{name: "says how to read it anyway", edit: func(m *manifest.Manifest, dir string) {
			source(m, "ip-addr").Bytes = 1
		}, code: 2, stderr: "remove its manifest.json to read its files as loose files"},
		{name: "rule dump failed", edit: func(m *manifest.Manifest, dir string) {
			s := source(m, "ip6tables-nft-save")
			s.Status, s.Error = manifest.StatusFailed, "exit status 4: Permission denied (you must be root)"
		}, stdout: `the bundle's ip6tables-nft-save source failed when it was collected: exit status 4: Permission denied`},
		{name: "every rule dump failed", edit: func(m *manifest.Manifest, dir string) {
			for _, name := range []string{"iptables-nft-save", "ip6tables-nft-save"} {
				s := source(m, name)
				s.Status, s.Error, s.File, s.Bytes, s.SHA256 = manifest.StatusFailed, "exit status 4: Permission denied (you must be root)", "", 0, ""
			}
			if err := os.Remove(filepath.Join(dir, "node", "iptables-save.txt")); err != nil {
				t.Fatal(err)
			}
		}, stdout: `"verdict": "inconclusive"`},
		{name: "failed sources are noted", edit: func(m *manifest.Manifest, dir string) {
			m.Sources = append(m.Sources, manifest.Source{Name: "conntrack-stats", Method: manifest.MethodExec, Status: manifest.StatusFailed, Error: "exit status 1"})
		}, stdout: `manifest.json: source conntrack-stats failed when the bundle was collected: exit status 1`},
		{name: "a file added", edit: func(m *manifest.Manifest, dir string) {
			if err := writeBundleFile(dir, "notes.txt", []byte("what I saw\n")); err != nil {
				t.Fatal(err)
			}
		}, stdout: `"note": "not listed in manifest.json: added after the bundle was collected; unknown kind of file (kind not recognised): not analysed"`},
		{name: "empty rule dump", edit: func(m *manifest.Manifest, dir string) {
			s := source(m, "iptables-nft-save")
			s.File, s.Bytes, s.SHA256 = "", 0, ""
			if err := os.Remove(filepath.Join(dir, "node", "iptables-save.txt")); err != nil {
				t.Fatal(err)
			}
		}, code: 1, stdout: `"check": "service-missing"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := collectedBundle(t, tc.edit)
			if strings.Contains(tc.name, "archived") {
				dir = packDir(t, dir, "tgz")
			}
			f, outputs := testFactory()
			code := Run(f, []string{"analyze", "-o", "json", dir})
			stdout, stderr := outputs()
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			if tc.stdout != "" && !strings.Contains(stdout, tc.stdout) {
				t.Errorf("stdout does not contain %q:\n%s", tc.stdout, stdout)
			}
			if tc.stderr != "" && !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr does not contain %q:\n%s", tc.stderr, stderr)
			}
		})
	}
}

// TestRefusedValuesRun checks the exit codes and messages of values
// iptables-restore refuses (an error at the file's line read strictly, a
// skipped line with its reason read leniently) and of YAML kubectl never
// prints (a tab in the indentation, a key twice, a List cut short), and
// that a known kind of an API version not read is listed as ignored.
func TestRefusedValuesRun(t *testing.T) {
	dump := "*nat\n:OUTPUT ACCEPT [0:0]\n:KUBE-SVC-X - [0:0]\n:KUBE-SEP-A - [0:0]\n" +
		"-A KUBE-SVC-X -m statistic --mode random --probability -0.5 -j KUBE-SEP-A\n" +
		"-A KUBE-SEP-A -p tcp -j DNAT --to-destination \"\"\nCOMMIT\n"
	for _, tc := range []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string
	}{
		{"strict", []string{"--strict", writeTemp(t, "dump.txt", dump)}, 2, "",
			`dump.txt:5: --probability: probability "-0.5" is not a number from 0 to 1, which iptables-restore refuses`},
		{"strict, second line", []string{"--strict", writeTemp(t, "dump.txt", dump)}, 2, "", `dump.txt:6: --to-destination: empty address, which iptables-restore refuses`},
		{"lenient", []string{writeTemp(t, "dump.txt", dump)}, 0, `"detail": "--probability: probability \"-0.5\" is not a number from 0 to 1, which iptables-restore refuses"`, ""},
		{"YAML tab", []string{writeTemp(t, "svc.yaml", "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n\tnamespace: shop\n")}, 2, "", "svc.yaml:5: a tab in the indentation (YAML indents with spaces only)"},
		{"YAML duplicate key", []string{writeTemp(t, "svc.yaml", "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  name: api\n")}, 2, "", `svc.yaml:5: invalid YAML in Service (v1): key "name" given twice in one mapping`},
		{"YAML cut", []string{writeTemp(t, "svc.yaml", "apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Service\n  metadata:\n    name: web\n")}, 2, "", "svc.yaml:6: the List ends without its kind: line"},
		{"YAML unknown API version", []string{writeTemp(t, "dump.txt", dump), writeTemp(t, "svc.yaml", "apiVersion: v2\nkind: Service\nmetadata:\n  name: web\n  namespace: shop\n")}, 0,
			`svc.yaml:1: Service shop/web of API version \"v2\" ignored: proxyscan reads the version(s) v1`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, outputs := testFactory()
			code := Run(f, append([]string{"analyze", "-o", "json"}, tc.args...))
			stdout, stderr := outputs()
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			if !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stdout %q / stderr %q lack %q / %q", stdout, stderr, tc.stdout, tc.stderr)
			}
		})
	}
}

// gzipText returns s compressed with gzip, as `iptables-save | gzip`
// writes it.
func gzipText(t *testing.T, s string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}
