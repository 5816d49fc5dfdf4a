package cmd

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/proxyscan/proxyscan/parsers/nft"
)

// TestExpectNFTablesBundle checks that expect prints, for the nftables
// bundle's inputs, the tables the real kube-proxy v1.37.2 programmed (as
// nft lists them, elements in any order), and writes them with --dir.
func TestExpectNFTablesBundle(t *testing.T) {
	dir := testdata(t, "bundles", "nftables-healthy")
	f, stdio := testFactory()
	if code := Run(f, []string{"expect", dir, "--mode", "nftables"}); code != 0 {
		_, errOut := stdio()
		t.Fatalf("exit %d: %s", code, errOut)
	}
	out, _ := stdio()
	if first := strings.SplitN(out, "\n", 2)[0]; first != "# proxyscan expect: nft-ruleset.txt, kube-proxy 1.37 nftables mode, node east-w2" {
		t.Errorf("header comment %q", first)
	}
	got, err := nft.ParseText("stdout", []byte(out))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "node", "nft-ruleset.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := nft.ParseText("nft-ruleset.txt", data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(nftContent(want), nftContent(got)); diff != "" {
		t.Errorf("expect differs from the captured ruleset (-captured +expect):\n%s", diff)
	}

	outDir := t.TempDir()
	f, stdio = testFactory()
	if code := Run(f, []string{"expect", dir, "--dir", outDir}); code != 0 {
		_, errOut := stdio()
		t.Fatalf("--dir: exit %d: %s", code, errOut)
	}
	written, err := os.ReadFile(filepath.Join(outDir, "nft-ruleset.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, string(written)) {
		t.Error("the file written with --dir is not what stdout shows")
	}
}

// nftContent reduces the tables of a ruleset to their rules per chain and
// their sorted elements per set.
func nftContent(rs *nft.Ruleset) map[string][]string {
	out := map[string][]string{}
	for _, t := range rs.Tables {
		prefix := nft.FamilyName(t.Family) + " " + t.Name + " "
		for _, c := range t.Chains {
			rules := []string{}
			for _, r := range c.Rules {
				rules = append(rules, r.String())
			}
			out[prefix+"chain "+c.Name] = rules
		}
		for _, s := range t.Sets {
			els := []string{}
			for _, e := range s.Elements {
				text := strings.Join(e.Key(), " . ")
				if e.Verdict != nil {
					text += " : " + nft.StmtString(e.Verdict)
				}
				els = append(els, text)
			}
			sort.Strings(els)
			out[prefix+"set "+s.Name] = els
		}
	}
	return out
}
