package cmd

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// memoryLimit returns the soft memory limit without changing it.
func memoryLimit() int64 { return debug.SetMemoryLimit(-1) }

// gcPercent returns the GC percent without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// keepGCSettings sets a GC percent of its own, so that a change and a
// restore cannot be mistaken for leaving it alone, and puts the memory
// limit and the GC percent back when the test ends.
func keepGCSettings(t *testing.T) (limit int64, percent int) {
	const mark = 137
	limit, before := memoryLimit(), debug.SetGCPercent(mark)
	t.Cleanup(func() {
		debug.SetMemoryLimit(limit)
		debug.SetGCPercent(before)
	})
	return limit, mark
}

// TestCollectLoaded checks the settings of the checks: the GC percent
// is checksGCPercent until the analysis is over, and no memory limit is
// set.
func TestCollectLoaded(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	t.Setenv("GOGC", "")
	limit, percent := keepGCSettings(t)
	restore := collectLoaded(0, 0)
	if got := gcPercent(); got != checksGCPercent {
		t.Errorf("GC percent %d during the checks, want %d", got, checksGCPercent)
	}
	if got := memoryLimit(); got != limit {
		t.Errorf("memory limit %d during the checks, want %d as before", got, limit)
	}
	restore()
	if got := gcPercent(); got != percent {
		t.Errorf("GC percent %d after the analysis, want %d as before", got, percent)
	}
}

// TestCollectLoadedEnvironment checks that GOGC or GOMEMLIMIT in the
// environment wins: the GC percent and the limit are left as they are.
func TestCollectLoadedEnvironment(t *testing.T) {
	limit, percent := keepGCSettings(t)
	for _, tc := range []struct{ gomemlimit, gogc string }{
		{"", "200"},
		{"1GiB", ""},
		{"1GiB", "off"},
	} {
		t.Setenv("GOMEMLIMIT", tc.gomemlimit)
		t.Setenv("GOGC", tc.gogc)
		restore := collectLoaded(64<<20, 0)
		if got := gcPercent(); got != percent {
			t.Errorf("GOMEMLIMIT=%q GOGC=%q: GC percent %d during the checks, want %d as set", tc.gomemlimit, tc.gogc, got, percent)
		}
		if got := memoryLimit(); got != limit {
			t.Errorf("GOMEMLIMIT=%q GOGC=%q: memory limit %d during the checks, want %d as set", tc.gomemlimit, tc.gogc, got, limit)
		}
		restore()
		if gcPercent() != percent || memoryLimit() != limit {
			t.Errorf("GOMEMLIMIT=%q GOGC=%q: GC percent or memory limit changed after the analysis", tc.gomemlimit, tc.gogc)
		}
	}
}

// TestChecksStart checks that once a node is loaded the pacer of one
// unit (one with a floor) paces the checks at unitChecksGCPercent, after
// collections too, that a fleet's pacer (a room, no floor) keeps its
// base, and that checksStart does nothing once the analysis is over.
func TestChecksStart(t *testing.T) {
	for _, tc := range []struct {
		name        string
		floor, room int64
		want        int
	}{
		{"one unit", 1, 0, unitChecksGCPercent},
		{"fleet", 0, fleetRoom, checksGCPercent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOMEMLIMIT", "")
			t.Setenv("GOGC", "")
			_, percent := keepGCSettings(t)
			restore := collectLoaded(tc.floor, tc.room)
			checksStart()
			if base := pacerBase(t); base != tc.want {
				t.Errorf("the pacer's base is %d once the node is loaded, want %d", base, tc.want)
			}
			if tc.floor > 0 {
				if got := gcPercent(); got != tc.want {
					t.Errorf("GC percent %d as the checks start, want %d at once", got, tc.want)
				}
				// The finalizer of the next collection keeps the new base.
				runtime.GC()
				time.Sleep(20 * time.Millisecond)
				if got := gcPercent(); got != tc.want {
					t.Errorf("GC percent %d after a collection during the checks, want %d", got, tc.want)
				}
			}
			restore()
			checksStart()
			if got := gcPercent(); got != percent {
				t.Errorf("GC percent %d after the analysis, want %d as before", got, percent)
			}
			if activePacer.Load() != nil {
				t.Error("a pacer is left once the analysis is over")
			}
		})
	}
}

