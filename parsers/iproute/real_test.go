package iproute

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/proxyscan/proxyscan/internal/netnstest"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
	"github.com/rogpeppe/go-internal/txtar"
)

// TestRealIPRoute rebuilds the namespace of the goldens with ../node-netns.sh and
// checks that the real ip prints the golden routes byte for byte, or the
// same lines in another order: the kernel adds the link-local routes of
// the veth pair's two ends (fe80::/64 on eth0 and on veth-peer) as both
// get their carrier at once, in either order.
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
		if want := parsetest.Section(a, "input"); !bytes.Equal(want, out) && !sameLines(want, out) {
			t.Errorf("ip %v differs from %s.txtar:\n%s", args, golden, parsetest.Diff(want, out))
		}
	}
}

// sameLines reports whether a and b hold the same lines, in any order.
func sameLines(a, b []byte) bool {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	if len(la) != len(lb) {
		return false
	}
	slices.SortFunc(la, bytes.Compare)
	slices.SortFunc(lb, bytes.Compare)
	return slices.EqualFunc(la, lb, bytes.Equal)
}
