package cmd

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/manifest"
)

// TestBundleMemberErrorsNameTheBundle: whichever member of a collected
// bundle is malformed (a rule dump, the configuration, the ConfigMap, an
// export, the manifest, a log), and whichever wrapper of the loader adds
// its context to the parser's error, the error of analyze names the
// bundle (its archive or its directory) before the member's path, once.
func TestBundleMemberErrorsNameTheBundle(t *testing.T) {
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kube-proxy\n  namespace: kube-system\ndata:\n  config.conf: |\n    apiVersion: kubeproxy.config.k8s.io/v1alpha1\n    kind: KubeProxyConfiguration\n"
	for _, tc := range []struct {
		name string
		// member is the file changed, content what it holds; source,
		// when set, lists a file the manifest does not yet list.
		member, content, source string
		// want is what the error says after the member's path.
		want string
		// raw writes the member without listing it in the manifest.
		raw bool
	}{
		{name: "rule dump", member: "node/iptables-save.txt", content: "*nat\n:PREROUTING ACCEPT [0:0]\n-A KUBE-X -j RETURN\nCOMMIT\n", want: ":3: "},
		{name: "configuration", member: "kube-proxy/config.yaml", content: "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: [iptables\n", want: ":3: "},
		{name: "configuration field", member: "kube-proxy/config.yaml", content: "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nconntrack: 5\n", want: ":3: "},
		{name: "ConfigMap", member: "cluster/kube-proxy-configmap.yaml", content: cm + "    mode: [iptables\n", want: ":10: "},
		{name: "ConfigMap field", member: "cluster/kube-proxy-configmap.yaml", content: cm + "    conntrack: 5\n", want: ":10: "},
		{name: "export", member: "cluster/cluster.yaml", content: "apiVersion: v1\nkind: List\nitems:\n- kind: Service\n  apiVersion: v1\n  metadata: [\n", want: ":6: "},
		{name: "node object", member: "cluster/node.yaml", content: "apiVersion: v1\nkind: Node\nmetadata: [\n", want: ":3: "},
		{name: "version", member: "kube-proxy/version.txt", content: "Kubernetes v1.2.3.4\n", want: ":1: "},
		{name: "addresses", member: "node/ip-addr.txt", content: "1: lo: <LOOPBACK,UP> mtu 65536\n    inet 127.0.0.1/8 scope host lo\n    garbage here\n", want: ":"},
		{name: "log", member: "kube-proxy/kube-proxy.log", source: "kube-proxy-log", content: "I0301 12:00:00.000000       1 server.go:1] \"Version info\"\n" + strings.Repeat("x", 1<<20+1) + "\n", want: ":2: "},
		{name: "manifest", member: "manifest.json", raw: true, content: "{\"schema\": 1, \"sources\": [\n", want: ":"},
		{name: "file not as the manifest says", member: "node/ip-addr.txt", raw: true, content: "1: lo: <LOOPBACK,UP> mtu 65536\n", want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := collectedBundle(t, func(m *manifest.Manifest, dir string) {
				if tc.raw {
					return
				}
				if err := writeBundleFile(dir, tc.member, []byte(tc.content)); err != nil {
					t.Fatal(err)
				}
				sum := sha256.Sum256([]byte(tc.content))
				var s *manifest.Source
				for i := range m.Sources {
					if m.Sources[i].File == tc.member {
						s = &m.Sources[i]
					}
				}
				if s == nil {
					m.Sources = append(m.Sources, manifest.Source{Name: tc.source, Method: manifest.MethodFile, Path: "/x", File: tc.member, Status: manifest.StatusOK})
					s = &m.Sources[len(m.Sources)-1]
				}
				s.Bytes, s.SHA256 = int64(len(tc.content)), hex.EncodeToString(sum[:])
			})
			if tc.raw {
				if err := os.WriteFile(filepath.Join(dir, tc.member), []byte(tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, path := range []string{dir, packDir(t, dir, "tgz")} {
				_, stderr := checkCLI(t, []string{"analyze", "-o", "json", path}, 2, "", "")
				named := path + "/" + tc.member + tc.want
				if tc.raw && tc.member != "manifest.json" {
					// The manifest's own check names the bundle, then
					// the manifest's line of the member.
					named = path + ": manifest.json:"
				}
				if !strings.Contains(stderr, named) {
					t.Errorf("%s: stderr does not name %q:\n%s", filepath.Base(path), named, stderr)
				}
				if strings.Count(stderr, path) != strings.Count(stderr, tc.member) || strings.Contains(stderr, path+"/"+path) {
					t.Errorf("%s: the bundle is not named once before each name of the member:\n%s", filepath.Base(path), stderr)
				}
			}
		})
	}
}

// TestInPathRebuildsWrappers: the bundle's name is put before the member's
// in the whole text of an error, whichever wrappers (made with
// fmt.Errorf, which keep the text they were made with, or lists) hold the
// positioned errors, and errors.As still finds them.
func TestInPathRebuildsWrappers(t *testing.T) {
	one := func() *parsers.Error { return parsers.Errorf(parsers.Pos{File: "node/x.txt", Line: 3}, "bad") }
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"alone", one(), "b.tgz/node/x.txt:3: bad"},
		{"wrapped", fmt.Errorf("reading: %w", one()), "reading: b.tgz/node/x.txt:3: bad"},
		{"a list wrapped twice", fmt.Errorf("a: %w", fmt.Errorf("b: %w", parsers.ErrorList{one(), one()})), "a: b: b.tgz/node/x.txt:3: bad (and 1 more errors)"},
		{"joined", errors.Join(fmt.Errorf("c: %w", one()), parsers.Errorf(parsers.Pos{File: "cluster/y.yaml"}, "worse")), "c: b.tgz/node/x.txt:3: bad\nb.tgz/cluster/y.yaml: worse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := inPath("b.tgz", tc.err)
			if !ok || got.Error() != tc.want {
				t.Errorf("%q (%v), want %q", got, ok, tc.want)
			}
			var pe *parsers.Error
			if !errors.As(got, &pe) || !strings.HasPrefix(pe.Pos.File, "b.tgz/") {
				t.Errorf("errors.As finds %v", pe)
			}
		})
	}
	if got, ok := inPath("b.tgz", errors.New("other")); ok || got.Error() != "other" {
		t.Errorf("an error without a position: %q, %v", got, ok)
	}
}
