package load

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/parsers/kube"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// sameSnapshots loads every bundle directory of the testdata twice, the
// second time with other set (and unset after), and checks that the
// snapshots, or the errors, are the same: what and other name the two
// ways in messages.
func sameSnapshots(t *testing.T, what, otherWhat string, other func(on bool)) {
	t.Helper()
	root := filepath.Join(parsetest.Root(t), "testdata", "bundles")
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(root, e.Name())
		got, gerr := Load([]string{p}, Options{})
		other(true)
		want, werr := Load([]string{p}, Options{})
		other(false)
		if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
			t.Errorf("%s: %s: %v; %s: %v", e.Name(), what, gerr, otherWhat, werr)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %s and %s give different snapshots", e.Name(), what, otherWhat)
		}
		n++
	}
	if n < 5 {
		t.Fatalf("only %d bundles compared", n)
	}
}

// TestFastDecodeSameSnapshots loads every bundle of the testdata with the
// fast export decoders and with the reference ones, and checks that the
// snapshots are the same.
func TestFastDecodeSameSnapshots(t *testing.T) {
	sameSnapshots(t, "fast decoders", "reference decoders", func(on bool) { kubeOptions = kube.Options{Reference: on} })
}

// TestStreamedExportsSameSnapshots loads every bundle of the testdata with
// its exports decoded as they are read and decoded once read whole, and
// checks that the snapshots, or the errors, are the same.
func TestStreamedExportsSameSnapshots(t *testing.T) {
	sameSnapshots(t, "streamed", "read whole", func(on bool) { streamExports = !on })
}

// TestStreamedArchiveExportsSameSnapshots packs every bundle of the
// testdata in an archive (under a top directory, which the loader strips
// from the names), also with its exports broken or the archive cut short,
// and checks that decoding the exports as they are read gives the
// snapshots, or the errors, that decoding them once read whole gives.
func TestStreamedArchiveExportsSameSnapshots(t *testing.T) {
	root := filepath.Join(parsetest.Root(t), "testdata", "bundles")
	dirs, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	compare := func(name string, data []byte) {
		t.Helper()
		p := writeFile(t, tmp, name+".tgz", data)
		streamed, serr := Load([]string{p}, Options{})
		streamExports = false
		whole, werr := Load([]string{p}, Options{})
		streamExports = true
		if (serr == nil) != (werr == nil) || serr != nil && serr.Error() != werr.Error() {
			t.Errorf("%s: streamed: %v; read whole: %v", name, serr, werr)
		} else if !reflect.DeepEqual(streamed, whole) {
			t.Errorf("%s: streamed and whole exports give different snapshots", name)
		}
	}
	n := 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		var entries []entry
		err := filepath.WalkDir(filepath.Join(root, d.Name()), func(p string, de os.DirEntry, err error) error {
			if err != nil || de.IsDir() {
				return err
			}
			body, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(filepath.Join(root, d.Name()), p)
			entries = append(entries, entry{name: "proxyscan-" + d.Name() + "/" + filepath.ToSlash(rel), body: string(body)})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		compare(d.Name(), archive(t, entries...))
		n++
		for i, e := range entries {
			if !strings.HasPrefix(e.name, "proxyscan-"+d.Name()+"/cluster/") {
				continue
			}
			for j, bad := range []string{
				"{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[\n{\"apiVersion\":\"v1\",\"kind\":\"Service\",\n\"spec\":{\"ports\":[{\"port\":\"x\"}]}}]}",
				"{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[\n{\"apiVersion\":\"v1\",\"kind\":\"Service\",\n\"metadata\":{\"name\":\"a\"}",
				"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Service\n  spec:\n    ports:\n    - port: x\n",
			} {
				if testing.Short() && j != (n+i)%3 {
					continue // one kind of damage per export; every kind without -short
				}
				broken := append([]entry(nil), entries...)
				broken[i].body = bad
				name := fmt.Sprintf("%s-broken-%d-%d", d.Name(), i, j)
				compare(name, archive(t, broken...))
				want := strings.TrimPrefix(e.name, "proxyscan-"+d.Name()+"/") + ":"
				if _, err := Load([]string{filepath.Join(tmp, name+".tgz")}, Options{}); err == nil || !strings.HasPrefix(err.Error(), want) {
					t.Errorf("%s: error %v, want one at %s", name, err, want)
				}
			}
			// Cut short within the export.
			whole := archive(t, entries...)
			compare(fmt.Sprintf("%s-cut-%d", d.Name(), i), whole[:len(whole)*(i+1)/(len(entries)+1)])
		}
	}
	if n < 5 {
		t.Fatalf("only %d bundles compared", n)
	}
}
