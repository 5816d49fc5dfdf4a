package cmd

import (
	"runtime"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/proxyscan/proxyscan/internal/fault"
)

const internalMessage = "proxyscan: internal error: panic: injected; please report it with the command and its inputs\n"

// TestWorkerPanicExits3 makes a worker of each pool the commands start
// panic (through fault.TestHook) and checks that the command exits 3
// with a message asking for a report, followed by the worker's stack.
func TestWorkerPanicExits3(t *testing.T) {
	// The reachability sweep runs in the background only on two CPUs or
	// more.
	defer runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0)))
	runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0)))
	bundle := testdata(t, "bundles", "iptables-mini")
	for _, tc := range []struct {
		pool string
		args []string
	}{
		{"load.parseAll", []string{"analyze", bundle, "-o", "json"}},
		{"kube.parse", []string{"analyze", bundle, "-o", "json"}},
		{"kube.parse", []string{"expect", bundle}},
		{"trace.Sweep", []string{"analyze", bundle, "-o", "json"}},
		{"trace.Sweep", []string{"analyze", bundle, "-o", "table", "--only", "service-unreachable"}},
		{"analyze.units", []string{"analyze", bundle, bundle, "-o", "json"}},
		{"analyze.nodes", []string{"analyze", bundle, bundle, "-o", "json"}},
	} {
		t.Run(tc.pool+" "+strings.Join(tc.args[2:], " "), func(t *testing.T) {
			fault.TestHook = func(pool string) {
				if pool == tc.pool {
					panic("injected")
				}
			}
			defer func() { fault.TestHook = nil }()
			f, outputs := testFactory()
			code := Run(f, tc.args)
			stdout, stderr := outputs()
			if code != exitInternal {
				t.Errorf("exit %d, want %d\nstderr: %s", code, exitInternal, stderr)
			}
			if !strings.HasPrefix(stderr, internalMessage) {
				t.Errorf("stderr does not start with %q:\n%s", internalMessage, stderr)
			}
			if !strings.Contains(stderr, "internal/fault.TestHook") && !strings.Contains(stderr, "internal_test.go") {
				t.Errorf("stderr has no stack of the panic:\n%s", stderr)
			}
			if stdout != "" {
				t.Errorf("a report was written:\n%s", stdout)
			}
		})
	}
}

// TestCommandPanicExits3 checks that a panic in the command's own
// goroutine exits 3 with the same message.
func TestCommandPanicExits3(t *testing.T) {
	root := &cobra.Command{Use: "proxyscan", SilenceErrors: true, SilenceUsage: true,
		RunE: func(*cobra.Command, []string) error {
			var m map[string]int
			//lint:ignore SA5000 the panic is what is tested
			m["x"] = 1
			return nil
		}}
	root.SetArgs(nil)
	cmd, err := execute(root)
	if cmd != nil || !fault.Is(err) {
		t.Fatalf("execute() = %v, %v; want the panic as a *fault.Error", cmd, err)
	}
	if code := exitCode(err); code != exitInternal {
		t.Errorf("exit %d, want %d", code, exitInternal)
	}
	f, outputs := testFactory()
	printError(f, cmd, err)
	_, stderr := outputs()
	want := "proxyscan: internal error: panic: assignment to entry in nil map; please report it with the command and its inputs\n"
	if !strings.HasPrefix(stderr, want) || !strings.Contains(stderr, "internal_test.go") {
		t.Errorf("stderr:\n%s\nwant it to start with %q and hold the stack", stderr, want)
	}
}
