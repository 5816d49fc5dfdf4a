//go:build unix

package collect

import (
	"os"
	"os/exec"
	"syscall"
)

// ownGroup starts the command in a process group of its own.
func ownGroup(c *exec.Cmd) { c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killGroup kills the process and every process of its group.
func killGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }
