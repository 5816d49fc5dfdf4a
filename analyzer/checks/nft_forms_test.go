package checks_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/checktest"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/internal/nftjson"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/nft"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestNFTFormsSameFindings checks, for every nftables scenario, that the
// text and the JSON listing of the same ruleset give the same findings:
// the scenario's listing is converted to the other form (nftjson.Format,
// which prints what nft -j prints, or nft.Format), both bundles are
// analysed, and the findings must be equal once each evidence position of
// the one listing is replaced by the position of the same object (table,
// set, element, chain, rule) in the other.
func TestNFTFormsSameFindings(t *testing.T) {
	files := checktest.Files(t, "scenarios/nftables/*.txtar")
	if len(files) == 0 {
		t.Fatal("no nftables scenarios")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			t.Parallel()
			s := checktest.Load(t, file)
			converted := 0
			err := filepath.WalkDir(s.Dir, func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				data, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				kind := parsers.Detect(data)
				if kind != parsers.KindNFTText && kind != parsers.KindNFTJSON {
					return nil
				}
				rel, _ := filepath.Rel(s.Dir, p)
				compareForms(t, s, filepath.ToSlash(rel), data, kind)
				converted++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if converted == 0 {
				t.Fatal("scenario has no nft listing")
			}
		})
	}
}

// compareForms analyses the scenario as it is and with the listing rel
// converted to the other form, and compares the findings.
func compareForms(t *testing.T, s *checktest.Scenario, rel string, data []byte, kind parsers.Kind) {
	t.Helper()
	orig, err := nft.Parse(rel, data)
	if err != nil {
		t.Fatal(err)
	}
	other := strings.TrimSuffix(rel, filepath.Ext(rel))
	var conv []byte
	if kind == parsers.KindNFTText {
		other += ".json"
		conv = nftjson.Format(orig)
	} else {
		other += ".txt"
		conv = nft.Format(orig)
	}
	dir2 := t.TempDir()
	parsetest.CopyTree(t, s.Dir, dir2, nil)
	if err := os.Remove(filepath.Join(dir2, rel)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir2, filepath.FromSlash(other)), conv, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := nft.Parse(other, conv)
	if err != nil {
		t.Fatalf("converted listing does not parse: %v", err)
	}
	posMap := nftPositions(t, orig, back)

	a := analyse(t, s.Dir, s.Options)
	b := analyse(t, dir2, s.Options)
	for i := range a.Findings {
		for j := range a.Findings[i].Evidence {
			ev := &a.Findings[i].Evidence[j]
			if ev.File != rel {
				continue
			}
			p, ok := posMap[posKey(parsers.Pos{File: ev.File, Line: ev.Line, Path: ev.Path})]
			if !ok {
				t.Errorf("%s: evidence %s:%s of %s is no object of the listing", a.Findings[i].Check, ev.File, locOf(*ev), a.Findings[i].Message)
				continue
			}
			ev.File, ev.Line, ev.Path = p.File, p.Line, p.Path
		}
	}
	if diff := cmp.Diff(a.Findings, b.Findings); diff != "" {
		t.Errorf("findings of %s and of its conversion to %s differ (-%s +%s):\n%s", rel, other, rel, other, diff)
	}
	if diff := cmp.Diff(a.Statuses, b.Statuses); diff != "" {
		t.Errorf("check statuses differ (-%s +%s):\n%s", rel, other, diff)
	}
}

func analyse(t *testing.T, dir string, opts load.Options) *checks.Result {
	t.Helper()
	return analyseWithOpts(t, dir, opts, checks.All)
}

func analyseWithOpts(t *testing.T, dir string, opts load.Options, list []*checks.Check) *checks.Result {
	t.Helper()
	snaps, err := load.Load([]string{dir}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 1 {
		t.Fatalf("%d snapshots", len(snaps))
	}
	return checks.Run(snaps[0], list)
}

func locOf(e model.Evidence) string {
	if e.Path != "" {
		return e.Path
	}
	return strconv.Itoa(e.Line)
}

func posKey(p parsers.Pos) string { return p.File + "\x00" + strconv.Itoa(p.Line) + "\x00" + p.Path }

// nftPositions maps the position of every object of a to the position of
// the same object of b (tables by family and name, sets and chains by
// name, elements and rules by index).
func nftPositions(t *testing.T, a, b *nft.Ruleset) map[string]parsers.Pos {
	t.Helper()
	m := map[string]parsers.Pos{}
	for _, ta := range a.Tables {
		tb := b.Table(ta.Family, ta.Name)
		if tb == nil {
			t.Fatalf("table %s %s lost in the conversion", nft.FamilyName(ta.Family), ta.Name)
		}
		m[posKey(ta.Pos)] = tb.Pos
		for _, sa := range ta.Sets {
			sb := tb.Set(sa.Name)
			if sb == nil || len(sb.Elements) != len(sa.Elements) {
				t.Fatalf("set %s changed in the conversion", sa.Name)
			}
			m[posKey(sa.Pos)] = sb.Pos
			for i := range sa.Elements {
				m[posKey(sa.Elements[i].Pos())] = sb.Elements[i].Pos()
			}
		}
		for _, ca := range ta.Chains {
			cb := tb.Chain(ca.Name)
			if cb == nil || len(cb.Rules) != len(ca.Rules) {
				t.Fatalf("chain %s changed in the conversion", ca.Name)
			}
			m[posKey(ca.Pos())] = cb.Pos()
			for i := range ca.Rules {
				m[posKey(ca.Rules[i].Pos())] = cb.Rules[i].Pos()
			}
		}
	}
	return m
}
