package checks

// SetReachingParallelFrom sets the number of service ports from which
// service-unreachable reads them on every core first, and returns what
// puts it back.
func SetReachingParallelFrom(n int) (restore func()) {
	prev := reachingParallelFrom
	reachingParallelFrom = n
	return func() { reachingParallelFrom = prev }
}
