package checks

import (
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/model"
)

// TestBaseName: a node of a fleet is named by its name, else by the
// bundle (or plain directory read as a node) of the first of its inputs
// that has one: a loose export read with it may be listed first.
func TestBaseName(t *testing.T) {
	for _, tc := range []struct {
		name   string
		node   string
		inputs []model.Input
		want   string
	}{
		{name: "node name", node: "worker-1", inputs: []model.Input{{Path: "node/iptables-save.txt", Bundle: "b/n1"}}, want: "worker-1"},
		{name: "bundle", inputs: []model.Input{{Path: "node/iptables-save.txt", Bundle: "b/n1/"}}, want: "n1"},
		{name: "loose export first", inputs: []model.Input{{Path: "cluster.yaml"}, {Path: "paste.txt", Bundle: "case/n002"}}, want: "n002"},
		{name: "nothing", inputs: []model.Input{{Path: "dump.txt"}}, want: ""},
	} {
		if got := BaseName(tc.node, tc.inputs); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
