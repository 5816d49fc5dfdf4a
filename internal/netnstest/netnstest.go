// Package netnstest creates scratch network namespaces for tests that run
// the real iptables, nft, ipset or conntrack tools. A namespace made here
// has no link to the host's network; it is deleted when the test ends.
//
// It is also where the slow tests step aside for the fast loop: under
// go test -short, the tests that need the kernel (every test that asks for
// root or a namespace here), a browser, or large generated inputs skip.
package netnstest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var seq atomic.Int64

// SkipShort skips the test under go test -short; what says what makes it
// slow ("kernel test", "browser test", "large generated input").
func SkipShort(tb testing.TB, what string) {
	tb.Helper()
	if testing.Short() {
		tb.Skipf("%s: runs without -short", what)
	}
}

// RequireRoot skips the test unless it runs as root, and under -short: a
// test that needs root loads rules into the kernel.
func RequireRoot(tb testing.TB) {
	tb.Helper()
	SkipShort(tb, "kernel test")
	if os.Geteuid() != 0 {
		tb.Skip("skipping: needs root to create network namespaces (run the tests as root)")
	}
}

// RequireTools skips the test when a tool is not installed.
func RequireTools(tb testing.TB, tools ...string) {
	tb.Helper()
	for _, t := range tools {
		if _, err := exec.LookPath(t); err != nil {
			tb.Skipf("skipping: %s is not installed (apt-get install iptables nftables ipset conntrack nfacct)", t)
		}
	}
}

// NS is a scratch network namespace.
type NS struct {
	Name string
	tb   testing.TB
}

// New creates a namespace deleted at the end of the test; it skips the test
// when not root or under -short.
func New(tb testing.TB) *NS {
	tb.Helper()
	RequireRoot(tb)
	RequireTools(tb, "ip")
	name := fmt.Sprintf("proxyscan-test-%d-%d", os.Getpid(), seq.Add(1))
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		tb.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	ns := &NS{Name: name, tb: tb}
	tb.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			tb.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	// Bring loopback up so that local traffic works inside.
	ns.Run(nil, "ip", "link", "set", "lo", "up")
	return ns
}

// Run runs a command inside the namespace with stdin and returns its
// stdout; a failure ends the test.
func (ns *NS) Run(stdin []byte, name string, args ...string) []byte {
	ns.tb.Helper()
	out, err := ns.Try(stdin, name, args...)
	if err != nil {
		ns.tb.Fatalf("%s %s in %s: %v", name, strings.Join(args, " "), ns.Name, err)
	}
	return out
}

// Try runs a command inside the namespace and returns its stdout, or an
// error carrying its stderr.
func (ns *NS) Try(stdin []byte, name string, args ...string) ([]byte, error) {
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns.Name, name}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// Shell runs each non-empty, non-comment line of script with sh -c inside
// the namespace.
func (ns *NS) Shell(script string) {
	ns.tb.Helper()
	for _, line := range strings.Split(script, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ns.Run(nil, "sh", "-c", line)
	}
}

// FromScript builds a namespace with a shell script that takes the
// namespace's name as its argument and creates it (ip netns add "$1", then
// ip -n "$1" ...), deletes it at the end of the test, and waits for IPv6
// duplicate address detection to settle, so that listings no longer show
// "tentative" addresses. It skips the test when not root or under -short.
func FromScript(tb testing.TB, script string) *NS {
	tb.Helper()
	RequireRoot(tb)
	RequireTools(tb, "ip", "bash")
	name := fmt.Sprintf("proxyscan-test-%d-%d", os.Getpid(), seq.Add(1))
	tb.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	if out, err := exec.Command("bash", script, name).CombinedOutput(); err != nil {
		tb.Fatalf("%s: %v: %s", script, err, out)
	}
	// A second or two; longer on a loaded machine.
	for end := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		out, _ := exec.Command("ip", "-n", name, "addr").Output()
		if !strings.Contains(string(out), "tentative") {
			break
		}
		if time.Now().After(end) {
			tb.Fatalf("%s: addresses still tentative after a minute:\n%s", name, out)
		}
	}
	return &NS{Name: name, tb: tb}
}
