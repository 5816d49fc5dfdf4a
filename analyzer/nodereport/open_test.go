package nodereport

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenArchive checks where Open finds the report of an archive: right
// after manifest.json, or after small files, but not after a large entry:
// there it stops, without reading the rest (which here is cut short, so
// that reading it would fail).
func TestOpenArchive(t *testing.T) {
	const report = `{"kind":"proxyscan-node-report","schemaVersion":1}`
	big := strings.Repeat("-A KUBE-SERVICES -j ACCEPT\n", ScanLimit/27+1)
	type entry struct{ name, data string }
	for _, tc := range []struct {
		name    string
		entries []entry
		cut     bool // the archive ends inside its last entry
		found   bool
	}{
		{"after the manifest", []entry{{"b/manifest.json", "{}"}, {"b/node-report.json", report}, {"b/node/iptables-save.txt", big}}, false, true},
		{"after small files", []entry{{"node/ip-addr.txt", "1: lo"}, {"kube-proxy/config.yaml", "mode: iptables"}, {"node-report.json", report}}, false, true},
		{"after a large dump", []entry{{"node/iptables-save.txt", big}, {"node-report.json", report}}, false, false},
		{"none, the rest cut short", []entry{{"manifest.json", "{}"}, {"node/iptables-save.txt", big}, {"cluster/cluster.json", big}}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			tw := tar.NewWriter(zw)
			for _, e := range tc.entries {
				if err := tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), Typeflag: tar.TypeReg}); err != nil {
					t.Fatal(err)
				}
				if _, err := io.WriteString(tw, e.data); err != nil {
					t.Fatal(err)
				}
			}
			if err := tw.Close(); err != nil {
				t.Fatal(err)
			}
			if err := zw.Close(); err != nil {
				t.Fatal(err)
			}
			data := buf.Bytes()
			if tc.cut {
				data = data[:len(data)*3/4]
			}
			p := filepath.Join(t.TempDir(), "bundle.tgz")
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			r, ok, err := Open(p)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if ok != tc.found {
				t.Fatalf("found %v, want %v", ok, tc.found)
			}
			if !ok {
				return
			}
			defer r.Close()
			got, err := io.ReadAll(r)
			if err != nil || string(got) != report {
				t.Errorf("read %q, %v; want the report", got, err)
			}
		})
	}
}
