package ipaddr

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
	"github.com/rogpeppe/go-internal/txtar"
)

// TestRealIPAddr rebuilds the namespace of the goldens with setup.sh,
// runs the real ip in it and checks that the goldens still describe what
// it prints (lifetimes of addresses that count down are not compared).
func TestRealIPAddr(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a network namespace")
	}
	for _, tool := range []string{"ip", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	dir := filepath.Join(parsetest.Root(t), "testdata/parsers/ipaddr")
	ns := fmt.Sprintf("proxyscan-ipaddr-%d", os.Getpid())
	defer exec.Command("ip", "netns", "del", ns).Run()
	if out, err := exec.Command("bash", filepath.Join(dir, "setup.sh"), ns).CombinedOutput(); err != nil {
		t.Fatalf("setup.sh: %v: %s", err, out)
	}
	// Wait for IPv6 duplicate address detection to finish, as the capture
	// did: link-local addresses are "tentative" until then.
	for range 50 {
		out, _ := exec.Command("ip", "-n", ns, "addr").Output()
		if !strings.Contains(string(out), "tentative") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
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
