package trace_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/analyzer/trace"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

var (
	bundleMu    sync.Mutex
	bundleCache = map[string]*model.Snapshot{}
)

// bundle loads testdata/bundles/<name> once.
func bundle(tb testing.TB, name string) *model.Snapshot {
	tb.Helper()
	bundleMu.Lock()
	defer bundleMu.Unlock()
	if s := bundleCache[name]; s != nil {
		return s
	}
	snaps, err := load.Load([]string{filepath.Join("..", "..", "testdata", "bundles", name)}, load.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	if len(snaps) != 1 {
		tb.Fatalf("%s: %d snapshots", name, len(snaps))
	}
	bundleCache[name] = snaps[0]
	return snaps[0]
}

// parsePackets reads one packet a line: "FROM PROTO DST [SRC]".
func parsePackets(tb testing.TB, data []byte) []trace.Packet {
	tb.Helper()
	var out []trace.Packet
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			tb.Fatalf("packets:%d: want FROM PROTO DST [SRC]", n)
		}
		from, err := model.ParseOrigin(f[0])
		if err != nil {
			tb.Fatalf("packets:%d: %v", n, err)
		}
		dst, err := netip.ParseAddrPort(f[2])
		if err != nil {
			tb.Fatalf("packets:%d: %v", n, err)
		}
		p := trace.Packet{From: from, Proto: f[1], Dst: dst}
		if len(f) > 3 {
			if p.Src, err = netip.ParseAddr(f[3]); err != nil {
				tb.Fatalf("packets:%d: %v", n, err)
			}
		}
		out = append(out, p)
	}
	return out
}

// render prints a result for goldens: one block per path, a line per step.
func render(res *trace.Result, positions bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", res.Packet)
	for _, w := range res.Warnings {
		fmt.Fprintf(&b, "  warning: %s\n", w)
	}
	for _, p := range res.Paths {
		fmt.Fprintf(&b, "  %.4f %s %s", p.Probability, p.Verdict, p.Destination)
		if p.Masquerade {
			b.WriteString(" masquerade")
		}
		if p.SNAT != "" {
			b.WriteString(" snat " + p.SNAT)
		}
		b.WriteString("\n")
		for _, c := range p.Conditions {
			fmt.Fprintf(&b, "    if %s\n", c)
		}
		for _, s := range p.Steps {
			fmt.Fprintf(&b, "    %s %s: %s", s.Table, s.Chain, s.Rule)
			if positions {
				if s.Line > 0 {
					fmt.Fprintf(&b, " [%d]", s.Line)
				}
				if s.Path != "" {
					fmt.Fprintf(&b, " [%s]", s.Path)
				}
			}
			if s.Note != "" {
				fmt.Fprintf(&b, " (%s)", s.Note)
			}
			if s.Warning != "" {
				fmt.Fprintf(&b, " WARNING %s", s.Warning)
			}
			b.WriteString("\n")
		}
		for _, w := range p.Warnings {
			fmt.Fprintf(&b, "    warning: %s\n", w)
		}
	}
	return b.String()
}

// onlyForm keeps the rulesets of one form (text or JSON) of a snapshot.
func onlyForm(s *model.Snapshot, json bool) *model.Snapshot {
	c := *s
	c.NFT = nil
	for _, rs := range s.NFT {
		if len(rs.Tables) > 0 && strings.HasPrefix(rs.Tables[0].Pos.Path, "$") == json {
			c.NFT = append(c.NFT, rs)
		}
	}
	return &c
}

// TestNFTGolden traces the packets of every testdata/trace/nftables/*.txtar
// through the bundle it names, and checks that the text and the JSON
// listings of the ruleset give the same paths.
func TestNFTGolden(t *testing.T) {
	goldenFiles(t, "../../testdata/trace/nftables/*.txtar", func(t *testing.T, name string, a *txtar.Archive) map[string][]byte {
		bname := strings.TrimSpace(string(section(a, "bundle")))
		s := bundle(t, bname)
		pkts := parsePackets(t, section(a, "packets"))
		txt := trace.FromSnapshot(resolve.Resolve(onlyForm(s, false), resolve.Options{Mode: model.ModeNFTables}))
		js := trace.FromSnapshot(resolve.Resolve(onlyForm(s, true), resolve.Options{Mode: model.ModeNFTables}))
		var out strings.Builder
		for _, p := range pkts {
			rt, err := trace.Trace(txt, p, trace.Options{})
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			out.WriteString(render(rt, true))
			if len(js.NFT) > 0 {
				rj, err := trace.Trace(js, p, trace.Options{})
				if err != nil {
					t.Fatalf("%s (JSON): %v", p, err)
				}
				if a, b := render(rt, false), render(rj, false); a != b {
					t.Errorf("%s: text and JSON listings differ:\n%s", p, lineDiff([]byte(a), []byte(b)))
				}
				checkPositions(t, rt, false)
				checkPositions(t, rj, true)
			}
			checkSum(t, rt)
		}
		return map[string][]byte{"trace": []byte(out.String())}
	})
}

func checkPositions(t *testing.T, r *trace.Result, json bool) {
	t.Helper()
	for _, p := range r.Paths {
		for _, s := range p.Steps {
			if json && (s.Path == "" || s.Line != 0) || !json && (s.Line == 0 || s.Path != "") {
				t.Errorf("%s: step %s %s: file %s line %d path %q", r.Packet, s.Chain, s.Rule, s.File, s.Line, s.Path)
			}
		}
	}
}

func checkSum(t *testing.T, r *trace.Result) {
	t.Helper()
	sum := 0.0
	for _, p := range r.Paths {
		sum += p.Probability
	}
	if sum < 1-1e-9 || sum > 1+1e-9 {
		t.Errorf("%s: probabilities sum to %v", r.Packet, sum)
	}
}

// goldenFiles runs fn for every txtar archive matching pattern, in a
// subtest each, and compares the sections fn returns with the archive's
// (with -update, rewrites them).
func goldenFiles(t *testing.T, pattern string, fn func(t *testing.T, name string, a *txtar.Archive) map[string][]byte) {
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files match %s (%v)", pattern, err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txtar")
		t.Run(name, func(t *testing.T) {
			a, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			got := fn(t, name, a)
			changed := false
			for sec, data := range got {
				if bytes.Equal(section(a, sec), data) {
					continue
				}
				if !*parsetest.Update {
					t.Errorf("section %q differs from %s (go test -update rewrites it):\n%s", sec, file, lineDiff(section(a, sec), data))
					continue
				}
				changed = true
				found := false
				for i := range a.Files {
					if a.Files[i].Name == sec {
						a.Files[i].Data, found = data, true
					}
				}
				if !found {
					a.Files = append(a.Files, txtar.File{Name: sec, Data: data})
				}
			}
			if changed {
				if err := os.WriteFile(file, txtar.Format(a), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func section(a *txtar.Archive, name string) []byte {
	for _, f := range a.Files {
		if f.Name == name {
			return f.Data
		}
	}
	return nil
}

// lineDiff shows the first line where want and got differ.
func lineDiff(want, got []byte) string {
	wl, gl := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\n  want: %s\n  got:  %s", i+1, w, g)
		}
	}
	return "(equal)"
}
