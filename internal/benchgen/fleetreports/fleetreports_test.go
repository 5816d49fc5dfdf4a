package fleetreports

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/report"
	"github.com/proxyscan/proxyscan/internal/benchgen"
)

// TestWriteNamesEachNode: every report names its own node, in its findings
// too (the drifted node's findings are those of another node's analysis).
func TestWriteNamesEachNode(t *testing.T) {
	dir := t.TempDir()
	spec := benchgen.Spec{Services: 20, Endpoints: 40, NodePortEvery: 4}
	if err := Write(spec, dir, 60, report.Tool{Name: "proxyscan", Version: "v0.0.0-test"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"node-0001", "node-0050"} {
		data, err := os.ReadFile(filepath.Join(dir, name, load.NodeReportFile))
		if err != nil {
			t.Fatal(err)
		}
		for _, other := range []string{"node-0001", "node-0050"} {
			n := bytes.Count(data, fmt.Appendf(nil, `"node":%q`, other))
			if other != name && n > 0 {
				t.Errorf("%s: names %s %d times", name, other, n)
			}
			if other == name && name == "node-0050" && n < 2 {
				t.Errorf("%s: names itself %d times: its findings do not name it", name, n)
			}
		}
	}
}
