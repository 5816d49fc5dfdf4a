package ipaddr

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/proxyscan/proxyscan/internal/netnstest"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
	"github.com/rogpeppe/go-internal/txtar"
)

// TestRealIPAddr rebuilds the namespace of the goldens with ../node-netns.sh,
// runs the real ip in it and checks that the goldens still describe what
// it prints (lifetimes of addresses that count down are not compared).
func TestRealIPAddr(t *testing.T) {
	dir := filepath.Join(parsetest.Root(t), "testdata/parsers/ipaddr")
	ns := netnstest.FromScript(t, filepath.Join(dir, "../node-netns.sh")).Name
	opts := cmp.Options{ignorePos, cmpopts.IgnoreFields(Dump{}, "Form"),
		cmpopts.IgnoreFields(Address{}, "ValidLft", "PreferredLft")}
	for golden, args := range map[string][]string{
		"text": {"addr"}, "oneline": {"-o", "addr"}, "json": {"-j", "addr"}, "kube-ipvs0": {"addr", "show", "kube-ipvs0"},
	} {
		out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).Output()
		if err != nil {
			t.Fatalf("ip %v: %v", args, err)
		}
		got, err := Parse(golden, out)
		if err != nil {
			t.Fatalf("real ip %v: %v", args, err)
		}
		a, err := txtar.ParseFile(filepath.Join(dir, golden+".txtar"))
		if err != nil {
			t.Fatal(err)
		}
		want, err := Parse(golden, parsetest.Section(a, "input"))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, opts); diff != "" {
			t.Errorf("ip %v differs from %s.txtar (-golden +real):\n%s", args, golden, diff)
		}
	}
}
