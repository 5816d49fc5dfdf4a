package collect

import "syscall"

// deathSignal has the kernel kill the command when collect dies.
func deathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
