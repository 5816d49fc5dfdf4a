package nftjson_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/proxyscan/proxyscan/internal/benchgen"
	"github.com/proxyscan/proxyscan/internal/netnstest"
	"github.com/proxyscan/proxyscan/internal/nftjson"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/nft"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestFormatIsNFTs prints the model of every `nft -j list ruleset`
// listing captured in testdata (the parser goldens, the upstream
// listings, the bundles and the JSON listings of the scenarios): it must
// give the listing back byte for byte.
func TestFormatIsNFTs(t *testing.T) {
	root := parsetest.Root(t)
	listings := map[string][]byte{}
	for _, pattern := range []string{"testdata/upstream/listed/nftables/*/nft-ruleset.json", "testdata/bundles/*/node/nft-ruleset.json"} {
		files, _ := filepath.Glob(filepath.Join(root, pattern))
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			listings[f] = data
		}
	}
	for _, pattern := range []string{"testdata/parsers/nft/*.txtar", "testdata/scenarios/nftables/*.txtar"} {
		files, _ := filepath.Glob(filepath.Join(root, pattern))
		for _, f := range files {
			a, err := txtar.ParseFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range a.Files {
				if parsers.Detect(s.Data) == parsers.KindNFTJSON && !strings.Contains(f, "error-") {
					listings[f+":"+s.Name] = s.Data
				}
			}
		}
	}
	if len(listings) < 20 {
		t.Fatalf("only %d nft -j listings found", len(listings))
	}
	for name, data := range listings {
		rs, err := nft.ParseJSON(name, data)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := nftjson.Format(rs); !bytes.Equal(got, data) {
			t.Errorf("%s: Format(ParseJSON(x)) differs from x:\n%s", name, jsonDiff(data, got))
		}
	}
}

// TestFormatOfText loads rulesets with the real nft into a network
// namespace and prints the model of `nft -a list ruleset` (text with
// handles): it must give what `nft -j list ruleset` prints, but for what
// nft's JSON leaves out (see package parsers/nft) and element expiry
// times, which count down between two listings. Tests and benchmarks that
// have a ruleset as text get its JSON listing this way.
func TestFormatOfText(t *testing.T) {
	netnstest.RequireRoot(t)
	netnstest.RequireTools(t, "nft")
	root := parsetest.Root(t)
	scripts := map[string][]byte{}
	for _, pattern := range []string{"testdata/parsers/nft/*.nft", "testdata/collect/*.nft"} {
		files, _ := filepath.Glob(filepath.Join(root, pattern))
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			scripts[filepath.Base(f)] = data
		}
	}
	var gen bytes.Buffer
	spec := benchgen.Spec{Services: 60, Endpoints: 200, NodePortEvery: 4, Node: "bench-node-1"}
	if err := spec.NFTRuleset(&gen); err != nil {
		t.Fatal(err)
	}
	scripts["benchgen"] = gen.Bytes()
	for name, script := range scripts {
		t.Run(name, func(t *testing.T) {
			ns := netnstest.New(t)
			ns.Run(script, "nft", "-f", "-")
			text, err := nft.ParseText("text", ns.Run(nil, "nft", "-a", "list", "ruleset"))
			if err != nil {
				t.Fatal(err)
			}
			js, err := nft.ParseJSON("json", ns.Run(nil, "nft", "-j", "list", "ruleset"))
			if err != nil {
				t.Fatal(err)
			}
			jsonView(text)
			clearExpires(js)
			if got, want := nftjson.Format(text), nftjson.Format(js); !bytes.Equal(got, want) {
				t.Errorf("Format(text model) differs from nft -j:\n%s", jsonDiff(want, got))
			}
		})
	}
}

// jsonView removes from a text model what nft 1.0.6's JSON does not carry.
func jsonView(rs *nft.Ruleset) {
	for _, t := range rs.Tables {
		t.Comment = ""
		for _, c := range t.Chains {
			c.Comment = ""
			c.Devices = nil
		}
		for _, s := range t.Sets {
			var fl []string
			for _, f := range s.Flags {
				if f != "dynamic" {
					fl = append(fl, f)
				}
			}
			s.Flags = fl
			s.AutoMerge, s.DataInterval = false, false
			s.Typeof, s.DataTypeof = "", ""
		}
	}
	clearExpires(rs)
}

func clearExpires(rs *nft.Ruleset) {
	for _, t := range rs.Tables {
		for _, s := range t.Sets {
			for i := range s.Elements {
				s.Elements[i].SetExpires(0)
			}
		}
	}
}

// jsonDiff shows where two one-line JSON documents part.
func jsonDiff(want, got []byte) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	lo := max(i-120, 0)
	return "at byte " + strconv.Itoa(i) + ":\n  want: " + string(want[lo:min(i+80, len(want))]) + "\n  got:  " + string(got[lo:min(i+80, len(got))])
}
