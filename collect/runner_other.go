//go:build !unix

package collect

import (
	"os"
	"os/exec"
)

// ownGroup does nothing where there are no process groups.
func ownGroup(c *exec.Cmd) {}

// killGroup kills the process.
func killGroup(p *os.Process) { _ = p.Kill() }

// guarded does nothing where there are no process groups.
func guarded(pid int, add bool) {}

// guardPath does nothing where there is no watchdog: a killed collect
// leaves its staging directory.
func guardPath(path string) bool { return false }
