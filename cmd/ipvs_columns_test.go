package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/parsers/ipvs"
)

// TestIPVSListingColumns analyses the healthy IPVS bundle with its IPVS
// table given as each variant of `ipvsadm -Ln` (and no save form): a
// listing that prints no scheduler, persistence or weights (--stats,
// --rate) or no weights (--thresholds) gives no finding about them, and
// the verdict says they were not checked; the others are as healthy as
// the plain listing.
func TestIPVSListingColumns(t *testing.T) {
	src := filepath.Join("..", "testdata", "bundles", "ipvs-healthy", "node", "ipvsadm.txt")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	table, err := ipvs.ParseList(src, data)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cols     ipvs.Columns
		verdict  string
		gap      string
		keepSave bool
	}{
		{ipvs.ColumnsPlain, "ok", "", false},
		{ipvs.ColumnsTunnel, "ok", "", false},
		{ipvs.ColumnsPersistent, "ok", "", false},
		{ipvs.ColumnsThresholds, "inconclusive", "node/ipvsadm.txt is an ipvsadm -Ln --thresholds listing, which prints no weights: the virtual servers' weights were not checked", false},
		{ipvs.ColumnsStats, "inconclusive", "node/ipvsadm.txt is an ipvsadm -Ln --stats listing, which prints no scheduler, persistence or weights: the virtual servers' scheduler, session affinity and weights were not checked", false},
		{ipvs.ColumnsRate, "inconclusive", "node/ipvsadm.txt is an ipvsadm -Ln --rate listing, which prints no scheduler, persistence or weights", false},
		// Beside the save form, which prints them, the save form is read.
		{ipvs.ColumnsStats, "ok", "", true},
	} {
		name := string(tc.cols)
		if tc.keepSave {
			name += " beside the save form"
		}
		t.Run(name, func(t *testing.T) {
			listing := string(ipvs.FormatList(table, ipvs.ListOptions{Columns: tc.cols}))
			changes := map[string]string{"node/ipvsadm.txt": listing, "node/ipvsadm-save.txt": ""}
			if tc.keepSave {
				delete(changes, "node/ipvsadm-save.txt")
			}
			dir := changedBundle(t, "ipvs-healthy", changes)
			f, outputs := testFactory()
			code := Run(f, []string{"analyze", "-o", "json", dir})
			stdout, stderr := outputs()
			var rep struct {
				Verdict  string
				Findings []struct{ Check, Message string }
				Coverage struct{ Gaps []string }
			}
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatalf("exit %d, %v\n%s", code, err, stderr)
			}
			if code != 0 || len(rep.Findings) > 0 {
				t.Errorf("exit %d, findings %+v: want none", code, rep.Findings)
			}
			if rep.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s (gaps %q)", rep.Verdict, tc.verdict, rep.Coverage.Gaps)
			}
			if tc.gap != "" && !strings.Contains(strings.Join(rep.Coverage.Gaps, "\n"), tc.gap) {
				t.Errorf("gaps %q do not say %q", rep.Coverage.Gaps, tc.gap)
			}
		})
	}
}
