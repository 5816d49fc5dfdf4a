//go:build unix

package kube_test

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time the process used so far, user and system:
// on a machine that others share, it moves less than the wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
