package checks

import (
	"slices"
	"sync"

	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/analyzer/trace"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/nft"
)

// ReadAhead starts reading in the background, as soon as a node's dumps
// are parsed (see load.Options.Parsed), what the checks read of them once
// the node is assembled: the typed reading of every table's rules and
// their resolved jumps ([iptables.Table.Meanings]), which the views and
// the tracer start from, and, when ruleset-invalid is among checks, the
// kernel's checks of the ruleset ([trace.Prevalidate], once the large
// tables are read), and the traits of
// kube-proxy's rule layout that the node's assembly reads
// ([resolve.ReadLayoutAhead]). The exports are decoded meanwhile, then the
// node is assembled (its version and service ports, on one core), so that
// the views are built as soon as it is. The answers are those the checks
// and the assembly would compute. forget, called once the node's checks
// ran (or its loading failed), drops a validation no check took and a
// layout no assembly took.
func ReadAhead(dumps []*iptables.Dump, checks []*Check) (forget func()) {
	resolve.ReadLayoutAhead(dumps)
	// The large tables (a nat table of tens of thousands of chains) are
	// read one after the other, and the kernel's checks only then, on the
	// tables' jumps resolved: the views wait for the tables, the checks'
	// validation comes later, and each had a share of the cores while the
	// views waited.
	var big []*iptables.Table
	for _, d := range dumps {
		for _, t := range d.Tables {
			if len(t.Chains) < bigTable {
				go readTable(t)
			} else {
				big = append(big, t)
			}
		}
	}
	var mu sync.Mutex
	forgotten := false
	validate := slices.Contains(checks, rulesetInvalid)
	go func() {
		for _, t := range big {
			readTable(t)
		}
		mu.Lock()
		defer mu.Unlock()
		if validate && !forgotten {
			trace.Prevalidate(dumps)
		}
	}()
	return func() {
		mu.Lock()
		forgotten = true // a validation not started yet is not
		mu.Unlock()
		trace.Forget(dumps)
		resolve.ForgetLayout(dumps)
	}
}

// bigTable is the number of chains from which ReadAhead reads a table's
// meanings before the kernel's checks start.
const bigTable = 1024

// readTable reads the meanings of a table's rules. A panic is left to the
// reader that asks next, which reads them again where it is caught.
func readTable(t *iptables.Table) {
	defer func() { _ = recover() }()
	t.Meanings()
}

// ReadNFTAhead starts reading in the background, as soon as a node's
// nftables rulesets are parsed (see load.Options.ParsedNFT), what the
// engine reads of their tables ([trace.ReadNFTAhead]) when one of checks
// traces packets: the node's sweep then starts from it, on the core the
// exports' decoding and the node's assembly leave idle, rather than
// reading the tables beside the views. forget, called once the node's
// checks ran (or its loading failed), drops a reading no trace took.
func ReadNFTAhead(rulesets []*nft.Ruleset, checks []*Check) (forget func()) {
	if len(rulesets) == 0 || !slices.ContainsFunc(checks, func(c *Check) bool { return c == serviceUnreachable || c == loadBalanceSkew }) {
		return func() {}
	}
	trace.ReadNFTAhead(rulesets)
	return func() { trace.ForgetNFT(rulesets) }
}
