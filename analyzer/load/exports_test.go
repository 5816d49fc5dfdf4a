package load

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/internal/benchgen"
	"github.com/proxyscan/proxyscan/parsers/manifest"
)

// TestExportsShared: units loaded one after another with an Exports share
// the objects of exports that are byte for byte alike, under one name in
// their bundles, and decode the others: one of the same size that differs
// by one endpoint's address (which the next unit's export is alike to),
// one of another size, one under another name.
// Each snapshot holds what its own file says and names its own bundle, and
// the export held is dropped once the last unit that may hold it is
// loaded. The units are directories, or the same bundles as archives
// (tgz, zip) under a top directory of their own, whose members are told
// the held export's once read through, or decoded from the archive read
// again when they are not.
func TestExportsShared(t *testing.T) {
	for _, form := range []string{"directory", "tgz", "zip"} {
		t.Run(form, func(t *testing.T) { testExportsShared(t, form) })
	}
}

func testExportsShared(t *testing.T, form string) {
	dir := t.TempDir()
	spec := benchgen.Spec{Services: 200, Endpoints: 800, NodePortEvery: 4}
	if err := spec.WriteFleet(dir, 6); err != nil {
		t.Fatal(err)
	}
	var units [][]string
	for i := 1; i <= 6; i++ {
		units = append(units, []string{filepath.Join(dir, fmt.Sprintf("node-%04d", i))})
	}
	export, err := os.ReadFile(filepath.Join(units[0][0], "cluster", "cluster.json"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(u int, name string, data []byte) {
		p := filepath.Join(units[u][0], "cluster", "cluster.json")
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(units[u][0], "cluster", name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// node-0003 and node-0004: one address changed, same size; node-0005:
	// another size; node-0006: the export under another name.
	same := bytes.Replace(export, []byte(`"10.128.0.1"`), []byte(`"10.127.0.1"`), 1)
	write(2, "cluster.json", same)
	write(3, "cluster.json", same)
	write(4, "cluster.json", bytes.Replace(export, []byte(`"10.128.0.1"`), []byte(`"10.127.0.10"`), 1))
	write(5, "export.json", export)
	if form != "directory" {
		for i, u := range units {
			entries := bundleEntries(t, u[0], fmt.Sprintf("proxyscan-node-%d-20260302T081500Z", i))
			var data []byte
			if form == "zip" {
				data = zipArchive(t, entries)
			} else {
				data = archive(t, entries...)
			}
			units[i] = []string{writeFile(t, dir, fmt.Sprintf("node-%04d.%s", i+1, form), data)}
		}
	}
	ex := NewExports(units)
	if ex == nil {
		t.Fatal("NewExports: nil for units holding files of one size")
	}
	opts := Options{Compact: true}
	previous := ""
	changed := netip.MustParseAddr("10.127.0.1")
	for i, u := range units {
		alone, err := Load(u, opts)
		if err != nil {
			t.Fatal(err)
		}
		o := opts
		o.Exports = ex.Of(i)
		snaps, err := Load(u, o)
		if err != nil {
			t.Fatal(err)
		}
		s := snaps[0]
		has := likeAlone(t, u[0], s, alone[0], changed)
		if want := i == 2 || i == 3; has != want {
			t.Errorf("%s: endpoint %s: %t, want %t", u[0], changed, has, want)
		}
		id := fmt.Sprintf("%p", s.Objects.Services[0])
		if shared, want := id == previous, i == 1 || i == 3; shared != want {
			t.Errorf("%s: objects of the previous node's export: %t, want %t", u[0], shared, want)
		}
		previous = id
	}
	if ex.held != nil {
		t.Errorf("an export is held once every unit is loaded: %s", ex.held.name)
	}
}

// zipArchive returns a zip archive of the regular files of entries.
func zipArchive(t *testing.T, entries []entry) []byte {
	t.Helper()
	var zes []zipEntry
	for _, e := range entries {
		zes = append(zes, zipEntry{name: e.name, body: e.body})
	}
	return zipOf(t, zes...)
}

// TestNewExportsNone: units holding no two files of one size, or only
// small ones, share nothing: no export is hashed or held. The sizes of an
// archive's members are those its manifest lists when it is its first
// file, or those of a zip archive's directory; an archive whose members
// are not known before it is read may hold a file of any size.
func TestNewExportsNone(t *testing.T) {
	dir := t.TempDir()
	unit := func(name string, sizes ...int) []string {
		p := filepath.Join(dir, name)
		for i, n := range sizes {
			writeFile(t, p, fmt.Sprintf("cluster/f%d.json", i), bytes.Repeat([]byte{' '}, n))
		}
		return []string{p}
	}
	// packed is a bundle archive holding a file of each size, with the
	// manifest that collect writes first, listing them, when listed.
	entries := func(name string, listed bool, sizes []int) []entry {
		top := "proxyscan-" + name
		var out []entry
		m := &manifest.Manifest{Schema: manifest.Schema, Host: name, CollectedAt: time.Date(2026, 3, 2, 8, 15, 0, 0, time.UTC)}
		for i, n := range sizes {
			f := fmt.Sprintf("cluster/f%d.json", i)
			body := bytes.Repeat([]byte{' '}, n)
			out = append(out, entry{name: top + "/" + f, body: string(body)})
			sum := sha256.Sum256(body)
			m.Sources = append(m.Sources, manifest.Source{Name: f, Method: "file", Path: "/" + f, File: f, Status: "ok", Bytes: int64(n), SHA256: hex.EncodeToString(sum[:])})
		}
		if listed {
			out = append([]entry{{name: top + "/manifest.json", body: string(manifest.Format(m))}}, out...)
		}
		return out
	}
	packed := func(name string, listed bool, sizes ...int) []string {
		return []string{writeFile(t, dir, name+".tgz", archive(t, entries(name, listed, sizes)...))}
	}
	zipped := func(name string, sizes ...int) []string {
		return []string{writeFile(t, dir, name+".zip", zipArchive(t, entries(name, false, sizes)))}
	}
	big := minSharedExport
	for _, tc := range []struct {
		name  string
		units [][]string
		want  bool
	}{
		{"sizes apart", [][]string{unit("a", big, big+1), unit("b", big+2)}, false},
		{"small files alike", [][]string{unit("c", 100), unit("d", 100)}, false},
		{"one unit", [][]string{unit("e", big, big)}, false},
		{"a size two units hold", [][]string{unit("f", big+5), unit("g", 10, big+5)}, true},
		{"archives listed apart", [][]string{packed("h", true, big), packed("i", true, big+1)}, false},
		{"archives listed alike", [][]string{packed("j", true, big), packed("k", true, big)}, true},
		{"an archive listed alike a directory", [][]string{unit("l", big+7), packed("m", true, big+7)}, true},
		{"an archive not listed", [][]string{packed("n", false, big), unit("o", big+9)}, true},
		{"zip archives apart", [][]string{zipped("p", big), zipped("q", big+1)}, false},
		{"zip archives alike", [][]string{zipped("r", big), zipped("s", big)}, true},
		{"one archive not listed", [][]string{packed("t", false, big)}, false},
	} {
		if got := NewExports(tc.units) != nil; got != tc.want {
			t.Errorf("%s: exports to share %t, want %t", tc.name, got, tc.want)
		}
	}
}

// TestExportsTogether: two units loaded at once with an Exports told so
// (the two sides of a diff) share the objects of an export the later one
// holds byte for byte (one file on disk, or a copy of it, compared byte
// for byte), which the earlier one decodes while the later one waits; a
// unit whose export is of the same size but differs decodes its own at
// once, once the two are compared, without waiting for the earlier one's
// to be decoded, and the earlier one does not keep its own for it. No
// export is hashed. The earlier unit's export is held back until the
// later unit opens its own to decode it, or a while: a later unit that
// does not wait decodes its own export beside the earlier one. Each
// snapshot is the one of loading its unit alone, naming its own bundle.
func TestExportsTogether(t *testing.T) {
	dir := t.TempDir()
	spec := benchgen.Spec{Services: 200, Endpoints: 800, NodePortEvery: 4}
	if err := spec.WriteFleet(dir, 4); err != nil {
		t.Fatal(err)
	}
	node := func(i int) string { return filepath.Join(dir, fmt.Sprintf("node-%04d", i)) }
	p := filepath.Join(node(3), "cluster", "cluster.json")
	export, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// The fleet's files are links to one: node-0003's is replaced by
	// one that differs, node-0004's by a copy.
	for i, data := range map[int][]byte{3: bytes.Replace(export, []byte(`"10.128.0.1"`), []byte(`"10.127.0.1"`), 1), 4: export} {
		q := filepath.Join(node(i), "cluster", "cluster.json")
		if err := os.Remove(q); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(q, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	changed := netip.MustParseAddr("10.127.0.1")
	for _, tc := range []struct {
		other    int
		shared   bool
		compared int64
	}{{2, true, 0}, {3, false, 1}, {4, true, 1}} {
		hashed, compared, held := hashes.Load(), compares.Load(), holds.Load()
		units := [][]string{{node(1)}, {node(tc.other)}}
		saved := openExport
		laterOpened := make(chan struct{})
		var once sync.Once
		var openedFirst atomic.Bool
		openExport = func(p string) (io.ReadCloser, error) {
			f, err := saved(p)
			if err != nil || !strings.HasPrefix(p, units[0][0]+string(filepath.Separator)) {
				once.Do(func() { close(laterOpened) })
				return f, err
			}
			select {
			case <-laterOpened:
				openedFirst.Store(true)
			case <-time.After(300 * time.Millisecond):
			}
			return f, nil
		}
		ex := NewExports(units)
		ex.Together()
		opts := Options{Compact: true}
		snaps := make([][]*model.Snapshot, 2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, u := range units {
			wg.Add(1)
			go func() {
				defer wg.Done()
				o := opts
				o.Exports = ex.Of(i)
				snaps[i], errs[i] = Load(u, o)
			}()
		}
		wg.Wait()
		openExport = saved
		for i, u := range units {
			if errs[i] != nil {
				t.Fatalf("%s: %v", u[0], errs[i])
			}
			alone, err := Load(u, opts)
			if err != nil {
				t.Fatal(err)
			}
			has := likeAlone(t, u[0], snaps[i][0], alone[0], changed)
			if want := i == 1 && tc.other == 3; has != want {
				t.Errorf("%s: endpoint %s: %t, want %t", u[0], changed, has, want)
			}
		}
		if shared := snaps[0][0].Objects.Services[0] == snaps[1][0].Objects.Services[0]; shared != tc.shared {
			t.Errorf("node-0001 and node-%04d loaded together share their export's objects: %t, want %t", tc.other, shared, tc.shared)
		}
		if first := openedFirst.Load(); first == tc.shared {
			t.Errorf("node-%04d opened its export to decode it while node-0001's was held back: %t, want %t", tc.other, first, !tc.shared)
		}
		if ex.held != nil {
			t.Errorf("an export is held once both units are loaded: %s", ex.held.name)
		}
		if got := hashes.Load() - hashed; got != 0 {
			t.Errorf("node-0001 and node-%04d: %d files hashed, want none", tc.other, got)
		}
		if got := compares.Load() - compared; got != tc.compared {
			t.Errorf("node-0001 and node-%04d: %d pairs of files compared byte for byte, want %d", tc.other, got, tc.compared)
		}
		// The later unit's export differs: it opened it before the
		// earlier one opened its own, compared already.
		if got, want := holds.Load()-held, map[bool]int64{true: 1, false: 0}[tc.shared]; got != want {
			t.Errorf("node-0001 and node-%04d: %d exports held for the later unit, want %d", tc.other, got, want)
		}
	}
}

// TestExportsOneFile: units whose exports are one file on disk (hard
// links, or one path given twice) share its objects without hashing it;
// a copy of it, the same bytes in another file, is hashed and shares
// them too, and a file changed after the units were listed is hashed
// and decoded anew.
func TestExportsOneFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		// copyLast makes the last unit's export a copy; touch changes
		// the mtime of the last unit's export, a hard link, after the
		// units are listed.
		copyLast, touch bool
		hashes          int64
		shared          []bool
	}{
		{name: "hard links", hashes: 0, shared: []bool{false, true, true}},
		{name: "a copy", copyLast: true, hashes: 2, shared: []bool{false, true, true}},
		{name: "touched", touch: true, hashes: 0, shared: []bool{false, true, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			spec := benchgen.Spec{Services: 200, Endpoints: 800, NodePortEvery: 4}
			if err := spec.WriteFleet(dir, 3); err != nil {
				t.Fatal(err)
			}
			var units [][]string
			first := filepath.Join(dir, "node-0001", "cluster", "cluster.json")
			for i := 1; i <= 3; i++ {
				u := filepath.Join(dir, fmt.Sprintf("node-%04d", i))
				units = append(units, []string{u})
				if i == 1 {
					continue
				}
				p := filepath.Join(u, "cluster", "cluster.json")
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				if i == 3 && tc.copyLast {
					data, err := os.ReadFile(first)
					if err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(p, data, 0o644); err != nil {
						t.Fatal(err)
					}
				} else if err := os.Link(first, p); err != nil {
					t.Fatal(err)
				}
			}
			ex := NewExports(units)
			if ex == nil {
				t.Fatal("NewExports: nil")
			}
			before := hashes.Load()
			previous := ""
			for i, u := range units {
				if i == 2 && tc.touch {
					later := time.Now().Add(time.Hour)
					if err := os.Chtimes(first, later, later); err != nil {
						t.Fatal(err)
					}
				}
				snaps, err := Load(u, Options{Compact: true, Exports: ex.Of(i)})
				if err != nil {
					t.Fatal(err)
				}
				id := fmt.Sprintf("%p", snaps[0].Objects.Services[0])
				if got := id == previous; got != tc.shared[i] {
					t.Errorf("unit %d: objects of the previous unit's export: %t, want %t", i, got, tc.shared[i])
				}
				previous = id
				if in := snaps[0].Objects.Services[0].Pos.File; !strings.Contains(in, "cluster") {
					t.Errorf("unit %d: first Service at %s", i, in)
				}
			}
			if got := hashes.Load() - before; got != tc.hashes {
				t.Errorf("files hashed: %d, want %d", got, tc.hashes)
			}
		})
	}
}

// likeAlone checks that the snapshot s of bundle is the one a of loading
// it alone (its Services and ports, its first Service as decoded, every
// input of its own bundle) and returns whether it has an endpoint at
// addr.
func likeAlone(t *testing.T, bundle string, s, a *model.Snapshot, addr netip.Addr) bool {
	t.Helper()
	if len(s.Objects.Services) != len(a.Objects.Services) || len(s.Ports) != len(a.Ports) {
		t.Fatalf("%s: %d Services, %d ports; alone %d, %d", bundle, len(s.Objects.Services), len(s.Ports), len(a.Objects.Services), len(a.Ports))
	}
	if got, want := fmt.Sprintf("%s %v", s.Objects.Services[0].Pos, *s.Objects.Services[0].Service), fmt.Sprintf("%s %v", a.Objects.Services[0].Pos, *a.Objects.Services[0].Service); got != want {
		t.Errorf("%s: the first Service is %s, alone %s", bundle, got, want)
	}
	for _, in := range s.Inputs {
		if in.Bundle != bundle {
			t.Errorf("%s: input %s of bundle %s", bundle, in.Path, in.Bundle)
		}
	}
	for _, sp := range s.Ports {
		for _, e := range sp.Endpoints {
			if e.IP == addr {
				return true
			}
		}
	}
	return false
}

// localFleet writes bundles of the nodes named (each with its own dump
// and configuration) whose exports are one export's copies, byte for byte
// alike, and returns their units. The export's endpoints run on
// bench-node-1 to bench-node-3: each of those nodes has its own.
func localFleet(t *testing.T, nodes []string) [][]string {
	t.Helper()
	spec := benchgen.Spec{Services: 300, Endpoints: 1200, NodePortEvery: 4}
	bundles, err := spec.WriteNodes(t.TempDir(), nodes, nil)
	if err != nil {
		t.Fatal(err)
	}
	var units [][]string
	for _, b := range bundles {
		units = append(units, []string{b})
	}
	return units
}

// TestExportsSharedDraft: units whose exports are alike build the
// service ports of the export once, and each node gets its own copies,
// the endpoints local to it copied and marked so: nodes of other names
// sharing one export (and one node twice) have the service ports of their
// analysis alone, none of them, nor a local endpoint, shared with another
// node.
func TestExportsSharedDraft(t *testing.T) {
	units := localFleet(t, []string{"bench-node-1", "bench-node-2", "bench-node-3", "bench-node-1"})
	ex := NewExports(units)
	if ex == nil {
		t.Fatal("NewExports: nil for units holding exports alike")
	}
	opts := Options{Compact: true}
	seen := map[any]string{}
	before := portDrafts.Load()
	for i, u := range units {
		alone, err := Load(u, opts)
		if err != nil {
			t.Fatal(err)
		}
		o := opts
		o.Exports = ex.Of(i)
		snaps, err := Load(u, o)
		if err != nil {
			t.Fatal(err)
		}
		s, a := snaps[0], alone[0]
		if !portsAlike(s.Ports, a.Ports) {
			t.Errorf("%s: the service ports differ from those of the node loaded alone", u[0])
		}
		local := 0
		for _, sp := range s.Ports {
			if other, ok := seen[sp]; ok {
				t.Fatalf("%s: service port %s is %s's too", u[0], sp, other)
			}
			seen[sp] = u[0]
			for _, e := range sp.Endpoints {
				// An endpoint local to no node is shared.
				if other, ok := seen[e]; ok && e.Local {
					t.Fatalf("%s: local endpoint %s of %s is %s's too", u[0], e, sp, other)
				}
				seen[e] = u[0]
				if e.Local {
					local++
					if e.NodeName != s.Node.Name {
						t.Errorf("%s: endpoint %s of node %s is local to node %s", u[0], e, e.NodeName, s.Node.Name)
					}
				}
			}
		}
		if local == 0 {
			t.Errorf("%s: no local endpoint on node %s: the test tells nothing", u[0], s.Node.Name)
		}
	}
	// Loaded alone, each unit drafts its own: 4; together, one more.
	if got := portDrafts.Load() - before; got != int64(len(units)+1) {
		t.Errorf("%d drafts of the service ports, want %d (one per unit alone, one for the units together)", got, len(units)+1)
	}
}

// TestSameBytes: two files are alike when they hold the same bytes, told
// apart at a difference anywhere (the first byte, the last, one past a
// chunk read), or by their sizes; one file is alike itself.
func TestSameBytes(t *testing.T) {
	dir := t.TempDir()
	base := bytes.Repeat([]byte("0123456789abcdef"), (600<<10)/16)
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flip := func(at int) []byte {
		out := bytes.Clone(base)
		out[at] ^= 1
		return out
	}
	a := write("a", base)
	for _, tc := range []struct {
		name string
		data []byte
		same bool
	}{
		{"copy", base, true},
		{"first byte", flip(0), false},
		{"last byte", flip(len(base) - 1), false},
		{"past a chunk", flip(256 << 10), false},
		{"longer", append(bytes.Clone(base), 'x'), false},
		{"shorter", base[:len(base)-1], false},
	} {
		b := write(tc.name, tc.data)
		same, ai, bi := sameBytes(a, b)
		if same != tc.same {
			t.Errorf("%s: alike %t, want %t", tc.name, same, tc.same)
		}
		if same && (ai == nil || bi == nil || ai.Size() != int64(len(base))) {
			t.Errorf("%s: the files as compared: %v, %v", tc.name, ai, bi)
		}
	}
	if same, _, _ := sameBytes(a, a); !same {
		t.Error("a file is not alike itself")
	}
	if same, _, _ := sameBytes(a, filepath.Join(dir, "missing")); same {
		t.Error("a missing file is alike")
	}
}

// portsAlike reports whether two nodes' service ports say the same: the
// ports' fields, and of each endpoint its fields, hints and positions
// (that of its object and that of its address). Where an endpoint keeps
// them (a source shared with the endpoints read with it, or one of its
// own for a node's copy of a shared draft) is not compared.
func portsAlike(a, b []*model.ServicePort) bool {
	if len(a) != len(b) {
		return false
	}
	type endpoint struct {
		model.Endpoint
		pos, addr    string
		zones, nodes []string
	}
	view := func(e *model.Endpoint) endpoint {
		v := endpoint{pos: e.Pos().String(), addr: e.AddressPos().String(), zones: e.ZoneHints(), nodes: e.NodeHints()}
		v.IP, v.Port, v.Ready, v.Serving, v.Terminating, v.Local, v.NodeName, v.Zone = e.IP, e.Port, e.Ready, e.Serving, e.Terminating, e.Local, e.NodeName, e.Zone
		return v
	}
	for i := range a {
		x, y := *a[i], *b[i]
		if len(x.Endpoints) != len(y.Endpoints) {
			return false
		}
		for j := range x.Endpoints {
			if !reflect.DeepEqual(view(x.Endpoints[j]), view(y.Endpoints[j])) {
				return false
			}
		}
		x.Endpoints, y.Endpoints = nil, nil
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}
