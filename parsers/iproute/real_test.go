package iproute

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/proxyscan/proxyscan/internal/netnstest"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
	"github.com/rogpeppe/go-internal/txtar"
)

// TestRealIPRoute rebuilds the namespace of the goldens with ../node-netns.sh and
// checks that the real ip prints the golden routes byte for byte.
func TestRealIPRoute(t *testing.T) {
	dir := filepath.Join(parsetest.Root(t), "testdata/parsers/iproute")
	ns := netnstest.FromScript(t, filepath.Join(dir, "../node-netns.sh")).Name
	for golden, args := range map[string][]string{
		"route": {"route"}, "route6": {"-6", "route"}, "route-all": {"route", "show", "table", "all"}, "route6-all": {"-6", "route", "show", "table", "all"},
	} {
		out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).Output()
		if err != nil {
			t.Fatalf("ip %v: %v", args, err)
		}
		if _, err := Parse(golden, out); err != nil {
			t.Errorf("real ip %v: %v", args, err)
		}
		a, err := txtar.ParseFile(filepath.Join(dir, golden+".txtar"))
		if err != nil {
			t.Fatal(err)
		}
		if want := parsetest.Section(a, "input"); !bytes.Equal(want, out) {
			t.Errorf("ip %v differs from %s.txtar:\n%s", args, golden, parsetest.Diff(want, out))
		}
	}
}
