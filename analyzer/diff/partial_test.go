package diff

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// copyBundle copies testdata/bundles/NAME into a temporary directory,
// passing each file (by its path in the bundle) through edit: nil drops
// the file.
func copyBundle(t *testing.T, name string, edit func(rel string, data []byte) []byte) string {
	t.Helper()
	src := filepath.Join(parsetest.Root(t), "testdata", "bundles", name)
	dir := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if data = edit(filepath.ToSlash(rel), data); data == nil {
			return nil
		}
		return os.WriteFile(filepath.Join(dir, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// firstLines returns the first n lines of data.
func firstLines(data []byte, n int) []byte {
	lines := strings.SplitAfter(string(data), "\n")
	return []byte(strings.Join(lines[:n], ""))
}

// dropLine returns data without its line that holds s.
func dropLine(t *testing.T, data []byte, s string) []byte {
	t.Helper()
	lines := strings.SplitAfter(string(data), "\n")
	for i, l := range lines {
		if strings.Contains(l, s) {
			return []byte(strings.Join(append(lines[:i:i], lines[i+1:]...), ""))
		}
	}
	t.Fatalf("no line holds %q", s)
	return nil
}

func compareDirs(t *testing.T, old, new string) *Result {
	t.Helper()
	o, err := load.Load([]string{old}, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := load.Load([]string{new}, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return Compare(Tool{}, o, n, Options{})
}

// TestPartialSide: a side whose data plane of a family is partial (a dump
// or listing cut short) or not given (a dump of one family, a listing of
// one table) yields no removal or addition for what it does not hold; a
// note per side and family says what was not compared, and the result,
// without other changes, does not differ but is incomplete.
func TestPartialSide(t *testing.T) {
	keep := func(rel string, data []byte) []byte { return data }
	cutIPTables := func(rel string, data []byte) []byte {
		if rel == "node/iptables-save.txt" {
			return firstLines(data, 200) // in nat, before KUBE-SERVICES
		}
		return data
	}
	noIP6 := func(rel string, data []byte) []byte {
		if rel == "node/ip6tables-save.txt" {
			return nil
		}
		return data
	}
	cutNFT := func(rel string, data []byte) []byte {
		switch rel {
		case "node/nft-ruleset.json":
			return nil
		case "node/nft-ruleset.txt":
			return firstLines(data, 200) // in table ip kube-proxy
		}
		return data
	}
	oneTable := func(rel string, data []byte) []byte {
		switch rel {
		case "node/nft-ruleset.json":
			return nil
		case "node/nft-ruleset.txt":
			s := string(data)
			return []byte(s[:strings.Index(s, "table ip6 kube-proxy")])
		}
		return data
	}
	for _, tc := range []struct {
		name, bundle string
		edit         func(string, []byte) []byte
		notes        []string
	}{
		{"iptables-save cut short", "iptables-healthy", cutIPTables,
			[]string{"its IPv4 data plane may not be whole: node/iptables-save.txt is partial: "}},
		{"no ip6tables-save", "iptables-healthy", noIP6,
			[]string{"its inputs hold no IPv6 data plane"}},
		{"nft list ruleset cut short", "nftables-healthy", cutNFT,
			[]string{"its IPv4 data plane may not be whole: node/nft-ruleset.txt is partial: ",
				"its IPv6 data plane may not be whole: node/nft-ruleset.txt is partial: "}},
		{"nft list table ip kube-proxy", "nftables-healthy", oneTable,
			[]string{"its inputs hold no IPv6 data plane"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			whole := copyBundle(t, tc.bundle, keep)
			partial := copyBundle(t, tc.bundle, tc.edit)
			for _, sides := range []struct{ name, other, old, new string }{
				{"new", "old", whole, partial},
				{"old", "new", partial, whole},
			} {
				r := compareDirs(t, sides.old, sides.new)
				if r.Differs() {
					t.Errorf("%s side partial: changes %q", sides.name, kinds(r))
				}
				if !r.Incomplete {
					t.Errorf("%s side partial: the result is not marked incomplete", sides.name)
				}
				notes := strings.Join(r.Notes, "\n")
				for _, want := range tc.notes {
					want = "the " + sides.name + " side: " + want
					if !strings.Contains(notes, want) {
						t.Errorf("%s side partial: no note %q in:\n%s", sides.name, want, notes)
					}
				}
				if !strings.Contains(notes, "was not compared: ") || !strings.Contains(notes, " only the "+sides.other+" side shows left out") {
					t.Errorf("%s side partial: the notes do not say what was left out:\n%s", sides.name, notes)
				}
			}
		})
	}
}

// TestPartialSideFindings: a finding the whole side reports and the
// partial side's check does not (what it would find missing may lie past
// the cut) is neither resolved nor appeared; a note says how many were
// not compared. What the partial side holds is still compared: a Service
// entry only it shows is added.
func TestPartialSideFindings(t *testing.T) {
	const entry = `"shop/storefront:http cluster IP"`
	missing := copyBundle(t, "iptables-healthy", func(rel string, data []byte) []byte {
		if rel == "node/iptables-save.txt" {
			return dropLine(t, data, entry)
		}
		return data
	})
	cut := copyBundle(t, "iptables-healthy", func(rel string, data []byte) []byte {
		if rel == "node/iptables-save.txt" {
			return firstLines(data, 262) // after shop/cart's entry, before shop/storefront's
		}
		return data
	})
	r := compareDirs(t, missing, cut)
	for _, c := range r.Changes {
		if c.Kind == FindingResolved || c.Kind == FindingAppeared || c.Kind == EntryRemoved || c.Kind == BackendRemoved {
			t.Errorf("change of what the cut side does not show: %s %s %s", c.Kind, c.Service, c.Subject)
		}
	}
	notes := strings.Join(r.Notes, "\n")
	if want := "service-missing findings only the old side reports were not compared: the check did not cover all of the new side"; !strings.Contains(notes, want) {
		t.Errorf("no note %q in:\n%s", want, notes)
	}
	if !r.Incomplete {
		t.Error("the result is not marked incomplete")
	}
	// The other way round, the entry the old side lacks is shown by the
	// new, whole side: it is added, and the finding resolved.
	r = compareDirs(t, missing, copyBundle(t, "iptables-healthy", func(_ string, data []byte) []byte { return data }))
	got := strings.Join(kinds(r), "\n")
	for _, want := range []string{"entry-added shop/storefront:http ClusterIP 10.112.31.40 tcp/80", "finding-resolved shop/storefront:http service-missing"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
}