// pacerBase returns the base GC percent of the running pacer.
func pacerBase(t *testing.T) int {
	p := activePacer.Load()
	if p == nil {
		t.Error("no pacer while the analysis runs")
		return -1
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.base
}

// TestAnalyzeChecksGCPercent runs analyze of one bundle and of two, and
// checks the GC percent the pacer keeps as the checks of a node are
// over: that of one unit's checks (unitChecksGCPercent) for one bundle
// alone, the fleet's for two.
func TestAnalyzeChecksGCPercent(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	t.Setenv("GOGC", "")
	keepGCSettings(t)
	var mu sync.Mutex
	var seen []int
	unitEvent = func(event string, i int) {
		if event == "analysed" {
			mu.Lock()
			seen = append(seen, pacerBase(t))
			mu.Unlock()
		}
	}
	defer func() { unitEvent = nil }()
	b := testdata(t, "bundles", "iptables-mini")
	for _, tc := range []struct {
		name  string
		paths []string
		one   bool
	}{
		{"one bundle", []string{b}, true},
		{"two bundles", []string{b, testdata(t, "bundles", "iptables-healthy")}, false},
	} {
		seen = nil
		f, _ := testFactory()
		if code := Run(f, append([]string{"analyze", "-o", "json"}, tc.paths...)); code > 1 {
			t.Fatalf("%s: exit code %d", tc.name, code)
		}
		mu.Lock()
		if len(seen) != len(tc.paths) {
			t.Errorf("%s: %d nodes analysed, want %d", tc.name, len(seen), len(tc.paths))
		}
		for _, got := range seen {
			if (got == unitChecksGCPercent) != tc.one {
				t.Errorf("%s: the pacer's base is %d as the checks end (one unit's checks: %d)", tc.name, got, unitChecksGCPercent)
			}
		}
		mu.Unlock()
	}
}

// TestAnalyzeRestoresGCSettings runs analyze and checks that the GC
// percent it set for the checks is gone afterwards and that it left the
// memory limit alone.
func TestAnalyzeRestoresGCSettings(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	t.Setenv("GOGC", "")
	limit, percent := keepGCSettings(t)
	f, _ := testFactory()
	if code := Run(f, []string{"analyze", testdata(t, "bundles", "iptables-mini"), "-o", "json"}); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if got := memoryLimit(); got != limit {
		t.Errorf("memory limit %d after analyze, want %d as before", got, limit)
	}
	if got := gcPercent(); got != percent {
		t.Errorf("GC percent %d after analyze, want %d as before", got, percent)
	}
}

func TestFloorGCPercent(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		name               string
		live, roots, floor uint64
		want               int
	}{
		{"no floor", 50 * mb, 1 * mb, 0, checksGCPercent},
		{"floor under the room", 50 * mb, 1 * mb, 60 * mb, checksGCPercent},
		{"floor at the room", 40 * mb, 0, 60 * mb, checksGCPercent},
		{"floor over the room", 20 * mb, 0, 60 * mb, 200},
		{"roots share the room", 20 * mb, 20 * mb, 60 * mb, 100},
		{"little live: the least goal grows with the percent", 1 * mb, 0, 60 * mb, 1500},
		{"nothing live", 0, 0, 60 * mb, 1500},
	} {
		if tc.floor == 0 {
			if got := floorGCPercent(tc.live, tc.roots, tc.floor, 100); got != 100 {
				t.Errorf("%s: floorGCPercent at a base of 100 = %d", tc.name, got)
			}
		}
		if got := floorGCPercent(tc.live, tc.roots, tc.floor, checksGCPercent); got != tc.want {
			t.Errorf("%s: floorGCPercent(%d, %d, %d) = %d, want %d", tc.name, tc.live, tc.roots, tc.floor, got, tc.want)
		}
	}
}

