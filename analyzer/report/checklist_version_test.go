package report

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checktest"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestChecklistVersionDoubted: a version a Node reports that the rules'
// layout contradicts is not confirmed: the checklist marks it unknown and
// says why, rather than ok from the Node.
func TestChecklistVersionDoubted(t *testing.T) {
	s := checktest.Load(t, filepath.Join(parsetest.Root(t), "testdata", "scenarios", "iptables", "healthy-v1.20-node-says-1.21.txtar"))
	it := checklistOf(t, s.Dir)["version"]
	if it.State != StateUnknown || it.Value != "v1.20.0" ||
		!strings.HasPrefix(it.Detail, "uncertain: status.nodeInfo.kubeProxyVersion of Node node-a says v1.21.14, but the rules have the layout of kube-proxy 1.10-1.20") {
		t.Errorf("version: %+v", it)
	}
}
