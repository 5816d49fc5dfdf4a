package collect

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestExecRunner(t *testing.T) {
	r := ExecRunner{}
	for _, tc := range []struct {
		name  string
		cmd   Cmd
		check func(t *testing.T, res CmdResult, out string)
	}{
		{"exit status and stderr", Cmd{Args: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}}, func(t *testing.T, res CmdResult, out string) {
			if res.ExitStatus != 3 || out != "out\n" || string(res.Stderr) != "err\n" || res.Err != nil {
				t.Errorf("%+v %q", res, out)
			}
		}},
		{"byte cap", Cmd{Args: []string{"sh", "-c", "yes | head -c 1000000"}, MaxBytes: 1000}, func(t *testing.T, res CmdResult, out string) {
			if !res.Truncated || len(out) != 1000 || res.Bytes != 1000 {
				t.Errorf("truncated %v, %d bytes", res.Truncated, len(out))
			}
		}},
		{"line cap", Cmd{Args: []string{"sh", "-c", "yes line"}, MaxLines: 7, Timeout: 10 * time.Second}, func(t *testing.T, res CmdResult, out string) {
			if !res.Truncated || strings.Count(out, "\n") != 7 || res.TimedOut {
				t.Errorf("%+v %q", res, out)
			}
		}},
		{"timeout kills the process group", Cmd{Args: []string{"sh", "-c", "sleep 30 & sleep 31 & wait"}, Timeout: 300 * time.Millisecond}, func(t *testing.T, res CmdResult, out string) {
			if !res.TimedOut || res.Err == nil || !strings.Contains(res.Err.Error(), "timed out after 300ms") {
				t.Errorf("%+v", res)
			}
		}},
		{"not installed", Cmd{Args: []string{"proxyscan-no-such-tool"}}, func(t *testing.T, res CmdResult, out string) {
			if res.Started || res.Err == nil {
				t.Errorf("%+v", res)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			start := time.Now()
			res := r.Run(context.Background(), tc.cmd, &out)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %s", d)
			}
			tc.check(t, res, out.String())
		})
	}
}
