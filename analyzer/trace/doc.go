// Package trace replays one packet through a node's data plane, the way
// netfilter (iptables or nftables) and IPVS would, and returns every path
// the packet can take with its probability, the rules it matched in the
// order the kernel evaluates them, and where it ends.
//
// The tracer reads the parsed model (iptables dumps, nft rulesets, IPVS
// tables, ipsets, node addresses), never raw text. Random choices
// (iptables statistic, nft numgen, IPVS schedulers) fork the walk into
// branches weighted by their exact probabilities; state the packet cannot
// know (an affinity entry from an earlier connection) forks it too, as
// paths with a condition. A match or statement the tracer does not model
// is a step with a warning and is assumed to match nothing it cannot
// prove, never silently true or false.
//
// [Trace] walks a [Dataplane], built from a snapshot ([FromSnapshot]) or
// from the reference proxier's output ([FromExpected]); [Compare] sets the
// paths over the captured and the expected data plane side by side.
package trace
