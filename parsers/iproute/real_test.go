package iproute

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proxyscan/proxyscan/parsers/parsetest"
	"github.com/rogpeppe/go-internal/txtar"
)

// TestRealIPRoute rebuilds the namespace of the goldens with setup.sh and
// checks that the real ip prints the golden routes byte for byte.
func TestRealIPRoute(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a network namespace")
	}
	for _, tool := range []string{"ip", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	dir := filepath.Join(parsetest.Root(t), "testdata/parsers/iproute")
	ns := fmt.Sprintf("proxyscan-iproute-%d", os.Getpid())
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
