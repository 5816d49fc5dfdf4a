package cmd

import (
	"testing"

	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestAnalyzeNFTCutShort: `proxyscan analyze` of an nft list ruleset
// pasted cut short (testdata/paste/forms/nftables-cut-short.txt) with the
// cluster's export reads it as far as it goes, reports nothing that the
// cut may have removed, and says so: its table output is
// nftables-cut-short.analyze.table (rewritten with -update); exit 0, the
// verdict inconclusive.
func TestAnalyzeNFTCutShort(t *testing.T) {
	t.Chdir(parsetest.Root(t))
	const golden = "testdata/paste/forms/nftables-cut-short.analyze.table"
	f, output := testFactory()
	f.IO.Width = 100
	code := Run(f, []string{"analyze", "testdata/paste/forms/nftables-cut-short.txt", "testdata/bundles/nftables-healthy/cluster/cluster.yaml", "-o", "table"})
	stdout, stderr := output()
	if code != 0 {
		t.Errorf("exit %d: %s", code, stderr)
	}
	parsetest.GoldenFile(t, golden, []byte(stdout))
}
