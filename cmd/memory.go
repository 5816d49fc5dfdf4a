package cmd

import (
	"os"
	"runtime"
	"runtime/debug"

	"github.com/proxyscan/proxyscan/analyzer/load"
)

// processEnds says the process ends with the command it runs (Main, not
// a test calling a command again and again): the commands that load one
// node (or the nodes of one unit, or the two sides of a diff) then read
// the dumps' text outside the Go heap, never freed (load.Options.OffHeap),
// so that it counts once in the process's peak memory rather than also
// in the collector's heap goal.
var processEnds bool

// offHeap returns lo reading the dumps' text outside the Go heap when the
// process ends with the run.
func offHeap(lo load.Options) load.Options {
	lo.OffHeap = processEnds
	return lo
}

// checksGCPercent is the GC percent analyze loads and checks its nodes
// at: after each collection the heap may grow by half of what the
// collection left live before the next one starts. A 10,000-Service
// iptables node holds about 75 MiB once loaded, whatever the spelling of
// its export (the export's objects are trimmed to what the checks read
// as the node is assembled), and about 120 MiB at the checks' busiest,
// which is the run's peak; an nftables node holds 50 MiB growing to
// about 120 MiB. A GC percent sizes the heap's room from what is live, so
// the collector's work stays proportional to what is allocated, whatever
// the input: there is no memory limit for the live heap to reach, and so
// no run of collections back to back (the nftables node's checks, which
// allocate about 1 GB, take about 40 collections).
const checksGCPercent = 50

// collectLoaded is called before the first unit of the input is loaded:
// it collects what the command allocated so far and sets the GC percent
// of the loading and the checks; the function it returns puts the GC
// percent back. With GOGC or GOMEMLIMIT set in the environment it does
// neither: the collector runs as they say, as for any Go program.
// analyze sets no memory limit.
func collectLoaded() (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	runtime.GC()
	before := debug.SetGCPercent(checksGCPercent)
	return func() { debug.SetGCPercent(before) }
}
