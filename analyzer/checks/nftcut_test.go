package checks_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// nftCutNode is a node of nftables mode whose nft listing the cut tests
// paste cut short: the listing, and the other inputs of the node.
type nftCutNode struct {
	name    string
	listing string
	others  []string
}

// nftCutNodes returns the nodes of the cut tests: the nftables bundles,
// and (without -short) the upstream scenarios of several address
// families, affinity, source ranges and Services without endpoints,
// with their configuration set to nftables mode.
func nftCutNodes(t *testing.T) []nftCutNode {
	root := parsetest.Root(t)
	var out []nftCutNode
	for _, b := range []string{"nftables-healthy", "nftables-v1.29"} {
		dir := filepath.Join(root, "testdata", "bundles", b)
		n := nftCutNode{name: b, listing: filepath.Join(dir, "node", "nft-ruleset.txt"),
			others: []string{filepath.Join(dir, "cluster"), filepath.Join(dir, "kube-proxy")}}
		if _, err := os.Stat(filepath.Join(dir, "node", "ip-addr.txt")); err == nil {
			n.others = append(n.others, filepath.Join(dir, "node", "ip-addr.txt"))
		}
		out = append(out, n)
	}
	scenarios := []string{"dualstack"}
	if !testing.Short() {
		scenarios = append(scenarios, "session-affinity", "loadbalancer-sourceranges", "no-endpoints", "nodeport-etp-local")
	}
	up := filepath.Join(root, "testdata", "upstream")
	for _, name := range scenarios {
		cfg, err := os.ReadFile(filepath.Join(up, "scenarios", name, "kube-proxy", "config.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		conf := filepath.Join(t.TempDir(), "config.yaml")
		write(t, conf, reModeLine.ReplaceAll(cfg, []byte("mode: nftables")))
		out = append(out, nftCutNode{name: name, listing: filepath.Join(up, "listed", "nftables", name, "nft-ruleset.txt"),
			others: []string{filepath.Join(up, "scenarios", name, "cluster"), conf}})
	}
	return out
}

// nftCut is a listing cut short: its first bytes.
type nftCut struct {
	name, text string
}

// nftCuts returns the cuts of a listing: after every step-th line, in
// the middle of every step-th line (others), and after and in the middle
// of every line of the first multi-line element list of a set and of a
// map, and of the first map's declaration.
func nftCuts(listing string, step int) []nftCut {
	lines := strings.SplitAfter(listing, "\n")
	starts := make([]int, len(lines)+1)
	for i, l := range lines {
		starts[i+1] = starts[i] + len(l)
	}
	var out []nftCut
	seen := map[string]bool{}
	add := func(name string, n int) {
		text := listing[:n]
		if strings.TrimSpace(text) == "" || strings.TrimSpace(text) == strings.TrimSpace(listing) || seen[text] {
			return
		}
		seen[text] = true
		out = append(out, nftCut{name, text})
	}
	after := func(i int) { add(fmt.Sprintf("after-line-%d", i+1), starts[i+1]) }
	middle := func(i int) { add(fmt.Sprintf("in-line-%d", i+1), starts[i]+len(strings.TrimRight(lines[i], "\n"))/2) }
	for i := 0; i < len(lines); i += step {
		after(i)
		if j := i + step/2; j < len(lines) {
			middle(j)
		}
	}
	inElements, sawSet, sawMap, inMap := false, false, false, false
	for i, l := range lines {
		t := strings.TrimSpace(l)
		isMap := strings.HasPrefix(t, "map ")
		if isMap && !sawMap {
			inMap = true
		}
		if strings.HasPrefix(t, "elements = {") && !strings.HasSuffix(t, "}") {
			switch {
			case inMap && !sawMap:
				inElements, sawMap = true, true
			case !inMap && !sawSet:
				inElements, sawSet = true, true
			}
		}
		if inElements || inMap {
			after(i)
			middle(i)
		}
		if inElements && strings.HasSuffix(t, "}") {
			inElements = false
		}
		if inMap && t == "}" {
			inMap = false
		}
	}
	return out
}

// findingKeys returns the findings of a run, one string each.
func findingKeys(res *checks.Result) map[string]bool {
	out := map[string]bool{}
	for _, f := range res.Findings {
		out[f.Check+" "+f.Service+": "+f.Message] = true
	}
	return out
}

// TestNFTListingCutShort pastes the nft listings of nftables-mode nodes
// cut short at many points (after a line, in the middle of one, in a
// set's or a map's element list, in a map's declaration) and analyses
// each with the rest of the node: the paste is read as far as it goes,
// partial (but when the cut falls between two tables), and no finding is
// one that the whole listing does not have; the verdict is never ok.
func TestNFTListingCutShort(t *testing.T) {
	t.Parallel()
	step := 5
	if testing.Short() {
		step = 43 // and the cuts in element lists and maps, which every step keeps
	}
	for _, node := range nftCutNodes(t) {
		t.Run(node.name, func(t *testing.T) {
			data, err := os.ReadFile(node.listing)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			analyse := func(text string) (*checks.Result, string) {
				t.Helper()
				paste := filepath.Join(dir, "paste.txt")
				write(t, paste, []byte("[root@node-a ~]# nft list ruleset\n"+text))
				snaps, err := load.Load(append([]string{paste}, node.others...), load.Options{})
				if err != nil {
					t.Fatalf("load: %v", err)
				}
				partial := ""
				for _, in := range snaps[0].Inputs {
					if in.Path == paste {
						if in.Kind != parsers.KindNFTText {
							t.Fatalf("read as %s (%s)", in.Kind, in.Note)
						}
						partial = in.Partial
					}
				}
				return checks.Run(snaps[0], checks.All), partial
			}
			res, partial := analyse(string(data))
			if partial != "" {
				t.Fatalf("the whole listing is partial: %s", partial)
			}
			whole := findingKeys(res)
			cuts := nftCuts(string(data), step)
			for _, c := range cuts {
				res, partial := analyse(c.text)
				// Cut after a table's closing brace: whole tables.
				between := strings.HasSuffix("\n"+strings.TrimRight(c.text, "\n"), "\n}")
				if partial == "" && !between {
					t.Errorf("%s: not partial", c.name)
				}
				if partial != "" && !strings.HasPrefix(partial, "cut short at line ") {
					t.Errorf("%s: partial %q", c.name, partial)
				}
				var extra []string
				for k := range findingKeys(res) {
					if !whole[k] {
						extra = append(extra, k)
					}
				}
				sort.Strings(extra)
				for _, k := range extra {
					t.Errorf("%s (%s): %s", c.name, partial, k)
				}
				if v := res.Verdict(); v == "ok" {
					t.Errorf("%s: verdict %s", c.name, v)
				}
			}
			t.Logf("%d cuts", len(cuts))
		})
	}
}
