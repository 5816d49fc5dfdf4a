package collect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// A Cmd is a command for a [Runner].
type Cmd struct {
	// Args is argv; Args[0] is looked up in PATH unless it holds a slash.
	Args []string
	// Timeout bounds the run; the whole process group is killed then.
	Timeout time.Duration
	// MaxBytes caps stdout: past it the process group is killed and the
	// result is Truncated. 0 means no cap.
	MaxBytes int64
	// MaxLines stops the command after this many lines of stdout (a
	// bounded sample), also reported as Truncated. 0 means no limit.
	MaxLines int
}

// A CmdResult is what running a [Cmd] gave.
type CmdResult struct {
	// Path is the program that ran (Args[0] resolved).
	Path string
	// Started reports that the program started.
	Started bool
	// ExitStatus is the exit status, -1 when the process was killed.
	ExitStatus int
	// Stderr is the start of what the command printed on stderr.
	Stderr []byte
	// Bytes is how much stdout was written (at most MaxBytes).
	Bytes int64
	// Truncated reports that MaxBytes or MaxLines stopped the command.
	Truncated bool
	// TimedOut reports that Timeout killed it.
	TimedOut bool
	// Err is a failure to start, a timeout or an interruption.
	Err error
}

// A Runner runs commands. Collect runs every external program through
// one, so that tests can replace the node's binaries with fakes.
type Runner interface {
	// LookPath resolves a program name as exec.LookPath does.
	LookPath(name string) (string, error)
	// Run runs c, writing its stdout to stdout, and reports how it went.
	Run(ctx context.Context, c Cmd, stdout io.Writer) CmdResult
}

// ExecRunner runs commands on this node: each in its own process group
// (so that a timeout kills its children too), with LC_ALL=C, no stdin,
// and stderr kept up to 64 KiB.
type ExecRunner struct {
	// Prefix, when set, is put before every command (for example
	// "ip netns exec NAME", to run inside a network namespace).
	Prefix []string
}

// maxStderr is how much stderr a Result keeps.
const maxStderr = 64 << 10

// LookPath implements Runner.
func (r ExecRunner) LookPath(name string) (string, error) { return exec.LookPath(name) }

// errCapped stops a command whose output reached its cap.
var errCapped = errors.New("output cap reached")

// Run implements Runner.
func (r ExecRunner) Run(ctx context.Context, c Cmd, stdout io.Writer) CmdResult {
	res := CmdResult{ExitStatus: -1}
	if len(c.Args) == 0 {
		res.Err = errors.New("empty command")
		return res
	}
	p, err := r.LookPath(c.Args[0])
	if err != nil {
		res.Err = err
		return res
	}
	res.Path = p
	args := append(append([]string{}, r.Prefix...), append([]string{p}, c.Args[1:]...)...)
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	ownGroup(cmd)
	capw := &capWriter{w: stdout, maxBytes: c.MaxBytes, maxLines: c.MaxLines, stop: stop}
	var stderr limitedBuffer
	cmd.Stdout, cmd.Stderr = capw, &stderr
	// Wait returns at most this long after the process group was killed,
	// even when something still holds its pipes.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		res.Err = err
		return res
	}
	res.Started = true
	guarded(cmd.Process.Pid, true)
	done := make(chan struct{})
	var once sync.Once
	kill := func() { once.Do(func() { killGroup(cmd.Process) }) }
	go func() {
		select {
		case <-ctx.Done():
			kill()
		case <-done:
		}
	}()
	werr := cmd.Wait()
	close(done)
	// Children left behind by a command that exited are killed too.
	kill()
	guarded(cmd.Process.Pid, false)
	res.Stderr = stderr.Bytes()
	res.Bytes = capw.n
	res.Truncated = capw.capped
	if cmd.ProcessState != nil {
		res.ExitStatus = cmd.ProcessState.ExitCode()
	}
	switch cause := context.Cause(ctx); {
	case capw.err != nil:
		res.Err = capw.err
	case capw.capped:
		// A capped command was stopped on purpose.
		if res.ExitStatus != 0 {
			res.ExitStatus = -1
		}
	case errors.Is(cause, context.DeadlineExceeded) && c.Timeout > 0:
		res.TimedOut = true
		res.Err = fmt.Errorf("timed out after %s", c.Timeout)
	case cause != nil:
		res.Err = cause
	case werr != nil && !isExitError(werr):
		res.Err = werr
	}
	return res
}

func isExitError(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee)
}

// capWriter passes writes on until a byte or line cap, then stops the
// command.
type capWriter struct {
	w        io.Writer
	maxBytes int64
	maxLines int
	n        int64
	lines    int
	capped   bool
	stop     func(error)
	err      error
}

func (c *capWriter) Write(p []byte) (int, error) {
	if c.capped || c.err != nil {
		return len(p), nil
	}
	q := p
	if c.maxLines > 0 {
		for i, b := range q {
			if b == '\n' {
				c.lines++
				if c.lines >= c.maxLines {
					q = q[:i+1]
					c.capped = true
					break
				}
			}
		}
	}
	if c.maxBytes > 0 && c.n+int64(len(q)) > c.maxBytes {
		q = q[:c.maxBytes-c.n]
		c.capped = true
	}
	if _, err := c.w.Write(q); err != nil {
		// A full disk is not the cap: the command stops with the error.
		c.err = err
		c.stop(err)
		return 0, err
	}
	c.n += int64(len(q))
	if c.capped {
		c.stop(errCapped)
	}
	return len(p), nil
}

// limitedBuffer keeps the first maxStderr bytes written to it.
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := maxStderr - b.buf.Len(); room > 0 {
		if len(p) > room {
			b.buf.Write(p[:room])
		} else {
			b.buf.Write(p)
		}
	}
	return len(p), nil
}

func (b *limitedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.buf.Bytes()...)
}
