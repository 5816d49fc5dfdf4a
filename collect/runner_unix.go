//go:build unix

package collect

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
)

// ownGroup starts the command in a process group of its own, killed with
// collect (see guard).
func ownGroup(c *exec.Cmd) {
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	deathSignal(c.SysProcAttr)
}

// killGroup kills the process and every process of its group.
func killGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }

// guardScript is the watchdog of the commands' process groups and of the
// bundle's temporary files: it reads "+ PGID" when a command starts, "- PGID"
// when its group is gone, and "d PATH" for each staging directory or
// temporary archive; when its input ends (collect exited, however: a
// SIGKILL closes the pipe too) it kills the groups still listed and
// removes the paths (those committed were renamed away by then). It
// ignores the signals a terminal or a service manager sends to collect's
// group.
const guardScript = `trap '' INT TERM HUP PIPE QUIT
groups=
paths=
nl='
'
while IFS= read -r line; do
  arg=${line#? }
  case $line in
  "+ "*) groups="$groups $arg" ;;
  "- "*) rest=; for g in $groups; do [ "$g" = "$arg" ] || rest="$rest $g"; done; groups=$rest ;;
  "d "*) paths="$paths$arg$nl" ;;
  esac
done
for g in $groups; do kill -s KILL -- "-$g" 2>/dev/null; done
printf %s "$paths" | while IFS= read -r p; do [ -z "$p" ] || rm -rf -- "$p"; done
`

// guard is the watchdog process of this collect, started with the first
// command; w is nil when it could not start (then only the kernel's
// parent-death signal, on Linux, ends a command that outlives collect).
var guard struct {
	once sync.Once
	mu   sync.Mutex
	w    io.WriteCloser
}

// startGuard starts the watchdog once.
func startGuard() {
	guard.once.Do(func() {
		cmd := exec.Command("/bin/sh", "-c", guardScript)
		// A group of its own: a signal to collect's group spares it.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		w, err := cmd.StdinPipe()
		if err != nil {
			return
		}
		if err := cmd.Start(); err != nil {
			return
		}
		go func() { _ = cmd.Wait() }()
		guard.w = w
	})
}

// guardPath has the watchdog remove path when collect ends, whatever
// ends it; it reports whether the watchdog runs. A path holding a newline
// is not handed over.
func guardPath(path string) bool {
	startGuard()
	guard.mu.Lock()
	defer guard.mu.Unlock()
	if guard.w == nil || strings.ContainsAny(path, "\n\r") {
		return false
	}
	if _, err := fmt.Fprintf(guard.w, "d %s\n", path); err != nil {
		guard.w = nil
		return false
	}
	return true
}

// guarded tells the watchdog that a command's group started (add) or is
// gone.
func guarded(pid int, add bool) {
	startGuard()
	guard.mu.Lock()
	defer guard.mu.Unlock()
	if guard.w == nil {
		return
	}
	op := "-"
	if add {
		op = "+"
	}
	if _, err := fmt.Fprintf(guard.w, "%s %d\n", op, pid); err != nil {
		guard.w = nil
	}
}
