//go:build !unix

package kube_test

import "time"

// cpuTime returns 0: the CPU time is not read here.
func cpuTime() time.Duration { return 0 }
