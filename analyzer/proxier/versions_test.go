package proxier

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestVersionGoldens generates the data plane of older kube-proxy layouts
// for the inputs named by each archive of testdata/proxier/versions and
// compares it with the archive's expected dumps, which were checked by
// hand against syncProxyRules of the release the archive names (rewrite
// them with -update, then check the diff by hand again).
func TestVersionGoldens(t *testing.T) {
	parsetest.Golden(t, "proxier/versions/*.txtar", func(t *testing.T, name string, a *txtar.Archive) map[string][]byte {
		out := map[string][]byte{}
		for _, f := range expectArchive(t, a, "").Files {
			out[f.Name] = f.Data
		}
		return out
	})
}

// expectArchive generates the data plane of mode ("" for the inputs' own)
// that a version archive describes: its inputs, at its version, with the
// feature gates of its feature-gates section if any.
func expectArchive(t *testing.T, a *txtar.Archive, mode string) *Dataplane {
	t.Helper()
	inputs := strings.TrimSpace(string(parsetest.Section(a, "inputs")))
	version := strings.TrimSpace(string(parsetest.Section(a, "version")))
	if inputs == "" || version == "" {
		t.Fatal("archive needs an inputs and a version section")
	}
	v, err := kpversion.ParseString(version)
	if err != nil {
		t.Fatal(err)
	}
	snaps, err := load.Load([]string{filepath.Join(parsetest.Root(t), "testdata", inputs)}, load.Options{Version: version})
	if err != nil {
		t.Fatal(err)
	}
	setGates(t, snaps[0], strings.Fields(string(parsetest.Section(a, "feature-gates")))...)
	dp, err := expectFor(snaps[0], testOptions{Mode: mode, Version: v})
	if err != nil {
		t.Fatal(err)
	}
	return dp
}