// TestInputSize checks the floor of a run's heap: the bytes of its files,
// those below directories included, hidden ones aside.
func TestInputSize(t *testing.T) {
	dir := t.TempDir()
	for name, n := range map[string]int{"a/node/iptables-save.txt": 1000, "a/cluster/c.json": 300, "a/.hidden/x": 50, "a/.y": 7, "loose.txt": 20} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := inputSize([]string{filepath.Join(dir, "a"), filepath.Join(dir, "loose.txt"), filepath.Join(dir, "missing")}); got != 1320 {
		t.Errorf("inputSize = %d, want 1320", got)
	}
	// A gzip file counts as what it decompresses to.
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(make([]byte, 100000)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	tgz := filepath.Join(dir, "b.tgz")
	if err := os.WriteFile(tgz, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := inputSize([]string{tgz}); got != 100000 {
		t.Errorf("inputSize of a gzip file of 100000 bytes = %d", got)
	}
}

// TestFloorAt checks the floor a pacer gives a heap once a collection
// left some bytes live: the floor, or what is live and the room.
func TestFloorAt(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		name              string
		floor, room, live uint64
		want              uint64
	}{
		{"floor alone", 60 * mb, 0, 50 * mb, 60 * mb},
		{"floor alone, more live", 60 * mb, 0, 90 * mb, 60 * mb},
		{"room alone", 0, 16 * mb, 5 * mb, 21 * mb},
		{"room over the floor", 4 * mb, 16 * mb, 5 * mb, 21 * mb},
		{"floor over the room", 200 * mb, 16 * mb, 100 * mb, 200 * mb},
		{"room over the floor once more is live", 200 * mb, 16 * mb, 190 * mb, 206 * mb},
	} {
		p := &floorPacer{floor: tc.floor, room: tc.room}
		if got := p.floorAt(tc.live); got != tc.want {
			t.Errorf("%s: floorAt(%d) with floor %d and room %d = %d, want %d", tc.name, tc.live, tc.floor, tc.room, got, tc.want)
		}
	}
	// A small fleet's heap: its room is more than half of what is live,
	// so the GC percent is above the base.
	if got := floorGCPercent(5*mb, 0, (&floorPacer{room: fleetRoom}).floorAt(5*mb), checksGCPercent); got != 320 {
		t.Errorf("GC percent of 5 MB live with the fleet's room = %d, want 320", got)
	}
	// A large one's: half of what is live is more than the room.
	if got := floorGCPercent(250*mb, 0, (&floorPacer{room: fleetRoom}).floorAt(250*mb), checksGCPercent); got != checksGCPercent {
		t.Errorf("GC percent of 250 MB live with the fleet's room = %d, want %d", got, checksGCPercent)
	}
}

// TestCollectLoadedPacing checks that a floor, or a room over what is
// live, raises the GC percent while little is live, that it is
// checksGCPercent again once a collection leaves live enough (two thirds
// of the floor; twice the room), and that the GC percent is put back when
// the analysis is over.
func TestCollectLoadedPacing(t *testing.T) {
	for _, tc := range []struct {
		name string
		// pacing returns the floor and the room of a heap where live
		// bytes are live, and how much more to make live.
		pacing func(live int64) (floor, room, more int64)
	}{
		{"floor", func(live int64) (int64, int64, int64) {
			floor := 2*live + 32<<20 // twice what other tests left live
			return floor, 0, floor*3/4 - live
		}},
		{"room", func(live int64) (int64, int64, int64) {
			room := live + 16<<20 // more than half of what other tests left live
			return 0, room, 3 * room
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOMEMLIMIT", "")
			t.Setenv("GOGC", "")
			_, percent := keepGCSettings(t)
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			floor, room, more := tc.pacing(int64(ms.HeapAlloc))
			restore := collectLoaded(floor, room)
			if got := gcPercent(); got <= checksGCPercent {
				t.Errorf("GC percent %d with %d bytes live, a floor of %d and a room of %d bytes, want more than %d", got, ms.HeapAlloc, floor, room, checksGCPercent)
			}
			live := make([]byte, more)
			for i := range live {
				live[i] = 1
			}
			deadline := time.Now().Add(5 * time.Second)
			for gcPercent() != checksGCPercent && time.Now().Before(deadline) {
				runtime.GC()
				time.Sleep(10 * time.Millisecond)
			}
			if got := gcPercent(); got != checksGCPercent {
				t.Errorf("GC percent %d with %d bytes more live, want %d", got, len(live), checksGCPercent)
			}
			runtime.KeepAlive(live)
			restore()
			runtime.GC()
			time.Sleep(10 * time.Millisecond)
			if got := gcPercent(); got != percent {
				t.Errorf("GC percent %d after the analysis, want %d as before", got, percent)
			}
		})
	}
}

// TestHeapPacing checks the floor and the room of a run's heap: one
// unit's heap has a floor of its size, a fleet's the room of fleetRoom
// over what is live, whatever the sizes of its units.
func TestHeapPacing(t *testing.T) {
	dir := t.TempDir()
	var units [][]string
	for i, n := range []int{300, 1000, 200} {
		p := filepath.Join(dir, fmt.Sprintf("b%d", i), "node", "iptables-save.txt")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
		units = append(units, []string{filepath.Join(dir, fmt.Sprintf("b%d", i))})
	}
	for _, tc := range []struct {
		name        string
		units       [][]string
		sharing     bool
		floor, room int64
		base        int
	}{
		{"one unit", units[1:2], false, 1000, 0, checksGCPercent},
		{"two units", units[:2], false, 0, fleetRoom, checksGCPercent},
		{"three units", units, false, 0, fleetRoom, checksGCPercent},
		{"three units sharing an export", units, true, 0, fleetRoom, sharedGCPercent},
	} {
		if floor, room, base := heapPacing(tc.units, tc.sharing); floor != tc.floor || room != tc.room || base != tc.base {
			t.Errorf("%s: heapPacing = %d, %d, %d, want %d, %d, %d", tc.name, floor, room, base, tc.floor, tc.room, tc.base)
		}
	}
}

// TestFleetCollectsDropped: a fleet starts a collection once each unit
// but the last is analysed and dropped, when the unit's node-level files
// are droppedCollectMin or more (lowered here to the test bundles' size);
// not for smaller units, a unit alone, a unit read from its node report,
// or when GOGC in the environment paces the collector.
func TestFleetCollectsDropped(t *testing.T) {
	keepGCSettings(t)
	var collections atomic.Int32
	before, least := collectAside, droppedCollectMin
	collectAside = func() { collections.Add(1) }
	defer func() { collectAside, droppedCollectMin = before, least }()
	var bundles []string
	for _, b := range []string{"iptables-mini", "iptables-healthy", "nftables-healthy"} {
		bundles = append(bundles, testdata(t, "bundles", b))
	}
	reported := reportedBundles(t)
	for _, tc := range []struct {
		name  string
		paths []string
		jobs  int
		least int64
		gogc  string
		want  int32
	}{
		{"large units", bundles, 1, 1, "", 2},
		{"large units, two jobs", bundles, 2, 1, "", 2},
		{"small units", bundles, 1, 16 << 20, "", 0},
		{"one unit", bundles[:1], 1, 1, "", 0},
		{"node reports", reported[:3], 1, 1, "", 0},
		{"GOGC set", bundles, 1, 1, "100", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOMEMLIMIT", "")
			t.Setenv("GOGC", tc.gogc)
			droppedCollectMin = tc.least
			collections.Store(0)
			if _, err := fleetJSON(t, tc.paths, fleetOptions{jobs: tc.jobs}); err != nil {
				t.Fatal(err)
			}
			if got := collections.Load(); got != tc.want {
				t.Errorf("%d collections started, want %d", got, tc.want)
			}
		})
	}
}
