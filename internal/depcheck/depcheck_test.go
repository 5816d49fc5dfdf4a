// Package depcheck holds tests that fence the dependencies of the analysis
// packages, so that "offline analysis" stays true as the code grows: the
// analyzer and the parsers never run programs, never open network
// connections, and never pull in the collector or the Kubernetes client.
// It also keeps the typed Kubernetes clientset out of the binary, whose
// size it would nearly double, and whose init work every command would pay
// in memory.
package depcheck

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/internal/netnstest"
)

const module = "github.com/proxyscan/proxyscan/"

// direct lists the packages no analyzer or parser package may import
// itself (Kubernetes' API machinery imports net/http for its own reasons;
// package net is allowed for its address types).
var direct = []string{"os/exec", "net/http", "syscall"}

// transitive lists what must not be reachable at all. (The moby/ipvs and
// google/nftables packages are allowed: the parsers use their types, so that
// netlink readers in collect fill the same model.)
var transitive = []string{"k8s.io/client-go", module + "collect"}

type pkg struct {
	path    string
	imports []string
}

func list(t *testing.T, deps bool, patterns ...string) []pkg {
	t.Helper()
	args := []string{"list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}"}
	if deps {
		args = append(args, "-deps")
	}
	out, err := exec.Command("go", append(args, patterns...)...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkgs = append(pkgs, pkg{path: f[0], imports: f[1:]})
	}
	return pkgs
}

func TestAnalysisIsOffline(t *testing.T) {
	netnstest.SkipShort(t, "dependency fence (runs go list)")
	patterns := []string{module + "analyzer/...", module + "parsers/..."}
	for _, p := range list(t, false, patterns...) {
		for _, imp := range p.imports {
			for _, f := range direct {
				if imp == f {
					t.Errorf("%s imports %s", p.path, imp)
				}
			}
		}
	}
	for _, p := range list(t, true, patterns...) {
		for _, f := range transitive {
			if p.path == f || strings.HasPrefix(p.path, f+"/") {
				t.Errorf("the analyzer or a parser depends on %s", p.path)
			}
		}
	}
}

func TestParsersDoNotImportAnalyzer(t *testing.T) {
	netnstest.SkipShort(t, "dependency fence (runs go list)")
	for _, p := range list(t, true, module+"parsers/...") {
		if strings.HasPrefix(p.path, module+"analyzer") {
			t.Errorf("a parser depends on %s", p.path)
		}
	}
}

// clientset is client-go's typed clientset. Importing any of its packages
// links the typed client, apply configurations and scheme registration of
// every API group, and their init work: the binary was 77 MB with it and
// 40 MB without, and even `proxyscan version` peaked at 38 MB of RSS
// instead of 24 MB, a baseline every analyze run pays. collect reads the
// few kinds it needs with internal/kubeapi, on client-go's rest package.
const clientset = "k8s.io/client-go/kubernetes"

func TestBinaryHasNoClientset(t *testing.T) {
	netnstest.SkipShort(t, "dependency fence (runs go list)")
	pkgs := list(t, true, module+"cmd/...")
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	for _, p := range pkgs {
		for _, imp := range p.imports {
			if imp == clientset || strings.HasPrefix(imp, clientset+"/") {
				t.Errorf("%s imports %s: the typed clientset nearly doubles the binary (77 MB instead of 40 MB) "+
					"and raises the memory every command starts with from 24 MB to 38 MB of RSS; "+
					"read the API with internal/kubeapi instead", p.path, imp)
			}
		}
	}
}

// testSupport are the packages only tests use: generators (of inputs,
// and of paste damage), golden-file helpers, namespace helpers, and
// internal/nftjson, which prints nft's
// JSON for tests (proxyscan reads that JSON but never writes it).
var testSupport = []string{
	module + "internal/nftjson", module + "internal/benchgen", module + "internal/netnstest", module + "internal/pastetest",
	module + "internal/kubeapi/kubeapitest", module + "parsers/parsetest", module + "analyzer/checktest",
}

func TestBinaryHasNoTestSupport(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the dependency fence in -short mode")
	}
	for _, p := range list(t, true, module+"cmd/...") {
		for _, s := range testSupport {
			if p.path == s {
				t.Errorf("the binary links %s, which only tests may use", s)
			}
		}
	}
}
