package cmd

import (
	"os"
	"runtime"
	"runtime/debug"
)

// checksGCPercent is the GC percent analyze runs its checks at: after
// each collection the heap may grow by half of what the collection left
// live before the next one starts. Loading a node leaves its parsed form
// live (about 75 MiB for a 10,000-Service iptables node, whatever the
// spelling of its export) among the garbage of the parsing; the checks
// then build views and trace every service port on top of it, and the
// live heap grows by half (doubles on an nftables node). A GC percent
// sizes the heap's room from what is live, so the collector's work stays
// proportional to what the checks allocate, whatever the input: there is
// no memory limit for the live heap to reach, and so no run of
// collections back to back.
const checksGCPercent = 50

// collectLoaded is called once the input is loaded. It collects the
// garbage the loading left, so that the checks' heap grows from what the
// snapshots hold, and sets the GC percent of the checks; the function it
// returns puts the GC percent back. With GOGC or GOMEMLIMIT set in the
// environment it does neither: the collector runs as they say, as for
// any Go program. The loading runs at Go's defaults (or the
// environment's), and analyze sets no memory limit.
func collectLoaded() (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	runtime.GC()
	before := debug.SetGCPercent(checksGCPercent)
	return func() { debug.SetGCPercent(before) }
}
