//go:build unix && !linux

package collect

import "syscall"

// deathSignal does nothing: only Linux has a parent-death signal.
func deathSignal(a *syscall.SysProcAttr) {}
