//go:build linux && !amd64

package trace_test

import "syscall"

// sysSetns is setns(2).
const sysSetns = syscall.SYS_SETNS
