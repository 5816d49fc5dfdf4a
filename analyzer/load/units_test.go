package load

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestUnits: bundles and directories of bundles are split into one unit
// per bundle, sorted, and so are node reports; globs are expanded; loose
// files or a plain directory among the arguments keep them together.
func TestUnits(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("fleet/b/node/iptables-save.txt", "")
	write("fleet/a/manifest.json", "{}")
	write("fleet/zone-2/c.tgz", "\x1f\x8b rest")
	write("fleet/zone-2/d/node/ip-addr.txt", "")
	write("fleet/.hidden", "")
	write("mixed/a/node/iptables-save.txt", "")
	write("mixed/README.md", "bundles")
	write("loose.txt", "")
	report := "{\n \"kind\" : \"proxyscan-node-report\", \"schemaVersion\": 1}"
	write("reports/n1/node-report.json", report)
	write("reports/n2/node-report.json", report)
	write("reports/n3.tgz", "\x1f\x8b rest")
	write("other/report.json", `{"kind":"other"}`)
	j := func(p ...string) string { return filepath.Join(append([]string{dir}, p...)...) }
	for _, tc := range []struct {
		name string
		args []string
		want [][]string
	}{
		{"directory of bundles", []string{j("fleet")}, [][]string{{j("fleet/a")}, {j("fleet/b")}, {j("fleet/zone-2/c.tgz")}, {j("fleet/zone-2/d")}}},
		{"bundles sorted, repeated once", []string{j("fleet/b"), j("fleet/a"), j("fleet/b")}, [][]string{{j("fleet/a")}, {j("fleet/b")}}},
		{"glob", []string{j("fleet", "[ab]")}, [][]string{{j("fleet/a")}, {j("fleet/b")}}},
		{"a loose file keeps the arguments together", []string{j("fleet/a"), j("loose.txt")}, [][]string{{j("fleet/a"), j("loose.txt")}}},
		{"a file among bundles makes a plain directory", []string{j("mixed")}, [][]string{{j("mixed")}}},
		{"node reports are units", []string{j("reports")}, [][]string{{j("reports/n1/node-report.json")}, {j("reports/n2/node-report.json")}, {j("reports/n3.tgz")}}},
		{"a node report among bundles", []string{j("fleet/a"), j("reports/n2/node-report.json")}, [][]string{{j("fleet/a")}, {j("reports/n2/node-report.json")}}},
		{"JSON of another kind is a loose file", []string{j("other")}, [][]string{{j("other")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Units(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Units(%v) = %v, want %v", tc.args, got, tc.want)
			}
		})
	}
	for _, bad := range []string{j("nothing-*"), j("missing")} {
		if _, err := Units([]string{bad}); err == nil || !IsInputError(err) || !strings.Contains(err.Error(), bad) {
			t.Errorf("Units(%s): %v, want an input error naming it", bad, err)
		}
	}
}

// TestPlan: bundles given with loose cluster-level files (exports,
// kube-proxy configuration) are units of one bundle each, the loose files
// read once; a loose file of a node, of no known kind, or that cannot be
// opened, a plain directory holding a bundle, a node report among the
// bundles, or a single bundle keep every argument together; an export
// that cannot be read makes Load say that every argument is to be read
// together. A directory of bundles with files beside them (a README, an
// export) is its bundles, the files beside read once as loose files,
// unless one of them is a node's file (a dump pasted in a note).
func TestPlan(t *testing.T) {
	dir := t.TempDir()
	j := func(p ...string) string { return filepath.Join(append([]string{dir}, p...)...) }
	for _, b := range []string{"a", "b", "plain/c"} {
		writeFile(t, j(b), "node/iptables-save.txt", []byte(miniDump))
	}
	export := writeFile(t, dir, "svc.yaml", []byte(miniService))
	config := writeFile(t, dir, "config.yaml", []byte("apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: iptables\n"))
	broken := writeFile(t, dir, "broken.yaml", []byte("apiVersion: v1\nkind: Service\nmetadata: [\n"))
	dump := writeFile(t, dir, "iptables-save.txt", []byte(miniDump))
	readme := writeFile(t, dir, "README.md", []byte("notes\n"))
	writeFile(t, j("plain"), "svc.yaml", []byte(miniService))
	writeFile(t, j("plain2/c"), "node/iptables-save.txt", []byte(miniDump))
	writeFile(t, j("plain2"), "ip-addr.txt", []byte("1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN\n    inet 127.0.0.1/8 scope host lo\n"))
	writeFile(t, j("exports"), "svc.yaml", []byte(miniService))
	report := writeFile(t, dir, "r.json", []byte(`{"kind": "proxyscan-node-report"}`))
	for _, b := range []string{"case/d", "case/zone/e"} {
		writeFile(t, j(b), "node/iptables-save.txt", []byte(miniDump))
	}
	writeFile(t, j("case"), "README.md", []byte("notes\n"))
	writeFile(t, j("case", "zone"), "svc.yaml", []byte(miniService))
	for _, b := range []string{"pasted/f", "pasted/g"} {
		writeFile(t, j(b), "node/iptables-save.txt", []byte(miniDump))
	}
	writeFile(t, j("pasted"), "notes.txt", []byte("[root@node-1 ~]# iptables-save -t nat | grep KUBE-SERVICES\n"+
		"-A KUBE-SERVICES -d 10.96.0.10/32 -p udp -m comment --comment \"kube-system/kube-dns:dns cluster IP\" -m udp --dport 53 -j KUBE-SVC-TCOU7JCQXEZGVUNU\n"))
	for _, tc := range []struct {
		name   string
		args   []string
		units  [][]string
		shared []string
	}{
		{"an export and a configuration", []string{j("b"), export, j("a"), config}, [][]string{{j("a")}, {j("b")}}, []string{export, config}},
		{"a directory of exports", []string{j("a"), j("b"), j("exports")}, [][]string{{j("a")}, {j("b")}}, []string{"svc.yaml"}},
		{"only bundles", []string{j("a"), j("b")}, [][]string{{j("a")}, {j("b")}}, nil},
		{"one bundle", []string{j("a"), export}, [][]string{{j("a"), export}}, nil},
		{"a loose dump", []string{j("a"), j("b"), export, dump}, [][]string{{j("a"), j("b"), export, dump}}, nil},
		{"a file of no known kind", []string{j("a"), j("b"), export, readme}, [][]string{{j("a"), j("b"), export, readme}}, nil},
		{"an export that cannot be read", []string{j("a"), j("b"), broken}, [][]string{{j("a")}, {j("b")}}, nil},
		{"a plain directory holding a bundle", []string{j("a"), j("b"), j("plain2")}, [][]string{{j("a"), j("b"), j("plain2")}}, nil},
		{"a directory holding a bundle and an export", []string{j("a"), j("b"), j("plain")}, [][]string{{j("a")}, {j("b")}, {j("plain/c")}}, []string{"svc.yaml"}},
		{"a node report", []string{j("a"), j("b"), report, export}, [][]string{{j("a"), j("b"), report, export}}, nil},
		// Files beside the bundles of a directory given: exports, and
		// files of no known kind (listed with every node, not analysed).
		{"a directory of bundles with a README and an export beside", []string{j("case")}, [][]string{{j("case/d")}, {j("case/zone/e")}}, []string{"README.md", "zone/svc.yaml"}},
		// A note that holds a pasted dump is a node's file.
		{"a directory of bundles with a pasted dump beside", []string{j("pasted")}, [][]string{{j("pasted")}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			units, shared, err := Plan(tc.args, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(units, tc.units) {
				t.Errorf("units %v, want %v", units, tc.units)
			}
			var files []string
			if shared != nil {
				files = shared.Files()
			}
			if !reflect.DeepEqual(files, tc.shared) {
				t.Errorf("shared files %v, want %v", files, tc.shared)
			}
			if shared == nil {
				return
			}
			// A bundle is loaded with the shared files, or, when they are
			// not to be read once for all, the run reads every argument
			// together.
			snaps, err := Load(units[0], Options{Shared: shared})
			switch {
			case tc.shared == nil && !errors.Is(err, ErrReadTogether):
				t.Errorf("Load with the shared files: %v, want ErrReadTogether", err)
			case tc.shared != nil && (err != nil || len(snaps) != 1 || len(snaps[0].Inputs) != 1+len(tc.shared)):
				t.Errorf("Load with the shared files: %v, %d nodes", err, len(snaps))
			}
		})
	}
}
