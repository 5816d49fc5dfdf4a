// Package conntrack parses the connection-tracking table as
// conntrack-tools prints it: `conntrack -L` (also `-o extended`, which
// adds the layer-3 protocol) and the per-CPU counters of `conntrack -S`.
//
// A [Flow] holds the protocol (name and number), timeout, state, the
// original and reply [Tuple] (addresses, ports or ICMP type/code/id), the
// status flags ([UNREPLIED], [ASSURED], [OFFLOAD], [HW_OFFLOAD]), mark,
// zone, use count and security context. NATed flows are easy to spot:
// [Flow.IsDNAT] reports a reply source that is not the original
// destination (a Service VIP rewritten to an endpoint), and
// [Flow.OrigDst] / [Flow.ReplySrc] give the two ends.
package conntrack
