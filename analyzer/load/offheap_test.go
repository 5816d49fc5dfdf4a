package load

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	"github.com/proxyscan/proxyscan/internal/benchgen"
	"github.com/proxyscan/proxyscan/internal/offheap"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// bundleEntries returns the files of the bundle directory dir as the
// entries of an archive under top/.
func bundleEntries(t *testing.T, dir, top string) []entry {
	t.Helper()
	var entries []entry
	err := filepath.WalkDir(dir, func(p string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		entries = append(entries, entry{name: top + "/" + filepath.ToSlash(rel), body: string(body)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// TestOffHeapSameSnapshots loads every bundle of the testdata, as a
// directory and as an archive (whole and cut short), with every file read
// outside the Go heap and on it, and checks that the snapshots, or the
// errors, are the same.
func TestOffHeapSameSnapshots(t *testing.T) {
	offHeapMin = 1
	defer func() { offHeapMin = defaultOffHeapMin }()
	root := filepath.Join(parsetest.Root(t), "testdata", "bundles")
	dirs, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	compare := func(name, p string) {
		t.Helper()
		heap, herr := Load([]string{p}, Options{})
		off, oerr := Load([]string{p}, Options{OffHeap: true})
		if (herr == nil) != (oerr == nil) || herr != nil && herr.Error() != oerr.Error() {
			t.Errorf("%s: on the heap: %v; off it: %v", name, herr, oerr)
		} else if !reflect.DeepEqual(heap, off) {
			t.Errorf("%s: read on the heap and off it give different snapshots", name)
		}
	}
	n := 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		dir := filepath.Join(root, d.Name())
		compare(d.Name(), dir)
		whole := archive(t, bundleEntries(t, dir, "proxyscan-"+d.Name())...)
		compare(d.Name()+".tgz", writeFile(t, tmp, d.Name()+".tgz", whole))
		for _, cut := range []int{3, 2} {
			name := fmt.Sprintf("%s-cut-%d.tgz", d.Name(), cut)
			compare(name, writeFile(t, tmp, name, whole[:len(whole)*(cut-1)/cut]))
		}
		n++
	}
	if n < 5 {
		t.Fatalf("only %d bundles compared", n)
	}
}

// liveHeap returns the bytes of the Go heap's live objects after a
// collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestOffHeapDumpText checks that with Options.OffHeap the text of a large
// dump, which its parsed rules point into and which is live as long as
// they are, is not on the Go heap, from a directory and from an archive:
// the heap holds less by about the dump's size.
func TestOffHeapDumpText(t *testing.T) {
	dir := t.TempDir()
	spec := benchgen.Spec{Services: 1000, Endpoints: 5500, NodePortEvery: 4, Node: "n1"}
	if err := spec.WriteBundle(filepath.Join(dir, "n1")); err != nil {
		t.Fatal(err)
	}
	var dump bytes.Buffer
	if err := spec.IPTablesSave(&dump); err != nil {
		t.Fatal(err)
	}
	if int64(dump.Len()) < offHeapMin {
		t.Fatalf("the dump is %d bytes, under %d", dump.Len(), offHeapMin)
	}
	tgz := writeFile(t, dir, "n1.tgz", archive(t, bundleEntries(t, filepath.Join(dir, "n1"), "proxyscan-n1")...))
	for _, p := range []string{filepath.Join(dir, "n1"), tgz} {
		held := func(off bool) uint64 {
			before := liveHeap()
			snaps, err := Load([]string{p}, Options{Compact: true, OffHeap: off})
			if err != nil {
				t.Fatal(err)
			}
			after := liveHeap()
			runtime.KeepAlive(snaps)
			return after - before
		}
		heap := held(false)
		was := offheap.Mapped()
		off := held(true)
		if off+uint64(dump.Len())*9/10 > heap {
			t.Errorf("%s: the snapshots hold %d bytes of the Go heap read off it, %d on it: the dump's %d bytes are not all out of the heap", filepath.Base(p), off, heap, dump.Len())
		}
		if got := offheap.Mapped() - was; got != int64(dump.Len()) {
			t.Errorf("%s: %d bytes mapped, want the dump's %d", filepath.Base(p), got, dump.Len())
		}
	}
}

// TestOffHeapOnlyKeptText checks that with Options.OffHeap the text of an
// nftables listing, which its ruleset points into, is read off the heap,
// and the text of the other files of its bundle stays on the heap, freed
// once parsed: a mapping would keep it to the end.
func TestOffHeapOnlyKeptText(t *testing.T) {
	offHeapMin = 1
	defer func() { offHeapMin = defaultOffHeapMin }()
	dir := t.TempDir()
	spec := benchgen.Spec{Services: 1000, Endpoints: 5500, NodePortEvery: 4, Node: "n1"}
	var ruleset bytes.Buffer
	if err := spec.NFTRuleset(&ruleset); err != nil {
		t.Fatal(err)
	}
	var export bytes.Buffer
	if err := spec.WriteJSON(&export); err != nil {
		t.Fatal(err)
	}
	files := []entry{
		{name: "proxyscan-n1/node/nft-ruleset.txt", body: ruleset.String()},
		{name: "proxyscan-n1/cluster/cluster.json", body: export.String()},
		{name: "proxyscan-n1/kube-proxy/config.yaml", body: string(spec.NFTConfig())},
	}
	for _, e := range files {
		writeFile(t, dir, e.name, []byte(e.body))
	}
	tgz := writeFile(t, dir, "n1.tgz", archive(t, files...))
	for _, p := range []string{filepath.Join(dir, "proxyscan-n1"), tgz} {
		was := offheap.Mapped()
		if _, err := Load([]string{p}, Options{Compact: true, OffHeap: true}); err != nil {
			t.Fatal(err)
		}
		if got := offheap.Mapped() - was; got != int64(ruleset.Len()) {
			t.Errorf("%s: %d bytes mapped for an nftables node, want the listing's %d", filepath.Base(p), got, ruleset.Len())
		}
	}
}
