package benchgen

import (
	"syscall"
	"time"
)

// CPUTime is the CPU time the process used so far (user and system): on
// a shared machine the wall time of a benchmark says little, the CPU time
// it used more.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
